//! The v1model program's lossless stage on bmv2 simple_switch, with the
//! entries `dataplane p4 entries --target bmv2` generates from
//! `p4/tests/bmv2/lossless.toml`: a burst of RoCEv2 frames into an egress
//! queue that drains at 50 frames/s must be ECN-marked once the queue holds
//! more than Kmax (bmv2 counts frames: thresholds / 1000 bytes), never
//! below Kmin; and the emulated PFC must send an 802.1Qbb XOFF for
//! priority 3 out of the ingress port when the ingress PG crosses its
//! threshold, then an XON when it drains. The PFC frames are decoded by
//! scapy.
//!
//! Skips (passes, saying so: `skips::skipped`) when p4c, simple_switch or
//! simple_switch_CLI is not on PATH.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use dataplane_common::build::{self, Ip, L2};
use dataplane_common::wire::bth::{Bth, OP_WRITE_MIDDLE};
use dataplane_config::Config;
use dataplane_p4::{entries_with, Options, Target};

mod skips;

const FRAMES: usize = 40;
const RATE_PPS: usize = 50;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

fn on_path(t: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {t}")])
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// A configuration file, validated.
fn plan_of(path: &Path) -> dataplane_config::Plan {
    Config::load(path)
        .and_then(|c| c.validate(&path.display().to_string()))
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A fresh work directory with the v1model program compiled by p4c into
/// it: dataplane.json and its p4info (p4info.json).
fn compile_v1model(tag: &str) -> PathBuf {
    let work = std::env::temp_dir().join(format!("dpt-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let out = Command::new("p4c")
        .args(["--target", "bmv2", "--arch", "v1model", "-o"])
        .arg(&work)
        .arg("--p4runtime-files")
        .arg(work.join("p4info.json"))
        .args(["--p4runtime-format", "json"])
        .arg(root().join("p4/v1model/dataplane.p4"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "p4c: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    work
}

/// Frames of a pcap file (our writer's format and bmv2's).
fn read_pcap(path: &Path) -> Vec<Vec<u8>> {
    let Ok(b) = std::fs::read(path) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut o = 24;
    while o + 16 <= b.len() {
        let len = u32::from_le_bytes(b[o + 8..o + 12].try_into().unwrap()) as usize;
        o += 16;
        if o + len > b.len() {
            break;
        }
        out.push(b[o..o + len].to_vec());
        o += len;
    }
    out
}

#[test]
fn ecn_marking_and_emulated_pfc_on_simple_switch() {
    let missing: Vec<&str> = ["p4c", "simple_switch", "simple_switch_CLI"]
        .into_iter()
        .filter(|t| !on_path(t))
        .collect();
    if !missing.is_empty() {
        skips::skipped(
            "ecn_marking_and_emulated_pfc_on_simple_switch",
            &format!(
                "{} not on PATH (p4lang p4c and bmv2; see p4/README.md)",
                missing.join(", ")
            ),
        );
        return;
    }
    let work = compile_v1model("bmv2");

    let plan = plan_of(&root().join("p4/tests/bmv2/lossless.toml"));
    let e = entries_with(
        &plan,
        Target::Bmv2,
        &Options {
            bmv2_packet_bytes: 1000,
            ..Options::default()
        },
    )
    .unwrap();

    let l2 = L2::new([2, 0, 0, 0, 0x0e, 0], [2, 0, 0, 0, 0x0f, 0]);
    let ip = Ip::v4([198, 18, 0, 1], [198, 18, 1, 1]).dscp(3).ecn(2);
    let frames: Vec<Vec<u8>> = (0..FRAMES as u32)
        .map(|psn| {
            build::rocev2_frame(
                &l2,
                &ip,
                49152,
                &Bth {
                    opcode: OP_WRITE_MIDDLE,
                    pkey: 0xffff,
                    dest_qp: 0x100,
                    psn,
                    ..Bth::default()
                },
                None,
                &[0u8; 940],
            )
        })
        .collect();
    write_pcap(&work.join("p0_in.pcap"), &frames).unwrap();
    write_pcap(&work.join("p1_in.pcap"), &[]).unwrap();

    let thrift = (9100 + std::process::id() % 800).to_string();
    let notif = format!("ipc://{}/notifications.ipc", work.display());
    let mut sw = Command::new("simple_switch")
        .args([
            "--use-files",
            "3",
            "-i",
            "0@p0",
            "-i",
            "1@p1",
            "--thrift-port",
            &thrift,
            "--notifications-addr",
            &notif,
        ])
        .arg(work.join("dataplane.json"))
        .args(["--", "--priority-queues", "8"])
        .current_dir(&work)
        .stdout(std::fs::File::create(work.join("switch.log")).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    // the generated entries, then a slow egress port 1 (frames per second)
    let mut cli = Command::new("simple_switch_CLI")
        .args(["--thrift-port", &thrift])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        let mut stdin = cli.stdin.take().unwrap();
        stdin.write_all(e.cli.as_bytes()).unwrap();
        writeln!(stdin, "set_queue_rate {RATE_PPS} 1").unwrap();
    }
    let cli_out = cli.wait_with_output().unwrap();
    let cli_text = String::from_utf8_lossy(&cli_out.stdout);
    // the switch reads its input files 3 s after it started
    std::thread::sleep(Duration::from_secs_f64(
        2.0 + FRAMES as f64 / RATE_PPS as f64 + 1.5,
    ));
    // the program's own counters, read as `dataplane p4 stats` reads them
    let counters = dataplane_p4::stats::read_bmv2(thrift.parse().unwrap(), &plan);
    let _ = sw.kill();
    let _ = sw.wait();
    assert!(
        !cli_text.to_lowercase().contains("error") && !cli_text.contains("Invalid"),
        "the generated entries did not load: {cli_text}"
    );

    let tx = read_pcap(&work.join("p1_out.pcap"));
    let back = read_pcap(&work.join("p0_out.pcap"));
    let ecn: Vec<u8> = tx.iter().map(|f| f[15] & 3).collect();
    eprintln!(
        "port 1: {} frames, ECN {:?}; port 0: {} frames back",
        tx.len(),
        ecn,
        back.len()
    );
    assert!(
        tx.len() >= 20,
        "only {} of {FRAMES} frames left port 1",
        tx.len()
    );
    // the PSN in the BTH orders them: frame k saw about k frames ahead of it
    let psn = |f: &Vec<u8>| {
        u32::from_be_bytes([
            0,
            f[14 + 20 + 8 + 9],
            f[14 + 20 + 8 + 10],
            f[14 + 20 + 8 + 11],
        ])
    };
    for f in &tx {
        let p = psn(f) as usize;
        if p < 2 {
            assert_eq!(
                f[15] & 3,
                2,
                "frame {p} found fewer than Kmin (2) frames queued but was marked"
            );
        }
        if p >= 10 {
            assert_eq!(
                f[15] & 3,
                3,
                "frame {p} found more than Kmax (6) frames queued but was not marked CE"
            );
        }
    }
    // the emulated PFC: XOFF then XON for priority 3, to the ingress port,
    // decoded by scapy
    write_pcap(&work.join("pfc.pcap"), &back).unwrap();
    let dec = Command::new("python3")
        .arg(root().join("testbed/tests/decode_scapy.py"))
        .arg(work.join("pfc.pcap"))
        .output()
        .unwrap();
    assert!(
        dec.status.success(),
        "scapy: {}",
        String::from_utf8_lossy(&dec.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&dec.stdout).unwrap();
    let pfc: Vec<&serde_json::Value> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d.get("pfc_class_enable").is_some())
        .collect();
    eprintln!("PFC frames from bmv2 (scapy): {pfc:?}");
    let xoff = pfc.iter().position(|d| {
        d["pfc_class_enable"].as_u64().unwrap() & 0x08 != 0
            && d["pfc_times"][3].as_u64().unwrap() > 0
    });
    let xon = pfc.iter().rposition(|d| {
        d["pfc_class_enable"].as_u64().unwrap() & 0x08 != 0 && d["pfc_times"][3] == 0
    });
    assert!(xoff.is_some(), "no XOFF for priority 3 on the ingress port");
    assert!(xon.is_some() && xon > xoff, "no XON after the XOFF");
    assert!(
        pfc.iter().all(|d| d["dst"] == "01:80:c2:00:00:01"),
        "PFC to the MAC control address"
    );
    // the counters agree with what the wire showed
    let c = counters.expect("reading the counters as `dataplane p4 stats` does");
    eprintln!("{}", dataplane_p4::stats::render(&c));
    assert_eq!(
        c[0].rx_packets[3], FRAMES as u64,
        "received on port 0, class 3"
    );
    assert_eq!(
        c[1].tx_packets[3],
        tx.len() as u64,
        "sent on port 1, class 3"
    );
    assert_eq!(
        c[1].ecn_marked[3],
        ecn.iter().filter(|&&e| e == 3).count() as u64,
        "ECN-marked on port 1, class 3"
    );
    assert_eq!(
        c[0].tx_pfc[3],
        pfc.len() as u64,
        "PFC frames sent on port 0"
    );
    let _ = std::fs::remove_dir_all(&work);
}

/// Whether the Python P4Runtime client libraries import.
fn p4runtime_python() -> bool {
    Command::new("python3")
        .args([
            "-c",
            "import grpc; from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc; from p4.config.v1 import p4info_pb2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// The P4Runtime entries `dataplane p4 entries --target bmv2` writes for
/// the golden, lossless and corpus configurations, sent to simple_switch_grpc after the
/// program's pipeline (p4c's p4info + bmv2 JSON): the switch takes every
/// update, and reading back gives exactly the written entries, actions,
/// default actions and clone sessions (`p4/tests/p4rt_load.py`).
///
/// Skips (passes, saying so) without p4c, simple_switch_grpc or the Python
/// `p4runtime` and `grpcio` packages.
#[test]
fn p4runtime_entries_load_into_simple_switch_grpc() {
    let mut missing: Vec<&str> = ["p4c", "simple_switch_grpc"]
        .into_iter()
        .filter(|t| !on_path(t))
        .collect();
    if !p4runtime_python() {
        missing.push("python3 packages p4runtime and grpcio");
    }
    if !missing.is_empty() {
        skips::skipped(
            "p4runtime_entries_load_into_simple_switch_grpc",
            &format!(
                "{} not available (p4lang bmv2 built with PI; see p4/README.md)",
                missing.join(", ")
            ),
        );
        return;
    }
    let work = compile_v1model("p4rt");
    let p4info = work.join("p4info.json");
    for rel in [
        "p4/tests/small.toml",
        "p4/tests/leaf.toml",
        "p4/tests/bmv2/lossless.toml",
        "p4/corpus/configs/classify.toml",
        "p4/corpus/configs/route.toml",
    ] {
        let path = root().join(rel);
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let plan = plan_of(&path);
        let e = entries_with(&plan, Target::Bmv2, &Options::default()).unwrap();
        let updates = work.join(format!("{name}.p4runtime.json"));
        std::fs::write(&updates, &e.p4runtime_json).unwrap();

        let port = 20000 + std::process::id() % 20000;
        let addr = format!("127.0.0.1:{port}");
        let mut sw = Command::new("simple_switch_grpc")
            // no ports: entries only
            .args(["--no-p4", "--device-id", "0", "--"])
            .args(["--grpc-server-addr", &addr, "--cpu-port", "64"])
            .args(["--priority-queues", "8"])
            .current_dir(&work)
            .stdout(std::fs::File::create(work.join(format!("{name}.switch.log"))).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let client = Command::new("python3")
            .arg(root().join("p4/tests/p4rt_load.py"))
            .args(["--addr", &addr, "--p4info"])
            .arg(&p4info)
            .arg("--device-config")
            .arg(work.join("dataplane.json"))
            .arg("--updates")
            .arg(&updates)
            .output()
            .unwrap();
        let _ = sw.kill();
        let _ = sw.wait();
        let report = String::from_utf8_lossy(&client.stdout);
        eprintln!("{name}: {}", report.trim());
        assert!(
            client.status.success(),
            "{name}: the switch did not take the generated P4Runtime entries: {report}{}",
            String::from_utf8_lossy(&client.stderr)
        );
        let v: serde_json::Value = serde_json::from_str(report.trim()).unwrap();
        assert!(v["entries_written"].as_u64().unwrap() > 5, "{report}");
        assert_eq!(v["entries_written"], v["entries_read"], "{report}");
    }
    let _ = std::fs::remove_dir_all(&work);
}

/// A classic pcap file (Ethernet link type) of `frames`, one per microsecond.
fn write_pcap(path: &Path, frames: &[Vec<u8>]) -> std::io::Result<()> {
    let file = std::fs::File::create(path)?;
    let mut w = pcap_file::pcap::PcapWriter::new(file).map_err(std::io::Error::other)?;
    for (i, f) in frames.iter().enumerate() {
        let ts = Duration::from_micros(i as u64);
        w.write_packet(&pcap_file::pcap::PcapPacket::new(ts, f.len() as u32, f))
            .map_err(std::io::Error::other)?;
    }
    Ok(())
}
