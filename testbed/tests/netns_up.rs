//! The controller on real veth ports: `dataplane up` attaches to ports in a
//! namespace this test creates, real frames cross the wire from host
//! namespaces, `dataplane stats --json` reads the counters back, SIGTERM
//! detaches and unpins. Namespaces and the controller are removed on every
//! path (guards), also when an assertion fails.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use dataplane_common::build;
use testbed::netns::{veth, Netns};
use testbed::raw::send_frames;

static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(testbed::dataplane_bin);

/// Kills the controller if the test leaves early.
struct Controller(Option<Child>, Option<String>);

impl Drop for Controller {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
        // whatever happened, leave no data plane pinned behind
        if let Some(i) = &self.1 {
            let _ = Command::new(BIN.as_str())
                .args(["down", "--instance", i])
                .output();
        }
    }
}

fn dataplane(args: &[&str]) -> std::process::Output {
    Command::new(BIN.as_str())
        .args(args)
        .output()
        .expect("run dataplane")
}

fn config(instance: &str) -> String {
    format!(
        r#"
[switch]
name = "{instance}"

[dscp_to_tc_map.ROCE]
"26" = 3
"48" = 6

[[port]]
name = "sw-p0"
dscp_to_tc_map = "ROCE"
pfc_enable = "3"

[[port]]
name = "sw-p1"
trust = "dot1p"
pfc_enable = "3,4"
malformed = "drop"
"#
    )
}

fn has_xdp(ns: &Netns, dev: &str) -> bool {
    ns.exec(&["ip", "link", "show", dev])
        .unwrap()
        .contains("xdp")
}

