//! The controller's configuration: a TOML file with SONiC's field names.
//!
//! ```toml
//! [switch]
//! name = "sw1"            # instance: pin directory /sys/fs/bpf/dataplane/sw1
//! cnp_tc = 6              # class of RoCEv2 CNPs
//! malformed = "pass"      # default verdict for malformed frames: pass | drop
//!
//! [dscp_to_tc_map.ROCE]   # SONiC DSCP_TO_TC_MAP; "AZURE" is built in
//! default = 0             # class of DSCPs the map does not list
//! "26" = 3
//! "48" = 6
//!
//! [[port]]
//! name = "eth1"
//! trust = "dscp"          # dscp | dot1p
//! dscp_to_tc_map = "ROCE"
//! dot1p_to_tc_map = "AZURE"
//! pfc_enable = "3,4"      # SONiC PORT_QOS_MAP pfc_enable: lossless priorities
//! ```
//!
//! [`Config::validate`] checks everything and reports every problem at once,
//! each naming the field and what was expected. Nothing is applied unless
//! the whole file is valid.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use dataplane_common::maps::{
    PortConfig, AZURE_DSCP_TO_TC, MALFORMED_DROP, MALFORMED_PASS, MAX_PORTS, TRUST_DOT1P,
    TRUST_DSCP,
};
use serde::Deserialize;

mod group;
pub use group::{group_value, hash_placement};

/// Name of the built-in maps (SONiC's default).
pub const AZURE: &str = "AZURE";
/// Longest Linux interface name.
const IFNAME_MAX: usize = 15;

#[derive(Debug, Clone, Deserialize, Default)]
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
}

/// `[pfcwd]` with SONiC's defaults.
#[derive(Debug, Clone, Deserialize)]
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
#[derive(Debug, Clone, Deserialize)]
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
    #[serde(default = "default_response_us")]
    pub response_us: i64,
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
/// Default PFC decision-to-wire time the headroom must cover: above the p99
/// measured by `dataplane-pfcbench` on the 2-vCPU reference machine
/// (p50 19 us, p99 146 us).
fn default_response_us() -> i64 {
    150
}
fn default_tick_us() -> i64 {
    200
}

/// `[wred_profile.NAME]` with SONiC's field names.
#[derive(Debug, Clone, Deserialize)]
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
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NextHopSection {
    pub name: String,
    pub port: String,
    pub mac: String,
}

/// A next-hop group: `[[group]] name, mode, members, flowlet_timeout_us`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GroupSection {
    pub name: String,
    #[serde(default = "default_mode")]
    pub mode: String,
    #[serde(default = "default_flowlet_us")]
    pub flowlet_timeout_us: i64,
    pub members: Vec<MemberSection>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemberSection {
    pub nexthop: String,
    #[serde(default = "default_weight")]
    pub weight: i64,
}

/// A route: `[[route]] prefix` and one of `nexthop`, `group`, `local`.
#[derive(Debug, Clone, Deserialize)]
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

#[derive(Debug, Clone, Deserialize)]
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

#[derive(Debug, Clone, Deserialize)]
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

