use super::*;

const MS: u64 = 1_000_000;

const STORM: WdObservation = WdObservation {
    paused: true,
    has_bytes: true,
    tx_bytes_delta: 0,
    rx_pfc_delta: 3,
};
const QUIET: WdObservation = WdObservation {
    paused: false,
    has_bytes: false,
    tx_bytes_delta: 0,
    rx_pfc_delta: 0,
};

fn primed(at: u64) -> PfcWd {
    let mut wd = PfcWd::ZERO;
    assert_eq!(
        wd.poll(&PfcWdConfig::DEFAULT, at, &STORM),
        WdEvent::None,
        "first poll only primes"
    );
    wd
}

#[test]
fn storm_is_detected_only_after_the_full_detection_time() {
    let cfg = PfcWdConfig::DEFAULT; // 200 ms
    let mut wd = primed(0);
    for t in [50, 100, 150, 199] {
        assert_eq!(wd.poll(&cfg, t * MS, &STORM), WdEvent::None, "t={t} ms");
    }
    assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
    assert_eq!(wd.action(&cfg), Some(WdAction::Drop));
    assert_eq!(
        wd.poll(&cfg, 250 * MS, &STORM),
        WdEvent::None,
        "reported once"
    );
    // With SONiC's 200 ms poll, one full storm-like interval suffices.
    let mut wd = primed(0);
    assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
}

#[test]
fn bunched_polls_do_not_add_up_to_a_false_alarm() {
    // Five storm-like polls in 120 ms (a poll-count detector with a
    // nominal 50 ms poll would fire at the fourth).
    let cfg = PfcWdConfig::DEFAULT;
    let mut wd = primed(0);
    for t in [100, 105, 110, 115, 120] {
        assert_eq!(wd.poll(&cfg, t * MS, &STORM), WdEvent::None);
    }
    assert_eq!(wd.poll(&cfg, 199 * MS, &STORM), WdEvent::None);
    assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
}

#[test]
fn one_poll_with_tx_progress_resets_the_run() {
    let cfg = PfcWdConfig::DEFAULT;
    let mut wd = primed(0);
    for t in [50, 100, 150] {
        wd.poll(&cfg, t * MS, &STORM);
    }
    let progress = WdObservation {
        tx_bytes_delta: 1,
        ..STORM
    };
    assert_eq!(wd.poll(&cfg, 200 * MS, &progress), WdEvent::None);
    for t in [250, 300, 350, 399] {
        assert_eq!(wd.poll(&cfg, t * MS, &STORM), WdEvent::None, "t={t} ms");
    }
    assert_eq!(wd.poll(&cfg, 400 * MS, &STORM), WdEvent::StormDetected);
}

#[test]
fn every_condition_is_needed() {
    let cfg = PfcWdConfig::DEFAULT;
    for obs in [
        WdObservation {
            rx_pfc_delta: 0,
            ..STORM
        }, // PFC stopped
        WdObservation {
            paused: false,
            ..STORM
        },
        WdObservation {
            has_bytes: false,
            ..STORM
        },
        WdObservation {
            tx_bytes_delta: 64,
            ..STORM
        },
    ] {
        let mut wd = primed(0);
        for t in 1..=20u64 {
            assert_eq!(wd.poll(&cfg, t * 100 * MS, &obs), WdEvent::None, "{obs:?}");
        }
    }
}

#[test]
fn restored_after_the_restoration_time_without_pfc() {
    let cfg = PfcWdConfig {
        action: WD_ACTION_FORWARD,
        ..PfcWdConfig::DEFAULT
    };
    let mut wd = primed(0);
    assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
    assert_eq!(wd.action(&cfg), Some(WdAction::Forward));
    // PFC goes on until 600 ms: stays in storm.
    for t in [300, 400, 500, 600] {
        assert_eq!(wd.poll(&cfg, t * MS, &STORM), WdEvent::None);
    }
    // No PFC after 600 ms: restored at 800 ms, not before.
    for t in [650, 700, 799] {
        assert_eq!(wd.poll(&cfg, t * MS, &QUIET), WdEvent::None, "t={t} ms");
    }
    assert_eq!(wd.poll(&cfg, 800 * MS, &QUIET), WdEvent::StormRestored);
    assert_eq!(wd.action(&cfg), None);
    // A new storm needs the full detection time again.
    assert_eq!(wd.poll(&cfg, 900 * MS, &STORM), WdEvent::None);
    assert_eq!(wd.poll(&cfg, 999 * MS, &STORM), WdEvent::None);
    assert_eq!(wd.poll(&cfg, 1000 * MS, &STORM), WdEvent::StormDetected);
}

