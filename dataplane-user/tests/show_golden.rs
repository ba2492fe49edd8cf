//! Golden files of every `dataplane show` layout: each renderer, given a
//! fixed snapshot, must print exactly `tests/golden/<name>.txt` (SONiC's
//! text) and `<name>.json`.
//!
//! Regenerate after an intended change of a layout, then review the diff:
//!
//!     UPDATE_GOLDEN=1 cargo test -p dataplane-user --test show_golden
//!
//! The tables' drawing itself is checked against Python's tabulate in
//! `show/tabulate.rs` (a module of this test binary).

#[path = "show/tabulate.rs"]
mod tabulate;

use std::collections::BTreeMap;
use std::path::PathBuf;

use dataplane_common::buffer::PortBuffer;
use dataplane_common::lossless::{
    BufferProfile, SharedPool, WredProfile, ECN_GREEN, TH_DYNAMIC, TH_STATIC,
};
use dataplane_user::show::{self, baseline::Baseline, buffer, ecn, pfc_counters, queue_counters};
use dataplane_user::show::{interfaces, pfc_history, pg_drop, watermark, Output};
use dataplane_user::telemetry::netdev::Netdev;
use dataplane_user::telemetry::stats::{KindMarks, PortStats, PortWatermarks, Snapshot};

/// Compares (or, with UPDATE_GOLDEN=1, writes) `tests/golden/<name>.txt`
/// and `.json`.
fn golden(name: &str, out: &Output) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let json = out.json_string();
    for (ext, got) in [("txt", &out.text), ("json", &json)] {
        let path = dir.join(format!("{name}.{ext}"));
        if std::env::var("UPDATE_GOLDEN").as_deref() == Ok("1") {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, got).unwrap();
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (UPDATE_GOLDEN=1 cargo test -p dataplane-user --test show_golden writes it)",
                path.display()
            )
        });
        assert!(
            *got == want,
            "{} differs from the renderer's output:\n--- want\n{want}\n--- got\n{got}\n\
             (if the change is intended: UPDATE_GOLDEN=1 cargo test -p dataplane-user --test show_golden)",
            path.display()
        );
    }
}

fn marks(base: u32) -> KindMarks {
    KindMarks {
        queue_shared: std::array::from_fn(|tc| if tc == 3 { base * 97 } else { tc as u32 }),
        pg_shared: std::array::from_fn(|tc| if tc == 3 { base * 41 } else { 0 }),
        pg_headroom: std::array::from_fn(|tc| if tc == 3 { base * 7 } else { 0 }),
    }
}

/// Three ports, listed out of natural order; Ethernet4 outside the buffer
/// model.
fn snapshot() -> Snapshot {
    let port = |name: &str, id: u16, k: u64, modelled: bool| {
        let mut c = BTreeMap::new();
        for i in 0..8u64 {
            c.insert(format!("rx_pfc[{i}]"), k * 1_000 * i + i);
            c.insert(format!("tx_pfc[{i}]"), k * 123_457 * i);
            c.insert(format!("tx_tc_pkts[{i}]"), k * 1_000_003 * (i + 1));
            c.insert(format!("tx_tc_bytes[{i}]"), k * 1_024_000_417 * (i + 1));
            c.insert(format!("wred_drop[{i}]"), k * i);
            c.insert(format!("drop_shared_full[{i}]"), k * 2 * i);
            c.insert(format!("drop_headroom[{i}]"), if i == 3 { k } else { 0 });
            c.insert(format!("wd_drop[{i}]"), if i == 4 { 5 * k } else { 0 });
            c.insert(format!("queue_drop_bytes[{i}]"), k * 1500 * (3 * i + 1));
            if modelled {
                c.insert(format!("rx_pause_ns[{i}]"), k * 1_234_567_891 * i + 999);
                c.insert(format!("rx_pause_transitions[{i}]"), k * 1_001 * i);
                // PG7 past a thousand: pg-drop prints no separators
                c.insert(format!("pg_drop[{i}]"), k * 7 * i + (i / 7) * 1_234_567);
                if i == 3 {
                    // the recent pause's start is left out: it prints in
                    // local time
                    c.insert(format!("rx_pause_recent_ns[{i}]"), k * 335_544_321);
                }
            }
        }
        PortStats {
            name: name.into(),
            ifindex: 10 + u32::from(id),
            port_id: id,
            speed_mbps: 100_000,
            tx_utilisation_pct: None,
            counters: c,
            watermarks: modelled.then(|| PortWatermarks {
                periodic: marks(k as u32),
                persistent: marks(3 * k as u32),
                user: marks(2 * k as u32),
            }),
        }
    };
    Snapshot {
        instance: "golden".into(),
        ports: vec![
            port("Ethernet8", 2, 3, true),
            port("Ethernet0", 0, 1, true),
            port("Ethernet4", 1, 2, false),
        ],
        groups: Vec::new(),
        unknown_port: 0,
        bad_port_id: 0,
        lb_evictions: 0,
        drop_events_posted: 0,
        drop_events_suppressed: 0,
        pfc_tx_path: "dataplane".into(),
        far_notes: Default::default(),
    }
}

