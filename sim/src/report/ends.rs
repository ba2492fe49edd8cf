//! What the report reads of every flow once the run is over, beside its
//! addresses (which every process holds): a compact record a flow (size,
//! collective step, start and finish, 32 bytes) and the collective's
//! dependencies (8 bytes each), which rank 0 of an MPI job, holding only
//! its own partitions' flows during the run, makes from those and what
//! the other ranks send it at the end ([`crate::wire::put_partition`]).
//! A process that held every flow reads its halves instead
//! ([`crate::report::Ends`]). The record imports nothing of the run, so
//! the engine can hold it without a circle.

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
    /// `n` flows, each half to fill ([`FlowEnds::tx`], [`FlowEnds::rx`]).
    pub fn new(n: usize) -> FlowEnds {
        FlowEnds {
            flows: vec![FlowEnd::default(); n],
            deps: Vec::new(),
            sorted: false,
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
