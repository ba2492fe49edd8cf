//! `dataplane-demo`: one switch and two hosts in network namespaces.
//!
//! ```text
//!   h1 (198.18.0.1) ── sw-p0 ┐
//!                            ├─ sw: dataplane (xdp_classify)
//!   h2 (198.18.0.2) ── sw-p1 ┘
//! ```
//! h1 sends RoCEv2 RDMA WRITEs (DSCP 26) on four queue pairs, CNPs (DSCP
//! 48), PFC frames and a few broken frames; h2 sends VLAN-tagged RoCEv2 with
//! PCP 4 and best-effort traffic. The switch classifies them (sw-p0 trusts
//! DSCP, sw-p1 trusts 802.1p) and the demo prints its counters. Everything
//! is torn down at the end, on error and on Ctrl-C.

use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use dataplane_common::build::{self, Ip, Reth, L2};
use dataplane_common::wire::bth::{Bth, OP_WRITE_FIRST, OP_WRITE_MIDDLE};
use testbed::controller::Controller;
use testbed::netns::{veth, Netns};
use testbed::raw::send_frames;

#[derive(Parser)]
struct Args {
    /// The controller binary.
    #[arg(long, default_value = "target/release/dataplane")]
    dataplane: PathBuf,
    /// RoCEv2 packets per queue pair.
    #[arg(long, default_value_t = 2000)]
    packets: u32,
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: i32) {
    STOP.store(true, Ordering::SeqCst);
}

const CONFIG: &str = r#"# demo switch: written by dataplane-demo
[switch]
name = "demo"
cnp_tc = 6

[dscp_to_tc_map.ROCE]
"26" = 3
"48" = 6

[[port]]
name = "sw-p0"
trust = "dscp"
dscp_to_tc_map = "ROCE"
pfc_enable = "3"

[[port]]
name = "sw-p1"
trust = "dot1p"
pfc_enable = "3,4"
malformed = "drop"
"#;

fn check_stop() -> Result<()> {
    if STOP.load(Ordering::SeqCst) {
        bail!("interrupted: tearing down");
    }
    Ok(())
}

