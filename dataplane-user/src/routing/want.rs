//! The pure mapping: kernel routes + neighbours + nexthop objects + the
//! managed ports + the config's policy -> the data plane's routes, next
//! hops and groups (by key; ids come later, [`super::tables`]).
//!
//! - a single path out of a managed port via a gateway -> that next hop;
//! - several paths (RTA_MULTIPATH or a nexthop-object group) -> a group,
//!   mode from the policy (longest matching override, else the default);
//! - a connected route of a managed port (no gateway) -> the kernel
//!   (`local`), and each resolved neighbour inside it -> a host route to
//!   that neighbour;
//! - a path out of an interface the data plane does not manage, blackhole,
//!   encapsulation, more paths than a group holds -> the kernel (counted);
//! - a prefix the config routes statically stays the config's.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::net::IpAddr;

use dataplane_common::lb::MAX_MEMBERS;
use dataplane_config::RoutingPlan;

use super::kernel::*;
use super::rib::Rib;

/// A data-plane next hop: out of `ifindex` to `gateway`.
pub type NhKey = (u32, IpAddr);

/// What a group is: a kernel nexthop object (its membership may change
/// under the same group), or a route's own set of paths.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    Object(u32),
    Paths(Vec<(NhKey, u8)>),
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKey {
    /// Index into `dataplane_config::MODES`.
    pub mode: u8,
    pub origin: Origin,
}

/// Where a learned route points.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    Nexthop(NhKey),
    Group(GroupKey),
    /// Handed to the kernel (connected, unmanaged interface, unsupported).
    Kernel,
}

/// Where a data-plane route came from (`dataplane routes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    Static,
    Kernel,
    Connected,
    Neighbour,
    /// An address of the switch, or IPv6 link-local: the kernel's.
    Local,
}

/// The managed ports by ifindex (-> port index in the plan).
#[derive(Debug, Clone, Default)]
pub struct Managed {
    pub by_ifindex: HashMap<u32, usize>,
}

/// The policy and the config's own routes.
#[derive(Debug, Clone)]
pub struct Policy {
    pub routing: RoutingPlan,
    /// Prefixes routed by the config (`[[route]]`): they stay static.
    pub static_prefixes: HashSet<Prefix>,
    /// Next hops and groups the data plane can hold beyond the config's.
    pub free_nexthops: usize,
    pub free_groups: usize,
}

impl Policy {
    /// The mode of a learned group for `p`: the longest override covering
    /// it, else the default.
    pub fn mode(&self, p: &Prefix) -> u8 {
        self.routing
            .policy
            .iter()
            .filter(|(a, l, _)| Prefix::new(*a, *l).covers(p))
            .max_by_key(|(_, l, _)| *l)
            .map(|x| x.2)
            .unwrap_or(self.routing.default_mode)
    }
}

/// The learned part of the data plane's tables, by key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Wanted {
    /// Sorted by prefix.
    pub routes: Vec<(Prefix, Target, Source)>,
    pub groups: BTreeMap<GroupKey, Vec<(NhKey, u8)>>,
    pub nexthops: BTreeSet<NhKey>,
    /// Routes handed to the kernel because the data plane cannot do them.
    pub unsupported: Vec<(Prefix, Unsupported)>,
    /// Routes not written: the table (routes, next hops or groups) is full.
    pub over_limit: Vec<Prefix>,
}

