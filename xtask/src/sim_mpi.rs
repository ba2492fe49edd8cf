//! `cargo xtask bench --only sim_mpi`: the simulator's partitions on MPI
//! ranks (`sim.mpi.*`). The 1024-host web-search run of `sim_bench` (80
//! partitions, 10 ms) under `mpirun -np 1` and `-np 2`, one thread a
//! rank; the reports must be identical (the bench fails otherwise); the
//! speed-up of 2 ranks over 1; what a window costs (the same run at 0.1 %
//! load on 2 ranks), and from it a projection of the wall time at 16 and
//! 64 ranks, stated as a projection.

use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::{cargo, machine, root, run};

const RANKS: [u32; 2] = [1, 2];

pub fn bench(out: &str) -> Result<()> {
    if !machine::on_path("mpirun") {
        println!("sim_mpi: SKIPPED: no mpirun on PATH (cargo xtask setup installs Open MPI)");
        return Ok(());
    }
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "dataplane-sim",
        "--features",
        "mpi",
    ]))?;
    let sim = root().join("target/release/dataplane-sim");
    let dir = root().join("target/bench/sim_mpi");
    for r in RANKS {
        let name = format!("mpi.websearch_1024_r{r}");
        println!("-- {name}: leafspine:64x16:16, 10 ms, 80 partitions, {r} rank(s) of one thread");
        run(Command::new("mpirun")
            .args(["--allow-run-as-root", "--oversubscribe", "-np"])
            .arg(r.to_string())
            .arg(&sim)
            .args([
                "--scenario",
                &root()
                    .join("sim/scenarios/websearch_1024.toml")
                    .display()
                    .to_string(),
                "--threads",
                "1",
                "--quiet",
                "--bench-name",
                &name,
                "--bench-out",
                out,
                "--out",
            ])
            .arg(dir.join(format!("r{r}"))))?;
    }
    // the cost of a window itself: the same fabric and partitions with
    // almost no traffic (0.1 % load), so the ranks hardly wait for each
    // other's work
    println!("-- mpi.windows_r2: the same at 0.1 % load, 2 ranks: what a window costs");
    run(Command::new("mpirun")
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(&sim)
        .args([
            "--scenario",
            &root()
                .join("sim/scenarios/websearch_1024.toml")
                .display()
                .to_string(),
            "--load",
            "0.001",
            "--threads",
            "1",
            "--quiet",
            "--bench-name",
            "mpi.windows_r2",
            "--bench-out",
            out,
        ]))?;
    let stable = |r: u32| -> Result<serde_json::Value> {
        let p = dir.join(format!("r{r}/report.json"));
        let mut v: serde_json::Value = serde_json::from_slice(
            &std::fs::read(&p).with_context(|| format!("reading {}", p.display()))?,
        )?;
        for run in v["runs"].as_array_mut().context("runs")? {
            let o = run.as_object_mut().context("a run")?;
            o.remove("wall_s");
            o.remove("events_per_s");
        }
        Ok(v)
    };
    if stable(1)? != stable(2)? {
        bail!("sim_mpi: the reports of 1 and 2 ranks differ (target/bench/sim_mpi)");
    }
    figures(out)
}

/// The speed-up and the projection, from the two runs' records.
fn figures(out: &str) -> Result<()> {
    let all = bench_results::read(Path::new(out))?;
    let get = |name: &str| -> Result<f64> {
        all.iter()
            .find(|v| v["figure"] == name)
            .and_then(|v| v["value"].as_f64())
            .with_context(|| format!("{out}: {name} is missing"))
    };
    let one = get("sim.mpi.websearch_1024_r1_wall_s")?;
    let two = get("sim.mpi.websearch_1024_r2_wall_s")?;
    let windows = get("sim.mpi.websearch_1024_r2_windows")?;
    // what a window costs between windows when there is almost no work to
    // wait for (the rank that waited least)
    let per_window =
        get("sim.mpi.windows_r2_sync_min_s")? / get("sim.mpi.windows_r2_windows")?.max(1.0);
    let waits = get("sim.mpi.websearch_1024_r2_sync_min_s")?;
    let machine = bench_results::machine();
    let mut recs = vec![bench_results::Record::new(
        "sim.mpi.websearch_1024_speedup".into(),
        one / two,
        "x",
        &machine,
        format!(
            "1 rank {one:.1} s over 2 ranks {two:.1} s wall (one thread each, identical reports, \
             one bench run; the machine's cores are shared with other work); each of the 2 ranks \
             spent {waits:.1} s or more between windows ({windows:.0} windows), a window costing \
             {per_window_us:.1} us with almost no work",
            per_window_us = per_window * 1e6
        ),
    )];
    for r in [16u32, 64] {
        // a projection, not a measurement: the work divides evenly, and
        // a window's exchange costs what 2 ranks measured times log2 R
        // (the all-gather's rounds; each rank's messages grow with its
        // neighbours, not modelled)
        let t = one / f64::from(r) + windows * per_window * f64::from(r).log2();
        recs.push(bench_results::Record::new(
            format!("sim.mpi.websearch_1024_projected_r{r}_wall_s"),
            t,
            "s",
            &machine,
            format!(
                "PROJECTION, not measured: 1 rank's wall ({one:.1} s) / {r} + {windows:.0} windows \
                 x {:.1} us (a window's cost on 2 ranks with almost no work) x log2 {r}; \
                 assumes perfect balance, a core per rank and no other work",
                per_window * 1e6
            ),
        ));
    }
    bench_results::merge(Path::new(out), &recs)
}
