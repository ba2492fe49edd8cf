//! The simulator's properties, on small fabrics (each run takes well under
//! a second): determinism, conservation of bytes, PFC keeps the RoCE class
//! lossless (and without PFC it is not), hash polarises a small fan where
//! bandwidth-aware balancing does not, DCQCN cuts PFC pauses, and bad
//! configuration is refused by field.

mod common;

use common::{assert_conserved, incast, stable};
use dataplane_sim::host::Flow;
use dataplane_sim::{run_one, Scenario, Sim};

/// Web-search at 50 % on a 4x2 leaf-spine for 300 us, with flowlets.
fn small_websearch() -> Scenario {
    Scenario {
        topology: "leafspine:4x2:4".into(),
        workload: "websearch".into(),
        load: 0.5,
        duration: "300us".into(),
        lb: "flowlet".into(),
        ..Scenario::default()
    }
}

#[test]
fn same_seed_same_report_other_seed_other_report() {
    let sc = small_websearch();
    let a = run_one(&sc, "flowlet", false).unwrap();
    let b = run_one(&sc, "flowlet", false).unwrap();
    assert!(a.flows_completed > 10, "too few flows to compare");
    assert_eq!(stable(&a), stable(&b));
    let c = run_one(&Scenario { seed: 2, ..sc }, "flowlet", false).unwrap();
    assert_ne!(stable(&a), stable(&c), "the seed changes nothing");
}

#[test]
fn pfc_on_incast_is_lossless_and_conserves_bytes() {
    let r = run_one(&incast(true, "none"), "hash", false).unwrap();
    assert_eq!(r.flows_completed, 12);
    assert!(r.pfc_xoff > 0, "the incast never paused anyone");
    assert!(r.pfc_paused_ns > 0);
    assert_eq!(r.drops_lossless, 0, "lossless drops with PFC on");
    assert_eq!(r.drops, 0);
    assert_eq!(r.retx_payload, 0);
    assert_eq!(r.in_flight_payload, 0);
    assert_conserved(&r);
}

#[test]
fn pfc_off_incast_drops_and_retransmits_yet_completes() {
    let r = run_one(&incast(false, "none"), "hash", false).unwrap();
    assert_eq!(r.pfc_frames, 0);
    assert!(r.drops > 0, "no drop without PFC");
    assert!(r.dropped_payload > 0);
    assert!(r.retx_payload > 0, "drops without retransmission");
    assert_eq!(r.flows_completed, 12, "go-back-N did not recover");
    assert_conserved(&r);
}

#[test]
fn conservation_holds_mid_run_with_bytes_in_flight() {
    let sc = Scenario {
        topology: "leafspine:2x2:8".into(),
        workload: "websearch".into(),
        load: 0.8,
        duration: "100us".into(),
        buffer: "2MB".into(),
        pfc: false,
        ..Scenario::default()
    };
    let r = run_one(&sc, "hash", false).unwrap();
    assert!(r.in_flight_payload > 0, "nothing in flight at 100 us");
    assert_conserved(&r);
}

#[test]
fn dcqcn_cuts_pfc_pauses_in_an_incast() {
    let mk = |cc: &str| Scenario {
        kmin: "20KB".into(),
        kmax: "200KB".into(),
        size: "8MB".into(),
        buffer: "8MB".into(),
        ..incast(true, cc)
    };
    let none = run_one(&mk("none"), "hash", false).unwrap();
    for cc in ["dcqcn", "mlx"] {
        let r = run_one(&mk(cc), "hash", false).unwrap();
        assert!(r.cnp_sent > 0);
        assert_eq!(r.drops_lossless, 0);
        assert!(
            r.pfc_paused_ns * 2 < none.pfc_paused_ns,
            "{cc}: paused {} ns, without congestion control {} ns",
            r.pfc_paused_ns,
            none.pfc_paused_ns
        );
    }
}

