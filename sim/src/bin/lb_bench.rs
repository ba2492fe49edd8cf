//! `dataplane-sim-lbbench`: the simulator's load-balancing figures
//! (`lb.sim.*`), merged into a bench results file, with a plot per case.
//!
//! Every case runs each mode at seeds 1-5; a figure is the median over the
//! seeds, its note gives the range and every seed's value. Cases:
//!
//! * `allreduce_128`: `sim/scenarios/allreduce_128gpu.toml` (128 GPUs,
//!   16 servers of 8, a server per leaf, 8 spines, 400G, NCCL's ring per
//!   rail), every mode, and spray again with out-of-order-placement
//!   receivers (`spray_ooo`);
//! * `allreduce_1024`: 1024 GPUs, 64 leaves of 16 hosts, 16 spines;
//! * `alltoall_128`, `halving_doubling_128`: the 128-GPU fabric;
//! * `websearch_60`, `websearch_80`: `sim/scenarios/websearch_2to1.toml`
//!   at 60 % and 80 % of the uplinks, and place again with the
//!   simulator's far-side notifications (`place_notify`, `--far-view
//!   notify`: a study, no data plane sends them yet).
//!
//! Collectives give `jct_vs_ideal`, `busy_util_pct`, `naks`,
//! `retx_bytes`; web-search `fct_mean`, `fct_p99`, `pfc_frames`. Ratios
//! in one run: `lb.sim.<case>.place_speedup_vs_hash` (hash's JCT over
//! place's, per seed), `lb.sim.websearch_*.place_vs_hash_fct_{mean,p99}`
//! (hash's over place's) and `.place_pfc_vs_bandwidth` (place's PFC frames
//! over bandwidth's, summed over the seeds), and the same for
//! `place_notify`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use clap::Parser;
use dataplane_common::rand::SplitMix64;
use dataplane_sim::{run_threads, svg, Report, Scenario};

#[derive(Parser)]
#[command(name = "dataplane-sim-lbbench")]
struct Cli {
    /// Bench results file to merge the figures into.
    #[arg(long)]
    out: PathBuf,
    /// Directory for the plots (one SVG per case).
    #[arg(long)]
    plots: PathBuf,
    /// Only these cases (comma list; default all).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Seeds 1..=N.
    #[arg(long, default_value_t = 5)]
    seeds: u64,
}

const SEEDS_NOTE: &str = "median over seeds";

struct Case {
    name: &'static str,
    scenario: Scenario,
    /// (label, LB mode, receivers, far view)
    modes: Vec<(&'static str, &'static str, &'static str, &'static str)>,
    collective: bool,
}

fn scenario_file(path: &str) -> Result<Scenario> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    let t = std::fs::read_to_string(&p).with_context(|| format!("reading {}", p.display()))?;
    toml::from_str(&t).with_context(|| format!("scenario {}", p.display()))
}

fn cases() -> Result<Vec<Case>> {
    let three = vec![
        ("hash", "hash", "rc", ""),
        ("bandwidth", "bandwidth", "rc", ""),
        ("place", "place", "rc", ""),
    ];
    // place with the simulator's far-side notifications (a study: no data
    // plane sends them yet)
    let mut web = three.clone();
    web.push(("place_notify", "place", "rc", "notify"));
    let fabric128 = |workload: &str| Scenario {
        topology: "leafspine:16x8:8".into(),
        speed: "400G".into(),
        workload: workload.into(),
        size: "64MB".into(),
        cc: "mlx".into(),
        drain: true,
        ..Scenario::default()
    };
    let ws = |load: f64| -> Result<Scenario> {
        Ok(Scenario {
            load,
            ..scenario_file("scenarios/websearch_2to1.toml")?
        })
    };
    Ok(vec![
        Case {
            name: "allreduce_128",
            scenario: scenario_file("scenarios/allreduce_128gpu.toml")?,
            modes: vec![
                ("hash", "hash", "rc", ""),
                ("flowlet", "flowlet", "rc", ""),
                ("bandwidth", "bandwidth", "rc", ""),
                ("spray", "spray", "rc", ""),
                ("spray_ooo", "spray", "ooo", ""),
                ("place", "place", "rc", ""),
            ],
            collective: true,
        },
        Case {
            name: "allreduce_1024",
            scenario: scenario_file("scenarios/allreduce_1024gpu.toml")?,
            modes: three.clone(),
            collective: true,
        },
        Case {
            name: "alltoall_128",
            scenario: fabric128("alltoall"),
            modes: three.clone(),
            collective: true,
        },
        Case {
            name: "halving_doubling_128",
            scenario: fabric128("halving-doubling"),
            modes: three.clone(),
            collective: true,
        },
        Case {
            name: "websearch_60",
            scenario: ws(0.3375)?,
            modes: web.clone(),
            collective: false,
        },
        Case {
            name: "websearch_80",
            scenario: ws(0.45)?,
            modes: web,
            collective: false,
        },
    ])
}

