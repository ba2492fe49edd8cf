//! Frames and helpers shared by the integration tests.
#![allow(dead_code)]

mod capture;
mod rig;
mod switch;
mod trim;
mod watermarks;

// each test binary uses some of them
#[allow(unused_imports)]
pub use {
    capture::{next_frame, tshark_capture},
    rig::rig,
    switch::switch_with_ports,
    trim::trim_config,
    watermarks::{pool_wm, show_json, wm},
};

use dataplane_common::build::{self, Ip, Reth, L2};
use dataplane_common::wire::bth::{self, Bth};

pub const MAC_HOST: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
pub const MAC_SW: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
pub const V4_SRC: [u8; 4] = [198, 18, 0, 1];
pub const V4_DST: [u8; 4] = [198, 18, 1, 1];
pub const V6_SRC: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
pub const V6_DST: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1];

pub fn l2() -> L2 {
    L2::new(MAC_SW, MAC_HOST)
}

pub fn v4(dscp: u8) -> Ip {
    Ip::v4(V4_SRC, V4_DST).dscp(dscp).ecn(2)
}

pub fn v6(dscp: u8) -> Ip {
    Ip::v6(V6_SRC, V6_DST).dscp(dscp).ecn(2)
}

pub fn write_first(qp: u32, psn: u32) -> Bth {
    Bth {
        opcode: bth::OP_WRITE_FIRST,
        pkey: 0xffff,
        dest_qp: qp,
        psn,
        ack_req: false,
        ..Bth::default()
    }
}

pub fn write_middle(qp: u32, psn: u32) -> Bth {
    Bth {
        opcode: bth::OP_WRITE_MIDDLE,
        pkey: 0xffff,
        dest_qp: qp,
        psn,
        ..Bth::default()
    }
}

pub const RETH: Reth = Reth {
    va: 0x7f00_0000_1000,
    rkey: 0x1234,
    len: 4096,
};

/// A RoCEv2 RDMA WRITE first packet over IPv4 with `payload` bytes.
pub fn roce4(l2: &L2, dscp: u8, qp: u32, payload: usize) -> Vec<u8> {
    build::rocev2_frame(
        l2,
        &v4(dscp),
        49152,
        &write_first(qp, 100),
        Some(RETH),
        &vec![0xab; payload],
    )
}

/// A RoCEv2 RDMA WRITE middle packet over IPv6.
pub fn roce6(l2: &L2, dscp: u8, qp: u32, payload: usize) -> Vec<u8> {
    build::rocev2_frame(
        l2,
        &v6(dscp),
        49153,
        &write_middle(qp, 101),
        None,
        &vec![0xcd; payload],
    )
}

/// A RoCEv2 frame of exactly `total` bytes (WRITE middle, IPv4).
pub fn roce4_sized(total: usize) -> Vec<u8> {
    // 14 eth + 20 ip + 8 udp + 12 bth + 4 icrc = 58 bytes of headers
    let payload = total.saturating_sub(58);
    let f = build::rocev2_frame(
        &l2(),
        &v4(26),
        49152,
        &write_middle(0x11, 7),
        None,
        &vec![0x5a; payload],
    );
    assert_eq!(f.len(), total.max(60));
    f
}

