// Over 800 lines: six watchdog runs share one switch/host harness, its storm course and its checks.
//! The PFC watchdog end to end, with SONiC's semantics: a switch running
//! the real data plane (`dataplane up`) between a sender host and a
//! receiver host (veth, network namespaces); the sender sends lossless
//! RoCEv2 (priority 3) to the receiver and honours PFC as a NIC does; the
//! receiver turns into a stuck NIC that storms PFC frames at the switch
//! port (AF_PACKET, 65535 quanta every 2 ms) while the traffic is queued
//! behind the pause, and sends a slow reverse flow on the same priority
//! (so the stormed priority's received packets are counted too).
//!
//! * `pfcwd_drop`: detected; the queue's packets are dropped and counted
//!   (TX DROP), what the stormed host sends on the priority is dropped (RX
//!   DROP), its PFC is ignored (the model's queue no longer paused though
//!   PFC keeps arriving); restored after the storm stops; traffic flows.
//! * `pfcwd_forward`: detected; PFC ignored and traffic flows to the
//!   stormed host (TX OK), its reverse flow passes (RX OK), nothing dropped.
//! * `pfcwd_alert`: detected; nothing changes (the queue stays paused, the
//!   sender stays paused, no packet dropped or counted in storm); restored
//!   as soon as the storm stops (SONiC: alert ends with the storm
//!   condition).
//! * `pfcwd_short_storms`: storms of 150 ms (detection 200 ms) never
//!   trigger.
//! * `pfcwd_every_priority_at_once`: priorities 3 and 4 both lossless and
//!   both stormed at once (one frame pausing both), action drop, for 3 s
//!   with a 100 ms restoration time (30 restoration times): exactly one
//!   detection per queue and one restoration each, after the storm (the
//!   storm/restore loop of sonic-buildimage#29203 does not happen).
//!
//! Each checks `dataplane events --history`, the stats counters and `show
//! pfcwd stats` (text and JSON). Every port runs at `speed = "100M"` (see
//! `incast.rs` on scaling); detection 200 ms, poll 50 ms.
//!
//! Run: `cargo test -p testbed --test pfcwd -- --nocapture --test-threads=1`

mod common;
use common::{finish, StopOnDrop};

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use testbed::controller::Controller;
use testbed::host::{run_pfc_storm_on, run_receiver, run_sender, RxLive, SenderSpec};
use testbed::netns::{veth, Netns};
use testbed::slow;
use testbed::topo::mac_str;

static BIN: std::sync::LazyLock<String> = std::sync::LazyLock::new(testbed::dataplane_bin);

const SPEED_MBPS: u32 = 100;
/// The switch's sender and receiver ports.
const SW_S: &str = "pw-s";
const SW_R: &str = "pw-r";
const SW_S_MAC: [u8; 6] = [0x02, 0, 0, 0x51, 0, 0];
const SW_R_MAC: [u8; 6] = [0x02, 0, 0, 0x51, 1, 0];
const S_MAC: [u8; 6] = [0x02, 0, 0, 0x52, 0, 1];
const R_MAC: [u8; 6] = [0x02, 0, 0, 0x52, 1, 1];
const S_IP: [u8; 4] = [198, 18, 21, 10];
const R_IP: [u8; 4] = [198, 18, 22, 10];

/// The scenarios share the CPUs with their hosts: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

struct Fabric {
    sw: Netns,
    s: Netns,
    r: Netns,
}

impl Fabric {
    fn create() -> Fabric {
        let (sw, s, r) = (
            Netns::create("pwsw").unwrap(),
            Netns::create("pws").unwrap(),
            Netns::create("pwr").unwrap(),
        );
        for ns in [&sw, &s, &r] {
            ns.disable_ipv6().unwrap();
        }
        veth(&sw, SW_S, &mac_str(SW_S_MAC), &s, "s-eth0", &mac_str(S_MAC)).unwrap();
        veth(&sw, SW_R, &mac_str(SW_R_MAC), &r, "r-eth0", &mac_str(R_MAC)).unwrap();
        Fabric { sw, s, r }
    }

