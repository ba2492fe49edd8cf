//! The namespace leaf-spine fabric (2 spines, 2 leaves, 4 hosts per leaf,
//! one `dataplane` controller per switch) with RoCEv2 host emulators:
//! properties that must hold, not exact counts.
//!
//! * incast 7:1 with PFC on: zero lossless drops and zero PSN gaps, PFC
//!   frames sent hop by hop; with PFC off: drops and retransmissions;
//! * CNPs follow CE marks (none without ECN), the DCQCN rate falls after
//!   CNPs;
//! * low-entropy elephants: bandwidth mode's uplink imbalance below hash
//!   mode's (hash seed chosen, with the data plane's own hash and group
//!   tables, so that hash mode collides);
//! * a ring all-reduce completes and reports its job completion time;
//! * nothing is left behind after teardown (namespaces, pins);
//! * bad input (zero spines, too many hosts, an unknown host, not root) is
//!   refused before anything is created.
//!
//! Needs root; runs with `--test-threads=1` (as `cargo xtask test` does).

mod common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use testbed::fabric::Fabric;
use testbed::fabricrun::{check_configs, polarising_seed};
use testbed::host::{ack_frame, data_frame, HostCfg, SendJob, SendQp, AETH_ACK, AETH_NAK_SEQ};
use testbed::scenario::{run, RunOpts, RunResult, Scenario};
use testbed::topo::{Shape, Topology};

static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(testbed::dataplane_bin);
const FABRIC_BIN: &str = env!("CARGO_BIN_EXE_dataplane-fabric");

fn our_namespaces() -> Vec<String> {
    let out = Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    let me = format!("-{}", std::process::id());
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with("dpt-") && n.ends_with(&me))
        .map(String::from)
        .collect()
}

fn pins_of(fabric_instances: &[String]) -> Vec<String> {
    fabric_instances
        .iter()
        .filter(|i| Path::new("/sys/fs/bpf/dataplane").join(i).exists())
        .cloned()
        .collect()
}

/// Builds, runs each scenario, tears down, and checks nothing is left.
fn with_fabric(
    topo: Topology,
    tag: &str,
    f: impl FnOnce(&mut Fabric) -> Vec<RunResult>,
) -> Vec<RunResult> {
    check_configs(&topo).expect("generated configs are valid");
    let mut fabric = Fabric::build(topo, Path::new(BIN.as_str()), tag).expect("fabric");
    let instances: Vec<String> = fabric.switches.iter().map(|s| s.instance.clone()).collect();
    assert_eq!(
        our_namespaces().len(),
        12,
        "4 switches + 8 hosts: {:?}",
        our_namespaces()
    );
    assert_eq!(
        pins_of(&instances).len(),
        4,
        "every switch pinned its data plane"
    );
    let out = f(&mut fabric);
    drop(fabric);
    assert!(
        our_namespaces().is_empty(),
        "namespaces left behind: {:?}",
        our_namespaces()
    );
    assert!(
        pins_of(&instances).is_empty(),
        "pins left behind: {:?}",
        pins_of(&instances)
    );
    out
}

fn quick() -> RunOpts {
    RunOpts {
        timeout: Duration::from_secs(40),
        progress: true,
        ..RunOpts::default()
    }
}

