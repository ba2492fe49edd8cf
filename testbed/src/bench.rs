//! What the lab's benches share: the paths they take, CPU pinning, and
//! the results file's records ([`bench_results`]: every benchmark of the
//! project merges its figures into `target/bench/results.json` by name).

use std::path::PathBuf;

pub use bench_results::{machine, merge as merge_results, Record};

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
