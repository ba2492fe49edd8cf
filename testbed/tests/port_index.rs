//! The packet path's port lookup (`PORT_INDEX` by ifindex, `PORTS` by
//! port id, `PORT_CONFIG` for ifindexes past `PORT_INDEX_ENTRIES`): a port
//! with a small ifindex and one with an ifindex past the array are both
//! routed with their own configuration; a port removed from the
//! configuration is no longer one (its frames go to the kernel, counted as
//! an unknown port), and its id given to another interface reaches only
//! that one. BPF_PROG_TEST_RUN on veth ports in a private namespace.

mod common;

use aya::maps::Array;
use common::*;
use dataplane_common::maps::{GlobalCounters, PORT_INDEX_ENTRIES};
use dataplane_common::names;
use dataplane_user::tables::apply_config_text;
use testbed::testrun::{run_xdp, XDP_PASS, XDP_REDIRECT};

/// Past the array: found through PORT_CONFIG.
const BIG_IFINDEX: u32 = PORT_INDEX_ENTRIES + 904;

fn config(ports: &[&str]) -> String {
    let mut c = String::from("[switch]\nname = \"portidx\"\n\n");
    for p in ports {
        c.push_str(&format!(
            "[[port]]\nname = \"{p}\"\nmac = \"02:00:00:00:00:02\"\n\n"
        ));
    }
    c.push_str(&format!(
        "[[nexthop]]\nname = \"out\"\nport = \"{}\"\nmac = \"02:00:00:00:09:01\"\n\n\
         [[route]]\nprefix = \"198.18.1.0/24\"\nnexthop = \"out\"\n",
        ports[ports.len() - 1]
    ));
    c
}

fn unknown_ports(bpf: &aya::Ebpf) -> u64 {
    let a: aya::maps::PerCpuArray<_, GlobalCounters> =
        aya::maps::PerCpuArray::try_from(bpf.map(names::map::GLOBAL_COUNTERS).unwrap()).unwrap();
    a.get(&0, 0).unwrap().iter().map(|g| g.unknown_port).sum()
}

#[test]
fn ports_are_found_below_and_past_the_index_array() {
    let Some((bed, mut bpf)) = rig("port_index", "portidx", &["p0", "p1", "p2"]) else {
        return;
    };
    let big = BIG_IFINDEX.to_string();
    bed.ns
        .ip(&[
            "link", "add", "big", "index", &big, "type", "veth", "peer", "name", "big-peer",
        ])
        .unwrap();
    bed.ns.ip(&["link", "set", "big", "up"]).unwrap();
    bed.ns.ip(&["link", "set", "big-peer", "up"]).unwrap();
    let ifx = |n: &str| dataplane_user::sys::ifindex(n).unwrap();
    assert_eq!(ifx("big"), BIG_IFINDEX);
    assert!(ifx("p0") < PORT_INDEX_ENTRIES);
    let frame = roce4(&l2(), 26, 7, 64);
    let action = |bpf: &aya::Ebpf, ifindex: u32| {
        run_xdp(bpf, names::prog::XDP_FORWARD, &frame, ifindex, 1)
            .unwrap()
            .action
    };
    // p0 (small ifindex) and big (past the array) are ports: routed
    apply_config_text(&mut bpf, &config(&["p0", "big", "p1"]), "port_index").unwrap();
    assert_eq!(action(&bpf, ifx("p0")), XDP_REDIRECT, "p0");
    assert_eq!(
        action(&bpf, BIG_IFINDEX),
        XDP_REDIRECT,
        "big (PORT_CONFIG path)"
    );
    let index: Array<_, u32> = Array::try_from(bpf.map(names::map::PORT_INDEX).unwrap()).unwrap();
    assert_eq!(index.get(&ifx("p0"), 0).unwrap(), 1, "p0 is port 0");
    // p0 leaves; p2 takes port id 0: p0's frames are no port's, p2's and
    // big's are routed
    let before = unknown_ports(&bpf);
    apply_config_text(&mut bpf, &config(&["p2", "big", "p1"]), "port_index").unwrap();
    assert_eq!(action(&bpf, ifx("p0")), XDP_PASS, "p0 after it left");
    assert_eq!(
        unknown_ports(&bpf),
        before + 1,
        "p0's frame counted as an unknown port"
    );
    assert_eq!(action(&bpf, ifx("p2")), XDP_REDIRECT, "p2 with p0's old id");
    assert_eq!(action(&bpf, BIG_IFINDEX), XDP_REDIRECT, "big");
    let index: Array<_, u32> = Array::try_from(bpf.map(names::map::PORT_INDEX).unwrap()).unwrap();
    assert_eq!(index.get(&ifx("p0"), 0).unwrap(), 0, "p0 left PORT_INDEX");
}
