//! Files of a run: report.json (stable names) and SVG plots.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::config::Scenario;
use crate::report::{Report, BUCKETS};
use crate::svg;

#[derive(Serialize)]
struct ReportFile<'a> {
    scenario: &'a Scenario,
    runs: Vec<&'a Report>,
}

fn bucket_label(i: usize) -> String {
    let f = |b: u64| match b {
        u64::MAX => "inf".to_string(),
        b if b >= 1_000_000 => format!("{}M", b / 1_000_000),
        b if b >= 1_000 => format!("{}K", b / 1_000),
        b => b.to_string(),
    };
    format!("{}-{}", f(BUCKETS[i]), f(BUCKETS[i + 1]))
}

/// Writes `dir/report.json`, `fct_slowdown_p99.svg`, `fct_slowdown_p50.svg`,
/// `uplink_util.svg`, `queue.svg`, per mode `uplink_load_<mode>.svg` (each
/// uplink's load over time) and, with `trace_lb`, `lb_trace_<mode>.csv`.
pub fn write(dir: &Path, sc: &Scenario, runs: &[Report]) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let file = ReportFile {
        scenario: sc,
        runs: runs.iter().collect(),
    };
    let path = dir.join("report.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&file)?)
        .with_context(|| format!("writing {}", path.display()))?;
    let names: Vec<&str> = runs.iter().map(|r| r.lb.as_str()).collect();
    for (q, label) in [("p99", "p99"), ("p50", "median")] {
        let groups: Vec<(String, Vec<f64>)> = (0..BUCKETS.len() - 1)
            .map(|i| {
                let v = runs
                    .iter()
                    .map(|r| {
                        let d = &r.fct_slowdown_buckets[i].slowdown;
                        if q == "p99" {
                            d.p99
                        } else {
                            d.p50
                        }
                    })
                    .collect();
                (bucket_label(i), v)
            })
            .collect();
        let s = svg::bars(
            &format!("FCT slowdown ({label}) by flow size, per LB mode"),
            "slowdown (FCT / unloaded FCT)",
            &names,
            &groups,
        );
        std::fs::write(dir.join(format!("fct_slowdown_{q}.svg")), s)?;
    }
    let groups: Vec<(String, Vec<f64>)> = runs
        .iter()
        .map(|r| {
            (
                r.lb.clone(),
                vec![
                    r.uplink_util.mean * 100.0,
                    r.uplink_util.min * 100.0,
                    r.uplink_util.max * 100.0,
                ],
            )
        })
        .collect();
    std::fs::write(
        dir.join("uplink_util.svg"),
        svg::bars(
            "Uplink utilisation per LB mode",
            "% of line rate",
            &["mean", "min", "max"],
            &groups,
        ),
    )?;
    for r in runs {
        uplink_heatmap(dir, &r.lb, r)?;
        if !r.lb_trace.is_empty() {
            std::fs::write(dir.join(format!("lb_trace_{}.csv", r.lb)), &r.lb_trace)?;
        }
    }
    let series: Vec<(String, Vec<(f64, f64)>)> = runs
        .iter()
        .map(|r| {
            (
                r.lb.clone(),
                r.queue_samples
                    .iter()
                    .map(|&(t, m, _)| (t as f64 / 1e3, f64::from(m) / 1e3))
                    .collect(),
            )
        })
        .collect();
    std::fs::write(
        dir.join("queue.svg"),
        svg::lines(
            "Largest RoCE egress queue in the fabric",
            "time (us)",
            "KB",
            &series,
        ),
    )?;
    Ok(())
}

/// Writes `dir/uplink_load_<name>.svg`: each uplink's load over time in
/// run `r`, a row per uplink.
pub fn uplink_heatmap(dir: &Path, name: &str, r: &Report) -> Result<()> {
    let rows: Vec<(String, Vec<f64>)> = r
        .uplinks
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let v = r.uplink_series.iter().map(|(_, u)| u[i]).collect();
            (format!("{}>{}", l.from, l.to), v)
        })
        .collect();
    let xmax = r.uplink_series.last().map_or(0.0, |s| s.0 as f64 / 1e3);
    let path = dir.join(format!("uplink_load_{name}.svg"));
    std::fs::write(
        &path,
        svg::heatmap(
            &format!("Load of each uplink over time ({name})"),
            "time (us)",
            xmax,
            &rows,
        ),
    )
    .with_context(|| format!("writing {}", path.display()))
}