/// The tables `rib` asks for.
pub fn wanted(rib: &Rib, managed: &Managed, policy: &Policy) -> Wanted {
    let mut w = Wanted::default();
    let mut prefixes: Vec<(&Prefix, &Via)> = rib.best_routes().collect();
    prefixes.sort_unstable_by(|a, b| a.0.cmp(b.0));
    let mut routes: BTreeMap<Prefix, (Target, Source)> = BTreeMap::new();
    let mut connected: Vec<(Prefix, u32)> = Vec::new();
    for (p, via) in prefixes {
        if policy.static_prefixes.contains(p) {
            continue;
        }
        let (t, s) = match route_target(rib, managed, via) {
            // a nexthop-object group stays a group with one member left, so
            // its membership changes touch the group, not its routes
            Ok(Some(paths)) if paths.len() == 1 && !group_object(rib, via) => {
                (Target::Nexthop(paths[0].0), Source::Kernel)
            }
            Ok(Some(paths)) => {
                let origin = match via {
                    Via::Object(id) => Origin::Object(*id),
                    _ => Origin::Paths(paths.clone()),
                };
                let key = GroupKey {
                    mode: policy.mode(p),
                    origin,
                };
                (Target::Group(key), Source::Kernel)
            }
            Ok(None) => {
                if let Via::Paths(ps) = via {
                    if let [KPath {
                        gateway: None,
                        ifindex,
                        ..
                    }] = ps.as_slice()
                    {
                        if managed.by_ifindex.contains_key(ifindex) {
                            connected.push((*p, *ifindex));
                            routes.insert(*p, (Target::Kernel, Source::Connected));
                            continue;
                        }
                    }
                }
                (Target::Kernel, Source::Kernel)
            }
            Err(_) if *via == Via::Local => {
                routes.insert(*p, (Target::Kernel, Source::Local));
                continue;
            }
            Err(u) => {
                w.unsupported.push((*p, u));
                (Target::Kernel, Source::Kernel)
            }
        };
        routes.insert(*p, (t, s));
    }
    // IPv6 link-local (BGP unnumbered, ND) is the kernel's
    let ll = Prefix::new(
        IpAddr::V6(std::net::Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0)),
        10,
    );
    if !policy.static_prefixes.contains(&ll) {
        routes.insert(ll, (Target::Kernel, Source::Local));
    }
    // resolved neighbours inside a managed port's connected prefix: host routes
    for (&(ifindex, addr), mac) in rib.neighbours() {
        if mac.is_none() || !managed.by_ifindex.contains_key(&ifindex) || link_local(addr) {
            continue;
        }
        let host = Prefix::new(addr, if addr.is_ipv4() { 32 } else { 128 });
        let inside = connected
            .iter()
            .any(|(c, i)| *i == ifindex && c.covers(&host));
        // a connected host route (`ip route add H dev P`) becomes the
        // neighbour's next hop once it resolves
        let own = connected.contains(&(host, ifindex));
        if inside && (own || !routes.contains_key(&host)) && !policy.static_prefixes.contains(&host)
        {
            let source = if own {
                Source::Connected
            } else {
                Source::Neighbour
            };
            routes.insert(host, (Target::Nexthop((ifindex, addr)), source));
        }
    }
    admit(w, routes, rib, policy)
}

/// Keeps the routes within the table limits (next hops, groups, routes per
/// family) and collects the next hops and groups they use.
fn admit(
    mut w: Wanted,
    routes: BTreeMap<Prefix, (Target, Source)>,
    rib: &Rib,
    policy: &Policy,
) -> Wanted {
    let (mut v4, mut v6) = (0u32, 0u32);
    let limit4 = policy
        .routing
        .max_routes_v4
        .saturating_sub(count_static(policy, true));
    let limit6 = policy
        .routing
        .max_routes_v6
        .saturating_sub(count_static(policy, false));
    w.routes.reserve(routes.len());
    for (p, (t, s)) in routes {
        let n = if p.addr.is_ipv4() { &mut v4 } else { &mut v6 };
        if *n >= if p.addr.is_ipv4() { limit4 } else { limit6 } {
            w.over_limit.push(p);
            continue;
        }
        let fits = match &t {
            Target::Nexthop(k) => w.nexthops.contains(k) || w.nexthops.len() < policy.free_nexthops,
            Target::Group(g) if w.groups.contains_key(g) => true,
            Target::Group(g) => {
                let members = group_members(rib, g);
                let new_nh = members
                    .iter()
                    .filter(|(k, _)| !w.nexthops.contains(k))
                    .count();
                w.groups.len() < policy.free_groups
                    && w.nexthops.len() + new_nh <= policy.free_nexthops
            }
            Target::Kernel => true,
        };
        if !fits {
            w.over_limit.push(p);
            continue;
        }
        match &t {
            Target::Nexthop(k) => {
                w.nexthops.insert(*k);
            }
            Target::Group(g) => {
                if !w.groups.contains_key(g) {
                    let members = group_members(rib, g);
                    w.nexthops.extend(members.iter().map(|m| m.0));
                    w.groups.insert(g.clone(), members);
                }
            }
            Target::Kernel => {}
        }
        *n += 1;
        w.routes.push((p, t, s));
    }
    w
}