#[test]
fn no_restore_loop_while_raw_pfc_keeps_arriving() {
    // Action drop: the caller ignores PFC for the queue, so it is no
    // longer paused and drains; the raw RX PFC count keeps growing.
    let cfg = PfcWdConfig::DEFAULT;
    let mut wd = primed(0);
    assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
    let under_action = WdObservation {
        paused: false,
        has_bytes: false,
        tx_bytes_delta: 9000,
        rx_pfc_delta: 10,
    };
    for t in 3..=50u64 {
        assert_eq!(wd.poll(&cfg, t * 100 * MS, &under_action), WdEvent::None);
    }
    assert_eq!(wd.action(&cfg), Some(WdAction::Drop));
}

#[test]
fn alert_action_and_out_of_order_polls() {
    let cfg = PfcWdConfig {
        action: WD_ACTION_ALERT,
        detection_time_ms: 100,
        ..PfcWdConfig::DEFAULT
    };
    let mut wd = primed(1000 * MS);
    assert_eq!(
        wd.poll(&cfg, 900 * MS, &STORM),
        WdEvent::None,
        "older poll ignored"
    );
    assert_eq!(wd.last_poll_ns, 1000 * MS);
    assert_eq!(wd.poll(&cfg, 1100 * MS, &STORM), WdEvent::StormDetected);
    assert_eq!(wd.action(&cfg), Some(WdAction::Alert));
}

#[test]
fn alert_is_restored_when_the_storm_condition_ends() {
    // SONiC: an alert storm ends at the first poll that is not storm-like,
    // not after the restoration time.
    let cfg = PfcWdConfig {
        action: WD_ACTION_ALERT,
        restoration_time_ms: 5000,
        ..PfcWdConfig::DEFAULT
    };
    let mut wd = primed(0);
    assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
    for t in [400, 600, 800] {
        assert_eq!(wd.poll(&cfg, t * MS, &STORM), WdEvent::None, "t={t} ms");
    }
    // still paused and holding bytes, but no PFC arrived in the interval
    let ended = WdObservation {
        rx_pfc_delta: 0,
        ..STORM
    };
    assert_eq!(wd.poll(&cfg, 1000 * MS, &ended), WdEvent::StormRestored);
    assert_eq!(wd.action(&cfg), None);
    // the queue transmitting also ends it
    let mut wd = primed(0);
    assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
    let sent = WdObservation {
        tx_bytes_delta: 1,
        ..STORM
    };
    assert_eq!(wd.poll(&cfg, 400 * MS, &sent), WdEvent::StormRestored);
}

#[test]
fn drop_and_forward_ignore_the_storm_condition_while_pfc_arrives() {
    // Under drop / forward the queue drains (it no longer honours PFC), so
    // the storm condition is false: only the restoration timer restores.
    for action in [WD_ACTION_DROP, WD_ACTION_FORWARD] {
        let cfg = PfcWdConfig {
            action,
            ..PfcWdConfig::DEFAULT
        };
        let mut wd = primed(0);
        assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
        let draining = WdObservation {
            paused: false,
            has_bytes: false,
            tx_bytes_delta: 5000,
            rx_pfc_delta: 2,
        };
        for t in 3..=30u64 {
            assert_eq!(wd.poll(&cfg, t * 100 * MS, &draining), WdEvent::None);
        }
        assert_eq!(wd.poll(&cfg, 3100 * MS, &QUIET), WdEvent::None);
        assert_eq!(wd.poll(&cfg, 3200 * MS, &QUIET), WdEvent::StormRestored);
    }
}

#[test]
fn a_storm_shorter_than_the_detection_time_never_triggers() {
    // 150 ms storms separated by one quiet poll, for 10 s: never detected.
    let cfg = PfcWdConfig::DEFAULT;
    let mut wd = primed(0);
    let mut t = 0;
    for _ in 0..50 {
        for _ in 0..3 {
            t += 50;
            assert_eq!(wd.poll(&cfg, t * MS, &STORM), WdEvent::None, "t={t} ms");
        }
        t += 50;
        assert_eq!(wd.poll(&cfg, t * MS, &QUIET), WdEvent::None);
    }
}

