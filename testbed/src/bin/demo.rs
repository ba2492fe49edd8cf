//! `dataplane-demo`: the README's main command.
//!
//! By default it builds the default fabric in network namespaces
//!
//! ```text
//!          spine0            spine1          (40 Mb/s links)
//!          /    \\          /    \\
//!      leaf0          leaf1                  one `dataplane` controller
//!     h0 .. h3       h4 .. h7                per switch; hosts 20 Mb/s
//! ```
//!
//! with RoCEv2 host emulators (RC go-back-N, DCQCN, PFC), runs a ring
//! all-reduce and a 7:1 incast with PFC and ECN on, the incast again with
//! PFC off, and low-entropy elephants under hash, flowlet, bandwidth and place
//! load balancing; then builds the same fabric with FRR (zebra + bgpd) in
//! every switch, eBGP unnumbered, and shows the sessions established and
//! the routes each data plane learned (skipped, saying so, without FRR);
//! between them the UET scene: a 7:1 incast of UET messages with plain
//! drops, then with packet trimming (`testbed::uetincast`);
//! prints each report and a summary, writes
//! `target/demo/report.json` and the plots, and tears everything down (also
//! on error and Ctrl-C).
//!
//! `--single-switch` runs the earlier one-switch scenes instead:
//! classification of RoCEv2, CNPs, PFC and broken frames with the switch's
//! counters; ECN and DCQCN at a 100 -> 10 Mb/s bottleneck; hash,
//! bandwidth and place mode over 4 uplinks.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Parser;
use dataplane_common::build::{self, Ip, Reth, L2};
use dataplane_common::wire::bth::{Bth, OP_WRITE_FIRST, OP_WRITE_MIDDLE};
use testbed::controller::Controller;
use testbed::convergence::SwitchBgp;
use testbed::fabric::{check_interrupt, Fabric};
use testbed::fabricrun::{check_configs, lb_modes_svg, polarising_seed, run_scenario};
use testbed::netns::{veth, Netns};
use testbed::raw::send_frames;
use testbed::scenario::{RunOpts, RunResult, Scenario};
use testbed::topo::{Routing, Topology};
use testbed::uetincast::{compare, UetIncast};

