use super::*;

/// A notification goes out when the queue reaches the threshold, at most
/// once per period per port pair.
#[test]
fn notifications_need_the_threshold_and_the_period() {
    let k = 400_000;
    assert!(!notify_due(k - 1, k, 0, 5_000_000));
    assert!(
        notify_due(k, k, 0, 5_000_000),
        "the first one, at the threshold"
    );
    let last = 5_000_000;
    assert!(!notify_due(2 * k, k, last, last + NOTIFY_EVERY_NS - 1));
    assert!(notify_due(2 * k, k, last, last + NOTIFY_EVERY_NS));
}

/// What was heard counts from its arrival for the TTL, then nothing.
#[test]
fn a_notification_counts_for_its_ttl() {
    let heard = 1_000_000;
    assert_eq!(
        far_drain_at(30_000, heard, NOTIFY_TTL_NS, heard - 1),
        0,
        "not yet arrived"
    );
    assert_eq!(far_drain_at(30_000, heard, NOTIFY_TTL_NS, heard), 30_000);
    assert_eq!(
        far_drain_at(30_000, heard, NOTIFY_TTL_NS, heard + NOTIFY_TTL_NS - 1),
        30_000
    );
    assert_eq!(
        far_drain_at(30_000, heard, NOTIFY_TTL_NS, heard + NOTIFY_TTL_NS),
        0
    );
    // 1.5 MB at 400G: 30 us; an unknown speed counts as 1 Mb/s
    assert_eq!(drain_time_ns(1_500_000, 400_000), 30_000);
    assert_eq!(drain_time_ns(1, 0), 8_000);
}
