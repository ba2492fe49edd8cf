//! Faults under traffic: a steady RoCEv2 stream (5000 frames/s) routed
//! through a switch (h1 -> sw-p0 -> sw-p1 -> h2) while the controller is
//! SIGKILLed in the middle of a reload and of an upgrade, two reloads race,
//! its config file is replaced by garbage and reloaded, its bpffs pins are
//! removed, and a third port flaps at 10 Hz. Each: every frame of the
//! stream arrives, the counters read by `stats --json` never go back, and
//! a new `up` adopts the instance and the stream keeps flowing.
//! (`FAULTS_FLAP_SECS` sets the flapping time, 2 s by default; the full
//! 10 s run: `FAULTS_FLAP_SECS=10`.)

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use dataplane_common::build::{self, Ip, L2};
use dataplane_common::wire::bth::Bth;
use testbed::mapdump::{changed, tables, CONFIG_TABLES};
use testbed::netns::{veth, Netns};
use testbed::raw::send_frames;

/// A controller child with its stdout lines.
struct Ctl {
    child: Child,
    lines: mpsc::Receiver<String>,
    /// It adopted a running data plane.
    adopted: bool,
}

impl Ctl {
    fn wait_for(&self, pat: &str, timeout: Duration) -> Option<String> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(l) = self.lines.recv_timeout(Duration::from_millis(20)) {
                eprintln!("  dataplane: {l}");
                if l.contains(pat) {
                    return Some(l);
                }
            }
        }
        None
    }
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
    fn signal(&self, sig: i32) {
        // SAFETY: our own child.
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }
}

impl Drop for Ctl {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Namespaces, the config, the instance; detaches it at the end.
struct Rig {
    bin: String,
    sw: Netns,
    h1: Netns,
    h2: Netns,
    _h3: Netns,
    instance: String,
    cfg: PathBuf,
}

impl Drop for Rig {
    fn drop(&mut self) {
        let _ = Command::new(&self.bin)
            .args(["down", "--instance", &self.instance])
            .output();
        let _ = std::fs::remove_file(&self.cfg);
    }
}

fn config(instance: &str, extra_routes: usize) -> String {
    let mut t = format!(
        "[switch]\nname = \"{instance}\"\n[buffer]\npool_size = 16777216\n\
         [[port]]\nname = \"sw-p0\"\n[[port]]\nname = \"sw-p1\"\n[[port]]\nname = \"sw-p2\"\n\
         [[nexthop]]\nname = \"h2\"\nport = \"sw-p1\"\nmac = \"02:00:00:00:0e:11\"\n\
         [[nexthop]]\nname = \"h3\"\nport = \"sw-p2\"\nmac = \"02:00:00:00:0e:12\"\n\
         [[group]]\nname = \"g\"\nmembers = [{{ nexthop = \"h2\" }}, {{ nexthop = \"h3\" }}]\n\
         [[route]]\nprefix = \"198.18.1.0/24\"\nnexthop = \"h2\"\n\
         [[route]]\nprefix = \"198.18.3.0/24\"\nnexthop = \"h3\"\n\
         [[route]]\nprefix = \"198.18.4.0/24\"\ngroup = \"g\"\n"
    );
    for i in 0..extra_routes {
        t.push_str(&format!(
            "[[route]]\nprefix = \"198.19.{}.{}/32\"\nnexthop = \"h3\"\n",
            i / 256,
            i % 256
        ));
    }
    t
}

impl Rig {
    fn new(tag: &str) -> Rig {
        let sw = Netns::create(&format!("{tag}sw")).unwrap();
        let h1 = Netns::create(&format!("{tag}h1")).unwrap();
        let h2 = Netns::create(&format!("{tag}h2")).unwrap();
        let h3 = Netns::create(&format!("{tag}h3")).unwrap();
        for ns in [&sw, &h1, &h2, &h3] {
            ns.disable_ipv6().unwrap();
        }
        veth(
            &sw,
            "sw-p0",
            "02:00:00:00:0e:00",
            &h1,
            "eth0",
            "02:00:00:00:0e:10",
        )
        .unwrap();
        veth(
            &sw,
            "sw-p1",
            "02:00:00:00:0e:01",
            &h2,
            "eth0",
            "02:00:00:00:0e:11",
        )
        .unwrap();
        veth(
            &sw,
            "sw-p2",
            "02:00:00:00:0e:02",
            &h3,
            "eth0",
            "02:00:00:00:0e:12",
        )
        .unwrap();
        let instance = format!("{tag}{}", std::process::id());
        let cfg = std::env::temp_dir().join(format!("dp-{instance}.toml"));
        std::fs::write(&cfg, config(&instance, 0)).unwrap();
        Rig {
            bin: testbed::dataplane_bin(),
            sw,
            h1,
            h2,
            _h3: h3,
            instance,
            cfg,
        }
    }