/// A baseline half-way: every counter at half its value (Ethernet4 has
/// none: shown whole).
fn baseline(s: &Snapshot) -> Baseline {
    Baseline {
        time: "2026-11-26T22:00:00.123456".into(),
        dataplane: 1,
        ports: s
            .ports
            .iter()
            .filter(|p| p.name != "Ethernet4")
            .map(|p| {
                let c = p.counters.iter().map(|(k, v)| (k.clone(), v / 2)).collect();
                (p.name.clone(), c)
            })
            .collect(),
    }
}

#[test]
fn pfc_counters() {
    let s = snapshot();
    golden(
        "pfc_counters",
        &pfc_counters::render(&pfc_counters::rows(&s, None), None),
    );
    let b = baseline(&s);
    golden(
        "pfc_counters_since_clear",
        &pfc_counters::render(&pfc_counters::rows(&s, Some(&b)), Some(&b.time)),
    );
    // --history: Ethernet4 is outside the buffer model (N/A), the others
    // keep their paused time; since the baseline, Ethernet4 is whole
    golden(
        "pfc_counters_history",
        &pfc_history::render(&pfc_history::rows(&s, None), None),
    );
    golden(
        "pfc_counters_history_since_clear",
        &pfc_history::render(&pfc_history::rows(&s, Some(&b)), Some(&b.time)),
    );
    // Ethernet4 is outside the buffer model: N/A
    golden(
        "priority_group_drop_counters",
        &pg_drop::render(&pg_drop::rows(&s, None), None),
    );
    golden(
        "priority_group_drop_counters_since_clear",
        &pg_drop::render(&pg_drop::rows(&s, Some(&b)), Some(&b.time)),
    );
}

/// The kernel's side of the golden ports at `t` seconds: Ethernet0 up,
/// Ethernet8 admin down, Ethernet4 (ifindex 11) missing from the
/// namespace; the counters grow with `t`.
fn link(ifindex: u32, t: u64) -> Option<Netdev> {
    let k = u64::from(ifindex) - 9;
    (ifindex != 11).then(|| Netdev {
        admin_up: ifindex != 12,
        oper_up: ifindex == 10,
        rx_packets: k * 1_000_000 + t * 81_234 * k,
        tx_packets: k * 2_000_000 + t * 40_617 * k,
        rx_bytes: k * 1_000_000_000 + t * 1_250_000_000 * k,
        tx_bytes: k * 3_000_000_000 + t * 12_345 * k,
        rx_errors: 3 * k,
        tx_errors: k - 1,
        rx_dropped: 17 * k,
        tx_dropped: 2 * k,
        rx_missed_errors: k,
        rx_over_errors: 0,
        rx_fifo_errors: k - 1,
        tx_fifo_errors: 0,
    })
}

#[test]
fn interfaces_counters() {
    use interfaces::{Head, View};
    let mut s = snapshot();
    for p in &mut s.ports {
        let k = u64::from(p.port_id) + 1;
        for (name, v) in [
            ("drop_no_route", 5 * k),
            ("wd_rx_drop[3]", k),
            ("tx_xdp_xmit_err", 2 * k),
            ("trim[3]", 1000 * k),
            ("trim_sent[3]", 990 * k),
            ("trim_drop[3]", 10 * k),
            ("malformed.eth_truncated", 4),
        ] {
            p.counters.insert(name.into(), v);
        }
    }
    s.ports[0].speed_mbps = 0; // Ethernet8: no speed, no utilisation
                               // Ethernet0 drops malformed frames
    let first = interfaces::reading(&s, 1_000_000_000, |i| link(i, 0), |i| i == 10);
    let now = interfaces::reading(&s, 2_000_000_000, |i| link(i, 1), |i| i == 10);
    let plain = Head::default();
    let rows = interfaces::rows(&now, None, Some(&first));
    golden(
        "interfaces_counters",
        &interfaces::render(&rows, View::Std, &plain),
    );
    golden(
        "interfaces_counters_all",
        &interfaces::render(&rows, View::All, &plain),
    );
    golden(
        "interfaces_counters_errors",
        &interfaces::render(&rows, View::Errors, &plain),
    );
    golden(
        "interfaces_counters_rates",
        &interfaces::render(&rows, View::Rates, &plain),
    );
    golden(
        "interfaces_counters_trim",
        &interfaces::render(&rows, View::Trim, &plain),
    );
    // since a clear at the first reading (Ethernet4, without a link, is
    // N/A but for its trimming)
    let b = first.as_baseline();
    let cached = Head {
        cached: Some("2026-11-26T22:00:00.123456"),
        ..plain
    };
    let since = interfaces::rows(&now, Some(&b), Some(&first));
    golden(
        "interfaces_counters_since_clear",
        &interfaces::render(&since, View::Std, &cached),
    );
    let nonzero = Head {
        nonzero: true,
        ..cached
    };
    golden(
        "interfaces_counters_errors_nonzero_since_clear",
        &interfaces::render(&since, View::Errors, &nonzero),
    );
    // -p 1
    let period = Head {
        period: Some(1),
        ..plain
    };
    golden(
        "interfaces_counters_period",
        &interfaces::render(&since, View::Std, &period),
    );
}

