//! The TOML file as written: one struct per section, SONiC field names,
//! serde defaults. Nothing here is checked; `validate` does that.

use std::collections::BTreeMap;

use serde::Deserialize;

/// Name of the built-in maps (SONiC's default).
pub const AZURE: &str = "AZURE";

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub switch: SwitchSection,
    /// SONiC DSCP_TO_TC_MAP tables by name.
    #[serde(default)]
    pub dscp_to_tc_map: BTreeMap<String, BTreeMap<String, toml::Value>>,
    /// SONiC DOT1P_TO_TC_MAP tables by name.
    #[serde(default)]
    pub dot1p_to_tc_map: BTreeMap<String, BTreeMap<String, toml::Value>>,
    #[serde(default, rename = "port")]
    pub ports: Vec<PortSection>,
    #[serde(default, rename = "nexthop")]
    pub nexthops: Vec<NextHopSection>,
    #[serde(default, rename = "group")]
    pub groups: Vec<GroupSection>,
    #[serde(default, rename = "route")]
    pub routes: Vec<RouteSection>,
    /// The buffer model (lossless stage); absent: no model.
    pub buffer: Option<BufferSection>,
    /// SONiC WRED_PROFILE tables by name; "AZURE_LOSSLESS" is built in.
    #[serde(default)]
    pub wred_profile: BTreeMap<String, WredSection>,
    /// The PFC watchdog (SONiC pfcwd) on every lossless queue; absent: off.
    pub pfcwd: Option<PfcwdSection>,
    /// Routes from the kernel's FIB (`source = "kernel"`); absent: static
    /// routes only.
    pub routing: Option<RoutingSection>,
    /// DCBX (LLDP with IEEE 802.1Qaz TLVs) on every port; absent: off.
    pub dcbx: Option<DcbxSection>,
    /// Ultra Ethernet (UDP 4793): how its traffic is classified beside
    /// RoCEv2; absent: UET is classified by the ports' maps like any packet.
    pub uet: Option<UetSection>,
    /// SONiC SWITCH_TRIMMING|GLOBAL: trim size, DSCP and queue; absent: no
    /// trimming.
    pub switch_trimming: Option<SwitchTrimmingSection>,
    /// SONiC TC_TO_DSCP_MAP tables by name ("tc" = dscp), used by the
    /// trimming's `dscp_value = "from-tc"` through `[[port]]
    /// tc_to_dscp_map`.
    #[serde(default)]
    pub tc_to_dscp_map: BTreeMap<String, BTreeMap<String, toml::Value>>,
    /// SONiC BUFFER_PROFILE tables by name (here: the discard action of the
    /// queues `[[port]] buffer_queue` gives them).
    #[serde(default)]
    pub buffer_profile: BTreeMap<String, BufferProfileSection>,
}

/// `[dcbx]`: what the controller advertises in LLDP on every port and how
/// often (LLDP's defaults).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcbxSection {
    #[serde(default = "default_true")]
    pub enable: bool,
    /// LLDP msgTxInterval, seconds.
    #[serde(default = "default_tx_interval")]
    pub tx_interval_s: i64,
    /// LLDP msgTxHold: TTL = tx_interval_s x tx_hold.
    #[serde(default = "default_tx_hold")]
    pub tx_hold: i64,
    /// LLDP txFastInit: frames one second apart when a link comes up.
    #[serde(default = "default_fast_count")]
    pub fast_tx_count: i64,
    /// The switch's willing bit (PFC and ETS): false, the switch's
    /// configuration is the one hosts adopt.
    #[serde(default)]
    pub willing: bool,
    /// Priority of RoCEv2 (UDP 4791) in the application table; default:
    /// each port's lowest lossless priority.
    pub roce_priority: Option<i64>,
    /// DSCP entries of the application table: "lossless" (DSCPs the port's
    /// map puts on a lossless priority), "all" (all 64) or "none".
    #[serde(default = "default_app_dscp")]
    pub app_dscp: String,
    /// ETS bandwidth per traffic class, percent (ETS classes sum to 100).
    #[serde(default = "default_ets_bw")]
    pub ets_bandwidth: Vec<i64>,
    /// Transmission selection per traffic class: "ets" or "strict".
    #[serde(default = "default_ets_tsa")]
    pub ets_tsa: Vec<String>,
    /// The ETS Recommendation for willing peers (default: the ETS
    /// configuration).
    pub reco_bandwidth: Option<Vec<i64>>,
    pub reco_tsa: Option<Vec<String>>,
}

fn default_true() -> bool {
    true
}
fn default_tx_interval() -> i64 {
    30
}
fn default_tx_hold() -> i64 {
    4
}
fn default_fast_count() -> i64 {
    4
}
fn default_app_dscp() -> String {
    "lossless".into()
}
fn default_ets_bw() -> Vec<i64> {
    vec![12, 12, 12, 12, 13, 13, 13, 13]
}
fn default_ets_tsa() -> Vec<String> {
    vec!["ets".into(); 8]
}

