//! The route sync: decoded kernel events in, data-plane writes out.
//! [`RouteSync`] keeps the mirror ([`Rib`]), the ids, and the record of what
//! it has loaded; [`RouteSync::sync`] writes the difference through a
//! [`Writer`] (the eBPF maps in the controller, a checking model in tests).
//!
//! A failed write stops the sync: what was written stays recorded (every
//! prefix of the op sequence is a consistent table, see `tables`), and the
//! next sync retries the rest.

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{anyhow, Result};
use dataplane_common::lb::{build_buckets, Group, Member, MAX_MEMBERS};
use dataplane_common::route::{NextHop, RouteEntry};

use super::kernel::{Event, Prefix, Unsupported};
use super::rib::{Changed, Rib};
use super::tables::{build, diff, record, GroupSpec, IdSpace, Ids, Op, PortInfo, Tables};
use super::want::{wanted, Managed, Policy, Source, Target, Wanted};

/// Where the sync writes (one entry per call, each replaced whole).
pub trait Writer {
    fn nexthop(&mut self, id: u16, v: Option<&NextHop>) -> Result<()>;
    fn group(&mut self, id: u16, v: Option<&Group>) -> Result<()>;
    fn route(&mut self, p: &Prefix, v: Option<&RouteEntry>) -> Result<()>;
}

/// Counters of the sync (`dataplane routes` shows them).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct SyncCounters {
    pub events: u64,
    pub malformed: u64,
    /// Routes handed to the kernel as unsupported (blackhole, encap, ...),
    /// currently.
    pub unsupported: u64,
    /// MPLS and other messages with nothing to write, since the start.
    pub unsupported_other: u64,
    /// Routes not written because a table is full, currently.
    pub over_limit: u64,
    /// Next hops whose neighbour is not resolved, currently.
    pub unresolved_nexthops: u64,
    pub writes: u64,
    pub write_errors: u64,
    pub syncs: u64,
}

/// What one sync did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SyncReport {
    pub nexthops: usize,
    pub groups: usize,
    pub routes: usize,
    pub removed: usize,
}

pub struct RouteSync {
    pub rib: Rib,
    managed: Managed,
    ports: Vec<PortInfo>,
    policy: Policy,
    ids: Ids,
    have: Tables,
    /// Group values as written (their buckets are kept across rewrites).
    values: BTreeMap<u16, Group>,
    port_up: Vec<bool>,
    wanted: Wanted,
    logged: HashSet<(Prefix, Unsupported)>,
    pub counters: SyncCounters,
    dirty: bool,
    /// The config's next hops and groups (learned ids start there).
    static_ids: (u16, u16),
    /// The last sync's (mapping and difference, writes) durations.
    pub timing: (std::time::Duration, std::time::Duration),
}

impl RouteSync {
    /// `ports[i]` is the plan's port `i`; `static_nexthops` / `static_groups`
    /// are the config's (learned ids come after them).
    pub fn new(
        ports: Vec<PortInfo>,
        policy: Policy,
        static_nexthops: u16,
        static_groups: u16,
        max_nexthops: u16,
        max_groups: u16,
    ) -> RouteSync {
        let managed = Managed {
            by_ifindex: ports
                .iter()
                .enumerate()
                .map(|(i, p)| (p.ifindex, i))
                .collect(),
        };
        let n = ports.len();
        RouteSync {
            rib: Rib::default(),
            managed,
            ports,
            policy,
            ids: Ids {
                nexthops: IdSpace::new(static_nexthops, max_nexthops),
                groups: IdSpace::new(static_groups, max_groups),
            },
            have: Tables::default(),
            values: BTreeMap::new(),
            port_up: vec![true; n],
            wanted: Wanted::default(),
            logged: HashSet::new(),
            counters: SyncCounters::default(),
            dirty: true,
            static_ids: (static_nexthops, static_groups),
            timing: Default::default(),
        }
    }

