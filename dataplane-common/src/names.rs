//! Every map and program name of the eBPF object, in one place.
//!
//! A map's name is its static's identifier in `dataplane-ebpf` and the file
//! name it is pinned under (`/sys/fs/bpf/dataplane/<instance>/<name>`); a
//! program's name is its function's (hook + stage). The eBPF side cannot
//! take these constants (the `#[map]` and `#[xdp]` macros name the symbol),
//! so the lab's fixture table checks that the built object holds exactly
//! [`map::ALL`] and [`prog::ALL`].

/// Map names.
pub mod map {
    /// Per-port configuration (classification, trust, forwarding flags).
    pub const PORT_CONFIG: &str = "PORT_CONFIG";
    /// Port id + 1 by ifindex (below `maps::PORT_INDEX_ENTRIES`;
    /// 0: no port): the packet path's port lookup without a hash.
    pub const PORT_INDEX: &str = "PORT_INDEX";
    /// Port configuration by port id, two slots a port (`slots`).
    pub const PORTS: &str = "PORTS";
    /// Which of a port's two slots is live.
    pub const PORT_SLOT: &str = "PORT_SLOT";
    /// Per-port, per-CPU RX/TX/class/malformed counters.
    pub const PORT_COUNTERS: &str = "PORT_COUNTERS";
    /// Per-CPU counters of frames no configured port owns.
    pub const GLOBAL_COUNTERS: &str = "GLOBAL_COUNTERS";
    /// IPv4 routes (LPM).
    pub const ROUTES_V4: &str = "ROUTES_V4";
    /// IPv6 routes (LPM).
    pub const ROUTES_V6: &str = "ROUTES_V6";
    /// IPv4 host routes (/32, exact match, consulted before the trie).
    pub const HOSTS_V4: &str = "HOSTS_V4";
    /// IPv6 host routes (/128, exact match, consulted before the trie).
    pub const HOSTS_V6: &str = "HOSTS_V6";
    /// Whether each host table may hold routes (`route::HOST_ROUTES_V4`,
    /// `_V6`); a packet skips an empty one.
    pub const HOST_ROUTES: &str = "HOST_ROUTES";
    /// Next hops (egress port, MACs): two slots a next hop (`slots`).
    pub const NEXTHOPS: &str = "NEXTHOPS";
    /// Which of a next hop's two slots is live.
    pub const NEXTHOP_SLOT: &str = "NEXTHOP_SLOT";
    /// The redirect devmap (port id -> ifindex).
    pub const TX_PORTS: &str = "TX_PORTS";
    /// Per-port, per-CPU forwarding counters.
    pub const FWD_COUNTERS: &str = "FWD_COUNTERS";
    /// Scratch between the forward and egress stages (per CPU).
    pub const EGRESS_CTX: &str = "EGRESS_CTX";
    /// Tail-call table of the egress stages.
    pub const EGRESS_STAGE: &str = "EGRESS_STAGE";
    /// Next-hop groups (members, buckets, mode): two slots a group
    /// (`slots`).
    pub const GROUPS: &str = "GROUPS";
    /// Which of a group's two slots is live.
    pub const GROUP_SLOT: &str = "GROUP_SLOT";
    /// Flowlet table (flow -> member, last seen).
    pub const FLOWLETS: &str = "FLOWLETS";
    /// Place mode's flow table (sets of ways: flow -> member, last seen).
    pub const FLOW_WAYS: &str = "FLOW_WAYS";
    /// Per-port rate estimators (bandwidth mode, utilisation).
    pub const PORT_RATE: &str = "PORT_RATE";
    /// The switch's ECMP hash seed.
    pub const HASH_SEED: &str = "HASH_SEED";
    /// The buffer model's locks: one per egress queue, one per ingress PG.
    pub const MODEL_LOCK: &str = "MODEL_LOCK";
    /// Releases the buffer model's timer and PFC reception still owe the
    /// PGs (per CPU, zero between programs).
    pub const MODEL_PENDING: &str = "MODEL_PENDING";
    /// Egress queues of the buffer model (port x TC).
    pub const QUEUES: &str = "QUEUES";
    /// Per-TC rows of the buffer model (WRED, lossless, PG).
    pub const TC_ROWS: &str = "TC_ROWS";
    /// Per-port buffer state (PG use, headroom, pause state).
    pub const PORT_BUF: &str = "PORT_BUF";
    /// The shared buffer pool.
    pub const POOL: &str = "POOL";
    /// Received-PAUSE time per port x TC.
    pub const PAUSE_STATS: &str = "PAUSE_STATS";
    /// Paused runs (transitions, the latest run's start) per port x TC.
    pub const PAUSE_RUNS: &str = "PAUSE_RUNS";
    /// PFC watchdog state and counters per port x TC.
    pub const WD_STATS: &str = "WD_STATS";
    /// PFC XOFF/XON requests to the controller (ring buffer).
    pub const PFC_EVENTS: &str = "PFC_EVENTS";
    /// Per-port, per-CPU buffer-model counters.
    pub const LOSSLESS_COUNTERS: &str = "LOSSLESS_COUNTERS";
    /// Drop snapshots (ring buffer).
    pub const DROP_EVENTS: &str = "DROP_EVENTS";
    /// Scratch handed to the snapshot program (per CPU).
    pub const DROP_CTX: &str = "DROP_CTX";
    /// Per-CPU rate limit of drop snapshots.
    pub const DROP_RATE: &str = "DROP_RATE";
    /// Sink of the benchmark programs.
    pub const BENCH_SINK: &str = "BENCH_SINK";
    /// The minimal forwarder's MAC rewrite.
    pub const BENCH_FWD_MACS: &str = "BENCH_FWD_MACS";
    /// The minimal forwarder's egress port.
    pub const BENCH_FWD_TX: &str = "BENCH_FWD_TX";
    /// Where PFC frames are sent from: the data plane or the controller.
    pub const PFC_PATH: &str = "PFC_PATH";
    /// Every model port with `xdp_devmap_pfc`: the packet path's broadcast.
    pub const PFC_BCAST: &str = "PFC_BCAST";
    /// The timer's PFC decisions, for the controller's timer thread.
    pub const PFC_QUEUE: &str = "PFC_QUEUE";
    /// How many decisions the last tick queued.
    pub const PFC_QUEUED: &str = "PFC_QUEUED";
    /// The packet path's PFC decision on its way to the broadcast (per CPU).
    pub const PFC_DECISION: &str = "PFC_DECISION";
    /// Each port's own MAC (PFC source).
    pub const PORT_MACS: &str = "PORT_MACS";
    /// Broadcast copies `xdp_devmap_pfc` dropped, by egress ifindex.
    pub const PFC_COPY_DROPS: &str = "PFC_COPY_DROPS";

