//! `dataplane-fwdbench`: forwarding throughput through a switch network
//! namespace, our pipeline against the Linux kernel's multipath routing and
//! against the physical limit (a minimal XDP forwarder), on the same veth
//! topology in the same run.
//!
//! ```text
//!  gen ns          sw ns                          sink ns
//!  g0 ───────── sw0   (198.18.2.0/24 over) up1 ───────── s1  xdp_bench_sink
//!                                          up2 ───────── s2  xdp_bench_sink
//! ```
//!
//! * Generator: `xdp_bench_tx` (returns XDP_TX) run by BPF_PROG_RUN in
//!   live-frames mode with g0 as the ingress interface, so every run sends
//!   its frame out of g0 to sw0; small calls in a loop (a huge repeat per
//!   call starves NAPI and the figure means nothing). Each call sends one of
//!   eight RoCEv2 flows (distinct UDP source port and destination QP, as
//!   NICs do per QP), 64 bytes on the wire, rotating. Two kernel behaviours
//!   (6.18) shape it:
//!   - a call recycles its pages without restoring their contents, and the
//!     veth path hands the same page to sw and the sink, so once a page has
//!     been forwarded it carries the next-hop MAC and a lower TTL; frames
//!     beyond the first batch of a call are then dropped by sw as not for
//!     it (measured: exactly 25% delivered with batch 64, repeat 256, for
//!     either forwarder). Hence one batch per call: repeat = batch = 64 by
//!     default (each call creates a fresh page pool);
//!   - BPF_PROG_RUN of an XDP program that is attached nowhere adds it to
//!     the kernel's XDP dispatcher and removes it afterwards, each with a
//!     synchronize_rcu (~24 ms per call here). The generator's program is
//!     therefore kept attached to a veth pair in gen that stays down.
//!
//!   "Offered" is what the generator pushed; the veth counters on g0 show
//!   how much of it sw0's ring took (the rest: ring full).
//! * Sink: `xdp_bench_sink` on s1 and s2 (its own object per interface, so
//!   the split over the uplinks is visible), counting and dropping.
//! * Linux: `ip_forward`, a two-way multipath route with static neighbours,
//!   `fib_multipath_hash_policy=1` (L4 hash), GRO on sw0, no XDP in sw.
//! * Limit: `xdp_bench_forward` on sw0: an IPv4 EtherType check, the MAC
//!   rewrite and a devmap redirect to up1; the least an XDP forwarder does
//!   here, so `fwd.pipeline_pps / fwd.limit_pps` is the share of the
//!   machine's forwarding capacity the pipeline keeps.
//! * Pipeline: the `dataplane` controller (`up`) attaches `xdp_forward` to
//!   sw0, up1, up2 with a hash group of the two uplinks; kernel forwarding
//!   is switched off for that phase so nothing the pipeline passes up can
//!   be forwarded by Linux and counted as ours.
//!
//! Each forwarder runs for a warm-up, then `--seconds`; the sink counters
//! (summed over CPUs) before and after give delivered packets per second.
//! Figures merged into `--out`: `fwd.linux_pps`, `fwd.limit_pps` (baseline
//! linux), `fwd.pipeline_pps` (baseline linux) and
//! `fwd.pipeline_of_limit` (pipeline / limit, same run).
//!
//! `--pfc-tx dataplane|userspace` gives the switch a lossless configuration
//! (`[buffer]` with that `pfc_tx`, `pfc_enable = "3"` on every port, a DSCP
//! map that keeps the generated DSCP 26 in lossy TC 0, so frames take the
//! plain forward path and no PFC frame is ever decided). With `dataplane`
//! every `TX_PORTS` entry carries `xdp_devmap_pfc`, which then runs on every
//! redirected frame; with `userspace` none does. The pipeline's figures get
//! the suffix `_pfc_<path>` (`fwd.pipeline_pps_pfc_dataplane`, ...); the
//! default `none` is the configuration without `[buffer]`, where the
//! controller still picks the data plane's PFC path (`pfc_tx` defaults to
//! "auto"), so its `TX_PORTS` carry `xdp_devmap_pfc` too.

