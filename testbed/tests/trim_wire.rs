//! Packet trimming end to end: a controller on veth ports with a tiny
//! shared pool; a 300-byte UET packet (IPv4 and IPv6) that the buffer model
//! cannot admit to a trimming queue leaves as a 128-byte packet with the
//! trim DSCP, which tshark on the receiving host decodes with valid
//! lengths and checksums; `dataplane stats` counts it under SONiC's names.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::wire::uet;
use testbed::controller::Controller;
use testbed::raw::send_frames;

static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(testbed::dataplane_bin);

fn config(instance: &str) -> String {
    trim_config(
        instance,
        [("tr-p0", None), ("tr-p1", None)],
        ("sink", "02:00:00:00:1e:11"),
    )
}

#[test]
fn uet_packets_leave_trimmed_with_valid_headers() {
    let (sw, h, sink) = switch_with_ports("tr", "tr-p0", "tr-p1", 0x1e);
    let instance = format!("tr{}", std::process::id());
    let _ctl = Controller::start(
        std::path::Path::new(BIN.as_str()),
        &sw,
        &instance,
        &config(&instance),
        "switch",
    )
    .unwrap();

    let tshark = tshark_capture(
        &sink.name,
        "eth0",
        "udp port 4793",
        2,
        &["ip.check_checksum:TRUE", "udp.check_checksum:TRUE"],
        &[
            "frame.len",
            "ip.dsfield.dscp",
            "ipv6.tclass.dscp",
            "ip.len",
            "ipv6.plen",
            "ip.checksum.status",
            "udp.length",
            "udp.checksum",
            "udp.checksum.status",
            "udp.srcport",
        ],
    );

    let l2 = L2::new([2, 0, 0, 0, 0x1e, 0], [2, 0, 0, 0, 0x1e, 0x10]);
    let pds = uet::Pds::request(uet::TYPE_RUD_REQ, 3, uet::FLAG_AR, 5, 7, 9);
    let body = |n: usize| {
        let mut b = pds.to_vec();
        b.resize(n, 0xab);
        b
    };
    // DSCP 10: class 1 by the AZURE map, a trimming queue on tr-p1
    let v4 = Ip::v4([198, 18, 0, 1], [198, 18, 1, 9]).dscp(10).ecn(2);
    let v6dst = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9];
    let v6 = Ip::v6(V6_SRC, v6dst).dscp(10).ecn(2);
    let frames = [
        build::udp_frame(&l2, &v4, 0x1111, uet::UET_PORT, &body(300 - 42)),
        build::udp_frame(&l2, &v6, 0x2222, uet::UET_PORT, &body(300 - 62)),
    ];
    for f in &frames {
        send_frames(&h, "eth0", std::slice::from_ref(f)).unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = wait_or_kill(tshark, Duration::from_secs(10));
    let rows: Vec<Vec<String>> = out
        .lines()
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect();
    assert_eq!(rows.len(), 2, "tshark saw: {out}");
    // IPv4: 128 bytes, DSCP 48, total 114, header checksum good, UDP 94
    // with checksum 0 (none)
    let r = &rows[0];
    assert_eq!(
        (
            &r[0][..],
            &r[1][..],
            &r[3][..],
            &r[5][..],
            &r[6][..],
            &r[9][..]
        ),
        ("128", "48", "114", "1", "94", "4369"),
        "{r:?}"
    );
    assert_eq!(r[7], "0x0000", "{r:?}");
    // IPv6: 128 bytes, DSCP 48, payload 74, UDP 74 with a good checksum
    let r = &rows[1];
    assert_eq!(
        (
            &r[0][..],
            &r[2][..],
            &r[4][..],
            &r[6][..],
            &r[8][..],
            &r[9][..]
        ),
        ("128", "48", "74", "74", "1", "8738"),
        "{r:?}"
    );

    let s = stats(&sw.name, &instance);
    assert_eq!(counter(&s, "tr-p1", "trim[1]"), 2);
    assert_eq!(counter(&s, "tr-p1", "trim_sent[1]"), 2);
    assert_eq!(counter(&s, "tr-p1", "trim_drop[1]"), 0);
    assert_eq!(counter(&s, "tr-p1", "tx_tc_pkts[6]"), 2);
    assert_eq!(counter(&s, "tr-p1", "drop_shared_full[1]"), 0);
    // the Prometheus endpoint (in the switch's namespace)
    let text = get_metrics(&sw);
    for (m, v) in [("trim", 2), ("trim_sent", 2), ("trim_drop", 0)] {
        let want =
            format!("dataplane_{m}_total{{instance=\"{instance}\",port=\"tr-p1\",tc=\"1\"}} {v}");
        assert!(text.lines().any(|l| l == want), "no {want:?} in metrics");
    }
    // the show command's table, with SONiC's column names
    let o = Command::new(BIN.as_str())
        .args(["--netns", &sw.name, "stats", "--instance", &instance])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("Trim/pkts")
            && text.contains("TrimSent/pkts")
            && text.contains("TrimDrop/pkts"),
        "{text}"
    );
    let row = text
        .lines()
        .find(|l| l.starts_with("tr-p1") && l.contains("UC1"))
        .unwrap_or_else(|| panic!("no trimming row for tr-p1 UC1: {text}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cols, vec!["tr-p1", "UC1", "2", "2", "0"], "{row}");
}

/// tshark's output once it has its packets, or what it has after `t`.
fn wait_or_kill(mut child: std::process::Child, t: Duration) -> String {
    let deadline = Instant::now() + t;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}
