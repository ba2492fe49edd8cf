//! NETLINK_ROUTE bytes -> [`Event`]s: routes and neighbours through
//! `netlink-packet-route`, nexthop objects (RTM_*NEXTHOP, which that crate
//! does not model) by the small reader at the bottom. Pure: never panics on
//! any input; a message that cannot be decoded is an `Event::Malformed`
//! and the walk goes on with the next one when its length is sane.

use std::net::IpAddr;

use netlink_packet_core::Parseable;
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteFlags, RouteMessage, RouteType, RouteVia,
};
use netlink_packet_route::AddressFamily;

use super::kernel::*;

pub const NLMSG_ERROR: u16 = 2;
pub const NLMSG_DONE: u16 = 3;
pub const RTM_NEWROUTE: u16 = 24;
pub const RTM_DELROUTE: u16 = 25;
pub const RTM_GETROUTE: u16 = 26;
pub const RTM_NEWNEIGH: u16 = 28;
pub const RTM_DELNEIGH: u16 = 29;
pub const RTM_GETNEIGH: u16 = 30;
pub const RTM_NEWNEXTHOP: u16 = 104;
pub const RTM_DELNEXTHOP: u16 = 105;
pub const RTM_GETNEXTHOP: u16 = 106;

const AF_INET: u8 = 2;
const AF_INET6: u8 = 10;
const AF_MPLS: u8 = 28;
const NLMSG_HDRLEN: usize = 16;

/// Decodes every message of one datagram, keeping only routes of `table`.
pub fn decode(buf: &[u8], table: u32) -> Vec<Event> {
    let mut out = Vec::new();
    let mut off = 0;
    while off + NLMSG_HDRLEN <= buf.len() {
        let len = u32::from_ne_bytes(buf[off..off + 4].try_into().unwrap_or([0; 4])) as usize;
        let ty = u16::from_ne_bytes([buf[off + 4], buf[off + 5]]);
        if len < NLMSG_HDRLEN || off + len > buf.len() {
            out.push(Event::Malformed {
                msg_type: ty,
                why: format!(
                    "netlink header at byte {off}: length {len}, expected 16..={} (bytes left)",
                    buf.len() - off
                ),
            });
            return out;
        }
        out.push(decode_one(ty, &buf[off + NLMSG_HDRLEN..off + len], table));
        off += (len + 3) & !3;
    }
    if off < buf.len() {
        out.push(Event::Malformed {
            msg_type: 0,
            why: format!("{} trailing bytes after the last message", buf.len() - off),
        });
    }
    out
}

/// One message's payload by type.
pub fn decode_one(ty: u16, payload: &[u8], table: u32) -> Event {
    let malformed = |why: String| Event::Malformed { msg_type: ty, why };
    match ty {
        NLMSG_DONE => Event::Done,
        NLMSG_ERROR => match payload.get(..4) {
            Some(b) => Event::Error(-i32::from_ne_bytes(b.try_into().unwrap_or([0; 4]))),
            None => malformed("NLMSG_ERROR shorter than its errno".into()),
        },
        RTM_NEWROUTE | RTM_DELROUTE => {
            if payload.first() == Some(&AF_MPLS) {
                return Event::UnsupportedOther(Unsupported::Mpls);
            }
            match RouteMessage::parse(payload) {
                Ok(m) => match route(&m, table) {
                    Some(r) if ty == RTM_NEWROUTE => Event::NewRoute(r),
                    Some(r) => Event::DelRoute(r),
                    None => Event::Ignored,
                },
                Err(e) => malformed(format!("route message: {e}")),
            }
        }
        RTM_NEWNEIGH | RTM_DELNEIGH => match NeighbourMessage::parse(payload) {
            Ok(m) => match neighbour(&m) {
                Some(n) if ty == RTM_NEWNEIGH => Event::NewNeigh(n),
                Some(n) => Event::DelNeigh(n),
                None => Event::Ignored,
            },
            Err(e) => malformed(format!("neighbour message: {e}")),
        },
        RTM_NEWNEXTHOP | RTM_DELNEXTHOP => match nexthop(payload) {
            Ok(nh) if ty == RTM_NEWNEXTHOP => Event::NewNexthop(nh),
            Ok(nh) => Event::DelNexthop(nh.id),
            Err(why) => malformed(format!("nexthop message: {why}")),
        },
        _ => Event::Ignored,
    }
}

fn ip_of(a: &RouteAddress) -> Option<IpAddr> {
    match a {
        RouteAddress::Inet(a) => Some(IpAddr::V4(*a)),
        RouteAddress::Inet6(a) => Some(IpAddr::V6(*a)),
        _ => None,
    }
}

