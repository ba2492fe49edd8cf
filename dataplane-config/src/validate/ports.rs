//! `[dscp_to_tc_map.*]`, `[dot1p_to_tc_map.*]` and `[[port]]`: the class
//! maps, then each port (name, trust, maps, PFC, MAC, speed, attach mode).

use std::collections::{BTreeMap, BTreeSet};

use dataplane_common::maps::{PortConfig, AZURE_DSCP_TO_TC, MAX_PORTS, TRUST_DOT1P, TRUST_DSCP};

use crate::values::*;
use crate::*;

/// Longest Linux interface name.
const IFNAME_MAX: usize = 15;

/// The DSCP and dot1p maps by name, the built-in AZURE ones included.
pub(super) struct TcMaps<'a> {
    dscp: BTreeMap<&'a str, [u8; 64]>,
    pcp: BTreeMap<&'a str, [u8; 8]>,
}

impl Config {
    /// The class maps: AZURE plus every configured one (which may not be
    /// called AZURE).
    pub(super) fn tc_maps(&self, err: &mut impl FnMut(String, String)) -> TcMaps<'_> {
        let mut dscp: BTreeMap<&str, [u8; 64]> = BTreeMap::new();
        dscp.insert(AZURE, AZURE_DSCP_TO_TC);
        for (name, entries) in &self.dscp_to_tc_map {
            let base = format!("dscp_to_tc_map.{name}");
            not_azure(name, &base, err);
            dscp.insert(name, resolve_map::<64>(entries, &base, "DSCP", err));
        }
        let mut pcp: BTreeMap<&str, [u8; 8]> = BTreeMap::new();
        pcp.insert(AZURE, [0, 1, 2, 3, 4, 5, 6, 7]);
        for (name, entries) in &self.dot1p_to_tc_map {
            let base = format!("dot1p_to_tc_map.{name}");
            not_azure(name, &base, err);
            pcp.insert(name, resolve_map::<8>(entries, &base, "dot1p", err));
        }
        TcMaps { dscp, pcp }
    }

    /// Every `[[port]]`: at least one, at most MAX_PORTS, names unique.
    pub(super) fn validate_ports(
        &self,
        cnp_tc: u8,
        default_malformed: u8,
        maps: &TcMaps,
        err: &mut impl FnMut(String, String),
    ) -> Vec<PortPlan> {
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
            ports.push(validate_port(i, p, cnp_tc, default_malformed, maps, err));
        }
        ports
    }
}

/// A configured map may not take the built-in map's name.
fn not_azure(name: &str, base: &str, err: &mut impl FnMut(String, String)) {
    if name == AZURE {
        err(
            base.to_string(),
            "AZURE is the built-in map; give your map another name".into(),
        );
    }
}

/// One `[[port]]` (`i`-th) into its plan.
fn validate_port(
    i: usize,
    p: &PortSection,
    cnp_tc: u8,
    default_malformed: u8,
    maps: &TcMaps,
    err: &mut impl FnMut(String, String),
) -> PortPlan {
    let base = format!("port[{i}]");
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
    let dscp_to_tc = match maps.dscp.get(p.dscp_to_tc_map.as_str()) {
        Some(m) => *m,
        None => {
            err(
                format!("{base}.dscp_to_tc_map"),
                format!(
                    "expected the name of a [dscp_to_tc_map.NAME] table or \"AZURE\", got {:?}",
                    p.dscp_to_tc_map
                ),
            );
            AZURE_DSCP_TO_TC
        }
    };
    let pcp_to_tc = match maps.pcp.get(p.dot1p_to_tc_map.as_str()) {
        Some(m) => *m,
        None => {
            err(
                format!("{base}.dot1p_to_tc_map"),
                format!(
                    "expected the name of a [dot1p_to_tc_map.NAME] table or \"AZURE\", got {:?}",
                    p.dot1p_to_tc_map
                ),
            );
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
    let default_tc = check_tc(p.default_tc, &format!("{base}.default_tc"), err);
    let malformed = match &p.malformed {
        Some(m) => check_malformed(m, &format!("{base}.malformed"), err),
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
    PortPlan {
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
            uet_feedback_tc: 0,
            dscp_to_tc,
            pcp_to_tc,
            mac: mac.unwrap_or([0; 6]),
            _pad: [0; 2],
            speed_mbps,
            flags: if p.far_notify {
                dataplane_common::maps::PORT_F_FAR_NOTIFY
            } else {
                0
            },
        },
    }
}
