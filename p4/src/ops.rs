//! Table operations: the plan as the entries (and default actions, registers,
//! clone sessions) every renderer writes.

use dataplane_common::lb::{Group, MODE_BANDWIDTH, MODE_SPRAY, NBUCKETS};
use dataplane_common::lossless::{refresh_interval_ns, PFC_QUANTA};
use dataplane_common::maps::{MALFORMED_DROP, PORT_F_FORWARD, TRUST_DOT1P};
use dataplane_config::{Plan, Target as RouteTarget};
use std::net::IpAddr;

use crate::{schema::*, target::*};

/// A value of a key or action parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Val {
    Int(u128),
    /// A configuration port (index into `Plan::ports`); its number is the
    /// index on bmv2 and in P4Runtime, `DEV_PORT[name]` in the bfrt script.
    Port(usize),
    Mac([u8; 6]),
    V4([u8; 4]),
    V6([u8; 16]),
}

impl Val {
    /// The value as a number (ports: their index).
    pub fn number(&self) -> u128 {
        match self {
            Val::Int(n) => *n,
            Val::Port(i) => *i as u128,
            Val::Mac(m) => m.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b)),
            Val::V4(a) => a.iter().fold(0u128, |a, &b| (a << 8) | u128::from(b)),
            Val::V6(a) => u128::from_be_bytes(*a),
        }
    }

    /// Whether the value fits `width` bits.
    pub fn fits(&self, width: u32) -> bool {
        width >= 128 || self.number() >> width == 0
    }
}

/// A key field's match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyVal {
    Exact(Val),
    Lpm(Val, u32),
    Range(u128, u128),
}

/// A table entry, or the default entry of a table.
#[derive(Clone, Debug)]
pub struct Entry {
    pub table: &'static TableSpec,
    pub keys: Vec<KeyVal>,
    pub action: &'static ActionSpec,
    pub args: Vec<Val>,
    pub is_default: bool,
    /// Range tables: the entry's priority.
    pub priority: Option<u32>,
}

/// One thing to configure.
#[derive(Clone, Debug)]
pub enum Op {
    Entry(Entry),
    /// A clone session to a port (bmv2 PFC emulation: id = port + 1).
    CloneSession {
        session: u32,
        port: usize,
    },
    /// bmv2 egress queue rate of a port, packets/s (simple_switch_CLI only).
    QueueRate {
        port: usize,
        pps: u64,
    },
    /// bmv2 egress queue depth of a port, packets (simple_switch_CLI only).
    QueueDepth {
        port: usize,
        packets: u64,
    },
}

/// Deepest queue the `enq_qdepth` range key can name (bit<19>).
pub(crate) const MAX_QDEPTH: u128 = (1 << 19) - 1;

/// Tofino port speeds (bfrt `BF_SPEED_*`); 200G and 400G need Tofino 2.
pub(crate) const TOFINO_SPEEDS: [(u32, &str); 7] = [
    (10_000, "BF_SPEED_10G"),
    (25_000, "BF_SPEED_25G"),
    (40_000, "BF_SPEED_40G"),
    (50_000, "BF_SPEED_50G"),
    (100_000, "BF_SPEED_100G"),
    (200_000, "BF_SPEED_200G"),
    (400_000, "BF_SPEED_400G"),
];

/// Tofino's dynamic burst absorption factors: the share alpha / (1 + alpha)
/// of the free buffer one queue can reach with SONiC's dynamic_th
/// (alpha = 2^dynamic_th).
pub(crate) fn tofino_baf(dynamic_th: i8) -> Option<&'static str> {
    Some(match dynamic_th {
        -6 => "1.5%",
        -5 => "3%",
        -4 => "6%",
        -3 => "11%",
        -2 => "20%",
        -1 => "33%",
        0 => "50%",
        1 => "66%",
        2 => "80%",
        _ => return None,
    })
}

