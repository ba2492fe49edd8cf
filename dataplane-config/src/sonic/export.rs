//! Our configuration as CONFIG_DB tables (`config_db.json`), in SONiC's
//! 202012+ plain-name reference format. The port `i` is `Ethernet{4i}`
//! with its interface as `alias`, so importing the result without a port
//! map names the ports as before. What SONiC cannot express is reported
//! as a [`Finding`]; every value it can is written out, so that importing
//! the export gives the same configuration.

use std::collections::BTreeMap;

use dataplane_common::maps::{AZURE_DSCP_TO_TC, TRUST_DOT1P};

use super::{bits_ranges, Finding, Kind};
use crate::values::resolve_map;
use crate::{Config, ConfigError, Plan, AZURE};

type Fields = BTreeMap<String, String>;
type Tables = BTreeMap<String, BTreeMap<String, Fields>>;

/// A configuration in SONiC's shape.
#[derive(Debug, Clone)]
pub struct Exported {
    /// `config_db.json` text (tables, keys and fields sorted).
    pub json: String,
    /// What SONiC's tables cannot carry.
    pub findings: Vec<Finding>,
}

/// Exports a configuration; it must be valid (`config check`).
pub fn export(c: &Config, source: &str) -> Result<Exported, ConfigError> {
    let plan = c.validate(source)?;
    let mut ex = Exporter {
        c,
        plan: &plan,
        t: Tables::new(),
        findings: Vec::new(),
    };
    ex.run();
    let json = serde_json::to_string_pretty(&ex.t).expect("string tables serialise");
    ex.findings.sort();
    Ok(Exported {
        json: json + "\n",
        findings: ex.findings,
    })
}

/// SONiC's name of port `i`.
pub fn sonic_port(i: usize) -> String {
    format!("Ethernet{}", 4 * i)
}

struct Exporter<'a> {
    c: &'a Config,
    plan: &'a Plan,
    t: Tables,
    findings: Vec<Finding>,
}

