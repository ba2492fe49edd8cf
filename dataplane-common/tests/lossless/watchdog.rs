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