    /// Applies decoded events; returns whether the tables may change.
    pub fn handle(&mut self, events: &[Event]) -> bool {
        for e in events {
            self.counters.events += 1;
            if let Event::Malformed { msg_type, why } = e {
                if self.rib.malformed == 0 {
                    crate::log::warn(&format!(
                        "routing: malformed netlink message (type {msg_type}): {why} (counted; logged once)"
                    ));
                }
            }
            if self.rib.apply(e) != Changed::Nothing {
                self.dirty = true;
            }
        }
        self.counters.malformed = self.rib.malformed;
        self.counters.unsupported_other = self.rib.unsupported_other;
        self.dirty
    }

    /// The ports' link states (index = plan port): groups are rewritten
    /// with their members' live bits at the next sync (local repair).
    pub fn set_port_up(&mut self, up: &[bool]) {
        if up != self.port_up.as_slice() {
            self.port_up = up.to_vec();
            self.dirty = true;
        }
    }

    /// Local repair: rewrites, at once and alone, the written groups whose
    /// members' live bits differ from the ports' states (a port went down
    /// or up), keeping their buckets but the changed members' (only those
    /// flows move). Costs one write a changed group, whatever the size of
    /// the table: the full [`RouteSync::sync`] that follows recomputes
    /// every route and finds these groups as it wants them. Returns how
    /// many groups were rewritten.
    pub fn repair_links(&mut self, w: &mut dyn Writer) -> Result<usize> {
        let mut changed = Vec::new();
        for (id, spec) in &self.have.groups {
            let live: Vec<u8> = spec
                .members
                .iter()
                .map(|m| u8::from(self.port_up.get(m.2).copied().unwrap_or(false)))
                .collect();
            let written = self.values.get(id).map(|v| {
                v.members[..v.n_members as usize]
                    .iter()
                    .map(|m| m.live)
                    .collect::<Vec<_>>()
            });
            if written.as_ref() != Some(&live) {
                changed.push(Op::SetGroup(*id, spec.clone()));
            }
        }
        for op in &changed {
            if let Err(e) = self.write(w, op) {
                self.counters.write_errors += 1;
                return Err(e.context(format!("routing: local repair of {}", describe(op))));
            }
            self.counters.writes += 1;
        }
        Ok(changed.len())
    }

    /// Takes over the learned entries an earlier controller left in the
    /// maps (routes not in the config, next hops and groups above the
    /// config's ids): the first sync rewrites what differs and removes the
    /// rest.
    pub fn adopt(
        &mut self,
        routes: Vec<(Prefix, RouteEntry)>,
        nexthops: Vec<(u16, NextHop)>,
        groups: Vec<(u16, Group)>,
    ) {
        let (nh0, g0) = (self.static_ids.0, self.static_ids.1);
        for (p, e) in routes {
            if !self.policy.static_prefixes.contains(&p) {
                self.have.routes.insert(p, e);
            }
        }
        for (i, v) in nexthops.into_iter().filter(|x| x.0 >= nh0) {
            self.have.nexthops.insert(i, v);
        }
        for (i, v) in groups.into_iter().filter(|x| x.0 >= g0) {
            // unknown spec: rewritten (buckets kept where the members match)
            self.have.groups.insert(
                i,
                GroupSpec {
                    mode: u8::MAX,
                    flowlet_timeout_ns: 0,
                    members: Vec::new(),
                },
            );
            self.values.insert(i, v);
        }
        self.dirty = true;
    }

    pub fn dirty(&self) -> bool {
        self.dirty
    }

