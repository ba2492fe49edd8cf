//! The plan: a validated configuration, resolved into what every target
//! (the eBPF tables, the P4 entries) is configured from.

use dataplane_common::maps::PortConfig;

/// XDP attach mode of a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum XdpAttach {
    /// Native (driver) mode, falling back to generic when unsupported.
    Auto,
    Native,
    Generic,
}

/// A port ready to be written to the data plane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortPlan {
    pub name: String,
    pub attach: XdpAttach,
    /// MAC from the config; `None`: read from the interface when applied.
    pub mac: Option<[u8; 6]>,
    pub config: PortConfig,
}

/// Members a group may have (the data plane's group entry size).
pub const MAX_GROUP_MEMBERS: usize = 16;

/// Load-balancing modes of a group.
pub use dataplane_common::lb::MODE_NAMES as MODES;

/// A next hop: index = position in `Plan::nexthops`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NextHopPlan {
    pub name: String,
    /// Index into `Plan::ports`.
    pub port: usize,
    pub mac: [u8; 6],
}

/// A group: index = position in `Plan::groups`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupPlan {
    pub name: String,
    /// Index into [`MODES`].
    pub mode: u8,
    pub flowlet_timeout_ns: u32,
    /// `uet_entropy = true`: UET packets placed by their entropy value
    /// (`dataplane_common::lb::GROUP_F_UET_ENTROPY`).
    pub uet_entropy: bool,
    /// (next-hop index, weight 1..=255).
    pub members: Vec<(u16, u8)>,
}

/// Where a route points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    NextHop(u16),
    Group(u16),
    Local,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutePlan {
    pub addr: std::net::IpAddr,
    pub len: u8,
    pub target: Target,
}

/// Who sends the PFC frames the buffer model decides (`[buffer] pfc_tx`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PfcTx {
    /// The data plane where the kernel can (devmap programs, live-frame
    /// test runs), else the controller.
    Auto,
    /// The data plane; `up` fails where the kernel cannot.
    DataPlane,
    /// The controller's AF_PACKET sender (ring buffer, real-time thread).
    Userspace,
}

/// Default `response_us` with the data plane sending PFC: above the p99
/// decision-to-wire time `dataplane-pfcbench` measured for this path
/// (`pfc.dp.emit_latency_p99_us`, README's benchmark table), with margin.
pub const RESPONSE_US_DATAPLANE: i64 = 50;
/// Default `response_us` with the controller sending PFC: above the p99
/// `dataplane-pfcbench` measured for this path on the 2-vCPU reference
/// machine (p50 19 us, p99 72-336 us over runs: a woken thread's tail).
pub const RESPONSE_US_USERSPACE: i64 = 150;

impl PfcTx {
    /// The headroom's default response time for this choice (`Auto`
    /// assumes the data plane; `up` re-plans if it falls back).
    pub fn default_response_us(self) -> i64 {
        match self {
            PfcTx::Auto | PfcTx::DataPlane => RESPONSE_US_DATAPLANE,
            PfcTx::Userspace => RESPONSE_US_USERSPACE,
        }
    }
}

/// The buffer model's tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferPlan {
    pub pool_size: u32,
    pub tick_ns: u64,
    /// Who sends PFC frames.
    pub pfc_tx: PfcTx,
    /// The PFC decision-to-wire time the headroom covers, ns.
    pub response_ns: u64,
    /// Per port (index = port id).
    pub ports: Vec<dataplane_common::buffer::PortBuffer>,
    /// Headroom per port and how it was obtained.
    pub headroom: Vec<(dataplane_common::lossless::Headroom, &'static str)>,
}