use dataplane_common::names;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;
use dataplane_user::sys;
use testbed::bench::{machine, merge_results, BenchPaths, Record};
use testbed::config_text::mac_str as mac;
use testbed::controller::Controller;
use testbed::fabric::{check_interrupt, install_interrupt_handler};
use testbed::netns::{veth, Netns};
use testbed::progstats::{self, RunStats};

mod rig;
use rig::{Generator, Limit, Sink};

#[derive(Parser)]
#[command(
    name = "dataplane-fwdbench",
    about = "Forwarding throughput: XDP pipeline vs Linux multipath routing"
)]
struct Args {
    #[command(flatten)]
    paths: BenchPaths,
    /// Measured duration per forwarder, seconds.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
    /// Warm-up before each measurement, seconds.
    #[arg(long, default_value_t = 0.5)]
    warmup: f64,
    /// Frames per BPF_PROG_RUN call. Keep it <= --batch: the kernel
    /// recycles a call's pages without restoring their contents, so with
    /// more frames than one batch, later frames carry the forwarder's
    /// rewrites (next-hop MAC, lower TTL) and sw drops them as not for it.
    #[arg(long, default_value_t = 64)]
    repeat: u32,
    /// Frames per live-frames batch (at most 256).
    #[arg(long, default_value_t = 64)]
    batch: u32,
    /// Lossless configuration of the switch: none (no `[buffer]`), or
    /// `[buffer] pfc_tx` = dataplane | userspace (see the module doc).
    #[arg(long, value_enum, default_value_t = PfcTx::None)]
    pfc_tx: PfcTx,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum PfcTx {
    None,
    Dataplane,
    Userspace,
}

impl PfcTx {
    /// The `[buffer] pfc_tx` value, none for `None`.
    fn path(self) -> Option<&'static str> {
        match self {
            PfcTx::None => None,
            PfcTx::Dataplane => Some("dataplane"),
            PfcTx::Userspace => Some("userspace"),
        }
    }

    /// The suffix of the pipeline's figure names.
    fn suffix(self) -> String {
        self.path().map(|p| format!("_pfc_{p}")).unwrap_or_default()
    }

    /// `[buffer]` with the DSCP map, and each port's lines (empty for
    /// `None`). DSCP 26 (the generator's) falls in TC 0, lossy.
    fn config(self) -> (String, &'static str) {
        let Some(path) = self.path() else {
            return (String::new(), "");
        };
        (
            format!(
                "[dscp_to_tc_map.BENCH]\ndefault = 0\n\"3\" = 3\n\n\
                 [buffer]\npool_size = 16777216\npfc_tx = \"{path}\"\n\n"
            ),
            "dscp_to_tc_map = \"BENCH\"\npfc_enable = \"3\"\n",
        )
    }
}

/// The minimal forwarder's program.
const LIMIT_PROG: &str = "xdp_bench_forward";
/// The pipeline's programs with statistics of their own: the ingress
/// program (its time includes the stages it tail-calls, the egress stage
/// among them) and the devmap program run on each redirected frame.
const PIPELINE_PROGS: [&str; 2] = [names::prog::XDP_FORWARD, "xdp_devmap_pfc"];

/// Flows (RoCEv2 QPs, each with its own UDP source port).
const FLOWS: u16 = 8;
/// Frame length without FCS: 64 bytes on the wire.
const FRAME_LEN: usize = 60;

