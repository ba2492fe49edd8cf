//! The emulated hosts' "NIC receive path" on this testbed is the kernel's
//! softirq work, which a loaded 2-CPU machine defers to the `ksoftirqd/N`
//! threads: ordinary (SCHED_OTHER) threads that then wait behind the
//! emulated senders and receivers for milliseconds. A PFC frame the switch
//! sent in microseconds then reaches the sender's socket ~10 ms later (seen
//! in `incast_pfc_lossless`: decision -> sender's kernel p99 ~80 us, max
//! 9-11 ms in about one run of two), which no headroom sized from the
//! switch's own response time covers. On real hardware PFC reception is in
//! the NIC's MAC. [`Boost`] gives the `ksoftirqd` threads SCHED_FIFO
//! priority 1 (below the controller's PFC and timer threads) for the length
//! of a test and restores their policy when dropped.

use anyhow::Result;

/// `ksoftirqd/*` raised to SCHED_FIFO 1 until dropped.
pub struct Boost {
    saved: Vec<(i32, i32, i32)>,
}

impl Boost {
    /// Raises every `ksoftirqd/N` thread; threads it cannot change are
    /// skipped (the result says how many it raised).
    pub fn raise() -> Result<Boost> {
        let mut saved = Vec::new();
        for e in std::fs::read_dir("/proc")?.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
                continue;
            };
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if !comm.starts_with("ksoftirqd/") {
                continue;
            }
            // SAFETY: plain scheduler syscalls on a pid; results checked.
            unsafe {
                let policy = libc::sched_getscheduler(pid);
                let mut p = libc::sched_param { sched_priority: 0 };
                if policy < 0 || libc::sched_getparam(pid, &mut p) != 0 {
                    continue;
                }
                let fifo = libc::sched_param { sched_priority: 1 };
                if libc::sched_setscheduler(pid, libc::SCHED_FIFO, &fifo) == 0 {
                    saved.push((pid, policy, p.sched_priority));
                }
            }
        }
        Ok(Boost { saved })
    }

    /// How many threads were raised.
    pub fn raised(&self) -> usize {
        self.saved.len()
    }
}

impl Drop for Boost {
    fn drop(&mut self) {
        for &(pid, policy, prio) in &self.saved {
            let p = libc::sched_param {
                sched_priority: prio,
            };
            // SAFETY: restores what `raise` read.
            unsafe { libc::sched_setscheduler(pid, policy, &p) };
        }
    }
}
