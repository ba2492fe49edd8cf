use super::*;

#[test]
fn pg_occupancy_splits_shared_and_headroom_and_leaves_out_the_reserve() {
    let pg = PgState {
        reserve_used: 1000,
        shared_used: 7000,
        headroom_used: 300,
        peak: 0,
    };
    assert_eq!(pg_occupancy(&pg), (7000, 300));
    let mut q = EgressQueue::ZERO;
    q.enqueue(2, 4321);
    assert_eq!(queue_occupancy(&q), 4321);
}

#[test]
fn raise_keeps_the_maximum() {
    let mut m = 10;
    raise(&mut m, 5);
    assert_eq!(m, 10);
    raise(&mut m, 10);
    assert_eq!(m, 10);
    raise(&mut m, 11);
    assert_eq!(m, 11);
    raise(&mut m, u32::MAX);
    assert_eq!(m, u32::MAX);
}

/// Admission through reserve, shared, then headroom: each mark follows its
/// own part of the PG; draining lowers occupancy, never a mark.
#[test]
fn marks_follow_admission_and_survive_release() {
    let prof = BufferProfile {
        static_th: 4000,
        mode: TH_STATIC,
        ..lossless_profile()
    };
    let mut pool = SharedPool {
        size: 1 << 20,
        used: 0,
    };
    let mut pg = PgState::ZERO;
    let mut q = EgressQueue::ZERO;
    let (mut qwm, mut pgwm) = (Watermark::ZERO, Watermark::ZERO);
    let mut admit = |pg: &mut PgState, q: &mut EgressQueue, len: u32| {
        pg.admit(&mut pool, &prof, len).unwrap();
        q.enqueue(0, len);
    };
    // 800 B: all reserve (size 1000): no shared, no headroom
    admit(&mut pg, &mut q, 800);
    note_queue(&mut qwm, &q);
    note_pg(&mut pgwm, &pg);
    assert_eq!(
        (qwm.queue_shared, pgwm.pg_shared, pgwm.pg_headroom),
        (800, 0, 0)
    );
    // 3000 B more: 200 reserve + 2800 shared
    admit(&mut pg, &mut q, 3000);
    note_queue(&mut qwm, &q);
    note_pg(&mut pgwm, &pg);
    assert_eq!(
        (qwm.queue_shared, pgwm.pg_shared, pgwm.pg_headroom),
        (3800, 2800, 0)
    );
    // 2000 B more: 1200 shared (to the static 4000) + 800 headroom
    admit(&mut pg, &mut q, 2000);
    note_queue(&mut qwm, &q);
    note_pg(&mut pgwm, &pg);
    assert_eq!(
        (qwm.queue_shared, pgwm.pg_shared, pgwm.pg_headroom),
        (5800, 4000, 800)
    );
    // the queue drains everything: occupancy 0, marks kept
    let mut rel = [0u32; MODEL_PORTS];
    let d = q.drain(1_000_000_000, 100_000, &mut rel);
    pg.release(
        &mut SharedPool {
            size: 1 << 20,
            used: 4000,
        },
        d,
    );
    assert_eq!((q.bytes, pg.total()), (0, 0));
    note_queue(&mut qwm, &q);
    note_pg(&mut pgwm, &pg);
    assert_eq!(
        (qwm.queue_shared, pgwm.pg_shared, pgwm.pg_headroom),
        (5800, 4000, 800)
    );
    // the queue's and the PG's marks of one port share an entry, apart
    let mut one = Watermark::ZERO;
    note_queue(&mut one, &EgressQueue::ZERO);
    note_pg(
        &mut one,
        &PgState {
            shared_used: 9,
            headroom_used: 4,
            ..PgState::ZERO
        },
    );
    assert_eq!(
        (one.queue_shared, one.pg_shared, one.pg_headroom),
        (0, 9, 4)
    );
}

/// Two PGs share the pool: each entry keeps the pool's `used` as its own
/// admissions left it, and the maximum over the entries is the pool's
/// peak, whichever PG reached it; releases lower the pool, never the
/// maximum, and the pool's mark leaves the others alone.
#[test]
fn pool_mark_is_the_maximum_over_entries() {
    let prof = BufferProfile {
        static_th: 1 << 20,
        mode: TH_STATIC,
        ..lossless_profile()
    };
    let mut pool = SharedPool {
        size: 1 << 20,
        used: 0,
    };
    let (mut a, mut b) = (PgState::ZERO, PgState::ZERO);
    let (mut wa, mut wb) = (Watermark::ZERO, Watermark::ZERO);
    let mut peak = 0;
    // (which PG, bytes): the reserve (1000 per PG) first, then shared
    for (pg_a, len) in [(true, 3000), (false, 1500), (true, 500), (false, 4000)] {
        let (pg, wm) = if pg_a {
            (&mut a, &mut wa)
        } else {
            (&mut b, &mut wb)
        };
        pg.admit(&mut pool, &prof, len).unwrap();
        note_pool(wm, pool.used);
        peak = peak.max(pool.used);
    }
    assert_eq!(pool.used, 2000 + 500 + 500 + 4000);
    assert_eq!((wa.pool_shared, wb.pool_shared), (3000, 7000));
    assert_eq!(wa.pool_shared.max(wb.pool_shared), peak);
    // A gives everything back: the pool falls, the marks stay
    let d = a.total() as u32;
    a.release(&mut pool, d);
    note_pool(&mut wa, pool.used);
    assert_eq!(pool.used, 4500);
    // A's share rises to the pool it saw (4500, a real occupancy); the
    // maximum over the entries is still the peak
    assert_eq!((wa.pool_shared, wb.pool_shared), (4500, 7000));
    assert_eq!(wa.pool_shared.max(wb.pool_shared), peak);
    assert_eq!(
        (wb.queue_shared, wb.pg_shared, wb.pg_headroom),
        (0, 0, 0),
        "only the pool's mark was raised"
    );
}