/// A validated configuration, resolved to map values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub instance: String,
    pub hash_seed: u32,
    /// The buffer model, when configured.
    pub buffer: Option<BufferPlan>,
    /// The PFC watchdog: its configuration and poll interval.
    pub pfcwd: Option<(dataplane_common::lossless::PfcWdConfig, u64)>,
    /// The PFC decision-to-wire time the headroom covers (`[buffer]
    /// response_us`), ns.
    pub buffer_response_ns: u64,
    pub ports: Vec<PortPlan>,
    pub nexthops: Vec<NextHopPlan>,
    pub groups: Vec<GroupPlan>,
    pub routes: Vec<RoutePlan>,
    /// `[routing]`: routes learned from the kernel, when configured.
    pub routing: Option<RoutingPlan>,
    /// `[dcbx]`, when configured and enabled.
    pub dcbx: Option<DcbxPlan>,
    /// Packet trimming, when `[switch_trimming]` is configured.
    pub trim: Option<TrimPlan>,
}

/// Which DSCPs the DCBX application table lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppDscp {
    /// DSCPs the port's map puts on a lossless priority.
    Lossless,
    All,
    None,
}

/// `[dcbx]`: the LLDP timers and what every port advertises besides its
/// own PFC vector and DSCP map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DcbxPlan {
    pub tx_interval_s: u32,
    /// TTL of the advertisement, seconds (interval x hold, at most 65535).
    pub ttl_s: u16,
    pub fast_tx_count: u32,
    pub willing: bool,
    /// `None`: each port's lowest lossless priority.
    pub roce_priority: Option<u8>,
    pub app_dscp: AppDscp,
    pub ets: dataplane_common::wire::dcbx::EtsTables,
    pub reco: dataplane_common::wire::dcbx::EtsTables,
}

/// Packet trimming: the switch-wide settings and the queues that trim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrimPlan {
    /// `dscp`: the static `dscp_value` (0 with "from-tc"); `queue`: the
    /// static queue or `trim::QUEUE_DYNAMIC`.
    pub config: dataplane_common::trim::TrimConfig,
    /// `tc_value` when `dscp_value = "from-tc"`.
    pub from_tc: Option<u8>,
    /// Per port (plan order): bit q set when queue q's profile trims.
    pub queues: Vec<u8>,
    /// Per port (plan order): the DSCP its trimmed packets get (with
    /// "from-tc" its `tc_to_dscp_map` entry for `tc_value`; 0 for a port
    /// whose queues do not trim).
    pub dscp: Vec<u8>,
}

/// Route table sizes of the data plane's LPM tries as compiled (without
/// `[routing]`); `[routing] max_routes_*` sets them at load, up to
/// [`ROUTES_V4_MAX`] / [`ROUTES_V6_MAX`].
pub use dataplane_common::route::{ROUTES_V4_CAPACITY, ROUTES_V6_CAPACITY};
/// The largest route tables `[routing]` may ask for (LPM tries allocate per
/// entry, so a large table costs only what it holds).
pub const ROUTES_V4_MAX: u32 = 1 << 22;
pub const ROUTES_V6_MAX: u32 = 1 << 20;

/// `[routing] source = "kernel"`: the policy of routes learned from the
/// kernel FIB.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutingPlan {
    /// Kernel routing table followed (254 = main).
    pub table: u32,
    /// Mode (index into [`MODES`]) of learned multipath groups.
    pub default_mode: u8,
    pub flowlet_timeout_ns: u32,
    /// Route table sizes (IPv4, IPv6), set at load: routes beyond them are
    /// counted, not written.
    pub max_routes_v4: u32,
    pub max_routes_v6: u32,
    /// Per-prefix mode overrides (address, length, mode index).
    pub policy: Vec<(std::net::IpAddr, u8, u8)>,
    /// Learned groups carry `GROUP_F_UET_ENTROPY`.
    pub uet_entropy: bool,
}

impl Plan {
    /// Routing is on when the config has routes (or learns them from the
    /// kernel, `[routing]`): ports then run
    /// `xdp_forward` instead of `xdp_classify`.
    pub fn forwarding(&self) -> bool {
        !self.routes.is_empty() || self.routing.is_some()
    }
}
