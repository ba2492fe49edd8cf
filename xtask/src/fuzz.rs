//! `cargo xtask fuzz --seconds N`: every fuzz target of `fuzz/` under
//! libFuzzer for N seconds (or `--runs R` executions) each, from the seed
//! corpus; executions and crashes go to `target/bench/results.json`
//! (`fuzz.<target>.execs`, `fuzz.<target>.crashes`, `.execs_per_s`).
//!
//! The targets are built the way cargo-fuzz builds them (nightly,
//! SanitizerCoverage with inline 8-bit counters, PC table and compare
//! tracing, `--cfg fuzzing`, debug assertions and overflow checks, release
//! optimisation), so `cargo fuzz run <target>` works too where cargo-fuzz
//! is installed; doing it here needs no extra tool in CI. No AddressSanitizer:
//! the code under test is safe Rust (`cargo fuzz run -s address` adds it).
//! Inputs that crash are kept in `target/fuzz/artifacts/<target>/`; once
//! fixed, copy them to `fuzz/regressions/<target>/` (replayed by the tests).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};

use crate::root;

pub const TARGETS: [&str; 6] = [
    "frame",
    "mac_control",
    "config_text",
    "config_struct",
    "p4_entries",
    "lldp",
];
const TRIPLE: &str = "x86_64-unknown-linux-gnu";
const RUSTFLAGS: &str = "-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
    -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
    -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks";

/// How long each target runs: until the time or the executions are
/// reached, whichever comes first.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    pub seconds: Option<u64>,
    pub runs: Option<u64>,
}

/// What one target did.
#[derive(Debug)]
pub struct Outcome {
    pub target: String,
    pub execs: u64,
    pub seconds: f64,
    pub crashes: usize,
}

pub fn fuzz(budget: Budget, only: Option<String>, jobs: usize) -> Result<()> {
    let dir = root().join("target/fuzz");
    let corpus = dir.join("corpus");
    crate::run(
        crate::cargo()
            .args([
                "run",
                "-q",
                "-p",
                "dataplane-fuzz",
                "--bin",
                "fuzz-seeds",
                "--",
            ])
            .arg(&corpus),
    )?;
    build()?;
    let targets: Vec<&str> = match &only {
        Some(t) if TARGETS.contains(&t.as_str()) => vec![t.as_str()],
        Some(t) => bail!(
            "unknown fuzz target {t:?}; expected one of {}",
            TARGETS.join(", ")
        ),
        None => TARGETS.to_vec(),
    };
    let mut outcomes = Vec::new();
    for t in targets {
        println!("== fuzz {t} ({budget:?}) ==");
        outcomes.push(run_target(&dir, t, budget, jobs)?);
    }
    record(&outcomes)?;
    println!(
        "\n{:<14} {:>14} {:>10} {:>12} {:>8}",
        "target", "execs", "seconds", "execs/s", "crashes"
    );
    for o in &outcomes {
        println!(
            "{:<14} {:>14} {:>10.0} {:>12.0} {:>8}",
            o.target,
            o.execs,
            o.seconds,
            o.execs as f64 / o.seconds.max(1e-9),
            o.crashes
        );
    }
    let crashed: Vec<&str> = outcomes
        .iter()
        .filter(|o| o.crashes > 0)
        .map(|o| o.target.as_str())
        .collect();
    if !crashed.is_empty() {
        bail!(
            "crashes in {} (inputs in target/fuzz/artifacts/)",
            crashed.join(", ")
        );
    }
    Ok(())
}

/// The targets, instrumented (nightly; cargo-fuzz's flags).
fn build() -> Result<()> {
    let status = Command::new("rustup")
        .args(["run", "nightly", "cargo", "build", "--release", "-p", "dataplane-fuzz"])
        .args(TARGETS.iter().flat_map(|t| ["--bin", t]))
        .args(["--features", "libfuzzer", "--target", TRIPLE, "--target-dir"])
        .arg(root().join("target/fuzz/build"))
        .env("RUSTFLAGS", RUSTFLAGS)
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("CARGO")
        .current_dir(root())
        .status()
        .context("starting `rustup run nightly cargo build` (the fuzz targets need the nightly toolchain)")?;
    if !status.success() {
        bail!("building the fuzz targets failed ({status})");
    }
    Ok(())
}

fn bin(target: &str) -> PathBuf {
    root().join(format!("target/fuzz/build/{TRIPLE}/release/{target}"))
}

