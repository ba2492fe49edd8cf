//! Drop snapshots: a dropped RoCEv2 packet comes back from `dataplane
//! events` with its reason and BTH fields, and the pcapng it writes opens in
//! tshark with the same BTH fields; a flood of drops is rate-limited.

mod common;

use std::process::Command;

use common::*;
use dataplane_common::build::{self, L2};
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

    // a flood of drops is rate-limited (64 burst, 1000/s per CPU), not lost
    // silently: far fewer events than drops, and the counters still count all
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
                    "2",
                ])
                .output()
                .unwrap()
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(300));
    let t0 = std::time::Instant::now();
    send_frames(&h, "eth0", &flood).unwrap();
    let took = t0.elapsed().as_secs_f64();
    let o = reader.join().unwrap();
    let events = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.contains("no_route"))
        .count();
    let bound = (2 * (64.0 + 1000.0 * (took + 0.1)) as usize).min(3000);
    println!("flood: 3000 drops in {took:.3} s, {events} events (bound {bound})");
    assert!(
        events > 0 && events <= bound && events < 3000,
        "{events} events for 3000 drops"
    );
    assert_eq!(
        counter(&stats(&sw.name, &instance), "sw-p0", "drop_no_route"),
        3001,
        "every drop counted"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
