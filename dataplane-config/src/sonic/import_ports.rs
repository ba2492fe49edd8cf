//! PORT (names, speed, MTU), the port map, the class maps
//! (DSCP_TO_TC_MAP, DOT1P_TO_TC_MAP, TC_TO_DSCP_MAP), the maps this data
//! plane keeps as identity (TC_TO_PRIORITY_GROUP_MAP, TC_TO_QUEUE_MAP,
//! MAP_PFC_PRIORITY_TO_QUEUE, PFC_PRIORITY_TO_PRIORITY_GROUP_MAP) and
//! PORT_QOS_MAP.

use std::collections::BTreeMap;

use dataplane_common::maps::AZURE_DSCP_TO_TC;

use super::db::{key_parts, port_order};
use super::refs::resolve;
use super::{int_field, ImportOptions, Importer};
use crate::{Config, PortSection, AZURE};

/// The map SONiC leaves a port on when it names none: every codepoint
/// on TC 0 (SAI's default), written out so the behaviour stays SONiC's.
pub const TC0_MAP: &str = "SONIC_TC0";
/// Our name for a SONiC map called AZURE that differs from the built-in.
pub const RENAMED_AZURE: &str = "SONIC_AZURE";
const IFNAME_MAX: usize = 15;

/// A SONiC port that is imported, and what later tables need of it.
#[derive(Debug, Clone)]
pub struct PortIn {
    /// The SONiC name (Ethernet0).
    pub sonic: String,
    /// Index into `Config::ports`.
    pub index: usize,
    /// PORT mtu, if given.
    pub mtu: Option<i64>,
    /// PORT_QOS_MAP pfcwd_sw_enable, if given.
    pub pfcwd_sw_enable: Option<String>,
    /// The PORT_QOS_MAP key it was configured by.
    pub qos_key: Option<String>,
}

