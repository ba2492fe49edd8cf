//! A next hop whose neighbour is not resolved (`NH_UNRESOLVED`, what the
//! route sync writes until ARP/ND answers): the compiled `xdp_forward`
//! hands the frame to the kernel, counted `pass_unresolved`, frame
//! untouched; once resolved (the same entry rewritten) the frame is routed.
//! BPF_PROG_TEST_RUN on veth ports in a private namespace.

mod common;

use common::*;
use dataplane_common::names;
use dataplane_common::route::{NH_UNRESOLVED, NH_VALID};
use dataplane_user::tables::apply_config_text;
use testbed::testrun::{counter_snapshot, run_xdp, XDP_PASS, XDP_REDIRECT};

const CONFIG: &str = r#"
[switch]
name = "rtunres"

[[port]]
name = "p0"
mac = "02:00:00:00:00:02"

[[port]]
name = "p1"

[[nexthop]]
name = "n1"
port = "p1"
mac = "02:00:00:00:09:09"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "n1"
"#;

fn set_valid(bpf: &mut aya::Ebpf, valid: u8) {
    let mut m = dataplane_user::tables::forwarding::nexthops(bpf).unwrap();
    let mut nh = m.get(0).unwrap().expect("next hop 0");
    nh.valid = valid;
    m.set(0, Some(&nh)).unwrap();
}

#[test]
fn unresolved_next_hop_goes_to_the_kernel_counted() {
    let Some((_rig, mut bpf)) = rig("route_unresolved", "rtunres", &["p0", "p1"]) else {
        return;
    };
    let (plan, _) = apply_config_text(&mut bpf, CONFIG, "route_unresolved").unwrap();
    let p0 = plan.ports[0].config.port_id;
    let ifindex = dataplane_user::sys::ifindex("p0").unwrap();
    let frame = roce4(&l2(), 26, 7, 64);
    let count = |bpf: &aya::Ebpf, name: &str| {
        counter_snapshot(bpf, false).unwrap()[&format!("#{p0}:{name}")]
    };

    set_valid(&mut bpf, NH_UNRESOLVED);
    let before = (count(&bpf, "pass_unresolved"), count(&bpf, "rx_routed"));
    let r = run_xdp(&bpf, names::prog::XDP_FORWARD, &frame, ifindex, 1).unwrap();
    assert_eq!(r.action, XDP_PASS);
    assert_eq!(r.out, frame, "handed to the kernel untouched");
    assert_eq!(count(&bpf, "pass_unresolved"), before.0 + 1);
    assert_eq!(count(&bpf, "rx_routed"), before.1);

    set_valid(&mut bpf, NH_VALID);
    let r = run_xdp(&bpf, names::prog::XDP_FORWARD, &frame, ifindex, 1).unwrap();
    assert_eq!(r.action, XDP_REDIRECT);
    assert_eq!(
        &r.out[..6],
        &[2, 0, 0, 0, 9, 9],
        "rewritten to the neighbour"
    );
    assert_eq!(count(&bpf, "pass_unresolved"), before.0 + 1);
    assert_eq!(count(&bpf, "rx_routed"), before.1 + 1);
}