    /// A PFC storm from the receiver host on the priorities of `vector`
    /// (XOFF 65535 quanta every 2 ms) until `stop`; the frames sent.
    fn storm(&self, vector: u8, stop: &AtomicBool) -> anyhow::Result<u64> {
        let _in = self.r.enter().unwrap();
        run_pfc_storm_on(
            "r-eth0",
            R_MAC,
            vector,
            0xffff,
            Duration::from_millis(2),
            stop,
        )
    }
}

struct Setup {
    action: &'static str,
    pfc_enable: &'static str,
    restoration_ms: u32,
}

fn config(instance: &str, st: &Setup) -> String {
    let mut s = format!(
        r#"
[switch]
name = "{instance}"

[buffer]
pool_size = 262144
dynamic_th = 0
xon_offset = 24576
mtu = 1500
cable_length_m = 5
tick_us = 200

[pfcwd]
detection_time_ms = 200
restoration_time_ms = {}
poll_interval_ms = 50
action = "{}"
"#,
        st.restoration_ms, st.action
    );
    for (name, mac) in [(SW_S, SW_S_MAC), (SW_R, SW_R_MAC)] {
        s.push_str(&format!(
            r#"
[[port]]
name = "{name}"
mac = "{}"
speed = "{SPEED_MBPS}M"
dscp_to_tc_map = "AZURE"
pfc_enable = "{}"
"#,
            mac_str(mac),
            st.pfc_enable
        ));
    }
    s.push_str(&format!(
        r#"
[[nexthop]]
name = "receiver"
port = "{SW_R}"
mac = "{}"

[[nexthop]]
name = "sender"
port = "{SW_S}"
mac = "{}"

[[route]]
prefix = "198.18.22.0/24"
nexthop = "receiver"

[[route]]
prefix = "198.18.21.0/24"
nexthop = "sender"
"#,
        mac_str(R_MAC),
        mac_str(S_MAC)
    ));
    s
}

/// Lossless RoCEv2 of priority `prio` (DSCP = priority under AZURE) from
/// the host on `ifname`.
fn spec(ifname: &str, fwd: bool, prio: u8, rate_mbps: u32, honour_pfc: bool) -> SenderSpec {
    let (src_mac, dst_mac, src_ip, dst_ip) = if fwd {
        (S_MAC, SW_S_MAC, S_IP, R_IP)
    } else {
        (R_MAC, SW_R_MAC, R_IP, S_IP)
    };
    SenderSpec {
        ifname: ifname.into(),
        src_mac,
        dst_mac,
        src_ip,
        dst_ip,
        dscp: prio,
        ecn: 2,
        prio,
        rate_mbps,
        payload: 1024,
        message_pkts: 64,
        dest_qp: 0x200 + u32::from(prio) + if fwd { 0 } else { 0x10 },
        udp_sport: 50000 + u16::from(prio) + if fwd { 0 } else { 100 },
        honour_pfc,
    }
}

/// A running switch with its hosts and the reads a scenario makes.
/// The controller is declared first: it goes first (detaching the data
/// plane and removing its pins) while the namespaces still exist.
struct Run {
    ctl: Controller,
    instance: String,
    fab: Fabric,
}

impl Run {
    /// `tag` names the instance (unique per test: pins outlive a run).
    fn start(tag: &str, st: &Setup) -> Run {
        let fab = Fabric::create();
        let instance = format!("pwd{tag}{}", std::process::id());
        let ctl = Controller::start(
            Path::new(BIN.as_str()),
            &fab.sw,
            &instance,
            &config(&instance, st),
            "switch",
        )
        .unwrap_or_else(|e| panic!("{e:#}"));
        Run { ctl, instance, fab }
    }

    fn stats(&self) -> serde_json::Value {
        testbed::controller::stats_json(Path::new(BIN.as_str()), &self.fab.sw.name, &self.instance)
            .expect("dataplane stats")
    }

