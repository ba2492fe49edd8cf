//! Drop snapshots: a dropped RoCEv2 packet comes back from `dataplane
//! events` with its reason and BTH fields, and the pcapng it writes opens in
//! tshark with the same BTH fields; a flood of drops is rate-limited.

mod common;

use std::process::Command;

use aya::maps::PerCpuArray;
use common::*;
use dataplane_common::build::{self, L2};
use dataplane_common::events::{RateLimit, EVENTS_BURST, EVENTS_PER_SEC};
use dataplane_common::names;
use dataplane_user::telemetry::counters::open_pinned;
use testbed::controller::Controller;
use testbed::raw::send_frames;

static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(testbed::dataplane_bin);

#[test]
fn dropped_rocev2_packet_is_snapshotted_with_its_bth_fields() {
    let (sw, h, _sink) = switch_with_ports("ev", "sw-p0", "sw-p1", 0x0e);
    let instance = format!("ev{}", std::process::id());
    let cfg = format!(
        "[switch]\nname = \"{instance}\"\n[[port]]\nname = \"sw-p0\"\n[[port]]\nname = \"sw-p1\"\n\
         [[nexthop]]\nname = \"n\"\nport = \"sw-p1\"\nmac = \"02:00:00:00:0e:11\"\n\
         [[route]]\nprefix = \"198.18.1.0/24\"\nnexthop = \"n\"\n"
    );
    let _ctl = Controller::start(
        std::path::Path::new(BIN.as_str()),
        &sw,
        &instance,
        &cfg,
        "switch",
    )
    .unwrap();

    // a RoCEv2 WRITE to an address with no route
    let l2 = L2::new([2, 0, 0, 0, 0x0e, 0], [2, 0, 0, 0, 0x0e, 0x10]);
    let ip = dataplane_common::build::Ip::v4([198, 18, 0, 1], [198, 18, 9, 9])
        .dscp(26)
        .ecn(2);
    let mut b = write_first(0x00ab12, 777);
    b.psn = 777;
    let frame = build::rocev2_frame(&l2, &ip, 49152, &b, Some(RETH), &[0x11; 256]);
    let dir = std::env::temp_dir().join(format!("dp-ev-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let pcap = dir.join("drops.pcapng");
    let reader = std::thread::spawn({
        let (ns, inst, pcap) = (sw.name.clone(), instance.clone(), pcap.clone());
        move || {
            Command::new(BIN.as_str())
                .args([
                    "--netns",
                    &ns,
                    "events",
                    "--instance",
                    &inst,
                    "--count",
                    "1",
                    "--timeout",
                    "10",
                    "--pcapng",
                ])
                .arg(&pcap)
                .output()
                .unwrap()
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    send_frames(&h, "eth0", std::slice::from_ref(&frame)).unwrap();
    let o = reader.join().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    println!("{out}");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("no_route") && out.contains("sw-p0"), "{out}");
    assert!(
        out.contains("dest QP 0x00ab12")
            && out.contains("PSN 777")
            && out.contains(&format!("len {:>5}", frame.len())),
        "{out}"
    );

    // tshark reads the pcapng and decodes the same BTH
    let t = Command::new("tshark")
        .args([
            "-r",
            pcap.to_str().unwrap(),
            "-T",
            "fields",
            "-e",
            "infiniband.bth.opcode",
            "-e",
            "infiniband.bth.destqp",
            "-e",
            "infiniband.bth.psn",
            "-e",
            "frame.comment",
            "-e",
            "frame.len",
            "-e",
            "frame.cap_len",
        ])
        .output()
        .expect("tshark");
    let text = String::from_utf8_lossy(&t.stdout);
    println!("tshark: {text}");
    let f: Vec<&str> = text.trim().split('\t').collect();
    assert_eq!(
        f.len(),
        6,
        "tshark: {text} {}",
        String::from_utf8_lossy(&t.stderr)
    );
    let num = |s: &str| {
        if let Some(h) = s.strip_prefix("0x") {
            u64::from_str_radix(h, 16).unwrap()
        } else {
            s.parse::<u64>().unwrap()
        }
    };
    assert_eq!(num(f[0]), 6, "opcode RDMA WRITE first");
    assert_eq!(num(f[1]), 0xab12, "destination QP");
    assert_eq!(num(f[2]), 777, "PSN");
    assert!(f[3].contains("reason=no_route"), "{}", f[3]);
    assert_eq!(
        f[4].parse::<usize>().unwrap(),
        frame.len(),
        "original length"
    );
    assert_eq!(f[5], "128", "snapshot length");

    // a flood of drops is rate-limited (a token bucket per CPU: bursts of
    // EVENTS_BURST, EVENTS_PER_SEC refill), not lost silently. Checked on
    // the limiter's own counters and clock, whatever the sending took:
    // every flood drop went through the limiter (posted + suppressed =
    // 3000), every posted event reached the reader, and on each CPU the
    // posted ones are within the bucket's contract from the flood's start
    // to that CPU's last drop.
    let flood: Vec<Vec<u8>> = (0..3000).map(|_| frame.clone()).collect();
    let reader = std::thread::spawn({
        let (ns, inst) = (sw.name.clone(), instance.clone());
        move || {
            Command::new(BIN.as_str())
                .args([
                    "--netns",
                    &ns,
                    "events",
                    "--instance",
                    &inst,
                    "--timeout",
                    "5",
                ])
                .output()
                .unwrap()
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let limiter = || -> Vec<RateLimit> {
        let m = open_pinned(&instance, names::map::DROP_RATE).expect("DROP_RATE pinned");
        let m: PerCpuArray<_, RateLimit> = PerCpuArray::try_from(m).unwrap();
        m.get(&0, 0).unwrap().iter().copied().collect()
    };
    let before = limiter();
    let t0 = dataplane_user::sys::monotonic_ns();
    let w0 = std::time::Instant::now();
    send_frames(&h, "eth0", &flood).unwrap();
    let took = w0.elapsed().as_secs_f64();
    let after = limiter();
    assert!(
        took < 4.0,
        "the flood took {took:.1} s, longer than the event reader's window"
    );
    let o = reader.join().unwrap();
    let events = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains("no_route"))
        .count() as u64;
    let (mut posted, mut suppressed, mut bound) = (0u64, 0u64, 0u64);
    for (b, a) in before.iter().zip(&after) {
        let p = a.posted - b.posted;
        posted += p;
        suppressed += a.suppressed - b.suppressed;
        if p > 0 {
            // the bucket held at most a burst at t0 and refilled since
            bound +=
                EVENTS_BURST + EVENTS_PER_SEC * a.last_ns.saturating_sub(t0) / 1_000_000_000 + 1;
        }
    }
    println!(
        "flood: 3000 drops in {took:.3} s, {posted} events posted, {suppressed} suppressed, {events} read (bound {bound})"
    );
    assert_eq!(posted + suppressed, 3000, "flood drops through the limiter");
    assert_eq!(events, posted, "posted events the reader got");
    assert!(
        posted > 0 && posted <= bound,
        "{posted} events posted, the limit allows {bound}"
    );
    assert_eq!(
        counter(&stats(&sw.name, &instance), "sw-p0", "drop_no_route"),
        3001,
        "every drop counted"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
