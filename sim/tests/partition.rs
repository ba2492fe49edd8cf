//! Partitioned runs (`partitions` > 1): the report is the same whatever
//! the threads, the model's outcomes hold (PFC lossless, drops without it,
//! every byte accounted for across partitions, a collective's job time),
//! and what cannot be cut is refused by field.

mod common;

use common::{assert_conserved, stable};
use dataplane_sim::{run_threads, Scenario, Sim};

fn websearch(partitions: u32) -> Scenario {
    Scenario {
        topology: "leafspine:4x2:4".into(),
        workload: "websearch".into(),
        load: 0.7,
        duration: "300us".into(),
        buffer: "4MB".into(),
        partitions,
        ..Scenario::default()
    }
}

#[test]
fn the_report_does_not_depend_on_the_threads() {
    let sc = websearch(6);
    let one = run_threads(&sc, "flowlet", false, 1).unwrap();
    assert!(one.flows_completed > 10, "too few flows to compare");
    assert!(one.in_flight_payload > 0, "nothing crossed at the end");
    for threads in [2, 3, 6] {
        let r = run_threads(&sc, "flowlet", false, threads).unwrap();
        assert_eq!(stable(&one), stable(&r), "{threads} threads");
    }
    assert_conserved(&one);
    // another cut is another tie order: a different run of the same model
    let serial = run_threads(&websearch(1), "flowlet", false, 1).unwrap();
    assert_ne!(
        stable(&one),
        stable(&serial),
        "the partitions changed nothing"
    );
    assert_conserved(&serial);
}

fn incast(pfc: bool, partitions: u32) -> Scenario {
    Scenario {
        partitions,
        ..common::incast(pfc, "none")
    }
}

#[test]
fn pfc_keeps_a_partitioned_incast_lossless_and_without_it_drops() {
    // 4 partitions: each switch alone, the senders' frames cross twice
    let on = run_threads(&incast(true, 4), "hash", false, 2).unwrap();
    assert_eq!(on.flows_completed, 12);
    assert!(on.pfc_xoff > 0, "the incast never paused anyone");
    assert_eq!(on.drops, 0, "drops with PFC on");
    assert_eq!(on.in_flight_payload, 0);
    assert_conserved(&on);
    let off = run_threads(&incast(false, 4), "hash", false, 2).unwrap();
    assert!(off.drops > 0, "no drop without PFC");
    assert!(off.retx_payload > 0);
    assert_eq!(off.flows_completed, 12, "go-back-N did not recover");
    assert_conserved(&off);
    // the drained run ends at its last completion, as the serial one does
    let serial = run_threads(&incast(true, 1), "hash", false, 1).unwrap();
    let (a, b) = (on.sim_time_ns as f64, serial.sim_time_ns as f64);
    assert!(
        (a - b).abs() / b < 0.05,
        "partitioned {a} ns, serial {b} ns"
    );
}

#[test]
fn what_cannot_be_cut_is_refused_by_field() {
    let new = |sc: Scenario| {
        Sim::new(sc.params("hash").unwrap())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    let e = Scenario {
        partitions: 0,
        ..Scenario::default()
    }
    .params("hash")
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("partitions"), "{e}");
    // leafspine:4x2 has 6 switches
    let e = new(Scenario {
        partitions: 7,
        ..Scenario::default()
    });
    assert!(
        e.starts_with("partitions") && e.contains("6 switches"),
        "{e}"
    );
    let e = new(Scenario {
        partitions: 2,
        link_delay: "0ns".into(),
        ..Scenario::default()
    });
    assert!(e.starts_with("partitions") && e.contains("no delay"), "{e}");
    // 16 ranks: a ring per rail between host c (leaf c / 4) and host 8 + c
    // (leaf 2 + c / 4), each step waiting for the flow its sender sent,
    // received at the other end: with 3 partitions (leaf i in partition
    // i mod 3) the two ends are apart, and the step would learn of it at
    // once, inside the window
    let ring = |partitions, dep_delay: &str| Scenario {
        workload: "allreduce".into(),
        size: "64KB".into(),
        partitions,
        dep_delay: dep_delay.into(),
        ..Scenario::default()
    };
    let e = new(ring(3, ""));
    assert!(
        e.starts_with("partitions") && e.contains("another partition") && e.contains("dep_delay"),
        "{e}"
    );
    let e = new(ring(3, "500ns"));
    assert!(e.starts_with("partitions") && e.contains("1000 ns"), "{e}");
    // with 2 the ends of every ring share a partition: it runs, as one
    // partition does
    for p in [1, 2] {
        let r = run_threads(&ring(p, ""), "hash", false, 2).unwrap();
        assert_eq!(r.flows_completed, 32, "{p} partitions");
        assert!(r.jct_ns > 0);
    }
}

#[test]
fn a_collective_runs_partitioned_when_its_steps_learn_a_window_later() {
    // 64 ranks over 8 leaves, a ring per rail across them: every step
    // waits for a flow received on another leaf, in another partition
    let ring = |partitions, dep_delay: &str| Scenario {
        topology: "leafspine:8x4:8".into(),
        workload: "allreduce".into(),
        size: "1MB".into(),
        partitions,
        dep_delay: dep_delay.into(),
        ..Scenario::default()
    };
    let serial = run_threads(&ring(1, "1us"), "hash", false, 1).unwrap();
    let at_once = run_threads(&ring(1, ""), "hash", false, 1).unwrap();
    assert_eq!(serial.flows_completed, serial.flows_total as u64);
    // 14 ring steps, the 13 after the first each learning of its input
    // 1 us later: the job takes about 13 us more
    let more = serial.jct_ns as f64 - at_once.jct_ns as f64;
    assert!(
        (more - 13_000.0).abs() < 0.2 * 13_000.0,
        "JCT {} ns with a 1 us step delay, {} ns without",
        serial.jct_ns,
        at_once.jct_ns
    );
    let one = run_threads(&ring(12, "1us"), "hash", false, 1).unwrap();
    assert_eq!(one.flows_completed, serial.flows_total as u64);
    for threads in [2, 5] {
        let r = run_threads(&ring(12, "1us"), "hash", false, threads).unwrap();
        assert_eq!(stable(&one), stable(&r), "{threads} threads");
    }
    // the same model as the serial run: the job's time within 2 %
    let (a, b) = (one.jct_ns as f64, serial.jct_ns as f64);
    assert!(
        (a - b).abs() / b < 0.02,
        "partitioned JCT {a} ns, serial {b} ns"
    );
    assert_conserved(&one);
}
