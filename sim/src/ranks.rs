//! The processes a partitioned run is spread over ([`crate::partition`]):
//! one (every partition in this process, the default) or the ranks of an
//! MPI job (`crate::mpi`, the `mpi` feature), each running the partitions
//! `p` with `p mod R = rank`.
//!
//! Between windows the run needs a few figures of every partition (the
//! earliest pending event, the flows done, ...): each process computes
//! them over its own partitions ([`Figures::of`]) and [`Ranks::figures`]
//! combines them over the processes. What a window's partitions posted
//! to partitions of other processes travels in [`Ranks::exchange`], into
//! the same mailboxes, so the receivers take them in the same order as
//! in one process: the report depends on the partitions, never on the
//! processes (nor the threads).

use crate::cells::Shared;
use crate::engine::Sim;
use crate::event::Msg;

/// What the run's coordinator decides the next window from, over some
/// partitions (all of them once combined).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Figures {
    /// The earliest pending event, in a queue or a mailbox (`u64::MAX`:
    /// none).
    pub next: u64,
    pub flows_done: u64,
    /// Partitions with flows not yet started from their arrival lists.
    pub arriving: u64,
    /// The latest partition clock.
    pub now: u64,
    pub events: u64,
}

impl Figures {
    /// The figures of `parts`.
    pub(crate) fn of(parts: &[&mut Sim]) -> Figures {
        let next = parts
            .iter()
            .filter_map(|p| p.q.peek_time())
            .chain(parts.iter().map(|p| p.out_min))
            .min()
            .unwrap_or(u64::MAX);
        Figures {
            next,
            flows_done: parts.iter().map(|p| p.stats.flows_done).sum(),
            arriving: parts
                .iter()
                .filter(|p| p.next_arrival < p.arrivals.len())
                .count() as u64,
            now: parts.iter().map(|p| p.now).max().unwrap_or(0),
            events: parts.iter().map(|p| p.events).sum(),
        }
    }

    /// These and another process's figures.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn combine(self, o: Figures) -> Figures {
        Figures {
            next: self.next.min(o.next),
            flows_done: self.flows_done + o.flows_done,
            arriving: self.arriving + o.arriving,
            now: self.now.max(o.now),
            events: self.events + o.events,
        }
    }

    /// As words (what an MPI rank sends the others).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn words(self) -> [u64; 5] {
        [
            self.next,
            self.flows_done,
            self.arriving,
            self.now,
            self.events,
        ]
    }

    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub fn from_words(w: [u64; 5]) -> Figures {
        Figures {
            next: w[0],
            flows_done: w[1],
            arriving: w[2],
            now: w[3],
            events: w[4],
        }
    }
}

/// The processes of a run, as its coordinator sees them.
pub(crate) trait Ranks {
    /// Whether partition `p` runs in this process.
    fn runs(&self, p: usize) -> bool;

    /// After a window: what this process's partitions posted to other
    /// processes' partitions (their boxes of `parity` in `mail`, the run's
    /// mailboxes) goes to them, emptied here, and what theirs posted to
    /// this process's comes into its boxes, as if posted here.
    fn exchange(&mut self, mail: &mut Shared<Vec<Msg>>, parity: usize);

    /// The run's figures from this process's.
    fn figures(&mut self, mine: Figures) -> Figures;

    /// The largest of every process's `v`.
    fn max(&mut self, v: u64) -> u64;
}

/// Every partition in this process.
pub(crate) struct OneProcess;

impl Ranks for OneProcess {
    fn runs(&self, _: usize) -> bool {
        true
    }
    fn exchange(&mut self, _: &mut Shared<Vec<Msg>>, _: usize) {}
    fn figures(&mut self, mine: Figures) -> Figures {
        mine
    }
    fn max(&mut self, v: u64) -> u64 {
        v
    }
}
