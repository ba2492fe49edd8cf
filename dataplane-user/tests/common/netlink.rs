//! The recorded NETLINK_ROUTE messages (tests/fixtures/netlink, see its
//! README) and small builders for the tests that read them.
#![allow(dead_code)]

use std::net::IpAddr;

use dataplane_user::routing::decode::decode;
use dataplane_user::routing::kernel::*;

// interfaces of the recording (tests/fixtures/netlink/README.md)
pub const ETH1: u32 = 3;
pub const ETH2: u32 = 5;
pub const ETH9: u32 = 7;

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/netlink/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

pub fn all_events() -> Vec<Event> {
    let mut v = Vec::new();
    for f in [
        "nexthops.bin",
        "neighbours.bin",
        "routes_v4.bin",
        "routes_v6.bin",
    ] {
        v.extend(decode(&fixture(f), 254));
    }
    v
}

pub fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

pub fn pfx(s: &str) -> Prefix {
    let (a, l) = s.split_once('/').unwrap();
    Prefix::new(ip(a), l.parse().unwrap())
}

pub fn route_of(events: &[Event], p: &str) -> KRoute {
    events
        .iter()
        .find_map(|e| match e {
            Event::NewRoute(r) if r.prefix == pfx(p) => Some(r.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no route {p} decoded"))
}

pub fn path(gw: &str, ifindex: u32, weight: u8) -> KPath {
    KPath {
        gateway: Some(ip(gw)),
        ifindex,
        weight,
    }
}