fn main() -> Result<()> {
    let args = Args::parse();
    // SAFETY: installing a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as usize);
        libc::signal(libc::SIGTERM, on_signal as *const () as usize);
    }
    let dp = args
        .dataplane
        .canonicalize()
        .with_context(|| format!("controller binary {}", args.dataplane.display()))?;

    println!("[1/7] building the fabric: namespaces sw, h1, h2; veth sw-p0<->h1, sw-p1<->h2");
    let sw = Netns::create("demo-sw")?;
    let h1 = Netns::create("demo-h1")?;
    let h2 = Netns::create("demo-h2")?;
    veth(
        &sw,
        "sw-p0",
        "02:00:00:00:01:00",
        &h1,
        "eth0",
        "02:00:00:00:00:01",
    )?;
    veth(
        &sw,
        "sw-p1",
        "02:00:00:00:01:01",
        &h2,
        "eth0",
        "02:00:00:00:00:02",
    )?;
    h1.ip(&["addr", "add", "198.18.0.1/24", "dev", "eth0"])?;
    h2.ip(&["addr", "add", "198.18.0.2/24", "dev", "eth0"])?;
    check_stop()?;

    println!(
        "[2/7] starting `dataplane --netns {} up -c <config>`",
        sw.name
    );
    let ctl = Controller::start(&dp, &sw, "demo", CONFIG, "switch")?;
    check_stop()?;

    println!("[3/7] h1 -> sw-p0: RoCEv2 WRITEs on 4 QPs (DSCP 26, ECT0), CNPs, PFC, broken frames");
    let l2 = L2::new([2, 0, 0, 0, 1, 0], [2, 0, 0, 0, 0, 1]);
    let ip = Ip::v4([198, 18, 0, 1], [198, 18, 0, 2]).dscp(26).ecn(2);
    let mut sent = 0usize;
    let chunk = 500u32;
    let total = args.packets * 4;
    let mut psn = 0u32;
    while psn < args.packets {
        let mut frames = Vec::new();
        for qp in 0..4u32 {
            for i in 0..chunk.min(args.packets - psn) {
                let first = psn + i == 0;
                let bth = Bth {
                    opcode: if first {
                        OP_WRITE_FIRST
                    } else {
                        OP_WRITE_MIDDLE
                    },
                    pkey: 0xffff,
                    dest_qp: 0x100 + qp,
                    psn: psn + i,
                    ..Bth::default()
                };
                let reth = first.then_some(Reth {
                    va: 0x1000,
                    rkey: 7,
                    len: args.packets * 1024,
                });
                frames.push(build::rocev2_frame(
                    &l2,
                    &ip,
                    49152,
                    &bth,
                    reth,
                    &[0u8; 1024],
                ));
            }
        }
        sent += send_frames(&h1, "eth0", &frames)?;
        psn += chunk;
        print!("\r      sent {sent}/{total} RoCEv2 frames");
        check_stop()?;
    }
    println!();
    let cnp_ip = Ip::v4([198, 18, 0, 1], [198, 18, 0, 2]).dscp(48);
    let mut extra: Vec<Vec<u8>> = (0..4)
        .map(|qp| build::cnp_frame(&l2, &cnp_ip, 49152, 0x100 + qp))
        .collect();
    extra.push(build::pfc_frame(
        [2, 0, 0, 0, 0, 1],
        0x08,
        [0, 0, 0, 0xffff, 0, 0, 0, 0],
    ));
    extra.push(build::pfc_frame([2, 0, 0, 0, 0, 1], 0x08, [0; 8]));
    let mut broken = extra[0].clone();
    broken.truncate(40);
    extra.push(broken);
    send_frames(&h1, "eth0", &extra)?;

    println!("[4/7] h2 -> sw-p1: VLAN 10 PCP 4 RoCEv2, PCP 0 best effort, one cut tag");
    let l2b = L2::new([2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 0, 2]);
    let ipb = Ip::v4([198, 18, 0, 2], [198, 18, 0, 1]).dscp(26).ecn(2);
    let mut frames: Vec<Vec<u8>> = (0..1000u32)
        .map(|i| {
            let bth = Bth {
                opcode: OP_WRITE_MIDDLE,
                pkey: 0xffff,
                dest_qp: 0x200,
                psn: i,
                ..Bth::default()
            };
            build::rocev2_frame(
                &l2b.clone().vlan(4, 10),
                &ipb,
                49153,
                &bth,
                None,
                &[0u8; 256],
            )
        })
        .collect();
    frames.extend((0..200).map(|_| {
        build::udp_frame(
            &l2b.clone().vlan(0, 10),
            &Ip::v4([198, 18, 0, 2], [198, 18, 0, 1]),
            5000,
            5001,
            &[0; 64],
        )
    }));
    let mut cut = frames[0].clone();
    cut.truncate(16);
    frames.push(cut);
    send_frames(&h2, "eth0", &frames)?;
    std::thread::sleep(Duration::from_millis(300));
    check_stop()?;

    println!("[5/7] `dataplane stats` on the switch:\n");
    let o = Command::new(&dp)
        .args(["--netns", &sw.name, "stats", "--instance", "demo"])
        .output()?;
    print!("{}", String::from_utf8_lossy(&o.stdout));
    if !o.status.success() {
        bail!("stats failed: {}", String::from_utf8_lossy(&o.stderr));
    }
    println!("\nExpected: sw-p0 TC3 = {} RoCEv2 writes (lossless), TC6 = 4 CNPs, Rx PFC3 = 2, one ipv4_len_exceeds_frame;", total);
    println!(
        "          sw-p1 TC4 = 1000 (PCP 4, lossless), TC0 = 200, one vlan_truncated dropped."
    );
    println!("          Counts above that are a bit higher come from the hosts' own IPv6 neighbour traffic.");
    ctl.stop("switch");
    drop((sw, h1, h2));
    println!("\ntorn down: controller stopped, data plane detached, namespaces removed");
    check_stop()?;
    let lossless = lossless_part(&dp)?;
    check_stop()?;
    let lb = lb_part(&dp)?;
    // the report, with stable names so runs can be compared
    let report = serde_json::json!({
        "scenarios": {
            "ecn_dcqcn_100m_into_10m": lossless,
            "low_entropy_8_flows_4_uplinks": lb,
        },
        "note": "job_completion_ms is not reported: the all-reduce scenario does not exist yet",
    });
    std::fs::create_dir_all("target/demo")?;
    std::fs::write(
        "target/demo/report.json",
        serde_json::to_string_pretty(&report)?,
    )?;
    println!("report: target/demo/report.json");
    Ok(())
}

