//! DCBX between the controller and the host emulator over veths: a
//! willing host adopts the switch's configuration and agrees; a host that
//! is not willing (PFC on another priority) and one that puts RoCE on a
//! lossy priority are reported as mismatches in `show dcbx`, the event
//! log and the metrics. tshark (an independent decoder) captures both
//! directions and decodes the 802.1Qaz fields. A fourth port has lldpad
//! (open-lldp, what Linux hosts run) as its peer: it decodes every TLV the
//! switch sends; on a veth it sends no 802.1Qaz TLVs of its own (veth has
//! no DCB netlink operations: "Device not capable"), so the switch reports
//! `pfc_absent` for it.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use testbed::controller::Controller;
use testbed::host::{run_dcbx_host, DcbxHostCfg, DcbxMismatch};
use testbed::netns::{veth, Netns};

const PORTS: [(&str, &str, &str, &str); 3] = [
    ("dcb-p0", "02:00:00:00:d0:00", "dcb-h0", "02:00:00:00:d0:10"),
    ("dcb-p1", "02:00:00:00:d0:01", "dcb-h1", "02:00:00:00:d0:11"),
    ("dcb-p2", "02:00:00:00:d0:02", "dcb-h2", "02:00:00:00:d0:12"),
];

/// The port whose peer is lldpad, in a namespace of its own.
const LLDPAD_PORT: (&str, &str, &str, &str) =
    ("dcb-p3", "02:00:00:00:d0:03", "dcb-l3", "02:00:00:00:d0:13");

/// lldpad in `ns` (no PID file, its own config file), killed on drop.
struct Lldpad {
    child: std::process::Child,
    conf: std::path::PathBuf,
}

impl Lldpad {
    fn start(ns: &Netns, ifname: &str) -> Lldpad {
        let conf = std::env::temp_dir().join(format!("dcb-lldpad-{}.conf", std::process::id()));
        let _ = std::fs::remove_file(&conf);
        let child = Command::new("ip")
            // its own IPC namespace too: lldpad keeps state in SysV shared
            // memory, which a system lldpad would share
            .args([
                "netns", "exec", &ns.name, "unshare", "--ipc", "lldpad", "-p", "-t", "-f",
            ])
            .arg(&conf)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("lldpad (installed by `cargo xtask setup`)");
        let l = Lldpad { child, conf };
        // its control socket comes up after a moment
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let o = Command::new("ip")
                .args(["netns", "exec", &ns.name, "lldptool", "-L", "-i", ifname])
                .arg("adminStatus=rxtx")
                .output()
                .unwrap();
            if o.status.success() {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "lldptool: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        l
    }
}

impl Drop for Lldpad {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.conf);
    }
}

fn mac(s: &str) -> [u8; 6] {
    dataplane_config::parse_mac(s).unwrap()
}

