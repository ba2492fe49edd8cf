//! WRED_PROFILE and QUEUE (each port's lossless and lossy WRED profile),
//! SCHEDULER (declared as DCBX ETS, not scheduled), PFC_WD (the
//! watchdog) and SWITCH_TRIMMING.

use std::collections::BTreeMap;

use super::import_ports::PortIn;
use super::refs::resolve;
use super::{int_field, Importer};
use crate::{Config, DcbxSection, PfcwdSection, SwitchTrimmingSection, WredSection};

/// Our name of the profile of lossless queues SONiC gives no WRED
/// profile (our ports otherwise default to AZURE_LOSSLESS).
pub const NO_WRED: &str = "SONIC_NO_WRED";
const AZURE_LOSSLESS: &str = "AZURE_LOSSLESS";
const RENAMED_AZURE_LOSSLESS: &str = "SONIC_AZURE_LOSSLESS";

/// Each queue's (wred_profile, scheduler), resolved.
type QueueRefs = [(Option<String>, Option<String>); 8];

impl Importer<'_> {
    /// WRED_PROFILE, QUEUE and SCHEDULER.
    pub(super) fn queues(&mut self, ports: &[PortIn], cfg: &mut Config) {
        for t in ["WRED_PROFILE", "QUEUE", "SCHEDULER"] {
            self.handled.insert(t);
        }
        let names: Vec<String> = self
            .db
            .table("WRED_PROFILE")
            .map(|(k, _)| k.clone())
            .collect();
        let mut builtin_equal = false;
        for name in names {
            let w = self.wred(&name);
            if name == AZURE_LOSSLESS && w.as_ref() == Some(&azure_lossless()) {
                builtin_equal = true;
                self.note("WRED_PROFILE|AZURE_LOSSLESS", "", "equals the built-in AZURE_LOSSLESS: no section (a lossless queue without wred_profile uses it)");
                continue;
            }
            let ours = if name == AZURE_LOSSLESS {
                self.note(&format!("WRED_PROFILE|{name}"), "", format!("differs from the built-in AZURE_LOSSLESS: imported as {RENAMED_AZURE_LOSSLESS}"));
                RENAMED_AZURE_LOSSLESS.to_string()
            } else {
                name.clone()
            };
            if let Some(w) = w {
                self.source(
                    &format!("wred_profile.{ours}"),
                    format!("WRED_PROFILE|{name}"),
                );
                cfg.wred_profile.insert(ours, w);
            }
        }
        let refs = self.queue_refs(ports, cfg);
        let mut ets: Option<(String, Vec<Option<String>>)> = None;
        for p in ports {
            let q = refs.get(&p.sonic).cloned().unwrap_or_default();
            self.port_wred(p, &q, builtin_equal, cfg);
            let scheds: Vec<Option<String>> = q.iter().map(|(_, s)| s.clone()).collect();
            if scheds.iter().all(Option::is_none) {
                continue;
            }
            match &ets {
                None => ets = Some((p.sonic.clone(), scheds)),
                Some((first, s)) if *s != scheds => {
                    self.unsupported(
                        &format!("QUEUE|{}", p.sonic),
                        "scheduler",
                        format!("one ETS declaration for all ports here: QUEUE|{first}'s"),
                    );
                }
                _ => {}
            }
        }
        if let Some((first, scheds)) = ets {
            cfg.dcbx = self.ets(&first, &scheds);
        }
        self.schedulers(&refs, cfg.dcbx.is_some());
    }

    /// Every SCHEDULER: not scheduled here, so each one a queue uses is
    /// reported (declared as ETS or not), the others noted.
    fn schedulers(&mut self, refs: &BTreeMap<String, QueueRefs>, declared: bool) {
        let used: std::collections::BTreeSet<String> = refs
            .values()
            .flat_map(|q| q.iter().filter_map(|(_, s)| s.clone()))
            .collect();
        let names: Vec<String> = self.db.table("SCHEDULER").map(|(k, _)| k.clone()).collect();
        for name in names {
            let at = format!("SCHEDULER|{name}");
            if !used.contains(&name) {
                self.note(&at, "", "no imported queue uses it");
            } else if declared {
                self.unsupported(&at, "type", "declared as DCBX ETS ([dcbx] ets_tsa, ets_bandwidth; dcbx off until you enable it), not scheduled: this data plane has no egress scheduler");
            } else {
                self.unsupported(&at, "type", "not scheduled (this data plane has no egress scheduler) and not declared as ETS (see the QUEUE finding)");
            }
            self.rest(
                "SCHEDULER",
                &name,
                &["type", "weight"],
                "shaping is not done here",
            );
        }
    }

    /// One WRED_PROFILE in our fields; SAI's defaults where SONiC gives
    /// none (ecn_none, drop probability 100, WRED off).
    fn wred(&mut self, name: &str) -> Option<WredSection> {
        let f = self
            .db
            .get("WRED_PROFILE", name)
            .cloned()
            .unwrap_or_default();
        let at = format!("WRED_PROFILE|{name}");
        let bytes = i64::from(u32::MAX);
        let need = |im: &mut Self, field: &str| match f.get(field) {
            Some(v) => int_field(im, &at, field, v, 0, bytes),
            None => {
                im.error(format!("{at}.{field}"), "expected a threshold in bytes");
                None
            }
        };
        let min = need(self, "green_min_threshold");
        let max = need(self, "green_max_threshold");
        let prob = match f.get("green_drop_probability") {
            Some(v) => int_field(self, &at, "green_drop_probability", v, 0, 100),
            None => Some(100),
        };
        let enable = match f.get("wred_green_enable").map(String::as_str) {
            None | Some("false") => false,
            Some("true") => true,
            Some(v) => {
                self.error(
                    format!("{at}.wred_green_enable"),
                    format!("expected \"true\" or \"false\", got {v:?}"),
                );
                false
            }
        };
        let ecn = f.get("ecn").cloned().unwrap_or_else(|| "ecn_none".into());
        if dataplane_common::lossless::ecn_mode_from_name(&ecn).is_none() {
            self.error(
                format!("{at}.ecn"),
                format!(
                    "expected a SONiC ecn mode (ecn_none, ecn_green, ..., ecn_all), got {ecn:?}"
                ),
            );
        }
        let known = [
            "green_min_threshold",
            "green_max_threshold",
            "green_drop_probability",
            "wred_green_enable",
            "ecn",
        ];
        for field in f.keys().filter(|k| !known.contains(&k.as_str())) {
            if coloured(field) {
                self.note(&at, field, "no packet colouring here (every packet is green, as in SONiC without a policer)");
            } else {
                self.unsupported(&at, field, "WRED attribute this data plane does not have");
            }
        }
        Some(WredSection {
            ecn,
            green_min_threshold: min?,
            green_max_threshold: max?,
            green_drop_probability: prob?,
            wred_green_enable: enable,
        })
    }

    /// QUEUE by SONiC port: each queue's resolved WRED profile and
    /// scheduler.
    fn queue_refs(&mut self, ports: &[PortIn], cfg: &Config) -> BTreeMap<String, QueueRefs> {
        let mut out: BTreeMap<String, QueueRefs> = BTreeMap::new();
        let entries: Vec<(String, BTreeMap<String, String>)> = self
            .db
            .table("QUEUE")
            .map(|(k, f)| (k.clone(), f.clone()))
            .collect();
        for (key, f) in entries {
            let at = format!("QUEUE|{key}");
            let Some((names, _, bits)) =
                self.port_range_key("QUEUE", &key, ("QUEUES", "queues", "3-4"))
            else {
                continue;
            };
            let get = |im: &mut Self, field: &str, table: &str| {
                f.get(field).and_then(|v| {
                    match resolve(im.db, table, v, &format!("{at}.{field}")) {
                        Ok(k) => Some(k),
                        Err(e) => {
                            im.errors.push(e);
                            None
                        }
                    }
                })
            };
            let wred = get(self, "wred_profile", "WRED_PROFILE");
            let sched = get(self, "scheduler", "SCHEDULER");
            self.rest(
                "QUEUE",
                &key,
                &["wred_profile", "scheduler"],
                "queue attribute this data plane does not have",
            );
            for n in names {
                if self.db.get("PORT", &n).is_none() {
                    self.error(
                        at.clone(),
                        format!("unknown port {n:?}: PORT has no such key"),
                    );
                    continue;
                }
                let Some(p) = ports.iter().find(|p| p.sonic == n) else {
                    continue;
                };
                self.source(&format!("port.{}", cfg.ports[p.index].name), at.clone());
                // overlapping keys set different fields of one queue, as
                // SONiC applies each field to the queue object
                let q = out.entry(n).or_default();
                for (i, slot) in q.iter_mut().enumerate() {
                    if bits & (1 << i) != 0 {
                        if wred.is_some() {
                            slot.0 = wred.clone();
                        }
                        if sched.is_some() {
                            slot.1 = sched.clone();
                        }
                    }
                }
            }
        }
        out
    }

    /// A port's lossless and lossy WRED profile from its queues.
    fn port_wred(&mut self, p: &PortIn, q: &QueueRefs, builtin_equal: bool, cfg: &mut Config) {
        let lossless = crate::parse_pfc_enable(&cfg.ports[p.index].pfc_enable).unwrap_or(0);
        let our = |n: &Option<String>| -> Option<String> {
            n.as_ref().map(|n| {
                if n == AZURE_LOSSLESS && !builtin_equal {
                    RENAMED_AZURE_LOSSLESS.to_string()
                } else {
                    n.clone()
                }
            })
        };
        let at = format!("QUEUE|{}", p.sonic);
        let pick = |im: &mut Self, want_lossless: bool| -> Option<Option<String>> {
            let mut chosen: Option<Option<String>> = None;
            for (i, (w, _)) in q.iter().enumerate() {
                if (lossless & (1 << i) != 0) != want_lossless {
                    continue;
                }
                match &chosen {
                    None => chosen = Some(our(w)),
                    Some(c) if *c != our(w) => {
                        let kind = if want_lossless { "lossless" } else { "lossy" };
                        im.unsupported(&at, "wred_profile", format!("queue {i}: one WRED profile for the {kind} queues of a port here: {c:?}"));
                    }
                    _ => {}
                }
            }
            chosen
        };
        let ll = pick(self, true);
        let ly = pick(self, false);
        let port = &mut cfg.ports[p.index];
        port.lossy_wred_profile = ly.flatten();
        port.wred_profile = match ll {
            None => None,
            Some(Some(n)) if n == AZURE_LOSSLESS => None,
            Some(Some(n)) => Some(n),
            Some(None) => {
                cfg.wred_profile
                    .entry(NO_WRED.into())
                    .or_insert(WredSection {
                        ecn: "ecn_none".into(),
                        green_min_threshold: i64::from(u32::MAX),
                        green_max_threshold: i64::from(u32::MAX),
                        green_drop_probability: 0,
                        wred_green_enable: false,
                    });
                self.source(
                    &format!("wred_profile.{NO_WRED}"),
                    "QUEUE (lossless queues naming no wred_profile: no WRED, no ECN)".into(),
                );
                Some(NO_WRED.into())
            }
        };
    }

    /// SCHEDULER of queues 0-7 as the DCBX ETS declaration (`[dcbx]`,
    /// off): not scheduled here, so each scheduler is reported.
    fn ets(&mut self, port: &str, scheds: &[Option<String>]) -> Option<DcbxSection> {
        if let Some(q) = scheds.iter().position(Option::is_none) {
            self.unsupported(
                &format!("QUEUE|{port}|{q}"),
                "scheduler",
                "no scheduler: the ETS declaration needs all 8 queues, none is written",
            );
            return None;
        }
        let mut tsa = Vec::new();
        let mut weight = Vec::new();
        for name in scheds.iter().flatten() {
            let f = self.db.get("SCHEDULER", name).cloned().unwrap_or_default();
            let at = format!("SCHEDULER|{name}");
            self.source("dcbx", at.clone());
            let strict = match f.get("type").map(String::as_str) {
                Some("STRICT") => true,
                Some("DWRR" | "WRR") => false,
                other => {
                    self.error(
                        format!("{at}.type"),
                        format!("expected STRICT, DWRR or WRR, got {other:?}"),
                    );
                    false
                }
            };
            let w = if strict {
                0
            } else {
                f.get("weight")
                    .and_then(|v| int_field(self, &at, "weight", v, 0, 100))
                    .unwrap_or(0)
            };
            tsa.push(if strict {
                "strict".to_string()
            } else {
                "ets".to_string()
            });
            weight.push(w);
        }
        let bw = percentages(&weight);
        if bw != weight {
            self.note(
                &format!("QUEUE|{port}"),
                "scheduler",
                format!("ETS weights {weight:?} scaled to percentages {bw:?}"),
            );
        }
        Some(DcbxSection {
            enable: false,
            tx_interval_s: 30,
            tx_hold: 4,
            fast_tx_count: 4,
            willing: false,
            roce_priority: None,
            app_dscp: "lossless".into(),
            ets_bandwidth: bw,
            ets_tsa: tsa,
            reco_bandwidth: None,
            reco_tsa: None,
        })
    }

    /// PFC_WD: one watchdog on every lossless queue here.
    pub(super) fn pfcwd(&mut self, ports: &[PortIn], cfg: &mut Config) {
        self.handled.insert("PFC_WD");
        let keys: Vec<String> = self.db.table("PFC_WD").map(|(k, _)| k.clone()).collect();
        for k in keys {
            if k != "GLOBAL" && self.db.get("PORT", &k).is_none() {
                self.error(
                    format!("PFC_WD|{k}"),
                    format!("unknown port {k:?}: PORT has no such key"),
                );
            }
        }
        let mut wd: Option<(String, PfcwdSection)> = None;
        let mut poll = 200;
        if let Some(g) = self.db.get("PFC_WD", "GLOBAL").cloned() {
            if let Some(v) = g.get("POLL_INTERVAL") {
                poll =
                    int_field(self, "PFC_WD|GLOBAL", "POLL_INTERVAL", v, 1, 60_000).unwrap_or(200);
            }
            if g.get("BIG_RED_SWITCH").is_some_and(|v| v == "enable") {
                self.unsupported(
                    "PFC_WD|GLOBAL",
                    "BIG_RED_SWITCH",
                    "the big red switch (drop on every lossless queue at once) is not done here",
                );
            }
            self.rest(
                "PFC_WD",
                "GLOBAL",
                &["POLL_INTERVAL", "BIG_RED_SWITCH"],
                "watchdog attribute this data plane does not have",
            );
        }
        for p in ports {
            let Some(f) = self.db.get("PFC_WD", &p.sonic).cloned() else {
                continue;
            };
            let at = format!("PFC_WD|{}", p.sonic);
            let ms = |im: &mut Self, field: &str| {
                f.get(field)
                    .and_then(|v| int_field(im, &at, field, v, 1, 60_000))
                    .unwrap_or(200)
            };
            let s = PfcwdSection {
                detection_time_ms: ms(self, "detection_time"),
                restoration_time_ms: ms(self, "restoration_time"),
                poll_interval_ms: poll,
                action: f.get("action").cloned().unwrap_or_else(|| "drop".into()),
            };
            if !matches!(s.action.as_str(), "drop" | "forward" | "alert") {
                self.error(
                    format!("{at}.action"),
                    format!("expected drop, forward or alert, got {:?}", s.action),
                );
            }
            self.rest(
                "PFC_WD",
                &p.sonic,
                &["detection_time", "restoration_time", "action"],
                "watchdog attribute this data plane does not have",
            );
            self.source("pfcwd", at.clone());
            match &wd {
                None => wd = Some((p.sonic.clone(), s)),
                Some((first, w)) if *w != s => self.unsupported(
                    &at,
                    "",
                    format!("one watchdog setting for all ports here: PFC_WD|{first}'s"),
                ),
                _ => {}
            }
        }
        let Some((_, w)) = wd else { return };
        if cfg.buffer.is_none() {
            self.unsupported("PFC_WD", "", "the watchdog watches the buffer model's queues and there is none (no BUFFER_POOL / BUFFER_PG): not imported");
            return;
        }
        for p in ports {
            let lossless = crate::parse_pfc_enable(&cfg.ports[p.index].pfc_enable).unwrap_or(0);
            let at = format!(
                "PORT_QOS_MAP|{}",
                p.qos_key.clone().unwrap_or(p.sonic.clone())
            );
            if lossless != 0 && self.db.get("PFC_WD", &p.sonic).is_none() {
                self.unsupported(
                    &format!("PFC_WD|{}", p.sonic),
                    "",
                    "no entry, but the watchdog watches every lossless queue of every port here",
                );
            }
            if let Some(sw) = &p.pfcwd_sw_enable {
                if !crate::parse_pfc_enable(sw).is_ok_and(|b| b == lossless) {
                    self.unsupported(&at, "pfcwd_sw_enable", format!("{sw:?}: the watchdog watches exactly the lossless priorities (pfc_enable) here"));
                }
            }
        }
        cfg.pfcwd = Some(w);
    }

    /// SWITCH_TRIMMING|GLOBAL to `[switch_trimming]`.
    pub(super) fn trimming(&mut self, cfg: &mut Config) {
        self.handled.insert("SWITCH_TRIMMING");
        let keys: Vec<String> = self
            .db
            .table("SWITCH_TRIMMING")
            .map(|(k, _)| k.clone())
            .collect();
        for k in keys {
            let at = format!("SWITCH_TRIMMING|{k}");
            if k != "GLOBAL" {
                self.error(at, "expected the key GLOBAL");
                continue;
            }
            let f = self
                .db
                .get("SWITCH_TRIMMING", &k)
                .cloned()
                .unwrap_or_default();
            let value = |v: &String, word: &str| -> toml::Value {
                match v.trim().parse::<i64>() {
                    Ok(n) => toml::Value::Integer(n),
                    Err(_) if v == word => toml::Value::String(v.clone()),
                    Err(_) => toml::Value::String(v.clone()),
                }
            };
            let Some(dscp) = f.get("dscp_value") else {
                self.error(
                    format!("{at}.dscp_value"),
                    "expected a DSCP 0-63 or \"from-tc\"",
                );
                continue;
            };
            let Some(queue) = f.get("queue_index") else {
                self.error(
                    format!("{at}.queue_index"),
                    "expected a queue 0-7 or \"dynamic\"",
                );
                continue;
            };
            let size = match f.get("size") {
                Some(v) => int_field(self, &at, "size", v, 0, 65535).unwrap_or(128),
                None => 128,
            };
            self.rest(
                "SWITCH_TRIMMING",
                &k,
                &["size", "dscp_value", "tc_value", "queue_index"],
                "trimming attribute this data plane does not have",
            );
            self.source("switch_trimming", at);
            cfg.switch_trimming = Some(SwitchTrimmingSection {
                size,
                dscp_value: value(dscp, "from-tc"),
                tc_value: f.get("tc_value").map(|v| value(v, "")),
                queue_index: value(queue, "dynamic"),
            });
        }
    }
}