const MAC_G0: [u8; 6] = [0x02, 0, 0, 0x18, 0x00, 0x01];
const MAC_SW0: [u8; 6] = [0x02, 0, 0, 0x18, 0x00, 0xfe];
const MAC_G1: [u8; 6] = [0x02, 0, 0, 0x18, 0x04, 0x01];
const MAC_SW1: [u8; 6] = [0x02, 0, 0, 0x18, 0x04, 0xfe];
const MAC_UP1: [u8; 6] = [0x02, 0, 0, 0x18, 0x01, 0xfe];
const MAC_S1: [u8; 6] = [0x02, 0, 0, 0x18, 0x01, 0x01];
const MAC_UP2: [u8; 6] = [0x02, 0, 0, 0x18, 0x03, 0xfe];
const MAC_S2: [u8; 6] = [0x02, 0, 0, 0x18, 0x03, 0x01];
const SRC: [u8; 4] = [198, 18, 0, 1];
const DST: [u8; 4] = [198, 18, 2, 1];
const PREFIX: &str = "198.18.2.0/24";
const NH1: &str = "198.18.1.1";
const NH2: &str = "198.18.3.1";

/// What one forwarder did in the measured window.
struct Measure {
    offered: u64,
    offered_secs: f64,
    /// Delivered per sink.
    delivered: Vec<u64>,
    secs: f64,
    /// Frames g0 put into sw0's receive ring, and frames refused because
    /// the ring was full (veth's peer_tq_xdp_xmit / _err, read on g0).
    accepted: u64,
    refused: u64,
    /// The kernel's run-time statistics of the forwarder's programs over
    /// the window (`progstats`), by program name.
    progs: Vec<(&'static str, RunStats)>,
}

impl Measure {
    fn offered_pps(&self) -> f64 {
        self.offered as f64 / self.offered_secs
    }
    fn total(&self) -> u64 {
        self.delivered.iter().sum()
    }
    fn pps(&self) -> f64 {
        self.total() as f64 / self.secs
    }
}

/// (frames put into the peer's XDP ring, frames refused: ring full) of a
/// veth, from `ethtool -S` in its namespace.
fn xdp_xmit(ns: &Netns, dev: &str) -> Result<(u64, u64)> {
    let out = ns.exec(&["ethtool", "-S", dev])?;
    let get = |key: &str| {
        out.lines()
            .filter_map(|l| l.trim().split_once(':'))
            .filter(|(k, _)| k.trim() == key)
            .filter_map(|(_, v)| v.trim().parse::<u64>().ok())
            .sum::<u64>()
    };
    Ok((
        get("tx_queue_0_xdp_xmit"),
        get("tx_queue_0_xdp_xmit_errors"),
    ))
}

fn read_sinks(sinks: &[Sink]) -> Result<Vec<u64>> {
    sinks.iter().map(Sink::frames).collect()
}

/// Both generators at once, each thread pinned to its own CPU (a veth
/// delivers on the sending CPU, so the forwarding runs there too): warm-up,
/// then the measured window.
fn measure_2cpu(
    gen_ns: &Netns,
    generators: [&Generator; 2],
    sinks: &[Sink],
    args: &Args,
) -> Result<Measure> {
    let run_both = |secs: f64| -> Result<Vec<(u64, Duration)>> {
        std::thread::scope(|s| {
            let handles: Vec<_> = generators
                .iter()
                .enumerate()
                .map(|(cpu, g)| s.spawn(move || run_on_cpu(cpu, gen_ns, g, secs)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().map_err(|_| anyhow!("generator thread panicked"))?)
                .collect()
        })
    };
    eprintln!("[pipeline 2 CPUs] warm-up {:.1} s", args.warmup);
    run_both(args.warmup)?;
    let xmit = |dev| xdp_xmit(gen_ns, dev);
    let (a0, b0) = (xmit("g0")?, xmit("g1")?);
    let before = read_sinks(sinks)?;
    let t0 = Instant::now();
    eprintln!("[pipeline 2 CPUs] measuring {:.1} s", args.seconds);
    let runs = run_both(args.seconds)?;
    let after = read_sinks(sinks)?;
    let secs = t0.elapsed().as_secs_f64();
    let (a1, b1) = (xmit("g0")?, xmit("g1")?);
    let m = Measure {
        offered: runs.iter().map(|r| r.0).sum(),
        offered_secs: runs.iter().map(|r| r.1.as_secs_f64()).fold(0.0, f64::max),
        delivered: after.iter().zip(&before).map(|(a, b)| a - b).collect(),
        secs,
        accepted: (a1.0 - a0.0) + (b1.0 - b0.0),
        refused: (a1.1 - a0.1) + (b1.1 - b0.1),
        progs: Vec::new(),
    };
    eprintln!(
        "[pipeline 2 CPUs] offered {:.3} Mpps, delivered {:.3} Mpps",
        m.offered_pps() / 1e6,
        m.pps() / 1e6
    );
    Ok(m)
}

/// Runs `generator` for `secs` on a thread pinned to CPU 0 in its
/// namespace: a veth delivers on the sending CPU, so the forwarding runs
/// there too, and an unpinned generator moved it (and the one-CPU figures,
/// by up to 2x from run to run) between the CPUs.
fn run_pinned(gen_ns: &Netns, generator: &Generator, secs: f64) -> Result<(u64, Duration)> {
    std::thread::scope(|s| {
        s.spawn(|| run_on_cpu(0, gen_ns, generator, secs))
            .join()
            .map_err(|_| anyhow!("generator thread panicked"))?
    })
}

/// Runs `generator` for `secs` on this thread, pinned to `cpu`, in its
/// namespace.
fn run_on_cpu(
    cpu: usize,
    gen_ns: &Netns,
    generator: &Generator,
    secs: f64,
) -> Result<(u64, Duration)> {
    testbed::bench::pin_to_cpu(cpu)?;
    let _in = gen_ns.enter()?;
    generator.run(Duration::from_secs_f64(secs))
}

/// The run-time statistics of each of `progs` (a name and the ids loaded
/// under it).
fn prog_stats(progs: &[(&'static str, Vec<u32>)]) -> Result<Vec<(&'static str, RunStats)>> {
    progs
        .iter()
        .map(|(name, ids)| Ok((*name, progstats::read(ids)?)))
        .collect()
}

/// Warm-up, then the measured window; `progs`: the forwarder's programs
/// whose kernel statistics the window records.
fn measure(
    label: &str,
    gen_ns: &Netns,
    generator: &Generator,
    sinks: &[Sink],
    args: &Args,
    progs: &[(&'static str, Vec<u32>)],
) -> Result<Measure> {
    let _in = gen_ns.enter()?;
    eprintln!("[{label}] warm-up {:.1} s", args.warmup);
    run_pinned(gen_ns, generator, args.warmup)?;
    let x0 = xdp_xmit(gen_ns, "g0")?;
    let before = read_sinks(sinks)?;
    let p0 = prog_stats(progs)?;
    let t0 = Instant::now();
    eprintln!("[{label}] measuring {:.1} s", args.seconds);
    let (offered, took) = run_pinned(gen_ns, generator, args.seconds)?;
    let p1 = prog_stats(progs)?;
    let after = read_sinks(sinks)?;
    let secs = t0.elapsed().as_secs_f64();
    let x1 = xdp_xmit(gen_ns, "g0")?;
    let delivered: Vec<u64> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    let m = Measure {
        offered,
        offered_secs: took.as_secs_f64(),
        delivered,
        secs,
        accepted: x1.0 - x0.0,
        refused: x1.1 - x0.1,
        progs: p1
            .iter()
            .zip(&p0)
            .map(|((name, a), (_, b))| (*name, a.since(b)))
            .collect(),
    };
    for (name, r) in &m.progs {
        eprintln!(
            "[{label}] {name}: {} runs, {:.1} ns a run (the kernel's run-time statistics)",
            r.runs,
            r.ns_per_run().unwrap_or(f64::NAN)
        );
    }
    let split: Vec<String> = sinks
        .iter()
        .zip(&m.delivered)
        .map(|(s, d)| format!("{} {d}", s.name))
        .collect();
    eprintln!(
        "[{label}] offered {:.3} Mpps ({} frames: {} into sw0's ring, {} refused, ring full), delivered {:.3} Mpps ({})",
        m.offered_pps() / 1e6,
        m.offered,
        m.accepted,
        m.refused,
        m.pps() / 1e6,
        split.join(", ")
    );
    let total = m.total();
    for (s, d) in sinks.iter().zip(&m.delivered) {
        if total > 0 && (*d as f64) < 0.1 * total as f64 {
            eprintln!(
                "[{label}] WARNING: only {d} of {total} frames left by {}'s uplink: the {FLOWS} flows were not spread over both uplinks",
                s.name
            );
        }
    }
    Ok(m)
}

fn pipeline_config(instance: &str, pfc_tx: PfcTx) -> String {
    let (lossless, port) = pfc_tx.config();
    format!(
        r#"[switch]
name = "{instance}"
# fixed, so the split of the flows over the uplinks is the same every run
hash_seed = 7

{lossless}[[port]]
name = "sw0"
mac = "{sw0}"
{port}[[port]]
name = "sw1"
mac = "{sw1}"
{port}[[port]]
name = "up1"
mac = "{up1}"
{port}[[port]]
name = "up2"
mac = "{up2}"
{port}
[[nexthop]]
name = "s1"
port = "up1"
mac = "{s1}"
[[nexthop]]
name = "s2"
port = "up2"
mac = "{s2}"

[[group]]
name = "uplinks"
mode = "hash"
members = [{{ nexthop = "s1" }}, {{ nexthop = "s2" }}]

[[route]]
prefix = "{PREFIX}"
group = "uplinks"
"#,
        sw0 = mac(MAC_SW0),
        sw1 = mac(MAC_SW1),
        up1 = mac(MAC_UP1),
        up2 = mac(MAC_UP2),
        s1 = mac(MAC_S1),
        s2 = mac(MAC_S2),
    )
}

/// The pipeline's forwarding counters (cumulative since `up`), for the
/// progress output: what sw0 routed, passed up or dropped.
fn pipeline_counters(bin: &Path, ns: &Netns, instance: &str) -> Result<String> {
    let v = testbed::controller::stats_json(bin, &ns.name, instance)?;
    let mut parts = Vec::new();
    for p in v["ports"].as_array().into_iter().flatten() {
        let name = p["name"].as_str().unwrap_or("?");
        let Some(c) = p["counters"].as_object() else {
            continue;
        };
        let mut tx = 0u64;
        let mut items = Vec::new();
        for (k, val) in c {
            let n = val.as_u64().unwrap_or(0);
            if k.starts_with("tx_tc_pkts") {
                tx += n;
            } else if n > 0
                && (k == "rx_routed"
                    || k.starts_with("pass_")
                    || k.starts_with("drop_")
                    || k.starts_with("verdict_")
                    || k.starts_with("malformed"))
            {
                items.push(format!("{k}={n}"));
            }
        }
        if tx > 0 {
            items.push(format!("tx_pkts={tx}"));
        }
        if !items.is_empty() {
            parts.push(format!("{name}: {}", items.join(" ")));
        }
    }
    Ok(parts.join("; "))
}

fn main() -> Result<()> {
    let args = Args::parse();
    // SIGINT / SIGTERM: the run stops and tears down
    install_interrupt_handler();
    if !(args.seconds > 0.0 && args.warmup >= 0.0) {
        bail!("--seconds must be > 0 and --warmup >= 0");
    }
    if args.batch == 0 || args.batch > 256 || args.repeat == 0 {
        bail!("--batch must be 1-256 and --repeat at least 1");
    }
    if args.repeat > args.batch {
        eprintln!(
            "WARNING: --repeat {} > --batch {}: recycled frames carry the forwarder's rewrites and most are dropped \
             as not for sw; the figures will not mean forwarding capacity",
            args.repeat, args.batch
        );
    }
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let loadavg: String = loadavg
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    if !args.paths.dataplane.exists() {
        bail!("no controller binary at {} (cargo build --release -p dataplane-user --bin dataplane, or give --dataplane)", args.paths.dataplane.display());
    }

    eprintln!("setting up namespaces gen - sw - sink");
    let gen = Netns::create("fwdg")?;
    let sw = Netns::create("fwds")?;
    let sink = Netns::create("fwdk")?;
    // no IPv6: no router solicitations or MLD reports counted as traffic
    for ns in [&gen, &sw, &sink] {
        ns.disable_ipv6()?;
    }
    veth(&gen, "g0", &mac(MAC_G0), &sw, "sw0", &mac(MAC_SW0))?;
    veth(&gen, "g1", &mac(MAC_G1), &sw, "sw1", &mac(MAC_SW1))?;
    veth(&sw, "up1", &mac(MAC_UP1), &sink, "s1", &mac(MAC_S1))?;
    veth(&sw, "up2", &mac(MAC_UP2), &sink, "s2", &mac(MAC_S2))?;
    // GRO on sw0 is what lets the kernel take XDP frames from g0 without an
    // XDP program on sw0; veth() asks for it best effort, so insist here.
    sw.exec(&["ethtool", "-K", "sw0", "gro", "on"])
        .context("GRO on sw0")?;
    sw.ip(&["addr", "add", "198.18.0.254/24", "dev", "sw0"])?;
    sw.ip(&["addr", "add", "198.18.1.254/24", "dev", "up1"])?;
    sw.ip(&["addr", "add", "198.18.3.254/24", "dev", "up2"])?;
    sw.ip(&[
        "neigh",
        "add",
        NH1,
        "lladdr",
        &mac(MAC_S1),
        "dev",
        "up1",
        "nud",
        "permanent",
    ])?;
    sw.ip(&[
        "neigh",
        "add",
        NH2,
        "lladdr",
        &mac(MAC_S2),
        "dev",
        "up2",
        "nud",
        "permanent",
    ])?;
    sw.ip(&[
        "route", "add", PREFIX, "nexthop", "via", NH1, "dev", "up1", "nexthop", "via", NH2, "dev",
        "up2",
    ])?;
    sw.exec(&["sysctl", "-qw", "net.ipv4.fib_multipath_hash_policy=1"])?;

    // a veth pair that stays down: the generator program's parking place
    gen.ip(&["link", "add", "gq0", "type", "veth", "peer", "name", "gq1"])?;
    gen.ip(&["link", "add", "gq2", "type", "veth", "peer", "name", "gq3"])?;
    eprintln!("loading the generator and the sinks");
    let generator = Generator::new(
        &gen,
        ("g0", MAC_G0, MAC_SW0),
        "gq0",
        args.repeat,
        args.batch,
    )?;
    // the second CPU's generator: g1 -> sw1
    let generator2 = Generator::new(
        &gen,
        ("g1", MAC_G1, MAC_SW1),
        "gq2",
        args.repeat,
        args.batch,
    )?;
    let sinks = vec![Sink::attach(&sink, "s1")?, Sink::attach(&sink, "s2")?];

    // Linux first: no XDP program in sw.
    sw.exec(&["sysctl", "-qw", "net.ipv4.ip_forward=1"])?;
    // the programs' own cost, free of the generator's share of the CPU
    let _stats = progstats::enable()?;
    let linux = measure("linux", &gen, &generator, &sinks, &args, &[])?;
    sw.exec(&["sysctl", "-qw", "net.ipv4.ip_forward=0"])?;

    // The limit: the minimal forwarder alone on sw0, kernel forwarding off.
    let limit = {
        let since = std::time::SystemTime::now();
        let _limit = Limit::attach(&sw)?;
        let progs = [(LIMIT_PROG, progstats::ids(LIMIT_PROG, since)?)];
        measure("limit", &gen, &generator, &sinks, &args, &progs)?
    };

    // Then the pipeline; the kernel no longer forwards, so only frames the
    // pipeline redirected reach the sinks.
    let instance = format!("fwdbench-{}", std::process::id());
    eprintln!(
        "[pipeline] starting {} in {}",
        args.paths.dataplane.display(),
        sw.name
    );
    let (pipeline, pipeline2, counters, pipe_total) = {
        let since = std::time::SystemTime::now();
        let ctl = Controller::start(
            &args.paths.dataplane,
            &sw,
            &instance,
            &pipeline_config(&instance, args.pfc_tx),
            "pipeline",
        )?;
        let progs: Vec<(&'static str, Vec<u32>)> = PIPELINE_PROGS
            .iter()
            .map(|&p| Ok((p, progstats::ids(p, since)?)))
            .collect::<Result<_>>()?;
        let start = read_sinks(&sinks)?;
        let m = measure("pipeline", &gen, &generator, &sinks, &args, &progs)?;
        let end = read_sinks(&sinks)?;
        let total: u64 = end.iter().zip(&start).map(|(a, b)| a - b).sum();
        let two = measure_2cpu(&gen, [&generator, &generator2], &sinks, &args)?;
        let counters = pipeline_counters(&args.paths.dataplane, &sw, &instance)
            .unwrap_or_else(|e| format!("unavailable: {e:#}"));
        let _ = ctl.drain("pipeline");
        (m, two, counters, total)
    };
    eprintln!("[pipeline] counters since up (warm-up included): {counters}");
    eprintln!("[pipeline] delivered to the sinks over the same period: {pipe_total}");
    if pipeline.total() == 0 {
        eprintln!(
            "[pipeline] nothing delivered: check the counters above (rx_routed on sw0, drop_*/pass_*), that s1/s2 \
             carry xdp_bench_sink and that the frames' destination MAC is sw0's ({})",
            mac(MAC_SW0)
        );
    }

    let ratio = if linux.pps() > 0.0 {
        Some(pipeline.pps() / linux.pps())
    } else {
        None
    };
    let note = format!(
        "gen ns -> sw ns (sw0 -> up1|up2, {PREFIX} over 2 next hops) -> sink ns (xdp_bench_sink on s1, s2); \
         {FLOWS} RoCEv2 flows (UDP source port and QP per flow), {} bytes on the wire; generator xdp_bench_tx via \
         BPF_PROG_RUN live frames (batch {}, {} frames per call, flows rotated per call); \
         {:.1} s measured after {:.1} s warm-up; delivered packets per second; generator, forwarder and sink \
         share the generating CPU (softirq); load average at start {loadavg}",
        FRAME_LEN + 4,
        args.batch,
        args.repeat,
        args.seconds,
        args.warmup
    );
    let note = match args.pfc_tx.path() {
        None => note,
        Some(p) => format!(
            "{note}; lossless config ([buffer] pfc_tx = \"{p}\", pfc_enable 3, traffic in lossy TC 0)"
        ),
    };
    let sfx = args.pfc_tx.suffix();
    let m = machine();
    let records = vec![
        Record {
            figure: "fwd.linux_pps".into(),
            value: linux.pps(),
            unit: "pps".into(),
            baseline: None,
            ratio: None,
            machine: m.clone(),
            note: Some(format!(
                "Linux ip_forward, multipath route, fib_multipath_hash_policy=1, static neighbours, GRO on sw0; offered {:.0} pps; {note}",
                linux.offered_pps()
            )),
        },
        Record {
            figure: "fwd.limit_pps".into(),
            value: limit.pps(),
            unit: "pps".into(),
            baseline: Some("fwd.linux_pps".into()),
            ratio: (linux.pps() > 0.0).then(|| limit.pps() / linux.pps()),
            machine: m.clone(),
            note: Some(format!(
                "the physical limit: xdp_bench_forward on sw0 (IPv4 EtherType check, MAC rewrite, devmap redirect to up1, \
                 one uplink); offered {:.0} pps; {note}",
                limit.offered_pps()
            )),
        },
        Record {
            figure: format!("fwd.pipeline_of_limit{sfx}"),
            value: if limit.pps() > 0.0 {
                pipeline.pps() / limit.pps()
            } else {
                0.0
            },
            unit: "ratio".into(),
            baseline: None,
            ratio: None,
            machine: m.clone(),
            note: Some(
                "fwd.pipeline_pps / fwd.limit_pps in the same run: the share of the minimal forwarder's rate the full pipeline keeps"
                    .into(),
            ),
        },
        Record {
            figure: format!("fwd.pipeline_pps_2cpu{sfx}"),
            value: pipeline2.pps(),
            unit: "pps".into(),
            baseline: Some(format!("fwd.pipeline_pps{sfx}")),
            ratio: (pipeline.pps() > 0.0).then(|| pipeline2.pps() / pipeline.pps()),
            machine: m.clone(),
            note: Some(format!(
                "the pipeline with traffic arriving on two CPUs: a generator thread pinned to each CPU, g0 -> sw0 and \
                 g1 -> sw1 (veth delivers on the sending CPU), both hashed over up1/up2; offered {:.0} pps; {note}",
                pipeline2.offered_pps()
            )),
        },
        Record {
            figure: format!("fwd.pipeline_pps{sfx}"),
            value: pipeline.pps(),
            unit: "pps".into(),
            baseline: Some("fwd.linux_pps".into()),
            ratio,
            machine: m.clone(),
            note: Some(format!(
                "xdp_forward via the dataplane controller, hash group of 2 next hops; offered {:.0} pps; {note}",
                pipeline.offered_pps()
            )),
        },
    ];

    let mut records = records;
    records.extend(prog_records(&limit, &pipeline, &sfx, &m, &note));

    println!(
        "{:<10} {:>14} {:>14} {:>9} {:>10} {:>10} {:>8}",
        "forwarder", "offered pps", "delivered pps", "delivered", "s1", "s2", "vs linux"
    );
    for (name, x) in [
        ("linux", &linux),
        ("limit", &limit),
        ("pipeline", &pipeline),
        ("pipe 2cpu", &pipeline2),
    ] {
        let vs = if linux.pps() > 0.0 {
            format!("{:.2}x", x.pps() / linux.pps())
        } else {
            "-".into()
        };
        println!(
            "{:<10} {:>14.0} {:>14.0} {:>8.1}% {:>10} {:>10} {:>8}",
            name,
            x.offered_pps(),
            x.pps(),
            if x.offered > 0 {
                100.0 * x.total() as f64 / x.offered as f64
            } else {
                0.0
            },
            x.delivered[0],
            x.delivered[1],
            vs
        );
    }
    println!(
        "{} bytes on the wire, {FLOWS} flows, {:.1} s each after {:.1} s warm-up",
        FRAME_LEN + 4,
        args.seconds,
        args.warmup
    );
    println!("machine: {m}; load average at start {loadavg}");
    merge_results(&args.paths.out, &records)?;
    println!("written to {}", args.paths.out.display());

    // teardown: sinks and generator unload (bpf_link fds), then the
    // namespaces go (guards, reverse order)
    drop(sinks);
    drop(generator);
    Ok(())
}

/// `fwd.prog_ns.<program>`: each program's own ns a run over the measured
/// window, the pipeline's against the minimal forwarder's in the same run.
fn prog_records(
    limit: &Measure,
    pipeline: &Measure,
    sfx: &str,
    m: &str,
    note: &str,
) -> Vec<Record> {
    let base_name = format!("fwd.prog_ns.{LIMIT_PROG}");
    let Some(base) = limit.progs.first().and_then(|(_, r)| r.ns_per_run()) else {
        eprintln!("[limit] no run-time statistics for {LIMIT_PROG}: no fwd.prog_ns figures");
        return Vec::new();
    };
    let how = "the kernel's run-time statistics (BPF_ENABLE_STATS): run_time_ns / run_cnt over the measured window";
    let mut out = vec![Record::new(
        base_name.clone(),
        base,
        "ns",
        m,
        format!(
            "{how}, the minimal forwarder ({} runs); {note}",
            limit.progs[0].1.runs
        ),
    )];
    for (name, r) in &pipeline.progs {
        let Some(ns) = r.ns_per_run() else {
            eprintln!("[pipeline] {name} did not run: no figure");
            continue;
        };
        out.push(Record::against(
            format!("fwd.prog_ns.{name}{sfx}"),
            ns,
            "ns",
            (&base_name, base),
            m,
            format!("{how} ({} runs; the ingress program's time includes the stages it tail-calls); {note}", r.runs),
        ));
    }
    out
}