    fn dataplane(&self, args: &[&str]) -> String {
        let mut a = vec!["--netns", &self.fab.sw.name];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--instance", &self.instance]);
        let out = Command::new(BIN.as_str()).args(&a).output().unwrap();
        assert!(
            out.status.success(),
            "dataplane {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Storm events of the controller's log for `prio` on the receiver port.
    fn storm_lines(&self, what: &str, prio: u8) -> Vec<String> {
        let want = format!("pfcwd: storm {what} on {SW_R} priority {prio} ");
        self.ctl
            .history()
            .into_iter()
            .filter(|l| l.starts_with(&want))
            .collect()
    }

    fn wait(&self, what: &str, prio: u8, timeout: Duration) -> Option<Instant> {
        wait_on(&self.ctl, what, prio, timeout)
    }
}

/// When `ctl` said `pfcwd: storm <what>` for `prio` on the receiver port.
fn wait_on(ctl: &Controller, what: &str, prio: u8, timeout: Duration) -> Option<Instant> {
    let want = format!("pfcwd: storm {what} on {SW_R} priority {prio} ");
    ctl.wait_line(|l| l.starts_with(&want), timeout)
        .map(|(t, _)| t)
}

/// Waits (up to `within`) for the receiver's next frame; the count it
/// waited from.
fn next_frame(live: &RxLive, within: Duration) -> u64 {
    let rx1 = live.frames.load(Ordering::Relaxed);
    let t = Instant::now();
    while live.frames.load(Ordering::Relaxed) == rx1 && t.elapsed() < within {
        std::thread::sleep(Duration::from_millis(10));
    }
    rx1
}

fn c(s: &serde_json::Value, port: &str, name: &str) -> u64 {
    testbed::controller::port_counter(s, port, name)
        .unwrap_or_else(|| panic!("no counter {name} on {port} in stats"))
}

/// What one storm scenario saw.
#[derive(Default, Debug)]
struct Seen {
    detected_after_ms: Option<f64>,
    restored_after_stop_ms: Option<f64>,
    /// Frames the receiver got before the storm (300 ms), during the storm
    /// from 100 ms after detection (for `held_ms`), after restoration (up
    /// to 1 s).
    rx_before: u64,
    rx_in_storm: u64,
    rx_after: u64,
    held_ms: u64,
}

/// The common course: traffic, a storm on `prios` of the receiver's port
/// held `held` after detection, the storm's end, the restoration.
fn storm_course(
    run: &Run,
    prios: &[u8],
    held: Duration,
    stats_mid: &mut serde_json::Value,
) -> Seen {
    let stop_tx = AtomicBool::new(false);
    let stop_rx = AtomicBool::new(false);
    let stop_rev = AtomicBool::new(false);
    let stop_storm = AtomicBool::new(false);
    let live = RxLive::default();
    let mut seen = Seen::default();
    let vector = prios.iter().fold(0u8, |v, p| v | 1 << p);
    let fab = &run.fab;
    let rate = SPEED_MBPS / prios.len() as u32;
    std::thread::scope(|sc| {
        let _stop = StopOnDrop(vec![&stop_tx, &stop_rx, &stop_rev, &stop_storm]);
        sc.spawn(|| {
            let _in = fab.r.enter().unwrap();
            run_receiver("r-eth0", &stop_rx, Duration::from_millis(100), &live)
        });
        std::thread::sleep(Duration::from_millis(50));
        for &p in prios {
            let (stop, s) = (&stop_tx, &fab.s);
            sc.spawn(move || {
                let _in = s.enter().unwrap();
                run_sender(
                    &spec("s-eth0", true, p, rate, true),
                    Instant::now() + slow::scaled(Duration::from_secs(20)),
                    stop,
                )
            });
        }
        // the stormed host's own slow flow on the first stormed priority
        sc.spawn(|| {
            let _in = fab.r.enter().unwrap();
            run_sender(
                &spec("r-eth0", false, prios[0], 5, false),
                Instant::now() + slow::scaled(Duration::from_secs(20)),
                &stop_rev,
            )
        });
        std::thread::sleep(Duration::from_millis(300));
        seen.rx_before = live.frames.load(Ordering::Relaxed);
        let storm_start = Instant::now();
        let storm = sc.spawn(|| fab.storm(vector, &stop_storm));
        let det = run.wait("detected", prios[0], slow::scaled(Duration::from_secs(2)));
        seen.detected_after_ms = det.map(|t| (t - storm_start).as_secs_f64() * 1e3);
        std::thread::sleep(Duration::from_millis(100));
        let rx0 = live.frames.load(Ordering::Relaxed);
        std::thread::sleep(held);
        seen.rx_in_storm = live.frames.load(Ordering::Relaxed) - rx0;
        seen.held_ms = held.as_millis() as u64;
        *stats_mid = run.stats();
        stop_storm.store(true, Ordering::Relaxed);
        let storm_end = Instant::now();
        let sent = storm.join().unwrap().unwrap();
        println!("  storm source sent {sent} PFC frames");
        let res = run.wait("restored", prios[0], slow::scaled(Duration::from_secs(2)));
        seen.restored_after_stop_ms = res.map(|t| (t - storm_end).as_secs_f64() * 1e3);
        // traffic after restoration (a pause of the last storm frame may
        // still run out first: 335 ms at 100 Mb/s)
        let rx1 = next_frame(&live, slow::scaled(Duration::from_secs(1)));
        std::thread::sleep(Duration::from_millis(100));
        seen.rx_after = live.frames.load(Ordering::Relaxed) - rx1;
        stop_rev.store(true, Ordering::Relaxed);
        stop_tx.store(true, Ordering::Relaxed);
        stop_rx.store(true, Ordering::Relaxed);
    });
    println!("  {seen:?}");
    seen
}

/// The checks every action shares: one detection, one restoration, the
/// events in `dataplane events --history`, the counters in stats and in
/// `show pfcwd stats`.
fn check_common(run: &Run, prio: u8, seen: &Seen, f: &mut Vec<String>) {
    // the slack above the detection time stretches with the slow-machine
    // factor (the controller's polls run late on an emulated machine)
    let latest = 200.0 + 300.0 * slow::factor();
    match seen.detected_after_ms {
        Some(ms) if (200.0..=latest).contains(&ms) => {}
        Some(ms) => f.push(format!(
            "storm detected {ms:.0} ms after it started (detection 200 ms, poll 50 ms: expected 200-{latest:.0})"
        )),
        None => f.push("no storm detected within 2 s".into()),
    }
    if seen.restored_after_stop_ms.is_none() {
        f.push("no storm restored within 2 s of the storm's end".into());
    }
    if seen.rx_before == 0 {
        f.push("no traffic reached the receiver before the storm".into());
    }
    if seen.rx_after == 0 {
        f.push("no traffic reached the receiver after restoration".into());
    }
    let ev = run.dataplane(&["events", "--history", "--timeout", "0"]);
    for kind in ["pfcwd_storm_detected", "pfcwd_storm_restored"] {
        let n = ev
            .lines()
            .filter(|l| l.contains(kind) && l.contains(SW_R))
            .count();
        if n != 1 {
            f.push(format!(
                "{n} {kind} events for {SW_R} in `dataplane events --history` (want 1):\n{ev}"
            ));
        }
    }
    let end = run.stats();
    let k = |n: &str| c(&end, SW_R, &format!("{n}[{prio}]"));
    if (
        k("pfcwd_storm_detected"),
        k("pfcwd_storm_restored"),
        k("pfcwd_in_storm"),
    ) != (1, 1, 0)
    {
        f.push(format!(
            "stats: pfcwd_storm_detected {} restored {} in_storm {} (want 1 1 0)",
            k("pfcwd_storm_detected"),
            k("pfcwd_storm_restored"),
            k("pfcwd_in_storm")
        ));
    }
    // `show pfcwd stats`: the queue's row and JSON agree with the counters
    let q = format!("{SW_R}:{prio}");
    let text = run.dataplane(&["show", "pfcwd", "stats"]);
    println!("{text}");
    let row = format!(
        "{q}  operational  {:>25}  {:>12}  {:>12}  {:>17}  {:>17}",
        "1/1",
        format!("{}/{}", k("wd_tx_ok"), k("wd_drop")),
        format!("{}/{}", k("wd_rx_ok"), k("wd_rx_drop")),
        format!("{}/{}", k("pfcwd_tx_last_ok"), k("pfcwd_tx_last_drop")),
        format!("{}/{}", k("pfcwd_rx_last_ok"), k("pfcwd_rx_last_drop")),
    );
    if !text.lines().any(|l| l.trim_start() == row) {
        f.push(format!("`show pfcwd stats` has no row\n{row}\n:\n{text}"));
    }
    let json: serde_json::Value =
        serde_json::from_str(&run.dataplane(&["show", "pfcwd", "stats", "--json"])).unwrap();
    let j = |n: &str| json[&q][n].as_u64().unwrap_or(u64::MAX);
    if j("PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS") != k("wd_drop")
        || j("PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED") != 1
        || json[&q]["PFC_WD_STATUS"] != "operational"
    {
        f.push(format!("`show pfcwd stats --json` for {q}: {}", json[&q]));
    }
    // one storm so far: the last storm's figures are the totals
    for (last, total) in [
        ("pfcwd_tx_last_ok", "wd_tx_ok"),
        ("pfcwd_tx_last_drop", "wd_drop"),
        ("pfcwd_rx_last_ok", "wd_rx_ok"),
        ("pfcwd_rx_last_drop", "wd_rx_drop"),
    ] {
        if k(last) != k(total) {
            f.push(format!(
                "{last} {} != {total} {} after one storm",
                k(last),
                k(total)
            ));
        }
    }
}

/// One storm on priority 3 of the receiver's port under `action`, with
/// the common checks made and the in-storm changes of the port's watchdog
/// counters printed.
struct OneStorm {
    run: Run,
    seen: Seen,
    before: serde_json::Value,
    mid: serde_json::Value,
    f: Vec<String>,
}

impl OneStorm {
    fn run(tag: &str, action: &'static str) -> OneStorm {
        let run = Run::start(
            tag,
            &Setup {
                action,
                pfc_enable: "3",
                restoration_ms: 200,
            },
        );
        let before = run.stats();
        let mut mid = serde_json::Value::Null;
        let seen = storm_course(&run, &[3], Duration::from_millis(500), &mut mid);
        let mut f = Vec::new();
        check_common(&run, 3, &seen, &mut f);
        // `show pfcwd config`: what the controller watches with
        let text = run.dataplane(&["show", "pfcwd", "config"]);
        let mut want = String::from(
            "Changed polling interval to 50ms\n  PORT    ACTION    DETECTION TIME    RESTORATION TIME    HISTORY\n------  --------  ----------------  ------------------  ---------\n",
        );
        for p in [SW_R, SW_S] {
            want.push_str(&format!(
                "  {p}  {action:>8}               200                 200    disable\n"
            ));
        }
        if text != want {
            f.push(format!("`show pfcwd config`:\n{text}\nwant:\n{want}"));
        }
        let o = OneStorm {
            run,
            seen,
            before,
            mid,
            f,
        };
        println!(
            "  in storm: rx_pfc[3] +{}, queue_paused[3] {}, wd_tx_ok[3] +{}, wd_drop[3] +{}, wd_rx_ok[3] +{}, wd_rx_drop[3] +{}",
            o.d("rx_pfc[3]"),
            o.at_mid("queue_paused[3]"),
            o.d("wd_tx_ok[3]"),
            o.d("wd_drop[3]"),
            o.d("wd_rx_ok[3]"),
            o.d("wd_rx_drop[3]")
        );
        o
    }

    /// A counter's change from before the traffic to the storm's end.
    fn d(&self, n: &str) -> u64 {
        c(&self.mid, SW_R, n).saturating_sub(c(&self.before, SW_R, n))
    }

    /// A counter (or gauge) at the storm's end.
    fn at_mid(&self, n: &str) -> u64 {
        c(&self.mid, SW_R, n)
    }

    fn fail(&mut self, msg: String) {
        self.f.push(msg);
    }

    /// The receiver got (almost) nothing while the storm was held: `what`
    /// names the storm in the failure.
    fn check_receiver_held(&mut self, what: &str) {
        if self.seen.rx_in_storm > 2 {
            let m = format!(
                "the receiver got {} frames during {} ms of {what}",
                self.seen.rx_in_storm, self.seen.held_ms
            );
            self.fail(m);
        }
    }

    /// PFC kept arriving and counting, and the queue is not paused: the
    /// storm action ignores it.
    fn check_pfc_ignored(&mut self) {
        if self.d("rx_pfc[3]") < 100 || self.at_mid("queue_paused[3]") != 0 {
            let m = format!(
                "PFC not ignored in storm: rx_pfc[3] +{}, queue_paused[3] {}",
                self.d("rx_pfc[3]"),
                self.at_mid("queue_paused[3]")
            );
            self.fail(m);
        }
    }

    fn finish(mut self, name: &str) {
        self.run.ctl.halt();
        finish(name, self.f);
    }
}

#[test]
fn pfcwd_drop() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut o = OneStorm::run("drop", "drop");
    o.check_receiver_held("a drop storm");
    if o.d("wd_drop[3]") == 0 {
        o.fail("the stormed queue's packets were not dropped (wd_drop[3] did not grow)".into());
    }
    if o.d("wd_rx_drop[3]") == 0 {
        o.fail(
            "the stormed host's own packets were not dropped (wd_rx_drop[3] did not grow)".into(),
        );
    }
    if o.d("wd_tx_ok[3]") + o.d("wd_rx_ok[3]") != 0 {
        o.fail("packets passed a drop storm (wd_tx_ok / wd_rx_ok grew)".into());
    }
    o.check_pfc_ignored();
    if let Some(ms) = o.seen.restored_after_stop_ms.filter(|&ms| ms < 190.0) {
        o.fail(format!(
            "restored {ms:.0} ms after the storm stopped (restoration 200 ms)"
        ));
    }
    o.finish("pfcwd_drop");
}

#[test]
fn pfcwd_forward() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut o = OneStorm::run("fwd", "forward");
    // 500 ms at 100 Mb/s is ~5700 frames of 1098 bytes: at least a third
    if o.seen.rx_in_storm < 1900 {
        let m = format!(
            "only {} frames reached the receiver in {} ms of a forward storm",
            o.seen.rx_in_storm, o.seen.held_ms
        );
        o.fail(m);
    }
    if o.d("wd_tx_ok[3]") == 0 || o.d("wd_rx_ok[3]") == 0 {
        o.fail("wd_tx_ok[3] / wd_rx_ok[3] did not grow in a forward storm".into());
    }
    if o.d("wd_drop[3]") + o.d("wd_rx_drop[3]") != 0 {
        o.fail("packets dropped in a forward storm".into());
    }
    o.check_pfc_ignored();
    o.finish("pfcwd_forward");
}