/// The factor of a lossy queue: exact for dynamic_th -6..2, else the
/// nearest (the eBPF default lossy_dynamic_th 3 asks for 89 %: 80 %), with
/// a note saying so.
pub(crate) fn lossy_baf(dynamic_th: i8) -> (&'static str, Option<String>) {
    match tofino_baf(dynamic_th) {
        Some(b) => (b, None),
        None => {
            let (b, th) = if dynamic_th > 2 {
                ("80%", 2)
            } else {
                ("1.5%", -6)
            };
            (b, Some(format!("lossy_dynamic_th {dynamic_th} has no Tofino factor: the nearest, {b} (dynamic_th {th})")))
        }
    }
}

/// Next hop / port of a member slot of a built group.
pub(crate) fn member(plan: &Plan, g: &Group, slot: u8) -> (u16, usize) {
    let nh = g.members[usize::from(slot) & (g.members.len() - 1)].id;
    (nh, plan.nexthops[usize::from(nh)].port)
}

/// Expands a WRED curve over queue depths in `unit`s into ranges: (low,
/// high, probability in 1/256, always).
pub fn red_ranges(min_u: u128, max_u: u128, pmax_pct: u8) -> Vec<(u128, u128, u8, bool)> {
    let mut out = Vec::new();
    let pmax = u128::from(pmax_pct.min(100));
    if min_u < max_u {
        let span = max_u - min_u;
        let steps = span.min(8);
        for s in 0..steps {
            let lo = min_u + span * s / steps;
            let hi = min_u + span * (s + 1) / steps - 1;
            if lo > MAX_QDEPTH {
                break;
            }
            // probability at the step's middle: pmax * (mid - min) / span
            let num = pmax * (lo + hi - 2 * min_u) * 256;
            let den = 100 * 2 * span;
            let prob = ((num + den / 2) / den).min(255) as u8;
            if prob > 0 {
                out.push((lo, hi.min(MAX_QDEPTH), prob, false));
            }
        }
    }
    if max_u <= MAX_QDEPTH {
        out.push((max_u, MAX_QDEPTH, 0, true));
    }
    out
}

/// floor(log2(speed)): a port at full speed keeps its halving rate
/// estimator near 2 x speed x 32 us, which this shift maps onto 8 bands.
pub(crate) fn band_shift(speed_mbps: u32) -> u32 {
    31 - speed_mbps.max(1).leading_zeros()
}