/// Runs every (mode, seed) of `c` on every core; reports by mode label,
/// in seed order.
fn run_case(c: &Case, seeds: u64) -> Result<BTreeMap<&'static str, Vec<Report>>> {
    let jobs: Vec<(&'static str, &'static str, &'static str, &'static str, u64)> = c
        .modes
        .iter()
        .flat_map(|&(l, m, r, f)| (1..=seeds).map(move |s| (l, m, r, f, s)))
        .collect();
    let next = Mutex::new(0usize);
    let done: Mutex<Vec<(usize, Result<Report>)>> = Mutex::new(Vec::new());
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..cores.min(jobs.len()) {
            s.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap();
                    *n += 1;
                    *n - 1
                };
                let Some(&(label, mode, receiver, far_view, seed)) = jobs.get(i) else {
                    return;
                };
                let sc = Scenario {
                    seed,
                    receiver: receiver.into(),
                    far_view: far_view.into(),
                    partitions: 1,
                    ..c.scenario.clone()
                };
                let r = run_threads(&sc, mode, false, 1).map(|mut r| {
                    r.lb = label.into();
                    r
                });
                eprintln!("  {} {label} seed {seed}: done", c.name);
                done.lock().unwrap().push((i, r));
            });
        }
    });
    let mut done = done.into_inner().unwrap();
    done.sort_by_key(|d| d.0);
    let mut out: BTreeMap<&'static str, Vec<Report>> = BTreeMap::new();
    for (i, r) in done {
        out.entry(jobs[i].0).or_default().push(r?);
    }
    Ok(out)
}

/// Median, min, max.
fn stats(v: &[f64]) -> (f64, f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    (s[s.len() / 2], s[0], s[s.len() - 1])
}

struct Out {
    records: Vec<serde_json::Value>,
    machine: String,
}

impl Out {
    fn figure(&mut self, name: String, v: &[f64], unit: &str, what: &str) {
        let (med, lo, hi) = stats(v);
        let each: Vec<String> = v.iter().map(|x| format!("{x:.4}")).collect();
        self.records.push(serde_json::json!({
            "figure": name, "value": med, "unit": unit, "baseline": null, "ratio": null,
            "machine": self.machine,
            "note": format!("{what}; {SEEDS_NOTE} 1-{n}: {lo:.4}-{hi:.4} (each: {})", each.join(", "), n = v.len()),
        }));
    }

    fn ratio(&mut self, name: String, value: f64, baseline: f64, ratios: &[f64], note: &str) {
        let (med, lo, hi) = stats(ratios);
        self.records.push(serde_json::json!({
            "figure": name, "value": value, "unit": "", "baseline": baseline, "ratio": med,
            "machine": self.machine,
            "note": format!("{note}; per seed {lo:.3}-{hi:.3}"),
        }));
    }
}

fn col(rs: &[Report], f: impl Fn(&Report) -> f64) -> Vec<f64> {
    rs.iter().map(f).collect()
}