/// One problem in a configuration: where, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Path of the field, e.g. `port[1].pfc_enable`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Every problem found in a configuration.
#[derive(Debug, Clone)]
pub struct ConfigError {
    pub source: String,
    pub errors: Vec<FieldError>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} error(s), nothing applied:",
            self.source,
            self.errors.len()
        )?;
        for e in &self.errors {
            writeln!(f, "  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

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
pub const MODES: [&str; 4] = ["hash", "flowlet", "bandwidth", "spray"];

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

/// The buffer model's tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BufferPlan {
    pub pool_size: u32,
    pub tick_ns: u64,
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
}

impl Plan {
    /// Routing is on when the config has routes: ports then run
    /// `xdp_forward` instead of `xdp_classify`.
    pub fn forwarding(&self) -> bool {
        !self.routes.is_empty()
    }
}

impl Config {
    /// Parses TOML text. Syntax and unknown-field errors come from the TOML
    /// reader with line and column.
    pub fn parse(text: &str, source: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError {
            source: source.into(),
            errors: vec![FieldError {
                field: "(file)".into(),
                message: e.to_string().trim_end().replace('\n', "\n    "),
            }],
        })
    }

    /// Reads and parses a file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            source: source.clone(),
            errors: vec![FieldError {
                field: "(file)".into(),
                message: format!("cannot read: {e}"),
            }],
        })?;
        Config::parse(&text, &source)
    }

    /// Validates everything and resolves the tables. Reports every error.
    pub fn validate(&self, source: &str) -> Result<Plan, ConfigError> {
        let mut errs = Vec::new();
        let mut err = |field: String, message: String| errs.push(FieldError { field, message });

        let instance = &self.switch.name;
        if instance.is_empty()
            || instance.len() > 64
            || !instance
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            err(
                "switch.name".into(),
                format!("expected 1-64 characters from [A-Za-z0-9_-] (it names the pin directory), got {instance:?}"),
            );
        }
        let cnp_tc = check_tc(self.switch.cnp_tc, "switch.cnp_tc", &mut err);
        let default_malformed =
            check_malformed(&self.switch.malformed, "switch.malformed", &mut err);

        let mut dscp_maps: BTreeMap<&str, [u8; 64]> = BTreeMap::new();
        dscp_maps.insert(AZURE, AZURE_DSCP_TO_TC);
        for (name, entries) in &self.dscp_to_tc_map {
            let base = format!("dscp_to_tc_map.{name}");
            if name == AZURE {
                err(
                    base.clone(),
                    "AZURE is the built-in map; give your map another name".into(),
                );
            }
            dscp_maps.insert(name, resolve_map::<64>(entries, &base, "DSCP", &mut err));
        }
        let mut pcp_maps: BTreeMap<&str, [u8; 8]> = BTreeMap::new();
        pcp_maps.insert(AZURE, [0, 1, 2, 3, 4, 5, 6, 7]);
        for (name, entries) in &self.dot1p_to_tc_map {
            let base = format!("dot1p_to_tc_map.{name}");
            if name == AZURE {
                err(
                    base.clone(),
                    "AZURE is the built-in map; give your map another name".into(),
                );
            }
            pcp_maps.insert(name, resolve_map::<8>(entries, &base, "dot1p", &mut err));
        }

        if self.ports.is_empty() {
            err(
                "port".into(),
                "expected at least one [[port]] section".into(),
            );
        }
        if self.ports.len() > MAX_PORTS as usize {
            err(
                "port".into(),
                format!(
                    "expected at most {MAX_PORTS} ports, got {}",
                    self.ports.len()
                ),
            );
        }
        let mut seen = BTreeSet::new();
        let mut ports = Vec::new();
        for (i, p) in self.ports.iter().enumerate() {
            let base = format!("port[{i}]");
            if p.name.is_empty() || p.name.len() > IFNAME_MAX || p.name.contains(['/', ' ', '\0']) {
                err(format!("{base}.name"), format!("expected an interface name of 1-{IFNAME_MAX} characters without '/' or spaces, got {:?}", p.name));
            } else if !seen.insert(p.name.as_str()) {
                err(
                    format!("{base}.name"),
                    format!(
                        "interface {:?} is already configured by an earlier [[port]]",
                        p.name
                    ),
                );
            }
            let base = format!("{base} ({})", p.name);
            let trust = match p.trust.as_str() {
                "dscp" => TRUST_DSCP,
                "dot1p" => TRUST_DOT1P,
                other => {
                    err(
                        format!("{base}.trust"),
                        format!("expected \"dscp\" or \"dot1p\", got {other:?}"),
                    );
                    TRUST_DSCP
                }
            };
            let dscp_to_tc = match dscp_maps.get(p.dscp_to_tc_map.as_str()) {
                Some(m) => *m,
                None => {
                    err(format!("{base}.dscp_to_tc_map"), format!("expected the name of a [dscp_to_tc_map.NAME] table or \"AZURE\", got {:?}", p.dscp_to_tc_map));
                    AZURE_DSCP_TO_TC
                }
            };
            let pcp_to_tc = match pcp_maps.get(p.dot1p_to_tc_map.as_str()) {
                Some(m) => *m,
                None => {
                    err(format!("{base}.dot1p_to_tc_map"), format!("expected the name of a [dot1p_to_tc_map.NAME] table or \"AZURE\", got {:?}", p.dot1p_to_tc_map));
                    [0; 8]
                }
            };
            let pfc_enable = match parse_pfc_enable(&p.pfc_enable) {
                Ok(v) => v,
                Err(m) => {
                    err(format!("{base}.pfc_enable"), m);
                    0
                }
            };
            let default_tc = check_tc(p.default_tc, &format!("{base}.default_tc"), &mut err);
            let malformed = match &p.malformed {
                Some(m) => check_malformed(m, &format!("{base}.malformed"), &mut err),
                None => default_malformed,
            };
            let attach = match p.xdp_mode.as_str() {
                "auto" => XdpAttach::Auto,
                "native" => XdpAttach::Native,
                "generic" => XdpAttach::Generic,
                other => {
                    err(
                        format!("{base}.xdp_mode"),
                        format!("expected \"auto\", \"native\" or \"generic\", got {other:?}"),
                    );
                    XdpAttach::Auto
                }
            };
            let mac = match &p.mac {
                None => None,
                Some(m) => match parse_mac(m) {
                    Some(mac) if mac[0] & 1 == 0 && mac != [0; 6] => Some(mac),
                    _ => {
                        err(
                            format!("{base}.mac"),
                            format!("expected a unicast MAC like \"02:00:00:00:00:01\", got {m:?}"),
                        );
                        None
                    }
                },
            };
            let speed_mbps = match &p.speed {
                None => DEFAULT_SPEED_MBPS,
                Some(v) => match parse_speed(v) {
                    Some(s) => s,
                    None => {
                        err(format!("{base}.speed"), format!("expected a line rate like \"100G\", \"25G\", \"400M\" or Mb/s as an integer (1 Mb/s to 1.6 Tb/s), got {v}"));
                        DEFAULT_SPEED_MBPS
                    }
                },
            };
            ports.push(PortPlan {
                name: p.name.clone(),
                attach,
                mac,
                config: PortConfig {
                    port_id: i as u16,
                    trust,
                    malformed_action: malformed,
                    pfc_enable,
                    default_tc,
                    cnp_tc,
                    _reserved: 0,
                    dscp_to_tc,
                    pcp_to_tc,
                    mac: mac.unwrap_or([0; 6]),
                    _pad: [0; 2],
                    speed_mbps,
                    flags: 0,
                },
            });
        }
        let (nexthops, groups, routes) = self.validate_forwarding(&ports, &mut err);
        if !routes.is_empty() {
            for p in &mut ports {
                p.config.flags |= dataplane_common::maps::PORT_F_FORWARD;
            }
        }
        let hash_seed = match self.switch.hash_seed {
            Some(s) if (0..=i64::from(u32::MAX)).contains(&s) => s as u32,
            Some(s) => {
                err(
                    "switch.hash_seed".into(),
                    format!("expected an integer 0-4294967295, got {s}"),
                );
                0
            }
            None => fnv1a(instance.as_bytes()),
        };
        let buffer = self.validate_buffer(&ports, &mut err);
        let pfcwd = self.pfcwd.as_ref().map(|w| {
            use dataplane_common::lossless::{
                PfcWdConfig, WD_ACTION_ALERT, WD_ACTION_DROP, WD_ACTION_FORWARD,
            };
            let ms = |v: i64, f: &str, err: &mut dyn FnMut(String, String)| -> u32 {
                if (1..=60_000).contains(&v) {
                    v as u32
                } else {
                    err(
                        format!("pfcwd.{f}"),
                        format!("expected 1-60000 milliseconds, got {v}"),
                    );
                    200
                }
            };
            let action = match w.action.as_str() {
                "drop" => WD_ACTION_DROP,
                "forward" => WD_ACTION_FORWARD,
                "alert" => WD_ACTION_ALERT,
                other => {
                    err(
                        "pfcwd.action".into(),
                        format!("expected \"drop\", \"forward\" or \"alert\", got {other:?}"),
                    );
                    WD_ACTION_DROP
                }
            };
            let cfg = PfcWdConfig {
                detection_time_ms: ms(w.detection_time_ms, "detection_time_ms", &mut err),
                restoration_time_ms: ms(w.restoration_time_ms, "restoration_time_ms", &mut err),
                action,
                _pad: [0; 3],
            };
            let poll = ms(w.poll_interval_ms, "poll_interval_ms", &mut err);
            if poll > cfg.detection_time_ms {
                err(
                    "pfcwd.poll_interval_ms".into(),
                    format!(
                        "expected at most detection_time_ms ({}), got {poll}",
                        cfg.detection_time_ms
                    ),
                );
            }
            (cfg, u64::from(poll))
        });
        if pfcwd.is_some() && buffer.is_none() {
            err(
                "pfcwd".into(),
                "the watchdog watches the buffer model's queues: add a [buffer] section".into(),
            );
        }
        if errs.is_empty() {
            let buffer_response_ns = self
                .buffer
                .as_ref()
                .map(|b| b.response_us.clamp(0, 1_000_000) as u64 * 1000)
                .unwrap_or(0);
            Ok(Plan {
                instance: instance.clone(),
                hash_seed,
                buffer,
                pfcwd,
                buffer_response_ns,
                ports,
                nexthops,
                groups,
                routes,
            })
        } else {
            Err(ConfigError {
                source: source.into(),
                errors: errs,
            })
        }
    }
}

