//! `dataplane-sim`: runs a scenario (TOML file and/or options) once per LB
//! mode, prints a summary, writes report.json and SVG plots.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Parser;
use dataplane_sim::{output, run_threads, Report, Scenario};

#[derive(Parser, Debug)]
#[command(
    name = "dataplane-sim",
    about = "Fabric simulator running the data plane's decision functions"
)]
struct Cli {
    /// Write the man page and shell completions into DIR, then exit.
    #[arg(long, hide = true, value_name = "DIR")]
    generate_docs: Option<PathBuf>,
    /// Scenario file (TOML, keys as the long options); options override it.
    #[arg(long)]
    scenario: Option<PathBuf>,
    /// leafspine:LxS[:H], clos3:K, rail:N[:S].
    #[arg(long)]
    topology: Option<String>,
    /// 100G, 200G, 400G, 800G.
    #[arg(long)]
    speed: Option<String>,
    /// Host links; default --speed.
    #[arg(long)]
    host_speed: Option<String>,
    #[arg(long)]
    link_delay: Option<String>,
    #[arg(long)]
    mtu: Option<u32>,
    /// Buffer per switch (e.g. 32MB).
    #[arg(long)]
    buffer: Option<String>,
    /// Shared pool per switch (default: buffer less headroom).
    #[arg(long)]
    pool: Option<String>,
    /// Headroom per lossless PG (default: SONiC's formula).
    #[arg(long)]
    headroom: Option<String>,
    #[arg(long, allow_hyphen_values = true)]
    dynamic_th: Option<i8>,
    #[arg(long, allow_hyphen_values = true)]
    lossy_dynamic_th: Option<i8>,
    /// DCQCN (paper or mlx) scaled to the host rate (the testbed's NICs).
    #[arg(long)]
    dcqcn_scaled: bool,
    /// Every flow with this UDP source port (low entropy).
    #[arg(long)]
    single_sport: Option<u16>,
    /// Packets a QP may have unacknowledged (0: no limit).
    #[arg(long)]
    window: Option<u32>,
    /// PFC on the RoCE class: on or off.
    #[arg(long)]
    pfc: Option<String>,
    /// ECN marking: on or off.
    #[arg(long)]
    ecn: Option<String>,
    /// dcqcn, mlx or none.
    #[arg(long)]
    cc: Option<String>,
    /// Comma list of hash, flowlet, bandwidth, spray, place (one run each).
    #[arg(long)]
    lb: Option<String>,
    #[arg(long)]
    flowlet_timeout: Option<String>,
    /// websearch, hadoop, allreduce, halving-doubling, alltoall, incast,
    /// permutation.
    #[arg(long)]
    workload: Option<String>,
    #[arg(long)]
    load: Option<f64>,
    /// Message size of collectives / incast / permutation.
    #[arg(long)]
    size: Option<String>,
    #[arg(long)]
    fanin: Option<u32>,
    #[arg(long)]
    ranks: Option<u32>,
    #[arg(long)]
    duration: Option<String>,
    /// Run until every flow completed (at most --max-time).
    #[arg(long)]
    drain: bool,
    #[arg(long)]
    max_time: Option<String>,
    #[arg(long)]
    seed: Option<u64>,
    #[arg(long)]
    kmin: Option<String>,
    #[arg(long)]
    kmax: Option<String>,
    #[arg(long)]
    pmax: Option<u8>,
    #[arg(long)]
    ack_every: Option<u32>,
    /// Receiver ACK after this idle time (e.g. 1ms; default none).
    #[arg(long)]
    ack_delay: Option<String>,
    #[arg(long)]
    rto: Option<String>,
    /// Output directory (report.json, *.svg).
    #[arg(long)]
    out: Option<PathBuf>,
    /// A collective step starts this long after the flow it waits for
    /// (e.g. 1us; default at once).
    #[arg(long)]
    dep_delay: Option<String>,
    /// Receivers: rc (go-back-N, the default) or ooo (out-of-order
    /// placement, as NICs with direct data placement and UET).
    #[arg(long)]
    receiver: Option<String>,
    /// Write the balancer's trace (lb_trace_<mode>.csv in --out).
    #[arg(long)]
    trace_lb: bool,
    /// Place mode's far view, a study: oracle:DELAY (the next switch's
    /// queue toward the destination, read at most DELAY ago: the most
    /// feedback could tell) or notify (a switch whose queue reached the ECN
    /// threshold tells the switch upstream); needs --partitions 1
    #[arg(long)]
    far_view: Option<String>,
    /// Partitions run side by side (1: serial; the result depends on it).
    #[arg(long)]
    partitions: Option<u32>,
    /// Threads that run the partitions (0: every core; the result does
    /// not depend on it).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// No progress line.
    #[arg(long)]
    quiet: bool,
    /// Merge `sim.*` figures of this run into a bench results file, under
    /// this name prefix (e.g. `websearch_1024`).
    #[arg(long, requires = "bench_out")]
    bench_name: Option<String>,
    #[arg(long)]
    bench_out: Option<PathBuf>,
    /// Run it this many times and record the median CPU and wall time
    /// (the spread in the record's note).
    #[arg(long, default_value_t = 1, requires = "bench_name")]
    bench_repeat: usize,
}