#[test]
fn pfcwd_alert() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut o = OneStorm::run("alert", "alert");
    // nothing changes: the queue stays paused, the sender is held by the
    // switch's PFC, nothing is dropped or counted in storm
    o.check_receiver_held("an alert storm (the pause must hold)");
    if o.at_mid("queue_paused[3]") != 1 || o.at_mid("pfcwd_in_storm[3]") != 1 {
        let m = format!(
            "alert storm: queue_paused[3] {}, pfcwd_in_storm[3] {} (want 1, 1)",
            o.at_mid("queue_paused[3]"),
            o.at_mid("pfcwd_in_storm[3]")
        );
        o.fail(m);
    }
    for n in ["wd_drop[3]", "wd_rx_drop[3]", "wd_tx_ok[3]", "wd_rx_ok[3]"] {
        if o.d(n) != 0 {
            let m = format!("{n} grew by {} in an alert storm", o.d(n));
            o.fail(m);
        }
    }
    // SONiC: the alert storm ends with the first poll without PFC
    if let Some(ms) = o.seen.restored_after_stop_ms.filter(|&ms| ms > 150.0) {
        o.fail(format!(
            "alert storm restored {ms:.0} ms after the storm stopped (expected within a poll or two)"
        ));
    }
    o.finish("pfcwd_alert");
}

