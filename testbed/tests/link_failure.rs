//! Link failure: when an uplink goes down, the controller (watching
//! netlink) takes its next hop out of every group at once; only the flows
//! that were on it move, the others keep their uplink. When it comes back
//! it rejoins the group.

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use dataplane_common::build::{self, L2};
use testbed::controller::Controller;
use testbed::netns::{veth, Netns};
use testbed::raw::send_frames;

static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(testbed::dataplane_bin);

const UPLINKS: [&str; 3] = ["sw-u1", "sw-u2", "sw-u3"];

fn tx(s: &serde_json::Value) -> BTreeMap<String, u64> {
    s["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["counters"]["tx_tc_pkts[3]"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn live(s: &serde_json::Value) -> u64 {
    s["groups"][0]["live"].as_u64().unwrap()
}

/// Sends one frame of each flow and returns, per flow, the uplink it left on.
fn map_flows(sw: &Netns, h: &Netns, instance: &str, flows: &[Vec<u8>]) -> Vec<String> {
    let mut out = Vec::new();
    for f in flows {
        let before = tx(&stats(&sw.name, instance));
        send_frames(h, "eth0", std::slice::from_ref(f)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            let after = tx(&stats(&sw.name, instance));
            let moved: Vec<&str> = UPLINKS
                .iter()
                .copied()
                .filter(|u| after[*u] > before[*u])
                .collect();
            if moved.len() == 1 {
                out.push(moved[0].to_string());
                break;
            }
            assert!(
                moved.len() <= 1,
                "one frame left on several uplinks: {moved:?}"
            );
            assert!(
                Instant::now() < deadline,
                "flow not forwarded on any uplink"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    out
}

fn wait_live(sw: &Netns, instance: &str, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while live(&stats(&sw.name, instance)) != n {
        assert!(
            Instant::now() < deadline,
            "group never reached {n} live members"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The switch namespace with a host on sw-d0 and the three uplinks to one
/// sink namespace (s1..s3), named after `tag`.
fn switch_host_sink(tag: &str) -> (Netns, Netns, Netns) {
    let sw = Netns::create(&format!("{tag}sw")).unwrap();
    let h = Netns::create(&format!("{tag}h")).unwrap();
    let sink = Netns::create(&format!("{tag}sink")).unwrap();
    veth(
        &sw,
        "sw-d0",
        "02:00:00:00:0a:00",
        &h,
        "eth0",
        "02:00:00:00:0b:00",
    )
    .unwrap();
    for (i, u) in UPLINKS.iter().enumerate() {
        veth(
            &sw,
            u,
            &format!("02:00:00:00:0a:0{}", i + 1),
            &sink,
            &format!("s{}", i + 1),
            &format!("02:00:00:00:0c:0{}", i + 1),
        )
        .unwrap();
    }
    (sw, h, sink)
}

#[test]
fn only_the_failed_uplinks_flows_move_and_it_rejoins() {
    let (sw, h, sink) = switch_host_sink("lf");
    let instance = format!("lf{}", std::process::id());
    let cfg = format!(
        r#"
[switch]
name = "{instance}"
hash_seed = 11
[[port]]
name = "sw-d0"
[[port]]
name = "sw-u1"
[[port]]
name = "sw-u2"
[[port]]
name = "sw-u3"
[[nexthop]]
name = "n1"
port = "sw-u1"
mac = "02:00:00:00:0c:01"
[[nexthop]]
name = "n2"
port = "sw-u2"
mac = "02:00:00:00:0c:02"
[[nexthop]]
name = "n3"
port = "sw-u3"
mac = "02:00:00:00:0c:03"
[[group]]
name = "up"
mode = "hash"
members = [{{ nexthop = "n1" }}, {{ nexthop = "n2" }}, {{ nexthop = "n3" }}]
[[route]]
prefix = "198.18.2.0/24"
group = "up"
"#
    );
    let _ctl = Controller::start(
        std::path::Path::new(BIN.as_str()),
        &sw,
        &instance,
        &cfg,
        "switch",
    )
    .unwrap();
    wait_live(&sw, &instance, 3);

    // 24 RoCEv2 flows, one UDP source port, different QPs, DSCP 3 (AZURE: TC3)
    let l2 = L2::new([2, 0, 0, 0, 0x0a, 0], [2, 0, 0, 0, 0x0b, 0]);
    let ip = dataplane_common::build::Ip::v4([198, 18, 0, 1], [198, 18, 2, 9])
        .dscp(3)
        .ecn(2);
    let flows: Vec<Vec<u8>> = (0..24u32)
        .map(|qp| build::rocev2_frame(&l2, &ip, 49152, &write_first(0x100 + qp, 0), None, &[0; 64]))
        .collect();

    let before = map_flows(&sw, &h, &instance, &flows);
    for u in UPLINKS {
        assert!(
            before.iter().any(|x| x == u),
            "no flow on {u} before the failure: {before:?}"
        );
    }

    // u3 fails (its peer goes down: carrier lost)
    sink.ip(&["link", "set", "s3", "down"]).unwrap();
    wait_live(&sw, &instance, 2);
    let during = map_flows(&sw, &h, &instance, &flows);
    let mut moved = 0;
    for (i, (b, d)) in before.iter().zip(&during).enumerate() {
        assert_ne!(d, "sw-u3", "flow {i} still sent to the failed uplink");
        if b != "sw-u3" {
            assert_eq!(b, d, "flow {i} was on {b}, a live uplink, and moved to {d}");
        } else {
            moved += 1;
        }
    }
    assert!(moved > 0);

    // u3 comes back and rejoins; flows spread over three uplinks again
    sink.ip(&["link", "set", "s3", "up"]).unwrap();
    wait_live(&sw, &instance, 3);
    let after = map_flows(&sw, &h, &instance, &flows);
    assert!(
        after.iter().any(|x| x == "sw-u3"),
        "u3 carries nothing after it rejoined: {after:?}"
    );
    // the rejoin moves flows onto u3 only (it takes a fair share of
    // buckets from every other member, not necessarily its old ones): a
    // flow not on u3 now is where it was during the failure
    let to_u3 = rejoined(&during, &after, "sw-u3");
    let unchanged = before.iter().zip(&after).filter(|(a, b)| a == b).count();
    println!("flows before {before:?}\nduring {during:?}\nafter {after:?}\n{moved} moved on failure, {to_u3} onto u3 on the rejoin, {unchanged}/24 where they were before the failure");

    // A table rebuilt from scratch on a rejoin passes the check above too:
    // the first table was built from scratch and the failure moved u3's
    // flows only, so a fresh three-member table is the one before the
    // failure. Two uplinks down, then back one at a time, tell them apart:
    // a fresh two-member table and a fresh three-member one put flows on
    // u1 and u2 differently, so u3's rejoin would move flows between them.
    sink.ip(&["link", "set", "s2", "down"]).unwrap();
    wait_live(&sw, &instance, 2);
    sink.ip(&["link", "set", "s3", "down"]).unwrap();
    wait_live(&sw, &instance, 1);
    let alone = map_flows(&sw, &h, &instance, &flows);
    assert!(
        alone.iter().all(|x| x == "sw-u1"),
        "u1 is the only live uplink: {alone:?}"
    );
    sink.ip(&["link", "set", "s2", "up"]).unwrap();
    wait_live(&sw, &instance, 2);
    let two = map_flows(&sw, &h, &instance, &flows);
    let to_u2 = rejoined(&alone, &two, "sw-u2");
    sink.ip(&["link", "set", "s3", "up"]).unwrap();
    wait_live(&sw, &instance, 3);
    let three = map_flows(&sw, &h, &instance, &flows);
    let to_u3 = rejoined(&two, &three, "sw-u3");
    println!("u2 and u3 down, then back one at a time: u1 alone, then {two:?} ({to_u2} onto u2), then {three:?} ({to_u3} onto u3)");
}

/// Checks a rejoin of `up`: it carries flows again, and every flow not on
/// it is where it was before the rejoin (`prev`): the rejoin moves flows
/// onto `up` only. Returns how many flows it took.
fn rejoined(prev: &[String], now: &[String], up: &str) -> usize {
    assert!(
        now.iter().any(|x| x == up),
        "{up} carries nothing after it rejoined: {now:?}"
    );
    let mut taken = 0;
    for (i, (p, n)) in prev.iter().zip(now).enumerate() {
        if n == up {
            taken += 1;
        } else {
            assert_eq!(
                p, n,
                "flow {i} was on {p} before {up} rejoined and moved to {n}, not {up}, on the rejoin"
            );
        }
    }
    taken
}

/// `dataplane reload`: a changed route moves only that route's traffic; a
/// config that does not validate is refused before the controller is asked;
/// one that changes the ports is refused by the controller; neither changes
/// anything.
#[test]
fn reload_moves_only_the_changed_routes_traffic() {
    let (sw, h, _sink) = switch_host_sink("rl");
    let instance = format!("rl{}", std::process::id());
    let cfg = |route2: &str| {
        format!(
            "[switch]\nname = \"{instance}\"\n[[port]]\nname = \"sw-d0\"\n[[port]]\nname = \"sw-u1\"\n[[port]]\nname = \"sw-u2\"\n[[port]]\nname = \"sw-u3\"\n\
             [[nexthop]]\nname = \"n1\"\nport = \"sw-u1\"\nmac = \"02:00:00:00:0c:01\"\n\
             [[nexthop]]\nname = \"n2\"\nport = \"sw-u2\"\nmac = \"02:00:00:00:0c:02\"\n\
             [[nexthop]]\nname = \"n3\"\nport = \"sw-u3\"\nmac = \"02:00:00:00:0c:03\"\n\
             [[route]]\nprefix = \"198.18.2.0/24\"\nnexthop = \"{route2}\"\n\
             [[route]]\nprefix = \"198.18.3.0/24\"\nnexthop = \"n2\"\n"
        )
    };
    let ctl = Controller::start(
        std::path::Path::new(BIN.as_str()),
        &sw,
        &instance,
        &cfg("n1"),
        "switch",
    )
    .unwrap();
    let l2 = L2::new([2, 0, 0, 0, 0x0a, 0], [2, 0, 0, 0, 0x0b, 0]);
    let to = |d: u8| {
        let ip = dataplane_common::build::Ip::v4([198, 18, 0, 1], [198, 18, d, 9])
            .dscp(3)
            .ecn(2);
        build::rocev2_frame(&l2, &ip, 49152, &write_first(0x42, 0), None, &[0; 64])
    };
    let flows = vec![to(2), to(3)];
    assert_eq!(map_flows(&sw, &h, &instance, &flows), ["sw-u1", "sw-u2"]);

    // invalid: refused at once, with the field, the controller not asked
    let dir = std::env::temp_dir().join(format!("dp-rl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, cfg("n9")).unwrap();
    let o = Command::new(BIN.as_str())
        .args(["reload", "-c", bad.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success()
            && err.contains("route[0] (198.18.2.0/24).nexthop")
            && err.contains("n9"),
        "{err}"
    );
    assert_eq!(map_flows(&sw, &h, &instance, &flows), ["sw-u1", "sw-u2"]);

    // valid, but the ports change: the controller refuses, nothing changes
    let ports = dir.join("ports.toml");
    std::fs::write(&ports, cfg("n3").replace("\"sw-d0\"", "\"sw-dX\"")).unwrap();
    let o = Command::new(BIN.as_str())
        .args(["reload", "-c", ports.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        ctl.wait_for("reload: refused", Duration::from_secs(5), "switch")
            .is_some(),
        "the controller did not refuse a port change"
    );
    assert_eq!(map_flows(&sw, &h, &instance, &flows), ["sw-u1", "sw-u2"]);

    // a changed route: only its traffic moves
    let new = dir.join("new.toml");
    std::fs::write(&new, cfg("n3")).unwrap();
    let o = Command::new(BIN.as_str())
        .args(["reload", "-c", new.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let applied = ctl
        .wait_for("reload: applied", Duration::from_secs(5), "switch")
        .expect("no reload applied");
    // one route changed: exactly one entry written
    assert!(applied.contains(": 1 entries changed"), "{applied}");
    assert_eq!(map_flows(&sw, &h, &instance, &flows), ["sw-u3", "sw-u2"]);
    let _ = std::fs::remove_dir_all(&dir);
}