/// Everything to configure for `target`, in order: switch, ports,
/// classification, routing, groups, next hops, lossless stage.
pub fn table_ops(plan: &Plan, target: Target, opts: &Options) -> Result<Vec<Op>, RefusedFeature> {
    let r = refusals(plan, target);
    if !r.is_empty() {
        return Err(RefusedFeature {
            target,
            refusals: r,
        });
    }
    let mut ops = Vec::new();
    let mut add = |table_name: &str, keys: Vec<KeyVal>, act: &str, args: Vec<Val>| {
        let t = table(target, table_name);
        let priority = t.keys.iter().any(|k| k.kind == Range).then_some(1);
        ops.push(Op::Entry(Entry {
            table: t,
            keys,
            action: action(target, act),
            args,
            is_default: false,
            priority,
        }));
    };
    let pool = plan.buffer.as_ref().map(|b| b.pool_size).unwrap_or(0);
    let mut switch_args = vec![Val::Int(u128::from(plan.hash_seed))];
    if target == Target::Bmv2 {
        switch_args.push(Val::Int(u128::from(pool)));
    }
    let mut first = vec![Op::Entry(Entry {
        table: table(target, "switch_cfg"),
        keys: vec![],
        action: action(target, "set_switch"),
        args: switch_args,
        is_default: true,
        priority: None,
    })];

    // classification maps, deduplicated in first-use order
    let mut dscp_maps: Vec<[u8; 64]> = Vec::new();
    let mut pcp_maps: Vec<[u8; 8]> = Vec::new();
    let map_id = |maps: &mut Vec<_>, m| match maps.iter().position(|x| *x == m) {
        Some(i) => i + 1,
        None => {
            maps.push(m);
            maps.len()
        }
    };
    for (i, p) in plan.ports.iter().enumerate() {
        let c = &p.config;
        let d = map_id(&mut dscp_maps, c.dscp_to_tc);
        let q = map_id_pcp(&mut pcp_maps, c.pcp_to_tc);
        add(
            "port_cfg",
            vec![KeyVal::Exact(Val::Port(i))],
            "set_port",
            vec![
                Val::Int(d as u128),
                Val::Int(q as u128),
                Val::Int(u128::from(c.trust == TRUST_DOT1P)),
                Val::Int(u128::from(c.default_tc)),
                Val::Int(u128::from(c.cnp_tc)),
                Val::Int(u128::from(c.malformed_action == MALFORMED_DROP)),
                Val::Int(u128::from(c.flags & PORT_F_FORWARD != 0)),
                Val::Mac(p.mac.unwrap_or([0; 6])),
            ],
        );
    }
    for (m, map) in dscp_maps.iter().enumerate() {
        for (dscp, &tc) in map.iter().enumerate() {
            add(
                "dscp_to_tc",
                vec![
                    KeyVal::Exact(Val::Int(m as u128 + 1)),
                    KeyVal::Exact(Val::Int(dscp as u128)),
                ],
                "set_tc",
                vec![Val::Int(u128::from(tc))],
            );
        }
    }
    for (m, map) in pcp_maps.iter().enumerate() {
        for (pcp, &tc) in map.iter().enumerate() {
            add(
                "pcp_to_tc",
                vec![
                    KeyVal::Exact(Val::Int(m as u128 + 1)),
                    KeyVal::Exact(Val::Int(pcp as u128)),
                ],
                "set_tc",
                vec![Val::Int(u128::from(tc))],
            );
        }
    }
    for (i, p) in plan.ports.iter().enumerate() {
        for tc in 0..8u8 {
            // TC_TO_QUEUE_MAP is identity (as in the eBPF data plane)
            add(
                "tc_cfg",
                vec![
                    KeyVal::Exact(Val::Port(i)),
                    KeyVal::Exact(Val::Int(u128::from(tc))),
                ],
                "set_tc_cfg",
                vec![
                    Val::Int(u128::from(p.config.pfc_enable & (1 << tc) != 0)),
                    Val::Int(u128::from(tc)),
                ],
            );
        }
    }

    // routes, in configuration order
    for r in &plan.routes {
        let (table, key) = match r.addr {
            IpAddr::V4(a) => (
                "ipv4_lpm",
                KeyVal::Lpm(Val::V4(a.octets()), u32::from(r.len)),
            ),
            IpAddr::V6(a) => (
                "ipv6_lpm",
                KeyVal::Lpm(Val::V6(a.octets()), u32::from(r.len)),
            ),
        };
        let (act, args) = match r.target {
            RouteTarget::NextHop(id) => ("route_nexthop", vec![Val::Int(u128::from(id))]),
            RouteTarget::Group(id) => ("route_group", vec![Val::Int(u128::from(id))]),
            RouteTarget::Local => ("route_local", vec![]),
        };
        add(table, vec![key], act, args);
    }

    // groups: the eBPF data plane's resilient table, every member live
    let mut load_tables = false;
    for (gi, g) in plan.groups.iter().enumerate() {
        let built = dataplane_config::group_value(plan, g, &|_| true, None).map_err(|e| {
            RefusedFeature {
                target,
                refusals: vec![Refusal {
                    field: format!("group[{gi}] ({})", g.name),
                    reason: e.to_string(),
                }],
            }
        })?;
        let timeout = match target {
            // bmv2 timestamps are microseconds
            Target::Bmv2 => u128::from(g.flowlet_timeout_ns.div_ceil(1000)),
            Target::Tofino => u128::from(g.flowlet_timeout_ns),
        };
        load_tables |= g.mode == MODE_BANDWIDTH || g.mode == MODE_SPRAY;
        add(
            "group_cfg",
            vec![KeyVal::Exact(Val::Int(gi as u128))],
            "set_group",
            vec![Val::Int(u128::from(g.mode)), Val::Int(timeout)],
        );
        for b in 0..NBUCKETS {
            let (nh, port) = member(plan, &built, built.buckets[b]);
            // second candidate: the member of the next bucket that differs
            let (alt_nh, alt_port) = (1..NBUCKETS)
                .map(|d| member(plan, &built, built.buckets[(b + d) % NBUCKETS]))
                .find(|&(n, _)| n != nh)
                .unwrap_or((nh, port));
            add(
                "group_bucket",
                vec![
                    KeyVal::Exact(Val::Int(gi as u128)),
                    KeyVal::Exact(Val::Int(b as u128)),
                ],
                "set_bucket",
                vec![
                    Val::Int(u128::from(nh)),
                    Val::Port(port),
                    Val::Int(u128::from(alt_nh)),
                    Val::Port(alt_port),
                ],
            );
        }
    }
    for (ni, n) in plan.nexthops.iter().enumerate() {
        let smac = plan.ports[n.port].mac.unwrap_or([0; 6]);
        add(
            "nexthop",
            vec![KeyVal::Exact(Val::Int(ni as u128))],
            "set_nexthop",
            vec![Val::Mac(n.mac), Val::Mac(smac), Val::Port(n.port)],
        );
    }
    if target == Target::Tofino && load_tables {
        // idle until the control plane's poll_loads() writes real bands
        for (i, _) in plan.ports.iter().enumerate() {
            add(
                "load_a",
                vec![KeyVal::Exact(Val::Port(i))],
                "set_load_a",
                vec![Val::Int(0)],
            );
            add(
                "load_b",
                vec![KeyVal::Exact(Val::Port(i))],
                "set_load_b",
                vec![Val::Int(0)],
            );
        }
    }
    if target == Target::Bmv2 && (plan.forwarding() || plan.buffer.is_some()) {
        for (i, p) in plan.ports.iter().enumerate() {
            add(
                "egress_port_cfg",
                vec![KeyVal::Exact(Val::Port(i))],
                "set_egress_port",
                vec![
                    Val::Mac(p.mac.unwrap_or([0; 6])),
                    Val::Int(u128::from(band_shift(p.config.speed_mbps))),
                ],
            );
        }
    }

    // lossless stage
    if let Some(b) = &plan.buffer {
        if target == Target::Bmv2 {
            for (i, pb) in b.ports.iter().enumerate() {
                for tc in 0..8u8 {
                    let prof = &pb.pg_profile[usize::from(tc)];
                    let th = i32::from(prof.dynamic_th);
                    let refresh_us = refresh_interval_ns(PFC_QUANTA, pb.speed_mbps).div_ceil(1000);
                    add(
                        "pg_cfg",
                        vec![
                            KeyVal::Exact(Val::Port(i)),
                            KeyVal::Exact(Val::Int(u128::from(tc))),
                        ],
                        "set_pg",
                        vec![
                            Val::Int(u128::from(prof.lossless != 0)),
                            Val::Int(u128::from(prof.size)),
                            Val::Int(if prof.lossless != 0 {
                                u128::from(prof.xoff)
                            } else {
                                0
                            }),
                            Val::Int(u128::from(prof.xon_offset)),
                            Val::Int(th.max(0) as u128),
                            Val::Int((-th).max(0) as u128),
                            Val::Int(u128::from(refresh_us.min(u64::from(u32::MAX)))),
                        ],
                    );
                }
            }
        }
        let unit = u128::from(match target {
            Target::Bmv2 => opts.bmv2_packet_bytes.max(1),
            Target::Tofino => opts.tofino_cell_bytes.max(1),
        });
        for (i, pb) in b.ports.iter().enumerate() {
            for tc in 0..8u8 {
                let w = &pb.wred[usize::from(tc)];
                let acts = w.marks() || w.wred_green_enable != 0;
                if w.green_min_threshold == u32::MAX || !acts {
                    continue;
                }
                let min_u = u128::from(w.green_min_threshold).div_ceil(unit);
                let max_u = u128::from(w.green_max_threshold).div_ceil(unit);
                for (lo, hi, prob, always) in red_ranges(min_u, max_u, w.green_drop_probability) {
                    add(
                        "wred",
                        vec![
                            KeyVal::Exact(Val::Port(i)),
                            KeyVal::Exact(Val::Int(u128::from(tc))),
                            KeyVal::Range(lo, hi),
                        ],
                        "wred_hit",
                        vec![
                            Val::Int(u128::from(prob)),
                            Val::Int(u128::from(always)),
                            Val::Int(u128::from(w.marks())),
                            Val::Int(u128::from(w.wred_green_enable != 0)),
                        ],
                    );
                }
            }
        }
        if target == Target::Bmv2 {
            let pkt = u64::from(opts.bmv2_packet_bytes.max(1));
            for (i, pb) in b.ports.iter().enumerate() {
                ops.push(Op::CloneSession {
                    session: i as u32 + 1,
                    port: i,
                });
                ops.push(Op::QueueRate {
                    port: i,
                    pps: (u64::from(pb.speed_mbps) * 1_000_000 / (8 * pkt)).max(1),
                });
                ops.push(Op::QueueDepth {
                    port: i,
                    packets: (u64::from(b.pool_size) / pkt).max(1),
                });
            }
        }
    }
    first.append(&mut ops);
    Ok(first)
}