/// Line rate of a port when the config gives none.
pub const DEFAULT_SPEED_MBPS: u32 = 100_000;

/// "02:00:00:00:00:01" to bytes.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut out = [0u8; 6];
    let mut n = 0;
    for part in s.split(':') {
        if n == 6 || part.len() != 2 {
            return None;
        }
        out[n] = u8::from_str_radix(part, 16).ok()?;
        n += 1;
    }
    (n == 6).then_some(out)
}

/// "100G" / "25G" / "400M" / 100000 to Mb/s.
pub fn parse_speed(v: &toml::Value) -> Option<u32> {
    let mbps: u64 = match v {
        toml::Value::Integer(i) if *i > 0 => *i as u64,
        toml::Value::String(s) => {
            let s = s.trim();
            let (num, mult) = if let Some(n) = s.strip_suffix(['G', 'g']) {
                (n, 1000)
            } else if let Some(n) = s.strip_suffix(['M', 'm']) {
                (n, 1)
            } else {
                (s, 1)
            };
            num.trim().parse::<u64>().ok()?.checked_mul(mult)?
        }
        _ => return None,
    };
    (1..=1_600_000).contains(&mbps).then_some(mbps as u32)
}

/// FNV-1a, for the default per-switch hash seed.
fn fnv1a(b: &[u8]) -> u32 {
    b.iter().fold(0x811c_9dc5u32, |h, &x| {
        (h ^ u32::from(x)).wrapping_mul(0x0100_0193)
    })
}