#[test]
fn emulator_frames_decode_in_scapy() {
    let cfg = HostCfg::new(
        "h0",
        [2, 0, 3, 0, 0, 1],
        [2, 0, 1, 0, 0, 1],
        [198, 18, 1, 1],
        20_000_000,
    );
    let job = SendJob {
        qp: 0x123,
        dst_ip: [198, 18, 2, 1],
        udp_sport: 0xc123,
        messages: vec![2500, 300],
        gate_qp: None,
    };
    let st = SendQp::new(&job.messages, cfg.nic.mtu_payload);
    let mut frames: Vec<Vec<u8>> = (0..st.total)
        .map(|psn| data_frame(&cfg, &job, &st, psn, false))
        .collect();
    let l2 = dataplane_common::build::L2::new(cfg.nic.gw_mac, cfg.nic.mac);
    frames.push(ack_frame(
        &l2,
        cfg.nic.ip,
        job.dst_ip,
        job.udp_sport,
        job.qp,
        3,
        AETH_ACK,
        2,
    ));
    frames.push(ack_frame(
        &l2,
        cfg.nic.ip,
        job.dst_ip,
        job.udp_sport,
        job.qp,
        1,
        AETH_NAK_SEQ,
        0,
    ));
    let cnp_ip =
        dataplane_common::build::Ip::v4(cfg.nic.ip, job.dst_ip).dscp(testbed::topo::CNP_DSCP);
    frames.push(dataplane_common::build::cnp_frame(
        &l2,
        &cnp_ip,
        job.udp_sport,
        job.qp,
    ));
    let dir = std::env::temp_dir().join(format!("dpt-roce-host-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("host.pcap");
    common::write_pcap(&pcap, &frames).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/decode_roce_host.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&pcap)
        .output()
        .expect("python3 (cargo xtask setup installs scapy)");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "scapy decoder failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let v = v.as_array().unwrap();
    assert_eq!(v.len(), 7);
    // message 0: 2500 bytes = FIRST (RETH) + MIDDLE + LAST; message 1: ONLY
    let ops: Vec<u64> = v[..4]
        .iter()
        .map(|d| d["opcode"].as_u64().unwrap())
        .collect();
    assert_eq!(ops, vec![0x06, 0x07, 0x08, 0x0a]);
    for (i, d) in v[..4].iter().enumerate() {
        assert_eq!(d["psn"], i as u64, "{d}");
        assert_eq!(d["dqpn"], 0x123);
        assert_eq!(d["dscp"], 3);
        assert_eq!(d["ecn"], 2, "ECT(0)");
        assert_eq!(d["dport"], 4791);
        assert_eq!(d["icrc_ok"], true, "scapy recomputes the same ICRC: {d}");
    }
    assert_eq!(v[0]["reth_len"], 2500);
    assert_eq!(v[3]["reth_len"], 300);
    assert_eq!(
        (v[2]["ackreq"].as_u64(), v[3]["ackreq"].as_u64()),
        (Some(1), Some(1)),
        "the last packet of a message asks for an ACK"
    );
    assert_eq!(
        (
            v[4]["opcode"].as_u64(),
            v[4]["syndrome"].as_u64(),
            v[4]["msn"].as_u64(),
            v[4]["psn"].as_u64()
        ),
        (Some(0x11), Some(0x1f), Some(2), Some(3))
    );
    assert_eq!(
        (v[5]["syndrome"].as_u64(), v[5]["psn"].as_u64()),
        (Some(0x60), Some(1)),
        "NAK: PSN sequence error at the expected PSN"
    );
    assert!(
        v[4]["icrc_ok"] == true && v[5]["icrc_ok"] == true,
        "ACK/NAK ICRC"
    );
    let cnp = &v.last().unwrap();
    assert!(
        cnp["cnp"].as_bool().unwrap()
            && cnp["becn"] == 1
            && cnp["opcode"] == 0x81
            && cnp["dscp"] == 48,
        "{cnp}"
    );
    assert_eq!(cnp["icrc_ok"], true);
}

#[test]
fn bad_input_is_refused_before_anything_is_created() {
    let before = our_namespaces().len();
    let cases: &[(&[&str], &str)] = &[
        (
            &["--spines", "0"],
            "spines: expected at least 1 spine, got 0",
        ),
        (
            &["--hosts-per-leaf", "15"],
            "hosts_per_leaf: 15 hosts + 2 uplinks = 17 ports on each leaf",
        ),
        (
            &["--leaves", "17"],
            "leaves: 17 leaves need 17 ports on every spine",
        ),
        (
            &["--scenario", "incast", "--receiver", "h99"],
            "unknown host \"h99\": this fabric has hosts h0 to h7",
        ),
        (
            &["--scenario", "incast", "--senders", "h1,h42"],
            "unknown host \"h42\"",
        ),
        (
            &["--lb-mode", "random"],
            "lb_mode: expected one of hash, flowlet, bandwidth, spray, place",
        ),
        (&["--kmin", "100000"], "kmin: expected kmin <= kmax"),
    ];
    for (args, want) in cases {
        let out = Command::new(FABRIC_BIN)
            .arg("--dataplane")
            .arg(BIN.as_str())
            .args(*args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} was accepted");
        assert!(
            err.contains(want),
            "{args:?}: expected an error with {want:?}, got: {err}"
        );
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("building the fabric"),
            "{args:?}: started building"
        );
    }
    // not root: refused before any namespace exists (setpriv drops to nobody)
    let out = Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            FABRIC_BIN,
            "--dataplane",
            BIN.as_str(),
        ])
        .output()
        .expect("setpriv (util-linux)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("not root"),
        "as nobody: {err}"
    );
    assert_eq!(our_namespaces().len(), before);
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("dpt-fab"),
        "a refused run left a namespace"
    );
}

