use super::*;

#[test]
fn tx_time() {
    assert_eq!(tx_time_ns(1_000_000_000, 1500), 12_000);
    assert_eq!(tx_time_ns(G100, 1000), 80);
    assert_eq!(tx_time_ns(3_000_000_000, 1000), 2667, "rounded up");
    assert_eq!(tx_time_ns(M100, 1000), 80_000);
    assert_eq!(tx_time_ns(0, 1000), u64::MAX, "rate 0: never");
    assert_eq!(tx_time_ns(1, 0), 0);
    // huge lengths are capped, no overflow
    assert_eq!(tx_time_ns(1, u64::MAX), tx_time_ns(1, MAX_PACED_LEN));
    assert_eq!(next_send_ns(5, 1_000_000_000, 1500), 12_005);
    assert_eq!(next_send_ns(u64::MAX - 1, 1, 1), u64::MAX);
}

#[test]
fn back_to_back_is_exact_in_the_long_run() {
    let mut pc = Pacer::NEW;
    let rate = 3_000_000_000; // 2666.67 ns per 1000-byte frame
    let mut now = 0;
    let mut gaps = Vec::new();
    for _ in 0..3000 {
        assert!(pc.ready(now));
        let next = pc.on_send(now, rate, 1000);
        assert!(!pc.ready(next - 1));
        gaps.push(next - now);
        now = next;
    }
    assert_eq!(
        now, 8_000_000,
        "3000 frames x 8000 bits at 3 Gb/s = 8 ms exactly"
    );
    assert!(gaps.iter().all(|&g| g == 2666 || g == 2667));
}

#[test]
fn idle_banks_no_credit_and_early_frames_wait() {
    let mut pc = Pacer::NEW;
    assert_eq!(pc.on_send(1_000, M100, 1000), 81_000);
    // handed over early: scheduled at next_ns
    assert_eq!(pc.on_send(2_000, M100, 1000), 161_000);
    // idle: starts at its own time
    assert_eq!(pc.on_send(1_000_000, M100, 1000), 1_080_000);
    // rate change between frames
    assert_eq!(pc.on_send(1_080_000, 2 * M100, 1000), 1_120_000);
    // rate 0 blocks
    assert_eq!(pc.on_send(2_000_000, 0, 1000), u64::MAX);
    assert!(!pc.ready(u64::MAX - 1));
}