fn count_static(policy: &Policy, v4: bool) -> u32 {
    policy
        .static_prefixes
        .iter()
        .filter(|p| p.addr.is_ipv4() == v4)
        .count() as u32
}

/// A group's members (next hop, weight) as its key says.
pub fn group_members(rib: &Rib, g: &GroupKey) -> Vec<(NhKey, u8)> {
    match &g.origin {
        Origin::Paths(p) => p.clone(),
        Origin::Object(id) => match object_paths(rib, *id) {
            Some(p) => merge(
                p.iter()
                    .filter_map(|x| Some(((x.ifindex, x.gateway?), x.weight))),
            ),
            None => Vec::new(),
        },
    }
}

fn group_object(rib: &Rib, via: &Via) -> bool {
    matches!(via, Via::Object(id) if matches!(rib.nexthop(*id), Some(NexthopKind::Group(_))))
}

fn link_local(a: IpAddr) -> bool {
    match a {
        IpAddr::V4(a) => a.is_link_local(),
        IpAddr::V6(a) => a.segments()[0] & 0xffc0 == 0xfe80,
    }
}

/// The paths of a nexthop object (a group's members in order), or `None`
/// when it (or a member) is unknown or unsupported.
fn object_paths(rib: &Rib, id: u32) -> Option<Vec<KPath>> {
    match rib.nexthop(id)? {
        NexthopKind::Single(p) => Some(vec![*p]),
        NexthopKind::Group(m) => m
            .iter()
            .map(|(mid, w)| match rib.nexthop(*mid)? {
                NexthopKind::Single(p) => Some(KPath { weight: *w, ..*p }),
                _ => None,
            })
            .collect(),
        NexthopKind::Unsupported => None,
    }
}

/// Same next hop twice: one member with the weights added (capped at 255),
/// sorted by next hop.
fn merge(it: impl Iterator<Item = (NhKey, u8)>) -> Vec<(NhKey, u8)> {
    let mut m: BTreeMap<NhKey, u8> = BTreeMap::new();
    for (k, w) in it {
        let e = m.entry(k).or_insert(0);
        *e = e.saturating_add(w);
    }
    m.into_iter().collect()
}

/// The data-plane paths of a route: `Ok(Some(paths))` when every path goes
/// via a gateway out of a managed port; `Ok(None)` for the kernel
/// (connected, unmanaged interface); `Err` when unsupported.
fn route_target(
    rib: &Rib,
    managed: &Managed,
    via: &Via,
) -> Result<Option<Vec<(NhKey, u8)>>, Unsupported> {
    let paths: Vec<KPath> = match via {
        Via::Unsupported(u) => return Err(*u),
        Via::Local => return Err(Unsupported::Family(0)),
        Via::Paths(p) => p.clone(),
        Via::Object(id) => object_paths(rib, *id).ok_or(Unsupported::Nexthop)?,
    };
    if paths.is_empty() {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(paths.len());
    for x in &paths {
        match (x.gateway, managed.by_ifindex.contains_key(&x.ifindex)) {
            (Some(g), true) => out.push(((x.ifindex, g), x.weight)),
            _ => return Ok(None),
        }
    }
    let out = merge(out.into_iter());
    if out.len() > MAX_MEMBERS {
        return Err(Unsupported::TooManyPaths);
    }
    Ok(Some(out))
}
