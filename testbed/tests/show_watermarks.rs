//! Watermarks and `dataplane show` / `clear` on a running data plane: a
//! burst into a 10 Mb/s egress port builds its TC3 queue in the buffer
//! model (and the ingress PG's shared buffer and headroom); `show queue
//! watermark unicast` and `show priority-group watermark shared|headroom`
//! print non-zero marks where the burst went, `show buffer_pool watermark`
//! the shared pool's peak (at least what the PG held of it) and `show
//! headroom-pool watermark` N/A (no shared headroom pool); `clear` restarts what `show`
//! prints (watermarks and counters) while the Prometheus counters stay
//! monotonic and the persistent watermark keeps its peak; the controller's
//! watermark interval (1 s here) restarts the periodic window.

mod common;

use std::time::{Duration, Instant};

use common::*;
use dataplane_common::build::L2;
use serde_json::Value;
use testbed::netns::Netns;
use testbed::raw::send_frames;

const SW_P0: [u8; 6] = [2, 0, 0, 0, 0x5a, 0];
const HOST: [u8; 6] = [2, 0, 0, 0, 0x5a, 0x10];

fn config(instance: &str) -> String {
    format!(
        r#"
[switch]
name = "{instance}"

[buffer]
pool_size = 1048576
# lossless shared threshold: free / 128 (about 8 KB), then headroom
dynamic_th = -7

[[port]]
name = "sw-p0"
mac = "02:00:00:00:5a:00"
speed = "100G"
pfc_enable = "3"

[[port]]
name = "sw-p1"
mac = "02:00:00:00:5a:01"
speed = "10M"
pfc_enable = "3"

[[nexthop]]
name = "n"
port = "sw-p1"
mac = "02:00:00:00:5a:11"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "n"
"#
    )
}

fn run(ns: &str, args: &[&str]) -> String {
    dataplane_out(ns, args)
}

/// Did `dataplane <args>` succeed, and its stderr.
fn run_status(ns: &str, args: &[&str]) -> (bool, String) {
    let (ok, _, err) = dataplane_status(ns, args);
    (ok, err)
}

/// A queuestat JSON value: a string, with thousands separators since a
/// clear.
fn n(v: &Value) -> u64 {
    v.as_str()
        .and_then(|s| s.replace(',', "").parse().ok())
        .unwrap_or_else(|| panic!("not a queuestat number: {v}"))
}

fn metric(text: &str, name_labels: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(name_labels) && l[name_labels.len()..].starts_with(' '))
        .unwrap_or_else(|| panic!("no {name_labels} in metrics"))
        .rsplit(' ')
        .next()
        .unwrap()
        .parse::<f64>()
        .unwrap() as u64
}

/// A burst of `n` RoCEv2 writes of TC3 (DSCP 3) to sw-p1's side.
fn burst(h: &Netns, n: u32) -> usize {
    let l2 = L2::new(SW_P0, HOST);
    let frames: Vec<Vec<u8>> = (0..n).map(|i| roce4(&l2, 3, 0x300 + i, 1000)).collect();
    send_frames(h, "eth0", &frames).unwrap()
}