fn show_json(bin: &str, ns: &str, instance: &str) -> serde_json::Value {
    let o = Command::new(bin)
        .args([
            "--netns",
            ns,
            "show",
            "dcbx",
            "--instance",
            instance,
            "--json",
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn mismatches(v: &serde_json::Value, port: usize) -> Vec<String> {
    v["ports"][port]["mismatches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn dcbx_with_willing_and_mismatching_hosts() {
    let bin = testbed::dataplane_bin();
    let sw = Netns::create("dcbsw").unwrap();
    let h = Netns::create("dcbh").unwrap();
    let l = Netns::create("dcbl").unwrap();
    for (p, pm, hp, hm) in PORTS {
        veth(&sw, p, pm, &h, hp, hm).unwrap();
    }
    let (lp, lpm, lh, lhm) = LLDPAD_PORT;
    veth(&sw, lp, lpm, &l, lh, lhm).unwrap();
    let _lldpad = Lldpad::start(&l, lh);
    // tshark on the willing host's port: both directions
    let pcap = std::env::temp_dir().join(format!("dcb-{}.pcap", std::process::id()));
    let _ = std::fs::remove_file(&pcap);
    let mut tshark = Command::new("ip")
        .args(["netns", "exec", &h.name, "tshark", "-n", "-i", "dcb-h0"])
        .args(["-f", "ether proto 0x88cc", "-a", "duration:5", "-w"])
        .arg(&pcap)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("tshark (installed by `cargo xtask setup`)");
    std::thread::sleep(Duration::from_millis(800));

    let stop = AtomicBool::new(false);
    let cfgs: Vec<DcbxHostCfg> = PORTS
        .iter()
        .zip([
            None,
            Some(DcbxMismatch::NotWilling { pfc_enable: 0x08 }),
            Some(DcbxMismatch::RocePriority(1)),
        ])
        .map(|((_, _, hp, hm), mm)| DcbxHostCfg {
            mismatch: mm,
            system_name: format!("host-{hp}"),
            ..DcbxHostCfg::willing(hp, mac(hm))
        })
        .collect();
    let instance = format!("dcb{}", std::process::id());
    let config = format!(
        "[switch]\nname = \"{instance}\"\n\n{}\n[dcbx]\ntx_interval_s = 30\n",
        PORTS
            .iter()
            .chain([&LLDPAD_PORT])
            .map(|(p, ..)| format!("[[port]]\nname = \"{p}\"\npfc_enable = \"3,4\"\n"))
            .collect::<String>()
    );
    /// Stops the hosts however the scope ends (a failed assertion too).
    struct StopOnDrop<'a>(&'a AtomicBool);
    impl Drop for StopOnDrop<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let reports = std::thread::scope(|s| {
        let stopper = StopOnDrop(&stop);
        let hosts: Vec<_> = cfgs
            .iter()
            .map(|c| {
                let (h, stop) = (&h, &stop);
                s.spawn(move || {
                    let _in = h.enter().unwrap();
                    run_dcbx_host(c, stop).unwrap()
                })
            })
            .collect();
        let ctl = Controller::start(bin.as_ref(), &sw, &instance, &config, "dcb").unwrap();
        // the hosts answer the first switch frame at once
        let deadline = Instant::now() + Duration::from_secs(10);
        let v = loop {
            let v = show_json(&bin, &sw.name, &instance);
            let done = (0..4).all(|i| v["ports"][i]["peer"].is_object())
                && !mismatches(&v, 1).is_empty()
                && !mismatches(&v, 2).is_empty();
            if done || Instant::now() > deadline {
                break v;
            }
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(mismatches(&v, 0).is_empty(), "{v:#}");
        assert_eq!(
            v["ports"][0]["peer"]["config"]["pfc_enable"],
            serde_json::json!([3, 4])
        );
        assert_eq!(v["ports"][0]["peer"]["config"]["roce_priority"], 3);
        assert_eq!(v["ports"][0]["peer"]["system_name"], "host-dcb-h0");
        assert_eq!(mismatches(&v, 1), ["pfc_enable", "willing"], "{v:#}");
        assert_eq!(mismatches(&v, 2), ["roce_priority"], "{v:#}");
        // lldpad: a peer without DCBX TLVs on a veth
        assert_eq!(v["ports"][3]["peer"]["chassis"], LLDPAD_PORT.3, "{v:#}");
        assert_eq!(mismatches(&v, 3), ["pfc_absent"], "{v:#}");
        // ... which decodes ours as sent
        let o = Command::new("ip")
            .args(["netns", "exec", &l.name, "lldptool", "-t", "-n", "-i", lh])
            .output()
            .unwrap();
        let heard = String::from_utf8_lossy(&o.stdout).to_string();
        for want in [
            "IEEE 8021QAZ ETS Configuration TLV",
            "TC Bandwidth: 12% 12% 12% 12% 13% 13% 13% 13%",
            "IEEE 8021QAZ ETS Recommendation TLV",
            "IEEE 8021QAZ PFC TLV",
            "PFC enabled: 3 4",
            "Prio 3 \t Sel 3 \t P-ID\t UDP or DCCP Port: 4791",
            "Prio:3 \t dscp:  03,",
        ] {
            assert!(
                heard.contains(want),
                "lldptool -t -n lacks {want:?}:\n{heard}"
            );
        }
        // the table
        let o = Command::new(&bin)
            .args(["--netns", &sw.name, "show", "dcbx", "--instance", &instance])
            .output()
            .unwrap();
        let table = String::from_utf8_lossy(&o.stdout).to_string();
        eprintln!("{table}");
        assert!(table
            .lines()
            .any(|l| l.starts_with("dcb-p2") && l.contains("roce_priority")));
        // the event log
        let o = Command::new(&bin)
            .args(["--netns", &sw.name, "events", "--instance", &instance])
            .args(["--history", "--timeout", "0.5"])
            .output()
            .unwrap();
        let ev = String::from_utf8_lossy(&o.stdout).to_string();
        assert!(
            ev.lines().any(|l| l.contains("dcb-p1")
                && l.contains("dcbx_mismatch")
                && l.contains("pfc_enable")),
            "{ev}"
        );
        assert!(
            ev.lines()
                .any(|l| l.contains("dcb-p2") && l.contains("roce_priority")),
            "{ev}"
        );
        // the metrics
        let metrics = {
            let _in = sw.enter().unwrap();
            use std::io::{Read, Write};
            let mut c = std::net::TcpStream::connect("127.0.0.1:9464").unwrap();
            c.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
            let mut s = String::new();
            c.read_to_string(&mut s).unwrap();
            s
        };
        for (port, field, v) in [
            ("dcb-p1", "pfc_enable", 1),
            ("dcb-p2", "roce_priority", 1),
            ("dcb-p0", "pfc_enable", 0),
        ] {
            let line = format!(
                "dataplane_dcbx_mismatch{{instance=\"{instance}\",port=\"{port}\",field=\"{field}\"}} {v}"
            );
            assert!(metrics.lines().any(|l| l == line), "{line} not in metrics");
        }
        // a reload changes port 0's advertisement at once (PFC on 3 only);
        // the willing host follows and they agree again
        let path = ctl.config_path().to_path_buf();
        std::fs::write(
            &path,
            config.replacen("pfc_enable = \"3,4\"", "pfc_enable = \"3\"", 1),
        )
        .unwrap();
        let o = Command::new(&bin)
            .args(["--netns", &sw.name, "reload", "-c"])
            .arg(&path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let deadline = Instant::now() + Duration::from_secs(5);
        let v = loop {
            let v = show_json(&bin, &sw.name, &instance);
            let peer = &v["ports"][0]["peer"]["config"]["pfc_enable"];
            if *peer == serde_json::json!([3]) || Instant::now() > deadline {
                break v;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert_eq!(
            v["ports"][0]["local"]["pfc_enable"],
            serde_json::json!([3]),
            "{v:#}"
        );
        assert_eq!(
            v["ports"][0]["peer"]["config"]["pfc_enable"],
            serde_json::json!([3]),
            "{v:#}"
        );
        assert!(mismatches(&v, 0).is_empty(), "{v:#}");
        // fast start when the link comes back: frames a second apart, not
        // tx_interval_s (30 s)
        let tx = |v: &serde_json::Value| v["ports"][0]["counters"]["tx_frames"].as_u64().unwrap();
        let before = tx(&v);
        h.ip(&["link", "set", "dcb-h0", "down"]).unwrap();
        std::thread::sleep(Duration::from_millis(1200));
        h.ip(&["link", "set", "dcb-h0", "up"]).unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let v = show_json(&bin, &sw.name, &instance);
            if tx(&v) >= before + 2 {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "no fast start after link up: {v:#}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        ctl.stop("dcb");
        std::thread::sleep(Duration::from_millis(300));
        drop(stopper);
        hosts
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect::<Vec<_>>()
    });
    // the willing host runs the switch's configuration (after the reload:
    // PFC on 3 only)
    let adv = reports[0].advertised.unwrap();
    assert_eq!(adv.pfc.unwrap().enable, 0x08);
    assert!(reports.iter().all(|r| r.malformed == 0));
    // no shutdown LLDPDU when the controller stops (the data plane keeps
    // forwarding; hosts keep the switch's configuration for its TTL)
    assert_eq!(reports[0].switch.unwrap().ttl, 120);

    // tshark decodes both directions
    let _ = tshark.wait();
    let o = Command::new("tshark")
        .arg("-r")
        .arg(&pcap)
        .arg("-V")
        .output()
        .unwrap();
    if std::env::var_os("DCB_KEEP").is_none() {
        let _ = std::fs::remove_file(&pcap);
    }
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    let blocks: Vec<&str> = text.split("\nFrame ").collect();
    let from = |src: &str| -> Vec<&str> {
        blocks
            .iter()
            .copied()
            .filter(|b| b.contains(&format!("Src: {src}")))
            .collect()
    };
    let switch = from(PORTS[0].1);
    let host = from(PORTS[0].3);
    assert!(!switch.is_empty() && !host.is_empty(), "{text}");
    let has = |b: &str, lines: &[&str]| {
        for l in lines {
            assert!(
                b.lines().any(|x| x.trim() == *l),
                "tshark -V lacks {l:?}:\n{b}"
            );
        }
    };
    // the switch: not willing, PFC on 3 and 4, 8 TCs, ETS 12/13 %,
    // recommendation, RoCE (UDP 4791 = 0x12b7) on 3
    has(
        switch[0],
        &[
            "IEEE - ETS Configuration",
            ".... .000 = Maximum Number of Traffic Classes: 8 (0x0)",
            "Bandwidth for PGID 0: 12",
            "Bandwidth for PGID 7: 13",
            "TSA for Traffic Class 3: Enhanced Transmission Selection (2)",
            "IEEE - ETS Recommendation",
            "IEEE - Priority Flow Control Configuration",
            "0... .... = Willing: No",
            ".... 1000 = Max PFC Enabled Traffic Classes: 8",
            ".... 1... = PFC for Priority 3: Enabled",
            "...1 .... = PFC for Priority 4: Enabled",
            ".... ...0 = PFC for Priority 0: Disabled",
            "IEEE - Application Protocol",
            "011. .... = Application Priority: 3",
            ".... .011 = Application Selector: Port over UDP/DCCP (3)",
            "Application Protocol Id: 0x12b7",
        ],
    );
    // the willing host, after adopting: the same PFC vector and RoCE
    // priority, willing (before the reload to PFC on 3 only)
    let adopted = host
        .iter()
        .find(|b| b.contains("...1 .... = PFC for Priority 4: Enabled"))
        .unwrap_or_else(|| panic!("no host frame with PFC on 3 and 4:\n{text}"));
    has(
        adopted,
        &[
            "1... .... = Willing: Yes",
            ".... 1... = PFC for Priority 3: Enabled",
            "...1 .... = PFC for Priority 4: Enabled",
            "011. .... = Application Priority: 3",
            "Application Protocol Id: 0x12b7",
        ],
    );
}
