//! Where a process's memory goes: the bytes of the run's arrays this
//! process holds (entries times their size, and the heap their vectors
//! own), and its resident set as the run is built
//! (`DATAPLANE_SIM_MEM=1` prints both to stderr).

use std::mem::size_of;

use crate::engine::Sim;
use crate::event::FlowAddr;
use crate::host::state::{Flow, FlowRx, Host};

/// One array of the run: its entries held here and their bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub name: &'static str,
    pub entries: usize,
    pub bytes: usize,
}

/// Resident set of this process now (KiB, from /proc; 0 if unknown).
pub fn rss_kib() -> u64 {
    status_kib("VmRSS:")
}

/// Peak resident set of this process (KiB, from /proc; 0 if unknown).
pub fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:")
}

fn status_kib(key: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with(key))?;
            l.split_whitespace().nth(1)?.parse().ok()
        })
        .unwrap_or(0)
}

/// Whether `DATAPLANE_SIM_MEM` asks for the memory lines.
pub fn verbose() -> bool {
    std::env::var_os("DATAPLANE_SIM_MEM").is_some()
}

/// Prints this process's resident set at `stage` (with `verbose`).
pub fn stage(stage: &str) {
    if verbose() {
        eprintln!(
            "memory: {stage}: RSS {} KiB (peak {} KiB)",
            rss_kib(),
            peak_rss_kib()
        );
    }
}

impl Sim {
    /// The bytes of the run's arrays this process holds: the flows'
    /// sender and receiver halves (with their vectors' heap), their
    /// addresses, the arrival lists, the hosts (with their queues).
    pub fn footprint(&self) -> Vec<Part> {
        let rx_heap: usize = self
            .rx
            .iter()
            .map(|r| r.children.capacity() * 4 + r.placed.capacity() * 8)
            .sum();
        let host_heap: usize = self
            .hosts
            .iter()
            .map(|h| h.ctrl.capacity() * 4 + h.active.capacity() * 8)
            .sum();
        let parts = || std::iter::once(self).chain(self.others.iter());
        let arrivals: usize = parts().map(|p| p.arrivals.capacity() * 4).sum();
        let hops: usize = parts().map(|p| p.stats.first_hops.len()).sum();
        let hops_cap: usize = parts().map(|p| p.stats.first_hops.capacity()).sum();
        vec![
            Part {
                name: "flows (sender halves)",
                entries: self.flows.held(),
                bytes: self.flows.held() * size_of::<Flow>() + self.flows.map_bytes(),
            },
            Part {
                name: "rx (receiver halves)",
                entries: self.rx.held(),
                bytes: self.rx.held() * size_of::<FlowRx>() + rx_heap + self.rx.map_bytes(),
            },
            Part {
                name: "addrs",
                entries: self.addrs.held(),
                bytes: self.addrs.held() * size_of::<FlowAddr>(),
            },
            Part {
                name: "arrivals",
                entries: arrivals / 4,
                bytes: arrivals,
            },
            Part {
                name: "first hops (the report's flows per uplink per step)",
                entries: hops,
                bytes: hops_cap * size_of::<(u32, u32, u16)>(),
            },
            Part {
                name: "hosts",
                entries: self.hosts.held(),
                bytes: self.hosts.held() * size_of::<Host>() + host_heap,
            },
        ]
    }