/// The receiver on the receiver host and a line-rate priority-3 sender
/// honouring PFC on the sender host, in scope `sc`, then 300 ms of traffic.
fn receiver_and_sender<'s>(
    sc: &'s std::thread::Scope<'s, '_>,
    fab: &'s Fabric,
    stop_rx: &'s AtomicBool,
    stop_tx: &'s AtomicBool,
    live: &'s RxLive,
) {
    sc.spawn(move || {
        let _in = fab.r.enter().unwrap();
        run_receiver("r-eth0", stop_rx, Duration::from_millis(100), live)
    });
    sc.spawn(move || {
        let _in = fab.s.enter().unwrap();
        run_sender(
            &spec("s-eth0", true, 3, SPEED_MBPS, true),
            Instant::now() + slow::scaled(Duration::from_secs(20)),
            stop_tx,
        )
    });
    std::thread::sleep(Duration::from_millis(300));
}

#[test]
fn pfcwd_short_storms() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut run = Run::start(
        "short",
        &Setup {
            action: "drop",
            pfc_enable: "3",
            restoration_ms: 200,
        },
    );
    let stop_tx = AtomicBool::new(false);
    let stop_rx = AtomicBool::new(false);
    let live = RxLive::default();
    let mut sent = 0;
    let fab = &run.fab;
    let stops: Vec<AtomicBool> = (0..4).map(|_| AtomicBool::new(false)).collect();
    std::thread::scope(|sc| {
        let _stop = StopOnDrop(vec![&stop_tx, &stop_rx]);
        receiver_and_sender(sc, fab, &stop_rx, &stop_tx, &live);
        // four storms of 150 ms, 400 ms apart (each pause then runs out:
        // 335 ms after the last frame)
        for stop in &stops {
            let storm = sc.spawn(move || fab.storm(1 << 3, stop));
            std::thread::sleep(Duration::from_millis(150));
            stop.store(true, Ordering::Relaxed);
            sent += storm.join().unwrap().unwrap();
            std::thread::sleep(Duration::from_millis(400));
        }
        stop_tx.store(true, Ordering::Relaxed);
        stop_rx.store(true, Ordering::Relaxed);
    });
    let end = run.stats();
    let mut f = Vec::new();
    println!(
        "  4 storms of 150 ms ({sent} PFC frames), rx_pfc[3] {}, receiver got {} frames",
        c(&end, SW_R, "rx_pfc[3]"),
        live.frames.load(Ordering::Relaxed)
    );
    if c(&end, SW_R, "rx_pfc[3]") < sent.saturating_sub(4) {
        f.push(format!(
            "the switch counted {} of {sent} PFC frames",
            c(&end, SW_R, "rx_pfc[3]")
        ));
    }
    if c(&end, SW_R, "pfcwd_storm_detected[3]") != 0 {
        f.push(format!(
            "{} storms detected for storms of 150 ms (detection 200 ms)",
            c(&end, SW_R, "pfcwd_storm_detected[3]")
        ));
    }
    let detected: Vec<String> = run
        .ctl
        .history()
        .into_iter()
        .filter(|l| l.starts_with("pfcwd: storm"))
        .collect();
    if !detected.is_empty() {
        f.push(format!("watchdog events: {detected:?}"));
    }
    run.ctl.halt();
    finish("pfcwd_short_storms", f);
}

