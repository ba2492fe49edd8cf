//! `dataplane-soak`: the demo's incast (h1..h7 write 256 KB each to h0 on
//! the default leaf-spine fabric, PFC and ECN on) in a loop for
//! `--seconds` (default 600), while every controller's resident memory and
//! open file descriptors are sampled after each round. Figures:
//! `soak.rss_growth_kb` and `soak.fd_growth` (the largest growth of any
//! controller from the end of the first round to the end of the run),
//! `soak.rounds`; plot `target/bench/soak_rss.svg`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Parser;
use testbed::bench::{machine, merge_results, BenchPaths, Record};
use testbed::fabric::{check_interrupt, install_interrupt_handler, Fabric};
use testbed::scenario::{run, RunOpts, Scenario};
use testbed::topo::Topology;

#[derive(Parser)]
struct Args {
    #[command(flatten)]
    paths: BenchPaths,
    /// How long to keep the incast going.
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// Where the plot goes.
    #[arg(long, default_value = "target/bench")]
    plots: PathBuf,
}

/// (resident KiB, open fds) of a process.
fn usage(pid: i32) -> Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("controller {pid} gone"))?;
    let rss = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))?.count() as u64;
    Ok((rss, fds))
}

fn main() -> Result<()> {
    let args = Args::parse();
    install_interrupt_handler();
    let incast = Scenario::Incast {
        receiver: "h0".into(),
        senders: None,
        bytes: 256 << 10,
    };
    let fabric = Fabric::build(Topology::default(), &args.paths.dataplane, "soak")?;
    let pids: Vec<(String, i32)> = fabric
        .switches
        .iter()
        .map(|s| {
            Ok((
                s.instance.clone(),
                dataplane_user::sys::InstanceLock::holder(&s.instance)?,
            ))
        })
        .collect::<Result<_>>()?;
    let opts = RunOpts {
        progress: false,
        ..RunOpts::default()
    };
    let t0 = Instant::now();
    let mut base: Option<Vec<(u64, u64)>> = None;
    let mut series: Vec<Vec<(f64, f64)>> = vec![Vec::new(); pids.len()];
    let mut rounds = 0u64;
    let mut last = Vec::new();
    while rounds == 0 || t0.elapsed() < Duration::from_secs(args.seconds) {
        check_interrupt()?;
        let r = run(&fabric, &incast, &opts)?;
        rounds += 1;
        let now: Vec<(u64, u64)> = pids.iter().map(|(_, p)| usage(*p)).collect::<Result<_>>()?;
        let t = t0.elapsed().as_secs_f64();
        for (i, u) in now.iter().enumerate() {
            series[i].push((t, u.0 as f64));
        }
        let b = base.get_or_insert_with(|| now.clone());
        let growth = |k: fn(&(u64, u64)) -> u64| {
            now.iter()
                .zip(b.iter())
                .map(|(n, b)| k(n) as i64 - k(b) as i64)
                .max()
                .unwrap_or(0)
        };
        eprintln!(
            "soak: {t:>5.0} s, round {rounds}: lossless drops {}, RSS growth {} KiB, fd growth {}",
            r.lossless_drops,
            growth(|u| u.0),
            growth(|u| u.1)
        );
        last = now;
    }
    let b = base.unwrap_or_default();
    let rss_growth = last
        .iter()
        .zip(&b)
        .map(|(n, b)| n.0 as i64 - b.0 as i64)
        .max()
        .unwrap_or(0);
    let fd_growth = last
        .iter()
        .zip(&b)
        .map(|(n, b)| n.1 as i64 - b.1 as i64)
        .max()
        .unwrap_or(0);
    let secs = t0.elapsed().as_secs_f64();
    println!("soak: {rounds} incast rounds in {secs:.0} s on {} controllers: RSS growth {rss_growth} KiB, fd growth {fd_growth}", pids.len());
    let m = machine();
    let note = format!("{rounds} rounds of the demo's 7:1 incast in {secs:.0} s, {} controllers, growth from the end of round 1", pids.len());
    let rec = |figure: &str, value: f64, unit: &str| Record {
        figure: figure.into(),
        value,
        unit: unit.into(),
        baseline: None,
        ratio: None,
        machine: m.clone(),
        note: Some(note.clone()),
    };
    merge_results(
        &args.paths.out,
        &[
            rec("soak.rss_growth_kb", rss_growth as f64, "KiB"),
            rec("soak.fd_growth", fd_growth as f64, "fds"),
            rec("soak.rounds", rounds as f64, "rounds"),
        ],
    )?;
    let named: Vec<(&str, Vec<(f64, f64)>)> = pids
        .iter()
        .zip(series)
        .map(|((n, _), s)| (n.as_str(), s))
        .collect();
    let svg = testbed::plot::lines(
        "controller RSS during the incast soak",
        "s",
        "KiB",
        &named,
        &[],
    );
    std::fs::create_dir_all(&args.plots)?;
    std::fs::write(args.plots.join("soak_rss.svg"), svg)?;
    Ok(())
}