/// The built-in AZURE_LOSSLESS as a section.
fn azure_lossless() -> WredSection {
    WredSection {
        ecn: "ecn_all".into(),
        green_min_threshold: 1_048_576,
        green_max_threshold: 2_097_152,
        green_drop_probability: 5,
        wred_green_enable: true,
    }
}

/// ETS weights as percentages summing to 100 (largest remainder); kept
/// as they are when they already sum to 100 or are all 0.
pub fn percentages(w: &[i64]) -> Vec<i64> {
    let sum: i64 = w.iter().sum();
    if sum == 100 || sum == 0 {
        return w.to_vec();
    }
    let mut out: Vec<i64> = w.iter().map(|&x| x * 100 / sum).collect();
    let mut rem: Vec<(i64, usize)> = w
        .iter()
        .enumerate()
        .map(|(i, &x)| (-(x * 100 % sum), i))
        .collect();
    rem.sort();
    let short = 100 - out.iter().sum::<i64>();
    for &(_, i) in rem.iter().take(short as usize) {
        out[i] += 1;
    }
    out
}

/// A WRED field of the yellow or red colour.
fn coloured(field: &str) -> bool {
    field.starts_with("yellow_")
        || field.starts_with("red_")
        || field == "wred_yellow_enable"
        || field == "wred_red_enable"
}