    /// Lets go of the flows' halves (every partition's handles on them)
    /// once their figures were taken: rank 0 of an MPI job, before it
    /// gathers the other ranks' ([`crate::report::ends`]).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn drop_halves(&mut self) {
        use crate::cells::Shared;
        for s in self.others.iter_mut() {
            (s.flows, s.rx) = (Shared::new(Vec::new()), Shared::new(Vec::new()));
        }
        (self.flows, self.rx) = (Shared::new(Vec::new()), Shared::new(Vec::new()));
    }

    /// Prints [`Sim::footprint`] (with `verbose`).
    pub fn print_footprint(&self, when: &str) {
        if !verbose() {
            return;
        }
        for p in self.footprint() {
            eprintln!(
                "memory: {when}: {}: {} entries, {} KiB",
                p.name,
                p.entries,
                p.bytes / 1024
            );
        }
        stage(when);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scenario;

    /// The 128-GPU all-reduce's fabric and rings (16 leaves of 8 hosts),
    /// 16 KB, in `partitions`.
    fn scenario(partitions: u32) -> Scenario {
        Scenario {
            topology: "leafspine:16x8:8".into(),
            workload: "allreduce".into(),
            size: "16KB".into(),
            partitions,
            dep_delay: "1us".into(),
            ..Scenario::default()
        }
    }

    /// Each of R processes holds exactly the sender halves of its
    /// partitions' hosts' flows and the receiver halves of the flows they
    /// receive (counted here from the whole run's addresses and
    /// partitions), no other, each half on exactly one rank; its flows'
    /// bytes are about 1/R of the whole run's.
    #[test]
    fn a_rank_holds_its_partitions_flows_only() {
        let whole = Sim::new(scenario(8).params("hash").unwrap()).unwrap();
        let n = whole.n_flows();
        assert_eq!(n, 8 * 2 * 15 * 16, "the rings' flows");
        let bytes = |s: &Sim| -> usize {
            s.footprint()
                .iter()
                .filter(|p| p.name.starts_with("flows") || p.name.starts_with("rx"))
                .map(|p| p.bytes)
                .sum()
        };
        for ranks in [2u32, 4] {
            let (mut tx_seen, mut rx_seen) = (vec![0u32; n], vec![0u32; n]);
            for rank in 0..ranks {
                let p = scenario(8).params("hash").unwrap();
                let s = Sim::new_rank(p, rank, ranks).unwrap();
                assert_eq!(s.n_flows(), n);
                let mine = |node: u32| whole.owner[node as usize] % ranks == rank;
                let (mut tx, mut rx) = (0, 0);
                for f in 0..n {
                    let a = whole.addrs[f];
                    assert_eq!(s.flows.holds(f), mine(a.src), "flow {f} sender half");
                    assert_eq!(s.rx.holds(f), mine(a.dst), "flow {f} receiver half");
                    tx += usize::from(mine(a.src));
                    rx += usize::from(mine(a.dst));
                    tx_seen[f] += u32::from(s.flows.holds(f));
                    rx_seen[f] += u32::from(s.rx.holds(f));
                }
                assert_eq!((s.flows.held(), s.rx.held()), (tx, rx));
                // every rank has some, none all (16 leaves over 8
                // partitions over the ranks: an even share)
                assert_eq!(tx, n / ranks as usize, "rank {rank} of {ranks}");
                let (b, all) = (bytes(&s), bytes(&whole));
                assert!(
                    b * (ranks as usize) < all * 5 / 4,
                    "rank {rank} of {ranks}: {b} bytes of flows, the whole run {all}"
                );
            }
            assert!(tx_seen.iter().chain(&rx_seen).all(|&k| k == 1));
        }
    }

    /// A sparse array reaches its own entries only.
    #[test]
    fn a_sparse_array_holds_what_it_was_given() {
        let mut a = crate::cells::Shared::sparse();
        a.push(10u64);
        a.skip();
        a.push(30);
        assert_eq!((a.len(), a.held()), (3, 2));
        assert_eq!((a[0], a[2], a.get(1)), (10, 30, None));
        assert!(!a.holds(1) && a.holds(2) && !a.holds(3));
        a[2] += 1;
        assert_eq!(a.iter().copied().collect::<Vec<_>>(), [10, 31]);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| a[1]));
        assert!(r.is_err(), "an entry held elsewhere is not read");
        // across many words of the map: every third index held, then a
        // run of 130 held, then none
        let mut b = crate::cells::Shared::sparse();
        let held = |i: usize| (i.is_multiple_of(3) && i < 200) || (200..330).contains(&i);
        for i in 0..400usize {
            if held(i) {
                b.push(i);
            } else {
                b.skip();
            }
        }
        assert_eq!(b.len(), 400);
        assert_eq!(b.held(), (0..400).filter(|&i| held(i)).count());
        for i in 0..410 {
            assert_eq!(b.get(i).copied(), held(i).then_some(i), "index {i}");
        }
    }
}
