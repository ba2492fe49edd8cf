//! `show interfaces counters` and `show pfc counters --history` on a
//! running data plane: frames routed through the switch count in RX_OK of
//! the ingress port and TX_OK of the egress port (veth counts the frames
//! the data plane redirects), frames without a route in RX_DRP (the
//! kernel's drops plus the data plane's); STATE follows the link; the
//! rates see a stream; `clear` and `-p` restart what is counted. Two
//! PFC XOFFs with a gap between them are two pause runs: two transitions,
//! the second's length as the recent pause.

mod common;

use std::time::{Duration, Instant};

use common::*;
use dataplane_common::build::{self, pfc_frame, Ip, L2};
use serde_json::Value;
use testbed::netns::Netns;
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

[[port]]
name = "si-p0"
mac = "02:00:00:00:5b:00"
speed = "100G"
pfc_enable = "3"

[[port]]
name = "si-p1"
mac = "02:00:00:00:5b:01"
speed = "100G"
pfc_enable = "3"

[[nexthop]]
name = "n"
port = "si-p1"
mac = "02:00:00:00:5b:11"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "n"
"#
    )
}

/// `dataplane show --instance I <words> [flags]`.
fn run(ns: &str, args: &[&str]) -> String {
    dataplane_out(ns, args)
}

fn run_status(ns: &str, args: &[&str]) -> (bool, String, String) {
    dataplane_status(ns, args)
}

fn show(ns: &str, instance: &str, words: &str, flags: &[&str]) -> String {
    let mut args = vec!["show", "--instance", instance];
    args.extend(flags);
    args.extend(words.split(' '));
    run(ns, &args)
}