/// Runs one target from its corpus; libFuzzer prints its progress.
fn run_target(dir: &Path, target: &str, budget: Budget, jobs: usize) -> Result<Outcome> {
    let corpus = dir.join("corpus").join(target);
    let artifacts = dir.join("artifacts").join(target);
    std::fs::create_dir_all(&artifacts)?;
    let before = crash_files(&artifacts);
    let mut cmd = Command::new(bin(target));
    cmd.arg(&corpus)
        .arg(format!("-artifact_prefix={}/", artifacts.display()))
        .args(["-print_final_stats=1", "-timeout=10", "-rss_limit_mb=1024"])
        .arg(format!("-max_len={}", max_len(target)));
    if let Some(s) = budget.seconds {
        cmd.arg(format!("-max_total_time={s}"));
    }
    if let Some(r) = budget.runs {
        cmd.arg(format!("-runs={r}"));
    }
    if jobs > 1 {
        // -fork: a crash is recorded and the run goes on
        cmd.arg(format!("-fork={jobs}")).arg("-ignore_crashes=1");
    }
    let t0 = std::time::Instant::now();
    let mut child = cmd
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {}", bin(target).display()))?;
    // libFuzzer's progress lines shown as they come, everything kept
    let mut log = String::new();
    let err = child.stderr.take().expect("piped stderr");
    for line in std::io::BufRead::lines(std::io::BufReader::new(err)).map_while(|l| l.ok()) {
        if line.starts_with('#')
            || line.starts_with("==")
            || line.starts_with("Done")
            || line.starts_with("stat::")
        {
            eprintln!("  [{target}] {line}");
        }
        log.push_str(&line);
        log.push('\n');
    }
    let status = child.wait()?;
    let seconds = t0.elapsed().as_secs_f64();
    std::fs::write(dir.join(format!("{target}.log")), log.as_bytes())?;
    let execs = final_execs(&log).with_context(|| {
        format!("{target}: no execution count in libFuzzer's output (see target/fuzz/{target}.log)")
    })?;
    let crashes = crash_files(&artifacts).saturating_sub(before);
    // libFuzzer exits 72 when interrupted (Ctrl-C): not a crash
    let interrupted = status.code() == Some(72);
    let crashes = if !status.success() && !interrupted && crashes == 0 {
        1
    } else {
        crashes
    };
    Ok(Outcome {
        target: target.into(),
        execs,
        seconds,
        crashes,
    })
}

/// The longest input libFuzzer makes for a target. `mac_control` checks
/// the buffer model's books after every event of its input, so an input
/// costs in proportion to its length. Its edge coverage stops growing in
/// the first minute (208 edges; longer inputs add only loop-count
/// features), while libFuzzer grows inputs towards 4 KiB (about 400
/// events): 1 KiB (about 100 events, every arrival, PFC and tick path many
/// times over) halves the CPU time of 100k executions from that corpus
/// (9.2 s to 4.5 s).
fn max_len(target: &str) -> usize {
    match target {
        "mac_control" => 1024,
        _ => 4096,
    }
}

fn crash_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().to_string();
                    n.starts_with("crash-") || n.starts_with("oom-") || n.starts_with("timeout-")
                })
                .count()
        })
        .unwrap_or(0)
}

/// Executions: `stat::number_of_executed_units` (single process), or the
/// last `#N` progress line (fork mode sums the workers there, as `#N:`).
pub fn final_execs(log: &str) -> Option<u64> {
    let stat = log.lines().rev().find_map(|l| {
        l.strip_prefix("stat::number_of_executed_units:")
            .and_then(|v| v.trim().parse().ok())
    });
    stat.or_else(|| {
        log.lines().rev().find_map(|l| {
            let l = l.strip_prefix('#')?;
            l.split_whitespace()
                .next()?
                .trim_end_matches(':')
                .parse()
                .ok()
        })
    })
}

/// Merges the figures into target/bench/results.json (by figure name).
fn record(outcomes: &[Outcome]) -> Result<()> {
    let path = root().join("target/bench/results.json");
    let machine = bench_results::machine();
    let mut new = Vec::new();
    for o in outcomes {
        let rate = o.execs as f64 / o.seconds.max(1e-9);
        for (figure, value, unit) in [
            (
                format!("fuzz.{}.execs", o.target),
                o.execs as f64,
                "executions",
            ),
            (
                format!("fuzz.{}.crashes", o.target),
                o.crashes as f64,
                "crashes",
            ),
            (
                format!("fuzz.{}.execs_per_s", o.target),
                rate,
                "executions/s",
            ),
        ] {
            new.push(serde_json::json!({
                "figure": figure, "value": value, "unit": unit, "baseline": null, "ratio": null,
                "machine": machine,
                "note": format!("libFuzzer, {:.0} s, seed corpus from fuzz/src/seeds.rs", o.seconds),
            }));
        }
    }
    bench_results::merge_values(&path, new)?;
    println!("figures merged into {}", path.display());
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn execs_from_final_stats_or_progress() {
        let log = "#1024\tpulse  cov: 10\n#2048\tNEW cov: 12\nDone 2048 runs in 1 second(s)\nstat::number_of_executed_units: 2050\n";
        assert_eq!(super::final_execs(log), Some(2050));
        assert_eq!(super::final_execs("#77\tREDUCE\n#90\tpulse\n"), Some(90));
        let fork = "#1601341: cov: 3988 ft: 20839 corp: 2008 exec/s: 255 oom/timeout/crash: 0/0/0 time: 4635s job: 133\n#1639779: cov: 3988 ft: 20839 corp: 2008 exec/s: 284 oom/timeout/crash: 0/0/0 time: 4708s job: 134\n==10497== libFuzzer: a child was interrupted; exiting\n";
        assert_eq!(super::final_execs(fork), Some(1639779));
        assert_eq!(super::final_execs("nothing"), None);
    }
}
