//! Hitless operation: a steady RoCEv2 stream through a routing switch loses
//! nothing while its controller is SIGKILLed, restarted (adopting the
//! pinned data plane), and upgraded (another controller takes over and
//! swaps the programs on the pinned links).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::*;
use dataplane_common::build::{self, L2};
use testbed::netns::{veth, Netns};
use testbed::raw::send_frames;

static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(testbed::dataplane_bin);

/// Kills every controller it started and detaches the instance at the end.
struct Guard(Vec<Child>, String);

impl Drop for Guard {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = Command::new(BIN.as_str())
            .args(["down", "--instance", &self.1])
            .output();
    }
}

/// Starts `dataplane <cmd> -c <cfg>` in `ns` and waits for `ready:`;
/// returns the child and whether it adopted a running data plane.
fn start(ns: &Netns, cmd: &str, cfg: &std::path::Path) -> (Child, bool) {
    let mut child = Command::new(BIN.as_str())
        .args([
            "--netns",
            &ns.name,
            cmd,
            "-c",
            cfg.to_str().unwrap(),
            "--metrics",
            "off",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let mut lines = BufReader::new(out).lines();
    let mut adopted = false;
    loop {
        let l = lines
            .next()
            .expect("controller exited before ready")
            .unwrap();
        adopted |= l.starts_with("adopted");
        if l.starts_with("ready:") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    (child, adopted)
}

fn rx_packets(ns: &Netns, dev: &str) -> u64 {
    let out = ns.exec(&["ip", "-s", "-j", "link", "show", dev]).unwrap();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v[0]["stats64"]["rx"]["packets"].as_u64().unwrap()
}

#[test]
fn no_frame_lost_across_kill_restart_and_upgrade() {
    let sw = Netns::create("hlsw").unwrap();
    let h1 = Netns::create("hlh1").unwrap();
    let h2 = Netns::create("hlh2").unwrap();
    for ns in [&sw, &h1, &h2] {
        ns.disable_ipv6().unwrap();
    }
    veth(
        &sw,
        "sw-p0",
        "02:00:00:00:0d:00",
        &h1,
        "eth0",
        "02:00:00:00:0d:10",
    )
    .unwrap();
    veth(
        &sw,
        "sw-p1",
        "02:00:00:00:0d:01",
        &h2,
        "eth0",
        "02:00:00:00:0d:11",
    )
    .unwrap();
    let instance = format!("hl{}", std::process::id());
    let mut guard = Guard(Vec::new(), instance.clone());
    let cfg = std::env::temp_dir().join(format!("dp-hl-{}.toml", std::process::id()));
    std::fs::write(
        &cfg,
        format!(
            "[switch]\nname = \"{instance}\"\n[buffer]\npool_size = 16777216\n[[port]]\nname = \"sw-p0\"\n[[port]]\nname = \"sw-p1\"\n\
             [[nexthop]]\nname = \"h2\"\nport = \"sw-p1\"\nmac = \"02:00:00:00:0d:11\"\n\
             [[route]]\nprefix = \"198.18.1.0/24\"\nnexthop = \"h2\"\n"
        ),
    )
    .unwrap();
    let (c, adopted) = start(&sw, "up", &cfg);
    guard.0.push(c);
    assert!(!adopted);

    // a steady stream, 5000 frames/s for ~3 s
    let l2 = L2::new([2, 0, 0, 0, 0x0d, 0], [2, 0, 0, 0, 0x0d, 0x10]);
    let ip = dataplane_common::build::Ip::v4([198, 18, 0, 1], [198, 18, 1, 1])
        .dscp(3)
        .ecn(2);
    let frame = build::rocev2_frame(&l2, &ip, 49152, &write_middle(0x42, 1), None, &[0; 512]);
    let rx0 = rx_packets(&h2, "eth0");
    let sent = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            let batch = vec![frame.clone(); 50];
            while !stop.load(Ordering::Relaxed) {
                let n = send_frames(&h1, "eth0", &batch).unwrap();
                sent.fetch_add(n as u64, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        std::thread::sleep(Duration::from_millis(500));
        // SIGKILL: nothing detaches
        let mut c = guard.0.pop().unwrap();
        c.kill().unwrap();
        c.wait().unwrap();
        std::thread::sleep(Duration::from_millis(500));
        // a new controller adopts it
        let (c, adopted) = start(&sw, "up", &cfg);
        guard.0.push(c);
        assert!(adopted, "restart did not adopt");
        std::thread::sleep(Duration::from_millis(500));
        // upgrade: another controller takes over and swaps the programs
        let (c, adopted) = start(&sw, "upgrade", &cfg);
        guard.0.push(c);
        assert!(adopted, "upgrade did not adopt");
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, Ordering::Relaxed);
    });
    let sent = sent.load(Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = rx_packets(&h2, "eth0") - rx0;
    while got < sent && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
        got = rx_packets(&h2, "eth0") - rx0;
    }
    println!("sent {sent}, received {got} across SIGKILL, restart and upgrade");
    assert!(sent > 1000);
    assert_eq!(got, sent, "frames lost across the restarts");
    let _ = std::fs::remove_file(&cfg);
}
