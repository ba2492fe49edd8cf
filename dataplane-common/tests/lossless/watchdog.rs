use super::*;

const MS: u64 = 1_000_000;

/// A storm-like interval whose latest PFC frame arrived at 0 (see
/// [`poll_storm`] for frames up to the poll).
const STORM: WdObservation = WdObservation {
    paused: true,
    has_bytes: true,
    tx_bytes_delta: 0,
    rx_pfc_delta: 3,
    last_pfc_ns: 0,
};
const QUIET: WdObservation = WdObservation {
    paused: false,
    has_bytes: false,
    tx_bytes_delta: 0,
    rx_pfc_delta: 0,
    last_pfc_ns: 0,
};

/// `obs` with its latest PFC frame at `t_ms`.
fn at(obs: WdObservation, t_ms: u64) -> WdObservation {
    WdObservation {
        last_pfc_ns: t_ms * MS,
        ..obs
    }
}

/// A poll at `t_ms` of a storm whose frames arrive up to the poll.
fn poll_storm(wd: &mut PfcWd, cfg: &PfcWdConfig, t_ms: u64) -> WdEvent {
    wd.poll(cfg, t_ms * MS, &at(STORM, t_ms))
}

fn primed(at_ns: u64) -> PfcWd {
    let mut wd = PfcWd::ZERO;
    assert_eq!(
        wd.poll(&PfcWdConfig::DEFAULT, at_ns, &STORM),
        WdEvent::None,
        "first poll only primes"
    );
    wd
}

/// A watchdog that detected a storm: primed at 0, frames from 50 ms,
/// detected at the poll of 250 ms.
fn detected(cfg: &PfcWdConfig) -> PfcWd {
    let mut wd = primed(0);
    assert_eq!(poll_storm(&mut wd, cfg, 50), WdEvent::None);
    assert_eq!(poll_storm(&mut wd, cfg, 250), WdEvent::StormDetected);
    wd
}

#[test]
fn storm_is_detected_once_its_frames_span_the_detection_time() {
    let cfg = PfcWdConfig::DEFAULT; // 200 ms
    let mut wd = primed(0);
    // frames from 50 ms on, polled every 50 ms
    for t in [50, 100, 150, 200] {
        assert_eq!(poll_storm(&mut wd, &cfg, t), WdEvent::None, "t={t} ms");
    }
    // the latest frame at 249 ms: 199 ms of frames
    assert_eq!(wd.poll(&cfg, 250 * MS, &at(STORM, 249)), WdEvent::None);
    assert_eq!(poll_storm(&mut wd, &cfg, 300), WdEvent::StormDetected);
    assert_eq!(wd.action(&cfg), Some(WdAction::Drop));
    assert_eq!(
        poll_storm(&mut wd, &cfg, 350),
        WdEvent::None,
        "reported once"
    );
    // SONiC's 200 ms poll: the second storm-like poll
    let mut wd = primed(0);
    assert_eq!(poll_storm(&mut wd, &cfg, 200), WdEvent::None);
    assert_eq!(poll_storm(&mut wd, &cfg, 400), WdEvent::StormDetected);
}

#[test]
fn a_storm_just_shorter_than_the_detection_time_straddling_polls_never_triggers() {
    // Frames from 49.9 ms to 249.8 ms (199.9 ms) seen by polls every 50 ms:
    // five storm-like intervals (0, 50] .. (200, 250] cover 250 ms of
    // polls, which a poll-counting detector (SONiC charges the poll
    // interval per poll) takes for 250 ms of storm.
    let cfg = PfcWdConfig::DEFAULT;
    let mut wd = primed(0);
    let mut last = 0;
    for t in [50u64, 100, 150, 200, 250] {
        let latest = if t == 250 {
            249_800_000
        } else {
            t * MS - 100_000
        };
        let obs = WdObservation {
            last_pfc_ns: latest,
            ..STORM
        };
        assert_eq!(wd.poll(&cfg, t * MS, &obs), WdEvent::None, "t={t} ms");
        last = t;
    }
    // the storm is over: the queue stays paused (the last pause runs on)
    // but no frame arrives
    for t in (last + 50..=2000).step_by(50) {
        let obs = WdObservation {
            rx_pfc_delta: 0,
            last_pfc_ns: 249_800_000,
            ..STORM
        };
        assert_eq!(wd.poll(&cfg, t * MS, &obs), WdEvent::None, "t={t} ms");
    }
}

#[test]
fn bunched_polls_do_not_add_up_to_a_false_alarm() {
    // Five storm-like polls in 120 ms (a poll-count detector with a
    // nominal 50 ms poll would fire at the fourth).
    let cfg = PfcWdConfig::DEFAULT;
    let mut wd = primed(0);
    for t in [100, 105, 110, 115, 120] {
        assert_eq!(poll_storm(&mut wd, &cfg, t), WdEvent::None);
    }
    assert_eq!(poll_storm(&mut wd, &cfg, 299), WdEvent::None);
    assert_eq!(poll_storm(&mut wd, &cfg, 300), WdEvent::StormDetected);
}