    /// Transmit drops after a redirect by destination ifindex (per CPU).
    pub const XMIT_ERRORS: &str = "XMIT_ERRORS";
    /// The id of the instance's redirect devmap (failed redirects through
    /// it are counted).
    pub const XMIT_MAP_ID: &str = "XMIT_MAP_ID";
    /// Buffer watermarks per port x TC since the controller last read
    /// them (the queue's shared, the PG's shared and headroom bytes);
    /// mmap-able, so the controller reads and resets each mark atomically.
    pub const WATERMARKS: &str = "WATERMARKS";
    /// Bytes of the packets the buffer model dropped, per port and TC (per
    /// CPU; the packets are counted in LOSSLESS_COUNTERS).
    pub const DROP_BYTES: &str = "DROP_BYTES";
    /// Packets the buffer model dropped at their ingress priority group,
    /// per ingress port and TC (per CPU).
    pub const PG_DROPS: &str = "PG_DROPS";
    /// Per-port trimming settings (`trim::TrimPort`).
    pub const TRIM_PORTS: &str = "TRIM_PORTS";
    /// The namespace and field offsets that tell this instance's devices in
    /// `xdp_devmap_xmit` (`maps::XmitDevFilter`).
    pub const XMIT_DEV_FILTER: &str = "XMIT_DEV_FILTER";
    /// The feature probe's broadcast devmap (`probe_devmap_meta` on each
    /// entry).
    pub const PROBE_DEVMAP: &str = "PROBE_DEVMAP";
    /// The feature probe's counts (frames, copies, copies with metadata).
    pub const PROBE_SEEN: &str = "PROBE_SEEN";
    /// Far-side notifications heard, by (ingress port, prefix) (LPM trie).
    pub const FAR: &str = "FAR";
    /// When each (ingress, egress) port pair last sent a far-side
    /// notification.
    pub const FAR_SENT: &str = "FAR_SENT";
    /// Far-side notification counters (per CPU).
    pub const FAR_COUNTERS: &str = "FAR_COUNTERS";
    /// The tail call to `xdp_forward_far_rx`.
    pub const FAR_STAGE: &str = "FAR_STAGE";
    /// Every map of the object.
    pub const ALL: [&str; 60] = [
        PORT_CONFIG,
        PORT_INDEX,
        PORTS,
        PORT_SLOT,
        PORT_COUNTERS,
        GLOBAL_COUNTERS,
        ROUTES_V4,
        ROUTES_V6,
        HOSTS_V4,
        HOSTS_V6,
        HOST_ROUTES,
        NEXTHOPS,
        NEXTHOP_SLOT,
        TX_PORTS,
        FWD_COUNTERS,
        EGRESS_CTX,
        EGRESS_STAGE,
        GROUPS,
        GROUP_SLOT,
        FLOWLETS,
        FLOW_WAYS,
        PORT_RATE,
        HASH_SEED,
        MODEL_LOCK,
        MODEL_PENDING,
        QUEUES,
        TC_ROWS,
        PORT_BUF,
        POOL,
        PAUSE_STATS,
        PAUSE_RUNS,
        WD_STATS,
        PFC_EVENTS,
        LOSSLESS_COUNTERS,
        DROP_EVENTS,
        DROP_CTX,
        DROP_RATE,
        BENCH_SINK,
        BENCH_FWD_MACS,
        BENCH_FWD_TX,
        PFC_PATH,
        PFC_BCAST,
        PFC_QUEUE,
        PFC_QUEUED,
        PFC_DECISION,
        PORT_MACS,
        PFC_COPY_DROPS,
        XMIT_ERRORS,
        XMIT_MAP_ID,
        WATERMARKS,
        DROP_BYTES,
        PG_DROPS,
        TRIM_PORTS,
        XMIT_DEV_FILTER,
        PROBE_DEVMAP,
        PROBE_SEEN,
        FAR,
        FAR_SENT,
        FAR_COUNTERS,
        FAR_STAGE,
    ];
}