#[derive(Parser)]
struct Args {
    /// The controller binary.
    #[arg(long, default_value = "target/release/dataplane")]
    dataplane: PathBuf,
    /// RoCEv2 frames per QP in the single-switch classification scene.
    #[arg(long, default_value_t = 2000)]
    packets: u32,
    /// The one-switch scenes instead of the fabric.
    #[arg(long)]
    single_switch: bool,
    /// Where the report and plots go.
    #[arg(long, default_value = "target/demo")]
    out: PathBuf,
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

fn main() {
    testbed::fabric::run_main(real_main)
}

fn real_main() -> Result<()> {
    let args = Args::parse();
    let dp = args
        .dataplane
        .canonicalize()
        .with_context(|| format!("controller binary {}", args.dataplane.display()))?;
    if args.single_switch {
        single_switch(&dp, &args)
    } else {
        fabric_demo(&dp, &args.out)
    }
}

fn fabric_demo(dp: &Path, out: &Path) -> Result<()> {
    let elephants = Scenario::Elephants { bytes: 1 << 20 };
    // run twice: PFC on, then off on a rebuilt fabric
    let incast = Scenario::Incast {
        receiver: "h0".into(),
        senders: None,
        bytes: 256 << 10,
    };
    let mut topo = Topology::default();
    check_configs(&topo)?;
    let (seed, placement) = polarising_seed(&topo, &elephants)?;
    topo.hash_seed = seed;
    let (s, l, h) = topo.dims();
    println!(
        "[1/8] building the default fabric: {s} spines, {l} leaves, {h} hosts per leaf; hosts {} Mb/s, uplinks {} Mb/s; PFC on priority 3, ECN (Kmin {} KB, Kmax {} KB, Pmax {}%)",
        topo.host_mbps,
        topo.uplink_mbps,
        topo.kmin / 1000,
        topo.kmax / 1000,
        topo.pmax
    );
    let opts = RunOpts::default();
    let mut runs: Vec<RunResult> = Vec::new();
    {
        let mut fabric = Fabric::build(topo.clone(), dp, "demo")?;
        // the all-reduce under place mode (each step's flows placed once,
        // pinned), the scenes after it under the topology's own mode
        let own_mode = fabric.topo.lb_mode.clone();
        fabric.topo.lb_mode = "place".into();
        fabric.reload()?;
        println!("\n[2/8] ring all-reduce, 2 MB per host ({} mode): 14 steps, each sends what the previous one received", fabric.topo.lb_mode);
        runs.push(run_scenario(
            &fabric,
            &Scenario::AllReduce { bytes: 2 << 20 },
            &opts,
            out,
            "all_reduce",
        )?);
        fabric.topo.lb_mode = own_mode;
        fabric.reload()?;
        check_interrupt()?;
        println!("\n[3/8] incast: h1..h7 write 256 KB each to h0, PFC and ECN on");
        runs.push(run_scenario(&fabric, &incast, &opts, out, "incast_pfc_on")?);
        check_interrupt()?;
        println!("\n[4/8] low-entropy elephants (one UDP source port, h<i> -> h<i+4>, 1 MB each): hash, flowlet, bandwidth, place");
        println!(
            "      hash seed {seed}: hash mode stacks the flows per leaf uplink as {placement:?}"
        );
        for m in ["hash", "flowlet", "bandwidth", "place"] {
            check_interrupt()?;
            fabric.topo.lb_mode = m.into();
            fabric.reload()?;
            runs.push(run_scenario(
                &fabric,
                &elephants,
                &opts,
                out,
                &format!("elephants_{m}"),
            )?);
        }
    }
    check_interrupt()?;
    println!("\n[5/8] the incast again with PFC off (fabric rebuilt)");
    {
        let fabric = Fabric::build(
            Topology {
                pfc: false,
                ..topo.clone()
            },
            dp,
            "demo",
        )?;
        runs.push(run_scenario(
            &fabric,
            &incast,
            &opts,
            out,
            "incast_pfc_off",
        )?);
    }
    check_interrupt()?;
    let uet = uet_scene(dp, out)?;
    check_interrupt()?;
    let bgp = bgp_scene(dp)?;
    println!("\n[8/8] torn down: controllers stopped, FRR stopped, data planes detached, namespaces removed\n");
    println!(
        "{:<12} {:<10} {:>4} {:>9} {:>9} {:>8} {:>6} {:>6} {:>9} {:>9}",
        "scenario", "lb", "PFC", "JCT ms", "lossless", "ECN", "CNP", "PFC", "uplinks", "max/mean"
    );
    println!(
        "{:<12} {:<10} {:>4} {:>9} {:>9} {:>8} {:>6} {:>6} {:>9} {:>9}",
        "", "", "", "", "drops", "marked", "sent", "frames", "% ideal", ""
    );
    for r in &runs {
        println!(
            "{:<12} {:<10} {:>4} {:>9} {:>9} {:>8} {:>6} {:>6} {:>9} {:>9}",
            r.scenario,
            r.lb_mode,
            if r.pfc { "on" } else { "off" },
            r.job_completion_ms
                .map(|j| format!("{j:.0}"))
                .unwrap_or_else(|| "-".into()),
            r.lossless_drops,
            r.ecn_marked,
            r.cnp_sent(),
            r.pfc_frames(),
            r.uplink_utilisation_pct()
                .map(|u| format!("{u:.1}"))
                .unwrap_or_else(|| "-".into()),
            r.uplink_imbalance()
                .map(|u| format!("{u:.3}"))
                .unwrap_or_else(|| "-".into()),
        );
    }
    print_bgp(&bgp);
    let el: Vec<&RunResult> = runs.iter().filter(|r| r.scenario == "elephants").collect();
    if let Some(svg) = lb_modes_svg("low-entropy elephants: uplink shares per LB mode", &el) {
        std::fs::write(out.join("lb_modes.svg"), svg)?;
    }
    let report = serde_json::json!({
        "fabric": { "spines": s, "leaves": l, "hosts_per_leaf": h, "host_mbps": topo.host_mbps, "uplink_mbps": topo.uplink_mbps, "hash_seed": seed },
        "runs": runs.iter().map(|r| r.to_json()).collect::<Vec<_>>(),
        "bgp": bgp.to_json(),
        "uet": uet,
    });
    std::fs::write(
        out.join("report.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    println!("\nreport: {}/report.json; plots: {}/*.svg (queues, PFC timelines, host rates, lb_modes.svg, uet_incast_*.svg)", out.display(), out.display());
    if runs.iter().any(|r| !r.complete) {
        bail!("a scenario did not complete");
    }
    Ok(())
}

fn single_switch(dp: &Path, args: &Args) -> Result<()> {
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
    check_interrupt()?;

    println!(
        "[2/7] starting `dataplane --netns {} up -c <config>`",
        sw.name
    );
    let ctl = Controller::start(dp, &sw, "demo", CONFIG, "switch")?;
    check_interrupt()?;

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
        check_interrupt()?;
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
            let bth = Bth::request(OP_WRITE_MIDDLE, 0x200, i);
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
    check_interrupt()?;

    println!("[5/7] `dataplane stats` on the switch:\n");
    let o = Command::new(dp)
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
    check_interrupt()?;
    let lossless = lossless_part(dp)?;
    check_interrupt()?;
    let lb = lb_part(dp)?;
    // the report, with stable names so runs can be compared
    let report = serde_json::json!({
        "scenarios": {
            "ecn_dcqcn_100m_into_10m": lossless,
            "low_entropy_8_flows_4_uplinks": lb,
        },
        "note": "job_completion_ms: see the fabric demo (dataplane-demo without --single-switch)",
    });
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(
        args.out.join("single_switch_report.json"),
        serde_json::to_string_pretty(&report)?,
    )?;
    println!("report: {}/single_switch_report.json", args.out.display());
    Ok(())
}

/// ECN and DCQCN: a sender at 100 Mb/s into a 10 Mb/s egress.
fn lossless_part(dp: &std::path::Path) -> Result<serde_json::Value> {
    use testbed::controller::sum_counters;
    println!("\n[6/7] ECN and DCQCN: a RoCEv2 sender at 100 Mb/s into a 10 Mb/s switch port (buffer model, WRED min 20 KB)");
    println!("      running 3 s ...");
    let scene = testbed::scenes::dcqcn_one_switch(dp, "demod", Duration::from_secs(3))?;
    let (np, rp) = (&scene.receiver, &scene.sender);
    println!(
        "      receiver: {} frames, {} CE-marked by the switch, {} CNPs sent back",
        np.rx_pkts, np.ce_rx, np.cnps_tx
    );
    println!(
        "      sender:   {} CNPs received; rate {:.1} Mb/s before the first CNP, {:.1} Mb/s after (DCQCN rate now {:.1} Mb/s)",
        rp.cnps_rx,
        scene.rate_before_mbps(),
        scene.rate_after_mbps(),
        rp.dcqcn_rate_bps as f64 / 1e6
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
        "cnp_sent": np.cnps_tx,
        "pfc_frames": sum_counters(v, "tx_pfc[") + sum_counters(v, "rx_pfc["),
        "sender_rate_before_first_cnp_mbps": scene.rate_before_mbps(),
        "sender_rate_after_first_cnp_mbps": scene.rate_after_mbps(),
    }))
}

/// Load balancing: 8 RoCEv2 flows with one UDP source port over 4 uplinks.
fn lb_part(dp: &std::path::Path) -> Result<serde_json::Value> {
    use testbed::lbfabric::{LbFabric, LbSpec, RunOpts};
    println!("\n[7/7] load balancing: 8 RoCEv2 flows, one UDP source port, 4 uplinks: hash, bandwidth and place mode, 4 s each");
    let mut fabric = LbFabric::create(LbSpec::default(), dp)?;
    let opts = RunOpts {
        seconds: 4.0,
        label: "demo-lb".into(),
        ..RunOpts::default()
    };
    let mut groups = Vec::new();
    let mut modes = serde_json::Map::new();
    for mode in ["hash", "bandwidth", "place"] {
        check_interrupt()?;
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

/// The BGP scene's outcome.
enum Bgp {
    Skipped(String),
    Converged {
        converge_s: f64,
        scene_s: f64,
        expected_sessions: usize,
        switches: Vec<SwitchBgp>,
    },
}

impl Bgp {
    /// Leaf-spine sessions Established, counted at the leaves (each session
    /// has one leaf end).
    fn sessions(switches: &[SwitchBgp]) -> usize {
        switches.iter().filter(|b| b.leaf).map(|b| b.sessions).sum()
    }

    /// `bgp.*` of report.json: `skipped` (why), or `sessions_established`,
    /// `sessions_expected`, `converge_s`, `scene_s`, `sessions.<switch>`,
    /// `routes_learned.<switch>`.
    fn to_json(&self) -> serde_json::Value {
        match self {
            Bgp::Skipped(why) => serde_json::json!({ "skipped": why }),
            Bgp::Converged {
                converge_s,
                scene_s,
                expected_sessions,
                switches,
            } => {
                let per = |f: fn(&SwitchBgp) -> usize| {
                    switches
                        .iter()
                        .map(|b| (b.name.clone(), serde_json::json!(f(b))))
                        .collect::<serde_json::Map<_, _>>()
                };
                serde_json::json!({
                    "sessions_established": Bgp::sessions(switches),
                    "sessions_expected": expected_sessions,
                    "converge_s": converge_s,
                    "scene_s": scene_s,
                    "sessions": per(|b| b.sessions),
                    "routes_learned": per(|b| b.routes),
                })
            }
        }
    }
}

/// The default fabric again, routed by FRR: zebra + bgpd in every switch
/// (as `dataplane-fabric --routing bgp`), until every data plane equals
/// its kernel FIB; the figures, then teardown (FRR stopped with the fabric,
/// also on error and Ctrl-C).
fn bgp_scene(dp: &Path) -> Result<Bgp> {
    println!("\n[7/8] BGP: the same fabric, routes from FRR (zebra + bgpd per switch, eBGP unnumbered) through the kernel into the data planes");
    if let Some(why) = testbed::frr::missing() {
        println!("      skipped: {why}");
        return Ok(Bgp::Skipped(why));
    }
    let topo = Topology {
        routing: Routing::Bgp,
        ..Topology::default()
    };
    check_configs(&topo)?;
    let (s, l, _) = topo.dims();
    let t0 = std::time::Instant::now();
    let fabric = Fabric::build(topo, dp, "demobgp")?;
    let t = testbed::convergence::wait_converged(&fabric, s, Duration::from_secs(60))?;
    let switches = testbed::convergence::summary(&fabric)?;
    drop(fabric);
    let bgp = Bgp::Converged {
        converge_s: t.as_secs_f64(),
        scene_s: t0.elapsed().as_secs_f64(),
        expected_sessions: s * l,
        switches,
    };
    println!("      converged in {:.1} s: every data plane equals its kernel FIB and FRR's installed routes", t.as_secs_f64());
    Ok(bgp)
}

/// The UET scene: a 7:1 incast of UET messages through one switch with a
/// small lossy buffer, plain drops then trimming
/// (`testbed::uetincast::compare`); the figures and plots
/// `uet_incast_mct_cdf.svg`, `uet_incast_bars.svg`.
fn uet_scene(dp: &Path, out: &Path) -> Result<serde_json::Value> {
    let spec = UetIncast::default();
    println!(
        "\n[6/8] UET incast: h1..h{n} send {m} messages of {k} KB each to h0 over UDP 4793 (per-packet entropy, PDS PSNs) through one switch with a {p} KB pool; once with plain drops (lost packets resent after a {r} ms timeout), once with packet trimming (the receiver NACKs a trimmed packet, the sender resends it at once)",
        n = spec.senders,
        m = spec.messages,
        k = spec.message_bytes / 1024,
        p = spec.pool_bytes / 1024,
        r = spec.rto_ms
    );
    let [drop, trim] = compare(dp, "demouet", &spec, out, "uet_incast")?;
    if !drop.complete || !trim.complete {
        bail!("the UET incast did not complete");
    }
    println!(
        "      trimming: message completion p99 {:.0} ms vs {:.0} ms with drops, job {:.0} vs {:.0} ms; the switch trimmed {} packets, the receiver NACKed {}",
        trim.p99(),
        drop.p99(),
        trim.job_completion_ms.unwrap_or(0.0),
        drop.job_completion_ms.unwrap_or(0.0),
        trim.switch.trim,
        trim.nacks_tx()
    );
    Ok(serde_json::json!({ "runs": [drop.to_json(), trim.to_json()] }))
}

fn print_bgp(bgp: &Bgp) {
    match bgp {
        Bgp::Skipped(why) => println!("\nBGP: skipped ({why})"),
        Bgp::Converged {
            converge_s,
            scene_s,
            expected_sessions,
            switches,
        } => {
            println!(
                "\nBGP (FRR): {} of {expected_sessions} leaf-spine sessions established, converged {converge_s:.1} s after the build (scene: {scene_s:.1} s with build and teardown)",
                Bgp::sessions(switches)
            );
            println!("{:<8} {:>8} {:>14}", "switch", "sessions", "routes learned");
            for b in switches {
                println!("{:<8} {:>8} {:>14}", b.name, b.sessions, b.routes);
            }
        }
    }
}