#[test]
fn incast_is_lossless_with_pfc_and_drops_without() {
    let sc = Scenario::Incast {
        receiver: "h0".into(),
        senders: None,
        bytes: 192 * 1024,
    };
    let on = with_fabric(Topology::default(), "tpon", |f| {
        vec![run(f, &sc, &quick()).expect("incast with PFC")]
    })
    .remove(0);
    print!("{}", on.render());
    assert!(on.complete, "the incast did not complete");
    assert_eq!(
        on.lossless_drops, 0,
        "lossless drops with PFC on: {:?}",
        on.drops
    );
    // loss first: every data frame sent (retransmissions included) arrived
    let (sent, received) = on.data_frames();
    assert_eq!(
        sent, received,
        "data frames the senders sent and the receiver got with PFC on (a frame was lost)"
    );
    // then order: with nothing lost, a PSN gap is a frame that arrived
    // after a later one (a flowlet moved while a pause held the older
    // frames on the old path; seen on 6.1 under TCG, where pauses last
    // seconds)
    assert_eq!(
        on.psn_gaps(),
        0,
        "PSN gaps with PFC on, every frame delivered ({sent} sent, {received} received): frames arrived out of order ({} originals arrived after a later PSN)",
        on.late()
    );
    assert_eq!(on.redirect_drops, 0);
    assert!(on.pfc_frames() > 0, "7:1 incast without a PFC frame");
    let leaf0_to_spine = on
        .pfc_ports
        .iter()
        .any(|p| p.switch == "leaf0" && p.port.starts_with('s') && p.tx > 0);
    let spine_to_leaf1 = on
        .pfc_ports
        .iter()
        .any(|p| p.switch.starts_with("spine") && p.port == "l1" && p.tx > 0);
    assert!(
        leaf0_to_spine && spine_to_leaf1,
        "PFC did not travel hop by hop (leaf0 -> spines -> leaf1): {:?}",
        on.pfc_ports
    );
    assert!(
        on.hosts[4..].iter().all(|h| h.paused_ns > 0),
        "the remote senders were never paused"
    );
    // ECN: CE marks answered by CNPs (at most one per QP per interval),
    // and the reaction point cut its rate after the first CNP
    assert!(
        on.ecn_marked > 0 && on.ce_received() > 0,
        "no CE marks in a 7:1 incast"
    );
    assert!(
        on.cnp_sent() > 0 && on.cnp_sent() <= on.ce_received(),
        "CNPs {} for {} CE frames",
        on.cnp_sent(),
        on.ce_received()
    );
    let line = f64::from(Topology::default().host_mbps);
    let notified = on.hosts.iter().filter(|h| h.cnps_rx > 0).count();
    assert!(notified > 0, "CNPs were sent but no sender received one");
    for h in on.hosts.iter().filter(|h| h.cnps_rx > 0) {
        let first = h.first_cnp_ms.unwrap();
        let after = h
            .rate_series
            .iter()
            .filter(|r| r.0 > first)
            .map(|r| r.2)
            .fold(f64::MAX, f64::min);
        assert!(
            after < 0.75 * line,
            "{}: DCQCN rate {after:.1} Mb/s after its first CNP, line {line}",
            h.name
        );
    }
    assert!(on.job_completion_ms.is_some());

    let off_topo = Topology {
        pfc: false,
        ..Topology::default()
    };
    let off = with_fabric(off_topo, "tpoff", |f| {
        vec![run(f, &sc, &quick()).expect("incast without PFC")]
    })
    .remove(0);
    print!("{}", off.render());
    assert!(
        off.lossless_drops > 0,
        "no drops in a 7:1 incast with PFC off: the buffer model never overflowed"
    );
    assert!(
        off.retransmitted() > 0 && off.psn_gaps() > 0,
        "drops without go-back-N retransmissions"
    );
    assert_eq!(off.pfc_frames(), 0, "PFC frames with PFC off");
    assert!(off.complete, "go-back-N recovers every loss");
    let (jct_on, jct_off) = (
        on.job_completion_ms.unwrap(),
        off.job_completion_ms.unwrap(),
    );
    eprintln!("job completion: PFC on {jct_on:.0} ms, PFC off {jct_off:.0} ms");
    // what README states: without PFC the same incast takes longer
    // (drops, go-back-N); by how much varies with the machine's load
    assert!(
        jct_off > jct_on,
        "the incast without PFC ({jct_off:.0} ms) was not slower than with it ({jct_on:.0} ms)"
    );

    let no_ecn = Topology {
        ecn: false,
        ..Topology::default()
    };
    let quiet = with_fabric(no_ecn, "tnoecn", |f| {
        vec![run(f, &sc, &quick()).expect("incast without ECN")]
    })
    .remove(0);
    assert_eq!(
        (quiet.ecn_marked, quiet.ce_received(), quiet.cnp_sent()),
        (0, 0, 0),
        "CE or CNPs with ECN off"
    );
    assert_eq!(quiet.lossless_drops, 0, "PFC alone keeps it lossless");
}