/// ECN and DCQCN: a sender at 100 Mb/s into a 10 Mb/s egress.
fn lossless_part(dp: &std::path::Path) -> Result<serde_json::Value> {
    use testbed::controller::sum_counters;
    println!("\n[6/7] ECN and DCQCN: a RoCEv2 sender at 100 Mb/s into a 10 Mb/s switch port (buffer model, WRED min 20 KB)");
    println!("      running 3 s ...");
    let scene =
        testbed::scenes::dcqcn_one_switch(dp, "demo-d", "demo-lossless", Duration::from_secs(3))?;
    let (np, rp) = (&scene.receiver, &scene.sender);
    println!(
        "      receiver: {} frames, {} CE-marked by the switch, {} CNPs sent back",
        np.rx_pkts, np.ce_pkts, np.cnps_sent
    );
    println!(
        "      sender:   {} CNPs received; rate {:.1} Mb/s before the first CNP, {:.1} Mb/s after (DCQCN rate now {:.1} Mb/s)",
        rp.cnps,
        rp.rate_before_mbps,
        rp.rate_after_mbps,
        rp.final_rate_bps as f64 / 1e6
    );
    if let Some(q) = scene.stats_text.split("\nQueue counters").nth(1) {
        println!(
            "\n      Queue counters{}",
            q.split("\npfcstat")
                .next()
                .unwrap_or("")
                .replace('\n', "\n      ")
        );
    }
    let v = &scene.stats;
    Ok(serde_json::json!({
        "lossless_drops": sum_counters(v, "drop_headroom["),
        "ecn_marked": sum_counters(v, "ecn_marked["),
        "cnp_sent": np.cnps_sent,
        "pfc_frames": sum_counters(v, "tx_pfc[") + sum_counters(v, "rx_pfc["),
        "sender_rate_before_first_cnp_mbps": rp.rate_before_mbps,
        "sender_rate_after_first_cnp_mbps": rp.rate_after_mbps,
    }))
}

/// Load balancing: 8 RoCEv2 flows with one UDP source port over 4 uplinks.
fn lb_part(dp: &std::path::Path) -> Result<serde_json::Value> {
    use testbed::lbfabric::{LbFabric, LbSpec, RunOpts};
    println!("\n[7/7] load balancing: 8 RoCEv2 flows, one UDP source port, 4 uplinks: hash vs bandwidth mode, 4 s each");
    let mut fabric = LbFabric::create(LbSpec::default(), dp)?;
    let opts = RunOpts {
        seconds: 4.0,
        label: "demo-lb".into(),
        ..RunOpts::default()
    };
    let mut groups = Vec::new();
    let mut modes = serde_json::Map::new();
    for mode in ["hash", "bandwidth"] {
        check_stop()?;
        let r = fabric.run(mode, &opts)?;
        let shares: Vec<String> = r
            .shares()
            .iter()
            .map(|s| format!("{:.1}%", 100.0 * s))
            .collect();
        println!(
            "      {mode:<10} uplink shares {}  utilisation {:.1}% of ideal, max/mean {:.3}",
            shares.join(" / "),
            r.utilisation_pct(),
            r.imbalance()
        );
        groups.push((
            mode.to_string(),
            r.shares().iter().map(|s| 100.0 * s).collect::<Vec<f64>>(),
        ));
        modes.insert(
            mode.to_string(),
            serde_json::json!({ "uplink_utilisation_pct": r.utilisation_pct(), "uplink_imbalance": r.imbalance(), "uplink_shares_pct": groups.last().map(|g| g.1.clone()) }),
        );
    }
    drop(fabric);
    let g: Vec<(&str, Vec<f64>)> = groups
        .iter()
        .map(|(m, v)| (m.as_str(), v.clone()))
        .collect();
    let svg = testbed::plot::bars(
        "8 low-entropy RoCEv2 flows over 4 uplinks",
        "% of bytes",
        &["uplink 0", "uplink 1", "uplink 2", "uplink 3"],
        &g,
    );
    std::fs::create_dir_all("target/demo")?;
    std::fs::write("target/demo/lb_shares.svg", svg)?;
    println!("      plot: target/demo/lb_shares.svg");
    println!("\ndone: every namespace removed, every data plane detached");
    Ok(serde_json::Value::Object(modes))
}