/// Program names (`<hook>_<stage>`).
pub mod prog {
    /// Ingress: parse, classify, count; tail-calls forwarding.
    pub const XDP_CLASSIFY: &str = "xdp_classify";
    /// Route, pick a next hop, rewrite, redirect.
    pub const XDP_FORWARD: &str = "xdp_forward";
    /// Received PFC/PAUSE frames (tail call).
    pub const XDP_FORWARD_PFC_RX: &str = "xdp_forward_pfc_rx";
    /// Received far-side notifications (tail call).
    pub const XDP_FORWARD_FAR_RX: &str = "xdp_forward_far_rx";
    /// The buffer model at egress (tail call).
    pub const XDP_FORWARD_EGRESS: &str = "xdp_forward_egress";
    /// Drop snapshots (tail call).
    pub const XDP_DROP_SNAPSHOT: &str = "xdp_drop_snapshot";
    /// The buffer model's timer, run by the controller (BPF_PROG_RUN).
    pub const XDP_LOSSLESS_TICK: &str = "xdp_lossless_tick";
    /// Benchmark baseline: returns XDP_PASS.
    pub const XDP_BENCH_BARE: &str = "xdp_bench_bare";
    /// Benchmark: the parser alone.
    pub const XDP_BENCH_PARSE: &str = "xdp_bench_parse";
    /// Benchmark unit: one clock read.
    pub const XDP_BENCH_CLOCK: &str = "xdp_bench_clock";
    /// Benchmark unit: one helper call doing almost nothing.
    pub const XDP_BENCH_HELPER: &str = "xdp_bench_helper";
    /// Benchmark unit: one hash-map lookup (`PORT_CONFIG`).
    pub const XDP_BENCH_LOOKUP: &str = "xdp_bench_lookup";
    /// Benchmark traffic source (XDP_TX, live frames).
    pub const XDP_BENCH_TX: &str = "xdp_bench_tx";
    /// Benchmark receiver: counts and drops.
    pub const XDP_BENCH_SINK: &str = "xdp_bench_sink";
    /// Benchmark limit: a minimal forwarder (MAC rewrite, fixed redirect).
    pub const XDP_BENCH_FORWARD: &str = "xdp_bench_forward";
    /// Devmap egress program of `PFC_BCAST`: packet copy, PFC frame or drop.
    pub const XDP_DEVMAP_PFC: &str = "xdp_devmap_pfc";

