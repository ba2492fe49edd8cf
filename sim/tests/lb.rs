//! Load balancing against the ideal: place mode spreads a ring
//! all-reduce's steps one flow per uplink and meets the ideal job time,
//! where hashing collides; the ideal itself, busy utilisation, and
//! spraying with out-of-order-placement receivers.

#[allow(dead_code)] // the incast and the stable report serve other files
mod common;

use common::assert_conserved;
use dataplane_sim::host::Flow;
use dataplane_sim::{run_one, Report, Scenario, Sim};

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

/// The slot each of the first three flows took at its first leaf (the
/// balancer's trace), with or without the far view: flows 0 and 1 (leaves
/// 0 and 1, to leaf 2) start together, flow 2 (leaf 3, to leaf 2) 30 us
/// later, when leaf 3's uplinks are both idle.
fn three_flows(seed: u64, far_view: &str) -> [u8; 3] {
    three_flows_notes(seed, far_view).0
}

/// [`three_flows`], and the far view's notifications.
fn three_flows_notes(seed: u64, far_view: &str) -> ([u8; 3], u64) {
    let sc = Scenario {
        topology: "leafspine:4x2:4".into(),
        workload: "permutation".into(),
        cc: "mlx".into(),
        lb: "place".into(),
        seed,
        drain: true,
        trace_lb: true,
        far_view: far_view.into(),
        ..Scenario::default()
    };
    let mut sim = Sim::new(sc.params("place").unwrap()).unwrap();
    sim.mark_uplinks();
    sim.clear_flows();
    let sport = 49_152 + (seed as u16).wrapping_mul(131);
    for (i, (src, dst, t)) in [(0, 8, 0), (4, 9, 0), (12, 10, 30_000)]
        .into_iter()
        .enumerate()
    {
        let f = sim.push_flow(Flow::new(
            src,
            dst,
            8_000_000,
            t,
            sport + i as u16,
            100 + i as u32,
        ));
        sim.arrivals.push(f);
    }
    let wall = sim.run();
    let r = sim.report(wall);
    assert_eq!(r.flows_completed, 3);
    let mut slot = [u8::MAX; 3];
    for l in r.lb_trace_csv().lines().skip(1) {
        let c: Vec<&str> = l.split(',').collect();
        let (node, flow, event, to) = (c[1], c[2], c[3], c[5]);
        let first_leaf = ["leaf0", "leaf1", "leaf3"];
        if let Ok(f) = flow.parse::<usize>() {
            if f < 3 && event == "first" && node == first_leaf[f] {
                slot[f] = to.parse().unwrap();
            }
        }
    }
    assert!(slot.iter().all(|s| *s != u8::MAX), "{slot:?}");
    (slot, sim.far_notifications())
}

/// With the far view, a flow whose leaf's uplinks are both idle avoids
/// the spine where two other leaves' flows meet (its downlink to the
/// destination's leaf holds a queue); without it, the tie falls to the
/// placement count and hash, which put it there in some seeds.
#[test]
fn the_far_view_steers_a_tied_flow_off_a_congested_spine() {
    let (mut met, mut blind_joined) = (0, 0);
    for seed in 1..=12 {
        let [a, b, c] = three_flows(seed, "oracle:0ns");
        if a == b {
            met += 1;
            assert_ne!(
                c, a,
                "seed {seed}: far view on, flow 2 joined flows 0 and 1"
            );
        }
        let [a, b, c] = three_flows(seed, "");
        if a == b && c == a {
            blind_joined += 1;
        }
    }
    assert!(
        met > 0,
        "flows 0 and 1 never met on a spine: the test shows nothing"
    );
    assert!(
        blind_joined > 0,
        "without the far view flow 2 never joined them: the test cannot tell the far view's effect"
    );
}

/// Notify: a switch tells its upstream switch only when a lossless queue
/// reached the ECN threshold. Flows 0 and 1 of [`three_flows`] (two
/// leaves, 400G each, to one leaf) fill a spine's downlink when they take
/// the same spine, and only then.
#[test]
fn notifications_follow_a_queue_at_the_threshold() {
    let (mut met, mut apart) = (0, 0);
    for seed in 1..=12 {
        let (slots, notes) = three_flows_notes(seed, "notify");
        if slots[0] == slots[1] {
            met += 1;
            assert!(
                notes > 0,
                "seed {seed}: flows met on a spine, no notification"
            );
        } else {
            apart += 1;
        }
        let (_, off) = three_flows_notes(seed, "");
        assert_eq!(off, 0, "seed {seed}: notifications with the far view off");
    }
    assert!(
        met > 0 && apart > 0,
        "met {met}, apart {apart}: the seeds show one case only"
    );
}

/// The far view reads every switch: a partitioned run refuses it.
#[test]
fn the_far_view_needs_one_partition() {
    let sc = Scenario {
        far_view: "oracle:100us".into(),
        partitions: 2,
        ..Scenario::default()
    };
    let e = sc.params("place").unwrap_err().to_string();
    assert!(e.contains("far_view") && e.contains("partitions"), "{e}");
}