#[test]
fn controller_counts_real_frames_on_veth_ports() {
    let sw = Netns::create("sw").unwrap();
    let h1 = Netns::create("h1").unwrap();
    let h2 = Netns::create("h2").unwrap();
    for ns in [&sw, &h1, &h2] {
        ns.disable_ipv6().unwrap();
    }
    veth(
        &sw,
        "sw-p0",
        "02:00:00:00:01:00",
        &h1,
        "h1-eth0",
        "02:00:00:00:00:01",
    )
    .unwrap();
    veth(
        &sw,
        "sw-p1",
        "02:00:00:00:01:01",
        &h2,
        "h2-eth0",
        "02:00:00:00:00:02",
    )
    .unwrap();

    let instance = format!("itest{}", std::process::id());
    let dir = std::env::temp_dir().join(format!("dp-itest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();

    // a config naming a missing interface is refused and attaches nothing
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, config(&instance).replace("sw-p1", "sw-p9")).unwrap();
    let o = dataplane(&["--netns", &sw.name, "up", "-c", bad.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "up with a missing interface succeeded");
    assert!(
        err.contains("port[1].name") && err.contains("sw-p9"),
        "error does not name the field: {err}"
    );
    assert!(!has_xdp(&sw, "sw-p0"), "a refused config attached to sw-p0");

    // an invalid value is refused before anything is touched
    let invalid = dir.join("invalid.toml");
    std::fs::write(
        &invalid,
        config(&instance).replace("pfc_enable = \"3\"", "pfc_enable = \"3,9\""),
    )
    .unwrap();
    let o = dataplane(&["--netns", &sw.name, "up", "-c", invalid.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(
        err.contains("port[0] (sw-p0).pfc_enable") && err.contains("0-7"),
        "unclear error: {err}"
    );
    assert!(!has_xdp(&sw, "sw-p0"));

    let good = dir.join("good.toml");
    std::fs::write(&good, config(&instance)).unwrap();
    let mut child = Command::new(BIN.as_str())
        .args(["--netns", &sw.name, "up", "-c", good.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut ctl = Controller(Some(child), Some(instance.clone()));
    let mut lines = BufReader::new(stdout).lines();
    // as testbed::controller: 30 s (the first `up` of a boot self-tests
    // the PFC path), scaled by DATAPLANE_TEST_SLOW
    let deadline = Instant::now() + testbed::slow::scaled(Duration::from_secs(30));
    loop {
        let line = lines
            .next()
            .expect("controller exited before ready")
            .unwrap();
        if line.starts_with("ready:") {
            break;
        }
        assert!(Instant::now() < deadline, "controller not ready in time");
    }
    assert!(has_xdp(&sw, "sw-p0") && has_xdp(&sw, "sw-p1"));

    // a second controller for the same instance is refused
    let o = dataplane(&["--netns", &sw.name, "up", "-c", good.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("already run"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    let before = stats(&sw.name, &instance);
    // host 1: 10 RoCEv2 writes (DSCP 26), 3 CNPs (DSCP 48), 2 PFC frames, 1
    // truncated RoCEv2 frame
    let l2 = build::L2::new([2, 0, 0, 0, 1, 0], [2, 0, 0, 0, 0, 1]);
    let mut f1: Vec<Vec<u8>> = (0..10).map(|i| roce4(&l2, 26, 0x100 + i, 512)).collect();
    f1.extend((0..3).map(|i| build::cnp_frame(&l2, &v4(48), 49152, 0x100 + i)));
    f1.push(build::pfc_frame(
        [2, 0, 0, 0, 0, 1],
        0x08,
        [0, 0, 0, 0xffff, 0, 0, 0, 0],
    ));
    f1.push(build::pfc_frame([2, 0, 0, 0, 0, 1], 0x08, [0; 8]));
    let mut short = roce4(&l2, 26, 0x1ff, 512);
    short.truncate(100);
    f1.push(short);
    // host 2: 5 tagged RoCEv2 frames with PCP 4, one truncated VLAN frame
    let l2b = build::L2::new([2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 0, 2]).vlan(4, 10);
    let mut f2: Vec<Vec<u8>> = (0..5).map(|i| roce4(&l2b, 0, 0x200 + i, 256)).collect();
    let mut cut_tag = roce4(&l2b, 0, 0x2ff, 256);
    cut_tag.truncate(16);
    f2.push(cut_tag);
    assert_eq!(send_frames(&h1, "h1-eth0", &f1).unwrap(), f1.len());
    assert_eq!(send_frames(&h2, "h2-eth0", &f2).unwrap(), f2.len());

    let want = [
        ("sw-p0", "rx_tc_pkts[3]", 10u64),
        ("sw-p0", "rx_tc_pkts[6]", 3),
        ("sw-p0", "rx_roce", 13),
        ("sw-p0", "rx_cnp", 3),
        ("sw-p0", "rx_lossless", 10),
        ("sw-p0", "rx_pfc[3]", 2),
        ("sw-p0", "malformed.ipv4_len_exceeds_frame", 1),
        ("sw-p0", "verdict_drop", 2),
        ("sw-p1", "rx_tc_pkts[4]", 5),
        ("sw-p1", "rx_lossless", 5),
        ("sw-p1", "malformed.vlan_truncated", 1),
        ("sw-p1", "verdict_drop", 1),
    ];
    let deadline = Instant::now() + Duration::from_secs(5);
    let after = loop {
        let s = stats(&sw.name, &instance);
        let done = want
            .iter()
            .all(|(p, n, v)| counter(&s, p, n) - counter(&before, p, n) >= *v);
        if done || Instant::now() > deadline {
            break s;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    for (p, n, v) in want {
        assert_eq!(counter(&after, p, n) - counter(&before, p, n), v, "{p} {n}");
    }
    // bytes of TC3 on p0: the ten 512-byte-payload frames exactly
    let tc3_bytes =
        counter(&after, "sw-p0", "rx_tc_bytes[3]") - counter(&before, "sw-p0", "rx_tc_bytes[3]");
    assert_eq!(
        tc3_bytes,
        f1[..10].iter().map(|f| f.len() as u64).sum::<u64>()
    );

    // the Prometheus endpoint (in the switch's namespace) agrees with stats
    let text = get_metrics(&sw);
    assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
    let metric = |m: &str| -> u64 {
        let line = text
            .lines()
            .find(|l| l.starts_with(m))
            .unwrap_or_else(|| panic!("no {m} in metrics"));
        line.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64
    };
    let now = stats(&sw.name, &instance);
    // the active PFC path: the data plane on this kernel, in both views
    assert_eq!(now["pfc_tx_path"], "dataplane", "stats --json pfc_tx_path");
    assert_eq!(
        metric(&format!(
            "dataplane_pfc_tx_path{{instance=\"{instance}\",path=\"dataplane\"}}"
        )),
        1
    );
    assert_eq!(
        metric(&format!(
            "dataplane_pfc_tx_path{{instance=\"{instance}\",path=\"userspace\"}}"
        )),
        0
    );
    assert_eq!(
        metric(&format!(
            "dataplane_rx_roce_total{{instance=\"{instance}\",port=\"sw-p0\"}}"
        )),
        counter(&now, "sw-p0", "rx_roce")
    );
    assert_eq!(
        metric(&format!(
            "dataplane_rx_pfc_total{{instance=\"{instance}\",port=\"sw-p0\",priority=\"3\"}}"
        )),
        counter(&now, "sw-p0", "rx_pfc[3]")
    );
    assert_eq!(
        metric(&format!("dataplane_malformed_total{{instance=\"{instance}\",port=\"sw-p1\",reason=\"vlan_truncated\"}}")),
        counter(&now, "sw-p1", "malformed.vlan_truncated")
    );
    assert!(text.contains("# TYPE dataplane_rx_tc_pkts_total counter"));

    // another instance whose metrics port is taken is refused before it
    // touches anything
    let other = dir.join("other.toml");
    std::fs::write(&other, config(&format!("{instance}b"))).unwrap();
    let o = dataplane(&["--netns", &sw.name, "up", "-c", other.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("--metrics 127.0.0.1:9464"),
        "{err}"
    );
    assert_eq!(
        counter(&stats(&sw.name, &instance), "sw-p0", "rx_roce"),
        counter(&now, "sw-p0", "rx_roce")
    );

    // the human table renders the same numbers
    let o = dataplane(&["--netns", &sw.name, "stats", "--instance", &instance]);
    let table = String::from_utf8_lossy(&o.stdout);
    assert!(
        table.contains("pfcstat") && table.contains("ipv4_len_exceeds_frame"),
        "{table}"
    );

    // SIGKILL: the controller dies, the data plane keeps counting
    let mut child = ctl.0.take().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        has_xdp(&sw, "sw-p0") && has_xdp(&sw, "sw-p1"),
        "programs detached when the controller died"
    );
    let before_kill = counter(&stats(&sw.name, &instance), "sw-p0", "rx_roce");
    assert_eq!(send_frames(&h1, "h1-eth0", &f1[..10]).unwrap(), 10);
    let deadline = Instant::now() + Duration::from_secs(5);
    while counter(&stats(&sw.name, &instance), "sw-p0", "rx_roce") < before_kill + 10 {
        assert!(
            Instant::now() < deadline,
            "frames not counted while the controller was dead"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    // a new controller adopts it: counters continue where they were
    let mut child = Command::new(BIN.as_str())
        .args(["--netns", &sw.name, "up", "-c", good.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut ctl = Controller(Some(child), Some(instance.clone()));
    let mut adopted = false;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        adopted |= line.starts_with("adopted");
        if line.starts_with("ready:") {
            break;
        }
    }
    assert!(
        adopted,
        "the second controller did not adopt the running data plane"
    );
    let kept = counter(&stats(&sw.name, &instance), "sw-p0", "rx_roce");
    assert!(
        kept >= before_kill + 10,
        "counters were reset on adoption: {kept} < {}",
        before_kill + 10
    );

    // SIGTERM stops the controller only; `down` is refused while it runs
    let o = dataplane(&["--netns", &sw.name, "down", "--instance", &instance]);
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("already run"));
    let mut child = ctl.0.take().unwrap();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert!(child.wait().unwrap().success());
    assert!(
        has_xdp(&sw, "sw-p0"),
        "SIGTERM detached the data plane; only `down` may"
    );

    // `down` detaches and unpins
    let o = dataplane(&["--netns", &sw.name, "down", "--instance", &instance]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        !has_xdp(&sw, "sw-p0") && !has_xdp(&sw, "sw-p1"),
        "programs still attached after down"
    );
    assert!(
        !std::path::Path::new(&format!("/sys/fs/bpf/dataplane/{instance}")).exists(),
        "pins left behind"
    );
    let o = dataplane(&["--netns", &sw.name, "stats", "--instance", &instance]);
    assert!(!o.status.success());
    let _ = std::fs::remove_dir_all(&dir);
}
