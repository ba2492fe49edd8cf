//! `dataplane-lbbench`: load-balancing quality over a namespace fabric and
//! the per-packet cost of each load-balancing mode, merged into
//! target/bench/results.json.
//!
//! **(a) Quality.** `testbed::lbfabric`: one sender host, a switch running
//! the `dataplane` controller, 4 uplinks of equal configured speed. 8
//! RoCEv2 flows share ONE UDP source port (they differ only by destination
//! QP), each sending 8 KB messages separated by 2-4 flowlet timeouts. For
//! each mode (hash, flowlet, bandwidth, spray) the switch's own counters
//! give every uplink's share of the bytes, and:
//!
//! * `lb.<mode>.imbalance` = max / mean of the per-uplink bytes;
//! * `lb.<mode>.utilisation_pct` = `sum_u min(bytes_u, total/U) / total`,
//!   the part of the load that fits if each uplink carries only its fair
//!   1/U share (100% = perfect balance).
//!
//! The hash seed is, by default, the first seed (from 0) for which the 4
//! member group the controller builds puts >= 4 of the 8 flows on one
//! member: the polarised case ECMP users meet. The note gives the
//! expectation over random seeds as well (pure functions, offline).
//! Target for `bandwidth`: >= 95% of ideal and max/mean <= 1.05.
//!
//! **(b) Cost.** BPF_PROG_TEST_RUN of `xdp_forward` on a 60-byte (64 on
//! the wire) RoCEv2 frame routed through a 4-member group of each mode,
//! against `xdp_bench_bare` in the same run. The kernel reuses the buffer
//! between repetitions and `xdp_forward` rewrites it, so: TTL 255 and at
//! most 250 repetitions per call (the frame stays routable: TTL 5 at the
//! end), and every next hop's MAC is the ingress port's own MAC (the
//! rewritten frame is still addressed to the switch). Every run is checked
//! to have been routed (the ingress port's `rx_routed` moves by exactly the
//! number of runs). Figures `cost.route_<mode>.ns_per_pkt`, baseline
//! `cost.bare_lb.ns_per_pkt` (the bare program re-measured here, same repeat and calls), and
//! `cost.route_nexthop.ns_per_pkt`, the same frame routed to one next hop
//! without a group: the difference is what the mode's selection costs. The
//! same flow repeats, so flowlet modes measure their common path (same
//! flowlet); `cost.route_<mode>_newflow.ns_per_pkt` sends every packet on a
//! new flow instead (one run per call, baseline the bare program with one
//! run per call, `cost.bare_1run.ns_per_pkt`).

use dataplane_common::names;
use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use aya::maps::{MapData, PerCpuArray};
use aya::Ebpf;
use clap::Parser;
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::route::FwdCounters;
use dataplane_common::wire::bth::{Bth, OP_WRITE_MIDDLE};
use dataplane_user::object::load_object;
use dataplane_user::tables::apply_config_text;
use dataplane_user::telemetry::counters::read_fwd_counters;
use testbed::bench::{machine, merge_results, BenchPaths, Record};
use testbed::config_text::ConfigText;
use testbed::fabric::{check_interrupt, install_interrupt_handler, interrupt_flag};
use testbed::fabricrun::lb_hash_placement;
use testbed::lbfabric::{self, LbFabric, LbResult, LbSpec, RunOpts, MODES};
use testbed::netns::Netns;
use testbed::testrun::{action_name, run_xdp, XDP_PASS, XDP_REDIRECT};
use testbed::topo::FAN_DST_PREFIX;

