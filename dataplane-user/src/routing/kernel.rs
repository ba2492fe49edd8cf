//! The kernel's routing state as the controller mirrors it: routes of one
//! table, neighbours (ARP/ND) and nexthop objects, decoded from netlink
//! ([`super::decode`]) and kept in the [`super::rib::Rib`]. Plain data.

use std::net::IpAddr;

/// A prefix with its host bits cleared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Prefix {
    pub addr: IpAddr,
    pub len: u8,
}

impl Prefix {
    /// `addr/len` with host bits cleared (`len` capped at the family's bits).
    pub fn new(addr: IpAddr, len: u8) -> Prefix {
        match addr {
            IpAddr::V4(a) => {
                let len = len.min(32);
                let m = if len == 0 { 0 } else { u32::MAX << (32 - len) };
                Prefix {
                    addr: IpAddr::V4((u32::from(a) & m).into()),
                    len,
                }
            }
            IpAddr::V6(a) => {
                let len = len.min(128);
                let m = if len == 0 {
                    0
                } else {
                    u128::MAX << (128 - len)
                };
                Prefix {
                    addr: IpAddr::V6((u128::from(a) & m).into()),
                    len,
                }
            }
        }
    }

    /// Is `other` inside this prefix (same family, at least as long)?
    pub fn covers(&self, other: &Prefix) -> bool {
        other.len >= self.len
            && self.addr.is_ipv4() == other.addr.is_ipv4()
            && Prefix::new(other.addr, self.len).addr == self.addr
    }
}

impl std::fmt::Display for Prefix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.len)
    }
}

/// One path of a route: out of `ifindex`, via `gateway` (none: the
/// destination is on the link).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KPath {
    pub gateway: Option<IpAddr>,
    pub ifindex: u32,
    /// 1..=256 (the kernel's rtnh_hops / nexthop_grp weight + 1), capped to 255.
    pub weight: u8,
}

/// What the kernel routes that the data plane does not do (counted, logged
/// once per prefix, the prefix handed to the kernel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Unsupported {
    /// blackhole, unreachable, prohibit, throw, nat, ...: the type's number.
    RouteType(u8),
    /// A lightweight-tunnel encapsulation (RTA_ENCAP: MPLS, seg6, ip, ...).
    Encap,
    /// An MPLS route (AF_MPLS) or MPLS labels on a path.
    Mpls,
    /// A path through a nexthop object the kernel has not described (yet)
    /// or one that is a blackhole / encapsulation / FDB object.
    Nexthop,
    /// More paths than a data-plane group holds.
    TooManyPaths,
    /// An address family other than IPv4 / IPv6 / MPLS.
    Family(u8),
}

impl Unsupported {
    pub fn name(&self) -> String {
        match self {
            Unsupported::RouteType(t) => format!("route type {t} ({})", route_type_name(*t)),
            Unsupported::Encap => "encapsulation (RTA_ENCAP)".into(),
            Unsupported::Mpls => "MPLS".into(),
            Unsupported::Nexthop => "unknown or unsupported nexthop object".into(),
            Unsupported::TooManyPaths => "more paths than a group holds".into(),
            Unsupported::Family(f) => format!("address family {f}"),
        }
    }
}

fn route_type_name(t: u8) -> &'static str {
    match t {
        6 => "blackhole",
        7 => "unreachable",
        8 => "prohibit",
        9 => "throw",
        10 => "nat",
        _ => "other",
    }
}

/// How a route forwards.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Via {
    /// One or more paths given in the route (RTA_GATEWAY/RTA_OIF or
    /// RTA_MULTIPATH).
    Paths(Vec<KPath>),
    /// A nexthop object (RTA_NH_ID): a single nexthop or a group.
    Object(u32),
    /// An address of the switch (a `local` route of the local table).
    Local,
    /// Something the data plane does not do.
    Unsupported(Unsupported),
}

/// A route of the followed table.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KRoute {
    pub table: u32,
    pub prefix: Prefix,
    /// RTA_PRIORITY (the metric): the lowest wins among routes of a prefix.
    pub metric: u32,
    /// rtm_protocol (2 kernel, 3 boot, 4 static, 186 bgp, ...).
    pub protocol: u8,
    pub via: Via,
}

/// A neighbour: `mac` when resolved (reachable, stale, delay, probe,
/// permanent, noarp), `None` while incomplete or failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KNeigh {
    pub ifindex: u32,
    pub addr: IpAddr,
    pub mac: Option<[u8; 6]>,
}

/// A nexthop object (RTM_NEWNEXTHOP).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum NexthopKind {
    /// One next hop: out of `ifindex` via `gateway`.
    Single(KPath),
    /// A group of other objects with weights (1..=256 capped to 255);
    /// resilient groups included (the data plane's groups are resilient).
    Group(Vec<(u32, u8)>),
    /// A blackhole, encapsulation or FDB object.
    Unsupported,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KNexthop {
    pub id: u32,
    pub kind: NexthopKind,
}

/// One decoded netlink message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    NewRoute(KRoute),
    DelRoute(KRoute),
    NewNeigh(KNeigh),
    DelNeigh(KNeigh),
    NewNexthop(KNexthop),
    DelNexthop(u32),
    /// An unsupported route outside the data plane's families (MPLS):
    /// nothing to write, counted.
    UnsupportedOther(Unsupported),
    /// A message we do not follow (another table, a cached clone, a link
    /// or address message, a local/broadcast route).
    Ignored,
    /// End of a dump.
    Done,
    /// An NLMSG_ERROR with this errno (0 = an acknowledgement).
    Error(i32),
    /// A message that could not be decoded: its type and why.
    Malformed {
        msg_type: u16,
        why: String,
    },
}
