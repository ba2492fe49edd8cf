//! BUFFER_POOL, BUFFER_PROFILE, BUFFER_PG, BUFFER_QUEUE, CABLE_LENGTH and
//! DEFAULT_LOSSLESS_BUFFER_PARAMETER to `[buffer]`, each port's headroom
//! and `buffer_queue`, and `[buffer_profile.*]`.
//!
//! Our model has one ingress pool, one set of thresholds for lossless PGs
//! and one for lossy PGs, and a headroom per port: SONiC's profiles are
//! read into those, and every value that would need more (a second
//! ingress pool, per-port thresholds, static thresholds, egress
//! accounting, the shared headroom pool) is reported. A lossless
//! profile's `size` is read as SONiC's two vendor conventions write it:
//! `size = xon + xoff` (Mellanox: the PG's buffer is its headroom, no
//! reserve) or else `size` = the PG's reserve and `xoff` its headroom
//! (Broadcom). The dynamic buffer model is refused where it would have
//! SONiC compute a value (see [`DYNAMIC_REFUSAL`]).

use std::collections::BTreeMap;

use super::import_ports::PortIn;
use super::refs::resolve;
use super::{int_field, Importer};
use crate::{BufferProfileSection, BufferSection, Config};

/// Why the dynamic buffer model's computed values are not imported.
pub const DYNAMIC_REFUSAL: &str = "\"dynamic\" is refused where the file leaves a value to SONiC: its buffermgrd (sonic-swss cfgmgr/buffermgrdyn.cpp) computes headroom and pool sizes with the vendor's buffer_headroom_<vendor>.lua and buffer_pool_<vendor>.lua from ASIC_TABLE and PERIPHERAL_TABLE values (cell size, pipeline latency, MAC/PHY delay, peer response time) that live in STATE_DB, not in config_db.json, so it cannot be computed here as SONiC would; give the profiles the switch programs (APPL_DB BUFFER_PROFILE_TABLE, `mmuconfig -l`) as BUFFER_PROFILE entries with size, xon and xoff, and a size for each BUFFER_POOL";

/// A BUFFER_PROFILE's values.
#[derive(Debug, Clone, Default, PartialEq)]
struct Prof {
    pool: Option<String>,
    size: i64,
    xon: i64,
    xoff: Option<i64>,
    xon_offset: i64,
    dynamic_th: Option<i64>,
    static_th: bool,
}

/// The first lossless / lossy profile seen, for the switch-wide values.
#[derive(Default)]
struct Firsts {
    lossless: Option<(String, Prof)>,
    lossy: Option<(String, Prof)>,
}