fn via_of(v: &RouteVia) -> Option<IpAddr> {
    match v {
        RouteVia::Inet(a) => Some(IpAddr::V4(*a)),
        RouteVia::Inet6(a) => Some(IpAddr::V6(*a)),
        _ => None,
    }
}

/// A route of `table` we follow, or `None` (another table, a cached clone,
/// local/broadcast/multicast, IPv6 link-local or multicast prefixes).
fn route(m: &RouteMessage, table: u32) -> Option<KRoute> {
    let h = &m.header;
    let family = u8::from(h.address_family);
    if h.flags.contains(RouteFlags::Cloned) {
        return None;
    }
    let mut t = u32::from(h.table);
    let mut dst = None;
    let mut metric = 0;
    let mut gateway = None;
    let mut oif = 0;
    let mut multipath = None;
    let mut nhid = None;
    let mut unsupported = None;
    for a in &m.attributes {
        match a {
            RouteAttribute::Table(x) => t = *x,
            RouteAttribute::Destination(d) => dst = ip_of(d),
            RouteAttribute::Priority(p) => metric = *p,
            RouteAttribute::Gateway(g) => gateway = ip_of(g),
            RouteAttribute::Via(v) => gateway = via_of(v),
            RouteAttribute::Oif(i) => oif = *i,
            RouteAttribute::MultiPath(hops) => multipath = Some(hops),
            RouteAttribute::NhId(id) => nhid = Some(*id),
            RouteAttribute::EncapType(_) | RouteAttribute::Encap(_) => {
                unsupported = Some(Unsupported::Encap)
            }
            RouteAttribute::NewDestination(_) => unsupported = Some(Unsupported::Mpls),
            _ => {}
        }
    }
    // the switch's own addresses: the local table's `local` routes
    let local = h.kind == RouteType::Local && t == 255;
    if t != table && !local {
        return None;
    }
    let addr = match (family, dst) {
        (AF_INET | AF_INET6, Some(a)) => a,
        (AF_INET, None) => IpAddr::V4(0.into()),
        (AF_INET6, None) => IpAddr::V6(0.into()),
        _ => {
            return Some(KRoute {
                table: t,
                prefix: Prefix::new(IpAddr::V4(0.into()), 0),
                metric,
                protocol: u8::from(h.protocol),
                via: Via::Unsupported(Unsupported::Family(family)),
            })
        }
    };
    if let IpAddr::V6(a) = addr {
        let seg = a.segments()[0];
        if seg & 0xffc0 == 0xfe80 || seg & 0xff00 == 0xff00 {
            return None;
        }
    }
    let via = match h.kind {
        RouteType::Unicast => {
            if let Some(u) = unsupported {
                Via::Unsupported(u)
            } else if let Some(id) = nhid {
                Via::Object(id)
            } else if let Some(hops) = multipath {
                paths_of(hops)
            } else {
                Via::Paths(vec![KPath {
                    gateway,
                    ifindex: oif,
                    weight: 1,
                }])
            }
        }
        RouteType::Local if local => Via::Local,
        RouteType::Local | RouteType::Broadcast | RouteType::Anycast | RouteType::Multicast => {
            return None
        }
        other => Via::Unsupported(Unsupported::RouteType(u8::from(other))),
    };
    Some(KRoute {
        table: t,
        prefix: Prefix::new(addr, h.destination_prefix_length),
        metric,
        protocol: u8::from(h.protocol),
        via,
    })
}

/// RTA_MULTIPATH's next hops as paths (weight = rtnh_hops + 1).
fn paths_of(hops: &[netlink_packet_route::route::RouteNextHop]) -> Via {
    let mut v = Vec::with_capacity(hops.len());
    for nh in hops {
        let mut gateway = None;
        for a in &nh.attributes {
            match a {
                RouteAttribute::Gateway(g) => gateway = ip_of(g),
                RouteAttribute::Via(x) => gateway = via_of(x),
                RouteAttribute::EncapType(_) | RouteAttribute::Encap(_) => {
                    return Via::Unsupported(Unsupported::Encap)
                }
                RouteAttribute::NewDestination(_) => return Via::Unsupported(Unsupported::Mpls),
                _ => {}
            }
        }
        v.push(KPath {
            gateway,
            ifindex: nh.interface_index,
            weight: nh.hops.saturating_add(1),
        });
    }
    Via::Paths(v)
}

