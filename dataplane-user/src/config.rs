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
    PortConfig, AZURE_DSCP_TO_TC, MALFORMED_DROP, MALFORMED_PASS, MAX_PORTS, TRUST_DOT1P, TRUST_DSCP,
};
use serde::Deserialize;

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
}

impl Default for SwitchSection {
    fn default() -> Self {
        SwitchSection { name: default_instance(), cnp_tc: default_cnp_tc(), malformed: default_malformed() }
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
        writeln!(f, "{}: {} error(s), nothing applied:", self.source, self.errors.len())?;
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
    pub config: PortConfig,
}

/// A validated configuration, resolved to map values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub instance: String,
    pub ports: Vec<PortPlan>,
}

impl Config {
    /// Parses TOML text. Syntax and unknown-field errors come from the TOML
    /// reader with line and column.
    pub fn parse(text: &str, source: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError {
            source: source.into(),
            errors: vec![FieldError { field: "(file)".into(), message: e.to_string().trim_end().replace('\n', "\n    ") }],
        })
    }

    /// Reads and parses a file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let source = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            source: source.clone(),
            errors: vec![FieldError { field: "(file)".into(), message: format!("cannot read: {e}") }],
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
            || !instance.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            err(
                "switch.name".into(),
                format!("expected 1-64 characters from [A-Za-z0-9_-] (it names the pin directory), got {instance:?}"),
            );
        }
        let cnp_tc = check_tc(self.switch.cnp_tc, "switch.cnp_tc", &mut err);
        let default_malformed = check_malformed(&self.switch.malformed, "switch.malformed", &mut err);

        let mut dscp_maps: BTreeMap<&str, [u8; 64]> = BTreeMap::new();
        dscp_maps.insert(AZURE, AZURE_DSCP_TO_TC);
        for (name, entries) in &self.dscp_to_tc_map {
            let base = format!("dscp_to_tc_map.{name}");
            if name == AZURE {
                err(base.clone(), "AZURE is the built-in map; give your map another name".into());
            }
            dscp_maps.insert(name, resolve_map::<64>(entries, &base, "DSCP", &mut err));
        }
        let mut pcp_maps: BTreeMap<&str, [u8; 8]> = BTreeMap::new();
        pcp_maps.insert(AZURE, [0, 1, 2, 3, 4, 5, 6, 7]);
        for (name, entries) in &self.dot1p_to_tc_map {
            let base = format!("dot1p_to_tc_map.{name}");
            if name == AZURE {
                err(base.clone(), "AZURE is the built-in map; give your map another name".into());
            }
            pcp_maps.insert(name, resolve_map::<8>(entries, &base, "dot1p", &mut err));
        }

        if self.ports.is_empty() {
            err("port".into(), "expected at least one [[port]] section".into());
        }
        if self.ports.len() > MAX_PORTS as usize {
            err("port".into(), format!("expected at most {MAX_PORTS} ports, got {}", self.ports.len()));
        }
        let mut seen = BTreeSet::new();
        let mut ports = Vec::new();
        for (i, p) in self.ports.iter().enumerate() {
            let base = format!("port[{i}]");
            if p.name.is_empty() || p.name.len() > IFNAME_MAX || p.name.contains(['/', ' ', '\0']) {
                err(format!("{base}.name"), format!("expected an interface name of 1-{IFNAME_MAX} characters without '/' or spaces, got {:?}", p.name));
            } else if !seen.insert(p.name.as_str()) {
                err(format!("{base}.name"), format!("interface {:?} is already configured by an earlier [[port]]", p.name));
            }
            let base = format!("{base} ({})", p.name);
            let trust = match p.trust.as_str() {
                "dscp" => TRUST_DSCP,
                "dot1p" => TRUST_DOT1P,
                other => {
                    err(format!("{base}.trust"), format!("expected \"dscp\" or \"dot1p\", got {other:?}"));
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
                    err(format!("{base}.xdp_mode"), format!("expected \"auto\", \"native\" or \"generic\", got {other:?}"));
                    XdpAttach::Auto
                }
            };
            ports.push(PortPlan {
                name: p.name.clone(),
                attach,
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
                },
            });
        }
        if errs.is_empty() {
            Ok(Plan { instance: instance.clone(), ports })
        } else {
            Err(ConfigError { source: source.into(), errors: errs })
        }
    }
}

fn check_tc(v: i64, field: &str, err: &mut impl FnMut(String, String)) -> u8 {
    if (0..=7).contains(&v) {
        v as u8
    } else {
        err(field.into(), format!("expected a traffic class 0-7, got {v}"));
        0
    }
}

fn check_malformed(v: &str, field: &str, err: &mut impl FnMut(String, String)) -> u8 {
    match v {
        "pass" => MALFORMED_PASS,
        "drop" => MALFORMED_DROP,
        other => {
            err(field.into(), format!("expected \"pass\" or \"drop\", got {other:?}"));
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
                err(format!("{base}.default"), format!("expected a traffic class 0-7, got {v}"));
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
                err(field, format!("expected a {what} value 0-{} as the key, got {k:?}", N - 1));
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
