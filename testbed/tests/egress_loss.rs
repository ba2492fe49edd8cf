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
    let sw = Netns::create("hegsw").unwrap();
    let h1 = Netns::create("hegh1").unwrap();
    let h2 = Netns::create("hegh2").unwrap();
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
    // the receiving host: no XDP program, no GRO
    h2.exec(&["ethtool", "-K", "eth0", "gro", "off"]).unwrap();
    let instance = format!("hegress{}", std::process::id());
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
    let child = Command::new(&bin)
        .args([
            "--netns",
            &sw.name,
            "up",
            "-c",
            cfg.to_str().unwrap(),
            "--metrics",
            "127.0.0.1:9464",
        ])
        .stdout(logf.try_clone().unwrap())
        .stderr(logf)
        .spawn()
        .unwrap();
    let _guard = Down(instance.clone(), child);
    let deadline = Instant::now() + Duration::from_secs(20);
    let ready = || {
        stats_json(bin.as_ref(), &sw.name, &instance)
            .is_ok_and(|s| s["ports"].as_array().is_some_and(|p| p.len() == 2))
    };
    while !ready() {
        assert!(Instant::now() < deadline, "the controller did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500)); // its first egress check
                                                     // `up` warned before any frame: the port cannot take redirected frames
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("egress check: sw-p1 cannot take redirected frames"),
        "no warning at up:\n{text}"
    );
    assert!(!text.contains("egress check: sw-p0"), "{text}");

    let l2 = L2::new([2, 0, 0, 0, 0x0f, 0], [2, 0, 0, 0, 0x0f, 0x10]);
    let ip = Ip::v4([198, 18, 0, 1], [198, 18, 1, 1]).dscp(3).ecn(2);
    let frame = build::rocev2_frame(
        &l2,
        &ip,
        49152,
        &Bth::request(0x2a, 0x42, 1),
        None,
        &[0; 256],
    );
    let send = |n: usize| {
        for _ in 0..n / 100 {
            assert_eq!(
                send_frames(&h1, "eth0", &vec![frame.clone(); 100]).unwrap(),
                100
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    let s0 = stats_json(bin.as_ref(), &sw.name, &instance).unwrap();
    let err0 = port_counter(&s0, "sw-p1", "tx_xdp_xmit_err")
        .unwrap_or_else(|| panic!("veth ports expose tx_xdp_xmit_err: {s0:#}"));
    let (rx0, tx0) = (rx(&h2), sum_counters(&s0, "tx_tc_pkts["));
    send(4000);
    std::thread::sleep(Duration::from_millis(300));
    let s1 = stats_json(bin.as_ref(), &sw.name, &instance).unwrap();
    let (got, tx) = (rx(&h2) - rx0, sum_counters(&s1, "tx_tc_pkts[") - tx0);
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
    let text = std::fs::read_to_string(&log).unwrap();
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
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("egress check: sw-p1 takes redirected frames again"),
        "{text}"
    );
    let (rx1, e1) = (
        rx(&h2),
        port_counter(&s1, "sw-p1", "tx_xdp_xmit_err").unwrap(),
    );
    send(2000);
    std::thread::sleep(Duration::from_millis(300));
    let s2 = stats_json(bin.as_ref(), &sw.name, &instance).unwrap();
    assert_eq!(rx(&h2) - rx1, 2000);
    assert_eq!(port_counter(&s2, "sw-p1", "tx_xdp_xmit_err").unwrap(), e1);
    let _ = std::fs::remove_file(&cfg);
    let _ = std::fs::remove_file(&log);
}
