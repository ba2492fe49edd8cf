//! Configurations generated from fuzzer bytes (`arbitrary`): always
//! well-formed TOML with every section, so the fuzzer's effort goes into
//! the checks behind the reader. `wild` keeps the raw values (any string,
//! any integer, dangling references); otherwise each value is mapped into
//! its valid range and every reference to an existing name, so most
//! configurations validate and reach the generators behind the plan.

use std::fmt::Write;

use arbitrary::Arbitrary;
use dataplane_common::lb::MODE_NAMES as MODES;

/// A number: small ones are common, any i64 possible.
#[derive(Arbitrary, Debug, Clone, Copy)]
pub enum Num {
    Small(u8),
    Any(i64),
}

impl Num {
    fn raw(self) -> i64 {
        match self {
            Num::Small(n) => i64::from(n),
            Num::Any(n) => n,
        }
    }
    /// In `lo..=hi` unless wild.
    fn to(self, wild: bool, lo: i64, hi: i64) -> i64 {
        if wild {
            return self.raw();
        }
        let span = (hi as i128 - lo as i128 + 1) as u128;
        (lo as i128 + (self.raw() as i128).rem_euclid(span as i128)) as i64
    }
}

/// A name: one of a few (so references meet), or any string.
#[derive(Arbitrary, Debug, Clone)]
pub enum Word {
    Pick(u8),
    Raw(String),
}

impl Word {
    /// `prefix{i}` for i < n (n > 0), or the raw string when wild.
    fn name(&self, wild: bool, prefix: &str, n: usize) -> String {
        match self {
            Word::Raw(s) if wild => s.clone(),
            Word::Raw(s) => format!("{prefix}{}", s.len() % n.max(1)),
            Word::Pick(i) => format!("{prefix}{}", usize::from(*i) % n.max(1)),
        }
    }
    /// One of `choices`, or the raw string when wild.
    fn of(&self, wild: bool, choices: &[&str]) -> String {
        match self {
            Word::Raw(s) if wild => s.clone(),
            Word::Raw(s) => choices[s.len() % choices.len()].into(),
            Word::Pick(i) => choices[usize::from(*i) % choices.len()].into(),
        }
    }
}

#[derive(Arbitrary, Debug)]
pub struct GenConfig {
    name: Word,
    cnp_tc: Num,
    malformed: Word,
    hash_seed: Option<Num>,
    dscp_maps: Vec<GenMap>,
    dot1p_maps: Vec<GenMap>,
    ports: Vec<GenPort>,
    nexthops: Vec<GenNextHop>,
    groups: Vec<GenGroup>,
    routes: Vec<GenRoute>,
    buffer: Option<GenBuffer>,
    wred: Vec<GenWred>,
    pfcwd: Option<GenWd>,
}

#[derive(Arbitrary, Debug)]
struct GenMap {
    default: Option<Num>,
    entries: Vec<(Num, Num)>,
}

#[derive(Arbitrary, Debug)]
struct GenPort {
    name: Word,
    trust: Word,
    dscp_map: Option<Word>,
    dot1p_map: Option<Word>,
    pfc_enable: PfcList,
    default_tc: Num,
    malformed: Option<Word>,
    xdp_mode: Word,
    mac: Option<[u8; 6]>,
    speed: Option<Speed>,
    wred: Option<Word>,
    lossy_wred: Option<Word>,
    cable: Option<Num>,
    headroom: Option<(Num, Option<Num>)>,
}

#[derive(Arbitrary, Debug)]
enum PfcList {
    Bits(u8),
    Raw(String),
}

#[derive(Arbitrary, Debug)]
enum Speed {
    Mbps(Num),
    Text(Num, bool),
    Raw(String),
}

#[derive(Arbitrary, Debug)]
struct GenNextHop {
    name: Word,
    port: Word,
    mac: [u8; 6],
}

#[derive(Arbitrary, Debug)]
struct GenGroup {
    name: Word,
    mode: Word,
    flowlet_us: Option<Num>,
    members: Vec<(Word, Option<Num>)>,
}

#[derive(Arbitrary, Debug)]
struct GenRoute {
    v6: bool,
    addr: [u8; 16],
    len: u8,
    target: GenTarget,
}

#[derive(Arbitrary, Debug)]
enum GenTarget {
    NextHop(Word),
    Group(Word),
    Local,
    Both(Word, Word),
}

#[derive(Arbitrary, Debug)]
struct GenBuffer {
    pool: Num,
    dynamic_th: Num,
    lossy_th: Num,
    reserve: Num,
    xon_offset: Num,
    mtu: Num,
    cable: Num,
    response_us: Num,
    tick_us: Num,
}

