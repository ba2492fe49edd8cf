//! Decoding NETLINK_ROUTE messages recorded from the kernel
//! (tests/fixtures/netlink, see its README): routes, neighbours, nexthop
//! objects, unsupported kinds, and malformed input (never a crash).

use dataplane_user::routing::decode::decode;
use dataplane_user::routing::kernel::*;
use dataplane_user::routing::rib::Rib;

#[path = "common/netlink.rs"]
mod netlink;
use netlink::*;

#[test]
fn recorded_routes_decode() {
    let ev = all_events();
    assert!(
        !ev.iter().any(|e| matches!(e, Event::Malformed { .. })),
        "{ev:?}"
    );
    // multipath with weights (rtnh_hops + 1)
    assert_eq!(
        route_of(&ev, "198.18.2.0/24").via,
        Via::Paths(vec![
            path("198.18.0.1", ETH1, 1),
            path("198.18.0.3", ETH2, 2)
        ])
    );
    assert_eq!(route_of(&ev, "198.18.2.0/24").protocol, 186, "proto bgp");
    assert_eq!(
        route_of(&ev, "198.18.3.0/24").via,
        Via::Paths(vec![path("198.18.0.1", ETH1, 1)])
    );
    // connected: no gateway
    assert_eq!(
        route_of(&ev, "198.18.0.0/31").via,
        Via::Paths(vec![KPath {
            gateway: None,
            ifindex: ETH1,
            weight: 1
        }])
    );
    // unsupported kinds are decoded as such, not dropped
    assert_eq!(
        route_of(&ev, "198.18.4.0/24").via,
        Via::Unsupported(Unsupported::RouteType(6))
    );
    assert_eq!(
        route_of(&ev, "198.18.5.0/24").via,
        Via::Unsupported(Unsupported::RouteType(7))
    );
    assert_eq!(
        route_of(&ev, "198.18.7.0/24").via,
        Via::Unsupported(Unsupported::Encap)
    );
    // nexthop objects
    assert_eq!(route_of(&ev, "198.18.8.0/24").via, Via::Object(10));
    assert!(ev.contains(&Event::NewNexthop(KNexthop {
        id: 10,
        kind: NexthopKind::Group(vec![(1, 1), (2, 3)])
    })));
    assert!(
        ev.contains(&Event::NewNexthop(KNexthop {
            id: 11,
            kind: NexthopKind::Group(vec![(1, 1), (2, 1)])
        })),
        "resilient group"
    );
    assert!(
        ev.contains(&Event::NewNexthop(KNexthop {
            id: 4,
            kind: NexthopKind::Unsupported
        })),
        "blackhole object"
    );
    // IPv6 with link-local next hops
    assert_eq!(
        route_of(&ev, "2001:db8:2::/64").via,
        Via::Paths(vec![path("fe80::1", ETH1, 1)])
    );
    assert_eq!(route_of(&ev, "2001:db8:2::/64").metric, 1024);
    assert_eq!(
        route_of(&ev, "2001:db8:3::/64").via,
        Via::Paths(vec![path("fe80::1", ETH1, 1), path("fe80::2", ETH2, 1)])
    );
    assert!(ev.contains(&Event::NewNexthop(KNexthop {
        id: 3,
        kind: NexthopKind::Single(path("fe80::1", ETH1, 1))
    })));
    // the route in table 100 and fe80::/64 are not followed
    assert!(!ev
        .iter()
        .any(|e| matches!(e, Event::NewRoute(r) if r.prefix == pfx("198.18.10.0/24"))));
    assert!(!ev.iter().any(
        |e| matches!(e, Event::NewRoute(r) if r.prefix.len == 64 && r.prefix.addr == ip("fe80::"))
    ));
    // the switch's own addresses (the local table's local routes)
    assert_eq!(route_of(&ev, "198.18.0.0/32").via, Via::Local);
    assert_eq!(route_of(&ev, "198.18.9.1/32").via, Via::Local);
    // table 100 is when asked for
    assert!(decode(&fixture("routes_v4.bin"), 100)
        .iter()
        .any(|e| matches!(e, Event::NewRoute(r) if r.prefix == pfx("198.18.10.0/24"))));
}

