//! The host tables' words (`HOST_ROUTES`): a packet skips an empty host
//! table's lookup, so the words must say "in use" whenever a host route is
//! there. A configuration with a /32 (and a /128) sets them and the host
//! route wins over its covering prefix; reloaded without them, the words
//! fall to 0 and the covering prefix routes the same destination; host
//! routes found with the words at 0 get them set.
//! BPF_PROG_TEST_RUN on veth ports in a private namespace.

mod common;

use aya::maps::Array;
use common::*;
use dataplane_common::names;
use dataplane_common::route::{HOST_ROUTES_V4, HOST_ROUTES_V6};
use dataplane_user::tables::apply_config_text;
use testbed::testrun::{run_xdp, XDP_REDIRECT};

const NET_MAC: [u8; 6] = [2, 0, 0, 0, 9, 1];
const HOST_MAC: [u8; 6] = [2, 0, 0, 0, 9, 2];

fn config(host_routes: bool) -> String {
    let hosts = if host_routes {
        "[[route]]\nprefix = \"198.18.1.1/32\"\nnexthop = \"host\"\n\n\
         [[route]]\nprefix = \"2001:db8:0:1::1/128\"\nnexthop = \"host\"\n"
    } else {
        ""
    };
    format!(
        r#"
[switch]
name = "hostrt"

[[port]]
name = "p0"
mac = "02:00:00:00:00:02"

[[port]]
name = "p1"

[[nexthop]]
name = "net"
port = "p1"
mac = "02:00:00:00:09:01"

[[nexthop]]
name = "host"
port = "p1"
mac = "02:00:00:00:09:02"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "net"

[[route]]
prefix = "2001:db8:0:1::/64"
nexthop = "net"

{hosts}"#
    )
}

fn words(bpf: &aya::Ebpf) -> [u32; 2] {
    let a: Array<_, u32> = Array::try_from(bpf.map(names::map::HOST_ROUTES).unwrap()).unwrap();
    [
        a.get(&HOST_ROUTES_V4, 0).unwrap(),
        a.get(&HOST_ROUTES_V6, 0).unwrap(),
    ]
}

#[test]
fn host_tables_are_skipped_only_when_empty() {
    let Some((_rig, mut bpf)) = rig("host_routes", "hostrt", &["p0", "p1"]) else {
        return;
    };
    let ifindex = dataplane_user::sys::ifindex("p0").unwrap();
    let frames = [roce4(&l2(), 26, 7, 64), roce6(&l2(), 26, 7, 64)];
    let next_hop_mac = |bpf: &aya::Ebpf, frame: &[u8]| {
        let r = run_xdp(bpf, names::prog::XDP_FORWARD, frame, ifindex, 1).unwrap();
        assert_eq!(r.action, XDP_REDIRECT);
        <[u8; 6]>::try_from(&r.out[..6]).unwrap()
    };
    for (round, with_hosts) in [(1, true), (2, false), (3, true)] {
        apply_config_text(&mut bpf, &config(with_hosts), "host_routes").unwrap();
        let want = if with_hosts { [1, 1] } else { [0, 0] };
        assert_eq!(words(&bpf), want, "round {round}: HOST_ROUTES");
        for f in &frames {
            let mac = if with_hosts { HOST_MAC } else { NET_MAC };
            assert_eq!(next_hop_mac(&bpf, f), mac, "round {round}: next hop");
        }
    }
    // host routes adopted with the words at 0 (pins of a build without
    // them): a packet skips them (the words are what the program obeys),
    // then the same configuration again writes no route and still sets
    // the words
    {
        let mut a: Array<_, u32> =
            Array::try_from(bpf.map_mut(names::map::HOST_ROUTES).unwrap()).unwrap();
        a.set(HOST_ROUTES_V4, 0, 0).unwrap();
        a.set(HOST_ROUTES_V6, 0, 0).unwrap();
    }
    for f in &frames {
        assert_eq!(
            next_hop_mac(&bpf, f),
            NET_MAC,
            "words at 0: host table skipped"
        );
    }
    apply_config_text(&mut bpf, &config(true), "host_routes").unwrap();
    assert_eq!(words(&bpf), [1, 1], "adopted: HOST_ROUTES");
    for f in &frames {
        assert_eq!(next_hop_mac(&bpf, f), HOST_MAC, "adopted: next hop");
    }
}