/// `[switch_trimming]` with SONiC's field names.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchTrimmingSection {
    /// Bytes a trimmed packet keeps (SONiC's default 128).
    #[serde(default = "default_trim_size")]
    pub size: i64,
    /// DSCP of trimmed packets: 0-63, or "from-tc" (each egress port's
    /// `tc_to_dscp_map` entry for `tc_value`).
    pub dscp_value: toml::Value,
    /// The class whose DSCP a trimmed packet gets with "from-tc" (0-7).
    pub tc_value: Option<toml::Value>,
    /// Queue of trimmed packets: 0-7, or "dynamic" (the class the ingress
    /// port's DSCP map gives the trim DSCP).
    pub queue_index: toml::Value,
}

fn default_trim_size() -> i64 {
    128
}

/// `[buffer_profile.NAME]`: the fields of SONiC's BUFFER_PROFILE this data
/// plane takes from a profile.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferProfileSection {
    /// What a queue with this profile does with a packet the shared buffer
    /// cannot admit: "drop" (the default) or "trim".
    #[serde(default = "default_discard")]
    pub packet_discard_action: String,
}

fn default_discard() -> String {
    "drop".into()
}

/// `[uet]`: UET classification beside RoCEv2.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UetSection {
    /// Class of UET feedback (PDS ACK, NACK, control), as `switch.cnp_tc` is
    /// for RoCEv2 CNPs; absent: the DSCP map decides.
    pub feedback_tc: Option<i64>,
}

/// `[routing]`: where routes come from and the policy of learned groups.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingSection {
    /// `kernel` (follow the kernel FIB over netlink) or `static`.
    #[serde(default = "default_routing_source")]
    pub source: String,
    /// Kernel routing table to follow (254 = main).
    #[serde(default = "default_routing_table")]
    pub table: i64,
    /// Load-balancing mode of learned multipath groups.
    #[serde(default = "default_routing_mode")]
    pub default_mode: String,
    #[serde(default = "default_flowlet_us")]
    pub flowlet_timeout_us: i64,
    /// Route table sizes of the data plane (IPv4, IPv6 prefixes).
    #[serde(default = "default_max_v4")]
    pub max_routes_v4: i64,
    #[serde(default = "default_max_v6")]
    pub max_routes_v6: i64,
    /// Per-prefix mode overrides: a learned route inside `prefix` (longest
    /// match) gets `mode`.
    #[serde(default)]
    pub policy: Vec<RoutingPolicySection>,
    /// Learned groups place UET by its entropy value (as `[[group]]
    /// uet_entropy`).
    #[serde(default)]
    pub uet_entropy: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoutingPolicySection {
    pub prefix: String,
    pub mode: String,
}

fn default_routing_source() -> String {
    "kernel".into()
}
fn default_routing_table() -> i64 {
    254
}
fn default_routing_mode() -> String {
    "hash".into()
}
fn default_max_v4() -> i64 {
    131072
}
fn default_max_v6() -> i64 {
    32768
}

/// `[pfcwd]` with SONiC's defaults.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfcwdSection {
    #[serde(default = "default_wd_ms")]
    pub detection_time_ms: i64,
    #[serde(default = "default_wd_ms")]
    pub restoration_time_ms: i64,
    #[serde(default = "default_wd_ms")]
    pub poll_interval_ms: i64,
    #[serde(default = "default_wd_action")]
    pub action: String,
}

fn default_wd_ms() -> i64 {
    200
}
fn default_wd_action() -> String {
    "drop".into()
}

/// `[buffer]`: the shared pool and how headroom is sized.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BufferSection {
    /// Shared pool bytes (SONiC ingress_lossless_pool, shared part).
    #[serde(default = "default_pool")]
    pub pool_size: i64,
    /// dynamic_th of lossless PGs (-8..7; threshold = 2^th x free).
    #[serde(default)]
    pub dynamic_th: i64,
    /// dynamic_th of lossy PGs.
    #[serde(default = "default_lossy_th")]
    pub lossy_dynamic_th: i64,
    /// Reserved bytes per PG.
    #[serde(default)]
    pub reserve: i64,
    /// Hysteresis below the threshold before XON (bytes).
    #[serde(default = "default_xon_offset")]
    pub xon_offset: i64,
    /// Headroom inputs: MTU, cable length, PFC emit latency.
    #[serde(default = "default_mtu")]
    pub mtu: i64,
    #[serde(default = "default_cable")]
    pub cable_length_m: i64,
    /// PFC decision-to-wire time the headroom covers; default: the measured
    /// p99 of the emission path (`pfc_tx`) with a margin.
    #[serde(default)]
    pub response_us: Option<i64>,
    /// Who sends PFC frames: "auto" (the default: the data plane where the
    /// kernel can, else the controller), "dataplane", "userspace" (the
    /// controller's AF_PACKET sender).
    #[serde(default = "default_pfc_tx")]
    pub pfc_tx: String,
    /// Period of the model's timer (drain of quiet queues, XON, refresh).
    #[serde(default = "default_tick_us")]
    pub tick_us: i64,
}

