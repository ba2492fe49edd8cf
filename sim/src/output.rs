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

/// The uplink heat map's most rows: more uplinks are averaged, a row
/// per `ceil(uplinks / HEATMAP_MAX_ROWS)` consecutive uplinks (in
/// `uplinks`' order: a switch's uplinks are consecutive). 1024, so a
/// fabric of up to 1024 uplinks (the 1024-host scenarios) keeps a row an
/// uplink.
pub const HEATMAP_MAX_ROWS: usize = 1024;
/// The heat map's most columns: more samples are averaged, a cell per
/// `ceil(samples / columns)` consecutive samples. 512: the plot is 590
/// px wide.
pub const HEATMAP_MAX_COLS: usize = 512;
/// The heat map's most cells (rows times columns), about 80 bytes of SVG
/// each: the columns are fewer than `HEATMAP_MAX_COLS` where the rows
/// are many, so a fabric of any size writes at most 2^18 cells (about 21
/// MB; the 8192-GPU all-reduce wrote 4.1 GB, 16 384 uplinks by 3 100
/// samples, a cell each).
pub const HEATMAP_MAX_CELLS: usize = 1 << 18;

/// How many consecutive uplinks make a row and samples a cell of the
/// uplink heat map of `uplinks` uplinks and `samples` samples: (1, 1)
/// unless it would hold more than [`HEATMAP_MAX_ROWS`] rows,
/// [`HEATMAP_MAX_COLS`] columns or [`HEATMAP_MAX_CELLS`] cells.
pub fn heatmap_bins(uplinks: usize, samples: usize) -> (usize, usize) {
    let per_row = uplinks.div_ceil(HEATMAP_MAX_ROWS).max(1);
    let rows = uplinks.div_ceil(per_row).max(1);
    let cols = HEATMAP_MAX_COLS.min(HEATMAP_MAX_CELLS / rows).max(1);
    (per_row, samples.div_ceil(cols).max(1))
}

/// Writes `dir/uplink_load_<name>.svg`: each uplink's load over time in
/// run `r`, a row per uplink and a cell per sample interval; on a fabric
/// too big for that ([`heatmap_bins`]) a row is the mean of consecutive
/// uplinks (labelled by its first, `+` how many more) and a cell the mean of
/// consecutive intervals, which the title says.
pub fn uplink_heatmap(dir: &Path, name: &str, r: &Report) -> Result<()> {
    let series = &r.uplink_series;
    let n = r.uplinks.len();
    let (per_row, per_col) = heatmap_bins(n, series.len());
    let label = |i: usize| format!("{}>{}", r.uplinks[i].from, r.uplinks[i].to);
    // a row and a cell of one each (the usual case) give each uplink's
    // samples as they are: a sum of one value, divided by 1
    let rows: Vec<(String, Vec<f64>)> = (0..n)
        .step_by(per_row)
        .map(|first| {
            let end = (first + per_row).min(n);
            let v = series
                .chunks(per_col)
                .map(|c| {
                    let sum: f64 = c
                        .iter()
                        .map(|(_, u)| u[first..end].iter().sum::<f64>())
                        .sum();
                    sum / (c.len() * (end - first)) as f64
                })
                .collect();
            let l = if end - first == 1 {
                label(first)
            } else {
                format!("{} +{}", label(first), end - first - 1)
            };
            (l, v)
        })
        .collect();
    let mut means = Vec::new();
    if per_row > 1 {
        means.push(format!("a row {per_row} uplinks"));
    }
    if per_col > 1 {
        means.push(format!("a cell {per_col} samples"));
    }
    let title = if means.is_empty() {
        format!("Load of each uplink over time ({name})")
    } else {
        format!(
            "Uplink load over time ({name}; {}, averaged)",
            means.join(", ")
        )
    };
    let xmax = series.last().map_or(0.0, |s| s.0 as f64 / 1e3);
    let path = dir.join(format!("uplink_load_{name}.svg"));
    std::fs::write(&path, svg::heatmap(&title, "time (us)", xmax, &rows))
        .with_context(|| format!("writing {}", path.display()))
}
