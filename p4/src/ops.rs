//! Table operations: the entries, clone sessions and queue settings a plan
//! asks of a target, in order, before any output format.

use std::net::IpAddr;

use dataplane_common::lb::{uses_port_load, uses_reservations, Group, NBUCKETS};
use dataplane_common::lossless::{refresh_interval_ns, PFC_QUANTA};
use dataplane_common::maps::{MALFORMED_DROP, PORT_F_FORWARD, TRUST_DOT1P, UET_FEEDBACK_TC_SET};
use dataplane_common::trim::QUEUE_DYNAMIC;
use dataplane_config::{Plan, Target as RouteTarget};

use crate::refusals::refusals;
use crate::schema::{action, table, ActionSpec, MatchKind, TableSpec};
use crate::target::{Options, Refusal, RefusedFeature, Target};

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
const MAX_QDEPTH: u128 = (1 << 19) - 1;

/// Next hop / port of a member slot of a built group.
fn member(plan: &Plan, g: &Group, slot: u8) -> (u16, usize) {
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
fn band_shift(speed_mbps: u32) -> u32 {
    31 - speed_mbps.max(1).leading_zeros()
}

/// bmv2 place mode's wire shift of a port: `bytes >> shift` microseconds
/// approximates `lb::wire_ns(bytes, speed) / 1000` = bytes x 8 /
/// speed_mbps, without a division: log2 of the speed in bytes per
/// microsecond (speed_mbps / 8), rounded to the nearest integer (within a
/// factor sqrt(2): 100G 14, i.e. 12500 B/us read as 16384). `None`: the
/// speed is unknown (0), the port books the most (as `wire_ns`).
pub fn wire_shift(speed_mbps: u32) -> Option<u32> {
    let bytes_per_us = u64::from(speed_mbps) / 8;
    if bytes_per_us == 0 {
        return None;
    }
    let s = 63 - bytes_per_us.leading_zeros();
    // round: up when bytes_per_us >= 2^s x sqrt(2), i.e. its square >= 2^(2s+1)
    Some(if u128::from(bytes_per_us).pow(2) >= 1u128 << (2 * s + 1) {
        s + 1
    } else {
        s
    })
}

/// The 1-based id of map `m` in `maps`, added at the end if new (maps are
/// deduplicated in first-use order).
fn map_id<T: PartialEq>(maps: &mut Vec<T>, m: T) -> usize {
    match maps.iter().position(|x| *x == m) {
        Some(i) => i + 1,
        None => {
            maps.push(m);
            maps.len()
        }
    }
}

/// For each bucket, the first bucket after it (circularly) whose next hop
/// differs, if any: one pass backwards, twice round (the second fixes what
/// the first could not see past the end), instead of a scan per bucket.
fn next_different(members: &[(u16, usize)]) -> Vec<Option<usize>> {
    let n = members.len();
    let mut alt = vec![None; n];
    for i in (0..(2 * n).saturating_sub(1)).rev() {
        let (b, next) = (i % n, (i + 1) % n);
        alt[b] = if members[next].0 != members[b].0 {
            Some(next)
        } else {
            alt[next]
        };
    }
    alt
}

fn int(n: impl Into<u128>) -> Val {
    Val::Int(n.into())
}

fn exact(n: impl Into<u128>) -> KeyVal {
    KeyVal::Exact(int(n))
}

fn port(i: usize) -> KeyVal {
    KeyVal::Exact(Val::Port(i))
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
    let mut o = Ops {
        plan,
        target,
        ops: Vec::new(),
    };
    o.switch();
    o.ports();
    if target == Target::Bmv2 {
        o.uet();
    }
    o.routes();
    let (load_tables, place) = o.groups()?;
    o.nexthops();
    if target == Target::Bmv2 && place {
        o.place_ports();
    }
    if target == Target::Tofino && load_tables {
        o.idle_loads();
    }
    if target == Target::Bmv2 && (plan.forwarding() || plan.buffer.is_some()) {
        o.egress_ports();
    }
    if plan.buffer.is_some() {
        if target == Target::Bmv2 {
            o.priority_groups();
        }
        o.wred(opts);
        if target == Target::Bmv2 {
            o.bmv2_queues(opts);
        }
    }
    if target == Target::Bmv2 {
        o.trim();
    }
    Ok(o.ops)
}

/// The ops of one plan on one target, added in order.
struct Ops<'p> {
    plan: &'p Plan,
    target: Target,
    ops: Vec<Op>,
}