#[test]
fn one_poll_with_tx_progress_resets_the_run() {
    let cfg = PfcWdConfig::DEFAULT;
    let mut wd = primed(0);
    for t in [50, 100, 150, 200] {
        poll_storm(&mut wd, &cfg, t);
    }
    let progress = WdObservation {
        tx_bytes_delta: 1,
        ..at(STORM, 250)
    };
    assert_eq!(wd.poll(&cfg, 250 * MS, &progress), WdEvent::None);
    for t in [300, 350, 400, 450] {
        assert_eq!(poll_storm(&mut wd, &cfg, t), WdEvent::None, "t={t} ms");
    }
    assert_eq!(poll_storm(&mut wd, &cfg, 500), WdEvent::StormDetected);
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
            let o = at(obs, t * 100);
            assert_eq!(wd.poll(&cfg, t * 100 * MS, &o), WdEvent::None, "{obs:?}");
        }
    }
}

#[test]
fn restored_after_the_restoration_time_without_pfc() {
    let cfg = PfcWdConfig {
        action: WD_ACTION_FORWARD,
        ..PfcWdConfig::DEFAULT
    };
    let mut wd = detected(&cfg);
    assert_eq!(wd.action(&cfg), Some(WdAction::Forward));
    // PFC goes on until 600 ms: stays in storm.
    for t in [300, 400, 500, 600] {
        assert_eq!(poll_storm(&mut wd, &cfg, t), WdEvent::None);
    }
    // No PFC after 600 ms: restored at 800 ms, not before.
    for t in [650, 700, 799] {
        assert_eq!(wd.poll(&cfg, t * MS, &QUIET), WdEvent::None, "t={t} ms");
    }
    assert_eq!(wd.poll(&cfg, 800 * MS, &QUIET), WdEvent::StormRestored);
    assert_eq!(wd.action(&cfg), None);
    // A new storm needs the full detection time again.
    assert_eq!(poll_storm(&mut wd, &cfg, 900), WdEvent::None);
    assert_eq!(poll_storm(&mut wd, &cfg, 1099), WdEvent::None);
    assert_eq!(poll_storm(&mut wd, &cfg, 1100), WdEvent::StormDetected);
}

#[test]
fn no_restore_loop_while_raw_pfc_keeps_arriving() {
    // Action drop: the caller ignores PFC for the queue, so it is no
    // longer paused and drains; the raw RX PFC count keeps growing.
    let cfg = PfcWdConfig::DEFAULT;
    let mut wd = detected(&cfg);
    let under_action = WdObservation {
        paused: false,
        has_bytes: false,
        tx_bytes_delta: 9000,
        rx_pfc_delta: 10,
        last_pfc_ns: 0,
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
    assert_eq!(poll_storm(&mut wd, &cfg, 1050), WdEvent::None);
    assert_eq!(poll_storm(&mut wd, &cfg, 1150), WdEvent::StormDetected);
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
    let mut wd = detected(&cfg);
    for t in [400, 600, 800] {
        assert_eq!(poll_storm(&mut wd, &cfg, t), WdEvent::None, "t={t} ms");
    }
    // still paused and holding bytes, but no PFC arrived in the interval
    let ended = WdObservation {
        rx_pfc_delta: 0,
        ..STORM
    };
    assert_eq!(wd.poll(&cfg, 1000 * MS, &ended), WdEvent::StormRestored);
    assert_eq!(wd.action(&cfg), None);
    // the queue transmitting also ends it
    let mut wd = detected(&cfg);
    let sent = WdObservation {
        tx_bytes_delta: 1,
        ..at(STORM, 400)
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
        let mut wd = detected(&cfg);
        let draining = WdObservation {
            paused: false,
            has_bytes: false,
            tx_bytes_delta: 5000,
            rx_pfc_delta: 2,
            last_pfc_ns: 0,
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
    // 190 ms storms (frames every 2 ms) separated by one quiet poll, for
    // 10 s, polled every 50 ms with the storms at every phase: never
    // detected.
    let cfg = PfcWdConfig::DEFAULT;
    let mut wd = primed(0);
    let mut t = 0u64;
    for k in 0..50u64 {
        let start = t + k % 50;
        let end = start + 190;
        loop {
            t += 50;
            let latest = end.min(t) - (end.min(t) - start) % 2;
            let obs = if t - 50 < end {
                at(STORM, latest)
            } else {
                WdObservation {
                    rx_pfc_delta: 0,
                    ..at(STORM, end)
                }
            };
            assert_eq!(wd.poll(&cfg, t * MS, &obs), WdEvent::None, "t={t} ms");
            if t >= end + 50 {
                break;
            }
        }
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
        last_pfc_ns: 0,
    };
    for t in 1..=400u64 {
        let storming = t <= 300; // 15 s of storm, 150 restoration times
        for (i, wd) in wds.iter_mut().enumerate() {
            let obs = match (storming, wd.storm != 0) {
                (true, false) => at(STORM, t * 50),
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
