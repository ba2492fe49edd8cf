//! Learned routes as data-plane entries: stable ids for next hops and
//! groups ([`Ids`]), the values ([`Tables`]), and the ordered difference
//! between what is loaded and what is wanted ([`diff`]). Pure.
//!
//! Order ([`diff`]): next hops written, groups written, routes written,
//! then routes removed, groups removed, next hops removed. Every prefix of
//! that sequence is a consistent table: a route is written only after what
//! it points at, and an entry is removed only after nothing points at it.
//! An id freed by one sync is reused only after it ([`Ids::commit`]), so a
//! route still pointing at it never sees it rewritten under it.

use std::collections::{BTreeMap, HashMap};

use dataplane_common::route::{
    NextHop, RouteEntry, NH_UNRESOLVED, NH_VALID, ROUTE_GROUP, ROUTE_LOCAL, ROUTE_NEXTHOP,
};

use super::kernel::Prefix;
use super::rib::Rib;
use super::want::{GroupKey, NhKey, Target, Wanted};

/// Id allocation for one kind of entry: ids `base..max`, stable for a key
/// while it is wanted.
#[derive(Debug, Clone)]
pub struct IdSpace<K> {
    ids: HashMap<K, u16>,
    free: Vec<u16>,
    released: Vec<u16>,
    next: u16,
    max: u16,
}

impl<K: std::hash::Hash + Eq + Clone> IdSpace<K> {
    pub fn new(base: u16, max: u16) -> Self {
        IdSpace {
            ids: HashMap::new(),
            free: Vec::new(),
            released: Vec::new(),
            next: base,
            max,
        }
    }

    /// The key's id, allocating one (`None`: the space is full).
    pub fn id(&mut self, k: &K) -> Option<u16> {
        if let Some(i) = self.ids.get(k) {
            return Some(*i);
        }
        let i = match self.free.pop() {
            Some(i) => i,
            None if self.next < self.max => {
                self.next += 1;
                self.next - 1
            }
            None => return None,
        };
        self.ids.insert(k.clone(), i);
        Some(i)
    }

    pub fn get(&self, k: &K) -> Option<u16> {
        self.ids.get(k).copied()
    }

    /// Releases the ids of keys not in `keep`; they become reusable after
    /// [`IdSpace::commit`].
    pub fn retain(&mut self, keep: impl Fn(&K) -> bool) {
        let released = &mut self.released;
        self.ids.retain(|k, i| {
            let kept = keep(k);
            if !kept {
                released.push(*i);
            }
            kept
        });
    }

    /// The sync that released ids is applied: they may be reused.
    pub fn commit(&mut self) {
        self.free.append(&mut self.released);
    }
}

/// Both id spaces.
#[derive(Debug, Clone)]
pub struct Ids {
    pub nexthops: IdSpace<NhKey>,
    pub groups: IdSpace<GroupKey>,
}

/// A group as the data plane will hold it (its value is built with the
/// port states and the loaded buckets when written).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSpec {
    pub mode: u8,
    pub flowlet_timeout_ns: u32,
    /// (next-hop id, weight, port index of the next hop).
    pub members: Vec<(u16, u8, usize)>,
}

/// Learned entries with their ids and values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tables {
    pub nexthops: BTreeMap<u16, NextHop>,
    pub groups: BTreeMap<u16, GroupSpec>,
    pub routes: HashMap<Prefix, RouteEntry>,
}

/// A managed port as next hops use it.
#[derive(Debug, Clone, Copy)]
pub struct PortInfo {
    pub ifindex: u32,
    pub port_id: u16,
    pub mac: [u8; 6],
}