/// portstat's JSON (after the lines that precede it).
fn json_of(text: &str) -> Value {
    let start = text
        .find('{')
        .unwrap_or_else(|| panic!("no JSON in {text}"));
    serde_json::from_str(&text[start..]).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A portstat number ("1,234").
fn n(v: &Value) -> u64 {
    v.as_str()
        .and_then(|s| s.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("not a portstat number: {v}"))
}

/// The kernel's stats64 of `dev` in `ns` (`ip -s -s -j link`).
fn kernel(ns: &Netns, dev: &str) -> Value {
    let out = ns
        .exec(&["ip", "-s", "-s", "-j", "link", "show", dev])
        .unwrap();
    let v: Value = serde_json::from_str(&out).unwrap();
    v[0]["stats64"].clone()
}

/// `n` RoCEv2 writes of TC3 (DSCP 3) from the host to `dst`.
fn frames(n: u32, dst: [u8; 4]) -> Vec<Vec<u8>> {
    let l2 = L2::new(SW_P0, HOST);
    let ip = Ip::v4(V4_SRC, dst).dscp(3).ecn(2);
    (0..n)
        .map(|i| {
            build::rocev2_frame(
                &l2,
                &ip,
                49152,
                &write_first(0x400 + i, 100),
                Some(RETH),
                &[0xab; 200],
            )
        })
        .collect()
}

#[test]
fn interface_counters_and_pause_history() {
    let (sw, h, sink) = switch_with_ports("sif", "si-p0", "si-p1", 0x5b);
    sink.exec(&["ethtool", "-K", "eth0", "gro", "on"]).unwrap();
    let instance = format!("sif{}", std::process::id());
    let ctl = start_switch(&sw, &instance, &config(&instance), &[]);
    let ns = sw.name.as_str();
    let mut failures = Vec::new();

    let before = json_of(&show(ns, &instance, "interfaces counters errors", &["-j"]));
    let k0 = kernel(&sw, "si-p0");
    // 50 routed to the sink, 7 to a network without a route
    assert_eq!(
        send_frames(&h, "eth0", &frames(50, [198, 18, 1, 9])).unwrap(),
        50
    );
    assert_eq!(
        send_frames(&h, "eth0", &frames(7, [198, 19, 77, 9])).unwrap(),
        7
    );
    std::thread::sleep(Duration::from_millis(300));

    let text = show(ns, &instance, "interfaces counters", &[]);
    println!("{text}");
    let header: Vec<&str> = text.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "IFACE", "STATE", "RX_OK", "RX_BPS", "RX_UTIL", "RX_ERR", "RX_DRP", "RX_OVR", "TX_OK",
            "TX_BPS", "TX_UTIL", "TX_ERR", "TX_DRP", "TX_OVR"
        ]
    );
    let c = json_of(&show(ns, &instance, "interfaces counters", &["-j"]));
    let (p0, p1) = (&c["si-p0"], &c["si-p1"]);
    for p in [p0, p1] {
        if p["STATE"] != "U" {
            failures.push(format!("STATE {} with both links up: {c}", p["STATE"]));
        }
    }
    // RX_OK: the kernel's rx_packets of the port, which counts the frames
    // the data plane took
    let k1 = kernel(&sw, "si-p0");
    let rx_ok = n(&p0["RX_OK"]);
    if rx_ok < 57 || rx_ok > k1["rx"]["packets"].as_u64().unwrap() {
        failures.push(format!(
            "si-p0 RX_OK {rx_ok}: not the 57 sent (kernel {})",
            k1["rx"]["packets"]
        ));
    }
    // TX_OK of the egress port: veth counts redirected frames
    if n(&p1["TX_OK"]) < 50 {
        failures.push(format!("si-p1 TX_OK {} < 50 routed: {c}", p1["TX_OK"]));
    }
    // RX_DRP: the kernel's drops and the data plane's: 7 without a route
    let kdrop = |k: &Value| {
        k["rx"]["dropped"].as_u64().unwrap() + k["rx"]["missed_errors"].as_u64().unwrap_or(0)
    };
    let drp = n(&p0["RX_DRP"]) - n(&before["si-p0"]["RX_DRP"]);
    if drp != 7 + kdrop(&k1) - kdrop(&k0) {
        failures.push(format!(
            "si-p0 RX_DRP grew by {drp}, not 7 + the kernel's {}",
            kdrop(&k1) - kdrop(&k0)
        ));
    }
    if !p0["RX_BPS"].as_str().unwrap().ends_with("B/s")
        || !p0["RX_UTIL"].as_str().unwrap().ends_with('%')
    {
        failures.push(format!("rate cells: {p0}"));
    }

    // the link's state: the sink's end down is si-p1 down (D)
    sink.exec(&["ip", "link", "set", "eth0", "down"]).unwrap();
    let e = json_of(&show(ns, &instance, "interfaces counters errors", &["-j"]));
    if e["si-p1"]["STATE"] != "D" {
        failures.push(format!("si-p1 STATE with the peer down: {e}"));
    }
    sink.exec(&["ip", "link", "set", "eth0", "up"]).unwrap();

    // rates: a stream of ~2000 frames/s while `rates` reads for a second
    let stop = std::sync::atomic::AtomicBool::new(false);
    let rates = std::thread::scope(|sc| {
        let _stop = StopOnDrop(vec![&stop]);
        sc.spawn(|| {
            let f = frames(20, [198, 18, 1, 9]);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                send_frames(&h, "eth0", &f).unwrap();
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        std::thread::sleep(Duration::from_millis(200));
        json_of(&show(ns, &instance, "interfaces counters rates", &["-j"]))
    });
    let pps: f64 = rates["si-p0"]["RX_PPS"]
        .as_str()
        .unwrap()
        .trim_end_matches("/s")
        .parse()
        .unwrap();
    println!("rates {rates}");
    if !(200.0..=4000.0).contains(&pps) {
        failures.push(format!("si-p0 RX_PPS {pps} for ~2000 frames/s: {rates}"));
    }

    // clear: show counts from there, with portstat's lines
    let out = run(
        ns,
        &["clear", "--instance", &instance, "interfaces", "counters"],
    );
    if out != "Cleared counters\n" {
        failures.push(format!("clear said {out:?}"));
    }
    assert_eq!(
        send_frames(&h, "eth0", &frames(5, [198, 19, 77, 9])).unwrap(),
        5
    );
    std::thread::sleep(Duration::from_millis(200));
    let text = show(ns, &instance, "interfaces counters errors", &[]);
    if !text.starts_with("Last cached time was ") {
        failures.push(format!("after clear: {text}"));
    }
    let e = json_of(&show(ns, &instance, "interfaces counters errors", &["-j"]));
    if n(&e["si-p0"]["RX_DRP"]) < 5 || n(&e["si-p0"]["RX_DRP"]) > 10 {
        failures.push(format!("RX_DRP since the clear: {e}"));
    }
    // -p 1: over the period, no cache line
    let text = show(ns, &instance, "interfaces counters", &["-p", "1"]);
    let second = text.lines().nth(1).unwrap_or("").trim_start();
    if !text.starts_with("The rates are calculated within 1 seconds period\n")
        || !second.starts_with("IFACE")
    {
        failures.push(format!("-p 1: {text}"));
    }
    // bad input: an unknown port, a flag of another target
    let (ok, _, err) = run_status(
        ns,
        &[
            "show",
            "--instance",
            &instance,
            "interfaces",
            "counters",
            "si-p9",
        ],
    );
    if ok || !err.contains("no port \"si-p9\"") {
        failures.push(format!("unknown port: {err}"));
    }
    let (ok, _, err) = run_status(
        ns,
        &[
            "show",
            "--instance",
            &instance,
            "--printall",
            "interfaces",
            "counters",
            "errors",
        ],
    );
    if ok || !err.contains("--printall is for show interfaces counters") {
        failures.push(format!("--printall on errors: {err}"));
    }

    // PFC history: XOFF for priority 3 (0xffff quanta at 100 Gb/s:
    // 335 us), twice 50 ms apart: two runs, both ended
    let t0 = Instant::now();
    for _ in 0..2 {
        let f = pfc_frame(HOST, 0x08, [0, 0, 0, 0xffff, 0, 0, 0, 0]);
        assert_eq!(send_frames(&h, "eth0", &[f]).unwrap(), 1);
        std::thread::sleep(Duration::from_millis(50));
    }
    let hist = show(ns, &instance, "pfc counters", &["--history"]);
    println!("{hist}");
    let row: Vec<String> = hist
        .lines()
        .find(|l| l.trim_start().starts_with("si-p0") && l.contains("PFC3"))
        .expect("si-p0 PFC3 row")
        .split("  ")
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    // Port, Priority, transitions, total us, recent us, timestamp
    if row[2] != "2" {
        failures.push(format!("transitions {:?} after two separate XOFFs", row[2]));
    }
    let us = |s: &str| s.replace(',', "").parse::<u64>().unwrap_or(0);
    if !(300..=400).contains(&us(&row[4])) || !(600..=800).contains(&us(&row[3])) {
        failures.push(format!("pause times of two 335 us pauses: {row:?}"));
    }
    if row[5] == "N/A" || !row[5].contains(", ") {
        failures.push(format!("recent pause timestamp {:?}", row[5]));
    }
    let other = hist
        .lines()
        .find(|l| l.trim_start().starts_with("si-p0") && l.contains("PFC2"))
        .unwrap();
    if !other.trim_end().ends_with("N/A") {
        failures.push(format!(
            "a priority never paused has no recent pause: {other}"
        ));
    }
    println!("history checked {:?} after the first XOFF", t0.elapsed());
    drop(ctl);
    finish("show_interfaces", failures);
}