impl Importer<'_> {
    /// The buffer tables; without BUFFER_POOL and BUFFER_PG there is no
    /// `[buffer]` (no buffer model).
    pub(super) fn buffers(&mut self, ports: &[PortIn], cfg: &mut Config) {
        for t in [
            "BUFFER_POOL",
            "BUFFER_PROFILE",
            "BUFFER_PG",
            "BUFFER_QUEUE",
            "CABLE_LENGTH",
            "DEFAULT_LOSSLESS_BUFFER_PARAMETER",
        ] {
            self.handled.insert(t);
        }
        self.buffer_queues(ports, cfg);
        self.unused_profiles();
        let dynamic = self
            .db
            .get("DEVICE_METADATA", "localhost")
            .and_then(|m| m.get("buffer_model"))
            .is_some_and(|m| m == "dynamic");
        self.default_lossless(dynamic);
        let has_pg = self.db.table("BUFFER_PG").next().is_some();
        let has_pool = self.db.table("BUFFER_POOL").next().is_some();
        if !has_pg && !has_pool {
            return;
        }
        let pgs = self.pg_entries(ports);
        let mut firsts = Firsts::default();
        for p in ports {
            let entries = pgs.get(&p.sonic).cloned().unwrap_or_default();
            self.port_pgs(p, &entries, dynamic, &mut firsts, cfg);
        }
        let mut b = BufferSection {
            pool_size: 16 * 1024 * 1024,
            dynamic_th: 0,
            lossy_dynamic_th: 3,
            reserve: 0,
            xon_offset: 0,
            mtu: 9100,
            cable_length_m: 5,
            response_us: None,
            pfc_tx: "auto".into(),
            tick_us: 200,
        };
        self.switch_values(&firsts, dynamic, &mut b);
        if dynamic
            && !self
                .errors
                .iter()
                .any(|e| e.field == "DEVICE_METADATA|localhost.buffer_model")
        {
            self.note("DEVICE_METADATA|localhost", "buffer_model", "dynamic, but every lossless PG names a profile and every pool a size: imported as given (as SONiC programs them)");
        }
        self.mtu(ports, &mut b);
        self.cable_lengths(ports, cfg);
        cfg.buffer = Some(b);
    }

    /// An error for a value the dynamic model would compute, and once the
    /// reason it is not computed here.
    fn dynamic_refusal(&mut self, field: String, what: &str) {
        let at = "DEVICE_METADATA|localhost.buffer_model";
        if !self.errors.iter().any(|e| e.field == at) {
            self.error(at, DYNAMIC_REFUSAL);
        }
        self.error(field, what);
    }

    /// BUFFER_PROFILE entries no PG, queue or port list names: SONiC
    /// programs them to nothing either, so a note each.
    fn unused_profiles(&mut self) {
        let mut used = std::collections::BTreeSet::new();
        for t in [
            "BUFFER_PG",
            "BUFFER_QUEUE",
            "BUFFER_PORT_INGRESS_PROFILE_LIST",
            "BUFFER_PORT_EGRESS_PROFILE_LIST",
        ] {
            for (_, f) in self.db.table(t) {
                for v in f.get("profile").into_iter().chain(f.get("profile_list")) {
                    for part in v.split(',') {
                        let part = part.trim();
                        let key = part
                            .strip_prefix("[BUFFER_PROFILE|")
                            .and_then(|x| x.strip_suffix(']'))
                            .unwrap_or(part);
                        used.insert(key.to_string());
                    }
                }
            }
        }
        let unused: Vec<String> = self
            .db
            .table("BUFFER_PROFILE")
            .map(|(k, _)| k.clone())
            .filter(|k| !used.contains(k))
            .collect();
        for k in unused {
            self.note(
                &format!("BUFFER_PROFILE|{k}"),
                "",
                "no PG or queue uses it: nothing to import",
            );
        }
    }

    /// A profile's values (errors name BUFFER_PROFILE|name.field).
    fn prof(&mut self, name: &str) -> Prof {
        let f = self
            .db
            .get("BUFFER_PROFILE", name)
            .cloned()
            .unwrap_or_default();
        let at = format!("BUFFER_PROFILE|{name}");
        // static_th is reported where it would be the threshold
        self.rest(
            "BUFFER_PROFILE",
            name,
            &[
                "pool",
                "size",
                "xon",
                "xoff",
                "xon_offset",
                "dynamic_th",
                "static_th",
            ],
            "PG profile attribute this data plane does not have",
        );
        let num = |im: &mut Self, field: &str, lo: i64, hi: i64| {
            f.get(field)
                .and_then(|v| int_field(im, &at, field, v, lo, hi))
        };
        let bytes = i64::from(u32::MAX);
        let pool = f.get("pool").and_then(|v| {
            match resolve(self.db, "BUFFER_POOL", v, &format!("{at}.pool")) {
                Ok(k) => Some(k),
                Err(e) => {
                    self.errors.push(e);
                    None
                }
            }
        });
        Prof {
            pool,
            size: num(self, "size", 0, bytes).unwrap_or(0),
            xon: num(self, "xon", 0, bytes).unwrap_or(0),
            xoff: num(self, "xoff", 0, bytes),
            xon_offset: num(self, "xon_offset", 0, 1 << 30).unwrap_or(0),
            dynamic_th: num(self, "dynamic_th", -8, 7),
            static_th: f.contains_key("static_th"),
        }
    }

    /// BUFFER_PG by SONiC port: (PG bits, key, profile field).
    fn pg_entries(
        &mut self,
        ports: &[PortIn],
    ) -> BTreeMap<String, Vec<(u8, String, Option<String>)>> {
        let mut out: BTreeMap<String, Vec<(u8, String, Option<String>)>> = BTreeMap::new();
        let entries: Vec<(String, Option<String>)> = self
            .db
            .table("BUFFER_PG")
            .map(|(k, f)| (k.clone(), f.get("profile").cloned()))
            .collect();
        for (key, profile) in entries {
            let at = format!("BUFFER_PG|{key}");
            let Some((names, _, bits)) =
                self.port_range_key("BUFFER_PG", &key, ("PGS", "priority groups", "3-4"))
            else {
                continue;
            };
            self.rest(
                "BUFFER_PG",
                &key,
                &["profile"],
                "PG attribute this data plane does not have",
            );
            for n in names {
                if self.db.get("PORT", &n).is_none() {
                    self.error(
                        at.clone(),
                        format!("unknown port {n:?}: PORT has no such key"),
                    );
                } else if ports.iter().any(|p| p.sonic == n) {
                    out.entry(n)
                        .or_default()
                        .push((bits, key.clone(), profile.clone()));
                }
            }
        }
        out
    }

    /// One port's PGs: its headroom from the lossless profile, and the
    /// first lossless / lossy profile for the switch-wide values. In the
    /// static model the lossless PGs get the profile SONiC's buffermgrd
    /// puts there (see [`Importer::generated_profile`]).
    fn port_pgs(
        &mut self,
        p: &PortIn,
        entries: &[(u8, String, Option<String>)],
        dynamic: bool,
        firsts: &mut Firsts,
        cfg: &mut Config,
    ) {
        let lossless = crate::parse_pfc_enable(&cfg.ports[p.index].pfc_enable).unwrap_or(0);
        let section = format!("port.{}", cfg.ports[p.index].name);
        let generated = if dynamic {
            None
        } else {
            self.generated_profile(&p.sonic)
        };
        let exists = |im: &Self, n: &str| im.db.get("BUFFER_PROFILE", n).is_some();
        let mut covered = 0u8;
        let mut headroom: Option<(i64, i64, String)> = None;
        for (bits, key, profile) in entries {
            let at = format!("BUFFER_PG|{key}");
            self.source(&section, at.clone());
            let named = match profile.as_deref() {
                Some("NULL") | None if dynamic => {
                    if bits & lossless != 0 {
                        covered |= bits & lossless;
                        self.dynamic_refusal(format!("{at}.profile"), "no profile (NULL) for lossless PGs: SONiC's dynamic buffer model would compute it");
                    }
                    continue;
                }
                None => {
                    self.error(
                        format!("{at}.profile"),
                        "expected a BUFFER_PROFILE reference",
                    );
                    continue;
                }
                Some(v) => match resolve(self.db, "BUFFER_PROFILE", v, &format!("{at}.profile")) {
                    Ok(k) => k,
                    Err(e) => {
                        self.errors.push(e);
                        continue;
                    }
                },
            };
            if bits & lossless == 0 {
                let prof = self.prof(&named);
                self.source("buffer", format!("BUFFER_PROFILE|{named}"));
                if prof.xoff.is_some() {
                    self.unsupported(&at, "profile", format!("{named} gives headroom to priorities without PFC: lossy PGs have none here"));
                }
                self.keep_first(false, &named, prof, firsts);
                continue;
            }
            covered |= bits & lossless;
            if bits & !lossless != 0 {
                self.unsupported(&at, "", format!("PGs {bits:#04x} mix lossless (pfc_enable) and lossy priorities: the lossy ones get the lossy thresholds here"));
            }
            let name = match &generated {
                Some(g) if *g != named && exists(self, g) => {
                    self.note(&at, "profile", format!("SONiC's buffermgrd (cfgmgr/buffermgr.cpp) puts {g} on the lossless PGs instead of {named}: imported as it programs them"));
                    g.clone()
                }
                Some(g) if *g != named => {
                    self.unsupported(&at, "profile", format!("SONiC's buffermgrd (cfgmgr/buffermgr.cpp) would replace {named} by {g} made from the platform's pg_profile_lookup.ini, which config_db.json does not carry: {named} is imported"));
                    named
                }
                _ => named,
            };
            self.lossless_pg(&at, &name, &mut headroom, firsts);
        }
        let missing = lossless & !covered;
        let ranges = super::bits_ranges(missing).join(",");
        match &generated {
            _ if missing == 0 => {}
            _ if dynamic => {
                let msg = format!("no BUFFER_PG for lossless PGs {ranges}: SONiC's dynamic buffer model would add and compute them");
                self.dynamic_refusal(format!("BUFFER_PG|{}", p.sonic), &msg);
            }
            Some(g) if exists(self, g) => {
                let at = format!("BUFFER_PG|{}|{ranges}", p.sonic);
                self.note(&at, "", format!("not in the file: SONiC's buffermgrd (cfgmgr/buffermgr.cpp) creates it with {g}, as imported"));
                self.lossless_pg(&at, &g.clone(), &mut headroom, firsts);
            }
            _ => self.unsupported(
                &format!("BUFFER_PG|{}", p.sonic),
                "",
                format!("no BUFFER_PG for lossless PGs {ranges}: SONiC's buffermgrd makes them from the platform's pg_profile_lookup.ini (not in config_db.json), and not at all without a speed and a cable length other than 0m; the headroom is computed here by SONiC's Mellanox formula with this data plane's response time"),
            ),
        }
        if let Some((xoff, xon, _)) = headroom {
            let port = &mut cfg.ports[p.index];
            port.headroom_xoff = Some(xoff);
            port.headroom_xon = Some(xon);
        }
    }

    /// The profile SONiC's static buffermgrd puts on a port's lossless
    /// PGs: `pg_lossless_<PORT speed>_<CABLE_LENGTH>_profile`, when the
    /// port has both and the cable is not "0m" (cfgmgr/buffermgr.cpp,
    /// doSpeedUpdateTask); it reuses a BUFFER_PROFILE of that name.
    fn generated_profile(&self, sonic: &str) -> Option<String> {
        let speed = self.db.get("PORT", sonic)?.get("speed")?;
        let cable = self
            .db
            .table("CABLE_LENGTH")
            .find_map(|(_, f)| f.get(sonic))?;
        (cable != "0m").then(|| format!("pg_lossless_{speed}_{cable}_profile"))
    }

    /// A lossless PG's profile: the port's headroom (one per port) and
    /// the switch-wide lossless values.
    fn lossless_pg(
        &mut self,
        at: &str,
        name: &str,
        headroom: &mut Option<(i64, i64, String)>,
        firsts: &mut Firsts,
    ) {
        let prof = self.prof(name);
        self.source("buffer", format!("BUFFER_PROFILE|{name}"));
        let Some(xoff) = prof.xoff else {
            self.unsupported(
                at,
                "profile",
                format!(
                    "{name} has no xoff for a lossless priority: the headroom is computed here"
                ),
            );
            return;
        };
        match headroom {
            None => *headroom = Some((xoff, prof.xon, name.to_string())),
            Some((x, n, first)) if (*x, *n) != (xoff, prof.xon) => {
                let msg = format!("one headroom per port here: xoff {x} xon {n} from BUFFER_PROFILE|{first}, not xoff {xoff} xon {}", prof.xon);
                self.unsupported(at, "profile", msg);
            }
            _ => {}
        }
        self.keep_first(true, name, prof, firsts);
    }

    /// Keeps the first lossless (lossy) profile; a later one whose
    /// switch-wide values differ is reported.
    fn keep_first(&mut self, lossless: bool, name: &str, prof: Prof, firsts: &mut Firsts) {
        let slot = if lossless {
            &mut firsts.lossless
        } else {
            &mut firsts.lossy
        };
        let Some((first, fp)) = slot else {
            *slot = Some((name.to_string(), prof));
            return;
        };
        let fp = fp.clone();
        let first = first.clone();
        let at = format!("BUFFER_PROFILE|{name}");
        let same_reserve = reserve_of(&prof) == reserve_of(&fp);
        for (field, differs) in [
            ("pool", prof.pool != fp.pool),
            ("dynamic_th", prof.dynamic_th != fp.dynamic_th),
            ("xon_offset", prof.xon_offset != fp.xon_offset),
            ("size", !same_reserve),
        ] {
            if differs {
                let kind = if lossless { "lossless" } else { "lossy" };
                self.unsupported(
                    &at,
                    field,
                    format!("one {field} for all {kind} PGs here: BUFFER_PROFILE|{first}'s"),
                );
            }
        }
    }

    /// `[buffer]` from the first lossless and lossy profiles and the pool
    /// they use.
    fn switch_values(&mut self, firsts: &Firsts, dynamic: bool, b: &mut BufferSection) {
        if let Some((name, p)) = &firsts.lossless {
            let at = format!("BUFFER_PROFILE|{name}");
            b.reserve = reserve_of(p);
            b.xon_offset = p.xon_offset;
            match (p.dynamic_th, p.static_th) {
                (Some(t), _) => b.dynamic_th = t,
                (None, true) => self.unsupported(&at, "static_th", "static thresholds: the model's lossless threshold is dynamic (dynamic_th 0 here)"),
                (None, false) => self.error(format!("{at}.dynamic_th"), "expected dynamic_th (-8..7) for a lossless profile"),
            }
        }
        if let Some((name, p)) = &firsts.lossy {
            let at = format!("BUFFER_PROFILE|{name}");
            if firsts.lossless.is_none() {
                // no lossless PG: the lossy profile's size is the reserve
                b.reserve = p.size;
            }
            match (p.dynamic_th, p.static_th) {
                (Some(t), _) => b.lossy_dynamic_th = t,
                (None, true) => self.unsupported(
                    &at,
                    "static_th",
                    "static thresholds: the model's lossy threshold is dynamic (dynamic_th 3 here)",
                ),
                (None, false) => {}
            }
            if p.size != b.reserve {
                self.unsupported(
                    &at,
                    "size",
                    format!(
                        "one reserve for every PG here: {} (from the lossless profile)",
                        b.reserve
                    ),
                );
            }
            if p.pool.is_some()
                && firsts
                    .lossless
                    .as_ref()
                    .is_some_and(|(_, l)| l.pool != p.pool)
            {
                self.unsupported(&at, "pool", "one ingress pool here: the lossless profile's");
            }
        }
        let pool = firsts
            .lossless
            .as_ref()
            .or(firsts.lossy.as_ref())
            .and_then(|(_, p)| p.pool.clone())
            .or_else(|| {
                self.db
                    .get("BUFFER_POOL", "ingress_lossless_pool")
                    .map(|_| "ingress_lossless_pool".to_string())
            });
        let pools: Vec<String> = self
            .db
            .table("BUFFER_POOL")
            .map(|(k, _)| k.clone())
            .collect();
        for k in pools {
            if Some(&k) == pool.as_ref() {
                self.pool(&k, dynamic, b);
            } else {
                self.rest("BUFFER_POOL", &k, &[], "pool not used by any imported ingress PG: this data plane admits at the ingress PG from one shared pool (no egress or second pool)");
            }
        }
    }

    /// The shared pool's size; a shared headroom pool (xoff) is reported.
    fn pool(&mut self, k: &str, dynamic: bool, b: &mut BufferSection) {
        let at = format!("BUFFER_POOL|{k}");
        self.source("buffer", at.clone());
        let f = self.db.get("BUFFER_POOL", k).cloned().unwrap_or_default();
        match f.get("size") {
            Some(s) => {
                if let Some(n) = int_field(self, &at, "size", s, 1, i64::from(u32::MAX)) {
                    b.pool_size = n;
                }
            }
            None if dynamic => self.dynamic_refusal(
                format!("{at}.size"),
                "no size: SONiC's dynamic buffer model would compute it",
            ),
            None => self.error(format!("{at}.size"), "expected the pool size in bytes"),
        }
        if f.get("type").is_some_and(|t| t != "ingress") {
            self.unsupported(&at, "type", "the model's shared pool is an ingress pool");
        }
        if f.get("mode").is_some_and(|m| m != "dynamic") {
            self.unsupported(
                &at,
                "mode",
                "the model's thresholds are dynamic (alpha = 2^dynamic_th)",
            );
        }
        if f.contains_key("xoff") {
            self.unsupported(
                &at,
                "xoff",
                "shared headroom pool: each lossless PG has its own headroom here",
            );
        }
        self.rest(
            "BUFFER_POOL",
            k,
            &["size", "type", "mode", "xoff"],
            "pool attribute this data plane does not have",
        );
    }

    /// `[buffer] mtu`: the largest MTU of the imported ports (one MTU for
    /// the headroom formula here).
    fn mtu(&mut self, ports: &[PortIn], b: &mut BufferSection) {
        let max = ports.iter().filter_map(|p| p.mtu).max();
        if let Some(m) = max {
            b.mtu = m;
            for p in ports.iter().filter(|p| p.mtu.is_some_and(|x| x != m)) {
                self.note(
                    &format!("PORT|{}", p.sonic),
                    "mtu",
                    format!("one MTU for the headroom formula here: {m}, the largest"),
                );
            }
        }
    }

    /// CABLE_LENGTH: each port's cable, in metres.
    fn cable_lengths(&mut self, ports: &[PortIn], cfg: &mut Config) {
        let tables: Vec<(String, BTreeMap<String, String>)> = self
            .db
            .table("CABLE_LENGTH")
            .map(|(k, f)| (k.clone(), f.clone()))
            .collect();
        for (key, fields) in tables {
            for (port, len) in fields {
                let at = format!("CABLE_LENGTH|{key}");
                let Some(p) = ports.iter().find(|p| p.sonic == port) else {
                    if self.db.get("PORT", &port).is_none() {
                        self.error(
                            format!("{at}.{port}"),
                            format!("unknown port {port:?}: PORT has no such key"),
                        );
                    }
                    continue;
                };
                match len
                    .trim()
                    .strip_suffix('m')
                    .and_then(|n| n.parse::<i64>().ok())
                    .filter(|n| (0..=100_000).contains(n))
                {
                    Some(m) => {
                        let name = cfg.ports[p.index].name.clone();
                        self.source(&format!("port.{name}"), at);
                        cfg.ports[p.index].cable_length_m = Some(m);
                    }
                    None => self.error(
                        format!("{at}.{port}"),
                        format!("expected a length like \"5m\" (0-100000 metres), got {len:?}"),
                    ),
                }
            }
        }
    }

    /// DEFAULT_LOSSLESS_BUFFER_PARAMETER: read by SONiC's dynamic model
    /// only; refused with it, a note without it.
    fn default_lossless(&mut self, dynamic: bool) {
        let keys: Vec<(String, Vec<String>)> = self
            .db
            .table("DEFAULT_LOSSLESS_BUFFER_PARAMETER")
            .map(|(k, f)| (k.clone(), f.keys().cloned().collect()))
            .collect();
        for (k, fields) in keys {
            let at = format!("DEFAULT_LOSSLESS_BUFFER_PARAMETER|{k}");
            for f in fields {
                if dynamic {
                    self.unsupported(
                        &at,
                        &f,
                        "parameter of SONiC's dynamic headroom computation, which is not done here",
                    );
                } else {
                    self.note(&at, &f, "read only by SONiC's dynamic buffer model; buffer_model is not dynamic, so SONiC ignores it too");
                }
            }
        }
    }

    /// BUFFER_QUEUE: each port's queues -> profile, and the profiles'
    /// packet_discard_action (egress thresholds are reported).
    fn buffer_queues(&mut self, ports: &[PortIn], cfg: &mut Config) {
        let entries: Vec<(String, Option<String>)> = self
            .db
            .table("BUFFER_QUEUE")
            .map(|(k, f)| (k.clone(), f.get("profile").cloned()))
            .collect();
        for (key, profile) in entries {
            let at = format!("BUFFER_QUEUE|{key}");
            let Some((names, range, _)) =
                self.port_range_key("BUFFER_QUEUE", &key, ("QUEUES", "queues", "0-2"))
            else {
                continue;
            };
            self.rest(
                "BUFFER_QUEUE",
                &key,
                &["profile"],
                "queue attribute this data plane does not have",
            );
            let Some(v) = profile else {
                self.error(
                    format!("{at}.profile"),
                    "expected a BUFFER_PROFILE reference",
                );
                continue;
            };
            let name = match resolve(self.db, "BUFFER_PROFILE", &v, &format!("{at}.profile")) {
                Ok(k) => k,
                Err(e) => {
                    self.errors.push(e);
                    continue;
                }
            };
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
                let port = &mut cfg.ports[p.index];
                self.sources
                    .entry(format!("port.{}", port.name))
                    .or_default()
                    .insert(at.clone());
                port.buffer_queue.insert(range.clone(), name.clone());
            }
            if !cfg.buffer_profile.contains_key(&name) {
                self.queue_profile(&name, cfg);
            }
        }
    }

    /// `[buffer_profile.NAME]` from a queue's profile.
    fn queue_profile(&mut self, name: &str, cfg: &mut Config) {
        let f = self
            .db
            .get("BUFFER_PROFILE", name)
            .cloned()
            .unwrap_or_default();
        let at = format!("BUFFER_PROFILE|{name}");
        let action = f
            .get("packet_discard_action")
            .cloned()
            .unwrap_or_else(|| "drop".into());
        if !matches!(action.as_str(), "drop" | "trim") {
            self.error(
                format!("{at}.packet_discard_action"),
                format!("expected \"drop\" or \"trim\", got {action:?}"),
            );
        }
        if let Some(p) = f.get("pool") {
            if let Err(e) = resolve(self.db, "BUFFER_POOL", p, &format!("{at}.pool")) {
                self.errors.push(e);
            }
        }
        self.rest("BUFFER_PROFILE", name, &["packet_discard_action"], "queue (egress) thresholds are not modelled: from a queue's profile only packet_discard_action is taken");
        self.source(&format!("buffer_profile.{name}"), at);
        cfg.buffer_profile.insert(
            name.to_string(),
            BufferProfileSection {
                packet_discard_action: action,
            },
        );
    }
}

/// A lossless profile's reserve under SONiC's two conventions: `size =
/// xon + xoff` is Mellanox's headroom-sized PG (reserve 0), otherwise
/// `size` is the reserve (Broadcom).
fn reserve_of(p: &Prof) -> i64 {
    match p.xoff {
        Some(x) if p.size == x + p.xon => 0,
        _ => p.size,
    }
}
