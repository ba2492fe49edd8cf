//! Routes from FRR through the kernel into the data plane, on a 2-spine,
//! 2-leaf fabric (one host per leaf) running zebra + bgpd in every switch
//! namespace (eBGP unnumbered): every switch's data-plane routes equal its
//! kernel FIB (and FRR's installed routes); traffic flows end to end and is
//! routed by the data plane; an uplink pulled leaves the groups at once
//! (local repair), BGP's withdraw follows and the table converges to one
//! path; restored, the member returns. Skips (saying so) without FRR.
//! Convergence times are bench figures (`dataplane-routebench`), not
//! asserted here.

use std::time::{Duration, Instant};

use testbed::fabric::Fabric;
use testbed::frr::{fib_difference, wait_converged};
use testbed::topo::{ipv4_str, ipv6_str, Routing, Shape, Topology};

fn skip() -> Option<String> {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    testbed::frr::missing()
}

/// 20 UDP datagrams from host `from` to host 1 at `to`: all but those
/// sent while the first neighbours resolve must arrive.
fn ping(fabric: &Fabric, from: usize, to: &str) -> bool {
    let got = testbed::frr::udp_probe(
        fabric.host_ns(from),
        fabric.host_ns(1),
        to.parse().unwrap(),
        20,
        Duration::from_millis(10),
    )
    .unwrap();
    let ok = got >= 17;
    if !ok {
        eprintln!("{got} of 20 datagrams to {to} arrived");
        diagnose(fabric);
    }
    ok
}

/// What each namespace's kernel and data plane hold (printed on failure).
fn diagnose(fabric: &Fabric) {
    for (i, s) in fabric.switches.iter().enumerate() {
        let ns = fabric.switch_ns(i);
        for c in [
            &["ip", "route"][..],
            &["ip", "-6", "route"],
            &["ip", "neigh"],
            &["ip", "nexthop"],
        ] {
            eprintln!(
                "[{}] {}:\n{}",
                s.node.name,
                c.join(" "),
                ns.exec(c).unwrap_or_else(|e| e.to_string())
            );
        }
        eprintln!(
            "[{}] {}",
            s.node.name,
            fabric.frr[i].vtysh("show bgp summary").unwrap_or_default()
        );
        eprintln!(
            "[{}] {}",
            s.node.name,
            fabric.frr[i]
                .vtysh("show ip route 198.18.2.1/32")
                .unwrap_or_default()
        );
        eprintln!(
            "[{}] {}",
            s.node.name,
            fabric.frr[i]
                .vtysh("show bgp ipv4 unicast 198.18.2.1/32")
                .unwrap_or_default()
        );
        eprintln!(
            "[{}] {}",
            s.node.name,
            fabric.frr[i].vtysh("show interface s0").unwrap_or_default()
        );
        eprintln!(
            "[{}] {}",
            s.node.name,
            ns.exec(&["ip", "addr"]).unwrap_or_default()
        );
        let st = &fabric.stats().unwrap()[i];
        for p in st["ports"].as_array().into_iter().flatten() {
            let c = &p["counters"];
            let nz: Vec<String> = c
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, v)| v.as_u64().unwrap_or(0) > 0)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            eprintln!("[{}] port {}: {}", s.node.name, p["name"], nz.join(" "));
        }
        let o = std::process::Command::new(fabric.bin())
            .args(["routes", "--instance", &s.instance])
            .output()
            .unwrap();
        eprintln!(
            "[{}] dataplane routes:\n{}",
            s.node.name,
            String::from_utf8_lossy(&o.stdout)
        );
    }
    for i in 0..fabric.topo.hosts().len() {
        let ns = fabric.host_ns(i);
        eprintln!(
            "[h{i}] {}\n{}",
            ns.exec(&["ip", "route"]).unwrap_or_default(),
            ns.exec(&["ip", "neigh"]).unwrap_or_default()
        );
        eprintln!(
            "[h{i}] {}\n{}",
            ns.exec(&["ip", "-s", "link", "show", "eth0"])
                .unwrap_or_default(),
            ns.exec(&["cat", "/proc/net/snmp"]).unwrap_or_default()
        );
    }
}

fn counter(s: &serde_json::Value, port: &str, name: &str) -> u64 {
    testbed::controller::port_counter(s, port, name).unwrap_or(0)
}

