//! `show priority-group drop counters` on a running data plane: a lossy
//! burst into a 10 Mb/s egress port fills the shared buffer; the packets
//! the buffer model drops for it count on the ingress port's PG of their
//! TC, as many as the egress queue's shared-buffer-full and headroom drops
//! of that TC; `clear` starts them over.

mod common;

use std::time::Duration;

use common::*;
use dataplane_common::build::{self, Ip, L2};
use testbed::raw::send_frames;

const SW_P0: [u8; 6] = [2, 0, 0, 0, 0x5c, 0];
const HOST: [u8; 6] = [2, 0, 0, 0, 0x5c, 0x10];

fn config(instance: &str) -> String {
    format!(
        r#"
[switch]
name = "{instance}"

[buffer]
pool_size = 1048576

[[port]]
name = "pd-p0"
mac = "02:00:00:00:5c:00"
speed = "100G"

[[port]]
name = "pd-p1"
mac = "02:00:00:00:5c:01"
speed = "10M"

[[nexthop]]
name = "n"
port = "pd-p1"
mac = "02:00:00:00:5c:11"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "n"
"#
    )
}

fn run(ns: &str, args: &[&str]) -> String {
    dataplane_out(ns, args)
}

/// The PG cells of `port`'s row in pg-drop's table.
fn pg_row(text: &str, port: &str) -> Vec<String> {
    text.lines()
        .map(|l| l.split_whitespace().map(String::from).collect::<Vec<_>>())
        .find(|f| f.first().map(String::as_str) == Some(port))
        .unwrap_or_else(|| panic!("no {port} row in {text}"))[1..]
        .to_vec()
}

#[test]
fn pg_drops_count_on_the_ingress_port() {
    let (sw, h, sink) = switch_with_ports("spd", "pd-p0", "pd-p1", 0x5c);
    sink.exec(&["ethtool", "-K", "eth0", "gro", "on"]).unwrap();
    let instance = format!("spd{}", std::process::id());
    let ctl = start_switch(&sw, &instance, &config(&instance), &[]);
    let ns = sw.name.as_str();
    let mut failures = Vec::new();

    // 1500 lossy (DSCP 0) writes of ~1.1 KB: more than the 1 MB pool
    // holds, sent much faster than 10 Mb/s drains
    let l2 = L2::new(SW_P0, HOST);
    let ip = Ip::v4(V4_SRC, [198, 18, 1, 9]).dscp(0).ecn(0);
    let frames: Vec<Vec<u8>> = (0..1500)
        .map(|i| {
            build::rocev2_frame(
                &l2,
                &ip,
                49152,
                &write_first(0x500 + i, 100),
                Some(RETH),
                &[0xab; 1024],
            )
        })
        .collect();
    assert_eq!(send_frames(&h, "eth0", &frames).unwrap(), 1500);
    std::thread::sleep(Duration::from_millis(300));

    let text = run(
        ns,
        &[
            "show",
            "--instance",
            &instance,
            "priority-group",
            "drop",
            "counters",
        ],
    );
    println!("{text}");
    if !text.starts_with("Ingress PG dropped packets:\n") {
        failures.push(format!("title: {text}"));
    }
    // per TC, the egress queue's buffer drops (DSCP 0 maps to the TC the
    // default DSCP map gives it) and pd-p0's PG of that TC
    let p0 = pg_row(&text, "pd-p0");
    let s = stats(ns, &instance);
    let mut total = 0;
    assert_eq!(p0.len(), 8, "{text}");
    for (tc, cell) in p0.iter().enumerate() {
        let q = counter(&s, "pd-p1", &format!("drop_shared_full[{tc}]"))
            + counter(&s, "pd-p1", &format!("drop_headroom[{tc}]"));
        let pg: u64 = cell.parse().unwrap_or(u64::MAX);
        if pg != q {
            failures.push(format!(
                "pd-p0 PG{tc} dropped {pg}, the egress queue {tc}'s buffer drops {q}"
            ));
        }
        total += q;
    }
    if total == 0 {
        failures.push(format!("no buffer drop from the burst: {text}"));
    }
    if pg_row(&text, "pd-p1").iter().any(|c| c != "0") {
        failures.push(format!("pd-p1 (nothing came in) has drops: {text}"));
    }
    let out = run(
        ns,
        &[
            "clear",
            "--instance",
            &instance,
            "priority-group",
            "drop",
            "counters",
        ],
    );
    if out != "Cleared PG drop counter\n" {
        failures.push(format!("clear said {out:?}"));
    }
    let text = run(
        ns,
        &[
            "show",
            "--instance",
            &instance,
            "priority-group",
            "drop",
            "counters",
        ],
    );
    if pg_row(&text, "pd-p0").iter().any(|c| c != "0") {
        failures.push(format!("after clear: {text}"));
    }
    drop(ctl);
    finish("show_pg_drop", failures);
}
