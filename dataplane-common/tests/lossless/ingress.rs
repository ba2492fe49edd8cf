use super::*;

#[test]
fn dynamic_threshold_is_two_to_the_dynamic_th_times_free() {
    let pool = SharedPool {
        size: 3 << 20,
        used: 2 << 20,
    }; // free 1 MiB
    let free = 1u64 << 20;
    for th in -8i8..=7 {
        let p = BufferProfile {
            dynamic_th: th,
            ..lossless_profile()
        };
        let want = if th >= 0 { free << th } else { free >> -th };
        assert_eq!(shared_threshold(&p, &pool), want, "dynamic_th {th}");
    }
    assert_eq!(
        shared_threshold(
            &BufferProfile {
                dynamic_th: -3,
                ..lossless_profile()
            },
            &pool
        ),
        131_072
    );
    // Out of range is clamped (and rejected by validation).
    assert_eq!(
        shared_threshold(
            &BufferProfile {
                dynamic_th: 100,
                ..lossless_profile()
            },
            &pool
        ),
        free << 7
    );
    assert_eq!(
        shared_threshold(
            &BufferProfile {
                dynamic_th: -100,
                ..lossless_profile()
            },
            &pool
        ),
        free >> 8
    );
    // Full pool: threshold 0. Static: the configured bytes.
    assert_eq!(
        shared_threshold(&lossless_profile(), &SharedPool { size: 10, used: 10 }),
        0
    );
    let st = BufferProfile {
        mode: TH_STATIC,
        static_th: 12_345,
        ..lossless_profile()
    };
    assert_eq!(shared_threshold(&st, &pool), 12_345);
}

#[test]
fn admit_charges_reserve_then_shared_then_headroom() {
    // Reserve 1000, alpha 1 (dynamic_th 0), headroom 5000, pool 10000:
    // shared stops at 5000 (threshold = free = 10000 - used).
    let p = lossless_profile();
    let mut pool = SharedPool {
        size: 10_000,
        used: 0,
    };
    let mut pg = PgState::ZERO;
    assert_eq!(
        pg.admit(&mut pool, &p, 500),
        Ok(Charge {
            reserve: 500,
            shared: 0,
            headroom: 0
        })
    );
    assert_eq!(
        pg.admit(&mut pool, &p, 500),
        Ok(Charge {
            reserve: 500,
            shared: 0,
            headroom: 0
        })
    );
    for _ in 0..10 {
        assert_eq!(
            pg.admit(&mut pool, &p, 500),
            Ok(Charge {
                reserve: 0,
                shared: 500,
                headroom: 0
            })
        );
    }
    assert_eq!(
        (pg.shared_used, pool.used, shared_threshold(&p, &pool)),
        (5000, 5000, 5000)
    );
    for _ in 0..10 {
        assert_eq!(
            pg.admit(&mut pool, &p, 500),
            Ok(Charge {
                reserve: 0,
                shared: 0,
                headroom: 500
            })
        );
    }
    let full = pg;
    assert_eq!(
        pg.admit(&mut pool, &p, 1),
        Err(DropReason::HeadroomExhausted)
    );
    assert_eq!(pg, full, "a drop changes nothing");
    assert_eq!(pool.used, 5000);
    assert_eq!((pg.total(), pg.peak), (11_000, 11_000));
}

#[test]
fn a_packet_straddling_tiers_is_split() {
    let p = lossless_profile();
    let mut pool = SharedPool {
        size: 10_000,
        used: 0,
    };
    let mut pg = PgState {
        reserve_used: 700,
        ..PgState::ZERO
    };
    assert_eq!(
        pg.admit(&mut pool, &p, 500),
        Ok(Charge {
            reserve: 300,
            shared: 200,
            headroom: 0
        })
    );
    // Shared room 100 left under a static threshold of 300.
    let st = BufferProfile {
        mode: TH_STATIC,
        static_th: 300,
        ..p
    };
    assert_eq!(
        pg.admit(&mut pool, &st, 500),
        Ok(Charge {
            reserve: 0,
            shared: 100,
            headroom: 400
        })
    );
    // The pool's free bytes also bound the shared charge.
    let mut tiny = SharedPool { size: 50, used: 0 };
    let big = BufferProfile {
        mode: TH_STATIC,
        static_th: 1 << 20,
        ..p
    };
    let mut pg = PgState {
        reserve_used: 1000,
        ..PgState::ZERO
    };
    assert_eq!(
        pg.admit(&mut tiny, &big, 80),
        Ok(Charge {
            reserve: 0,
            shared: 50,
            headroom: 30
        })
    );
}

#[test]
fn lossy_drops_when_shared_is_full_lossless_uses_headroom() {
    let lossy = BufferProfile {
        lossless: 0,
        xoff: 0,
        ..lossless_profile()
    };
    let mut pool = SharedPool {
        size: 10_000,
        used: 0,
    };
    let mut pg = PgState::ZERO;
    let mut admitted = 0;
    loop {
        match pg.admit(&mut pool, &lossy, 500) {
            Ok(c) => {
                assert_eq!(c.headroom, 0);
                admitted += 500;
            }
            Err(e) => {
                assert_eq!(e, DropReason::SharedFull);
                break;
            }
        }
    }
    assert_eq!(admitted, 6000); // 1000 reserve + 5000 shared
                                // The same load on a lossless PG goes on into headroom.
    let mut pool = SharedPool {
        size: 10_000,
        used: 0,
    };
    let mut pg = PgState::ZERO;
    for _ in 0..12 {
        pg.admit(&mut pool, &lossless_profile(), 500).unwrap();
    }
    assert_eq!(
        pg.admit(&mut pool, &lossless_profile(), 500)
            .unwrap()
            .headroom,
        500
    );
}

#[test]
fn release_goes_headroom_then_shared_then_reserve() {
    let mut pool = SharedPool {
        size: 10_000,
        used: 7000,
    };
    let mut pg = PgState {
        reserve_used: 1000,
        shared_used: 5000,
        headroom_used: 2000,
        peak: 8000,
    };
    assert_eq!(
        pg.release(&mut pool, 1500),
        Charge {
            reserve: 0,
            shared: 0,
            headroom: 1500
        }
    );
    assert_eq!(
        pg.release(&mut pool, 1000),
        Charge {
            reserve: 0,
            shared: 500,
            headroom: 500
        }
    );
    assert_eq!(pool.used, 6500);
    assert_eq!(
        pg.release(&mut pool, 4800),
        Charge {
            reserve: 300,
            shared: 4500,
            headroom: 0
        }
    );
    assert_eq!(pool.used, 2000);
    // More than held: releases what is left.
    assert_eq!(
        pg.release(&mut pool, 10_000),
        Charge {
            reserve: 700,
            shared: 0,
            headroom: 0
        }
    );
    assert_eq!(pg.total(), 0);
    assert_eq!(pg.peak, 8000, "watermark kept");
}

#[test]
fn dynamic_threshold_shrinks_as_other_pgs_fill_the_pool() {
    // alpha 1: one PG alone gets S/2, two PGs S/3 each (shared = free).
    let p = BufferProfile {
        size: 0,
        ..lossless_profile()
    };
    let mut pool = SharedPool {
        size: 30_000,
        used: 0,
    };
    let (mut a, mut b) = (PgState::ZERO, PgState::ZERO);
    for _ in 0..120 {
        a.admit(&mut pool, &p, 100).unwrap();
        b.admit(&mut pool, &p, 100).unwrap();
    }
    assert_eq!((a.shared_used, b.shared_used), (10_000, 10_000));
    assert!(a.headroom_used > 0 && b.headroom_used > 0);
}