#[test]
fn watermarks_show_clear_and_metrics() {
    let (sw, h, sink) = switch_with_ports("shw", "sw-p0", "sw-p1", 0x5a);
    sink.exec(&["ethtool", "-K", "eth0", "gro", "on"]).unwrap();
    let instance = format!("shw{}", std::process::id());
    let ctl = start_switch(
        &sw,
        &instance,
        &config(&instance),
        &["--watermark-interval", "1"],
    );
    let ns = sw.name.as_str();

    // nothing yet: every mark 0; a port outside... both are in the model
    let q = show_json(ns, &instance, "queue watermark unicast");
    assert_eq!(wm(&q, "sw-p1", "UC3"), 0, "{q}");
    assert_eq!(pool_wm(ns, &instance, "buffer_pool watermark"), 0);

    assert_eq!(burst(&h, 80), 80);
    let deadline = Instant::now() + Duration::from_secs(5);
    let q = loop {
        let q = show_json(ns, &instance, "queue watermark unicast");
        if wm(&q, "sw-p1", "UC3") > 0 || Instant::now() > deadline {
            break q;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let q_peak = wm(&q, "sw-p1", "UC3");
    let shared = show_json(ns, &instance, "priority-group watermark shared");
    let headroom = show_json(ns, &instance, "priority-group watermark headroom");
    println!("queue {q}\nshared {shared}\nheadroom {headroom}");
    // 80 x ~1.1 KB in well under a millisecond; 10 Mb/s drains 1.25 KB/ms
    assert!(q_peak > 20_000, "sw-p1 UC3 peaked at {q_peak} B only: {q}");
    assert_eq!(wm(&q, "sw-p0", "UC3"), 0, "nothing left by sw-p0: {q}");
    assert_eq!(wm(&q, "sw-p1", "UC0"), 0, "only TC3 was sent: {q}");
    let (pg_sh, pg_hr) = (wm(&shared, "sw-p0", "PG3"), wm(&headroom, "sw-p0", "PG3"));
    assert!(
        pg_sh > 0 && pg_hr > 0,
        "sw-p0 PG3: shared {pg_sh}, headroom {pg_hr}"
    );
    // the PG holds what the queue holds (no reserve): its parts add up to
    // at least the queue's peak less one packet in flight of the split
    assert!(
        pg_sh + pg_hr + 1100 >= q_peak,
        "PG {pg_sh}+{pg_hr} vs queue {q_peak}"
    );
    // the shared pool's peak: what sw-p0's PG3 held of it, the only PG
    // the burst charged (the pool's use is the sum of the PGs' shared)
    let pool_peak = pool_wm(ns, &instance, "buffer_pool watermark");
    println!("pool peak {pool_peak}, sw-p0 PG3 shared {pg_sh}");
    assert_eq!(
        pool_peak, pg_sh,
        "the pool's peak vs the one PG's shared peak"
    );
    assert_eq!(
        pool_wm(ns, &instance, "buffer_pool persistent-watermark"),
        pool_peak
    );
    let text = run(
        ns,
        &["show", "--instance", &instance, "buffer_pool", "watermark"],
    );
    assert_eq!(
        text,
        format!(
            "Shared pool maximum occupancy:\n                 Pool    Bytes\n\
             ---------------------  -------\ningress_lossless_pool  {pool_peak:>7}\n"
        )
    );
    // no shared headroom pool: watermarkstat's N/A
    for t in ["watermark", "persistent-watermark"] {
        let text = run(ns, &["show", "--instance", &instance, "headroom-pool", t]);
        assert_eq!(
            text,
            "Headroom pool maximum occupancy:\n                 Pool    Bytes\n\
             ---------------------  -------\ningress_lossless_pool      N/A\n"
        );
    }

    // SONiC's text: title, header, a row per port
    let text = run(
        ns,
        &[
            "show",
            "--instance",
            &instance,
            "queue",
            "watermark",
            "unicast",
        ],
    );
    let lines: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        text.lines().next(),
        Some("Egress shared pool occupancy per unicast queue:"),
        "{text}"
    );
    assert_eq!(
        lines[1],
        ["Port", "UC0", "UC1", "UC2", "UC3", "UC4", "UC5", "UC6", "UC7"],
        "{text}"
    );
    let row = lines
        .iter()
        .find(|l| l.first() == Some(&"sw-p1"))
        .expect("sw-p1 row");
    assert_eq!(row[4], q_peak.to_string(), "{text}");

    // the tables in force, as ecnconfig -l and mmuconfig -l print them
    let ecn = run(ns, &["show", "--instance", &instance, "ecn"]);
    assert!(ecn.starts_with("Profile: AZURE_LOSSLESS\n---"), "{ecn}");
    let buf = run(
        ns,
        &["show", "--instance", &instance, "buffer", "configuration"],
    );
    assert!(buf.starts_with("Lossless traffic pattern:\n"), "{buf}");
    assert!(buf.contains("\n\nPool: ingress_lossless_pool\n"), "{buf}");
    assert!(
        buf.contains("Profile: pg_lossless_100000_profile")
            && buf.contains("Profile: pg_lossless_10_profile"),
        "{buf}"
    );
    // an unknown target is refused with the valid ones
    let (ok, err) = run_status(ns, &["show", "--instance", &instance, "pfc", "countres"]);
    assert!(!ok && err.contains("show pfc counters"), "{err}");

    // one port, as `show queue counters PORT`; an unknown port is named
    let one = show_json(ns, &instance, "queue counters sw-p1");
    assert_eq!(one.as_object().unwrap().len(), 1, "{one}");
    let (ok, err) = run_status(
        ns,
        &[
            "show",
            "--instance",
            &instance,
            "queue",
            "counters",
            "sw-p9",
        ],
    );
    assert!(!ok && err.contains("Port doesn't exist! sw-p9"), "{err}");

    let qc = show_json(ns, &instance, "queue counters");
    let sent = n(&qc["sw-p1"]["UC3"]["totalpacket"]);
    let dropped = n(&qc["sw-p1"]["UC3"]["droppacket"]);
    assert_eq!(sent + dropped, 80, "{qc}");
    let pfc = show_json(ns, &instance, "pfc counters");
    let xoff_sent = pfc["Port Tx"]["sw-p0"]["PFC3"].as_u64().unwrap();
    assert!(xoff_sent > 0, "headroom in use but no PFC sent: {pfc}");

    let m0 = get_metrics(&sw);
    let lbl =
        |port: &str, extra: &str| format!("{{instance=\"{instance}\",port=\"{port}\",{extra}}}");
    let tx_total = |m: &str| {
        metric(
            m,
            &format!("dataplane_tx_tc_pkts_total{}", lbl("sw-p1", "tc=\"3\"")),
        )
    };
    let persistent = |m: &str| {
        metric(
            m,
            &format!(
                "dataplane_queue_watermark_bytes{}",
                lbl("sw-p1", "queue=\"3\",kind=\"shared\",window=\"persistent\"")
            ),
        )
    };
    assert_eq!(tx_total(&m0), sent);
    assert_eq!(persistent(&m0), q_peak);
    assert_eq!(
        metric(
            &m0,
            &format!(
                "dataplane_pg_watermark_bytes{}",
                lbl("sw-p0", "pg=\"3\",kind=\"headroom\",window=\"persistent\"")
            )
        ),
        pg_hr
    );

    // clear: show starts over, the data plane's counters do not
    for t in [
        "queue watermark unicast",
        "priority-group watermark shared",
        "priority-group watermark headroom",
        "buffer_pool watermark",
        "headroom-pool watermark",
        "queue counters",
        "pfc counters",
    ] {
        let mut args = vec!["clear", "--instance", instance.as_str()];
        args.extend(t.split(' '));
        run(ns, &args);
    }
    let q = show_json(ns, &instance, "queue watermark unicast");
    assert_eq!(wm(&q, "sw-p1", "UC3"), 0, "after clear: {q}");
    let hr = show_json(ns, &instance, "priority-group watermark headroom");
    assert_eq!(wm(&hr, "sw-p0", "PG3"), 0, "after clear: {hr}");
    let qc = show_json(ns, &instance, "queue counters");
    assert_eq!(qc["sw-p1"]["UC3"]["totalpacket"], "0", "after clear: {qc}");
    assert!(qc["sw-p1"]["time"].is_string(), "{qc}");
    let text = run(ns, &["show", "--instance", &instance, "queue", "counters"]);
    assert!(text.contains("sw-p1 Last cached time was "), "{text}");
    let pfc = show_json(ns, &instance, "pfc counters");
    assert_eq!(pfc["Port Tx"]["sw-p0"]["PFC3"], 0, "after clear: {pfc}");
    let text = run(ns, &["show", "--instance", &instance, "pfc", "counters"]);
    assert!(text.starts_with("Last cached time was "), "{text}");
    assert_eq!(
        pool_wm(ns, &instance, "buffer_pool watermark"),
        0,
        "after clear"
    );
    assert_eq!(
        pool_wm(ns, &instance, "buffer_pool persistent-watermark"),
        pool_peak,
        "the pool's persistent mark survives a user clear"
    );
    let pq = show_json(ns, &instance, "queue persistent-watermark unicast");
    assert_eq!(
        wm(&pq, "sw-p1", "UC3"),
        q_peak,
        "the persistent mark survives a user clear"
    );
    let m1 = get_metrics(&sw);
    assert_eq!(tx_total(&m1), sent, "the data plane's counters were zeroed");
    assert_eq!(persistent(&m1), q_peak);

    // a smaller burst: show counts only it; the counters and the
    // persistent mark go on
    assert_eq!(burst(&h, 10), 10);
    let deadline = Instant::now() + Duration::from_secs(5);
    let qc = loop {
        let qc = show_json(ns, &instance, "queue counters");
        let u = &qc["sw-p1"]["UC3"];
        if n(&u["totalpacket"]) + n(&u["droppacket"]) >= 10 || Instant::now() > deadline {
            break qc;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let u = &qc["sw-p1"]["UC3"];
    let sent2 = n(&u["totalpacket"]);
    assert_eq!(sent2 + n(&u["droppacket"]), 10, "{qc}");
    let q = show_json(ns, &instance, "queue watermark unicast");
    let q2 = wm(&q, "sw-p1", "UC3");
    assert!(
        q2 > 0 && q2 < q_peak,
        "second burst's mark {q2} vs the first's {q_peak}"
    );
    // the second burst's pool peak: again the PG's shared peak (it fills
    // to the dynamic threshold again); the persistent mark the higher one
    let pool2 = pool_wm(ns, &instance, "buffer_pool watermark");
    let sh2 = show_json(ns, &instance, "priority-group watermark shared");
    assert!(pool2 > 0, "second burst: pool peak {pool2}");
    assert_eq!(pool2, wm(&sh2, "sw-p0", "PG3"), "{sh2}");
    assert_eq!(
        pool_wm(ns, &instance, "buffer_pool persistent-watermark"),
        pool_peak.max(pool2)
    );
    let m2 = get_metrics(&sw);
    assert_eq!(tx_total(&m2), sent + sent2);
    assert_eq!(persistent(&m2), q_peak);

    // the watermark interval (1 s) restarts the periodic window
    let periodic = |m: &str| {
        metric(
            m,
            &format!(
                "dataplane_queue_watermark_bytes{}",
                lbl("sw-p1", "queue=\"3\",kind=\"shared\",window=\"periodic\"")
            ),
        )
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    let m3 = loop {
        let m = get_metrics(&sw);
        if periodic(&m) == 0 || Instant::now() > deadline {
            break m;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(periodic(&m3), 0, "periodic window not restarted");
    assert_eq!(persistent(&m3), q_peak);
    let q = show_json(ns, &instance, "queue watermark unicast");
    assert_eq!(
        wm(&q, "sw-p1", "UC3"),
        q2,
        "the user window survives the interval"
    );
    drop(ctl);
}