#[derive(Parser)]
#[command(
    name = "dataplane-lbbench",
    about = "Load-balancing quality (namespace fabric) and per-mode cost (BPF_PROG_TEST_RUN)"
)]
struct Args {
    #[command(flatten)]
    paths: BenchPaths,
    /// Traffic per mode, seconds.
    #[arg(long, default_value_t = 20.0)]
    seconds: f64,
    /// Hash seed of the switch; default: the first seed that puts >= 4 of
    /// the 8 flows on one uplink.
    #[arg(long)]
    hash_seed: Option<u32>,
    /// Mean offered load, fraction of 4 x uplink speed.
    #[arg(long, default_value_t = 0.5)]
    load: f64,
    /// Flowlet timeout of the group, us.
    #[arg(long, default_value_t = 500)]
    flowlet_timeout_us: u32,
    /// Frames per message (flowlet).
    #[arg(long, default_value_t = 8)]
    burst_pkts: u32,
    /// Only the quality part (a).
    #[arg(long)]
    quality_only: bool,
    /// Only the cost part (b).
    #[arg(long)]
    cost_only: bool,
    /// Cost: kernel calls per program and round (each `--repeat` runs).
    #[arg(long, default_value_t = 400)]
    calls: u32,
    /// Cost: runs per call (at most 250: TTL 255 must stay above 1).
    #[arg(long, default_value_t = 250)]
    repeat: u32,
    /// Cost: interleaved rounds (median reported).
    #[arg(long, default_value_t = 5)]
    rounds: usize,
}

const UPLINKS: usize = 4;
const FLOWS: usize = 8;

fn first_polarised_seed(spec: &LbSpec, at_least: usize) -> Result<u32> {
    let mut s = spec.clone();
    for seed in 0..10_000 {
        s.hash_seed = seed;
        if lb_hash_placement(&s)?.into_iter().max().unwrap_or(0) >= at_least {
            return Ok(seed);
        }
    }
    bail!("no seed below 10000 puts {at_least} flows on one member")
}

/// Over `n` seeds: mean utilisation and imbalance of hash placement (flows
/// of equal rate), and how often one member gets >= 3 / >= 4 flows.
fn hash_expectation(spec: &LbSpec, n: u32) -> Result<(f64, f64, f64, f64)> {
    let mut s = spec.clone();
    let (mut u, mut im, mut ge3, mut ge4) = (0.0, 0.0, 0u32, 0u32);
    for seed in 0..n {
        s.hash_seed = seed.wrapping_mul(0x9e37_79b9);
        let c: Vec<u64> = lb_hash_placement(&s)?
            .into_iter()
            .map(|x| x as u64)
            .collect();
        u += lbfabric::utilisation_pct(&c);
        im += lbfabric::imbalance(&c);
        let m = *c.iter().max().unwrap_or(&0);
        ge3 += u32::from(m >= 3);
        ge4 += u32::from(m >= 4);
    }
    let n = f64::from(n);
    Ok((u / n, im / n, f64::from(ge3) / n, f64::from(ge4) / n))
}