#[test]
fn bandwidth_mode_balances_low_entropy_elephants_hash_mode_does_not() {
    let sc = Scenario::Elephants { bytes: 512 * 1024 };
    let mut topo = Topology::default();
    let (seed, placement) = polarising_seed(&topo, &sc).unwrap();
    eprintln!("hash seed {seed}: hash mode puts the flows per leaf uplink as {placement:?}");
    assert!(
        placement.iter().all(|c| c.iter().max() == Some(&4)),
        "a seed where hash mode stacks each leaf's 4 flows: {placement:?}"
    );
    topo.hash_seed = seed;
    topo.lb_mode = "hash".into();
    let runs = with_fabric(topo, "tlb", |f| {
        let hash = run(f, &sc, &quick()).expect("hash run");
        f.topo.lb_mode = "bandwidth".into();
        f.reload().expect("reload to bandwidth mode");
        let bw = run(f, &sc, &quick()).expect("bandwidth run");
        vec![hash, bw]
    });
    for r in &runs {
        print!("{}", r.render());
        assert!(r.complete);
        assert_eq!(r.lossless_drops, 0);
    }
    let (h, b) = (
        runs[0].uplink_imbalance().unwrap(),
        runs[1].uplink_imbalance().unwrap(),
    );
    assert!(
        h > 1.8,
        "hash mode should pile each leaf's flows on one uplink: max/mean {h:.3}"
    );
    assert!(
        b < 1.2 && b < h,
        "bandwidth mode max/mean {b:.3} vs hash {h:.3}"
    );
    assert!(
        runs[1].job_completion_ms < runs[0].job_completion_ms,
        "spreading over both uplinks finishes sooner"
    );
}