    /// BTF tracepoint xdp_devmap_xmit: counts transmit drops after a
    /// redirect to a device of this namespace.
    pub const TP_XDP_DEVMAP_XMIT: &str = "tp_xdp_devmap_xmit";
    /// Tracepoint xdp:xdp_redirect_err: counts redirects that failed after
    /// the program returned.
    pub const TP_XDP_REDIRECT_ERR: &str = "tp_xdp_redirect_err";
    /// Packet trimming (tail call): cut, rewrite, back to the egress stage
    /// for the trim queue.
    pub const XDP_FORWARD_TRIM: &str = "xdp_forward_trim";
    /// Feature probe: XDP metadata, then a `BPF_F_BROADCAST` redirect to
    /// `PROBE_DEVMAP` (never attached to a switch port).
    pub const PROBE_XDP_REDIRECT: &str = "probe_xdp_redirect";
    /// Feature probe: devmap egress program counting copies and metadata.
    pub const PROBE_DEVMAP_META: &str = "probe_devmap_meta";
    /// Feature probe: a multi-buffer (frags) XDP program.
    pub const PROBE_XDP_FRAGS: &str = "probe_xdp_frags";
    /// Programs only the feature probes load (`load_object` skips them).
    pub const PROBES: [&str; 3] = [PROBE_XDP_REDIRECT, PROBE_DEVMAP_META, PROBE_XDP_FRAGS];
    /// Every program of the object.
    pub const ALL: [&str; 22] = [
        XDP_CLASSIFY,
        XDP_FORWARD,
        XDP_FORWARD_PFC_RX,
        XDP_FORWARD_FAR_RX,
        XDP_FORWARD_EGRESS,
        XDP_DROP_SNAPSHOT,
        XDP_LOSSLESS_TICK,
        XDP_BENCH_BARE,
        XDP_BENCH_PARSE,
        XDP_BENCH_CLOCK,
        XDP_BENCH_HELPER,
        XDP_BENCH_LOOKUP,
        XDP_BENCH_TX,
        XDP_BENCH_SINK,
        XDP_BENCH_FORWARD,
        XDP_DEVMAP_PFC,
        TP_XDP_DEVMAP_XMIT,
        TP_XDP_REDIRECT_ERR,
        XDP_FORWARD_TRIM,
        PROBE_XDP_REDIRECT,
        PROBE_DEVMAP_META,
        PROBE_XDP_FRAGS,
    ];
}