/// The values of `w`: ids allocated (stable for kept keys), next hops
/// resolved from the neighbour table.
pub fn build(
    w: &Wanted,
    rib: &Rib,
    ids: &mut Ids,
    ports: &[PortInfo],
    port_of: &HashMap<u32, usize>,
    flowlet_timeout_ns: u32,
) -> Tables {
    ids.nexthops.retain(|k| w.nexthops.contains(k));
    ids.groups.retain(|k| w.groups.contains_key(k));
    let mut t = Tables::default();
    for k in &w.nexthops {
        let (Some(id), Some(&pi)) = (ids.nexthops.id(k), port_of.get(&k.0)) else {
            continue;
        };
        let port = ports[pi];
        let mac = rib.neighbour(k.0, k.1).flatten();
        t.nexthops.insert(
            id,
            NextHop {
                dst_mac: mac.unwrap_or([0; 6]),
                src_mac: port.mac,
                ifindex: port.ifindex,
                port_id: port.port_id,
                valid: if mac.is_some() {
                    NH_VALID
                } else {
                    NH_UNRESOLVED
                },
                _pad: 0,
            },
        );
    }
    for (k, members) in &w.groups {
        let Some(id) = ids.groups.id(k) else { continue };
        let members = members
            .iter()
            .filter_map(|(nh, wt)| Some((ids.nexthops.get(nh)?, *wt, *port_of.get(&nh.0)?)))
            .collect();
        t.groups.insert(
            id,
            GroupSpec {
                mode: k.mode,
                flowlet_timeout_ns,
                members,
            },
        );
    }
    t.routes.reserve(w.routes.len());
    for (p, target, _) in &w.routes {
        let e = match target {
            Target::Nexthop(k) => ids.nexthops.get(k).map(|id| (ROUTE_NEXTHOP, id)),
            Target::Group(g) => ids.groups.get(g).map(|id| (ROUTE_GROUP, id)),
            Target::Kernel => Some((ROUTE_LOCAL, 0)),
        };
        if let Some((kind, id)) = e {
            t.routes.insert(
                *p,
                RouteEntry {
                    kind,
                    plen: dataplane_common::route::route_plen(p.len),
                    id,
                },
            );
        }
    }
    t
}

/// One table write.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    SetNexthop(u16, NextHop),
    SetGroup(u16, GroupSpec),
    SetRoute(Prefix, RouteEntry),
    DelRoute(Prefix),
    DelGroup(u16),
    DelNexthop(u16),
}

/// The writes that turn `have` into `want`, in the safe order.
pub fn diff(have: &Tables, want: &Tables) -> Vec<Op> {
    let mut ops = Vec::new();
    for (id, v) in &want.nexthops {
        if have.nexthops.get(id) != Some(v) {
            ops.push(Op::SetNexthop(*id, *v));
        }
    }
    for (id, v) in &want.groups {
        if have.groups.get(id) != Some(v) {
            ops.push(Op::SetGroup(*id, v.clone()));
        }
    }
    let mut set: Vec<(&Prefix, &RouteEntry)> = want
        .routes
        .iter()
        .filter(|(p, v)| have.routes.get(*p) != Some(*v))
        .collect();
    set.sort_unstable_by_key(|x| *x.0);
    ops.extend(set.into_iter().map(|(p, v)| Op::SetRoute(*p, *v)));
    let mut del: Vec<&Prefix> = have
        .routes
        .keys()
        .filter(|p| !want.routes.contains_key(*p))
        .collect();
    del.sort_unstable();
    ops.extend(del.into_iter().map(|p| Op::DelRoute(*p)));
    for id in have.groups.keys().filter(|k| !want.groups.contains_key(*k)) {
        ops.push(Op::DelGroup(*id));
    }
    for id in have
        .nexthops
        .keys()
        .filter(|k| !want.nexthops.contains_key(*k))
    {
        ops.push(Op::DelNexthop(*id));
    }
    ops
}

/// Applies one op to the record of what is loaded.
pub fn record(have: &mut Tables, op: &Op) {
    match op {
        Op::SetNexthop(i, v) => {
            have.nexthops.insert(*i, *v);
        }
        Op::SetGroup(i, v) => {
            have.groups.insert(*i, v.clone());
        }
        Op::SetRoute(p, v) => {
            have.routes.insert(*p, *v);
        }
        Op::DelRoute(p) => {
            have.routes.remove(p);
        }
        Op::DelGroup(i) => {
            have.groups.remove(i);
        }
        Op::DelNexthop(i) => {
            have.nexthops.remove(i);
        }
    }
}

/// Does every learned route and group point at something loaded? (The
/// invariant every prefix of a [`diff`] keeps; the tests check it.)
pub fn consistent(t: &Tables, static_nexthops: u16, static_groups: u16) -> Result<(), String> {
    for (id, g) in &t.groups {
        for (nh, _, _) in &g.members {
            if *nh >= static_nexthops && !t.nexthops.contains_key(nh) {
                return Err(format!("group {id} -> missing next hop {nh}"));
            }
        }
    }
    for (p, r) in &t.routes {
        let ok = match r.kind {
            ROUTE_NEXTHOP => r.id < static_nexthops || t.nexthops.contains_key(&r.id),
            ROUTE_GROUP => r.id < static_groups || t.groups.contains_key(&r.id),
            _ => true,
        };
        if !ok {
            return Err(format!("route {p} -> missing {} {}", r.kind, r.id));
        }
    }
    Ok(())
}