/// An IPv4/IPv6 neighbour (not a proxy entry), resolved or not.
fn neighbour(m: &NeighbourMessage) -> Option<KNeigh> {
    let h = &m.header;
    if !matches!(h.family, AddressFamily::Inet | AddressFamily::Inet6)
        || h.flags.contains(NeighbourFlags::Proxy)
    {
        return None;
    }
    let mut addr = None;
    let mut mac = None;
    for a in &m.attributes {
        match a {
            NeighbourAttribute::Destination(NeighbourAddress::Inet(a)) => {
                addr = Some(IpAddr::V4(*a))
            }
            NeighbourAttribute::Destination(NeighbourAddress::Inet6(a)) => {
                addr = Some(IpAddr::V6(*a))
            }
            NeighbourAttribute::LinkLayerAddress(l) => mac = <[u8; 6]>::try_from(l.as_slice()).ok(),
            _ => {}
        }
    }
    let resolved = matches!(
        h.state,
        NeighbourState::Reachable
            | NeighbourState::Stale
            | NeighbourState::Delay
            | NeighbourState::Probe
            | NeighbourState::Permanent
            | NeighbourState::Noarp
    );
    let addr = addr?;
    if addr.is_multicast() {
        return None;
    }
    Some(KNeigh {
        ifindex: h.ifindex,
        addr,
        mac: if resolved { mac } else { None },
    })
}

// --- nexthop objects (include/uapi/linux/nexthop.h) -------------------------

const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_BLACKHOLE: u16 = 4;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;
const NHA_ENCAP_TYPE: u16 = 7;
const NHA_ENCAP: u16 = 8;
const NHA_FDB: u16 = 11;

/// struct nhmsg (8 bytes: family, scope, protocol, resvd, flags) and its
/// attributes.
pub fn nexthop(p: &[u8]) -> Result<KNexthop, String> {
    if p.len() < 8 {
        return Err(format!(
            "{} bytes, expected at least the 8-byte nhmsg",
            p.len()
        ));
    }
    let family = p[0];
    let mut id = None;
    let mut group = None;
    let mut oif = 0;
    let mut gateway = None;
    let mut unsupported = false;
    let mut off = 8;
    while off + 4 <= p.len() {
        let len = usize::from(u16::from_ne_bytes([p[off], p[off + 1]]));
        let ty = u16::from_ne_bytes([p[off + 2], p[off + 3]]) & 0x3fff;
        if len < 4 || off + len > p.len() {
            return Err(format!(
                "attribute at byte {off}: length {len}, expected 4..={}",
                p.len() - off
            ));
        }
        let v = &p[off + 4..off + len];
        let u32_of = |v: &[u8]| -> Result<u32, String> {
            Ok(u32::from_ne_bytes(v.try_into().map_err(|_| {
                format!(
                    "attribute {ty} at byte {off}: {} bytes, expected 4",
                    v.len()
                )
            })?))
        };
        match ty {
            NHA_ID => id = Some(u32_of(v)?),
            NHA_OIF => oif = u32_of(v)?,
            NHA_GATEWAY => {
                gateway = Some(match (family, v.len()) {
                    (AF_INET, 4) => IpAddr::V4(<[u8; 4]>::try_from(v).unwrap_or([0; 4]).into()),
                    (AF_INET6, 16) => IpAddr::V6(<[u8; 16]>::try_from(v).unwrap_or([0; 16]).into()),
                    _ => {
                        return Err(format!(
                            "NHA_GATEWAY at byte {off}: {} bytes for family {family}",
                            v.len()
                        ))
                    }
                })
            }
            NHA_GROUP => {
                if !v.len().is_multiple_of(8) {
                    return Err(format!(
                        "NHA_GROUP at byte {off}: {} bytes, expected a multiple of 8",
                        v.len()
                    ));
                }
                group = Some(
                    v.chunks_exact(8)
                        .map(|c| {
                            let id = u32::from_ne_bytes([c[0], c[1], c[2], c[3]]);
                            // weight - 1, with the high byte of newer kernels
                            let w = (u16::from(c[5]) << 8 | u16::from(c[4])) + 1;
                            (id, w.min(255) as u8)
                        })
                        .collect(),
                )
            }
            NHA_BLACKHOLE | NHA_ENCAP_TYPE | NHA_ENCAP | NHA_FDB => unsupported = true,
            _ => {}
        }
        off += (len + 3) & !3;
    }
    let id = id.ok_or("no NHA_ID")?;
    let kind = if unsupported {
        NexthopKind::Unsupported
    } else if let Some(g) = group {
        NexthopKind::Group(g)
    } else {
        NexthopKind::Single(KPath {
            gateway,
            ifindex: oif,
            weight: 1,
        })
    };
    Ok(KNexthop { id, kind })
}
