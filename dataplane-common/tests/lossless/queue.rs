use super::*;

#[test]
fn drains_at_line_rate() {
    // 100G = 12.5 bytes/ns: 1000 ns -> 12500 bytes.
    let mut q = queue_with(&[(0, 100_000)]);
    let (d, rel) = drain(&mut q, 1000, G100);
    assert_eq!(d, 12_500);
    assert_eq!(rel[0], 12_500);
    assert!(
        rel[1..].iter().all(|&r| r == 0),
        "out-parameter overwritten"
    );
    assert_eq!(q.bytes, 87_500);
    assert_eq!(q.tx_bytes, 12_500);
    assert_eq!(q.last_ns, 1000);
    // 25G = 3.125 bytes/ns: 8000 ns -> 25000 bytes.
    let mut q = queue_with(&[(0, 100_000)]);
    assert_eq!(drain(&mut q, 8000, G25).0, 25_000);
}

#[test]
fn many_small_updates_drain_exactly_like_one() {
    // 25G: 3.125 bytes per ns; 1-ns updates carry the fraction.
    let mut a = queue_with(&[(0, 1_000_000)]);
    let mut b = a;
    let mut total = 0u64;
    for t in 1..=10_000u64 {
        total += u64::from(drain(&mut a, t, G25).0);
    }
    assert_eq!(total, 31_250);
    assert_eq!(drain(&mut b, 10_000, G25).0, 31_250);
    assert_eq!(a.bytes, b.bytes);
    // Odd steps at an odd speed (40G = 5 bytes/ns, 7-ns steps of 35 B;
    // 1234 Mb/s = 0.15425 B/ns).
    let mut c = queue_with(&[(0, 1_000_000)]);
    let mut total = 0u64;
    let mut t = 0;
    while t < 1_000_003 {
        t += 7;
        total += u64::from(drain(&mut c, t, 1234).0);
    }
    assert_eq!(total, t * 1234 / 8000);
}

#[test]
fn stops_when_empty_and_idle_time_earns_no_credit() {
    let mut q = queue_with(&[(3, 1000)]);
    let (d, rel) = drain(&mut q, 1_000_000, G100);
    assert_eq!((d, rel[3], q.bytes, q.drain_frac), (1000, 1000, 0, 0));
    // A packet arriving after a long idle period drains from its arrival.
    assert_eq!(drain(&mut q, 2_000_000, G100).0, 0);
    q.enqueue(3, 10_000);
    assert_eq!(drain(&mut q, 2_000_100, G100).0, 1250);
}

#[test]
fn speed_zero_never_drains_and_old_timestamps_are_no_time() {
    let mut q = queue_with(&[(0, 5000)]);
    assert_eq!(drain(&mut q, 1_000_000, 0).0, 0);
    assert_eq!(q.bytes, 5000);
    let before = q;
    assert_eq!(drain(&mut q, 10, G100).0, 0, "older now_ns drains nothing");
    assert_eq!(q, before);
}

#[test]
fn pause_freezes_until_the_timer_expires() {
    let mut q = queue_with(&[(0, 1_000_000)]);
    let mut rel = [0; MODEL_PORTS];
    // 1000 ns of draining, then PFC with 0xffff quanta at 100G:
    // 65535 x 512 bits / 100 Gb/s = 335539.2 ns -> 335539 ns.
    assert_eq!(q.apply_pfc(1000, 0xffff, G100, &mut rel), 12_500);
    let dur = macctl::quanta_to_nanos(0xffff, u64::from(G100));
    assert_eq!(dur, 335_539);
    assert_eq!(q.paused_until_ns, 1000 + dur);
    assert!(q.is_paused(1000) && q.is_paused(1000 + dur - 1) && !q.is_paused(1000 + dur));
    // Inside the pause: nothing.
    assert_eq!(drain(&mut q, 100_000, G100).0, 0);
    assert_eq!(drain(&mut q, 1000 + dur, G100).0, 0);
    // 800 ns after expiry: only the un-paused 800 ns drain.
    assert_eq!(drain(&mut q, 1000 + dur + 800, G100).0, 10_000);
    assert_eq!(q.tx_bytes, 22_500);
}

#[test]
fn pause_that_ends_between_two_updates_drains_only_the_unpaused_part() {
    let mut q = queue_with(&[(0, 1_000_000)]);
    let mut rel = [0; MODEL_PORTS];
    // 100 quanta at 100G = 512 ns; no update during the pause.
    q.apply_pfc(0, 100, G100, &mut rel);
    assert_eq!(q.paused_until_ns, 512);
    // One update 2512 ns later: 2000 un-paused ns -> 25000 bytes.
    assert_eq!(drain(&mut q, 2512, G100).0, 25_000);
}

#[test]
fn pause_and_xon_between_updates_drain_around_the_pause() {
    let mut q = queue_with(&[(0, 1_000_000)]);
    let mut rel = [0; MODEL_PORTS];
    // Update at 0; pause at 1000 (the event drains 0..1000 first).
    assert_eq!(q.apply_pfc(1000, 0xffff, G100, &mut rel), 12_500);
    // XON at 3000: the paused 2000 ns drain nothing.
    assert_eq!(q.apply_pfc(3000, 0, G100, &mut rel), 0);
    assert!(!q.is_paused(3000));
    // 1000 ns later: 12500 bytes.
    assert_eq!(drain(&mut q, 4000, G100).0, 12_500);
    assert_eq!(q.bytes, 1_000_000 - 25_000);
}

#[test]
fn a_new_pause_time_reloads_the_timer_and_xon_without_pause_is_harmless() {
    let mut q = queue_with(&[(0, 1_000_000)]);
    let mut rel = [0; MODEL_PORTS];
    q.apply_pfc(0, 0xffff, G100, &mut rel);
    // A shorter time replaces the longer one (802.1Qbb reloads).
    q.apply_pfc(100, 10, G100, &mut rel); // 10 quanta = 51.2 -> 51 ns
    assert_eq!(q.paused_until_ns, 151);
    assert_eq!(drain(&mut q, 251, G100).0, 1250);
    q.apply_pfc(300, 0, G100, &mut rel);
    assert_eq!(
        q.paused_until_ns, 151,
        "XON on a running queue changes nothing"
    );
}

#[test]
fn enqueue_tracks_slots_and_the_watermark() {
    let mut q = EgressQueue::ZERO;
    q.enqueue(2, 100);
    q.enqueue(2 + MODEL_PORTS, 50); // masked to slot 2
    q.enqueue(15, 25);
    assert_eq!(
        (q.bytes, q.ingress[2], q.ingress[15], q.peak_bytes),
        (175, 150, 25, 175)
    );
    drain(&mut q, 80, G100); // 1000 bytes of capacity: empties
    assert_eq!((q.bytes, q.peak_bytes), (0, 175));
    // Near 4 GiB the queue accepts what fits.
    let mut q = queue_with(&[(0, u32::MAX - 10)]);
    assert_eq!(q.enqueue(1, 100), 10);
    assert_eq!(q.bytes, u32::MAX);
    assert_invariant(&q);
}