fn on_off(field: &str, v: &str) -> Result<bool> {
    match v {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        o => anyhow::bail!("{field}: {o:?} (expected on or off)"),
    }
}

fn scenario(c: &Cli) -> Result<Scenario> {
    let mut s = match &c.scenario {
        Some(p) => {
            let t =
                std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            toml::from_str(&t).with_context(|| format!("scenario {}", p.display()))?
        }
        None => Scenario::default(),
    };
    macro_rules! set {
        ($($f:ident),*) => { $( if let Some(v) = &c.$f { s.$f = v.clone(); } )* };
    }
    set!(
        topology,
        speed,
        link_delay,
        mtu,
        buffer,
        cc,
        lb,
        flowlet_timeout,
        workload,
        load,
        size,
        fanin,
        ranks,
        duration,
        max_time,
        seed,
        kmin,
        kmax,
        pmax,
        ack_every,
        ack_delay,
        rto,
        dep_delay,
        partitions,
        receiver,
        far_view
    );
    s.trace_lb |= c.trace_lb;
    if let Some(v) = &c.pfc {
        s.pfc = on_off("pfc", v)?;
    }
    if let Some(v) = &c.ecn {
        s.ecn = on_off("ecn", v)?;
    }
    s.drain |= c.drain;
    s.dcqcn_scaled |= c.dcqcn_scaled;
    Ok(s)
}

fn summary(r: &Report) {
    println!(
        "[{}] sim {:.3} ms in {:.2} s wall ({} events, {:.2} M/s); flows {}/{}; \
         FCT slowdown mean {:.2} p50 {:.2} p99 {:.2} p99.9 {:.2}; JCT {:.3} ms ({:.2}x ideal {:.3} ms); \
         uplink util mean {:.1}% min {:.1}% max {:.1}%, busy {:.1}% (min {:.1}%); \
         busiest uplink's excess flows per step {:.2} (max {}); moves {}; PFC frames {} paused {:.1} us; \
         ECN marks {}; CNPs {}; drops {} (lossless {}); retx {} B, NAKs {}, timeouts {} ({} receivers)",
        r.lb,
        r.sim_time_ns as f64 / 1e6,
        r.wall_s,
        r.events,
        r.events_per_s / 1e6,
        r.flows_completed,
        r.flows_total,
        r.fct_slowdown.mean,
        r.fct_slowdown.p50,
        r.fct_slowdown.p99,
        r.fct_slowdown.p999,
        r.jct_ns as f64 / 1e6,
        r.jct_vs_ideal,
        r.ideal_jct_ns as f64 / 1e6,
        r.uplink_util.mean * 100.0,
        r.uplink_util.min * 100.0,
        r.uplink_util.max * 100.0,
        r.uplink_busy_util.mean * 100.0,
        r.uplink_busy_util.min * 100.0,
        r.step_flows.excess_mean,
        r.step_flows.excess_max,
        r.lb_moves,
        r.pfc_frames,
        r.pfc_paused_ns as f64 / 1e3,
        r.ecn_marked,
        r.cnp_sent,
        r.drops,
        r.drops_lossless,
        r.retx_payload,
        r.naks,
        r.timeouts,
        r.receiver
    );
}

/// CPU seconds (user + system, every thread) this process used so far:
/// the kernel's process CPU clock, to the nanosecond (`/proc`'s counters
/// come in 10 ms ticks, 2 % of a 0.5 s run).
fn cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to fill
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Peak resident set of this process (KiB), from /proc.
fn peak_rss_kib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    l.split_whitespace().nth(1)?.parse().ok()
}