    /// Writes the difference between what the kernel asks for and what is
    /// loaded. On a write error it stops; the next sync retries.
    pub fn sync(&mut self, w: &mut dyn Writer) -> Result<SyncReport> {
        self.counters.syncs += 1;
        let t0 = std::time::Instant::now();
        let by_ifindex = self.managed.by_ifindex.clone();
        self.wanted = wanted(&self.rib, &self.managed, &self.policy);
        let want = build(
            &self.wanted,
            &self.rib,
            &mut self.ids,
            &self.ports,
            &by_ifindex,
            self.policy.routing.flowlet_timeout_ns,
        );
        self.log_unsupported();
        let mut ops = diff(&self.have, &want);
        // groups whose members' live bits changed (a port went down or up)
        for (id, spec) in &want.groups {
            let relive = self.have.groups.get(id) == Some(spec)
                && self.values.get(id).map(|v| {
                    v.members[..v.n_members as usize]
                        .iter()
                        .map(|m| m.live)
                        .collect::<Vec<_>>()
                }) != Some(
                    spec.members
                        .iter()
                        .map(|m| u8::from(self.port_up[m.2]))
                        .collect(),
                );
            if relive {
                ops.insert(0, Op::SetGroup(*id, spec.clone()));
            }
        }
        let t1 = std::time::Instant::now();
        self.timing.0 = t1 - t0;
        let mut rep = SyncReport::default();
        for op in &ops {
            if let Err(e) = self.write(w, op) {
                self.counters.write_errors += 1;
                return Err(e.context(format!("routing: writing {}", describe(op))));
            }
            self.counters.writes += 1;
            match op {
                Op::SetNexthop(..) => rep.nexthops += 1,
                Op::SetGroup(..) => rep.groups += 1,
                Op::SetRoute(..) => rep.routes += 1,
                _ => rep.removed += 1,
            }
            record(&mut self.have, op);
        }
        self.timing.1 = t1.elapsed();
        self.ids.nexthops.commit();
        self.ids.groups.commit();
        self.counters.unsupported = self.wanted.unsupported.len() as u64;
        self.counters.over_limit = self.wanted.over_limit.len() as u64;
        self.counters.unresolved_nexthops = self
            .have
            .nexthops
            .values()
            .filter(|n| n.valid == dataplane_common::route::NH_UNRESOLVED)
            .count() as u64;
        self.dirty = false;
        Ok(rep)
    }

    fn write(&mut self, w: &mut dyn Writer, op: &Op) -> Result<()> {
        match op {
            Op::SetNexthop(i, v) => w.nexthop(*i, Some(v)),
            Op::DelNexthop(i) => w.nexthop(*i, None),
            Op::SetRoute(p, v) => w.route(p, Some(v)),
            Op::DelRoute(p) => w.route(p, None),
            Op::SetGroup(i, spec) => {
                let mut v = group_value(spec, &self.port_up, self.values.get(i))?;
                if self.policy.routing.uet_entropy {
                    v.flags |= dataplane_common::lb::GROUP_F_UET_ENTROPY;
                }
                w.group(*i, Some(&v))?;
                self.values.insert(*i, v);
                Ok(())
            }
            Op::DelGroup(i) => {
                w.group(*i, None)?;
                self.values.remove(i);
                Ok(())
            }
        }
    }

    fn log_unsupported(&mut self) {
        for (p, u) in &self.wanted.unsupported {
            if self.logged.insert((*p, *u)) {
                crate::log::warn(&format!(
                    "routing: {p}: {} is not done by the data plane; the kernel forwards it (counted, logged once)",
                    u.name()
                ));
            }
        }
        if !self.wanted.over_limit.is_empty() && self.counters.over_limit == 0 {
            crate::log::warn(&format!(
                "routing: {} route(s) not written: a table is full (routes, next hops or groups; first {})",
                self.wanted.over_limit.len(),
                self.wanted.over_limit[0]
            ));
        }
    }