impl Importer<'_> {
    /// PORT: the ports to import (all of them, or those `--ports` maps),
    /// each named by the map or by its alias, with speed and MTU.
    pub(super) fn ports(&mut self, opts: &ImportOptions, cfg: &mut Config) -> Vec<PortIn> {
        self.handled.insert("PORT");
        let mut names: Vec<String> = self.db.table("PORT").map(|(k, _)| k.clone()).collect();
        names.sort_by(|a, b| port_order(a, b));
        for m in opts.ports.keys() {
            if !names.contains(m) {
                self.error(
                    format!("--ports {m}"),
                    format!("{m:?} is not a key of PORT"),
                );
            }
        }
        let mut out = Vec::new();
        for sonic in names {
            let at = format!("PORT|{sonic}");
            let fields = self.db.get("PORT", &sonic).cloned().unwrap_or_default();
            let ifname = if opts.ports.is_empty() {
                match fields.get("alias") {
                    Some(a) => a.clone(),
                    None => {
                        self.error(
                            format!("{at}.alias"),
                            "expected an alias naming the port's interface, or give --ports SONIC_PORT=INTERFACE,...",
                        );
                        continue;
                    }
                }
            } else {
                match opts.ports.get(&sonic) {
                    Some(i) => i.clone(),
                    None => {
                        self.unsupported(&at, "", "not in --ports: port not imported");
                        continue;
                    }
                }
            };
            if let Some(other) = out
                .iter()
                .find(|p: &&PortIn| cfg.ports[p.index].name == ifname)
            {
                let field = if opts.ports.is_empty() {
                    format!("{at}.alias")
                } else {
                    format!("--ports {sonic}")
                };
                self.error(
                    field,
                    format!("interface {ifname:?} is already PORT|{}'s", other.sonic),
                );
                continue;
            }
            if ifname.is_empty() || ifname.len() > IFNAME_MAX || ifname.contains(['/', ' ']) {
                self.error(
                    format!("{at}.alias"),
                    format!("{ifname:?} cannot name a Linux interface (1-{IFNAME_MAX} characters, no '/' or spaces): give --ports SONIC_PORT=INTERFACE,..."),
                );
                continue;
            }
            let speed = fields
                .get("speed")
                .and_then(|s| int_field(self, &at, "speed", s, 1, 1_600_000))
                .map(toml::Value::Integer);
            let mtu = fields
                .get("mtu")
                .and_then(|s| int_field(self, &at, "mtu", s, 64, 65535));
            self.rest(
                "PORT",
                &sonic,
                &["speed", "mtu", "alias", "description", "index"],
                "port attribute this data plane does not set (configure the interface itself)",
            );
            let section = format!("port.{ifname}");
            self.source(&section, at);
            out.push(PortIn {
                sonic,
                index: cfg.ports.len(),
                mtu,
                pfcwd_sw_enable: None,
                qos_key: None,
            });
            cfg.ports.push(new_port(ifname, speed));
        }
        out
    }

    /// The class maps, with SONiC's "unlisted = TC 0" made explicit.
    pub(super) fn class_maps(&mut self, cfg: &mut Config) {
        for t in [
            "DSCP_TO_TC_MAP",
            "DOT1P_TO_TC_MAP",
            "TC_TO_DSCP_MAP",
            "TC_TO_PRIORITY_GROUP_MAP",
            "TC_TO_QUEUE_MAP",
            "MAP_PFC_PRIORITY_TO_QUEUE",
            "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
        ] {
            self.handled.insert(t);
        }
        let dscp: Vec<String> = self
            .db
            .table("DSCP_TO_TC_MAP")
            .map(|(k, _)| k.clone())
            .collect();
        for name in dscp {
            let Some(t) = self.map_table::<64>("DSCP_TO_TC_MAP", &name, 7) else {
                continue;
            };
            if name == AZURE && t == AZURE_DSCP_TO_TC {
                self.note(
                    "DSCP_TO_TC_MAP|AZURE",
                    "",
                    "equals the built-in AZURE map: no section, ports name \"AZURE\"",
                );
                continue;
            }
            let ours = self.our_map_name("DSCP_TO_TC_MAP", &name);
            self.source(
                &format!("dscp_to_tc_map.{ours}"),
                format!("DSCP_TO_TC_MAP|{name}"),
            );
            cfg.dscp_to_tc_map.insert(ours, compress(&t));
        }
        let pcp: Vec<String> = self
            .db
            .table("DOT1P_TO_TC_MAP")
            .map(|(k, _)| k.clone())
            .collect();
        for name in pcp {
            let Some(t) = self.map_table::<8>("DOT1P_TO_TC_MAP", &name, 7) else {
                continue;
            };
            if name == AZURE && t == [0, 1, 2, 3, 4, 5, 6, 7] {
                self.note(
                    "DOT1P_TO_TC_MAP|AZURE",
                    "",
                    "equals the built-in AZURE map (identity): no section, ports name \"AZURE\"",
                );
                continue;
            }
            let ours = self.our_map_name("DOT1P_TO_TC_MAP", &name);
            self.source(
                &format!("dot1p_to_tc_map.{ours}"),
                format!("DOT1P_TO_TC_MAP|{name}"),
            );
            cfg.dot1p_to_tc_map.insert(ours, full(&t));
        }
        let tcd: Vec<String> = self
            .db
            .table("TC_TO_DSCP_MAP")
            .map(|(k, _)| k.clone())
            .collect();
        for name in tcd {
            let entries = self.tc_to_dscp(&name);
            self.source(
                &format!("tc_to_dscp_map.{name}"),
                format!("TC_TO_DSCP_MAP|{name}"),
            );
            cfg.tc_to_dscp_map.insert(name, entries);
        }
    }

    /// A SONiC map named AZURE that is not our built-in AZURE is renamed.
    fn our_map_name(&mut self, table: &str, name: &str) -> String {
        if name != AZURE {
            return name.to_string();
        }
        if self.db.get(table, RENAMED_AZURE).is_some() {
            self.error(
                format!("{table}|{AZURE}"),
                format!("differs from the built-in AZURE map and {table}|{RENAMED_AZURE}, its new name here, is taken"),
            );
        }
        self.note(
            &format!("{table}|{AZURE}"),
            "",
            format!("differs from the built-in AZURE map: imported as {RENAMED_AZURE}"),
        );
        RENAMED_AZURE.to_string()
    }

    /// One map of codepoint -> class (0..=max) as a full table, unlisted
    /// codepoints on 0 as SAI leaves them.
    fn map_table<const N: usize>(&mut self, table: &str, name: &str, max: i64) -> Option<[u8; N]> {
        let entries = self.db.get(table, name)?.clone();
        let at = format!("{table}|{name}");
        let mut t = [0u8; N];
        let mut ok = true;
        for (k, v) in &entries {
            let key = k.trim().parse::<usize>().ok().filter(|&c| c < N);
            let val = v
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|x| (0..=max).contains(x));
            match (key, val) {
                (Some(c), Some(x)) => t[c] = x as u8,
                (None, _) => {
                    self.error(
                        format!("{at}.{k}"),
                        format!("expected a codepoint 0-{} as the key", N - 1),
                    );
                    ok = false;
                }
                (_, None) => {
                    self.error(
                        format!("{at}.{k}"),
                        format!("expected a value 0-{max}, got {v:?}"),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(t)
    }

    /// TC_TO_DSCP_MAP|name: listed classes only (unlisted: none).
    fn tc_to_dscp(&mut self, name: &str) -> BTreeMap<String, toml::Value> {
        let entries = self
            .db
            .get("TC_TO_DSCP_MAP", name)
            .cloned()
            .unwrap_or_default();
        let at = format!("TC_TO_DSCP_MAP|{name}");
        let mut out = BTreeMap::new();
        for (k, v) in &entries {
            let tc = k.trim().parse::<u8>().ok().filter(|&c| c < 8);
            let dscp = v
                .trim()
                .parse::<i64>()
                .ok()
                .filter(|x| (0..=63).contains(x));
            match (tc, dscp) {
                (Some(tc), Some(d)) => {
                    out.insert(tc.to_string(), toml::Value::Integer(d));
                }
                (None, _) => self.error(
                    format!("{at}.{k}"),
                    "expected a traffic class 0-7 as the key",
                ),
                (_, None) => self.error(
                    format!("{at}.{k}"),
                    format!("expected a DSCP 0-63, got {v:?}"),
                ),
            }
        }
        out
    }

    /// A map this data plane keeps as identity: any other entry is
    /// reported (the PG, queue = the class / priority).
    fn identity_map(&mut self, table: &str, name: &str, what: &str) {
        if let Some(t) = self.map_table::<8>(table, name, 7) {
            let listed: Vec<String> = self
                .db
                .get(table, name)
                .map(|f| f.keys().cloned().collect())
                .unwrap_or_default();
            for k in listed {
                let c: usize = k.trim().parse().unwrap_or(0);
                if usize::from(t[c]) != c {
                    self.unsupported(
                        &format!("{table}|{name}"),
                        &k,
                        format!(
                            "{c} -> {}: this data plane keeps {what} = class (identity)",
                            t[c]
                        ),
                    );
                }
            }
        }
    }

    /// PORT_QOS_MAP: each port's maps, lossless priorities, watchdog
    /// priorities and trim DSCP map; `global` gives the DSCP map of ports
    /// that name none.
    pub(super) fn port_qos(&mut self, ports: &mut [PortIn], cfg: &mut Config) {
        self.handled.insert("PORT_QOS_MAP");
        let mut by_port: BTreeMap<String, String> = BTreeMap::new();
        let keys: Vec<String> = self
            .db
            .table("PORT_QOS_MAP")
            .map(|(k, _)| k.clone())
            .collect();
        for key in &keys {
            if key == "global" {
                continue;
            }
            for p in key.split(',').map(str::trim) {
                if let Some(prev) = by_port.insert(p.to_string(), key.clone()) {
                    self.error(
                        format!("PORT_QOS_MAP|{key}"),
                        format!("port {p} is also configured by PORT_QOS_MAP|{prev}"),
                    );
                }
                if self.db.get("PORT", p).is_none() {
                    self.error(
                        format!("PORT_QOS_MAP|{key}"),
                        format!("unknown port {p:?}: PORT has no such key"),
                    );
                }
            }
        }
        let global_dscp = self.global_dscp_map();
        let mut identity_seen = std::collections::BTreeSet::new();
        for p in ports.iter_mut() {
            let key = by_port.get(&p.sonic).cloned();
            let fields = key
                .as_ref()
                .and_then(|k| self.db.get("PORT_QOS_MAP", k))
                .cloned()
                .unwrap_or_default();
            let at = format!("PORT_QOS_MAP|{}", key.clone().unwrap_or_default());
            let port = &mut cfg.ports[p.index];
            let section = format!("port.{}", port.name);
            if let Some(k) = &key {
                self.sources
                    .entry(section.clone())
                    .or_default()
                    .insert(format!("PORT_QOS_MAP|{k}"));
            }
            let map_of = |im: &mut Self, field: &str, table: &str| -> Option<String> {
                let v = fields.get(field)?;
                match resolve(im.db, table, v, &format!("{at}.{field}")) {
                    Ok(k) => Some(k),
                    Err(e) => {
                        im.errors.push(e);
                        None
                    }
                }
            };
            let dscp = map_of(self, "dscp_to_tc_map", "DSCP_TO_TC_MAP");
            let dot1p = map_of(self, "dot1p_to_tc_map", "DOT1P_TO_TC_MAP");
            let (trust, dscp_name, dot1p_name) = match (&dscp, &global_dscp, &dot1p) {
                (Some(d), _, _) | (None, Some(d), _) => ("dscp", Some(d.clone()), dot1p.clone()),
                (None, None, Some(_)) => ("dot1p", None, dot1p.clone()),
                (None, None, None) => ("dscp", None, None),
            };
            let port = &mut cfg.ports[p.index];
            port.trust = trust.into();
            port.dscp_to_tc_map = match (trust, dscp_name) {
                ("dot1p", _) => AZURE.into(),
                (_, Some(n)) => self.map_ref(&n, "DSCP_TO_TC_MAP"),
                (_, None) => TC0_MAP.into(),
            };
            port.dot1p_to_tc_map = match dot1p_name {
                Some(n) => self.map_ref(&n, "DOT1P_TO_TC_MAP"),
                None => TC0_MAP.into(),
            };
            let port = &mut cfg.ports[p.index];
            if let Some(v) = fields.get("pfc_enable") {
                match crate::parse_pfc_enable(v) {
                    Ok(_) => port.pfc_enable = v.clone(),
                    Err(m) => self.error(format!("{at}.pfc_enable"), m),
                }
            }
            if let Some(m) = map_of(self, "tc_to_dscp_map", "TC_TO_DSCP_MAP") {
                cfg.ports[p.index].tc_to_dscp_map = Some(m);
            }
            for (field, table, what) in [
                ("tc_to_pg_map", "TC_TO_PRIORITY_GROUP_MAP", "priority group"),
                ("tc_to_queue_map", "TC_TO_QUEUE_MAP", "queue"),
                (
                    "pfc_to_queue_map",
                    "MAP_PFC_PRIORITY_TO_QUEUE",
                    "queue paused by a priority",
                ),
                (
                    "pfc_to_pg_map",
                    "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
                    "priority group of a priority",
                ),
            ] {
                if let Some(m) = map_of(self, field, table) {
                    if identity_seen.insert((table, m.clone())) {
                        self.identity_map(table, &m, what);
                    }
                }
            }
            p.pfcwd_sw_enable = fields.get("pfcwd_sw_enable").cloned();
            p.qos_key = key.clone();
            if let Some(k) = &key {
                self.rest(
                    "PORT_QOS_MAP",
                    k,
                    &[
                        "dscp_to_tc_map",
                        "dot1p_to_tc_map",
                        "pfc_enable",
                        "pfcwd_sw_enable",
                        "tc_to_dscp_map",
                        "tc_to_pg_map",
                        "tc_to_queue_map",
                        "pfc_to_queue_map",
                        "pfc_to_pg_map",
                    ],
                    "per-port QoS attribute this data plane does not have",
                );
            }
        }
        for table in [
            "TC_TO_PRIORITY_GROUP_MAP",
            "TC_TO_QUEUE_MAP",
            "MAP_PFC_PRIORITY_TO_QUEUE",
            "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
        ] {
            let unused: Vec<String> = self
                .db
                .table(table)
                .map(|(k, _)| k.clone())
                .filter(|k| !identity_seen.contains(&(table, k.clone())))
                .collect();
            for k in unused {
                self.note(&format!("{table}|{k}"), "", "no imported port uses it");
            }
        }
        let uses_tc0 =
            |c: &Config, f: fn(&PortSection) -> &String| c.ports.iter().any(|p| f(p) == TC0_MAP);
        if uses_tc0(cfg, |p| &p.dscp_to_tc_map) {
            self.taken_name("DSCP_TO_TC_MAP");
            cfg.dscp_to_tc_map.insert(
                TC0_MAP.into(),
                BTreeMap::from([("default".into(), toml::Value::Integer(0))]),
            );
            self.source(
                &format!("dscp_to_tc_map.{TC0_MAP}"),
                "PORT_QOS_MAP (ports naming no dscp_to_tc_map: SAI leaves every DSCP on TC 0)"
                    .into(),
            );
        }
        if uses_tc0(cfg, |p| &p.dot1p_to_tc_map) {
            self.taken_name("DOT1P_TO_TC_MAP");
            cfg.dot1p_to_tc_map.insert(
                TC0_MAP.into(),
                (0..8)
                    .map(|i| (i.to_string(), toml::Value::Integer(0)))
                    .collect(),
            );
            self.source(
                &format!("dot1p_to_tc_map.{TC0_MAP}"),
                "PORT_QOS_MAP (ports naming no dot1p_to_tc_map: SAI leaves every priority on TC 0)"
                    .into(),
            );
        }
    }

    /// PORT_QOS_MAP|global's DSCP map (202205+), its other fields reported.
    fn global_dscp_map(&mut self) -> Option<String> {
        let fields = self.db.get("PORT_QOS_MAP", "global")?.clone();
        self.rest(
            "PORT_QOS_MAP",
            "global",
            &["dscp_to_tc_map"],
            "switch-wide QoS attribute this data plane does not have",
        );
        let v = fields.get("dscp_to_tc_map")?;
        match resolve(
            self.db,
            "DSCP_TO_TC_MAP",
            v,
            "PORT_QOS_MAP|global.dscp_to_tc_map",
        ) {
            Ok(k) => Some(k),
            Err(e) => {
                self.errors.push(e);
                None
            }
        }
    }

    /// Our name of SONiC map `name` of `table` (AZURE stays the built-in
    /// when equal to it).
    fn map_ref(&self, name: &str, table: &str) -> String {
        if name != AZURE {
            return name.to_string();
        }
        let builtin = match table {
            "DSCP_TO_TC_MAP" => self.map_equal_builtin_dscp(),
            _ => self.map_equal_identity_pcp(),
        };
        if builtin {
            AZURE.into()
        } else {
            RENAMED_AZURE.into()
        }
    }

    fn map_equal_builtin_dscp(&self) -> bool {
        let Some(f) = self.db.get("DSCP_TO_TC_MAP", AZURE) else {
            return false;
        };
        let mut t = [0u8; 64];
        for (k, v) in f {
            if let (Ok(c), Ok(x)) = (k.trim().parse::<usize>(), v.trim().parse::<u8>()) {
                if c < 64 {
                    t[c] = x;
                }
            }
        }
        t == AZURE_DSCP_TO_TC
    }

    fn map_equal_identity_pcp(&self) -> bool {
        let Some(f) = self.db.get("DOT1P_TO_TC_MAP", AZURE) else {
            return false;
        };
        let mut t = [0u8; 8];
        for (k, v) in f {
            if let (Ok(c), Ok(x)) = (k.trim().parse::<usize>(), v.trim().parse::<u8>()) {
                if c < 8 {
                    t[c] = x;
                }
            }
        }
        t == [0, 1, 2, 3, 4, 5, 6, 7]
    }

    /// SONIC_TC0 is ours: a SONiC map of that name must be all TC 0.
    fn taken_name(&mut self, table: &str) {
        let all_zero = |f: &super::db::Fields| f.values().all(|v| v.trim() == "0");
        if self.db.get(table, TC0_MAP).is_some_and(|f| !all_zero(f)) {
            self.error(format!("{table}|{TC0_MAP}"), format!("{TC0_MAP} names the all-TC-0 map the import writes for ports naming no map: rename it"));
        }
    }
}

/// A port with our defaults and SONiC's absences (no lossless priority
/// until PORT_QOS_MAP names some).
fn new_port(name: String, speed: Option<toml::Value>) -> PortSection {
    PortSection {
        name,
        trust: "dscp".into(),
        dscp_to_tc_map: AZURE.into(),
        dot1p_to_tc_map: AZURE.into(),
        pfc_enable: String::new(),
        default_tc: 0,
        malformed: None,
        xdp_mode: "auto".into(),
        mac: None,
        speed,
        wred_profile: None,
        lossy_wred_profile: None,
        cable_length_m: None,
        headroom_xoff: None,
        headroom_xon: None,
        buffer_queue: BTreeMap::new(),
        tc_to_dscp_map: None,
        far_notify: false,
    }
}

/// A DSCP table as `default` (its most frequent class, the lowest on a
/// tie) plus the codepoints that differ.
pub fn compress(t: &[u8; 64]) -> BTreeMap<String, toml::Value> {
    let mut count = [0usize; 8];
    for &c in t {
        count[usize::from(c & 7)] += 1;
    }
    let default = (0..8)
        .max_by_key(|&c| (count[c], std::cmp::Reverse(c)))
        .unwrap_or(0) as u8;
    let mut out = BTreeMap::from([("default".to_string(), toml::Value::Integer(default.into()))]);
    for (cp, &c) in t.iter().enumerate() {
        if c != default {
            out.insert(cp.to_string(), toml::Value::Integer(c.into()));
        }
    }
    out
}

/// A dot1p table with every priority listed.
pub fn full(t: &[u8; 8]) -> BTreeMap<String, toml::Value> {
    t.iter()
        .enumerate()
        .map(|(i, &c)| (i.to_string(), toml::Value::Integer(c.into())))
        .collect()
}

/// `Ethernet0,Ethernet4|3-4` to (ports, range).
pub fn split_port_key(key: &str) -> Option<(Vec<String>, String)> {
    let parts = key_parts(key);
    if parts.len() != 2 {
        return None;
    }
    Some((
        parts[0].split(',').map(|s| s.trim().to_string()).collect(),
        parts[1].to_string(),
    ))
}