/// Writes frames as a pcap file (linktype Ethernet) for tshark / scapy.
pub fn write_pcap(path: &std::path::Path, frames: &[Vec<u8>]) -> std::io::Result<()> {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    b.extend_from_slice(&0i32.to_le_bytes());
    b.extend_from_slice(&0u32.to_le_bytes());
    b.extend_from_slice(&65535u32.to_le_bytes());
    b.extend_from_slice(&1u32.to_le_bytes());
    for (i, f) in frames.iter().enumerate() {
        b.extend_from_slice(&(i as u32).to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(&(f.len() as u32).to_le_bytes());
        b.extend_from_slice(f);
    }
    std::fs::write(path, b)
}

/// `dataplane stats --json` of a running instance (panics with its error).
pub fn stats(ns: &str, instance: &str) -> serde_json::Value {
    testbed::controller::stats_json(
        std::path::Path::new(&testbed::dataplane_bin()),
        ns,
        instance,
    )
    .expect("dataplane stats")
}

/// A port's counter in a stats snapshot (panics naming what is missing).
pub fn counter(s: &serde_json::Value, port: &str, name: &str) -> u64 {
    testbed::controller::port_counter(s, port, name)
        .unwrap_or_else(|| panic!("no counter {name} on port {port} in stats: {s}"))
}

/// Sets every flag when dropped, so a panic inside a thread scope stops the
/// threads the scope then waits for (instead of hanging on them).
pub struct StopOnDrop<'a>(pub Vec<&'a std::sync::atomic::AtomicBool>);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        for f in &self.0 {
            f.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Fails test `name` with every failed assertion listed, or says they all
/// hold.
pub fn finish(name: &str, failures: Vec<String>) {
    if !failures.is_empty() {
        panic!(
            "{name}: {} assertion(s) failed:\n  - {}",
            failures.len(),
            failures.join("\n  - ")
        );
    }
    println!("{name}: all assertions hold");
}

/// GET /metrics from a controller's default endpoint (127.0.0.1:9464) in
/// namespace `ns`.
pub fn get_metrics(ns: &testbed::netns::Netns) -> String {
    std::thread::scope(|sc| {
        sc.spawn(|| {
            use std::io::{Read, Write};
            let _in = ns.enter().unwrap();
            let mut c = std::net::TcpStream::connect("127.0.0.1:9464").expect("metrics endpoint");
            c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut body = String::new();
            c.read_to_string(&mut body).unwrap();
            body
        })
        .join()
        .unwrap()
    })
}

/// `dataplane <args>` (the binary the lab tests run) in namespace `ns`:
/// success, stdout, stderr.
pub fn dataplane_status(ns: &str, args: &[&str]) -> (bool, String, String) {
    let o = std::process::Command::new(testbed::dataplane_bin())
        .args(["--netns", ns])
        .args(args)
        .output()
        .expect("run dataplane");
    (
        o.status.success(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// `dataplane <args>` in namespace `ns`: its stdout (panics with its
/// stderr on failure).
pub fn dataplane_out(ns: &str, args: &[&str]) -> String {
    let (ok, out, err) = dataplane_status(ns, args);
    assert!(ok, "dataplane {args:?}: {err}");
    out
}

/// The controller of the lab tests' binary, started as switch `instance`
/// in namespace `sw` with config text `config` and `extra` arguments.
pub fn start_switch(
    sw: &testbed::netns::Netns,
    instance: &str,
    config: &str,
    extra: &[&str],
) -> testbed::controller::Controller {
    testbed::controller::Controller::start_with(
        std::path::Path::new(&testbed::dataplane_bin()),
        sw,
        instance,
        config,
        "switch",
        extra,
    )
    .expect("the switch's controller starts")
}

/// A RoCEv2 RDMA WRITE middle (QP 0x11, PSN 7, 64 bytes) from 198.18.0.1
/// to `dst`, DSCP 3 (lossless), ECT(0), as host 02:00:00:00:00:01 sends
/// it to the switch port whose MAC is `port_mac`.
pub fn lossless_write_to(port_mac: [u8; 6], dst: [u8; 4]) -> Vec<u8> {
    let l2 = L2::new(port_mac, [2, 0, 0, 0, 0, 1]);
    let ip = Ip::v4([198, 18, 0, 1], dst).dscp(3).ecn(2);
    build::rocev2_frame(
        &l2,
        &ip,
        49152,
        &Bth::request(bth::OP_WRITE_MIDDLE, 0x11, 7),
        None,
        &[0; 64],
    )
}

/// Namespace `name` with ports b0 and b1, IPv6 off, whose veth peers take
/// redirected frames (GRO on: veth needs NAPI, from GRO or XDP).
pub fn two_port_ns(name: &str) -> testbed::netns::Netns {
    let ns = testbed::netns::Netns::create(name).unwrap();
    ns.disable_ipv6().unwrap();
    ns.add_ports(&["b0", "b1"]).unwrap();
    for p in ["b0-peer", "b1-peer"] {
        testbed::netns::exec(&ns.name, &["ethtool", "-K", p, "gro", "on"]).unwrap();
    }
    ns
}