impl Config {
    fn validate_forwarding(
        &self,
        ports: &[PortPlan],
        err: &mut impl FnMut(String, String),
    ) -> (Vec<NextHopPlan>, Vec<GroupPlan>, Vec<RoutePlan>) {
        use dataplane_common::route::{MAX_GROUPS, MAX_NEXTHOPS};
        let mut nexthops = Vec::new();
        let mut nh_names = BTreeMap::new();
        if self.nexthops.len() > MAX_NEXTHOPS as usize {
            err(
                "nexthop".into(),
                format!(
                    "expected at most {MAX_NEXTHOPS} next hops, got {}",
                    self.nexthops.len()
                ),
            );
        }
        for (i, n) in self.nexthops.iter().enumerate() {
            let base = format!("nexthop[{i}] ({})", n.name);
            if nh_names
                .insert(n.name.as_str(), nexthops.len() as u16)
                .is_some()
            {
                err(
                    format!("{base}.name"),
                    format!("next hop {:?} is defined twice", n.name),
                );
            }
            let port = match ports.iter().position(|p| p.name == n.port) {
                Some(p) => p,
                None => {
                    err(
                        format!("{base}.port"),
                        format!("expected the name of a [[port]], got {:?}", n.port),
                    );
                    0
                }
            };
            let mac = match parse_mac(&n.mac) {
                Some(m) if m[0] & 1 == 0 && m != [0; 6] => m,
                _ => {
                    err(
                        format!("{base}.mac"),
                        format!(
                            "expected a unicast MAC like \"02:00:00:00:00:01\", got {:?}",
                            n.mac
                        ),
                    );
                    [0; 6]
                }
            };
            nexthops.push(NextHopPlan {
                name: n.name.clone(),
                port,
                mac,
            });
        }
        let mut groups = Vec::new();
        let mut group_names = BTreeMap::new();
        if self.groups.len() > MAX_GROUPS as usize {
            err(
                "group".into(),
                format!(
                    "expected at most {MAX_GROUPS} groups, got {}",
                    self.groups.len()
                ),
            );
        }
        for (i, g) in self.groups.iter().enumerate() {
            let base = format!("group[{i}] ({})", g.name);
            if group_names
                .insert(g.name.as_str(), groups.len() as u16)
                .is_some()
            {
                err(
                    format!("{base}.name"),
                    format!("group {:?} is defined twice", g.name),
                );
            }
            let mode = match MODES.iter().position(|m| *m == g.mode) {
                Some(m) => m as u8,
                None => {
                    err(
                        format!("{base}.mode"),
                        format!("expected one of {}, got {:?}", MODES.join(", "), g.mode),
                    );
                    0
                }
            };
            let flowlet_timeout_ns = if (1..=4_000_000).contains(&g.flowlet_timeout_us) {
                (g.flowlet_timeout_us * 1000) as u32
            } else {
                err(
                    format!("{base}.flowlet_timeout_us"),
                    format!(
                        "expected 1-4000000 microseconds, got {}",
                        g.flowlet_timeout_us
                    ),
                );
                0
            };
            if g.members.is_empty() {
                err(
                    format!("{base}.members"),
                    "expected at least one member".into(),
                );
            }
            if g.members.len() > MAX_GROUP_MEMBERS {
                err(
                    format!("{base}.members"),
                    format!(
                        "expected at most {} members, got {}",
                        MAX_GROUP_MEMBERS,
                        g.members.len()
                    ),
                );
            }
            let mut members = Vec::new();
            for (j, m) in g.members.iter().enumerate() {
                let f = format!("{base}.members[{j}]");
                let nh = match nh_names.get(m.nexthop.as_str()) {
                    Some(&n) => n,
                    None => {
                        err(
                            format!("{f}.nexthop"),
                            format!("expected the name of a [[nexthop]], got {:?}", m.nexthop),
                        );
                        continue;
                    }
                };
                if members.iter().any(|&(n, _)| n == nh) {
                    err(
                        format!("{f}.nexthop"),
                        format!("{:?} is already a member of this group", m.nexthop),
                    );
                }
                if !(1..=255).contains(&m.weight) {
                    err(
                        format!("{f}.weight"),
                        format!("expected a weight 1-255, got {}", m.weight),
                    );
                    continue;
                }
                members.push((nh, m.weight as u8));
            }
            groups.push(GroupPlan {
                name: g.name.clone(),
                mode,
                flowlet_timeout_ns,
                members,
            });
        }
        let mut routes = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, r) in self.routes.iter().enumerate() {
            let base = format!("route[{i}] ({})", r.prefix);
            let Some((addr, len)) = parse_prefix(&r.prefix) else {
                err(format!("{base}.prefix"), format!("expected a prefix like \"198.18.1.0/24\" or \"2001:db8::/32\" with no host bits set, got {:?}", r.prefix));
                continue;
            };
            if !seen.insert((addr, len)) {
                err(
                    format!("{base}.prefix"),
                    format!("duplicate prefix {}; each prefix may appear once", r.prefix),
                );
            }
            let target = match (&r.nexthop, &r.group, r.local) {
                (Some(n), None, false) => match nh_names.get(n.as_str()) {
                    Some(&id) => Target::NextHop(id),
                    None => {
                        err(
                            format!("{base}.nexthop"),
                            format!("expected the name of a [[nexthop]], got {n:?}"),
                        );
                        continue;
                    }
                },
                (None, Some(g), false) => match group_names.get(g.as_str()) {
                    Some(&id) => Target::Group(id),
                    None => {
                        err(
                            format!("{base}.group"),
                            format!("expected the name of a [[group]], got {g:?}"),
                        );
                        continue;
                    }
                },
                (None, None, true) => Target::Local,
                _ => {
                    err(base.clone(), "expected exactly one of nexthop = \"...\", group = \"...\" or local = true".into());
                    continue;
                }
            };
            routes.push(RoutePlan { addr, len, target });
        }
        (nexthops, groups, routes)
    }
}

