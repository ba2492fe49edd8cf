//! Silent egress loss made visible: frames the switch redirects to a port
//! whose veth peer has neither an XDP program nor GRO are dropped by the
//! kernel at transmit; the program counted them as sent (`tx_tc_pkts`).
//! The port's `tx_xdp_xmit_err` (stats and metrics) counts exactly the
//! frames that never arrived, and the controller warns naming the port.
//! With GRO back on the peer, every frame arrives and the counter stays.

use std::io::{Read, Write};
use std::process::Command;
use std::time::{Duration, Instant};

use dataplane_common::build::{self, Ip, L2};
use dataplane_common::wire::bth::Bth;
use testbed::controller::{port_counter, stats_json, sum_counters};
use testbed::netns::{veth, Netns};
use testbed::raw::send_frames;

fn rx(ns: &Netns) -> u64 {
    let out = ns
        .exec(&["ip", "-s", "-j", "link", "show", "eth0"])
        .unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v[0]["stats64"]["rx"]["packets"].as_u64().unwrap()
}

/// A RoCEv2 frame from h1 to the switch's sw-p0, routed to h2.
fn h1_to_h2(ip: Ip, payload: usize) -> Vec<u8> {
    let l2 = L2::new([2, 0, 0, 0, 0x0f, 0], [2, 0, 0, 0, 0x0f, 0x10]);
    let bth = Bth::request(0x2a, 0x42, 1);
    build::rocev2_frame(&l2, &ip, 49152, &bth, None, &vec![0; payload])
}

struct Down(String, std::process::Child);
impl Drop for Down {
    fn drop(&mut self) {
        let _ = self.1.kill();
        let _ = self.1.wait();
        let _ = Command::new(testbed::dataplane_bin())
            .args(["down", "--instance", &self.0])
            .output();
    }
}

