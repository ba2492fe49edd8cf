//! What an eBPF program costs where it runs: the kernel's own run-time
//! statistics (`BPF_ENABLE_STATS`: `run_time_ns` and `run_cnt` per
//! program, kept while the returned descriptor is open), read for the
//! programs a bench loaded. A program's time covers its tail calls (the
//! pipeline's stages after `xdp_forward`) but not a devmap program, which
//! the kernel runs, and counts, on its own.

use std::os::fd::OwnedFd;
use std::time::SystemTime;

use anyhow::{Context, Result};
use aya::programs::loaded_programs;

/// Keeps the kernel's run-time statistics on (off again when dropped).
pub fn enable() -> Result<OwnedFd> {
    aya::sys::enable_stats(aya::sys::Stats::RunTime)
        .context("BPF_ENABLE_STATS (run-time statistics, kernel 5.8+)")
}

/// Time and runs of some programs, summed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunStats {
    pub run_ns: u64,
    pub runs: u64,
}

impl RunStats {
    /// Nanoseconds a run (`None` before any run).
    pub fn ns_per_run(&self) -> Option<f64> {
        (self.runs > 0).then(|| self.run_ns as f64 / self.runs as f64)
    }

    /// What ran between `before` and `self`.
    pub fn since(&self, before: &RunStats) -> RunStats {
        RunStats {
            run_ns: self.run_ns.saturating_sub(before.run_ns),
            runs: self.runs.saturating_sub(before.runs),
        }
    }
}

/// The kernel keeps 15 characters of a program's name.
fn kernel_name(name: &str) -> &str {
    &name[..name.len().min(15)]
}

/// Ids of the programs named `name` loaded at or after `since` (the ones
/// this bench loaded, not another process's of the same name).
pub fn ids(name: &str, since: SystemTime) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for p in loaded_programs() {
        let p = p.context("listing loaded BPF programs")?;
        let recent = p.loaded_at().is_some_and(|t| t >= since);
        if recent && p.name_as_str() == Some(kernel_name(name)) {
            out.push(p.id());
        }
    }
    Ok(out)
}

/// The programs `ids`' statistics now, summed (a program unloaded since
/// counts nothing).
pub fn read(ids: &[u32]) -> Result<RunStats> {
    let mut s = RunStats::default();
    for p in loaded_programs() {
        let p = p.context("listing loaded BPF programs")?;
        if ids.contains(&p.id()) {
            s.run_ns += p.run_time().as_nanos() as u64;
            s.runs += p.run_count();
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_on_the_kernels_15_characters() {
        assert_eq!(kernel_name("xdp_bench_forward"), "xdp_bench_forwa");
        assert_eq!(kernel_name("xdp_forward"), "xdp_forward");
    }

    #[test]
    fn per_run_and_differences() {
        let a = RunStats {
            run_ns: 1000,
            runs: 10,
        };
        let b = RunStats {
            run_ns: 4000,
            runs: 30,
        };
        assert_eq!(
            b.since(&a),
            RunStats {
                run_ns: 3000,
                runs: 20
            }
        );
        assert_eq!(b.since(&a).ns_per_run(), Some(150.0));
        assert_eq!(RunStats::default().ns_per_run(), None);
    }
}