#[test]
fn pfcwd_every_priority_at_once() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut run = Run::start(
        "all",
        &Setup {
            action: "drop",
            pfc_enable: "3,4",
            restoration_ms: 100,
        },
    );
    let mut mid = serde_json::Value::Null;
    // 3 s of storm after detection: 30 restoration times
    let seen = storm_course(&run, &[3, 4], Duration::from_secs(3), &mut mid);
    let mut f = Vec::new();
    if seen.detected_after_ms.is_none() || seen.restored_after_stop_ms.is_none() {
        f.push(format!("{seen:?}"));
    }
    for prio in [3u8, 4] {
        let det = run.storm_lines("detected", prio);
        let res = run.storm_lines("restored", prio);
        println!(
            "  priority {prio}: {} detection(s), {} restoration(s); in storm: pfcwd_in_storm {}, rx_pfc +{}",
            det.len(),
            res.len(),
            c(&mid, SW_R, &format!("pfcwd_in_storm[{prio}]")),
            c(&mid, SW_R, &format!("rx_pfc[{prio}]"))
        );
        if det.len() != 1 || res.len() != 1 {
            f.push(format!(
                "priority {prio}: {} detections and {} restorations in one storm of {} ms (want 1 and 1)",
                det.len(),
                res.len(),
                seen.held_ms
            ));
        }
        if c(&mid, SW_R, &format!("pfcwd_in_storm[{prio}]")) != 1 {
            f.push(format!("priority {prio} not in storm at the storm's end"));
        }
        let end = run.stats();
        let k = |n: &str| c(&end, SW_R, &format!("{n}[{prio}]"));
        if (k("pfcwd_storm_detected"), k("pfcwd_storm_restored")) != (1, 1) {
            f.push(format!(
                "priority {prio}: stats detected {} restored {} (want 1 1)",
                k("pfcwd_storm_detected"),
                k("pfcwd_storm_restored")
            ));
        }
    }
    run.ctl.halt();
    finish("pfcwd_every_priority_at_once", f);
}