impl Config {
    fn validate_buffer(
        &self,
        ports: &[PortPlan],
        err: &mut impl FnMut(String, String),
    ) -> Option<BufferPlan> {
        use dataplane_common::buffer::{PortBuffer, NUM_TC};
        use dataplane_common::lossless::{
            ecn_mode_from_name, headroom, validate_buffer_profile, validate_headroom,
            validate_wred, BufferProfile, Headroom, HeadroomInput, SharedPool, WredProfile,
            MODEL_PORTS, TH_DYNAMIC,
        };
        let b = self.buffer.as_ref()?;
        let mut wreds: BTreeMap<&str, WredProfile> = BTreeMap::new();
        wreds.insert("AZURE_LOSSLESS", WredProfile::AZURE_LOSSLESS);
        for (name, w) in &self.wred_profile {
            let base = format!("wred_profile.{name}");
            if name == "AZURE_LOSSLESS" {
                err(
                    base.clone(),
                    "AZURE_LOSSLESS is built in; give your profile another name".into(),
                );
            }
            let ecn = match ecn_mode_from_name(&w.ecn) {
                Some(e) => e,
                None => {
                    err(format!("{base}.ecn"), format!("expected a SONiC ecn mode (ecn_none, ecn_green, ..., ecn_all), got {:?}", w.ecn));
                    0
                }
            };
            let bytes = |v: i64, f: &str, err: &mut dyn FnMut(String, String)| -> u32 {
                if (0..=i64::from(u32::MAX)).contains(&v) {
                    v as u32
                } else {
                    err(
                        format!("{base}.{f}"),
                        format!("expected bytes 0-4294967295, got {v}"),
                    );
                    0
                }
            };
            let min = bytes(w.green_min_threshold, "green_min_threshold", err);
            let max = bytes(w.green_max_threshold, "green_max_threshold", err);
            let prof = WredProfile {
                green_min_threshold: min,
                green_max_threshold: max,
                green_drop_probability: w.green_drop_probability.clamp(0, 255) as u8,
                ecn,
                wred_green_enable: u8::from(w.wred_green_enable),
                _pad: 0,
            };
            if !(0..=100).contains(&w.green_drop_probability) {
                err(
                    format!("{base}.green_drop_probability"),
                    format!(
                        "expected a percentage 0-100, got {}",
                        w.green_drop_probability
                    ),
                );
            } else if let Err(e) = validate_wred(&prof) {
                err(
                    base.clone(),
                    format!("{e:?}: expected green_min_threshold <= green_max_threshold"),
                );
            }
            wreds.insert(name, prof);
        }
        if ports.len() > MODEL_PORTS {
            err(
                "buffer".into(),
                format!(
                    "the buffer model covers at most {MODEL_PORTS} ports, the config has {}",
                    ports.len()
                ),
            );
        }
        let in_range = |v: i64,
                        lo: i64,
                        hi: i64,
                        f: &str,
                        what: &str,
                        err: &mut dyn FnMut(String, String)|
         -> i64 {
            if (lo..=hi).contains(&v) {
                v
            } else {
                err(
                    format!("buffer.{f}"),
                    format!("expected {what} {lo}-{hi}, got {v}"),
                );
                lo.max(0)
            }
        };
        let pool_size = in_range(
            b.pool_size,
            1,
            i64::from(u32::MAX),
            "pool_size",
            "bytes",
            err,
        ) as u32;
        let dynamic_th = in_range(b.dynamic_th, -8, 7, "dynamic_th", "an exponent", err) as i8;
        let lossy_th = in_range(
            b.lossy_dynamic_th,
            -8,
            7,
            "lossy_dynamic_th",
            "an exponent",
            err,
        ) as i8;
        let reserve = in_range(b.reserve, 0, 1 << 30, "reserve", "bytes", err) as u32;
        let xon_offset = in_range(b.xon_offset, 0, 1 << 30, "xon_offset", "bytes", err) as u32;
        let mtu = in_range(b.mtu, 64, 65535, "mtu", "bytes", err) as u32;
        let cable = in_range(
            b.cable_length_m,
            0,
            100_000,
            "cable_length_m",
            "metres",
            err,
        ) as u32;
        let response_ns = in_range(
            b.response_us,
            0,
            1_000_000,
            "response_us",
            "microseconds",
            err,
        ) as u64
            * 1000;
        let tick_ns =
            in_range(b.tick_us, 10, 1_000_000, "tick_us", "microseconds", err) as u64 * 1000;
        let pool = SharedPool {
            size: pool_size,
            used: 0,
        };
        let none = WredProfile {
            green_min_threshold: u32::MAX,
            green_max_threshold: u32::MAX,
            green_drop_probability: 0,
            ecn: 0,
            wred_green_enable: 0,
            _pad: 0,
        };
        let mut out = Vec::new();
        let mut heads = Vec::new();
        for (i, p) in ports.iter().enumerate() {
            let sec = &self.ports[i];
            let base = format!("port[{i}] ({})", p.name);
            let cable = match sec.cable_length_m {
                Some(c) if (0..=100_000).contains(&c) => c as u32,
                Some(c) => {
                    err(
                        format!("{base}.cable_length_m"),
                        format!("expected metres 0-100000, got {c}"),
                    );
                    cable
                }
                None => cable,
            };
            let computed = headroom(&HeadroomInput::new(
                p.config.speed_mbps,
                cable,
                mtu,
                response_ns,
            ));
            let (h, how) = match (sec.headroom_xoff, sec.headroom_xon) {
                (None, None) => (computed, "computed"),
                (Some(x), xon) => {
                    let xon = xon.unwrap_or(i64::from(computed.xon));
                    if !(0..=i64::from(u32::MAX)).contains(&x)
                        || !(0..=i64::from(u32::MAX)).contains(&xon)
                    {
                        err(
                            format!("{base}.headroom_xoff"),
                            format!("expected bytes, got xoff {x} xon {xon}"),
                        );
                    } else if xon > x {
                        err(
                            format!("{base}.headroom_xon"),
                            format!("expected xon <= xoff, got xon {xon} > xoff {x}"),
                        );
                    }
                    let (x, xon) = (
                        x.clamp(0, i64::from(u32::MAX)) as u32,
                        xon.clamp(0, i64::from(u32::MAX)) as u32,
                    );
                    (
                        Headroom {
                            xoff: x,
                            xon,
                            size: x.saturating_add(xon),
                        },
                        "configured",
                    )
                }
                (None, Some(_)) => {
                    err(
                        format!("{base}.headroom_xon"),
                        "expected headroom_xoff as well".into(),
                    );
                    (computed, "computed")
                }
            };
            if let Err(e) = validate_headroom(&h, &pool) {
                let msg = match e {
                    dataplane_common::lossless::ConfigError::XonAboveXoff => {
                        format!(
                            "expected headroom xon <= xoff, got xon {} > xoff {}",
                            h.xon, h.xoff
                        )
                    }
                    _ => format!(
                        "{e:?}: headroom {} bytes does not fit the pool of {pool_size} bytes",
                        h.xoff
                    ),
                };
                err(format!("{base}.headroom_xoff"), msg);
            }
            let lossless_prof = BufferProfile {
                size: reserve,
                xon: h.xon,
                xoff: h.xoff,
                xon_offset,
                static_th: 0,
                dynamic_th,
                mode: TH_DYNAMIC,
                lossless: 1,
                _pad: 0,
            };
            let lossy_prof = BufferProfile {
                xon: 0,
                xoff: 0,
                dynamic_th: lossy_th,
                lossless: 0,
                ..lossless_prof
            };
            // (xon <= xoff is reported once, above)
            if let Err(e) = validate_buffer_profile(&lossless_prof, &pool) {
                if e != dataplane_common::lossless::ConfigError::XonAboveXoff {
                    err(base.clone(), format!("buffer profile: {e:?}"));
                }
            }
            let pick = |name: &Option<String>,
                        field: &str,
                        dflt: Option<&str>,
                        err: &mut dyn FnMut(String, String)|
             -> WredProfile {
                match name.as_deref().or(dflt) {
                    None => none,
                    Some(n) => match wreds.get(n) {
                        Some(w) => *w,
                        None => {
                            err(format!("{base}.{field}"), format!("expected the name of a [wred_profile.NAME] or \"AZURE_LOSSLESS\", got {n:?}"));
                            none
                        }
                    },
                }
            };
            let w_lossless = pick(
                &sec.wred_profile,
                "wred_profile",
                Some("AZURE_LOSSLESS"),
                err,
            );
            let w_lossy = pick(&sec.lossy_wred_profile, "lossy_wred_profile", None, err);
            let mut pb = PortBuffer {
                pg_profile: [lossy_prof; NUM_TC],
                wred: [w_lossy; NUM_TC],
                speed_mbps: p.config.speed_mbps,
                enabled: 1,
                storm: [0; NUM_TC],
            };
            for tc in 0..NUM_TC {
                if p.config.pfc_enable & (1 << tc) != 0 {
                    pb.pg_profile[tc] = lossless_prof;
                    pb.wred[tc] = w_lossless;
                }
            }
            out.push(pb);
            heads.push((h, how));
        }
        Some(BufferPlan {
            pool_size,
            tick_ns,
            ports: out,
            headroom: heads,
        })
    }
}