#[test]
fn every_priority_stormed_at_once_is_detected_once_each() {
    // sonic-buildimage#29203: all lossless priorities of a port stormed;
    // the raw counter keeps counting under the action, so each queue is
    // detected once and restored once, after the storm.
    let cfg = PfcWdConfig {
        restoration_time_ms: 100,
        ..PfcWdConfig::DEFAULT
    };
    let mut wds = [primed(0), primed(0)];
    let mut events = [[0u32; 2]; 2];
    let under_action = WdObservation {
        paused: false,
        has_bytes: false,
        tx_bytes_delta: 0,
        rx_pfc_delta: 20,
    };
    for t in 1..=400u64 {
        let storming = t <= 300; // 15 s of storm, 150 restoration times
        for (i, wd) in wds.iter_mut().enumerate() {
            let obs = match (storming, wd.storm != 0) {
                (true, false) => STORM,
                (true, true) => under_action,
                (false, _) => QUIET,
            };
            match wd.poll(&cfg, t * 50 * MS, &obs) {
                WdEvent::StormDetected => events[i][0] += 1,
                WdEvent::StormRestored => events[i][1] += 1,
                WdEvent::None => {}
            }
        }
    }
    assert_eq!(events, [[1, 1], [1, 1]]);
}

#[test]
fn storm_fate_follows_the_actions_on_both_sides() {
    use dataplane_common::buffer::{STORM_DROP, STORM_FORWARD, STORM_NONE};
    let f = |i, e| storm_fate(i, e);
    let none = f(STORM_NONE, STORM_NONE);
    assert_eq!(
        none,
        StormFate {
            verdict: StormVerdict::Model,
            rx: WdCount::None,
            tx: WdCount::None,
            lossless: true
        }
    );
    // egress queue stormed
    let d = f(STORM_NONE, STORM_DROP);
    assert_eq!(
        (d.verdict, d.rx, d.tx, d.lossless),
        (StormVerdict::Drop, WdCount::None, WdCount::Drop, true)
    );
    let w = f(STORM_NONE, STORM_FORWARD);
    assert_eq!(
        (w.verdict, w.rx, w.tx),
        (StormVerdict::Unmodelled, WdCount::None, WdCount::Ok)
    );
    // ingress priority stormed: drop drops what the peer sends; forward
    // passes it, without lossless treatment
    let d = f(STORM_DROP, STORM_NONE);
    assert_eq!(
        (d.verdict, d.rx, d.tx, d.lossless),
        (StormVerdict::Drop, WdCount::Drop, WdCount::None, false)
    );
    let d = f(STORM_DROP, STORM_FORWARD);
    assert_eq!(
        (d.verdict, d.rx, d.tx),
        (StormVerdict::Drop, WdCount::Drop, WdCount::None)
    );
    let w = f(STORM_FORWARD, STORM_NONE);
    assert_eq!(
        (w.verdict, w.rx, w.tx, w.lossless),
        (StormVerdict::Model, WdCount::Ok, WdCount::None, false)
    );
    let w = f(STORM_FORWARD, STORM_DROP);
    assert_eq!(
        (w.verdict, w.rx, w.tx),
        (StormVerdict::Drop, WdCount::Ok, WdCount::Drop)
    );
    // counting them
    let mut c = dataplane_common::buffer::LosslessCounters::ZERO;
    c.count_storm(3, true, WdCount::Ok);
    c.count_storm(3, true, WdCount::Drop);
    c.count_storm(3, false, WdCount::Ok);
    c.count_storm(3, false, WdCount::Drop);
    c.count_storm(3, false, WdCount::None);
    assert_eq!(
        (c.wd_rx_ok[3], c.wd_rx_drop[3], c.wd_tx_ok[3], c.wd_drop[3]),
        (1, 1, 1, 1)
    );
    let mut sum = dataplane_common::buffer::LosslessCounters::ZERO;
    sum.accumulate(&c);
    sum.accumulate(&c);
    assert_eq!(
        (
            sum.wd_rx_ok[3],
            sum.wd_rx_drop[3],
            sum.wd_tx_ok[3],
            sum.wd_drop[3]
        ),
        (2, 2, 2, 2)
    );
}