#[test]
fn frames_the_driver_fails_to_transmit_are_counted_and_warned() {
    let bin = testbed::dataplane_bin();
    // the receiving host: no XDP program, no GRO
    let s = switch("heg", |h2| {
        h2.exec(&["ethtool", "-K", "eth0", "gro", "off"]).unwrap();
    });
    let (sw, h1, h2, instance, log) = (&s.sw, &s.h1, &s.h2, &s.instance, &s.log);
    // its first egress check: `up` warned before any frame that the port
    // cannot take redirected frames
    std::thread::sleep(Duration::from_millis(1500));
    let text = std::fs::read_to_string(log).unwrap();
    assert!(
        text.contains("egress check: sw-p1 cannot take redirected frames"),
        "no warning at up:\n{text}"
    );
    assert!(!text.contains("egress check: sw-p0"), "{text}");

    let frame = h1_to_h2(Ip::v4([198, 18, 0, 1], [198, 18, 1, 1]).dscp(3).ecn(2), 256);
    let send = |n: usize| {
        for _ in 0..n / 100 {
            assert_eq!(
                send_frames(h1, "eth0", &vec![frame.clone(); 100]).unwrap(),
                100
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let s0 = stats_json(bin.as_ref(), &sw.name, instance).unwrap();
    let err0 = port_counter(&s0, "sw-p1", "tx_xdp_xmit_err")
        .unwrap_or_else(|| panic!("veth ports expose tx_xdp_xmit_err: {s0:#}"));
    let (rx0, tx0) = (rx(h2), sum_counters(&s0, "tx_tc_pkts["));
    send(4000);
    std::thread::sleep(Duration::from_millis(300));
    let s1 = stats_json(bin.as_ref(), &sw.name, instance).unwrap();
    let (got, tx) = (rx(h2) - rx0, sum_counters(&s1, "tx_tc_pkts[") - tx0);
    let errs = port_counter(&s1, "sw-p1", "tx_xdp_xmit_err").unwrap() - err0;
    eprintln!("GRO off: program sent {tx}, host received {got}, tx_xdp_xmit_err {errs}");
    assert_eq!(tx, 4000, "the program did not route every frame");
    assert!(
        got < 4000,
        "the peer without GRO received everything: nothing to detect"
    );
    assert_eq!(
        errs,
        tx - got,
        "tx_xdp_xmit_err does not count the frames that vanished"
    );

    // the controller says so, naming the port, and metrics carry it
    std::thread::sleep(Duration::from_millis(1500));
    let text = std::fs::read_to_string(log).unwrap();
    assert!(
        text.contains("egress loss:") && text.contains("redirected to sw-p1 were not transmitted"),
        "no warning:\n{text}"
    );
    let metrics = {
        let _in = sw.enter().unwrap();
        let mut c = std::net::TcpStream::connect("127.0.0.1:9464").unwrap();
        c.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let mut m = String::new();
        c.read_to_string(&mut m).unwrap();
        m
    };
    let line = format!(
        "dataplane_tx_xdp_xmit_err_total{{instance=\"{instance}\",port=\"sw-p1\"}} {}",
        err0 + errs
    );
    assert!(metrics.contains(&line), "{line} not in the metrics");

    // GRO on: the controller notices, every frame arrives, no transmit error
    h2.exec(&["ethtool", "-K", "eth0", "gro", "on"]).unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let text = std::fs::read_to_string(log).unwrap();
    assert!(
        text.contains("egress check: sw-p1 takes redirected frames again"),
        "{text}"
    );
    let (rx1, e1) = (
        rx(h2),
        port_counter(&s1, "sw-p1", "tx_xdp_xmit_err").unwrap(),
    );
    send(2000);
    std::thread::sleep(Duration::from_millis(300));
    let s2 = stats_json(bin.as_ref(), &sw.name, instance).unwrap();
    assert_eq!(rx(h2) - rx1, 2000);
    assert_eq!(port_counter(&s2, "sw-p1", "tx_xdp_xmit_err").unwrap(), e1);
}

/// One switch (namespace `sw`, ports sw-p0 to h1 and sw-p1 to h2, a route
/// to h2, metrics on 127.0.0.1:9464 inside) under instance `<tag><pid>`,
/// running until the guard drops; `before_up` sees h2 before the
/// controller starts. The controller's output goes to `log`.
struct Switch {
    // stopped before its namespaces go
    _up: Down,
    sw: Netns,
    h1: Netns,
    h2: Netns,
    instance: String,
    log: std::path::PathBuf,
}

fn switch(tag: &str, before_up: impl FnOnce(&Netns)) -> Switch {
    let sw = Netns::create(&format!("{tag}sw")).unwrap();
    let h1 = Netns::create(&format!("{tag}h1")).unwrap();
    let h2 = Netns::create(&format!("{tag}h2")).unwrap();
    for ns in [&sw, &h1, &h2] {
        ns.disable_ipv6().unwrap();
    }
    veth(
        &sw,
        "sw-p0",
        "02:00:00:00:0f:00",
        &h1,
        "eth0",
        "02:00:00:00:0f:10",
    )
    .unwrap();
    veth(
        &sw,
        "sw-p1",
        "02:00:00:00:0f:01",
        &h2,
        "eth0",
        "02:00:00:00:0f:11",
    )
    .unwrap();
    before_up(&h2);
    let instance = format!("{tag}{}", std::process::id());
    let cfg = std::env::temp_dir().join(format!("{instance}.toml"));
    std::fs::write(
        &cfg,
        format!(
            "[switch]\nname = \"{instance}\"\n[[port]]\nname = \"sw-p0\"\n[[port]]\nname = \"sw-p1\"\n\
             [[nexthop]]\nname = \"h2\"\nport = \"sw-p1\"\nmac = \"02:00:00:00:0f:11\"\n\
             [[route]]\nprefix = \"198.18.1.0/24\"\nnexthop = \"h2\"\n"
        ),
    )
    .unwrap();
    let log = std::env::temp_dir().join(format!("{instance}.log"));
    let logf = std::fs::File::create(&log).unwrap();
    let child = Command::new(testbed::dataplane_bin())
        .args(["--netns", &sw.name, "up", "-c", cfg.to_str().unwrap()])
        .args(["--metrics", "127.0.0.1:9464"])
        .stdout(logf.try_clone().unwrap())
        .stderr(logf)
        .spawn()
        .unwrap();
    let up = Down(instance.clone(), child);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !stats_json(testbed::dataplane_bin().as_ref(), &sw.name, &instance)
        .is_ok_and(|s| s["ports"].as_array().is_some_and(|p| p.len() == 2))
    {
        assert!(Instant::now() < deadline, "{instance} did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_file(&cfg);
    Switch {
        _up: up,
        sw,
        h1,
        h2,
        instance,
        log,
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.log);
    }
}

impl Switch {
    /// sw-p1's tx_xdp_xmit_err and every port's routed frames.
    fn counters(&self) -> (u64, u64) {
        let s = stats_json(
            testbed::dataplane_bin().as_ref(),
            &self.sw.name,
            &self.instance,
        )
        .unwrap();
        (
            port_counter(&s, "sw-p1", "tx_xdp_xmit_err").unwrap(),
            sum_counters(&s, "tx_tc_pkts["),
        )
    }

    fn ifindex(&self) -> u64 {
        let out = self
            .sw
            .exec(&["ip", "-j", "link", "show", "sw-p1"])
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v[0]["ifindex"].as_u64().unwrap()
    }
}

/// Drops at the devmap's flush (`xdp_devmap_xmit`: here -ENXIO, the veth
/// peer is down) carry no map id, only ifindexes, which repeat across
/// namespaces: two identical switches have their sw-p1 at the same
/// ifindex. Frames B loses are counted by B alone, not by A.
#[test]
fn flush_drops_count_only_in_their_own_namespace() {
    let a = switch("fzxa", |_| {});
    let b = switch("fzxb", |_| {});
    assert_eq!(
        a.ifindex(),
        b.ifindex(),
        "the two switches' sw-p1 differ in ifindex: nothing to tell apart"
    );
    // B's receiving host goes down with GRO on: its veth still offers XDP
    // transmit, so the redirect is queued and the flush fails
    b.h2.ip(&["link", "set", "eth0", "down"]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let ((a_err0, _), (b_err0, b_tx0)) = (a.counters(), b.counters());
    let frame = h1_to_h2(Ip::v4([198, 18, 0, 1], [198, 18, 1, 1]), 64);
    for _ in 0..5 {
        assert_eq!(
            send_frames(&b.h1, "eth0", &vec![frame.clone(); 100]).unwrap(),
            100
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(Duration::from_millis(300));
    let ((a_err, _), (b_err, b_tx)) = (a.counters(), b.counters());
    let tx = b_tx - b_tx0;
    eprintln!(
        "B routed {tx}; tx_xdp_xmit_err: B +{}, A +{}",
        b_err - b_err0,
        a_err - a_err0
    );
    assert_eq!(tx, 500, "B did not route every frame");
    assert_eq!(b_err - b_err0, 500, "B's flush drops are not counted");
    assert_eq!(
        a_err, a_err0,
        "A counted B's flush drops (same ifindex, other namespace)"
    );
}