/// "198.18.1.0/24" / "2001:db8::/32" (no host bits) to (address, length).
pub fn parse_prefix(s: &str) -> Option<(std::net::IpAddr, u8)> {
    use std::net::IpAddr;
    let (a, l) = s.split_once('/')?;
    let addr: IpAddr = a.trim().parse().ok()?;
    let len: u8 = l.trim().parse().ok()?;
    let bits = match addr {
        IpAddr::V4(v) => {
            if len > 32 {
                return None;
            }
            let x = u32::from(v);
            let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
            x & !mask
        }
        IpAddr::V6(v) => {
            if len > 128 {
                return None;
            }
            let x = u128::from(v);
            let mask = if len == 0 {
                0
            } else {
                u128::MAX << (128 - len)
            };
            return (x & !mask == 0).then_some((addr, len));
        }
    };
    (bits == 0).then_some((addr, len))
}

fn check_tc(v: i64, field: &str, err: &mut impl FnMut(String, String)) -> u8 {
    if (0..=7).contains(&v) {
        v as u8
    } else {
        err(
            field.into(),
            format!("expected a traffic class 0-7, got {v}"),
        );
        0
    }
}

fn check_malformed(v: &str, field: &str, err: &mut impl FnMut(String, String)) -> u8 {
    match v {
        "pass" => MALFORMED_PASS,
        "drop" => MALFORMED_DROP,
        other => {
            err(
                field.into(),
                format!("expected \"pass\" or \"drop\", got {other:?}"),
            );
            MALFORMED_PASS
        }
    }
}

