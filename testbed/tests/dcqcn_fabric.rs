//! DCQCN end to end through the switch: a sender at 100 Mb/s into a
//! 10 Mb/s egress; the switch's buffer model marks CE once the queue passes
//! WRED min; the receiver (notification point) answers CE with CNPs, routed
//! back by the switch; the sender (reaction point) cuts its rate.
//! Properties, not exact counts: CNPs follow CE marks, the sender's rate
//! falls after the first CNP.

use std::time::Duration;

use testbed::scenes::dcqcn_one_switch;

static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(testbed::dataplane_bin);

#[test]
fn cnps_follow_ce_marks_and_the_sender_slows_down() {
    let scene = dcqcn_one_switch(
        std::path::Path::new(BIN.as_str()),
        "dq",
        Duration::from_secs(3),
    )
    .unwrap();
    let (np, rp) = (&scene.receiver, &scene.sender);
    println!("receiver: {np:?}\nsender: {rp:?}");
    assert!(np.ce_rx > 0, "the switch marked nothing");
    assert!(np.cnps_tx > 0, "no CNP for CE-marked frames");
    assert!(
        np.first_cnp_tx_ms >= np.first_ce_ms,
        "a CNP before any CE mark"
    );
    assert!(
        rp.cnps_rx > 0,
        "the sender never saw a CNP (routed back by the switch)"
    );
    let (before, after) = (scene.rate_before_mbps(), scene.rate_after_mbps());
    assert!(
        before > 20.0,
        "the sender did not start fast: {before:.1} Mb/s"
    );
    assert!(
        after < 0.6 * before,
        "rate did not fall after CNPs: {before:.1} -> {after:.1} Mb/s"
    );
    assert!(rp.dcqcn_rate_bps < scene.line_bps);
}