#[test]
fn ring_all_reduce_completes_on_a_star_and_a_leaf_spine() {
    let sc = Scenario::AllReduce { bytes: 256 * 1024 };
    let r = with_fabric(Topology::default(), "tar", |f| {
        vec![run(f, &sc, &quick()).expect("all-reduce")]
    })
    .remove(0);
    print!("{}", r.render());
    assert!(r.complete && r.job_completion_ms.is_some());
    // every host sent 2(N-1) chunks of bytes/N and received as many
    let chunk = 256 * 1024 / 8;
    for h in &r.hosts {
        assert_eq!(h.acked_payload_bytes, 14 * chunk, "{}", h.name);
        assert_eq!(h.rx_payload_bytes, 14 * chunk, "{}", h.name);
    }
    assert_eq!(r.lossless_drops, 0);
    let v = r.to_json();
    for k in [
        "lossless_drops",
        "ecn_marked",
        "cnp_sent",
        "pfc_frames",
        "job_completion_ms",
        "uplink_utilisation_pct",
        "uplink_imbalance",
    ] {
        assert!(v.get(k).is_some(), "report lacks {k}");
    }
    // a star of 4 (no spines): the same scenario, no uplinks
    let star = Topology {
        shape: Shape::Star { hosts: 4 },
        ..Topology::default()
    };
    check_configs(&star).unwrap();
    let fabric = Fabric::build(star, Path::new(BIN.as_str()), "tstar").expect("star");
    let r = run(&fabric, &sc, &quick()).expect("all-reduce on a star");
    drop(fabric);
    assert!(r.complete && r.uplinks.is_empty() && r.uplink_imbalance().is_none());
    assert!(our_namespaces().is_empty());
}

/// Starts `dataplane-fabric` on a long all-reduce and returns once its
/// scenario is running (a progress line), with its pid.
fn start_long_run(out: &Path) -> (std::process::Child, u32) {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(FABRIC_BIN)
        .args([
            "--dataplane",
            BIN.as_str(),
            "--scenario",
            "all-reduce",
            "--bytes",
            "67108864",
            "--timeout",
            "120",
            "--out",
        ])
        .arg(out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let err = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
            if line.contains("acknowledged") {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("the fabric run started its scenario");
    (child, pid)
}

fn left_by(pid: u32) -> (Vec<String>, Vec<String>) {
    let out = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let tail = format!("-{pid}");
    let ns = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.ends_with(&tail))
        .map(String::from)
        .collect();
    let pins = std::fs::read_dir("/sys/fs/bpf/dataplane")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.ends_with(&tail))
                .collect()
        })
        .unwrap_or_default();
    (ns, pins)
}

#[test]
fn ctrl_c_tears_the_fabric_down() {
    let out = std::env::temp_dir().join(format!("dpt-fabric-int-{}", std::process::id()));
    let (mut child, pid) = start_long_run(&out);
    let (ns, pins) = left_by(pid);
    assert_eq!(
        (ns.len(), pins.len()),
        (12, 4),
        "while running: {ns:?} {pins:?}"
    );
    // SAFETY: signalling our own child.
    unsafe { libc::kill(pid as i32, libc::SIGINT) };
    let t = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no exit 30 s after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = std::fs::remove_dir_all(&out);
    assert!(!status.success(), "an interrupted run reports failure");
    let (ns, pins) = left_by(pid);
    assert!(
        ns.is_empty() && pins.is_empty(),
        "left after Ctrl-C: {ns:?} {pins:?}"
    );
}

#[test]
fn a_killed_run_is_cleaned_up_by_the_next() {
    let out = std::env::temp_dir().join(format!("dpt-fabric-kill-{}", std::process::id()));
    let (mut child, pid) = start_long_run(&out);
    child.kill().unwrap();
    child.wait().unwrap();
    let _ = std::fs::remove_dir_all(&out);
    std::thread::sleep(Duration::from_millis(500));
    let (ns, pins) = left_by(pid);
    assert_eq!(
        ns.len(),
        12,
        "SIGKILL runs no destructor: the namespaces stay until the next run"
    );
    assert_eq!(pins.len(), 4, "...and the pinned data planes");
    let star = Topology {
        shape: Shape::Star { hosts: 2 },
        ..Topology::default()
    };
    let fabric = Fabric::build(star, Path::new(BIN.as_str()), "tclean").expect("the next run");
    let (ns, pins) = left_by(pid);
    drop(fabric);
    assert!(
        ns.is_empty() && pins.is_empty(),
        "the next run left the killed run's {ns:?} {pins:?}"
    );
    assert!(our_namespaces().is_empty());
}