pub(crate) fn map_id_pcp(maps: &mut Vec<[u8; 8]>, m: [u8; 8]) -> usize {
    match maps.iter().position(|x| *x == m) {
        Some(i) => i + 1,
        None => {
            maps.push(m);
            maps.len()
        }
    }
}

/// What `target` cannot express in `plan`.
pub fn refusals(plan: &Plan, target: Target) -> Vec<Refusal> {
    let mut out = Vec::new();
    let mut refuse = |field: String, reason: String| out.push(Refusal { field, reason });
    if plan.pfcwd.is_some() {
        let why = match target {
            Target::Bmv2 => "bmv2 queues are never paused by a received PFC frame, so there is no storm to watch",
            Target::Tofino => "the watchdog is part of the switch OS on Tofino (SONiC pfcwd over SAI), not of this program's tables",
        };
        refuse(
            "pfcwd".into(),
            format!("the PFC watchdog is the eBPF controller's loop over its buffer model and has no {target} counterpart here ({why}); remove [pfcwd] to generate {target} entries"),
        );
    }
    if plan.forwarding() || plan.buffer.is_some() {
        for (i, p) in plan.ports.iter().enumerate() {
            if p.mac.is_none() {
                refuse(
                    format!("port[{i}] ({}).mac", p.name),
                    format!("{target} has no interface to read the MAC from: routed frames are matched against it and leave with it as source (and so do PFC frames); give it in the config"),
                );
            }
        }
    }
    let (cap4, cap6) = lpm_capacity(target);
    let v4 = plan.routes.iter().filter(|r| r.addr.is_ipv4()).count();
    let v6 = plan.routes.len() - v4;
    for (n, cap, fam) in [(v4, cap4, "IPv4"), (v6, cap6, "IPv6")] {
        if n > cap {
            refuse(
                "route".into(),
                format!("{n} {fam} routes, but the {target} program's LPM table holds {cap}"),
            );
        }
    }
    if target == Target::Tofino {
        for (i, p) in plan.ports.iter().enumerate() {
            let s = p.config.speed_mbps;
            if !TOFINO_SPEEDS.iter().any(|&(v, _)| v == s) {
                refuse(
                    format!("port[{i}] ({}).speed", p.name),
                    format!("a Tofino port runs at 10G, 25G, 40G, 50G, 100G, 200G or 400G, not {s} Mb/s"),
                );
            }
        }
        // Lossless PGs: the threshold decides when XOFF goes out, which the
        // headroom is sized for, so it must be exact. (Lossy queues take the
        // nearest factor, see `lossy_baf`.)
        if let Some(b) = &plan.buffer {
            let bad = b
                .ports
                .iter()
                .flat_map(|pb| pb.pg_profile.iter())
                .find(|p| p.lossless != 0 && tofino_baf(p.dynamic_th).is_none());
            if let Some(prof) = bad {
                refuse(
                    "buffer.dynamic_th".into(),
                    format!("Tofino's dynamic thresholds are the burst absorption factors 1.5%..80%, i.e. dynamic_th -6..2; {} has none", prof.dynamic_th),
                );
            }
        }
    }
    out
}