fn default_pool() -> i64 {
    16 * 1024 * 1024
}
fn default_lossy_th() -> i64 {
    3
}
fn default_xon_offset() -> i64 {
    3072
}
fn default_mtu() -> i64 {
    9100
}
fn default_cable() -> i64 {
    5
}
fn default_pfc_tx() -> String {
    "auto".into()
}
fn default_tick_us() -> i64 {
    200
}

/// `[wred_profile.NAME]` with SONiC's field names.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WredSection {
    #[serde(default = "default_ecn")]
    pub ecn: String,
    pub green_min_threshold: i64,
    pub green_max_threshold: i64,
    #[serde(default = "default_prob")]
    pub green_drop_probability: i64,
    #[serde(default)]
    pub wred_green_enable: bool,
}

fn default_ecn() -> String {
    "ecn_all".into()
}
fn default_prob() -> i64 {
    5
}

/// A static neighbour: `[[nexthop]] name, port, mac`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextHopSection {
    pub name: String,
    pub port: String,
    pub mac: String,
}

/// A next-hop group: `[[group]] name, mode, members, flowlet_timeout_us`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSection {
    pub name: String,
    #[serde(default = "default_mode")]
    pub mode: String,
    #[serde(default = "default_flowlet_us")]
    pub flowlet_timeout_us: i64,
    /// UET packets (UDP 4793) keep the path of their entropy value (the UDP
    /// source port) and a new value is hashed anew, whatever `mode`; other
    /// traffic keeps `mode`.
    #[serde(default)]
    pub uet_entropy: bool,
    pub members: Vec<MemberSection>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberSection {
    pub nexthop: String,
    #[serde(default = "default_weight")]
    pub weight: i64,
}

/// A route: `[[route]] prefix` and one of `nexthop`, `group`, `local`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteSection {
    pub prefix: String,
    pub nexthop: Option<String>,
    pub group: Option<String>,
    #[serde(default)]
    pub local: bool,
}

fn default_mode() -> String {
    "hash".into()
}
fn default_flowlet_us() -> i64 {
    100
}
fn default_weight() -> i64 {
    1
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwitchSection {
    #[serde(default = "default_instance")]
    pub name: String,
    #[serde(default = "default_cnp_tc")]
    pub cnp_tc: i64,
    #[serde(default = "default_malformed")]
    pub malformed: String,
    /// Seed of the ECMP hash; default: derived from `name`, so switches of
    /// different tiers hash differently.
    pub hash_seed: Option<i64>,
}

impl Default for SwitchSection {
    fn default() -> Self {
        SwitchSection {
            name: default_instance(),
            cnp_tc: default_cnp_tc(),
            malformed: default_malformed(),
            hash_seed: None,
        }
    }
}

fn default_instance() -> String {
    "default".into()
}
fn default_cnp_tc() -> i64 {
    6
}
fn default_malformed() -> String {
    "pass".into()
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PortSection {
    pub name: String,
    #[serde(default = "default_trust")]
    pub trust: String,
    #[serde(default = "default_map")]
    pub dscp_to_tc_map: String,
    #[serde(default = "default_map")]
    pub dot1p_to_tc_map: String,
    #[serde(default = "default_pfc_enable")]
    pub pfc_enable: String,
    #[serde(default)]
    pub default_tc: i64,
    /// Overrides `switch.malformed` for this port.
    pub malformed: Option<String>,
    /// XDP attach mode: auto | native | generic.
    #[serde(default = "default_xdp_mode")]
    pub xdp_mode: String,
    /// The port's MAC; read from the interface when absent.
    pub mac: Option<String>,
    /// Line rate: "100G", "25G", "400M" or Mb/s as an integer.
    pub speed: Option<toml::Value>,
    /// WRED/ECN profile of this port's lossless queues (default
    /// AZURE_LOSSLESS).
    pub wred_profile: Option<String>,
    /// WRED/ECN profile of its lossy queues (default: none).
    pub lossy_wred_profile: Option<String>,
    /// Cable length for the headroom formula (default `[buffer]`'s).
    pub cable_length_m: Option<i64>,
    /// Explicit headroom (bytes) instead of the formula.
    pub headroom_xoff: Option<i64>,
    pub headroom_xon: Option<i64>,
    /// SONiC BUFFER_QUEUE: queue ("3") or queue range ("0-2") -> a
    /// `[buffer_profile]` name.
    #[serde(default)]
    pub buffer_queue: BTreeMap<String, String>,
    /// SONiC PORT_QOS_MAP `tc_to_dscp_map`: a `[tc_to_dscp_map.NAME]`
    /// (the trim DSCP of this egress port with `dscp_value = "from-tc"`).
    pub tc_to_dscp_map: Option<String>,
    /// Send far-side notifications to this port's peer: a lossless packet
    /// that came in here and finds its egress queue at the ECN threshold
    /// tells the peer (a switch in `place` mode) how long that queue needs
    /// to drain, at most every 10 us per pair of ports (`false`: none;
    /// set it on a spine's ports toward leaves).
    #[serde(default)]
    pub far_notify: bool,
}

fn default_trust() -> String {
    "dscp".into()
}
fn default_map() -> String {
    AZURE.into()
}
fn default_pfc_enable() -> String {
    "3,4".into()
}
fn default_xdp_mode() -> String {
    "auto".into()
}
