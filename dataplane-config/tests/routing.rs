//! `[routing]`: routes from the kernel; every error names its field.

use dataplane_config::Config;

const BASE: &str = "[switch]\nname = \"r\"\n[[port]]\nname = \"eth1\"\n";

fn check(extra: &str) -> Result<dataplane_config::Plan, String> {
    Config::parse(&format!("{BASE}{extra}"), "t")
        .map_err(|e| e.to_string())?
        .validate("t")
        .map_err(|e| e.to_string())
}

#[test]
fn kernel_routing_turns_forwarding_on_with_its_policy() {
    let p = check("[routing]\nsource = \"kernel\"\ndefault_mode = \"flowlet\"\nflowlet_timeout_us = 50\npolicy = [{ prefix = \"198.18.0.0/16\", mode = \"bandwidth\" }]\n").unwrap();
    let r = p.routing.as_ref().unwrap();
    assert_eq!(
        (r.table, r.default_mode, r.flowlet_timeout_ns),
        (254, 1, 50_000)
    );
    assert_eq!((r.max_routes_v4, r.max_routes_v6), (131072, 32768));
    assert_eq!(r.policy, vec![("198.18.0.0".parse().unwrap(), 16, 2)]);
    assert!(p.forwarding());
    assert_ne!(
        p.ports[0].config.flags & dataplane_common::maps::PORT_F_FORWARD,
        0
    );
    // static: no routing, no forwarding without routes
    let p = check("[routing]\nsource = \"static\"\n").unwrap();
    assert!(p.routing.is_none() && !p.forwarding());
}

#[test]
fn bad_routing_sections_name_their_fields() {
    let e = check("[routing]\nsource = \"bgp\"\ntable = 255\ndefault_mode = \"ecmp\"\nflowlet_timeout_us = 0\nmax_routes_v4 = 5000000\nmax_routes_v6 = 0\n[[routing.policy]]\nprefix = \"198.18.0.1/16\"\nmode = \"hash\"\n[[routing.policy]]\nprefix = \"2001:db8::/32\"\nmode = \"fast\"\n").unwrap_err();
    for want in [
        "routing.source: expected kernel or static, got \"bgp\"",
        "routing.table: expected a kernel table id",
        "routing.default_mode: expected one of hash, flowlet, bandwidth, spray, place, got \"ecmp\"",
        "routing.flowlet_timeout_us: expected 1-4000000 microseconds, got 0",
        "routing.max_routes_v4: expected 1-4194304 route table entries, got 5000000",
        "routing.max_routes_v6: expected 1-1048576",
        "routing.policy[0].prefix: expected an IPv4 or IPv6 prefix",
        "routing.policy[1].mode: expected one of",
    ] {
        assert!(e.contains(want), "missing {want:?} in:\n{e}");
    }
    let e = check("[routing]\nfoo = 1\n").unwrap_err();
    assert!(e.contains("unknown field `foo`"), "{e}");
}