#[derive(Arbitrary, Debug)]
struct GenWred {
    ecn: Word,
    min: Num,
    max: Num,
    prob: Num,
    enable: bool,
}

#[derive(Arbitrary, Debug)]
struct GenWd {
    detection: Num,
    restoration: Num,
    poll: Num,
    action: Word,
}

/// A TOML string literal.
/// `v` as a TOML basic string. Written here rather than with the toml
/// crate's writer: toml_write 0.1.2 counts runs of quotes in a `u8`, and
/// a string of 256 quotes overflows it (a panic under the fuzz build's
/// overflow checks: `fuzz/regressions/config_struct/`).
fn s(v: &str) -> String {
    let mut o = String::with_capacity(v.len() + 2);
    o.push('"');
    for c in v.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => o.push_str(&format!("\\u{:04X}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn mac(m: [u8; 6], wild: bool) -> String {
    let mut m = m;
    if !wild {
        m[0] = (m[0] & 0xfe) | 0x02;
    }
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

const ECN: [&str; 5] = ["ecn_none", "ecn_green", "ecn_yellow", "ecn_red", "ecn_all"];

impl GenConfig {
    /// The configuration as TOML text.
    pub fn render(&self, wild: bool) -> String {
        let mut t = String::new();
        let w = wild;
        let n_ports = if w {
            self.ports.len()
        } else {
            self.ports.len().clamp(1, 16)
        };
        let n_nh = self.nexthops.len();
        // in range: groups need a member, the watchdog the buffer model
        let n_groups = if w || n_nh > 0 { self.groups.len() } else { 0 };
        writeln!(t, "[switch]\nname = {}", s(&self.name.name(w, "sw", 4))).unwrap();
        writeln!(t, "cnp_tc = {}", self.cnp_tc.to(w, 0, 7)).unwrap();
        writeln!(
            t,
            "malformed = {}",
            s(&self.malformed.of(w, &["pass", "drop"]))
        )
        .unwrap();
        if let Some(h) = self.hash_seed {
            writeln!(t, "hash_seed = {}", h.to(w, 0, u32::MAX.into())).unwrap();
        }
        for (kind, maps, n) in [
            ("dscp", &self.dscp_maps, 64),
            ("dot1p", &self.dot1p_maps, 8),
        ] {
            for (i, m) in maps.iter().enumerate().take(4) {
                writeln!(t, "\n[{kind}_to_tc_map.M{i}]").unwrap();
                if let Some(d) = m.default {
                    writeln!(t, "default = {}", d.to(w, 0, 7)).unwrap();
                }
                let mut seen = std::collections::BTreeSet::new();
                for (k, v) in &m.entries {
                    let k = k.to(w, 0, n - 1);
                    if seen.insert(k) {
                        writeln!(t, "{} = {}", s(&k.to_string()), v.to(w, 0, 7)).unwrap();
                    }
                }
            }
        }
        let map_names = |kind: usize| -> Vec<String> {
            let n = [&self.dscp_maps, &self.dot1p_maps][kind].len().min(4);
            let mut v: Vec<String> = (0..n).map(|i| format!("M{i}")).collect();
            v.push("AZURE".into());
            v
        };
        let (dscp_names, dot1p_names) = (map_names(0), map_names(1));
        let wred_names: Vec<String> = (0..self.wred.len().min(4))
            .map(|i| format!("W{i}"))
            .chain(["AZURE_LOSSLESS".to_string()])
            .collect();
        let pool = self
            .buffer
            .as_ref()
            .map(|b| b.pool.to(w, 1 << 24, u32::MAX.into()));
        if !w && self.ports.is_empty() {
            writeln!(t, "\n[[port]]\nname = \"eth0\"").unwrap();
        }
        for (i, p) in self
            .ports
            .iter()
            .enumerate()
            .take(if w { usize::MAX } else { n_ports })
        {
            let name = if w {
                p.name.name(w, "eth", 8)
            } else {
                format!("eth{i}")
            };
            writeln!(t, "\n[[port]]\nname = {}", s(&name)).unwrap();
            writeln!(t, "trust = {}", s(&p.trust.of(w, &["dscp", "dot1p"]))).unwrap();
            let pick = |o: &Option<Word>, names: &[String]| {
                o.as_ref().map(|x| {
                    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
                    x.of(w, &refs)
                })
            };
            if let Some(m) = pick(&p.dscp_map, &dscp_names) {
                writeln!(t, "dscp_to_tc_map = {}", s(&m)).unwrap();
            }
            if let Some(m) = pick(&p.dot1p_map, &dot1p_names) {
                writeln!(t, "dot1p_to_tc_map = {}", s(&m)).unwrap();
            }
            let pfc = match &p.pfc_enable {
                PfcList::Raw(r) if w => r.clone(),
                PfcList::Raw(r) => pfc_list(r.len() as u8),
                PfcList::Bits(b) => pfc_list(*b),
            };
            writeln!(t, "pfc_enable = {}", s(&pfc)).unwrap();
            writeln!(t, "default_tc = {}", p.default_tc.to(w, 0, 7)).unwrap();
            if let Some(m) = &p.malformed {
                writeln!(t, "malformed = {}", s(&m.of(w, &["pass", "drop"]))).unwrap();
            }
            writeln!(
                t,
                "xdp_mode = {}",
                s(&p.xdp_mode.of(w, &["auto", "native", "generic"]))
            )
            .unwrap();
            if let Some(m) = p.mac {
                writeln!(t, "mac = {}", s(&mac(m, w))).unwrap();
            }
            match &p.speed {
                None => {}
                Some(Speed::Mbps(n)) => writeln!(t, "speed = {}", n.to(w, 1, 1_600_000)).unwrap(),
                Some(Speed::Text(n, g)) => {
                    let v = n.to(w, 1, if *g { 1600 } else { 1_600_000 });
                    writeln!(
                        t,
                        "speed = {}",
                        s(&format!("{v}{}", if *g { "G" } else { "M" }))
                    )
                    .unwrap()
                }
                Some(Speed::Raw(r)) if w => writeln!(t, "speed = {}", s(r)).unwrap(),
                Some(Speed::Raw(_)) => writeln!(t, "speed = \"100G\"").unwrap(),
            }
            if let Some(m) = pick(&p.wred, &wred_names) {
                writeln!(t, "wred_profile = {}", s(&m)).unwrap();
            }
            if let Some(m) = pick(&p.lossy_wred, &wred_names) {
                writeln!(t, "lossy_wred_profile = {}", s(&m)).unwrap();
            }
            if let Some(c) = p.cable {
                writeln!(t, "cable_length_m = {}", c.to(w, 0, 1000)).unwrap();
            }
            if let Some((x, xon)) = &p.headroom {
                let xoff = x.to(w, 20_000, 1 << 22);
                writeln!(t, "headroom_xoff = {xoff}").unwrap();
                match xon {
                    Some(n) => writeln!(t, "headroom_xon = {}", n.to(w, 0, xoff.max(0))).unwrap(),
                    None if !w => writeln!(t, "headroom_xon = {}", xoff / 2).unwrap(),
                    None => {}
                }
            }
        }
        for (i, n) in self.nexthops.iter().enumerate() {
            let name = if w {
                n.name.name(w, "nh", 8)
            } else {
                format!("nh{i}")
            };
            writeln!(t, "\n[[nexthop]]\nname = {}", s(&name)).unwrap();
            writeln!(t, "port = {}", s(&n.port.name(w, "eth", n_ports))).unwrap();
            writeln!(t, "mac = {}", s(&mac(n.mac, w))).unwrap();
        }
        for (i, g) in self.groups.iter().enumerate().take(n_groups) {
            let name = if w {
                g.name.name(w, "g", 8)
            } else {
                format!("g{i}")
            };
            writeln!(t, "\n[[group]]\nname = {}", s(&name)).unwrap();
            writeln!(t, "mode = {}", s(&g.mode.of(w, &MODES))).unwrap();
            if let Some(f) = g.flowlet_us {
                writeln!(t, "flowlet_timeout_us = {}", f.to(w, 1, 4_000_000)).unwrap();
            }
            let mut members = Vec::new();
            let mut seen = std::collections::BTreeSet::new();
            for (m, weight) in &g.members {
                let nh = m.name(w, "nh", n_nh);
                if !w && (n_nh == 0 || !seen.insert(nh.clone()) || seen.len() > 16) {
                    continue;
                }
                let weight = weight.map(|x| format!(", weight = {}", x.to(w, 1, 255)));
                members.push(format!(
                    "{{ nexthop = {}{} }}",
                    s(&nh),
                    weight.unwrap_or_default()
                ));
            }
            if !w && members.is_empty() {
                members.push("{ nexthop = \"nh0\" }".into());
            }
            writeln!(t, "members = [{}]", members.join(", ")).unwrap();
        }
        let mut prefixes = std::collections::BTreeSet::new();
        for r in &self.routes {
            let prefix = prefix(r, w);
            if !w && !prefixes.insert(prefix.clone()) {
                continue;
            }
            writeln!(t, "\n[[route]]\nprefix = {}", s(&prefix)).unwrap();
            let target = match &r.target {
                GenTarget::Both(a, b) if w => {
                    format!(
                        "nexthop = {}\ngroup = {}",
                        s(&a.name(w, "nh", n_nh)),
                        s(&b.name(w, "g", n_groups))
                    )
                }
                GenTarget::NextHop(a) | GenTarget::Both(a, _) if n_nh > 0 || w => {
                    format!("nexthop = {}", s(&a.name(w, "nh", n_nh)))
                }
                GenTarget::Group(g) if n_groups > 0 || w => {
                    format!("group = {}", s(&g.name(w, "g", n_groups)))
                }
                _ => "local = true".into(),
            };
            writeln!(t, "{target}").unwrap();
        }
        if let Some(b) = &self.buffer {
            writeln!(t, "\n[buffer]\npool_size = {}", pool.unwrap()).unwrap();
            writeln!(t, "dynamic_th = {}", b.dynamic_th.to(w, -8, 7)).unwrap();
            writeln!(t, "lossy_dynamic_th = {}", b.lossy_th.to(w, -8, 7)).unwrap();
            writeln!(t, "reserve = {}", b.reserve.to(w, 0, 1 << 20)).unwrap();
            writeln!(t, "xon_offset = {}", b.xon_offset.to(w, 0, 1 << 20)).unwrap();
            writeln!(t, "mtu = {}", b.mtu.to(w, 64, 65535)).unwrap();
            writeln!(t, "cable_length_m = {}", b.cable.to(w, 0, 1000)).unwrap();
            writeln!(t, "response_us = {}", b.response_us.to(w, 0, 1000)).unwrap();
            writeln!(t, "tick_us = {}", b.tick_us.to(w, 10, 1_000_000)).unwrap();
        }
        for (i, p) in self
            .wred
            .iter()
            .enumerate()
            .take(if w { usize::MAX } else { 4 })
        {
            writeln!(t, "\n[wred_profile.W{i}]\necn = {}", s(&p.ecn.of(w, &ECN))).unwrap();
            let min = p.min.to(w, 0, u32::MAX.into());
            writeln!(t, "green_min_threshold = {min}").unwrap();
            writeln!(
                t,
                "green_max_threshold = {}",
                p.max.to(w, min, u32::MAX.into())
            )
            .unwrap();
            writeln!(t, "green_drop_probability = {}", p.prob.to(w, 0, 100)).unwrap();
            writeln!(t, "wred_green_enable = {}", p.enable).unwrap();
        }
        if let Some(wd) = self.pfcwd.as_ref().filter(|_| w || self.buffer.is_some()) {
            let det = wd.detection.to(w, 1, 60_000);
            writeln!(t, "\n[pfcwd]\ndetection_time_ms = {det}").unwrap();
            writeln!(
                t,
                "restoration_time_ms = {}",
                wd.restoration.to(w, 1, 60_000)
            )
            .unwrap();
            writeln!(t, "poll_interval_ms = {}", wd.poll.to(w, 1, det.max(1))).unwrap();
            writeln!(
                t,
                "action = {}",
                s(&wd.action.of(w, &["drop", "forward", "alert"]))
            )
            .unwrap();
        }
        t
    }
}

/// "3,4" from a bit mask.
fn pfc_list(bits: u8) -> String {
    (0..8)
        .filter(|i| bits & (1 << i) != 0)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

/// A prefix; without host bits unless wild.
fn prefix(r: &GenRoute, wild: bool) -> String {
    if r.v6 {
        let len = if wild { r.len } else { r.len % 129 };
        let mut a = u128::from_be_bytes(r.addr);
        if !wild {
            a &= if len == 0 {
                0
            } else {
                u128::MAX << (128 - u32::from(len))
            };
        }
        format!("{}/{len}", std::net::Ipv6Addr::from(a))
    } else {
        let len = if wild { r.len } else { r.len % 33 };
        let mut a = u32::from_be_bytes(r.addr[..4].try_into().unwrap());
        if !wild {
            a &= if len == 0 {
                0
            } else {
                u32::MAX << (32 - u32::from(len))
            };
        }
        format!("{}/{len}", std::net::Ipv4Addr::from(a))
    }
}