/// A storm in force when the controller dies (SIGKILL) stays in force (the
/// data plane keeps dropping), is adopted by the next controller of the
/// instance, and that one restores it once the storm stops.
#[test]
fn pfcwd_storm_survives_a_controller_restart() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let setup = Setup {
        action: "drop",
        pfc_enable: "3",
        restoration_ms: 200,
    };
    let mut run = Run::start("restart", &setup);
    let text = config(&run.instance, &setup);
    let (ctl, fab, instance) = (&mut run.ctl, &run.fab, &run.instance);
    let (stop_tx, stop_rx, stop_storm) = (
        AtomicBool::new(false),
        AtomicBool::new(false),
        AtomicBool::new(false),
    );
    let live = RxLive::default();
    let mut f = Vec::new();
    let mut old = None;
    std::thread::scope(|sc| {
        let _stop = StopOnDrop(vec![&stop_tx, &stop_rx, &stop_storm]);
        receiver_and_sender(sc, fab, &stop_rx, &stop_tx, &live);
        let storm = sc.spawn(|| fab.storm(1 << 3, &stop_storm));
        if wait_on(ctl, "detected", 3, slow::scaled(Duration::from_secs(2))).is_none() {
            f.push("no storm detected within 2 s".to_string());
        }
        // the controller dies; the data plane keeps the storm action
        ctl.kill();
        let ctl2 = Controller::start(Path::new(BIN.as_str()), &fab.sw, instance, &text, "switch2")
            .unwrap_or_else(|e| panic!("{e:#}"));
        old = Some(std::mem::replace(ctl, ctl2));
        let adopted = ctl.wait_line(
            |l| {
                l.starts_with(&format!(
                    "pfcwd: storm in force on {SW_R} priority 3 adopted"
                ))
            },
            Duration::from_secs(2),
        );
        if adopted.is_none() {
            f.push("the new controller did not adopt the storm in force".into());
        }
        let rx0 = live.frames.load(Ordering::Relaxed);
        std::thread::sleep(Duration::from_millis(300));
        let in_storm = live.frames.load(Ordering::Relaxed) - rx0;
        if in_storm > 2 {
            f.push(format!(
                "{in_storm} frames reached the stormed host across the restart"
            ));
        }
        stop_storm.store(true, Ordering::Relaxed);
        storm.join().unwrap().unwrap();
        if wait_on(ctl, "restored", 3, slow::scaled(Duration::from_secs(2))).is_none() {
            f.push("the new controller did not restore the storm within 2 s of its end".into());
        }
        let rx1 = next_frame(&live, slow::scaled(Duration::from_secs(1)));
        if live.frames.load(Ordering::Relaxed) == rx1 {
            f.push("no traffic after the restoration".into());
        }
        stop_tx.store(true, Ordering::Relaxed);
        stop_rx.store(true, Ordering::Relaxed);
    });
    let end = run.stats();
    let k = |n: &str| c(&end, SW_R, &format!("{n}[3]"));
    println!(
        "  after the restart: detected {}, restored {}, in storm {}, wd_drop {}",
        k("pfcwd_storm_detected"),
        k("pfcwd_storm_restored"),
        k("pfcwd_in_storm"),
        k("wd_drop")
    );
    if (
        k("pfcwd_storm_detected"),
        k("pfcwd_storm_restored"),
        k("pfcwd_in_storm"),
    ) != (1, 1, 0)
    {
        f.push("counters across the restart: want detected 1, restored 1, in storm 0".into());
    }
    run.ctl.halt();
    drop(run);
    drop(old);
    finish("pfcwd_storm_survives_a_controller_restart", f);
}