/// Four elephants (8 MB, 160 us each at 400G) from leaf 0 to leaf 1, 50 us
/// apart (so the rate estimator sees the earlier ones), over 4 uplinks:
/// the spread of the uplinks' utilisation (max - min).
fn fan_spread(lb: &str, seed: u64) -> f64 {
    let sc = Scenario {
        topology: "leafspine:2x4:4".into(),
        workload: "permutation".into(),
        size: "2MB".into(),
        lb: lb.into(),
        seed,
        drain: true,
        ..Scenario::default()
    };
    let mut sim = Sim::new(sc.params(lb).unwrap()).unwrap();
    sim.mark_uplinks();
    sim.clear_flows();
    for i in 0..4u32 {
        let f = sim.push_flow(Flow::new(
            i,
            4 + i,
            8_000_000,
            u64::from(i) * 50_000,
            50_000 + (seed as u16).wrapping_mul(7) + i as u16,
            100 + i,
        ));
        sim.arrivals.push(f);
    }
    let wall = sim.run();
    let r = sim.report(wall);
    assert_eq!(r.flows_completed, 4);
    let up: Vec<f64> = r
        .uplinks
        .iter()
        .filter(|l| l.from == "leaf0")
        .map(|l| l.util)
        .collect();
    assert_eq!(up.len(), 4);
    up.iter().cloned().fold(0.0, f64::max) - up.iter().cloned().fold(1.0, f64::min)
}

#[test]
fn hash_polarises_a_small_fan_bandwidth_spreads_it() {
    let seeds = 1..=6u64;
    let hash: Vec<f64> = seeds.clone().map(|s| fan_spread("hash", s)).collect();
    let bw: Vec<f64> = seeds.map(|s| fan_spread("bandwidth", s)).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    // bandwidth: each elephant on its own uplink every time
    for (i, s) in bw.iter().enumerate() {
        assert!(*s < 0.15, "bandwidth seed {}: uplink spread {s:.2}", i + 1);
    }
    assert!(
        mean(&hash) > 2.0 * mean(&bw) + 0.1,
        "hash spread {hash:?} not above bandwidth {bw:?}"
    );
}

#[test]
fn collectives_complete_with_a_job_time() {
    for wl in ["allreduce", "halving-doubling", "alltoall"] {
        let sc = Scenario {
            topology: "leafspine:2x2:4".into(),
            workload: wl.into(),
            size: "256KB".into(),
            drain: true,
            ..Scenario::default()
        };
        let r = run_one(&sc, "hash", false).unwrap();
        assert_eq!(r.flows_completed as usize, r.flows_total, "{wl}");
        assert!(r.jct_ns > 0, "{wl}: no JCT");
        assert_conserved(&r);
    }
}

#[test]
fn topologies_route_every_host_pair() {
    for (t, hosts) in [("clos3:4", 16), ("rail:4:2", 32), ("leafspine:3x2:5", 15)] {
        let sc = Scenario {
            topology: t.into(),
            workload: "permutation".into(),
            size: "64KB".into(),
            drain: true,
            ..Scenario::default()
        };
        let r = run_one(&sc, "hash", false).unwrap();
        assert_eq!(r.flows_total, hosts, "{t}");
        assert_eq!(r.flows_completed as usize, hosts, "{t}");
    }
}