impl Ops<'_> {
    fn add(&mut self, table_name: &str, keys: Vec<KeyVal>, act: &str, args: Vec<Val>) {
        let t = table(self.target, table_name);
        let priority = t
            .keys
            .iter()
            .any(|k| k.kind == MatchKind::Range)
            .then_some(1);
        self.ops.push(Op::Entry(Entry {
            table: t,
            keys,
            action: action(self.target, act),
            args,
            is_default: false,
            priority,
        }));
    }

    /// switch_cfg's default entry: hash seed (and, bmv2, the pool size).
    fn switch(&mut self) {
        let plan = self.plan;
        let pool = plan.buffer.as_ref().map(|b| b.pool_size).unwrap_or(0);
        let mut args = vec![int(plan.hash_seed)];
        if self.target == Target::Bmv2 {
            args.push(int(pool));
        }
        self.ops.push(Op::Entry(Entry {
            table: table(self.target, "switch_cfg"),
            keys: vec![],
            action: action(self.target, "set_switch"),
            args,
            is_default: true,
            priority: None,
        }));
    }

    /// bmv2 uet_cfg's default entry: `[uet] feedback_tc` (the same on
    /// every port); none when it is not set.
    fn uet(&mut self) {
        let fb = self
            .plan
            .ports
            .iter()
            .map(|p| p.config.uet_feedback_tc)
            .max();
        let Some(fb) = fb.filter(|&f| f & UET_FEEDBACK_TC_SET != 0) else {
            return;
        };
        self.ops.push(Op::Entry(Entry {
            table: table(self.target, "uet_cfg"),
            keys: vec![],
            action: action(self.target, "set_uet"),
            args: vec![int(1u8), int(fb & 7)],
            is_default: true,
            priority: None,
        }));
    }

    /// port_cfg, the classification maps it names (dscp_to_tc, pcp_to_tc)
    /// and tc_cfg.
    fn ports(&mut self) {
        let plan = self.plan;
        let mut dscp_maps: Vec<[u8; 64]> = Vec::new();
        let mut pcp_maps: Vec<[u8; 8]> = Vec::new();
        for (i, p) in plan.ports.iter().enumerate() {
            let c = &p.config;
            let d = map_id(&mut dscp_maps, c.dscp_to_tc);
            let q = map_id(&mut pcp_maps, c.pcp_to_tc);
            self.add(
                "port_cfg",
                vec![port(i)],
                "set_port",
                vec![
                    int(d as u128),
                    int(q as u128),
                    int(c.trust == TRUST_DOT1P),
                    int(c.default_tc),
                    int(c.cnp_tc),
                    int(c.malformed_action == MALFORMED_DROP),
                    int(c.flags & PORT_F_FORWARD != 0),
                    Val::Mac(p.mac.unwrap_or([0; 6])),
                ],
            );
        }
        self.class_maps("dscp_to_tc", dscp_maps.iter().map(|m| &m[..]));
        self.class_maps("pcp_to_tc", pcp_maps.iter().map(|m| &m[..]));
        for i in 0..plan.ports.len() {
            let pfc_enable = plan.ports[i].config.pfc_enable;
            for tc in 0..8u8 {
                // TC_TO_QUEUE_MAP is identity (as in the eBPF data plane)
                self.add(
                    "tc_cfg",
                    vec![port(i), exact(tc)],
                    "set_tc_cfg",
                    vec![int(pfc_enable & (1 << tc) != 0), int(tc)],
                );
            }
        }
    }

    /// A classification map table: (map id, code point) -> class.
    fn class_maps<'m>(&mut self, table_name: &str, maps: impl Iterator<Item = &'m [u8]>) {
        for (m, map) in maps.enumerate() {
            for (code, &tc) in map.iter().enumerate() {
                self.add(
                    table_name,
                    vec![exact(m as u128 + 1), exact(code as u128)],
                    "set_tc",
                    vec![int(tc)],
                );
            }
        }
    }

    /// ipv4_lpm / ipv6_lpm, in configuration order.
    fn routes(&mut self) {
        for r in &self.plan.routes {
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
                RouteTarget::NextHop(id) => ("route_nexthop", vec![int(id)]),
                RouteTarget::Group(id) => ("route_group", vec![int(id)]),
                RouteTarget::Local => ("route_local", vec![]),
            };
            self.add(table, vec![key], act, args);
        }
    }

    /// group_cfg and group_bucket: the eBPF data plane's resilient table,
    /// every member live. Whether a group needs the load tables (Tofino),
    /// and whether one books placements (place mode: bmv2's place_cfg).
    fn groups(&mut self) -> Result<(bool, bool), RefusedFeature> {
        let (plan, target) = (self.plan, self.target);
        let mut load_tables = false;
        let mut place = false;
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
            load_tables |= uses_port_load(g.mode);
            place |= uses_reservations(g.mode);
            self.add(
                "group_cfg",
                vec![exact(gi as u128)],
                "set_group",
                vec![int(g.mode), int(timeout)],
            );
            if g.uet_entropy {
                self.add(
                    "group_uet",
                    vec![exact(gi as u128)],
                    "set_group_uet",
                    vec![],
                );
            }
            self.buckets(gi, &built);
        }
        Ok((load_tables, place))
    }

    /// bmv2 place_cfg: each port's wire shift (`wire_shift`); a port of
    /// unknown speed has no entry and books the most.
    fn place_ports(&mut self) {
        for (i, p) in self.plan.ports.iter().enumerate() {
            if let Some(s) = wire_shift(p.config.speed_mbps) {
                self.add("place_cfg", vec![port(i)], "set_place", vec![int(s)]);
            }
        }
    }

    /// group_bucket of one built group: each bucket's member and a second
    /// candidate, the member of the next bucket that differs.
    fn buckets(&mut self, gi: usize, built: &Group) {
        let plan = self.plan;
        let members: Vec<(u16, usize)> = (0..NBUCKETS)
            .map(|b| member(plan, built, built.buckets[b]))
            .collect();
        let alt = next_different(&members);
        for (b, &(nh, port)) in members.iter().enumerate() {
            let (alt_nh, alt_port) = alt[b].map_or((nh, port), |j| members[j]);
            self.add(
                "group_bucket",
                vec![exact(gi as u128), exact(b as u128)],
                "set_bucket",
                vec![int(nh), Val::Port(port), int(alt_nh), Val::Port(alt_port)],
            );
        }
    }

    /// nexthop: destination MAC, the port's MAC as source, the port.
    fn nexthops(&mut self) {
        let plan = self.plan;
        for (ni, n) in plan.nexthops.iter().enumerate() {
            let smac = plan.ports[n.port].mac.unwrap_or([0; 6]);
            self.add(
                "nexthop",
                vec![exact(ni as u128)],
                "set_nexthop",
                vec![Val::Mac(n.mac), Val::Mac(smac), Val::Port(n.port)],
            );
        }
    }

    /// Tofino load_a / load_b: idle until the control plane's poll_loads()
    /// writes real bands.
    fn idle_loads(&mut self) {
        for i in 0..self.plan.ports.len() {
            self.add("load_a", vec![port(i)], "set_load_a", vec![int(0u8)]);
            self.add("load_b", vec![port(i)], "set_load_b", vec![int(0u8)]);
        }
    }

    /// bmv2 egress_port_cfg: the port's MAC and its band shift.
    fn egress_ports(&mut self) {
        let plan = self.plan;
        for (i, p) in plan.ports.iter().enumerate() {
            self.add(
                "egress_port_cfg",
                vec![port(i)],
                "set_egress_port",
                vec![
                    Val::Mac(p.mac.unwrap_or([0; 6])),
                    int(band_shift(p.config.speed_mbps)),
                ],
            );
        }
    }

    /// bmv2 pg_cfg: the emulated priority groups (reserve, headroom,
    /// XON offset, dynamic threshold, PFC refresh).
    fn priority_groups(&mut self) {
        let Some(b) = &self.plan.buffer else { return };
        for (i, pb) in b.ports.iter().enumerate() {
            for tc in 0..8u8 {
                let prof = &pb.pg_profile[usize::from(tc)];
                let th = i32::from(prof.dynamic_th);
                let refresh_us = refresh_interval_ns(PFC_QUANTA, pb.speed_mbps).div_ceil(1000);
                let xoff = if prof.lossless != 0 { prof.xoff } else { 0 };
                self.add(
                    "pg_cfg",
                    vec![port(i), exact(tc)],
                    "set_pg",
                    vec![
                        int(prof.lossless != 0),
                        int(prof.size),
                        int(xoff),
                        int(prof.xon_offset),
                        int(th.max(0) as u128),
                        int((-th).max(0) as u128),
                        int(refresh_us.min(u64::from(u32::MAX))),
                    ],
                );
            }
        }
    }

    /// wred: the RED curve of each class that marks or drops, over queue
    /// depths in the target's unit (bmv2 packets, Tofino cells).
    fn wred(&mut self, opts: &Options) {
        let Some(b) = &self.plan.buffer else { return };
        let unit = u128::from(match self.target {
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
                    self.add(
                        "wred",
                        vec![port(i), exact(tc), KeyVal::Range(lo, hi)],
                        "wred_hit",
                        vec![
                            int(prob),
                            int(always),
                            int(w.marks()),
                            int(w.wred_green_enable != 0),
                        ],
                    );
                }
            }
        }
    }

    /// bmv2 trim_cfg (each egress port whose queues trim) and, for a
    /// dynamic trim queue, trim_dyn_queue: the class each ingress DSCP map
    /// gives each port's trim DSCP (`trim::trim_queue`).
    fn trim(&mut self) {
        let plan = self.plan;
        let Some(t) = &plan.trim else { return };
        let dynamic = t.config.queue == QUEUE_DYNAMIC;
        let mut trim_dscps: Vec<u8> = Vec::new();
        for (i, &queues) in t.queues.iter().enumerate() {
            if queues == 0 {
                continue;
            }
            let dscp = t.dscp[i];
            if !trim_dscps.contains(&dscp) {
                trim_dscps.push(dscp);
            }
            self.add(
                "trim_cfg",
                vec![port(i)],
                "set_trim",
                vec![
                    int(t.config.size),
                    int(dscp),
                    int(if dynamic { 0 } else { t.config.queue & 7 }),
                    int(dynamic),
                    int(queues),
                ],
            );
        }
        if !dynamic {
            return;
        }
        // the map ids of `ports` (first-use order)
        let mut dscp_maps: Vec<[u8; 64]> = Vec::new();
        for p in &plan.ports {
            map_id(&mut dscp_maps, p.config.dscp_to_tc);
        }
        for (m, map) in dscp_maps.iter().enumerate() {
            for &d in &trim_dscps {
                self.add(
                    "trim_dyn_queue",
                    vec![exact(m as u128 + 1), exact(d)],
                    "set_trim_queue",
                    vec![int(map[usize::from(d & 63)] & 7)],
                );
            }
        }
    }

    /// bmv2 per port: the PFC clone session, the egress queue's rate and
    /// depth.
    fn bmv2_queues(&mut self, opts: &Options) {
        let Some(b) = &self.plan.buffer else { return };
        let pkt = u64::from(opts.bmv2_packet_bytes.max(1));
        for (i, pb) in b.ports.iter().enumerate() {
            self.ops.push(Op::CloneSession {
                session: i as u32 + 1,
                port: i,
            });
            self.ops.push(Op::QueueRate {
                port: i,
                pps: (u64::from(pb.speed_mbps) * 1_000_000 / (8 * pkt)).max(1),
            });
            self.ops.push(Op::QueueDepth {
                port: i,
                packets: (u64::from(b.pool_size) / pkt).max(1),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use dataplane_common::rand::SplitMix64;

    /// The scan it replaces: for each bucket, the buckets after it in turn.
    fn scan(m: &[(u16, usize)]) -> Vec<Option<usize>> {
        (0..m.len())
            .map(|b| {
                (1..m.len())
                    .map(|d| (b + d) % m.len())
                    .find(|&j| m[j].0 != m[b].0)
            })
            .collect()
    }

    #[test]
    fn wire_shift_is_log2_of_bytes_per_us_rounded() {
        use super::wire_shift;
        use dataplane_common::lb::wire_ns;
        assert_eq!(wire_shift(0), None);
        for (speed, s) in [
            (10_000, 10),
            (25_000, 12),
            (40_000, 12),
            (50_000, 13),
            (100_000, 14),
            (200_000, 15),
            (400_000, 16),
        ] {
            assert_eq!(wire_shift(speed), Some(s), "{speed} Mb/s");
            // within a factor sqrt(2) of the exact wire time
            let bytes = 1u32 << 20;
            let exact = wire_ns(bytes, speed) as f64 / 1000.0;
            let approx = f64::from(bytes >> s);
            assert!(
                approx / exact < 1.42 && exact / approx < 1.42,
                "{speed}: {approx} us vs {exact} us"
            );
        }
    }

    #[test]
    fn next_different_is_the_first_different_bucket_after_each() {
        let mut r = SplitMix64(9);
        for case in 0..500 {
            let n = 1 + case % 40;
            let kinds = 1 + (r.next_u64() % 4) as u16;
            let m: Vec<(u16, usize)> = (0..n)
                .map(|_| {
                    let nh = (r.next_u64() % u64::from(kinds)) as u16;
                    (nh, usize::from(nh) * 3)
                })
                .collect();
            assert_eq!(super::next_different(&m), scan(&m), "{m:?}");
        }
        assert!(super::next_different(&[]).is_empty());
    }
}