/// queuestat's view: all ports, now fixed.
fn all_ports(cached: Option<&str>, nonzero: bool) -> queue_counters::View<'_> {
    queue_counters::View {
        now: "2026-11-27T08:30:00",
        cached,
        one_port: false,
        nonzero,
    }
}

#[test]
fn queue_counters() {
    let s = snapshot();
    let rows = queue_counters::rows(&s, None);
    golden(
        "queue_counters",
        &queue_counters::render(&rows, &all_ports(None, false)),
    );
    // -nz: Ethernet0's UC0 sent nothing... give it nothing at all
    let mut quiet = rows.clone();
    quiet[0].queues[0] = queue_counters::QueueRow::default();
    quiet[1].queues = [queue_counters::QueueRow::default(); 8];
    golden(
        "queue_counters_nonzero",
        &queue_counters::render(&quiet, &all_ports(None, true)),
    );
    let b = baseline(&s);
    let since = queue_counters::rows(&s, Some(&b));
    // Ethernet4 is not in the baseline: shown whole, as without a cache
    assert_eq!(
        since.iter().map(|p| p.cached).collect::<Vec<_>>(),
        [true, false, true]
    );
    golden(
        "queue_counters_since_clear",
        &queue_counters::render(&since, &all_ports(Some(&b.time), false)),
    );
    // queuestat -p PORT after a clear: two cached-time lines
    let one = queue_counters::View {
        one_port: true,
        ..all_ports(Some(&b.time), false)
    };
    golden(
        "queue_counters_port_since_clear",
        &queue_counters::render(&since[2..], &one),
    );
}

#[test]
fn watermarks() {
    let s = snapshot();
    for (name, _, k) in &watermark::WINDOWS {
        let file = name.replace([' ', '-'], "_");
        golden(&file, &watermark::render(&watermark::rows(&s, k), k));
    }
}

/// The pool watermarks: the one pool with a peak (user and persistent
/// windows differ), the headroom pool's N/A, and no pool (no port in the
/// buffer model).
#[test]
fn pool_watermarks() {
    for (name, _, t) in &watermark::POOLS {
        let file = name.replace([' ', '-'], "_");
        let v = match (t.headroom, t.persistent) {
            (true, _) => None,
            (false, false) => Some(1_234_567),
            (false, true) => Some(12_345_678),
        };
        golden(
            &file,
            &watermark::render_pools(&[(watermark::POOL_NAME.into(), v)], t),
        );
    }
    golden(
        "buffer_pool_watermark_none",
        &watermark::render_pools(&[], &watermark::POOLS[0].2),
    );
}

fn lossless_profile(xoff: u32) -> BufferProfile {
    BufferProfile {
        size: 0,
        xon: 18_432,
        xoff,
        xon_offset: 3072,
        static_th: 0,
        dynamic_th: 0,
        mode: TH_DYNAMIC,
        lossless: 1,
        _pad: 0,
    }
}