    /// `dataplane <cmd> -c <cfg>` in the switch namespace; waits for
    /// `ready:` unless `wait` is false.
    fn start(&self, cmd: &str, wait: bool) -> Ctl {
        let mut child = Command::new(&self.bin)
            .args([
                "--netns",
                &self.sw.name,
                cmd,
                "-c",
                self.cfg.to_str().unwrap(),
                "--metrics",
                "off",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(l);
            }
        });
        let mut ctl = Ctl {
            child,
            lines: rx,
            adopted: false,
        };
        if wait {
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                let l = ctl.wait_for("", Duration::from_millis(200));
                ctl.adopted |= l.as_deref().is_some_and(|l| l.starts_with("adopted"));
                if l.as_deref().is_some_and(|l| l.starts_with("ready:")) {
                    break;
                }
                assert!(Instant::now() < deadline, "{cmd} did not get ready");
            }
        }
        ctl
    }

    fn rx(&self) -> u64 {
        let out = self
            .h2
            .exec(&["ip", "-s", "-j", "link", "show", "eth0"])
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v[0]["stats64"]["rx"]["packets"].as_u64().unwrap()
    }

    /// Runs `fault` while the stream flows and the counters are sampled;
    /// then checks that every frame arrived, no counter went back, and a
    /// new `up` adopts the instance (the stream flowing through it too).
    fn under_traffic(&self, fault: impl FnOnce() + Send) {
        let l2 = L2::new([2, 0, 0, 0, 0x0e, 0], [2, 0, 0, 0, 0x0e, 0x10]);
        let ip = Ip::v4([198, 18, 0, 1], [198, 18, 1, 1]).dscp(3).ecn(2);
        let frame = build::rocev2_frame(
            &l2,
            &ip,
            49152,
            &Bth::request(0x2a, 0x42, 1),
            None,
            &[0; 256],
        );
        let rx0 = self.rx();
        let (sent, stop) = (AtomicU64::new(0), AtomicBool::new(false));
        let went_back = Mutex::new(Vec::<String>::new());
        let samples = AtomicU64::new(0);
        std::thread::scope(|s| {
            s.spawn(|| {
                let batch = vec![frame.clone(); 50];
                while !stop.load(Ordering::Relaxed) {
                    sent.fetch_add(
                        send_frames(&self.h1, "eth0", &batch).unwrap() as u64,
                        Ordering::Relaxed,
                    );
                    std::thread::sleep(Duration::from_millis(10));
                }
            });
            s.spawn(|| {
                let mut last: std::collections::BTreeMap<String, u64> = Default::default();
                while !stop.load(Ordering::Relaxed) {
                    // (stats fail while the pins are gone; only decreases count)
                    if let Ok(v) = testbed::controller::stats_json(
                        Path::new(&self.bin),
                        &self.sw.name,
                        &self.instance,
                    ) {
                        samples.fetch_add(1, Ordering::Relaxed);
                        for p in v["ports"].as_array().into_iter().flatten() {
                            for (k, x) in p["counters"].as_object().into_iter().flatten() {
                                if dataplane_user::telemetry::metrics::kind_of(k) == "gauge" {
                                    continue;
                                }
                                let key = format!("{}.{k}", p["name"]);
                                let x = x.as_u64().unwrap_or(0);
                                if let Some(&old) = last.get(&key) {
                                    if x < old {
                                        went_back
                                            .lock()
                                            .unwrap()
                                            .push(format!("{key}: {old} -> {x}"));
                                    }
                                }
                                last.insert(key, x);
                            }
                        }
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            });
            // the stream and the sampler stop also when the fault panics
            struct Stop<'a>(&'a AtomicBool);
            impl Drop for Stop<'_> {
                fn drop(&mut self) {
                    self.0.store(true, Ordering::Relaxed);
                }
            }
            let _stop = Stop(&stop);
            std::thread::sleep(Duration::from_millis(300));
            // (the fault leaves no controller running)
            fault();
            let again = self.start("up", true);
            assert!(
                again.adopted,
                "the new `up` did not adopt the running data plane"
            );
            std::thread::sleep(Duration::from_millis(400));
            stop.store(true, Ordering::Relaxed);
            drop(again);
        });
        let sent = sent.load(Ordering::Relaxed);
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut got = self.rx() - rx0;
        while got < sent && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            got = self.rx() - rx0;
        }
        eprintln!(
            "sent {sent}, received {got}, {} counter samples",
            samples.load(Ordering::Relaxed)
        );
        assert!(sent >= 1000, "only {sent} frames sent");
        assert_eq!(got, sent, "frames of the stream lost");
        assert!(samples.load(Ordering::Relaxed) >= 3);
        let back = went_back.into_inner().unwrap();
        assert!(back.is_empty(), "counters went back: {back:?}");
    }
}

