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

impl Stats {
    /// Adds another partition's counters (a new field fails to compile
    /// here until it is added).
    pub fn add(&mut self, o: &Stats) {
        let Stats {
            flows_started,
            flows_done,
            sent_payload,
            recv_payload,
            dropped_payload,
            dropped_pkts,
            dropped_ctrl,
            ooo_payload,
            dup_payload,
            retx_payload,
            naks,
            timeouts,
            ctrl_sent,
            cnp_sent,
            cnp_rx,
            pfc_rx,
            samples,
        } = o;
        self.flows_started += flows_started;
        self.flows_done += flows_done;
        self.sent_payload += sent_payload;
        self.recv_payload += recv_payload;
        self.dropped_payload += dropped_payload;
        self.dropped_pkts += dropped_pkts;
        self.dropped_ctrl += dropped_ctrl;
        self.ooo_payload += ooo_payload;
        self.dup_payload += dup_payload;
        self.retx_payload += retx_payload;
        self.naks += naks;
        self.timeouts += timeouts;
        self.ctrl_sent += ctrl_sent;
        self.cnp_sent += cnp_sent;
        self.cnp_rx += cnp_rx;
        self.pfc_rx += pfc_rx;
        self.samples.extend_from_slice(samples);
    }
}