impl Exporter<'_> {
    fn run(&mut self) {
        self.not_expressible();
        let mut md = Fields::new();
        md.insert("hostname".into(), self.c.switch.name.clone());
        if self.c.buffer.is_some() {
            md.insert("buffer_model".into(), "traditional".into());
        }
        self.put("DEVICE_METADATA", "localhost", md);
        self.maps();
        self.ports();
        self.wred_and_queues();
        self.buffers();
        self.pfcwd();
        if let Some(t) = &self.c.switch_trimming {
            let mut f = Fields::new();
            f.insert("size".into(), t.size.to_string());
            f.insert("dscp_value".into(), text(&t.dscp_value));
            if let Some(v) = &t.tc_value {
                f.insert("tc_value".into(), text(v));
            }
            f.insert("queue_index".into(), text(&t.queue_index));
            self.put("SWITCH_TRIMMING", "GLOBAL", f);
        }
    }

    fn put(&mut self, table: &str, key: &str, f: Fields) {
        self.t
            .entry(table.into())
            .or_default()
            .insert(key.into(), f);
    }

    fn lost(&mut self, at: &str, field: &str, message: &str) {
        self.findings.push(Finding {
            kind: Kind::Unsupported,
            at: at.into(),
            field: field.into(),
            message: message.into(),
        });
    }

    fn note(&mut self, at: &str, field: &str, message: &str) {
        self.findings.push(Finding {
            kind: Kind::Note,
            at: at.into(),
            field: field.into(),
            message: message.into(),
        });
    }

    /// Our fields with no CONFIG_DB equivalent, each reported.
    fn not_expressible(&mut self) {
        let c = self.c;
        let s = &c.switch;
        let none = "no CONFIG_DB field for it: not exported";
        if s.cnp_tc != 6 {
            self.lost("switch", "cnp_tc", none);
        }
        if s.malformed != "pass" {
            self.lost("switch", "malformed", none);
        }
        if s.hash_seed.is_some() {
            self.lost("switch", "hash_seed", none);
        }
        for (sec, present) in [
            ("nexthop", !c.nexthops.is_empty()),
            ("group", !c.groups.is_empty()),
            ("route", !c.routes.is_empty()),
            ("routing", c.routing.is_some()),
            ("uet", c.uet.is_some()),
        ] {
            if present {
                self.lost(sec, "", "forwarding and UET sections are not exported");
            }
        }
        if let Some(b) = &c.buffer {
            if b.response_us.is_some() || b.pfc_tx != "auto" || b.tick_us != 200 {
                self.lost("buffer", "response_us, pfc_tx, tick_us", none);
            }
            let lossless = self.plan.ports.iter().any(|p| p.config.pfc_enable != 0);
            if !lossless && (b.dynamic_th != 0 || b.xon_offset != 0) {
                self.lost(
                    "buffer",
                    "dynamic_th, xon_offset",
                    "no lossless PG's profile to carry them",
                );
            }
            let lossy = self.plan.ports.iter().any(|p| p.config.pfc_enable != 0xff);
            if !lossy && b.lossy_dynamic_th != 3 {
                self.lost(
                    "buffer",
                    "lossy_dynamic_th",
                    "every PG is lossless: no lossy PG's profile to carry it",
                );
            }
            if b.cable_length_m != 5 {
                self.note(
                    "buffer",
                    "cable_length_m",
                    "exported per port in CABLE_LENGTH (it comes back on each port)",
                );
            }
        }
        if let Some(d) = &c.dcbx {
            if d.enable
                || d.tx_interval_s != 30
                || d.tx_hold != 4
                || d.fast_tx_count != 4
                || d.willing
                || d.roce_priority.is_some()
                || d.app_dscp != "lossless"
                || d.reco_bandwidth.is_some()
                || d.reco_tsa.is_some()
            {
                self.lost("dcbx", "", "only the ETS tables are exported (as SCHEDULER); LLDP/DCBX settings have no CONFIG_DB field here");
            }
        }
        for (i, p) in c.ports.iter().enumerate() {
            let at = format!("port[{i}] ({})", p.name);
            if p.default_tc != 0 {
                self.lost(&at, "default_tc", none);
            }
            if p.malformed.is_some() || p.xdp_mode != "auto" || p.mac.is_some() {
                self.lost(&at, "malformed, xdp_mode, mac", none);
            }
            if p.trust == "dot1p" && p.dscp_to_tc_map != AZURE {
                self.lost(&at, "dscp_to_tc_map", "a dot1p-trusting port's DSCP map has no place in PORT_QOS_MAP (naming one would trust DSCP)");
            }
            if self.plan.ports[i].config.pfc_enable == 0xff && p.lossy_wred_profile.is_some() {
                self.lost(
                    &at,
                    "lossy_wred_profile",
                    "every queue of the port is lossless: no queue to carry it",
                );
            }
            if c.buffer.is_some() && p.cable_length_m.is_none() {
                self.note(
                    &at,
                    "cable_length_m",
                    "exported as [buffer]'s in CABLE_LENGTH (it comes back on the port)",
                );
            }
            if self.plan.ports[i].config.pfc_enable == 0 && p.wred_profile.is_some() {
                self.lost(
                    &at,
                    "wred_profile",
                    "the port has no lossless queue to carry it",
                );
            }
            if c.buffer.is_some() && p.headroom_xoff.is_none() {
                self.note(
                    &at,
                    "headroom_xoff",
                    "the computed headroom is exported as its numbers (it comes back configured)",
                );
            }
        }
    }

    /// The class maps, AZURE written out when a port uses it.
    fn maps(&mut self) {
        let mut err = |_: String, _: String| {};
        let mut dscp: BTreeMap<String, [u8; 64]> = BTreeMap::new();
        for (n, e) in &self.c.dscp_to_tc_map {
            dscp.insert(n.clone(), resolve_map::<64>(e, n, "DSCP", &mut err));
        }
        let mut pcp: BTreeMap<String, [u8; 8]> = BTreeMap::new();
        for (n, e) in &self.c.dot1p_to_tc_map {
            pcp.insert(n.clone(), resolve_map::<8>(e, n, "dot1p", &mut err));
        }
        for p in &self.c.ports {
            if p.trust != "dot1p" && p.dscp_to_tc_map == AZURE {
                dscp.insert(AZURE.into(), AZURE_DSCP_TO_TC);
            }
            if p.dot1p_to_tc_map == AZURE {
                pcp.insert(AZURE.into(), [0, 1, 2, 3, 4, 5, 6, 7]);
            }
        }
        for (n, t) in dscp {
            self.put("DSCP_TO_TC_MAP", &n, numbered(&t));
        }
        for (n, t) in pcp {
            self.put("DOT1P_TO_TC_MAP", &n, numbered(&t));
        }
        for (n, e) in &self.c.tc_to_dscp_map {
            let f = e.iter().map(|(k, v)| (k.clone(), text(v))).collect();
            self.put("TC_TO_DSCP_MAP", n, f);
        }
        let identity = numbered(&[0u8, 1, 2, 3, 4, 5, 6, 7]);
        self.put("TC_TO_PRIORITY_GROUP_MAP", AZURE, identity.clone());
        self.put("TC_TO_QUEUE_MAP", AZURE, identity);
    }

    /// PORT and PORT_QOS_MAP.
    fn ports(&mut self) {
        for (i, p) in self.c.ports.iter().enumerate() {
            let name = sonic_port(i);
            let mut f = Fields::new();
            f.insert("alias".into(), p.name.clone());
            if p.speed.is_some() {
                f.insert(
                    "speed".into(),
                    self.plan.ports[i].config.speed_mbps.to_string(),
                );
            }
            if let Some(b) = &self.c.buffer {
                f.insert("mtu".into(), b.mtu.to_string());
            }
            self.put("PORT", &name, f);
            let mut q = Fields::new();
            if self.plan.ports[i].config.trust != TRUST_DOT1P {
                q.insert("dscp_to_tc_map".into(), p.dscp_to_tc_map.clone());
            }
            q.insert("dot1p_to_tc_map".into(), p.dot1p_to_tc_map.clone());
            q.insert("tc_to_pg_map".into(), AZURE.into());
            q.insert("tc_to_queue_map".into(), AZURE.into());
            q.insert("pfc_enable".into(), p.pfc_enable.clone());
            if self.c.pfcwd.is_some() && self.c.buffer.is_some() {
                q.insert("pfcwd_sw_enable".into(), p.pfc_enable.clone());
            }
            if let Some(m) = &p.tc_to_dscp_map {
                q.insert("tc_to_dscp_map".into(), m.clone());
            }
            self.put("PORT_QOS_MAP", &name, q);
        }
    }

    /// WRED_PROFILE, QUEUE (WRED per queue, SCHEDULER from `[dcbx]`).
    fn wred_and_queues(&mut self) {
        let mut used_azure = false;
        for (n, w) in &self.c.wred_profile {
            let mut f = Fields::new();
            f.insert("ecn".into(), w.ecn.clone());
            f.insert(
                "green_min_threshold".into(),
                w.green_min_threshold.to_string(),
            );
            f.insert(
                "green_max_threshold".into(),
                w.green_max_threshold.to_string(),
            );
            f.insert(
                "green_drop_probability".into(),
                w.green_drop_probability.to_string(),
            );
            f.insert("wred_green_enable".into(), w.wred_green_enable.to_string());
            self.put("WRED_PROFILE", n, f);
        }
        let sched: Option<Vec<String>> = self.c.dcbx.as_ref().map(|d| {
            d.ets_tsa
                .iter()
                .zip(&d.ets_bandwidth)
                .map(|(t, w)| {
                    if t == "strict" {
                        "scheduler.strict".to_string()
                    } else {
                        format!("scheduler.dwrr{w}")
                    }
                })
                .collect()
        });
        if let Some(d) = &self.c.dcbx {
            for (t, w) in d.ets_tsa.iter().zip(&d.ets_bandwidth) {
                let (name, f) = if t == "strict" {
                    (
                        "scheduler.strict".to_string(),
                        Fields::from([("type".into(), "STRICT".into())]),
                    )
                } else {
                    (
                        format!("scheduler.dwrr{w}"),
                        Fields::from([
                            ("type".into(), "DWRR".into()),
                            ("weight".into(), w.to_string()),
                        ]),
                    )
                };
                self.put("SCHEDULER", &name, f);
            }
        }
        for (i, p) in self.c.ports.iter().enumerate() {
            let lossless = self.plan.ports[i].config.pfc_enable;
            for q in 0..8usize {
                let mut f = Fields::new();
                if lossless & (1 << q) != 0 {
                    let w = p
                        .wred_profile
                        .clone()
                        .unwrap_or_else(|| "AZURE_LOSSLESS".into());
                    used_azure |= w == "AZURE_LOSSLESS";
                    f.insert("wred_profile".into(), w);
                } else if let Some(w) = &p.lossy_wred_profile {
                    used_azure |= w == "AZURE_LOSSLESS";
                    f.insert("wred_profile".into(), w.clone());
                }
                if let Some(s) = &sched {
                    f.insert("scheduler".into(), s[q].clone());
                }
                if !f.is_empty() {
                    self.put("QUEUE", &format!("{}|{q}", sonic_port(i)), f);
                }
            }
        }
        if used_azure {
            let f = Fields::from([
                ("ecn".into(), "ecn_all".into()),
                ("green_min_threshold".into(), "1048576".into()),
                ("green_max_threshold".into(), "2097152".into()),
                ("green_drop_probability".into(), "5".into()),
                ("wred_green_enable".into(), "true".into()),
            ]);
            self.put("WRED_PROFILE", "AZURE_LOSSLESS", f);
        }
    }

    /// BUFFER_POOL, BUFFER_PROFILE, BUFFER_PG, BUFFER_QUEUE, CABLE_LENGTH.
    fn buffers(&mut self) {
        let (Some(b), Some(bp)) = (&self.c.buffer, &self.plan.buffer) else {
            if self.c.ports.iter().any(|p| !p.buffer_queue.is_empty()) {
                self.lost(
                    "port",
                    "buffer_queue",
                    "no [buffer]: queue profiles are exported with the buffer tables only",
                );
            }
            return;
        };
        let pool = "ingress_lossless_pool";
        self.put(
            "BUFFER_POOL",
            pool,
            Fields::from([
                ("size".into(), b.pool_size.to_string()),
                ("type".into(), "ingress".into()),
                ("mode".into(), "dynamic".into()),
            ]),
        );
        let lossy = "ingress_lossy_profile";
        self.put(
            "BUFFER_PROFILE",
            lossy,
            Fields::from([
                ("pool".into(), pool.into()),
                ("size".into(), b.reserve.to_string()),
                ("dynamic_th".into(), b.lossy_dynamic_th.to_string()),
            ]),
        );
        let mut cables = Fields::new();
        let mut names: BTreeMap<String, (i64, i64)> = BTreeMap::new();
        for (i, p) in self.c.ports.iter().enumerate() {
            let port = sonic_port(i);
            let speed = self.plan.ports[i].config.speed_mbps;
            let cable = p.cable_length_m.unwrap_or(b.cable_length_m);
            cables.insert(port.clone(), format!("{cable}m"));
            let lossless = self.plan.ports[i].config.pfc_enable;
            for r in bits_ranges(!lossless) {
                self.put(
                    "BUFFER_PG",
                    &format!("{port}|{r}"),
                    Fields::from([("profile".into(), lossy.into())]),
                );
            }
            if lossless == 0 {
                continue;
            }
            let (h, _) = bp.headroom[i];
            let (xoff, xon) = (i64::from(h.xoff), i64::from(h.xon));
            if b.reserve != 0 && b.reserve == xoff + xon {
                self.lost(&format!("port[{i}] ({})", p.name), "", "reserve equals xoff + xon, which SONiC's profile reads as a headroom-sized PG (reserve 0)");
            }
            // SONiC's static buffermgrd puts pg_lossless_<speed>_<cable>
            // on the lossless PGs of a port with a speed and a cable:
            // two such ports with different headroom cannot both keep theirs
            let base = format!("pg_lossless_{speed}_{cable}m_profile");
            let name = match names.get(&base) {
                Some(&h) if h != (xoff, xon) && p.speed.is_some() && cable != 0 => {
                    self.lost(&format!("port[{i}] ({})", p.name), "headroom_xoff", &format!("SONiC's buffermgrd gives every port of this speed and cable length {base}, an earlier port's headroom"));
                    format!("{base}_{i}")
                }
                Some(&h) if h != (xoff, xon) => format!("{base}_{i}"),
                _ => base,
            };
            names.insert(name.clone(), (xoff, xon));
            let size = if b.reserve == 0 {
                xoff + xon
            } else {
                b.reserve
            };
            self.put(
                "BUFFER_PROFILE",
                &name,
                Fields::from([
                    ("pool".into(), pool.into()),
                    ("size".into(), size.to_string()),
                    ("xoff".into(), xoff.to_string()),
                    ("xon".into(), xon.to_string()),
                    ("xon_offset".into(), b.xon_offset.to_string()),
                    ("dynamic_th".into(), b.dynamic_th.to_string()),
                ]),
            );
            for r in bits_ranges(lossless) {
                self.put(
                    "BUFFER_PG",
                    &format!("{port}|{r}"),
                    Fields::from([("profile".into(), name.clone())]),
                );
            }
        }
        self.put("CABLE_LENGTH", AZURE, cables);
        self.queue_profiles();
    }

    /// BUFFER_QUEUE and the queue profiles (packet_discard_action) in an
    /// egress pool the size of the shared pool.
    fn queue_profiles(&mut self) {
        let Some(b) = &self.c.buffer else { return };
        let used: std::collections::BTreeSet<&String> = self
            .c
            .ports
            .iter()
            .flat_map(|p| p.buffer_queue.values())
            .collect();
        for name in self.c.buffer_profile.keys() {
            if !used.contains(name) {
                self.lost(
                    &format!("buffer_profile.{name}"),
                    "",
                    "no port's buffer_queue uses it: an unused profile is not exported",
                );
            }
        }
        if used.is_empty() {
            return;
        }
        let egress = "egress_lossy_pool";
        self.put(
            "BUFFER_POOL",
            egress,
            Fields::from([
                ("size".into(), b.pool_size.to_string()),
                ("type".into(), "egress".into()),
                ("mode".into(), "dynamic".into()),
            ]),
        );
        for name in used {
            if self
                .t
                .get("BUFFER_PROFILE")
                .is_some_and(|t| t.contains_key(name))
            {
                self.lost(
                    &format!("buffer_profile.{name}"),
                    "",
                    "its name is taken by an exported PG profile",
                );
                continue;
            }
            let action = self
                .c
                .buffer_profile
                .get(name)
                .map(|p| p.packet_discard_action.clone())
                .unwrap_or_else(|| "drop".into());
            self.put(
                "BUFFER_PROFILE",
                name,
                Fields::from([
                    ("pool".into(), egress.into()),
                    ("size".into(), "0".into()),
                    ("dynamic_th".into(), "3".into()),
                    ("packet_discard_action".into(), action),
                ]),
            );
        }
        for (i, p) in self.c.ports.iter().enumerate() {
            for (range, prof) in &p.buffer_queue {
                self.put(
                    "BUFFER_QUEUE",
                    &format!("{}|{range}", sonic_port(i)),
                    Fields::from([("profile".into(), prof.clone())]),
                );
            }
        }
    }

    /// PFC_WD: the watchdog on every port, its poll interval in GLOBAL.
    fn pfcwd(&mut self) {
        let Some(w) = &self.c.pfcwd else { return };
        for i in 0..self.c.ports.len() {
            self.put(
                "PFC_WD",
                &sonic_port(i),
                Fields::from([
                    ("action".into(), w.action.clone()),
                    ("detection_time".into(), w.detection_time_ms.to_string()),
                    ("restoration_time".into(), w.restoration_time_ms.to_string()),
                ]),
            );
        }
        self.put(
            "PFC_WD",
            "GLOBAL",
            Fields::from([("POLL_INTERVAL".into(), w.poll_interval_ms.to_string())]),
        );
    }
}

/// A table as `"codepoint": "class"` for every codepoint.
fn numbered<const N: usize>(t: &[u8; N]) -> Fields {
    t.iter()
        .enumerate()
        .map(|(i, c)| (i.to_string(), c.to_string()))
        .collect()
}

/// A TOML value as SONiC's text.
fn text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