fn quality(args: &Args, m: &str) -> Result<Vec<Record>> {
    let mut spec = LbSpec {
        uplinks: UPLINKS,
        flows: FLOWS,
        load: args.load,
        flowlet_timeout_us: args.flowlet_timeout_us,
        burst_pkts: args.burst_pkts,
        ..LbSpec::default()
    };
    spec.hash_seed = match args.hash_seed {
        Some(s) => s,
        None => first_polarised_seed(&spec, 4)?,
    };
    let placement = lb_hash_placement(&spec)?;
    let (eu, ei, p3, p4) = hash_expectation(&spec, 10_000)?;
    eprintln!(
        "hash seed {}: hash mode places the {FLOWS} flows {:?} over the {UPLINKS} uplinks; over 10000 random seeds hash \
         placement averages {eu:.1}% utilisation, max/mean {ei:.2}, P(an uplink gets >= 3 flows) {:.0}%, >= 4: {:.0}%",
        spec.hash_seed,
        placement,
        100.0 * p3,
        100.0 * p4
    );
    let mut fabric = LbFabric::create(spec.clone(), &args.paths.dataplane)?;
    fabric.interrupt = Some(interrupt_flag());
    let opts = RunOpts {
        seconds: args.seconds,
        progress: Duration::from_secs(2),
        label: "lbbench".into(),
        fine_window: Duration::from_millis(10),
    };
    let mut results: Vec<LbResult> = Vec::new();
    for mode in MODES {
        results.push(fabric.run(mode, &opts)?);
    }
    drop(fabric);
    // a picture of the shares: one group of bars per mode, one bar per uplink
    let groups: Vec<(&str, Vec<f64>)> = results
        .iter()
        .map(|r| {
            (
                r.mode.as_str(),
                r.shares().iter().map(|s| 100.0 * s).collect(),
            )
        })
        .collect();
    let legend: Vec<String> = (0..UPLINKS).map(|u| format!("uplink {u}")).collect();
    let legend: Vec<&str> = legend.iter().map(|s| s.as_str()).collect();
    let svg = testbed::plot::bars(
        &format!("{FLOWS} low-entropy RoCEv2 flows over {UPLINKS} uplinks: share of bytes per uplink by mode"),
        "% of bytes",
        &legend,
        &groups,
    );
    let plot = args.paths.out.with_file_name("lb_uplink_shares.svg");
    std::fs::write(&plot, svg)?;
    println!("plot: {}", plot.display());

    println!("\n(a) load-balancing quality: {FLOWS} RoCEv2 flows, one UDP source port, over {UPLINKS} uplinks");
    println!(
        "    {} B frames, {} per message, gaps {:.0}-{:.0} x {} us flowlet timeout, uplinks {} Mb/s (scaled), target load {:.0}%, hash seed {}, {:.0} s per mode",
        spec.frame_len,
        spec.burst_pkts,
        spec.gap_min,
        spec.gap_max,
        spec.flowlet_timeout_us,
        spec.uplink_speed_mbps(),
        100.0 * spec.load,
        spec.hash_seed,
        args.seconds
    );
    println!(
        "{:<10} {:>7} {:>7} {:>7} {:>7} {:>8} {:>9} {:>9} {:>9} {:>10} {:>7} {:>9}",
        "mode",
        "up0",
        "up1",
        "up2",
        "up3",
        "util %",
        "max/mean",
        "2s util",
        "2s worst",
        "10ms util",
        "10ms mm",
        "load %"
    );
    for r in &results {
        let sh: Vec<String> = r
            .shares()
            .iter()
            .map(|s| format!("{:.1}%", 100.0 * s))
            .collect();
        println!(
            "{:<10} {:>7} {:>7} {:>7} {:>7} {:>8.2} {:>9.3} {:>9.2} {:>9.3} {:>10.1} {:>7.3} {:>9.1}",
            r.mode,
            sh[0],
            sh[1],
            sh[2],
            sh[3],
            r.utilisation_pct(),
            r.imbalance(),
            r.window_utilisation_pct(),
            r.window_imbalance_max(),
            r.fine_utilisation_pct(),
            r.fine_imbalance(),
            100.0 * r.offered_load()
        );
    }
    println!(
        "util % / max/mean: whole run (switch counters); 2s: per 2 s window (worst window's max/mean); 10ms: per 10 ms \
         window from the sinks' rx counters (util: each window's load split fairly; mm: byte-weighted mean max/mean)"
    );
    let bw = results
        .iter()
        .find(|r| r.mode == "bandwidth")
        .expect("bandwidth ran");
    let met = bw.utilisation_pct() >= 95.0 && bw.imbalance() <= 1.05;
    println!(
        "target for bandwidth mode (>= 95% of ideal, max/mean <= 1.05): {} ({:.2}%, {:.3})",
        if met { "MET" } else { "NOT MET" },
        bw.utilisation_pct(),
        bw.imbalance()
    );
    for r in &results {
        let lost = r.sent_pkts.saturating_sub(r.routed);
        if r.sink_mismatch() > 0.01 || lost > r.sent_pkts / 100 || r.send_errors > 0 {
            println!(
                "WARNING {}: sent {} frames, routed {}, send errors {}, sink/switch mismatch {:.2}%",
                r.mode,
                r.sent_pkts,
                r.routed,
                r.send_errors,
                100.0 * r.sink_mismatch()
            );
        }
    }

    let hash = &results[0];
    let common = format!(
        "namespace fabric (testbed::lbfabric): {FLOWS} RoCEv2 flows with ONE UDP source port (distinct BTH dest QPs), \
         {} B frames, {}-frame messages at the host link rate ({} Mb/s), idle gaps uniform {:.0}-{:.0} x the {} us \
         flowlet timeout; {UPLINKS} uplinks configured at {} Mb/s (speed scaled down so a userspace AF_PACKET sender \
         keeps up; time not scaled); target load {:.0}% of {UPLINKS} x uplink speed; hash seed {} (first seed putting \
         >= 4 flows on one member; hash placement {:?}; over 10000 random seeds hash placement averages {eu:.1}% \
         utilisation, max/mean {ei:.2}, P(>= 3 flows on an uplink) {:.0}%); {:.0} s per mode; per-uplink bytes from \
         the switch's tx_tc_bytes counters (cross-checked with the sinks' rx bytes); utilisation = sum_u \
         min(bytes_u, total/4) / total",
        spec.frame_len,
        spec.burst_pkts,
        spec.uplinks as u32 * spec.uplink_speed_mbps(),
        spec.gap_min,
        spec.gap_max,
        spec.flowlet_timeout_us,
        spec.uplink_speed_mbps(),
        100.0 * spec.load,
        spec.hash_seed,
        placement,
        100.0 * p3,
        args.seconds
    );
    let mut records = Vec::new();
    for r in &results {
        let is_hash = r.mode == "hash";
        let shares: Vec<String> = r
            .shares()
            .iter()
            .map(|s| format!("{:.2}%", 100.0 * s))
            .collect();
        let detail = format!(
            "whole run: shares [{}]; achieved load {:.1}%, {} messages; per 2 s window: utilisation {:.2}%, worst max/mean \
             {:.3}; per 10 ms window (sink counters): utilisation {:.1}%, byte-weighted mean max/mean {:.3}",
            shares.join(", "),
            100.0 * r.offered_load(),
            r.messages,
            r.window_utilisation_pct(),
            r.window_imbalance_max(),
            r.fine_utilisation_pct(),
            r.fine_imbalance()
        );
        let target = if r.mode == "bandwidth" {
            format!(
                "; target >= 95% and <= 1.05: {}",
                if met { "met" } else { "NOT met" }
            )
        } else {
            String::new()
        };
        records.push(Record {
            figure: format!("lb.{}.utilisation_pct", r.mode),
            value: r.utilisation_pct(),
            unit: "%".into(),
            baseline: (!is_hash).then(|| "lb.hash.utilisation_pct".into()),
            ratio: (!is_hash && hash.utilisation_pct() > 0.0)
                .then(|| r.utilisation_pct() / hash.utilisation_pct()),
            machine: m.into(),
            note: Some(format!("{detail}{target}; {common}")),
        });
        records.push(Record {
            figure: format!("lb.{}.imbalance", r.mode),
            value: r.imbalance(),
            unit: "max/mean".into(),
            baseline: (!is_hash).then(|| "lb.hash.imbalance".into()),
            ratio: (!is_hash && hash.imbalance() > 0.0).then(|| r.imbalance() / hash.imbalance()),
            machine: m.into(),
            note: Some(format!("{detail}{target}; {common}")),
        });
    }
    Ok(records)
}