fn record(o: &mut Out, c: &Case, runs: &BTreeMap<&'static str, Vec<Report>>) {
    let n = c.name;
    for (label, rs) in runs {
        let p = |m: &str| format!("lb.sim.{n}.{label}.{m}");
        if c.collective {
            let rcv = &rs[0].receiver;
            o.figure(
                p("jct_vs_ideal"),
                &col(rs, |r| r.jct_vs_ideal),
                "x",
                &format!("job time over the ideal ({rcv} receivers)"),
            );
            o.figure(
                p("busy_util_pct"),
                &col(rs, |r| r.uplink_busy_util.mean * 100.0),
                "%",
                "uplink utilisation while a leaf's uplinks had data",
            );
            o.figure(p("naks"), &col(rs, |r| r.naks as f64), "", "NAKs");
            o.figure(
                p("retx_bytes"),
                &col(rs, |r| r.retx_payload as f64),
                "B",
                "payload retransmitted",
            );
        } else {
            o.figure(
                p("fct_mean"),
                &col(rs, |r| r.fct_slowdown.mean),
                "x",
                "mean FCT slowdown",
            );
            o.figure(
                p("fct_p99"),
                &col(rs, |r| r.fct_slowdown.p99),
                "x",
                "p99 FCT slowdown",
            );
            o.figure(
                p("pfc_frames"),
                &col(rs, |r| r.pfc_frames as f64),
                "",
                "PFC frames sent",
            );
        }
    }
    let (Some(hash), Some(place)) = (runs.get("hash"), runs.get("place")) else {
        return;
    };
    let per_seed = |f: &dyn Fn(&Report) -> f64| -> Vec<f64> {
        hash.iter().zip(place).map(|(h, p)| f(h) / f(p)).collect()
    };
    if c.collective {
        let ratios = per_seed(&|r| r.jct_ns as f64);
        let (hm, _, _) = stats(&col(hash, |r| r.jct_ns as f64 / 1e6));
        let (pm, _, _) = stats(&col(place, |r| r.jct_ns as f64 / 1e6));
        o.ratio(
            format!("lb.sim.{n}.place_speedup_vs_hash"),
            pm,
            hm,
            &ratios,
            "JCT ms: place (value), hash (baseline), ratio hash/place (median of the seeds)",
        );
    } else {
        for label in ["place", "place_notify"] {
            if let Some(p) = runs.get(label) {
                web_ratios(o, n, label, hash, p, runs.get("bandwidth"));
            }
        }
    }
}

/// A web-search case's ratios for mode `label` (its runs `place`):
/// mean and p99 FCT slowdown against hash's, PFC frames against
/// bandwidth mode's.
fn web_ratios(
    o: &mut Out,
    n: &str,
    label: &str,
    hash: &[Report],
    place: &[Report],
    bw: Option<&Vec<Report>>,
) {
    for (m, f) in [
        (
            "mean",
            &(|r: &Report| r.fct_slowdown.mean) as &dyn Fn(&Report) -> f64,
        ),
        ("p99", &|r: &Report| r.fct_slowdown.p99),
    ] {
        let ratios: Vec<f64> = hash.iter().zip(place).map(|(h, p)| f(h) / f(p)).collect();
        o.ratio(
            format!("lb.sim.{n}.{label}_vs_hash_fct_{m}"),
            stats(&col(place, f)).0,
            stats(&col(hash, f)).0,
            &ratios,
            &format!("{m} FCT slowdown: {label} (value), hash (baseline), ratio hash/{label}"),
        );
    }
    let Some(bw) = bw else {
        return;
    };
    let sum = |rs: &[Report]| rs.iter().map(|r| r.pfc_frames as f64).sum::<f64>();
    let (p, b) = (sum(place), sum(bw));
    let ratios: Vec<f64> = place
        .iter()
        .zip(bw)
        .map(|(p, b)| p.pfc_frames as f64 / (b.pfc_frames as f64).max(1.0))
        .collect();
    let pairs: Vec<(f64, f64)> = place
        .iter()
        .zip(bw)
        .map(|(p, b)| (p.pfc_frames as f64, b.pfc_frames as f64))
        .collect();
    let (lo, hi) = bootstrap_sum_ratio(&pairs);
    o.ratio(
        format!("lb.sim.{n}.{label}_pfc_vs_bandwidth"),
        p,
        b,
        &ratios,
        &format!(
            "PFC frames summed over the seeds: {label} (value), bandwidth (baseline); ratio: median per seed {label}/bandwidth (a seed without bandwidth frames counts 1); sum over sum {:.3}, 95 % bootstrap interval over the seeds {lo:.3}-{hi:.3}",
            p / b.max(1.0)
        ),
    );
}

