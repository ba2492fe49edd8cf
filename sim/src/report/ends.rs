//! What the report reads of every flow once the run is over, beside its
//! addresses (which every process holds): a compact record a flow (size,
//! collective step, start and finish, 32 bytes) and the collective's
//! dependencies (8 bytes each), which rank 0 of an MPI job, holding only
//! its own partitions' flows during the run, makes from those and what
//! the other ranks send it at the end ([`crate::wire::put_partition`]).
//! A process that held every flow reads its halves instead ([`Ends`]).

use crate::engine::Sim;
use crate::host::state::{Flow, FlowRx};
use crate::wire::Reader;

/// One flow, as the report reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowEnd {
    pub size: u64,
    pub start_ns: u64,
    /// When the last byte arrived (0: not yet).
    pub finish_ns: u64,
    /// Its collective job, or [`crate::host::state::NONE`].
    pub job: u32,
    pub step: u32,
}

/// Every flow's [`FlowEnd`], and which flows wait for which.
#[derive(Clone, Debug, Default)]
pub struct FlowEnds {
    pub flows: Vec<FlowEnd>,
    /// (flow, a flow waiting for it), by flow ([`FlowEnds::children`]).
    deps: Vec<(u32, u32)>,
    sorted: bool,
}

impl FlowEnds {
    /// The flows of `sim`, each half to fill ([`FlowEnds::tx`],
    /// [`FlowEnds::rx`]).
    pub fn new(sim: &Sim) -> FlowEnds {
        FlowEnds {
            flows: vec![FlowEnd::default(); sim.n_flows()],
            deps: Vec::new(),
            sorted: false,
        }
    }

    /// The halves `sim` holds.
    pub fn fill(&mut self, sim: &Sim) {
        for f in 0..self.flows.len() {
            if let Some(fl) = sim.flows.get(f) {
                self.tx(f, fl.size, fl.start_ns, fl.job, fl.step);
            }
            if let Some(r) = sim.rx.get(f) {
                self.rx(f, r.finish_ns, &r.children);
            }
        }
    }

    /// Flow `f`'s sender half's figures.
    pub fn tx(&mut self, f: usize, size: u64, start_ns: u64, job: u32, step: u32) {
        let e = &mut self.flows[f];
        (e.size, e.start_ns, e.job, e.step) = (size, start_ns, job, step);
    }

    /// Flow `f`'s receiver half's figures.
    pub fn rx(&mut self, f: usize, finish_ns: u64, children: &[u32]) {
        self.flows[f].finish_ns = finish_ns;
        self.deps.extend(children.iter().map(|&c| (f as u32, c)));
        self.sorted = false;
    }

    /// Flow `f`'s sender half's figures, as [`put_tx`] wrote them.
    pub fn get_tx(&mut self, f: usize, r: &mut Reader) {
        let size = r.next("a flow's size");
        let start = r.next("a flow's start");
        let js = r.next("a flow's job and step");
        self.tx(f, size, start, js as u32, (js >> 32) as u32);
    }

    /// Flow `f`'s receiver half's figures, as [`put_rx`] wrote them.
    pub fn get_rx(&mut self, f: usize, r: &mut Reader) {
        let finish = r.next("a flow's finish");
        let n = r.next("a flow's children");
        let children: Vec<u32> = (0..n).map(|_| r.next("a child") as u32).collect();
        self.rx(f, finish, &children);
    }

    /// Every half filled: the dependencies by flow.
    pub fn finish(&mut self) {
        self.deps.sort_unstable();
        self.sorted = true;
    }

    /// Calls `g` with each flow waiting for flow `f` (ascending).
    pub fn each_child(&self, f: u32, g: impl FnMut(u32)) {
        assert!(self.sorted, "flow ends read before they were finished");
        let from = self.deps.partition_point(|&(p, _)| p < f);
        self.deps[from..]
            .iter()
            .take_while(|&&(p, _)| p == f)
            .map(|&(_, c)| c)
            .for_each(g);
    }
}

/// What the report reads of every flow: the halves of a process that
/// holds them all (one process's run), or the record rank 0 of an MPI
/// job gathered.
#[derive(Clone, Copy)]
pub enum Ends<'a> {
    Halves(&'a Sim),
    Record(&'a FlowEnds),
}

impl Ends<'_> {
    pub fn len(&self) -> usize {
        match self {
            Ends::Halves(s) => s.n_flows(),
            Ends::Record(e) => e.flows.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Flow `f`'s figures.
    #[inline]
    pub fn get(&self, f: usize) -> FlowEnd {
        match self {
            Ends::Halves(s) => {
                let (fl, r) = (&s.flows[f], &s.rx[f]);
                FlowEnd {
                    size: fl.size,
                    start_ns: fl.start_ns,
                    finish_ns: r.finish_ns,
                    job: fl.job,
                    step: fl.step,
                }
            }
            Ends::Record(e) => e.flows[f],
        }
    }

    /// Calls `g` with each flow waiting for flow `f`.
    pub fn each_child(&self, f: u32, mut g: impl FnMut(u32)) {
        match self {
            Ends::Halves(s) => s.rx[f as usize].children.iter().for_each(|&c| g(c)),
            Ends::Record(e) => e.each_child(f, g),
        }
    }
}

/// Appends what the report reads of sender half `fl`.
pub fn put_tx(out: &mut Vec<u64>, fl: &Flow) {
    out.extend([
        fl.size,
        fl.start_ns,
        u64::from(fl.job) | u64::from(fl.step) << 32,
    ]);
}

/// Appends what the report reads of receiver half `r`.
pub fn put_rx(out: &mut Vec<u64>, r: &FlowRx) {
    out.extend([r.finish_ns, r.children.len() as u64]);
    out.extend(r.children.iter().map(|&c| u64::from(c)));
}