// ---------------------------------------------------------------------------
// (b) cost
// ---------------------------------------------------------------------------

const COST_DOWN_MAC: [u8; 6] = [0x02, 0, 0, 0x18, 0x00, 0xfe];
const COST_SRC: [u8; 4] = [198, 18, 0, 1];
const COST_DST: [u8; 4] = [198, 18, 100, 1];

/// A switch with the downlink and 4 uplinks whose next hops all carry the
/// downlink's own MAC (see the module docs), one group in `mode`; mode
/// "nexthop": the route points at next hop n0 directly (no group).
fn cost_config(mode: &str) -> String {
    let mut c = ConfigText::new("dataplane-lbbench (cost)");
    c.switch("lbcost", 7, "");
    c.port("c-d0", COST_DOWN_MAC, 100_000, "");
    for i in 0..UPLINKS {
        c.port(&format!("c-u{i}"), lbfabric::mac_uplink(i), 100_000, "");
    }
    for i in 0..UPLINKS {
        c.nexthop(&format!("n{i}"), &format!("c-u{i}"), COST_DOWN_MAC);
    }
    if mode == "nexthop" {
        c.route_nexthop(FAN_DST_PREFIX, "n0");
        return c.0;
    }
    let members: Vec<String> = (0..UPLINKS).map(|i| format!("n{i}")).collect();
    c.group("g", mode, 100, &members);
    c.route_group(FAN_DST_PREFIX, "g");
    c.0
}

