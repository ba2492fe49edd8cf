//! Load balancing against the ideal: place mode spreads a ring
//! all-reduce's steps one flow per uplink and meets the ideal job time,
//! where hashing collides; the ideal itself, busy utilisation, and
//! spraying with out-of-order-placement receivers.

#[allow(dead_code)] // the incast and the stable report serve other files
mod common;

use common::assert_conserved;
use dataplane_sim::{run_one, Report, Scenario};

/// A 64-GPU ring all-reduce (8 servers of 8 GPUs, a server per leaf, 8
/// spines, 1:1, 400G), NCCL's ring per rail: every step, each leaf starts
/// 8 flows to the next leaf at the same instant.
fn ring(seed: u64) -> Scenario {
    Scenario {
        topology: "leafspine:8x8:8".into(),
        workload: "allreduce".into(),
        size: "8MB".into(),
        cc: "mlx".into(),
        seed,
        drain: true,
        ..Scenario::default()
    }
}

fn run(sc: &Scenario, lb: &str) -> Report {
    let r = run_one(sc, lb, false).unwrap();
    assert_eq!(r.flows_completed as usize, r.flows_total, "{lb}");
    assert_conserved(&r);
    r
}

#[test]
fn place_spreads_every_ring_step_and_meets_the_ideal_hash_does_not() {
    for seed in 1..=3 {
        let sc = ring(seed);
        let place = run(&sc, "place");
        let hash = run(&sc, "hash");
        assert!(place.ideal_jct_ns > 0);
        assert_eq!(
            place.ideal_jct_ns, hash.ideal_jct_ns,
            "the ideal is the workload's"
        );
        // every (step, leaf): 8 flows on 8 uplinks, one each
        assert!(place.step_flows.placements > 0);
        assert_eq!(
            place.step_flows.excess_max, 0,
            "seed {seed}: {:?}",
            place.step_flows
        );
        assert_eq!(
            place.step_flows.per_uplink[1] as usize,
            8 * place.step_flows.placements
        );
        assert!(
            place.jct_vs_ideal < 1.03,
            "seed {seed}: place {}",
            place.jct_vs_ideal
        );
        assert!(
            place.uplink_busy_util.min > 0.95,
            "seed {seed}: {:?}",
            place.uplink_busy_util
        );
        assert_eq!(
            (place.naks, place.retx_payload, place.lb_evictions),
            (0, 0, 0)
        );
        // hashing puts two flows on an uplink in most steps
        assert!(
            hash.step_flows.excess_mean > 0.8,
            "seed {seed}: {:?}",
            hash.step_flows
        );
        assert!(
            hash.jct_vs_ideal > 1.3,
            "seed {seed}: hash {}",
            hash.jct_vs_ideal
        );
        assert!(hash.uplink_busy_util.mean < 0.7);
    }
}

/// One flow between two leaves on an idle fabric takes its unloaded FCT:
/// the ideal job time is that, and the run meets it to the nanosecond's
/// rounding.
#[test]
fn a_lone_flow_takes_the_ideal_time() {
    let sc = Scenario {
        topology: "leafspine:2x2:1".into(),
        workload: "allreduce".into(),
        ranks: 2,
        size: "2MB".into(),
        drain: true,
        ..Scenario::default()
    };
    let r = run(&sc, "hash");
    // 2 ranks: 2 steps, each a 1 MB flow each way, chained
    assert_eq!(r.flows_total, 4);
    assert!(
        r.jct_ns >= r.ideal_jct_ns,
        "faster than the ideal: {} < {}",
        r.jct_ns,
        r.ideal_jct_ns
    );
    assert!(r.jct_vs_ideal < 1.01, "{}", r.jct_vs_ideal);
}

/// Busy utilisation is a utilisation (at most 1) and at least the
/// utilisation over the whole run.
#[test]
fn busy_utilisation_is_bounded_by_one_and_the_whole_run() {
    for lb in ["hash", "place", "spray"] {
        let r = run(&ring(1), lb);
        let b = &r.uplink_busy_util;
        assert_eq!(b.count, 8, "{lb}: one figure per leaf");
        assert!(b.max <= 1.0 + 1e-9, "{lb}: {b:?}");
        assert!(
            b.mean >= r.uplink_util.mean,
            "{lb}: {b:?} vs {:?}",
            r.uplink_util
        );
    }
}

/// Spraying reorders every flow: go-back-N receivers NAK and resend;
/// receivers that place out of order take the same packets without a NAK
/// and finish the job several times sooner.
#[test]
fn sprayed_packets_need_out_of_order_receivers() {
    let rc = run(&ring(1), "spray");
    let ooo = run(
        &Scenario {
            receiver: "ooo".into(),
            ..ring(1)
        },
        "spray",
    );
    assert_eq!((rc.receiver.as_str(), ooo.receiver.as_str()), ("rc", "ooo"));
    assert!(
        rc.naks > 0 && rc.retx_payload > 0,
        "no reordering to repair"
    );
    assert_eq!((ooo.naks, ooo.retx_payload), (0, 0));
    assert!(
        ooo.jct_ns * 3 < rc.jct_ns,
        "ooo {} rc {}",
        ooo.jct_ns,
        rc.jct_ns
    );
}

/// The trace names every placement and NAK, one line each.
#[test]
fn the_trace_has_a_line_per_placement() {
    let sc = Scenario {
        trace_lb: true,
        ..ring(1)
    };
    let r = run(&sc, "place");
    let lines: Vec<&str> = r.lb_trace_csv().lines().collect();
    assert_eq!(lines[0], "t_ns,node,flow,event,from,to,psn,util_permille");
    let firsts = lines.iter().filter(|l| l.contains(",first,")).count();
    // every data flow and every ACK flow is placed once at its first leaf
    assert_eq!(firsts, 2 * r.flows_total);
    assert!(
        lines[1].starts_with("1") && lines[1].split(',').count() == 8,
        "{}",
        lines[1]
    );
}
