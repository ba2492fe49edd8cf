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
    /// Bytes each uplink sent so far, at each queue sample (uplinks in
    /// switch and port order).
    pub uplink_samples: Vec<(u64, Vec<u64>)>,
    /// Collectives: where each flow's first packet left each switch that
    /// chose among members: (flow, switch, port).
    pub first_hops: Vec<(u32, u32, u16)>,
    /// Flows moved to another member while they had a path (a gap or a
    /// member down), every mode that keeps per-flow state.
    pub lb_moves: u64,
    /// Place mode: flows that lost their entry to another active flow.
    pub lb_evictions: u64,
    /// The load balancer's trace, when kept (`trace_lb`).
    pub lb_trace: Vec<super::trace::LbEvent>,
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
            uplink_samples,
            first_hops,
            lb_moves,
            lb_evictions,
            lb_trace,
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
        self.uplink_samples.extend_from_slice(uplink_samples);
        self.first_hops.extend_from_slice(first_hops);
        self.lb_moves += lb_moves;
        self.lb_evictions += lb_evictions;
        self.lb_trace.extend_from_slice(lb_trace);
    }
}