    /// What is loaded, for `dataplane routes`.
    pub fn listing(&self) -> Listing {
        let mut routes = Vec::with_capacity(self.wanted.routes.len());
        let nh_of: HashMap<u16, (u32, std::net::IpAddr)> = self
            .wanted
            .nexthops
            .iter()
            .filter_map(|k| Some((self.ids.nexthops.get(k)?, *k)))
            .collect();
        let nh_row = |id: u16| {
            let (ifindex, gw) = nh_of.get(&id).copied()?;
            let v = self.have.nexthops.get(&id)?;
            let port = self.managed.by_ifindex.get(&ifindex).copied()?;
            Some(NexthopRow {
                id,
                gateway: gw.to_string(),
                port,
                ifindex,
                mac: v.dst_mac,
                weight: 1,
                resolved: v.valid == dataplane_common::route::NH_VALID,
                live: self.port_up.get(port).copied().unwrap_or(false),
            })
        };
        for (p, t, s) in &self.wanted.routes {
            let Some(e) = self.have.routes.get(p) else {
                continue;
            };
            let (target, mode, members) = match t {
                Target::Kernel => ("kernel".to_string(), None, Vec::new()),
                Target::Nexthop(_) => (
                    format!("nexthop {}", e.id),
                    None,
                    nh_row(e.id).into_iter().collect(),
                ),
                Target::Group(g) => {
                    let spec = self.have.groups.get(&e.id);
                    let members = spec
                        .map(|s| {
                            s.members
                                .iter()
                                .filter_map(|m| {
                                    nh_row(m.0).map(|r| NexthopRow { weight: m.1, ..r })
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    (
                        format!("group {}", e.id),
                        Some(dataplane_config::MODES[usize::from(g.mode)].to_string()),
                        members,
                    )
                }
            };
            routes.push(RouteRow {
                prefix: p.to_string(),
                source: *s,
                target,
                mode,
                nexthops: members,
            });
        }
        Listing {
            routes,
            ports: Vec::new(),
            counters: self.counters.clone(),
            unsupported: self
                .wanted
                .unsupported
                .iter()
                .map(|(p, u)| (p.to_string(), u.name()))
                .collect(),
        }
    }
}

/// A route as `dataplane routes` shows it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct RouteRow {
    pub prefix: String,
    pub source: Source,
    /// `nexthop N`, `group N`, `kernel` (handed to the kernel), `local`.
    pub target: String,
    pub mode: Option<String>,
    pub nexthops: Vec<NexthopRow>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct NexthopRow {
    pub id: u16,
    pub gateway: String,
    /// Plan port index (`dataplane routes` prints its name).
    pub port: usize,
    pub ifindex: u32,
    pub mac: [u8; 6],
    pub weight: u8,
    pub resolved: bool,
    /// The egress port is up.
    pub live: bool,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Listing {
    pub routes: Vec<RouteRow>,
    /// Port names by plan index.
    #[serde(default)]
    pub ports: Vec<String>,
    pub counters: SyncCounters,
    pub unsupported: Vec<(String, String)>,
}

/// The data-plane value of a learned group: members with live bits from
/// their ports, the resilient buckets kept from `prev` when the slots
/// hold the same next hops (only a changed member's flows move).
pub fn group_value(spec: &GroupSpec, port_up: &[bool], prev: Option<&Group>) -> Result<Group> {
    if spec.members.len() > MAX_MEMBERS || spec.members.is_empty() {
        return Err(anyhow!(
            "group with {} members, expected 1-{MAX_MEMBERS}",
            spec.members.len()
        ));
    }
    let mut v = Group::new(spec.mode, spec.flowlet_timeout_ns);
    for (slot, &(id, weight, port)) in spec.members.iter().enumerate() {
        v.members[slot] = Member {
            id,
            weight: weight.max(1),
            live: u8::from(port_up.get(port).copied().unwrap_or(false)),
        };
    }
    v.n_members = spec.members.len() as u8;
    let prev_buckets = prev
        .filter(|p| {
            p.n_members == v.n_members
                && (0..spec.members.len()).all(|i| p.members[i].id == v.members[i].id)
        })
        .map(|p| &p.buckets);
    v.buckets = build_buckets(&v.members, v.n_members, prev_buckets)
        .map_err(|e| anyhow!("group buckets: {e:?}"))?;
    Ok(v)
}

fn describe(op: &Op) -> String {
    match op {
        Op::SetNexthop(i, _) => format!("next hop {i}"),
        Op::DelNexthop(i) => format!("removal of next hop {i}"),
        Op::SetGroup(i, _) => format!("group {i}"),
        Op::DelGroup(i) => format!("removal of group {i}"),
        Op::SetRoute(p, _) => format!("route {p}"),
        Op::DelRoute(p) => format!("removal of route {p}"),
    }
}