#[test]
fn bad_configuration_names_the_field() {
    let bad = [
        (
            Scenario {
                speed: "400X".into(),
                ..Scenario::default()
            },
            "speed",
        ),
        (
            Scenario {
                duration: "ten".into(),
                ..Scenario::default()
            },
            "duration",
        ),
        (
            Scenario {
                cc: "reno".into(),
                ..Scenario::default()
            },
            "cc",
        ),
        (
            Scenario {
                load: 1.5,
                ..Scenario::default()
            },
            "load",
        ),
        (
            Scenario {
                pmax: 101,
                ..Scenario::default()
            },
            "pmax",
        ),
        (
            Scenario {
                lb: "random".into(),
                ..Scenario::default()
            },
            "lb",
        ),
    ];
    for (sc, field) in bad {
        let lb = sc.lb.clone();
        let e = sc.params(&lb).unwrap_err().to_string();
        assert!(e.starts_with(field), "{field}: {e}");
    }
    let e = Sim::new(
        Scenario {
            topology: "leafspine:2x2:70".into(),
            ..Scenario::default()
        }
        .params("hash")
        .unwrap(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.starts_with("topology"), "{e}");
    let e = Sim::new(
        Scenario {
            topology: "mesh:3".into(),
            ..Scenario::default()
        }
        .params("hash")
        .unwrap(),
    )
    .err()
    .unwrap()
    .to_string();
    assert!(e.starts_with("topology"), "{e}");
}

/// The testbed's incast with its Mlx hosts (`mlx_scaled` to 20 Mb/s, min
/// rate 200 kb/s): a sender held near the minimum rate gets an ACK every
/// 8 packets only every ~350 ms, past the 300 ms RTO, and times out
/// although nothing was lost; the responder's delayed ACK (the testbed
/// emulator's 1 ms) keeps its timer fed.
#[test]
fn delayed_ack_spares_a_slow_mlx_sender_spurious_timeouts() {
    let toml = include_str!("../scenarios/testbed_incast.toml");
    let mut sc: Scenario = toml::from_str(toml).unwrap();
    sc.cc = "mlx".into();
    sc.lb = "hash".into();
    let with = run_one(&sc, "hash", false).unwrap();
    sc.ack_delay = String::new();
    let without = run_one(&sc, "hash", false).unwrap();
    assert_eq!(with.flows_completed, 7);
    assert_eq!(without.flows_completed, 7);
    assert!(without.timeouts > 0, "the control run had no timeout");
    assert_eq!(with.timeouts, 0, "timeouts with the delayed ACK");
    assert_eq!(with.retx_payload, 0);
}

/// The serial run's reports as the engine gave them before partitions
/// existed (`tests/golden/`, written by that build: a web-search run with
/// flowlets and the 12:1 incast with PFC): one partition must stay that
/// run, report for report. A change that moves them on purpose (a model
/// fix, a new figure) rewrites these files (`DATAPLANE_SIM_BLESS=1 cargo
/// test -p dataplane-sim --test sim the_serial_run`) and says why.
#[test]
fn the_serial_run_is_the_golden_one() {
    for (sc, lb, file) in [
        (small_websearch(), "flowlet", "websearch_4x2_flowlet.json"),
        (incast(true, "none"), "hash", "incast_pfc_hash.json"),
    ] {
        let path = format!("{}/tests/golden/{file}", env!("CARGO_MANIFEST_DIR"));
        let want: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let got = stable(&run_one(&sc, lb, false).unwrap());
        if std::env::var("DATAPLANE_SIM_BLESS").as_deref() == Ok("1") {
            // rewrite on purpose (a model fix, or new figures), and say why
            std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap()).unwrap();
            continue;
        }
        assert!(got == want, "{file}: the serial run's report changed");
    }
}

/// The uplink heat map is bounded: a row an uplink and a cell a sample
/// while it fits (at most 1024 rows, 512 columns, 2^18 cells), else
/// consecutive uplinks and samples averaged, as its title says; the
/// 8192-GPU all-reduce's 16 384 uplinks by 3 100 samples (4.1 GB as a
/// cell each) make 1024 rows of 239 cells.
#[test]
fn the_uplink_heat_map_is_bounded() {
    use dataplane_sim::output::{heatmap_bins, uplink_heatmap};
    assert_eq!(heatmap_bins(4, 113), (1, 1));
    assert_eq!(heatmap_bins(1024, 256), (1, 1));
    assert_eq!(heatmap_bins(1024, 257), (1, 2));
    assert_eq!(heatmap_bins(8, 5000), (1, 10));
    assert_eq!(heatmap_bins(2048, 1000), (2, 4));
    assert_eq!(heatmap_bins(16384, 3100), (16, 13));
    let dir = std::env::temp_dir().join(format!("dataplane-sim-heatmap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // 8 uplinks, 2000 samples: 8 rows of 500 cells (4 samples each)
    let r = run_one(
        &Scenario {
            samples: 2000,
            ..small_websearch()
        },
        "hash",
        false,
    )
    .unwrap();
    assert_eq!((r.uplinks.len(), r.uplink_series.len()), (8, 2000));
    uplink_heatmap(&dir, "many", &r).unwrap();
    let svg = std::fs::read_to_string(dir.join("uplink_load_many.svg")).unwrap();
    assert_eq!(svg.matches("<rect").count(), 1 + 8 * 500);
    assert!(svg.contains("(many; a cell 4 samples, averaged)"));
    // 200 samples: a cell a sample, the title as before
    let r = run_one(&small_websearch(), "hash", false).unwrap();
    uplink_heatmap(&dir, "few", &r).unwrap();
    let svg = std::fs::read_to_string(dir.join("uplink_load_few.svg")).unwrap();
    assert_eq!(svg.matches("<rect").count(), 1 + 8 * r.uplink_series.len());
    assert!(svg.contains("Load of each uplink over time (few)"));
    let _ = std::fs::remove_dir_all(&dir);
}