#[test]
fn sigkill_during_reload() {
    let rig = Rig::new("hfr");
    let mut ctl = Some(rig.start("up", true));
    rig.under_traffic(|| {
        // a reload that writes 2000 routes, killed at growing delays
        for delay_ms in [0u64, 10] {
            std::fs::write(&rig.cfg, config(&rig.instance, 2000 + delay_ms as usize)).unwrap();
            let c = ctl.take().unwrap_or_else(|| rig.start("up", true));
            c.signal(libc::SIGHUP);
            std::thread::sleep(Duration::from_millis(delay_ms));
            drop(c); // SIGKILL
            ctl = Some(rig.start("up", true));
        }
        ctl.take();
    });
}

#[test]
fn sigkill_during_upgrade() {
    let rig = Rig::new("hfu");
    let first = rig.start("up", true);
    rig.under_traffic(|| {
        let _first = first;
        for delay_ms in [0u64, 20] {
            let mut up = rig.start("upgrade", false);
            std::thread::sleep(Duration::from_millis(delay_ms));
            up.kill();
        }
    });
}

#[test]
fn two_reloads_racing_end_consistent() {
    let rig = Rig::new("hf2");
    let mut ctl = Some(rig.start("up", true));
    let dir = std::env::temp_dir().join(format!("hf2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (dir.join("a.toml"), dir.join("b.toml"));
    std::fs::write(&a, config(&rig.instance, 300)).unwrap();
    std::fs::write(&b, config(&rig.instance, 700)).unwrap();
    rig.under_traffic(|| {
        std::thread::scope(|s| {
            for f in [&a, &b] {
                let (bin, ns) = (&rig.bin, &rig.sw.name);
                s.spawn(move || {
                    let o = Command::new(bin)
                        .args(["--netns", ns, "reload", "-c"])
                        .arg(f)
                        .output()
                        .unwrap();
                    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
                });
            }
        });
        // one or both applied (two SIGHUPs may coalesce into one), in
        // some order; the last one's plan is exactly what the tables hold:
        // applying that file once more changes nothing
        let c = ctl.as_ref().unwrap();
        let mut last = c
            .wait_for("reload: applied", Duration::from_secs(10))
            .expect("no reload applied");
        if let Some(l) = c.wait_for("reload: applied", Duration::from_secs(3)) {
            last = l;
        }
        let file = if last.contains("a.toml") { &a } else { &b };
        let o = Command::new(&rig.bin)
            .args(["--netns", &rig.sw.name, "reload", "-c"])
            .arg(file)
            .output()
            .unwrap();
        assert!(o.status.success());
        let again = c
            .wait_for("reload: applied", Duration::from_secs(10))
            .expect("no reload applied");
        assert!(
            again.contains(": 0 entries changed"),
            "after the race the tables are not {}'s plan: {again}",
            file.display()
        );
        ctl.take();
    });
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn garbage_config_then_reload_changes_nothing() {
    let rig = Rig::new("hfg");
    let mut ctl = Some(rig.start("up", true));
    let before = tables(&rig.instance, &CONFIG_TABLES).unwrap();
    rig.under_traffic(|| {
        for garbage in [
            &b"\xff\xfe\x00garbage"[..],
            b"",
            b"[[port]]\nname = 7\n",
            b"[switch]\nname = \"other\"\n[[port]]\nname = \"sw-p0\"\n",
        ] {
            std::fs::write(&rig.cfg, garbage).unwrap();
            ctl.as_ref().unwrap().signal(libc::SIGHUP);
            assert!(ctl
                .as_ref()
                .unwrap()
                .wait_for("reload: refused, nothing changed", Duration::from_secs(5))
                .is_some());
        }
        let after = tables(&rig.instance, &CONFIG_TABLES).unwrap();
        assert!(
            changed(&before, &after).is_empty(),
            "a refused reload changed {:?}",
            changed(&before, &after)
        );
        std::fs::write(&rig.cfg, config(&rig.instance, 0)).unwrap();
        ctl.take();
    });
}

#[test]
fn link_flapping_at_10_hz_loses_nothing_elsewhere() {
    let secs: u64 = std::env::var("FAULTS_FLAP_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let rig = Rig::new("hfl");
    let mut ctl = Some(rig.start("up", true));
    rig.under_traffic(|| {
        let t0 = Instant::now();
        let mut flaps = 0;
        // a change every 50 ms on a fixed schedule (the `ip` calls' own
        // time is inside it)
        let mut next = t0;
        while t0.elapsed() < Duration::from_secs(secs) {
            for state in ["down", "up"] {
                next += Duration::from_millis(50);
                rig.sw.ip(&["link", "set", "sw-p2", state]).unwrap();
                std::thread::sleep(next.saturating_duration_since(Instant::now()));
            }
            flaps += 1;
        }
        eprintln!("{flaps} flaps of sw-p2 in {:?}", t0.elapsed());
        assert!(flaps >= 5 * secs);
        ctl.take();
    });
}

/// The kernel id of each configuration table pinned in `dir`.
fn pin_ids(dir: &Path) -> std::collections::BTreeMap<String, u32> {
    CONFIG_TABLES
        .iter()
        .map(|name| {
            let m = aya::maps::MapData::from_pin(dir.join(name))
                .unwrap_or_else(|e| panic!("{name} not pinned: {e}"));
            (name.to_string(), m.info().unwrap().id())
        })
        .collect()
}

#[test]
fn pins_removed_under_a_running_controller_are_restored() {
    let rig = Rig::new("hfp");
    let mut ctl = Some(rig.start("up", true));
    let dir = Path::new("/sys/fs/bpf/dataplane").join(&rig.instance);
    let before = pin_ids(&dir);
    rig.under_traffic(|| {
        std::fs::remove_dir_all(&dir).unwrap();
        let c = ctl.as_ref().unwrap();
        assert!(
            c.wait_for("pins: restored", Duration::from_secs(5))
                .is_some(),
            "the removed pins were not restored"
        );
        for p in [
            "links/sw-p0",
            "links/sw-p1",
            "links/sw-p2",
            "PORT_CONFIG",
            "PORT_COUNTERS",
            "GROUPS",
        ] {
            assert!(dir.join(p).exists(), "{p} not pinned again");
        }
        // the same maps, not new ones: their kernel ids (their contents
        // may move under traffic: POOL's bytes in use)
        let after = pin_ids(&dir);
        let differ: Vec<&String> = before
            .iter()
            .filter(|(name, id)| after.get(*name) != Some(id))
            .map(|(name, _)| name)
            .collect();
        assert!(
            differ.is_empty(),
            "the restored pins are other maps: {differ:?} (ids before {before:?}, after {after:?})"
        );
        ctl.take();
    });
}