#[test]
fn recorded_neighbours_decode() {
    let ev = decode(&fixture("neighbours.bin"), 254);
    let n = |ifindex, a: &str, mac| {
        Event::NewNeigh(KNeigh {
            ifindex,
            addr: ip(a),
            mac,
        })
    };
    assert!(
        ev.contains(&n(ETH1, "198.18.0.1", Some([2, 0, 0, 0, 1, 1]))),
        "reachable"
    );
    assert!(
        ev.contains(&n(ETH2, "198.18.0.3", Some([2, 0, 0, 0, 2, 1]))),
        "permanent"
    );
    assert!(
        ev.contains(&n(ETH1, "fe80::1", Some([2, 0, 0, 0, 1, 1]))),
        "IPv6 link-local"
    );
    assert!(
        ev.contains(&n(ETH9, "198.18.9.7", None)),
        "incomplete: unresolved"
    );
    assert!(
        ev.contains(&n(ETH9, "198.18.9.8", None)),
        "failed: unresolved"
    );
    assert!(!ev
        .iter()
        .any(|e| matches!(e, Event::NewNeigh(k) if k.addr.is_multicast())));
}

/// Every truncation and every single-byte corruption of every recorded
/// datagram decodes without a panic; truncations inside a message are
/// reported malformed.
#[test]
fn malformed_messages_are_counted_never_a_crash() {
    for f in [
        "nexthops.bin",
        "neighbours.bin",
        "routes_v4.bin",
        "routes_v6.bin",
    ] {
        let b = fixture(f);
        for cut in 1..b.len() {
            let ev = decode(&b[..cut], 254);
            let first_len = u32::from_ne_bytes(b[0..4].try_into().unwrap()) as usize;
            if cut < first_len && cut >= 16 {
                assert!(
                    ev.iter().any(|e| matches!(e, Event::Malformed { .. })),
                    "{f} cut at {cut}"
                );
            }
        }
        for i in 0..b.len() {
            for x in [0u8, 0xff, 0x7f] {
                let mut c = b.clone();
                c[i] = x;
                let mut rib = Rib::default();
                for e in decode(&c, 254) {
                    rib.apply(&e);
                }
            }
        }
    }
    // a message whose attribute overruns it: malformed, counted
    let mut b = fixture("routes_v4.bin");
    let len = u32::from_ne_bytes(b[0..4].try_into().unwrap()) as usize;
    b[16 + 12] = 0xf0; // first rtattr's length
    let ev = decode(&b[..len], 254);
    assert!(
        matches!(ev[0], Event::Malformed { msg_type: 24, .. }),
        "{ev:?}"
    );
    let mut rib = Rib::default();
    rib.apply(&ev[0]);
    assert_eq!(rib.malformed, 1);
    // a header claiming more than the datagram
    let ev = decode(
        &[0xff, 0, 0, 0, 24, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2],
        254,
    );
    assert!(
        matches!(&ev[0], Event::Malformed { why, .. } if why.contains("length 255")),
        "{ev:?}"
    );
    // a nexthop message without its id
    assert!(dataplane_user::routing::decode::nexthop(&[2, 0, 0, 0, 0, 0, 0, 0]).is_err());
}

/// An MPLS route (AF_MPLS; this kernel has no MPLS module to record one,
/// so the recorded route's family byte is changed): unsupported, counted.
#[test]
fn mpls_route_is_unsupported() {
    let mut b = fixture("routes_v4.bin");
    let len = u32::from_ne_bytes(b[0..4].try_into().unwrap()) as usize;
    b[16] = 28; // rtm_family = AF_MPLS
    let ev = decode(&b[..len], 254);
    assert_eq!(ev, vec![Event::UnsupportedOther(Unsupported::Mpls)]);
    let mut rib = Rib::default();
    rib.apply(&ev[0]);
    assert_eq!(rib.unsupported_other, 1);
}
