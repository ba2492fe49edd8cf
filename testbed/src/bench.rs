//! Benchmark records: `target/bench/results.json` is a list of
//! `{"figure", "value", "unit", "baseline", "ratio", "machine"}`; every
//! benchmark of the project merges its figures into it by name.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub figure: String,
    pub value: f64,
    pub unit: String,
    /// Figure this one is compared with (same run).
    pub baseline: Option<String>,
    /// value / baseline value.
    pub ratio: Option<f64>,
    pub machine: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// What the benches that run the controller take: its binary and the
/// results file.
#[derive(clap::Args, Debug)]
pub struct BenchPaths {
    /// The controller binary.
    #[arg(long, default_value = "target/release/dataplane")]
    pub dataplane: PathBuf,
    /// Results file (records are merged by figure name).
    #[arg(long, default_value = "target/bench/results.json")]
    pub out: PathBuf,
}

impl Record {
    /// A figure measured in the same run as `baseline` (whose value is
    /// `base`): the ratio is value / base when base is positive.
    pub fn against(
        figure: String,
        value: f64,
        unit: &str,
        (baseline, base): (&str, f64),
        machine: &str,
        note: String,
    ) -> Record {
        Record {
            figure,
            value,
            unit: unit.into(),
            baseline: Some(baseline.into()),
            ratio: (base > 0.0).then(|| value / base),
            machine: machine.into(),
            note: Some(note),
        }
    }
}

/// One line describing the machine: CPU model, cores, kernel, date.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines().next().map(|l| {
                l.split_whitespace()
                    .nth(1)
                    .unwrap_or("0")
                    .parse::<u64>()
                    .unwrap_or(0)
            })
        })
        .unwrap_or(0);
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!(
        "{model}, {cores} vCPU, {} GiB, Linux {}, {date}",
        mem / 1024 / 1024,
        kernel.trim()
    )
}

/// Replaces records with the same figure names and writes the file.
pub fn merge_results(path: &Path, new: &[Record]) -> Result<()> {
    let mut all: Vec<Record> = match std::fs::read(path) {
        Ok(b) => serde_json::from_slice(&b).unwrap_or_default(),
        Err(_) => Vec::new(),
    };
    all.retain(|r| !new.iter().any(|n| n.figure == r.figure));
    all.extend_from_slice(new);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, serde_json::to_vec_pretty(&all)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// Pins the calling thread to `cpu`.
pub fn pin_to_cpu(cpu: usize) -> anyhow::Result<()> {
    // SAFETY: a zeroed cpu_set_t filled by the libc macros, for this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            anyhow::bail!("pinning to CPU {cpu}: {}", std::io::Error::last_os_error());
        }
    }
    Ok(())
}