/// A 60-byte (64 on the wire) RoCEv2 WRITE middle frame, TTL 255.
fn cost_frame(qp: u32) -> Vec<u8> {
    let l2 = L2::new(COST_DOWN_MAC, [0x02, 0, 0, 0x18, 0, 0x01]);
    let ip = Ip::v4(COST_SRC, COST_DST).dscp(26).ecn(2).ttl(255);
    let bth = Bth::request(OP_WRITE_MIDDLE, qp, 1);
    build::rocev2_frame(&l2, &ip, 49152, &bth, None, &[0x5a; 2])
}

/// Applies a config with the controller's own functions (parse, validate,
/// resolve in this namespace, write every table); returns the downlink's
/// ifindex.
fn apply(bpf: &mut Ebpf, text: &str) -> Result<u32> {
    let (_, ports) = apply_config_text(bpf, text, "lbcost")?;
    Ok(ports[0].ifindex)
}

fn downlink_counters(bpf: &Ebpf) -> Result<FwdCounters> {
    let m: PerCpuArray<&MapData, FwdCounters> = PerCpuArray::try_from(
        bpf.map(names::map::FWD_COUNTERS)
            .context(names::map::FWD_COUNTERS)?,
    )?;
    read_fwd_counters(&m, 0)
}

/// Mean ns per run over `calls` calls of `repeat` runs; checks the verdict,
/// and for xdp_forward that every run was routed.
fn time_prog(
    bpf: &Ebpf,
    prog: &str,
    frame: &[u8],
    ifindex: u32,
    repeat: u32,
    calls: u32,
) -> Result<f64> {
    let before = downlink_counters(bpf)?.rx_routed;
    let mut total_ns = 0u128;
    for _ in 0..calls {
        let r = run_xdp(bpf, prog, frame, ifindex, repeat)?;
        check_action(prog, r.action)?;
        if prog == "xdp_forward" && r.out.get(22).copied() != Some(255 - repeat as u8) {
            bail!(
                "after {repeat} runs the TTL is {:?}, expected {}",
                r.out.get(22),
                255 - repeat
            );
        }
        total_ns += r.per_run.as_nanos() * u128::from(repeat);
    }
    if prog == "xdp_forward" {
        let routed = downlink_counters(bpf)?.rx_routed - before;
        if routed != u64::from(repeat) * u64::from(calls) {
            bail!(
                "{prog}: {routed} of {} runs routed",
                u64::from(repeat) * u64::from(calls)
            );
        }
    }
    Ok(total_ns as f64 / (f64::from(repeat) * f64::from(calls)))
}

/// `xdp_forward` must route (redirect), the bare program pass.
fn check_action(prog: &str, action: u32) -> Result<()> {
    let want = if prog == "xdp_forward" {
        XDP_REDIRECT
    } else {
        XDP_PASS
    };
    if action != want {
        bail!(
            "{prog} returned {} (expected {})",
            action_name(action),
            action_name(want)
        );
    }
    Ok(())
}

/// One run per call, a new flow (QP) each time: every packet starts a flow.
fn time_newflow(bpf: &Ebpf, prog: &str, ifindex: u32, calls: u32, qp0: &mut u32) -> Result<f64> {
    let mut total = 0u128;
    for _ in 0..calls {
        *qp0 = (*qp0 + 1) & 0x00ff_ffff;
        let r = run_xdp(bpf, prog, &cost_frame(*qp0), ifindex, 1)?;
        check_action(prog, r.action)?;
        total += r.per_run.as_nanos();
    }
    Ok(total as f64 / f64::from(calls))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s[s.len() / 2]
}

