//! `cargo xtask bench --only sim_mpi`: the simulator's partitions on MPI
//! ranks (`sim.mpi.*`). The 1024-host web-search run of `sim_bench` (80
//! partitions, 10 ms) under `mpirun -np 1` and `-np 2`, one thread a
//! rank; the reports must be identical (the bench fails otherwise); the
//! speed-up of 2 ranks over 1, in wall time and in CPU time (the work of
//! 1 rank over the busiest rank's work, window by window, of 2: the
//! speed-up on cores of their own, which other work on a shared machine
//! does not change); what a window costs (the same run at 0.1 % load on
//! 2 ranks), and from it a projection of the wall time at 16 and 64
//! ranks, stated as a projection.
//!
//! Each rank runs in a session of its own (`setsid`): with the kernel's
//! autogroups (`/proc/sys/kernel/sched_autogroup_enabled`) the processes
//! of one session share one process's part of a busy machine, so the
//! ranks of one `mpirun` would share one core's time against the other
//! sessions' work whatever their number; in sessions of their own each
//! rank competes as a process.

use std::path::{Path, PathBuf};
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
    let sim = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
        .join("release/dataplane-sim");
    let dir = root().join("target/bench/sim_mpi");
    for r in RANKS {
        let name = format!("mpi.websearch_1024_r{r}");
        println!("-- {name}: leafspine:64x16:16, 10 ms, 80 partitions, {r} rank(s) of one thread");
        run(Command::new("mpirun")
            .args(["--allow-run-as-root", "--oversubscribe", "-np"])
            .arg(r.to_string())
            .args(["setsid", "--wait"])
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
        .args(["setsid", "--wait"])
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
    // in CPU time: 1 rank's work over the busiest rank's of 2, window by
    // window, with a window's exchange at almost no work
    let one_cpu = get("sim.mpi.websearch_1024_r1_work_cpu_s")?;
    let two_cpu = get("sim.mpi.websearch_1024_r2_critical_cpu_s")?;
    let two_total = get("sim.mpi.websearch_1024_r2_work_cpu_s")?;
    let delay = get("sim.mpi.websearch_1024_r2_run_delay_max_s")?;
    let machine = bench_results::machine();
    let mut recs = vec![bench_results::Record::new(
        "sim.mpi.websearch_1024_speedup_cpu".into(),
        one_cpu / (two_cpu + windows * per_window),
        "x",
        &machine,
        format!(
            "1 rank's work {one_cpu:.1} CPU s over 2 ranks' critical path: the busiest rank's \
             work summed over the windows, {two_cpu:.1} CPU s, plus {windows:.0} windows x \
             {per_window_us:.1} us of exchange (the 2 ranks' work {two_total:.1} CPU s in all): \
             the speed-up with a core per rank, whatever else the machine runs",
            per_window_us = per_window * 1e6
        ),
    )];
    recs.push(bench_results::Record::new(
        "sim.mpi.websearch_1024_speedup".into(),
        one / two,
        "x",
        &machine,
        format!(
            "1 rank {one:.1} s over 2 ranks {two:.1} s wall (one thread each, identical reports, \
             one bench run; the machine's cores are shared with other work: a rank of 2 was \
             ready to run but without a core for up to {delay:.1} s); each of the 2 ranks \
             spent {waits:.1} s or more between windows ({windows:.0} windows), a window costing \
             {per_window_us:.1} us with almost no work",
            per_window_us = per_window * 1e6
        ),
    ));
    for r in [16u32, 64] {
        // a projection, not a measurement: the work (1 rank's, in CPU
        // time: the machine's other work left out) divides as it did over
        // 2 ranks (the busiest rank's share of each window), and a
        // window's exchange costs what 2 ranks measured times log2 R (the
        // all-gather's rounds; each rank's messages grow with its
        // neighbours, not modelled)
        let balance = two_cpu / (two_total / 2.0).max(1e-9);
        let t = one_cpu / f64::from(r) * balance + windows * per_window * f64::from(r).log2();
        recs.push(bench_results::Record::new(
            format!("sim.mpi.websearch_1024_projected_r{r}_wall_s"),
            t,
            "s",
            &machine,
            format!(
                "PROJECTION, not measured: 1 rank's work ({one_cpu:.1} CPU s) / {r} x {balance:.3} \
                 (2 ranks' busiest over mean work per window) + {windows:.0} windows x {:.1} us \
                 (a window's cost on 2 ranks with almost no work) x log2 {r}; assumes the \
                 balance of 2 ranks holds, a core per rank and no other work",
                per_window * 1e6
            ),
        ));
    }
    bench_results::merge(Path::new(out), &recs)
}