#[test]
fn frr_bgp_routes_reach_the_data_plane_and_follow_a_link_failure() {
    if let Some(why) = skip() {
        eprintln!("SKIPPED routing_frr: {why}");
        return;
    }
    let topo = Topology {
        shape: Shape::LeafSpine {
            spines: 2,
            leaves: 2,
            hosts_per_leaf: 1,
        },
        routing: Routing::Bgp,
        lb_mode: "hash".into(),
        ..Topology::default()
    };
    let bin = testbed::dataplane_bin();
    let fabric = Fabric::build(topo, std::path::Path::new(&bin), "rt").unwrap();
    // 1. converged: sessions up, both spines' paths, data plane = kernel FIB
    let t = wait_converged(&fabric, 2, Duration::from_secs(40)).unwrap();
    eprintln!("converged {t:?} after the fabric was built");
    let hosts = fabric.topo.hosts();
    let h1_v4 = ipv4_str(hosts[1].ipv4);
    let h1_v6 = ipv6_str(hosts[1].ipv6);
    // the leaves' data planes route the remote host over a 2-member group
    let leaf0 = fabric
        .switches
        .iter()
        .position(|s| s.node.name == "leaf0")
        .unwrap();
    let (dp, listing) =
        testbed::frr::dataplane_routes(fabric.bin(), &fabric.switches[leaf0].instance).unwrap();
    assert_eq!(dp[&format!("{h1_v4}/32")].len(), 2, "{listing}");
    assert_eq!(dp[&format!("{h1_v6}/128")].len(), 2, "{listing}");
    assert!(
        dp[&format!("{h1_v6}/128")]
            .iter()
            .all(|(gw, _)| gw.starts_with("fe80:")),
        "IPv6 link-local next hops"
    );
    // 2. traffic end to end, routed by the data planes
    let before = fabric.stats().unwrap();
    assert!(ping(&fabric, 0, &h1_v4), "IPv4 h0 -> h1");
    assert!(ping(&fabric, 0, &h1_v6), "IPv6 h0 -> h1");
    let after = fabric.stats().unwrap();
    let routed = |i: usize, port: &str| {
        counter(&after[i], port, "rx_routed") - counter(&before[i], port, "rx_routed")
    };
    assert!(
        routed(leaf0, "h0") > 0,
        "leaf0 routed nothing from h0: {}",
        after[leaf0]
    );
    let spines_routed: u64 = fabric
        .switches
        .iter()
        .enumerate()
        .filter(|(_, s)| s.node.name.starts_with("spine"))
        .map(|(i, _)| routed(i, "l0"))
        .sum();
    assert!(spines_routed > 0, "no spine routed h0's traffic");
    // 3. an uplink pulled: local repair first, then BGP's withdraw
    fabric.drain_log(leaf0, "leaf0");
    fabric
        .switch_ns(leaf0)
        .ip(&["link", "set", "s0", "down"])
        .unwrap();
    let t0 = Instant::now();
    // the controller rewrote the groups at once (their member on s0 not
    // live), before reading the kernel's tables again
    let repaired = loop {
        let lines = fabric.drain_log(leaf0, "leaf0");
        if let Some(l) = lines.iter().find(|l| l.contains("(local repair)")) {
            break l.clone();
        }
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "no local repair logged by leaf0"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let n: usize = repaired
        .split("link change: ")
        .nth(1)
        .and_then(|x| x.split(' ').next())
        .and_then(|x| x.parse().ok())
        .unwrap();
    assert!(n >= 1, "{repaired}");
    eprintln!("local repair: {repaired}");
    wait_converged(&fabric, 1, Duration::from_secs(20)).unwrap();
    let (dp, listing) =
        testbed::frr::dataplane_routes(fabric.bin(), &fabric.switches[leaf0].instance).unwrap();
    assert!(
        dp[&format!("{h1_v4}/32")]
            .iter()
            .all(|(_, dev)| dev == "s1"),
        "{listing}"
    );
    assert!(ping(&fabric, 0, &h1_v4), "IPv4 h0 -> h1 with s0 down");
    // 4. restored: the member returns
    fabric
        .switch_ns(leaf0)
        .ip(&["link", "set", "s0", "up"])
        .unwrap();
    if let Err(e) = wait_converged(&fabric, 2, Duration::from_secs(30)) {
        diagnose(&fabric);
        panic!("{e:#}");
    }
    for i in 0..fabric.switches.len() {
        assert_eq!(fib_difference(&fabric, i).unwrap(), None);
    }
    assert!(ping(&fabric, 0, &h1_v6), "IPv6 h0 -> h1 after the restore");
    drop(fabric);
}