/// SONiC's pfc_enable: priorities 0-7 separated by commas; "" for none.
pub fn parse_pfc_enable(s: &str) -> Result<u8, String> {
    let mut bits = 0u8;
    if s.trim().is_empty() {
        return Ok(0);
    }
    for part in s.split(',') {
        let t = part.trim();
        match t.parse::<u8>() {
            Ok(p) if p <= 7 => {
                if bits & (1 << p) != 0 {
                    return Err(format!("priority {p} is listed twice in {s:?}"));
                }
                bits |= 1 << p;
            }
            _ => return Err(format!("expected priorities 0-7 separated by commas (e.g. \"3,4\"), got {s:?} ({t:?} is not one)")),
        }
    }
    Ok(bits)
}

/// Integer from a TOML integer or a string holding one (SONiC writes
/// strings).
fn int_of(v: &toml::Value) -> Option<i64> {
    match v {
        toml::Value::Integer(i) => Some(*i),
        toml::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Resolves a SONiC map (`"codepoint" = tc`, plus an optional `default`)
/// to a full table. Unlisted codepoints get `default` (0 unless given).
fn resolve_map<const N: usize>(
    entries: &BTreeMap<String, toml::Value>,
    base: &str,
    what: &str,
    err: &mut impl FnMut(String, String),
) -> [u8; N] {
    let default = match entries.get("default") {
        None => 0,
        Some(v) => match int_of(v) {
            Some(t) if (0..=7).contains(&t) => t as u8,
            _ => {
                err(
                    format!("{base}.default"),
                    format!("expected a traffic class 0-7, got {v}"),
                );
                0
            }
        },
    };
    let mut table = [default; N];
    for (k, v) in entries {
        if k == "default" {
            continue;
        }
        let field = format!("{base}.\"{k}\"");
        let cp = match k.trim().parse::<usize>() {
            Ok(c) if c < N => c,
            _ => {
                err(
                    field,
                    format!("expected a {what} value 0-{} as the key, got {k:?}", N - 1),
                );
                continue;
            }
        };
        match int_of(v) {
            Some(t) if (0..=7).contains(&t) => table[cp] = t as u8,
            _ => err(field, format!("expected a traffic class 0-7, got {v}")),
        }
    }
    table
}