fn bench(c: &Cli, sc: &Scenario, name: &str, runs: &[Report], times: &[(f64, f64)]) -> Result<()> {
    let (cpu, cpu_spread) = median(times.iter().map(|t| t.0).collect());
    let (wall, _) = median(times.iter().map(|t| t.1).collect());
    let path = c.bench_out.as_ref().expect("clap requires it");
    let r = &runs[0];
    let machine = bench_results::machine();
    let rec = |figure: String, value: f64, unit: &str, note: String| {
        serde_json::json!({"figure": figure, "value": value, "unit": unit,
            "baseline": null, "ratio": null, "machine": machine, "note": note})
    };
    let parts = sc.partitions;
    let threads = match c.threads {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        t => t,
    }
    .clamp(1, parts as usize);
    let note = format!(
        "dataplane-sim {}, {parts} partition(s) on {threads} thread(s), {} events over {:.3} ms \
         simulated in {:.1} s wall, {:.2} s CPU ({cpu_spread}; the machine is shared: per CPU \
         second is the one-core rate)",
        r.lb,
        r.events,
        r.sim_time_ns as f64 / 1e6,
        wall,
        cpu
    );
    let per_cpu = r.events as f64 / cpu.max(0.01);
    let rss = peak_rss_kib().unwrap_or(0.0) / 1024.0;
    let mut new = vec![
        rec(format!("sim.{name}_wall_s"), wall, "s", note.clone()),
        rec(format!("sim.{name}_cpu_s"), cpu, "s", note.clone()),
        rec(
            format!("sim.{name}_events_per_cpu_s"),
            per_cpu,
            "events/s",
            note.clone(),
        ),
        rec(
            format!("sim.{name}_events_per_wall_s"),
            r.events as f64 / wall.max(1e-9),
            "events/s",
            note.clone(),
        ),
        rec(format!("sim.{name}_peak_rss_mib"), rss, "MiB", note.clone()),
    ];
    if name == "events" {
        new.push(rec("sim.events_per_s".into(), per_cpu, "events/s", note));
    }
    bench_results::merge_values(path, new)
}

fn main() -> Result<()> {
    let c = Cli::parse();
    if let Some(dir) = &c.generate_docs {
        use clap::CommandFactory;
        return cli_docs::generate(Cli::command(), dir);
    }
    let sc = scenario(&c)?;
    #[cfg(feature = "mpi")]
    if dataplane_sim::mpi::launched() {
        return mpi_main(&c, &sc);
    }
    let mut runs = Vec::new();
    // per repetition (a bench's): CPU and wall seconds
    let mut times = Vec::new();
    for rep in 0..c.bench_repeat.max(1) {
        runs.clear();
        let cpu0 = cpu_s();
        for lb in sc.lb_modes()? {
            let r = run_threads(&sc, &lb, !c.quiet, c.threads)?;
            if rep == 0 {
                summary(&r);
            }
            runs.push(r);
        }
        let wall = runs.iter().map(|r| r.wall_s).sum::<f64>();
        times.push((cpu_s() - cpu0, wall));
    }
    if let Some(dir) = &c.out {
        output::write(dir, &sc, &runs)?;
        println!("wrote {}/report.json and plots", dir.display());
    }
    if let Some(name) = &c.bench_name {
        bench(&c, &sc, name, &runs, &times)?;
    }
    Ok(())
}