/// Two ports of different speeds: lossless PGs 3 and 4, lossy PGs with a
/// static threshold on one port.
fn tables() -> buffer::BufferTables {
    let lossy = BufferProfile {
        size: 0,
        xon: 0,
        xoff: 0,
        xon_offset: 0,
        static_th: 0,
        dynamic_th: 3,
        mode: TH_DYNAMIC,
        lossless: 0,
        _pad: 0,
    };
    let off = WredProfile {
        green_min_threshold: u32::MAX,
        green_max_threshold: u32::MAX,
        green_drop_probability: 0,
        ecn: 0,
        wred_green_enable: 0,
        _pad: 0,
    };
    let custom = WredProfile {
        green_min_threshold: 150_000,
        green_max_threshold: 1_500_000,
        green_drop_probability: 20,
        ecn: ECN_GREEN,
        wred_green_enable: 0,
        _pad: 0,
    };
    let port = |speed: u32, xoff: u32, lossy: BufferProfile, wred: WredProfile| {
        let mut pb = PortBuffer {
            pg_profile: [lossy; 8],
            wred: [off; 8],
            speed_mbps: speed,
            enabled: 1,
            storm: [0; 8],
        };
        for tc in [3, 4] {
            pb.pg_profile[tc] = lossless_profile(xoff);
            pb.wred[tc] = wred;
        }
        pb
    };
    let lossy_static = BufferProfile {
        mode: TH_STATIC,
        static_th: 262_144,
        ..lossy
    };
    buffer::BufferTables {
        ports: vec![
            (
                "Ethernet0".into(),
                port(100_000, 56_320, lossy, WredProfile::AZURE_LOSSLESS),
            ),
            (
                "Ethernet4".into(),
                port(25_000, 30_720, lossy_static, custom),
            ),
        ],
        pool: SharedPool {
            size: 16_777_216,
            used: 4096,
        },
    }
}

#[test]
fn ecn_and_buffer_configuration() {
    let t = tables();
    golden("ecn", &ecn::render(&t, &|_| None));
    golden(
        "ecn_named_by_config",
        &ecn::render(&t, &|w| {
            (w.green_min_threshold == 150_000).then(|| "ROCE_NVIDIA".to_string())
        }),
    );
    golden("buffer_configuration", &buffer::render(&t));
    let none = buffer::BufferTables {
        ports: Vec::new(),
        pool: SharedPool { size: 0, used: 0 },
    };
    golden("buffer_configuration_none", &buffer::render(&none));
    golden("ecn_none", &ecn::render(&none, &|_| None));
}

fn msg_of<T>(r: anyhow::Result<T>) -> String {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => format!("{e}"),
    }
}

#[test]
fn unknown_targets_list_the_valid_ones() {
    let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let e = show::find(&words("pfc countres"), false)
        .err()
        .expect("unknown target");
    let msg = format!("{e}");
    assert!(
        msg.contains("unknown show target \"pfc countres\""),
        "{msg}"
    );
    for t in show::all() {
        assert!(msg.contains(t.name), "{msg} lacks {}", t.name);
    }
    // ecn has nothing to clear: not a clear target, and not listed as one
    let e = show::find(&words("ecn"), true)
        .err()
        .expect("not clearable");
    let msg = format!("{e}");
    assert!(msg.contains("unknown clear target") && msg.contains("clear pfc counters"));
    assert!(!msg.contains("clear ecn"), "{msg}");
    assert_eq!(
        show::find(&words("Queue Watermark Unicast"), true)
            .unwrap()
            .0
            .name,
        "queue watermark unicast"
    );
    // queue counters takes a port (case kept); the others nothing more
    let w = words("queue counters Ethernet4");
    let (t, rest) = show::find(&w, false).unwrap();
    assert_eq!((t.name, rest), ("queue counters", &words("Ethernet4")[..]));
    assert!(
        msg_of(show::find(&words("pfc counters Ethernet4"), false)).contains("unknown show target")
    );
    assert!(msg_of(show::find(&words("queue counters Ethernet4"), true))
        .contains("unknown clear target"));
    assert!(msg_of(show::find(&words("queue"), false)).contains("show queue counters [PORT]"));
    // names are unique
    let mut names: Vec<_> = show::all().map(|t| t.name).collect();
    let n = names.len();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), n);
}

#[test]
fn target_flags_are_refused_elsewhere() {
    let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
    let mut ctx = show::Ctx::new("no-such-instance", None);
    ctx.nonzero = true;
    let e = msg_of(show::show(&ctx, &words("pfc counters"), false));
    assert_eq!(
        e,
        "--nonzero is for show queue counters or show interfaces counters*, not show pfc counters"
    );
    // ... and for the interfaces counters' variants
    ctx.period = Some(1);
    let e = msg_of(show::show(
        &ctx,
        &words("interfaces counters errors"),
        false,
    ));
    assert!(e.contains("no running data plane"), "{e}");
    ctx.nonzero = false;
    let e = msg_of(show::show(&ctx, &words("queue counters"), false));
    assert_eq!(
        e,
        "--period is for show interfaces counters*, not show queue counters"
    );
    ctx.period = None;
    ctx.printall = true;
    let e = msg_of(show::show(&ctx, &words("interfaces counters rates"), false));
    assert_eq!(
        e,
        "--printall is for show interfaces counters, not show interfaces counters rates"
    );
    ctx.printall = false;
    ctx.nonzero = false;
    ctx.history = true;
    let e = msg_of(show::show(&ctx, &words("queue counters"), false));
    assert_eq!(
        e,
        "--history is for show pfc counters, not show queue counters"
    );
}
