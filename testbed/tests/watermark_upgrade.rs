//! `upgrade` from a build older than the pool watermark (its binary in
//! `DATAPLANE_OLD_BIN`) to this one: the new controller adopts the older
//! data plane's maps (`WATERMARKS` kept its layout: the pool's share took
//! the entry's 4 bytes of padding), keeps the watermark windows the older
//! controller stored (three kinds per entry), and from the program swap on
//! the pool's peak is recorded (the older program left it 0).
//!
//! Ignored by default: it needs a second binary. Run it with one built from
//! a commit before the pool watermark (e.g. 241f5de), in its own target
//! directory (the eBPF object is built by a nested cargo whose freshness
//! goes by file times: a shared target directory can embed the wrong
//! object):
//!
//!     git archive 241f5de | tar -x -C /tmp/old && cd /tmp/old &&
//!       CARGO_TARGET_DIR=/tmp/old-target cargo build -p dataplane-user --bin dataplane
//!     DATAPLANE_OLD_BIN=/tmp/old-target/debug/dataplane \
//!       cargo test -p testbed --test watermark_upgrade -- --ignored
mod common;
use common::*;
use dataplane_common::build::L2;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use testbed::raw::send_frames;

const SW_P0: [u8; 6] = [2, 0, 0, 0, 0x5b, 0];
const HOST: [u8; 6] = [2, 0, 0, 0, 0x5b, 0x10];

fn config(instance: &str) -> String {
    format!(
        r#"
[switch]
name = "{instance}"
[buffer]
pool_size = 1048576
dynamic_th = -7
[[port]]
name = "sw-p0"
mac = "02:00:00:00:5b:00"
speed = "100G"
pfc_enable = "3"
[[port]]
name = "sw-p1"
mac = "02:00:00:00:5b:01"
speed = "10M"
pfc_enable = "3"
[[nexthop]]
name = "n"
port = "sw-p1"
mac = "02:00:00:00:5b:11"
[[route]]
prefix = "198.18.1.0/24"
nexthop = "n"
"#
    )
}

#[test]
#[ignore = "needs an older build's binary in DATAPLANE_OLD_BIN"]
fn upgrade_from_older_build() {
    let old = std::env::var("DATAPLANE_OLD_BIN")
        .expect("DATAPLANE_OLD_BIN: the binary of a build before the pool watermark");
    let (sw, h, sink) = switch_with_ports("wmu", "sw-p0", "sw-p1", 0x5b);
    sink.exec(&["ethtool", "-K", "eth0", "gro", "on"]).unwrap();
    let instance = format!("wmu{}", std::process::id());
    let ctl = testbed::controller::Controller::start_with(
        std::path::Path::new(&old),
        &sw,
        &instance,
        &config(&instance),
        "old",
        &["--watermark-interval", "1"],
    )
    .unwrap();
    let ns = sw.name.as_str();
    let l2 = L2::new(SW_P0, HOST);
    let frames: Vec<Vec<u8>> = (0..80).map(|i| roce4(&l2, 3, 0x300 + i, 1000)).collect();
    assert_eq!(send_frames(&h, "eth0", &frames).unwrap(), 80);
    std::thread::sleep(Duration::from_millis(500));
    let q = show_json(ns, &instance, "queue watermark unicast");
    let q_peak = wm(&q, "sw-p1", "UC3");
    let sh = wm(
        &show_json(ns, &instance, "priority-group watermark shared"),
        "sw-p0",
        "PG3",
    );
    let p_old = pool_wm(ns, &instance, "buffer_pool watermark");
    println!("old build: queue {q_peak}, PG3 shared {sh}, pool {p_old}");
    assert!(q_peak > 20_000 && sh > 0);
    assert_eq!(p_old, 0, "an older program leaves the pool's share 0");
    // the old controller folds into its (3-kind) store
    std::thread::sleep(Duration::from_millis(2500));
    let store =
        std::fs::read_to_string(format!("/run/dataplane/{instance}/watermarks.json")).unwrap();
    let v: Value = serde_json::from_str(&store).unwrap();
    assert_eq!(
        v["user"][0].as_array().map(Vec::len),
        Some(3),
        "not an older controller's store: is DATAPLANE_OLD_BIN older than the pool watermark?"
    );
    // upgrade with this build
    let mut up = Command::new(testbed::dataplane_bin())
        .args([
            "--netns",
            ns,
            "upgrade",
            "-c",
            ctl.config_path().to_str().unwrap(),
            "--watermark-interval",
            "1",
            "--metrics",
            "off",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(up.stdout.take().unwrap()).lines();
    let mut adopted = false;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let l = lines.next().expect("upgrade exited").unwrap();
        eprintln!("[new] {l}");
        adopted |= l.starts_with("adopted");
        if l.starts_with("ready:") || Instant::now() > deadline {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    assert!(adopted, "upgrade did not adopt");
    std::thread::sleep(Duration::from_millis(1500));
    let q = show_json(ns, &instance, "queue watermark unicast");
    println!("after upgrade: queue {}", wm(&q, "sw-p1", "UC3"));
    assert_eq!(
        wm(&q, "sw-p1", "UC3"),
        q_peak,
        "the user window survived the upgrade"
    );
    assert_eq!(pool_wm(ns, &instance, "buffer_pool watermark"), p_old);
    assert_eq!(send_frames(&h, "eth0", &frames).unwrap(), 80);
    std::thread::sleep(Duration::from_millis(500));
    let p_new = pool_wm(ns, &instance, "buffer_pool watermark");
    let sh2 = wm(
        &show_json(ns, &instance, "priority-group watermark shared"),
        "sw-p0",
        "PG3",
    );
    println!(
        "after upgrade and a burst: pool {p_new}, PG3 shared (user window, both bursts) {sh2}"
    );
    assert!(p_new > 0, "the new program records the pool's peak");
    let _ = up.kill();
    let _ = up.wait();
    let _ = Command::new(testbed::dataplane_bin())
        .args(["--netns", ns, "down", "--instance", &instance])
        .status();
    drop(ctl);
}
