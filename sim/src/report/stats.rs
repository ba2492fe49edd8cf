//! Counters a run keeps while it runs (the report is made from them).

/// Counters kept during the run.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub flows_started: u64,
    pub flows_done: u64,
    /// RDMA payload bytes: sent by hosts (retransmissions included),
    /// received by hosts (in order, out of order, duplicates), dropped.
    pub sent_payload: u64,
    pub recv_payload: u64,
    pub dropped_payload: u64,
    pub dropped_pkts: u64,
    pub dropped_ctrl: u64,
    pub ooo_payload: u64,
    pub dup_payload: u64,
    pub retx_payload: u64,
    pub naks: u64,
    pub timeouts: u64,
    pub ctrl_sent: u64,
    pub cnp_sent: u64,
    pub cnp_rx: u64,
    pub pfc_rx: u64,
    /// Queue samples: (time ns, largest RoCE queue in the fabric, sum).
    pub samples: Vec<(u64, u32, u64)>,
}
