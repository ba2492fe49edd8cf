//! The controller's mirror of the kernel: routes of the followed table
//! (every metric of a prefix; the lowest is the one the kernel uses),
//! neighbours and nexthop objects, kept up to date by [`Rib::apply`].

use std::collections::HashMap;
use std::net::IpAddr;

use super::kernel::*;

#[derive(Debug, Default, Clone)]
pub struct Rib {
    /// Per prefix, its routes by metric, lowest first (almost always one:
    /// a Vec, not a map, for memory at 100k prefixes).
    routes: HashMap<Prefix, Vec<(u32, Via)>>,
    neighbours: HashMap<(u32, IpAddr), Option<[u8; 6]>>,
    nexthops: HashMap<u32, NexthopKind>,
    /// Unsupported messages with nothing to write (MPLS routes).
    pub unsupported_other: u64,
    /// Messages that could not be decoded.
    pub malformed: u64,
}

/// What one event changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Changed {
    Nothing,
    Route(Prefix),
    Neighbour,
    Nexthop,
}

impl Rib {
    /// Applies one decoded message.
    pub fn apply(&mut self, e: &Event) -> Changed {
        match e {
            Event::NewRoute(r) => {
                let m = self.routes.entry(r.prefix).or_default();
                match m.binary_search_by_key(&r.metric, |x| x.0) {
                    Ok(i) if m[i].1 == r.via => return Changed::Nothing,
                    Ok(i) => m[i].1 = r.via.clone(),
                    Err(i) => m.insert(i, (r.metric, r.via.clone())),
                }
                Changed::Route(r.prefix)
            }
            Event::DelRoute(r) => {
                let Some(m) = self.routes.get_mut(&r.prefix) else {
                    return Changed::Nothing;
                };
                match m.binary_search_by_key(&r.metric, |x| x.0) {
                    Ok(i) => {
                        m.remove(i);
                    }
                    Err(_) => return Changed::Nothing,
                }
                if m.is_empty() {
                    self.routes.remove(&r.prefix);
                }
                Changed::Route(r.prefix)
            }
            Event::NewNeigh(n) => match self.neighbours.insert((n.ifindex, n.addr), n.mac) {
                Some(old) if old == n.mac => Changed::Nothing,
                _ => Changed::Neighbour,
            },
            Event::DelNeigh(n) => match self.neighbours.remove(&(n.ifindex, n.addr)) {
                Some(_) => Changed::Neighbour,
                None => Changed::Nothing,
            },
            Event::NewNexthop(nh) => match self.nexthops.insert(nh.id, nh.kind.clone()) {
                Some(old) if old == nh.kind => Changed::Nothing,
                _ => Changed::Nexthop,
            },
            Event::DelNexthop(id) => {
                if self.nexthops.contains_key(id) {
                    self.flush_nexthop(*id);
                    Changed::Nexthop
                } else {
                    Changed::Nothing
                }
            }
            Event::UnsupportedOther(_) => {
                self.unsupported_other += 1;
                Changed::Nothing
            }
            Event::Malformed { .. } => {
                self.malformed += 1;
                Changed::Nothing
            }
            Event::Ignored | Event::Done | Event::Error(_) => Changed::Nothing,
        }
    }

    /// A nexthop object is gone: the kernel removes it from its groups and
    /// removes the routes using it (or a group left empty) without a
    /// RTM_DELROUTE for each; so does the mirror.
    fn flush_nexthop(&mut self, id: u32) {
        let mut gone = vec![id];
        while let Some(id) = gone.pop() {
            self.nexthops.remove(&id);
            for (gid, k) in self.nexthops.iter_mut() {
                if let NexthopKind::Group(m) = k {
                    let n = m.len();
                    m.retain(|x| x.0 != id);
                    if m.is_empty() && n > 0 {
                        gone.push(*gid);
                    }
                }
            }
            self.routes.retain(|_, m| {
                m.retain(|(_, v)| *v != Via::Object(id));
                !m.is_empty()
            });
        }
    }

    /// Every prefix with the route the kernel uses (lowest metric).
    pub fn best_routes(&self) -> impl Iterator<Item = (&Prefix, &Via)> {
        self.routes
            .iter()
            .filter_map(|(p, m)| m.first().map(|v| (p, &v.1)))
    }

    pub fn best(&self, p: &Prefix) -> Option<&Via> {
        self.routes.get(p).and_then(|m| m.first()).map(|v| &v.1)
    }

    pub fn route_count(&self) -> usize {
        self.routes.len()
    }

    /// `None`: no entry; `Some(None)`: known, unresolved; `Some(Some(mac))`.
    pub fn neighbour(&self, ifindex: u32, addr: IpAddr) -> Option<Option<[u8; 6]>> {
        self.neighbours.get(&(ifindex, addr)).copied()
    }

    pub fn neighbours(&self) -> impl Iterator<Item = (&(u32, IpAddr), &Option<[u8; 6]>)> {
        self.neighbours.iter()
    }

    pub fn nexthop(&self, id: u32) -> Option<&NexthopKind> {
        self.nexthops.get(&id)
    }
}