/// The 2.5 and 97.5 percentiles of `sum(a) / sum(b)` over 10 000
/// resamplings of the seeds' `(a, b)` pairs with replacement (a fixed
/// generator seed, so a run's note is reproducible): how far the ratio of
/// sums could move with other seeds. Per seed, PFC frames vary several
/// fold, so a handful of seeds cannot settle the comparison; the interval
/// says so.
fn bootstrap_sum_ratio(pairs: &[(f64, f64)]) -> (f64, f64) {
    const DRAWS: usize = 10_000;
    let mut rng = SplitMix64(0x0b00_7570);
    let mut r: Vec<f64> = (0..DRAWS)
        .map(|_| {
            let (mut a, mut b) = (0.0, 0.0);
            for _ in pairs {
                let (x, y) = pairs[rng.below(pairs.len())];
                a += x;
                b += y;
            }
            a / b.max(1.0)
        })
        .collect();
    r.sort_by(f64::total_cmp);
    (r[DRAWS / 40], r[DRAWS - DRAWS / 40 - 1])
}

fn plot(dir: &Path, c: &Case, runs: &BTreeMap<&'static str, Vec<Report>>) -> Result<()> {
    let (title, ylabel, f): (&str, &str, fn(&Report) -> f64) = if c.collective {
        ("job time over the ideal", "JCT / ideal", |r| r.jct_vs_ideal)
    } else {
        ("mean FCT slowdown", "FCT / unloaded FCT", |r| {
            r.fct_slowdown.mean
        })
    };
    let groups: Vec<(String, Vec<f64>)> = runs
        .iter()
        .map(|(l, rs)| {
            let (m, lo, hi) = stats(&col(rs, f));
            (l.to_string(), vec![lo, m, hi])
        })
        .collect();
    std::fs::create_dir_all(dir)?;
    let s = svg::bars(
        &format!("{}: {title} per mode (seeds)", c.name),
        ylabel,
        &["min", "median", "max"],
        &groups,
    );
    std::fs::write(dir.join(format!("lb_sim_{}.svg", c.name)), s)?;
    // each mode's per-uplink load over time, seed 1
    for (l, rs) in runs {
        dataplane_sim::output::uplink_heatmap(dir, &format!("{}_{l}", c.name), &rs[0])?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let machine = bench_results::machine();
    let mut o = Out {
        records: Vec::new(),
        machine,
    };
    for c in cases()? {
        if !cli.only.is_empty() && !cli.only.iter().any(|x| x == c.name) {
            continue;
        }
        println!(
            "-- lb.sim.{}: {} seeds x {} modes",
            c.name,
            cli.seeds,
            c.modes.len()
        );
        let runs = run_case(&c, cli.seeds)?;
        record(&mut o, &c, &runs);
        plot(&cli.plots, &c, &runs)?;
        for (l, rs) in &runs {
            let v = if c.collective {
                col(rs, |r| r.jct_vs_ideal)
            } else {
                col(rs, |r| r.fct_slowdown.mean)
            };
            let (m, lo, hi) = stats(&v);
            println!(
                "   {l:<10} {} {m:.3} ({lo:.3}-{hi:.3})",
                if c.collective {
                    "JCT/ideal"
                } else {
                    "FCT mean"
                }
            );
        }
    }
    bench_results::merge_values(&cli.out, o.records)?;
    println!(
        "figures: {}; plots: {}",
        cli.out.display(),
        cli.plots.display()
    );
    Ok(())
}