/// Under an MPI launcher: every rank runs its partitions of each LB
/// mode's run; rank 0 prints, writes the outputs and the bench figures
/// (wall time, events per wall second and the peak RSS of each rank:
/// the per-CPU figures of one process do not apply).
#[cfg(feature = "mpi")]
fn mpi_main(c: &Cli, sc: &Scenario) -> Result<()> {
    use dataplane_sim::mpi;
    let job = mpi::Job::init()?;
    let mut runs = Vec::new();
    let mut rss = Vec::new();
    let mut walls = Vec::new();
    // the last run's windows and each rank's seconds between windows
    let mut sync = (0u64, Vec::new());
    // the last run's work (running events) per rank
    let mut work = mpi::Work::default();
    for rep in 0..c.bench_repeat.max(1) {
        runs.clear();
        for lb in sc.lb_modes()? {
            let o = mpi::run(&job, sc, &lb, !c.quiet, c.threads)?;
            let Some(r) = o.report else { continue };
            if rep == 0 {
                summary(&r);
                let mib: Vec<String> = o
                    .peak_rss_kib
                    .iter()
                    .map(|k| format!("{:.0}", *k as f64 / 1024.0))
                    .collect();
                let sync: Vec<String> = o.sync_s.iter().map(|s| format!("{s:.2}")).collect();
                let held: Vec<String> = o.held.iter().map(|(t, r)| format!("{t}/{r}")).collect();
                println!(
                    "[{}] MPI: {} ranks, {} partitions; peak RSS per rank (MiB): {}; {} windows, \
                     seconds between windows per rank (exchange and waits): {}",
                    r.lb,
                    job.size(),
                    sc.partitions,
                    mib.join(" "),
                    o.windows,
                    sync.join(" ")
                );
                println!(
                    "[{}] MPI: flows' halves held per rank (sender/receiver, of {} flows): {}",
                    r.lb,
                    r.flows_total,
                    held.join(" ")
                );
                let w = &o.work;
                let secs = |v: &[f64]| {
                    v.iter()
                        .map(|s| format!("{s:.2}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                println!(
                    "[{}] MPI work (running events, between exchanges): CPU s per rank {}, \
                     wall s per rank {}; sum over windows of the busiest rank's: CPU {:.2} s, \
                     wall {:.2} s; s ready but waiting for a core per rank {}",
                    r.lb,
                    secs(&w.cpu_s),
                    secs(&w.wall_s),
                    w.critical_cpu_s,
                    w.critical_wall_s,
                    secs(&w.run_delay_s)
                );
            }
            rss = o.peak_rss_kib;
            sync = (o.windows, o.sync_s);
            work = o.work;
            runs.push(r);
        }
        walls.push(runs.iter().map(|r| r.wall_s).sum::<f64>());
    }
    if job.rank() != 0 {
        return Ok(());
    }
    if let Some(dir) = &c.out {
        output::write(dir, sc, &runs)?;
        println!(
            "wrote {}/report.json and plots (rank 0's peak RSS with them: {:.0} MiB)",
            dir.display(),
            mpi::peak_rss_kib() as f64 / 1024.0
        );
    }
    if let Some(name) = &c.bench_name {
        let (wall, spread) = median(walls);
        let path = c.bench_out.as_ref().expect("clap requires it");
        let machine = bench_results::machine();
        let r = &runs[0];
        let note = format!(
            "dataplane-sim {} over MPI: {} ranks, {} partitions, {} events over {:.3} ms simulated \
             ({spread}); peak RSS per rank (MiB): {}",
            r.lb,
            job.size(),
            sc.partitions,
            r.events,
            r.sim_time_ns as f64 / 1e6,
            rss.iter()
                .map(|k| format!("{:.0}", *k as f64 / 1024.0))
                .collect::<Vec<_>>()
                .join(" ")
        );
        let rec = |figure: String, value: f64, unit: &str| {
            serde_json::json!({"figure": figure, "value": value, "unit": unit,
                "baseline": null, "ratio": null, "machine": machine, "note": note})
        };
        let max_rss = rss.iter().copied().max().unwrap_or(0) as f64 / 1024.0;
        bench_results::merge_values(
            path,
            vec![
                rec(format!("sim.{name}_wall_s"), wall, "s"),
                rec(
                    format!("sim.{name}_events_per_wall_s"),
                    r.events as f64 / wall.max(1e-9),
                    "events/s",
                ),
                rec(format!("sim.{name}_max_rank_peak_rss_mib"), max_rss, "MiB"),
                rec(format!("sim.{name}_windows"), sync.0 as f64, "windows"),
                rec(
                    format!("sim.{name}_sync_min_s"),
                    sync.1.iter().copied().fold(f64::MAX, f64::min),
                    "s",
                ),
                rec(
                    format!("sim.{name}_sync_max_s"),
                    sync.1.iter().copied().fold(0.0, f64::max),
                    "s",
                ),
                rec(
                    format!("sim.{name}_work_cpu_s"),
                    work.cpu_s.iter().sum(),
                    "s",
                ),
                rec(
                    format!("sim.{name}_critical_cpu_s"),
                    work.critical_cpu_s,
                    "s",
                ),
                rec(
                    format!("sim.{name}_run_delay_max_s"),
                    work.run_delay_s.iter().copied().fold(0.0, f64::max),
                    "s",
                ),
            ],
        )?;
    }
    Ok(())
}

/// The median of `v` and its spread as text (`min-max over N runs`).
fn median(mut v: Vec<f64>) -> (f64, String) {
    v.sort_by(f64::total_cmp);
    let m = v[v.len() / 2];
    let spread = if v.len() > 1 {
        format!(
            "median of {} runs ({:.2}-{:.2})",
            v.len(),
            v[0],
            v[v.len() - 1]
        )
    } else {
        "one run".into()
    };
    (m, spread)
}