fn cost(args: &Args, m: &str) -> Result<Vec<Record>> {
    if args.repeat == 0 || args.repeat > 250 {
        bail!("--repeat must be 1-250 (TTL 255 decremented once per run must stay above 1)");
    }
    let ns = Netns::create("lbcost")?;
    let _in = ns.enter()?;
    ns.disable_ipv6()?;
    let quiet = ["c-q0", "c-q1"];
    for p in std::iter::once("c-d0".to_string())
        .chain((0..UPLINKS).map(|i| format!("c-u{i}")))
        .chain(quiet.iter().map(|q| q.to_string()))
    {
        ns.ip(&[
            "link",
            "add",
            &p,
            "type",
            "veth",
            "peer",
            "name",
            &format!("{p}-p"),
        ])?;
        ns.ip(&["link", "set", &p, "up"])?;
        ns.ip(&["link", "set", &format!("{p}-p"), "up"])?;
    }
    // members are live only once the links are running
    std::thread::sleep(Duration::from_millis(200));
    let mut bpf = load_object()?;
    // test runs of programs parked on idle veths (see `park`)
    for (prog, dev) in [("xdp_forward", quiet[0]), ("xdp_bench_bare", quiet[1])] {
        testbed::testrun::park(&mut bpf, prog, dev)?;
    }
    let frame = cost_frame(0x42);
    let mut rep: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut qp = 0x1000u32;
    eprintln!(
        "cost: {} rounds x (bare + next hop + {} modes), {} calls x {} runs each, plus {} one-run calls on new flows",
        args.rounds,
        MODES.len(),
        args.calls,
        args.repeat,
        args.calls * 5
    );
    let variants: Vec<&str> = std::iter::once("nexthop").chain(MODES).collect();
    for round in 0..args.rounds {
        check_interrupt()?;
        for &mode in &variants {
            let ix = apply(&mut bpf, &cost_config(mode))?;
            let bare = time_prog(&bpf, "xdp_bench_bare", &frame, ix, args.repeat, args.calls)?;
            let v = time_prog(&bpf, "xdp_forward", &frame, ix, args.repeat, args.calls)?;
            rep.entry("bare".into()).or_default().push(bare);
            rep.entry(format!("route_{mode}")).or_default().push(v);
            let b1 = time_newflow(&bpf, "xdp_bench_bare", ix, args.calls * 5, &mut qp)?;
            let n1 = time_newflow(&bpf, "xdp_forward", ix, args.calls * 5, &mut qp)?;
            rep.entry("bare_1run".into()).or_default().push(b1);
            rep.entry(format!("route_{mode}_newflow"))
                .or_default()
                .push(n1);
        }
        eprintln!("  round {}/{} done", round + 1, args.rounds);
    }
    drop(bpf);
    let bare = median(&rep["bare"]);
    let bare1 = median(&rep["bare_1run"]);
    let note = format!(
        "xdp_forward through BPF_PROG_TEST_RUN, 60-byte (64 on the wire) RoCEv2 frame, IPv4, TTL 255, routed via a \
         4-member group (next-hop MACs = the ingress port's MAC so the rewritten frame stays routable); {} calls x {} \
         runs per round (every run checked routed), median of {} rounds; baseline xdp_bench_bare measured in the same \
         rounds with the same repeat; same flow throughout (flowlet modes: same-flowlet path)",
        args.calls, args.repeat, args.rounds
    );
    let note1 = format!(
        "xdp_forward through BPF_PROG_TEST_RUN, one run per call, every packet a new flow (new QP: flowlet entry \
         inserted, load-aware choice); baseline xdp_bench_bare with one run per call (includes the kernel's timer \
         overhead, as does the figure); {} calls per round, median of {} rounds",
        args.calls * 5,
        args.rounds
    );
    let mut records = vec![Record {
        // its own name: `cost.bare.ns_per_pkt` belongs to dataplane-bench's
        // run, whose ratios were taken against it
        figure: "cost.bare_lb.ns_per_pkt".into(),
        value: bare,
        unit: "ns/pkt".into(),
        baseline: None,
        ratio: None,
        machine: m.into(),
        note: Some(format!(
            "xdp_bench_bare, measured by dataplane-lbbench as the baseline of cost.route_*: 60-byte RoCEv2 frame, \
             BPF_PROG_TEST_RUN {} calls x {} runs, median of {} rounds",
            args.calls, args.repeat, args.rounds
        )),
    }];
    records.push(Record {
        figure: "cost.bare_1run.ns_per_pkt".into(),
        value: bare1,
        unit: "ns/pkt".into(),
        baseline: None,
        ratio: None,
        machine: m.into(),
        note: Some(format!("xdp_bench_bare, one run per BPF_PROG_TEST_RUN call (timer overhead included); {} calls, median of {} rounds", args.calls * 5, args.rounds)),
    });
    let nh = median(&rep["route_nexthop"]);
    for &mode in &variants {
        let v = median(&rep[&format!("route_{mode}")]);
        let what = if mode == "nexthop" {
            "route to one next hop, no group (the routing cost the modes add to)".to_string()
        } else {
            format!(
                "mode {mode}, {:+.1} ns over routing to one next hop (cost.route_nexthop)",
                v - nh
            )
        };
        records.push(Record::against(
            format!("cost.route_{mode}.ns_per_pkt"),
            v,
            "ns/pkt",
            ("cost.bare_lb.ns_per_pkt", bare),
            m,
            format!("{what}; {note}"),
        ));
    }
    for &mode in &variants {
        let v = median(&rep[&format!("route_{mode}_newflow")]);
        let what = if mode == "nexthop" {
            "route to one next hop, no group".to_string()
        } else {
            format!("mode {mode}")
        };
        records.push(Record::against(
            format!("cost.route_{mode}_newflow.ns_per_pkt"),
            v,
            "ns/pkt",
            ("cost.bare_1run.ns_per_pkt", bare1),
            m,
            format!("{what}; {note1}"),
        ));
    }
    println!("\n(b) per-packet cost, BPF_PROG_TEST_RUN, 64-byte RoCEv2 frame routed via a 4-member group");
    println!(
        "{:<40} {:>10} {:>8} {:>12}   baseline",
        "figure", "ns/pkt", "ratio", "vs nexthop"
    );
    let nh1 = median(&rep["route_nexthop_newflow"]);
    for r in &records {
        let extra = if r.figure.starts_with("cost.route_") && !r.figure.contains("nexthop") {
            let base = if r.figure.contains("_newflow") {
                nh1
            } else {
                nh
            };
            format!("{:+.1}", r.value - base)
        } else {
            "-".into()
        };
        println!(
            "{:<40} {:>10.1} {:>8} {:>12}   {}",
            r.figure,
            r.value,
            r.ratio
                .map(|x| format!("{x:.2}x"))
                .unwrap_or_else(|| "-".into()),
            extra,
            r.baseline.clone().unwrap_or_else(|| "(baseline)".into())
        );
    }
    Ok(records)
}

fn main() -> Result<()> {
    let args = Args::parse();
    // SIGINT / SIGTERM: the run stops and tears down
    install_interrupt_handler();
    if args.quality_only && args.cost_only {
        bail!("--quality-only and --cost-only exclude each other");
    }
    if args.seconds.is_nan() || args.seconds <= 0.0 {
        bail!("--seconds must be > 0");
    }
    let m = machine();
    let mut records = Vec::new();
    if !args.cost_only {
        records.extend(quality(&args, &m)?);
    }
    if !args.quality_only {
        records.extend(cost(&args, &m)?);
    }
    println!("machine: {m}");
    merge_results(&args.paths.out, &records)?;
    println!("written to {}", args.paths.out.display());
    Ok(())
}
