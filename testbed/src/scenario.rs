//! AI-fabric traffic scenarios on a [`Fabric`], their measurement and
//! their report (table, JSON with stable names, SVG plots).
//!
//! | scenario      | traffic                                                        |
//! |---------------|----------------------------------------------------------------|
//! | `incast`      | N senders (default: every other host) write `bytes` each to one receiver |
//! | `all-reduce`  | ring all-reduce of `bytes` per host: 2(N-1) steps of `bytes/N`, each step sends what the previous one received; the ring alternates leaves, so every hop crosses the spines |
//! | `permutation` | host i writes `bytes` to host i+H (the same slot on the next leaf); NIC-like UDP source ports (one per QP) |
//! | `elephants`   | the same pairs, every flow with ONE UDP source port (the low-entropy case that defeats 5-tuple hashing) |
//!
//! Every write is split into messages of [`MESSAGE_BYTES`]. A scenario
//! ends when every host's plan is complete (sends acknowledged, receives
//! in): that time is `job_completion_ms`; or at the timeout, reported as
//! incomplete.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use dataplane_common::lb::FlowKey;
use serde_json::json;

use crate::controller::port_counter;
use crate::fabric::{check_interrupt, Fabric, Samples};
use crate::host::{run_host, HostCfg, HostPlan, HostReport, RecvJob, RunShared, SendJob};
use crate::lbfabric::{imbalance, utilisation_pct};
use crate::topo::{HostNode, Topology, ROCE_TC};

/// Points (x, y) of a plotted series.
pub type Series = Vec<(f64, f64)>;

/// Size of one RDMA WRITE message.
pub const MESSAGE_BYTES: u64 = 64 * 1024;
/// The UDP source port of every flow in `elephants`.
pub const ELEPHANT_SPORT: u16 = 49152;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scenario {
    Incast {
        receiver: String,
        senders: Option<Vec<String>>,
        bytes: u64,
    },
    AllReduce {
        bytes: u64,
    },
    Permutation {
        bytes: u64,
    },
    Elephants {
        bytes: u64,
    },
}

/// NIC-like UDP source port of a QP (RoCEv2 NICs derive it from the QP).
pub fn qp_sport(qp: u32) -> u16 {
    let h = qp.wrapping_mul(0x9e37_79b1);
    0xc000 | ((h >> 18) as u16 & 0x3fff)
}

fn split(bytes: u64) -> Vec<u64> {
    let mut v = vec![MESSAGE_BYTES; (bytes / MESSAGE_BYTES) as usize];
    if !bytes.is_multiple_of(MESSAGE_BYTES) || v.is_empty() {
        v.push(bytes % MESSAGE_BYTES);
    }
    v.retain(|&m| m > 0);
    if v.is_empty() {
        v.push(1);
    }
    v
}

/// One write of `messages` from host `from` to host `to` (address
/// `to_ip`) on queue pair `qp`: the sender's job and the receiver's.
fn write(
    plans: &mut [HostPlan],
    (from, to): (usize, usize),
    to_ip: [u8; 4],
    qp: u32,
    udp_sport: u16,
    messages: Vec<u64>,
) {
    plans[to].recvs.push(RecvJob {
        qp,
        messages: messages.len() as u64,
    });
    plans[from].sends.push(SendJob {
        qp,
        dst_ip: to_ip,
        udp_sport,
        messages,
        gate_qp: None,
    });
}

impl Scenario {
    pub fn name(&self) -> &'static str {
        match self {
            Scenario::Incast { .. } => "incast",
            Scenario::AllReduce { .. } => "all_reduce",
            Scenario::Permutation { .. } => "permutation",
            Scenario::Elephants { .. } => "elephants",
        }
    }

    /// Ring order for all-reduce: slot 0 of every leaf, slot 1 of every
    /// leaf, ... (indices into [`Topology::hosts`]).
    pub fn ring(topo: &Topology) -> Vec<usize> {
        let (_, l, h) = topo.dims();
        (0..h)
            .flat_map(|k| (0..l).map(move |leaf| leaf * h + k))
            .collect()
    }

    /// Every host's plan, or an error naming a host the fabric lacks (before
    /// anything runs).
    pub fn plans(&self, topo: &Topology) -> Result<Vec<HostPlan>> {
        let hosts = topo.hosts();
        let n = hosts.len();
        let mut plans = vec![HostPlan::default(); n];
        let idx = |name: &str| -> Result<usize> {
            topo.host(name)
                .map(|h| hosts.iter().position(|x| x.name == h.name).unwrap_or(0))
        };
        let (_, l, h) = topo.dims();
        match self {
            Scenario::Incast {
                receiver,
                senders,
                bytes,
            } => {
                let r = idx(receiver)?;
                let s: Vec<usize> = match senders {
                    Some(v) => v.iter().map(|x| idx(x)).collect::<Result<_>>()?,
                    None => (0..n).filter(|&i| i != r).collect(),
                };
                if s.is_empty() || s.contains(&r) {
                    bail!("incast: expected senders other than the receiver {receiver}");
                }
                for (k, &i) in s.iter().enumerate() {
                    let qp = 0x100 + k as u32;
                    write(
                        &mut plans,
                        (i, r),
                        hosts[r].ipv4,
                        qp,
                        qp_sport(qp),
                        split(*bytes),
                    );
                }
            }
            Scenario::AllReduce { bytes } => {
                if n < 2 {
                    bail!("all-reduce: expected at least 2 hosts");
                }
                let ring = Self::ring(topo);
                let chunk = (bytes / n as u64).max(1);
                let steps = 2 * (n - 1);
                for (pos, &i) in ring.iter().enumerate() {
                    let right = ring[(pos + 1) % n];
                    let qp = 0x200 + pos as u32;
                    let left_qp = 0x200 + ((pos + n - 1) % n) as u32;
                    plans[i].sends.push(SendJob {
                        qp,
                        dst_ip: hosts[right].ipv4,
                        udp_sport: qp_sport(qp),
                        messages: vec![chunk; steps],
                        gate_qp: Some(left_qp),
                    });
                    plans[i].recvs.push(RecvJob {
                        qp: left_qp,
                        messages: steps as u64,
                    });
                }
            }
            Scenario::Permutation { bytes } | Scenario::Elephants { bytes } => {
                if l < 2 {
                    bail!("{}: expected a leaf-spine with at least 2 leaves (its flows cross the spines)", self.name());
                }
                for i in 0..n {
                    let j = (i + h) % n;
                    let qp = 0x300 + i as u32;
                    let sport = if matches!(self, Scenario::Elephants { .. }) {
                        ELEPHANT_SPORT
                    } else {
                        qp_sport(qp)
                    };
                    write(&mut plans, (i, j), hosts[j].ipv4, qp, sport, split(*bytes));
                }
            }
        }
        Ok(plans)
    }

    /// The flows' keys as the leaves hash them: (leaf of the sender, key).
    pub fn flow_keys(&self, topo: &Topology) -> Result<Vec<(usize, FlowKey)>> {
        let hosts = topo.hosts();
        let mut out = Vec::new();
        for (i, p) in self.plans(topo)?.iter().enumerate() {
            for s in &p.sends {
                out.push((
                    hosts[i].leaf,
                    FlowKey::ipv4(hosts[i].ipv4, s.dst_ip, 17, s.udp_sport, 4791, s.qp),
                ));
            }
        }
        Ok(out)
    }
}

/// How a run is carried out.
#[derive(Clone, Debug)]
pub struct RunOpts {
    /// Give up after this long (reported as incomplete).
    pub timeout: Duration,
    /// Buffer-model sampling period.
    pub sample: Duration,
    /// Live progress line on stderr.
    pub progress: bool,
    /// DCQCN at the hosts (the reaction point).
    pub dcqcn: bool,
}

impl Default for RunOpts {
    fn default() -> Self {
        RunOpts {
            timeout: Duration::from_secs(30),
            sample: Duration::from_millis(5),
            progress: true,
            dcqcn: true,
        }
    }
}

/// PFC frames of one switch port and priority in a run.
#[derive(Clone, Debug)]
pub struct PfcPort {
    pub switch: String,
    pub port: String,
    pub prio: usize,
    pub tx: u64,
    pub rx: u64,
    /// Time the port's egress was paused by received PFC, ms.
    pub paused_ms: f64,
}

/// One leaf uplink's share of a run.
#[derive(Clone, Debug)]
pub struct Uplink {
    pub switch: String,
    pub port: String,
    pub tx_bytes: u64,
    pub speed_mbps: u32,
}

/// Everything a run measured.
pub struct RunResult {
    pub scenario: String,
    pub lb_mode: String,
    pub pfc: bool,
    pub ecn: bool,
    pub elapsed_ms: f64,
    pub complete: bool,
    pub job_completion_ms: Option<f64>,
    pub hosts: Vec<HostReport>,
    /// Drops of RoCE (TC 3) frames in any switch: shared pool full,
    /// headroom overflow, WRED, watchdog.
    pub lossless_drops: u64,
    /// (switch, port, counter, frames) of every nonzero drop counter.
    pub drops: Vec<(String, String, String, u64)>,
    pub ecn_marked: u64,
    /// Frames a switch failed to redirect to their egress: the data
    /// plane's `drop_redirect` plus the kernel's veth tx drops (peer ring
    /// full).
    pub redirect_drops: u64,
    pub pfc_ports: Vec<PfcPort>,
    pub uplinks: Vec<Uplink>,
    pub samples: Samples,
    /// (switch, ports) names of the sampled ports, in sample order.
    pub sampled: Vec<(String, Vec<String>)>,
    pub kmin: u32,
    pub kmax: u32,
}

fn delta(before: &serde_json::Value, after: &serde_json::Value, port: &str, name: &str) -> u64 {
    port_counter(after, port, name)
        .unwrap_or(0)
        .saturating_sub(port_counter(before, port, name).unwrap_or(0))
}

/// Runs `sc` on `fabric`: a host emulator thread per host in its namespace,
/// the buffer-model sampler, switch counters before and after.
pub fn run(fabric: &Fabric, sc: &Scenario, opts: &RunOpts) -> Result<RunResult> {
    let topo = &fabric.topo;
    let plans = sc.plans(topo)?;
    let hosts = topo.hosts();
    let total: u64 = plans.iter().map(|p| p.send_bytes()).sum();
    let label = format!(
        "{} [{}{}{}]",
        sc.name(),
        topo.lb_mode,
        if topo.pfc { ", PFC" } else { ", no PFC" },
        if topo.ecn { ", ECN" } else { ", no ECN" }
    );
    let before = fabric.stats()?;
    let drops_before = fabric.kernel_drops()?;
    let sampler = fabric.sampler(opts.sample)?;
    let shared = RunShared::new(hosts.len());
    let cfgs: Vec<HostCfg> = hosts
        .iter()
        .map(|h: &HostNode| {
            let mut c = HostCfg::new(
                &h.name,
                h.mac,
                h.gw_mac,
                h.ipv4,
                u64::from(topo.host_mbps) * 1_000_000,
            );
            c.dcqcn = opts.dcqcn;
            c
        })
        .collect();
    let t0 = Instant::now();
    let reports = std::thread::scope(|s| -> Result<Vec<HostReport>> {
        let mut handles = Vec::new();
        for (i, (cfg, plan)) in cfgs.iter().zip(&plans).enumerate() {
            let ns = fabric.host_ns(i);
            let shared = &shared;
            handles.push(s.spawn(move || -> Result<HostReport> {
                let _in = ns.enter()?;
                let r = run_host(cfg, plan, shared, i);
                if r.is_err() {
                    shared.stop.store(true, Ordering::SeqCst);
                }
                r
            }));
        }
        let mut last_print = Instant::now() - Duration::from_secs(1);
        // SAFETY: isatty on stderr.
        let tty = unsafe { libc::isatty(2) } == 1;
        let mut why = None;
        loop {
            std::thread::sleep(Duration::from_millis(20));
            let done = shared.done.load(Ordering::SeqCst) as usize;
            let acked: u64 = shared.acked.iter().map(|a| a.load(Ordering::Relaxed)).sum();
            // a terminal gets one line rewritten 4 times a second; a log
            // gets a line a second
            let every = if tty {
                Duration::from_millis(250)
            } else {
                Duration::from_secs(1)
            };
            if opts.progress && last_print.elapsed() >= every {
                last_print = Instant::now();
                let line = format!(
                    "  {label}: {:5.1} s  {:5.1}% acknowledged ({:.2} of {:.2} MB), hosts done {done}/{}",
                    t0.elapsed().as_secs_f64(),
                    100.0 * acked as f64 / total.max(1) as f64,
                    acked as f64 / 1e6,
                    total as f64 / 1e6,
                    hosts.len()
                );
                if tty {
                    eprint!("\r{line}   ");
                } else {
                    eprintln!("{line}");
                }
            }
            if done == hosts.len() || shared.stop.load(Ordering::SeqCst) {
                break;
            }
            if t0.elapsed() > opts.timeout {
                why = Some("timeout");
                break;
            }
            if check_interrupt().is_err() {
                why = Some("interrupted");
                break;
            }
        }
        // a short grace so the last ACKs and CNPs land and queues drain
        std::thread::sleep(Duration::from_millis(50));
        shared.stop.store(true, Ordering::SeqCst);
        if opts.progress && tty {
            eprintln!();
        }
        let mut out = Vec::new();
        for h in handles {
            out.push(
                h.join()
                    .map_err(|_| anyhow!("a host emulator panicked"))??,
            );
        }
        if why == Some("interrupted") {
            check_interrupt()?;
        }
        Ok(out)
    })?;
    let elapsed_ms = t0.elapsed().as_secs_f64() * 1e3;
    let samples = sampler.finish();
    // let the model's queues drain before the last read
    std::thread::sleep(Duration::from_millis(100));
    let after = fabric.stats()?;
    let drops_after = fabric.kernel_drops()?;
    let veth_drops: u64 = drops_after
        .iter()
        .flatten()
        .map(|(n, d)| {
            d - drops_before
                .iter()
                .flatten()
                .find(|x| &x.0 == n)
                .map(|x| x.1)
                .unwrap_or(0)
                .min(*d)
        })
        .sum();
    let complete = reports.iter().all(|r| r.finish_ms.is_some());
    let job_completion_ms = if complete {
        reports
            .iter()
            .filter_map(|r| r.finish_ms)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    } else {
        None
    };
    let mut lossless_drops = 0;
    let mut ecn_marked = 0;
    let mut redirect_drops = 0;
    let mut drops = Vec::new();
    let mut pfc = Vec::new();
    let mut uplinks = Vec::new();
    let tc = ROCE_TC as usize;
    for (i, sw) in fabric.switches.iter().enumerate() {
        let (b, a) = (&before[i], &after[i]);
        for (port, _) in &sw.ports {
            for c in ["drop_shared_full", "drop_headroom", "wred_drop", "wd_drop"] {
                let d = delta(b, a, port, &format!("{c}[{tc}]"));
                lossless_drops += d;
                if d > 0 {
                    drops.push((sw.node.name.clone(), port.clone(), c.to_string(), d));
                }
            }
            ecn_marked += delta(b, a, port, &format!("ecn_marked[{tc}]"));
            redirect_drops += delta(b, a, port, "drop_redirect");
            for prio in 0..8 {
                let tx = delta(b, a, port, &format!("tx_pfc[{prio}]"));
                let rx = delta(b, a, port, &format!("rx_pfc[{prio}]"));
                let paused_ms = delta(b, a, port, &format!("rx_pause_ns[{prio}]")) as f64 / 1e6;
                if tx + rx > 0 {
                    pfc.push(PfcPort {
                        switch: sw.node.name.clone(),
                        port: port.clone(),
                        prio,
                        tx,
                        rx,
                        paused_ms,
                    });
                }
            }
            if sw.node.kind == crate::topo::SwitchKind::Leaf && port.starts_with('s') {
                let bytes = (0..8)
                    .map(|t| delta(b, a, port, &format!("tx_tc_bytes[{t}]")))
                    .sum();
                uplinks.push(Uplink {
                    switch: sw.node.name.clone(),
                    port: port.clone(),
                    tx_bytes: bytes,
                    speed_mbps: topo.uplink_mbps,
                });
            }
        }
    }
    let sampled = fabric
        .switches
        .iter()
        .map(|s| {
            (
                s.node.name.clone(),
                s.ports.iter().map(|p| p.0.clone()).collect(),
            )
        })
        .collect();
    Ok(RunResult {
        scenario: sc.name().into(),
        lb_mode: topo.lb_mode.clone(),
        pfc: topo.pfc,
        ecn: topo.ecn,
        elapsed_ms,
        complete,
        job_completion_ms,
        hosts: reports,
        lossless_drops,
        drops,
        ecn_marked,
        redirect_drops: redirect_drops + veth_drops,
        pfc_ports: pfc,
        uplinks,
        samples,
        sampled,
        kmin: topo.kmin,
        kmax: topo.kmax,
    })
}

impl RunResult {
    pub fn cnp_sent(&self) -> u64 {
        self.hosts.iter().map(|h| h.cnps_tx).sum()
    }
    pub fn pfc_frames(&self) -> u64 {
        self.pfc_ports.iter().map(|p| p.tx).sum()
    }
    pub fn ce_received(&self) -> u64 {
        self.hosts.iter().map(|h| h.ce_rx).sum()
    }
    pub fn psn_gaps(&self) -> u64 {
        self.hosts.iter().map(|h| h.psn_gaps).sum()
    }
    pub fn retransmitted(&self) -> u64 {
        self.hosts.iter().map(|h| h.retransmitted_pkts).sum()
    }
    pub fn host_paused_ms(&self) -> f64 {
        self.hosts.iter().map(|h| h.paused_ns as f64 / 1e6).sum()
    }
    pub fn uplink_bytes(&self) -> Vec<u64> {
        self.uplinks.iter().map(|u| u.tx_bytes).collect()
    }
    /// Each leaf's uplink bytes (leaves whose uplinks carried nothing
    /// left out: the balance is a leaf's choice among its own uplinks).
    pub fn uplink_bytes_per_leaf(&self) -> Vec<Vec<u64>> {
        let mut out: Vec<(String, Vec<u64>)> = Vec::new();
        for u in &self.uplinks {
            match out.iter_mut().find(|(s, _)| *s == u.switch) {
                Some((_, v)) => v.push(u.tx_bytes),
                None => out.push((u.switch.clone(), vec![u.tx_bytes])),
            }
        }
        out.into_iter()
            .map(|(_, v)| v)
            .filter(|v| v.iter().sum::<u64>() > 0)
            .collect()
    }
    /// Uplink balance as % of ideal: per leaf, the bytes that fit under an
    /// even split over its uplinks, summed over leaves, over all uplink
    /// bytes (100: every uplink carried its leaf's 1/U).
    pub fn uplink_utilisation_pct(&self) -> Option<f64> {
        let per = self.uplink_bytes_per_leaf();
        let total: u64 = per.iter().flatten().sum();
        (total > 0).then(|| {
            per.iter()
                .map(|v| utilisation_pct(v) * v.iter().sum::<u64>() as f64)
                .sum::<f64>()
                / total as f64
        })
    }
    /// The worst leaf's max/mean of its uplinks' bytes (1 is perfect).
    pub fn uplink_imbalance(&self) -> Option<f64> {
        self.uplink_bytes_per_leaf()
            .iter()
            .map(|v| imbalance(v))
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
    }
    /// Mean uplink load, % of the uplinks' capacity over the run.
    pub fn uplink_load_pct(&self) -> Option<f64> {
        if self.uplinks.is_empty() || self.elapsed_ms <= 0.0 {
            return None;
        }
        let cap: f64 = self
            .uplinks
            .iter()
            .map(|u| f64::from(u.speed_mbps) * 1e6 * self.elapsed_ms / 1e3 / 8.0)
            .sum();
        Some(100.0 * self.uplink_bytes().iter().sum::<u64>() as f64 / cap)
    }
    fn goodput_mbps(&self, h: &HostReport) -> f64 {
        let ms = h.finish_ms.unwrap_or(self.elapsed_ms).max(1e-3);
        h.acked_payload_bytes as f64 * 8.0 / (ms * 1e3)
    }

    /// The JSON record (stable names: compare runs by them).
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "scenario": self.scenario,
            "lb_mode": self.lb_mode,
            "pfc": self.pfc,
            "ecn": self.ecn,
            "complete": self.complete,
            "elapsed_ms": self.elapsed_ms,
            "job_completion_ms": self.job_completion_ms,
            "lossless_drops": self.lossless_drops,
            "drops_per_port": self.drops.iter().map(|d| json!({"switch": d.0, "port": d.1, "counter": format!("{}[3]", d.2), "frames": d.3})).collect::<Vec<_>>(),
            "ecn_marked": self.ecn_marked,
            "ce_received": self.ce_received(),
            "cnp_sent": self.cnp_sent(),
            "pfc_frames": self.pfc_frames(),
            "host_paused_ms": self.host_paused_ms(),
            "psn_gaps": self.psn_gaps(),
            "redirect_drops": self.redirect_drops,
            "socket_drops": self.hosts.iter().map(|h| h.socket_drops).sum::<u64>(),
            "retransmitted_pkts": self.retransmitted(),
            "uplink_utilisation_pct": self.uplink_utilisation_pct(),
            "uplink_imbalance": self.uplink_imbalance(),
            "uplink_load_pct": self.uplink_load_pct(),
            "uplinks": self.uplinks.iter().map(|u| json!({"switch": u.switch, "port": u.port, "tx_bytes": u.tx_bytes})).collect::<Vec<_>>(),
            "pfc_per_port": self.pfc_ports.iter().map(|p| json!({"switch": p.switch, "port": p.port, "priority": p.prio, "tx": p.tx, "rx": p.rx, "paused_ms": p.paused_ms})).collect::<Vec<_>>(),
            "hosts": self.hosts.iter().map(|h| json!({
                "host": h.name,
                "goodput_mbps": self.goodput_mbps(h),
                "finish_ms": h.finish_ms,
                "tx_pkts": h.tx_pkts,
                "retransmitted_pkts": h.retransmitted_pkts,
                "psn_gaps": h.psn_gaps,
                "naks_rx": h.naks_rx,
                "timeouts": h.timeouts,
                "ce_received": h.ce_rx,
                "cnp_sent": h.cnps_tx,
                "cnp_received": h.cnps_rx,
                "pfc_received": h.pfc_rx,
                "paused_ms": h.paused_ns as f64 / 1e6,
                "socket_drops": h.socket_drops,
            })).collect::<Vec<_>>(),
        })
    }

    /// The table printed at the end of a run.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let jct = self
            .job_completion_ms
            .map(|j| format!("{j:.1} ms"))
            .unwrap_or_else(|| "- (not complete when the run ended)".into());
        let _ = writeln!(
            s,
            "\n== {} | lb {} | PFC {} | ECN {} | job completion {jct}",
            self.scenario,
            self.lb_mode,
            if self.pfc { "on" } else { "off" },
            if self.ecn { "on" } else { "off" }
        );
        let _ = writeln!(
            s,
            "{:<5} {:>9} {:>9} {:>7} {:>6} {:>6} {:>6} {:>6} {:>7} {:>9}",
            "Host",
            "Goodput",
            "Finish",
            "Retx",
            "Gaps",
            "CE rx",
            "CNP tx",
            "CNP rx",
            "PFC rx",
            "Paused"
        );
        let _ = writeln!(
            s,
            "{:<5} {:>9} {:>9} {:>7} {:>6} {:>6} {:>6} {:>6} {:>7} {:>9}",
            "", "Mb/s", "ms", "pkts", "", "", "", "", "frames", "ms"
        );
        for h in &self.hosts {
            let _ = writeln!(
                s,
                "{:<5} {:>9.2} {:>9} {:>7} {:>6} {:>6} {:>6} {:>6} {:>7} {:>9.1}",
                h.name,
                self.goodput_mbps(h),
                h.finish_ms
                    .map(|f| format!("{f:.1}"))
                    .unwrap_or_else(|| "-".into()),
                h.retransmitted_pkts,
                h.psn_gaps,
                h.ce_rx,
                h.cnps_tx,
                h.cnps_rx,
                h.pfc_rx,
                h.paused_ns as f64 / 1e6
            );
        }
        let _ = writeln!(
            s,
            "switches: lossless drops {}, ECN marked {}, PFC frames sent {}, redirect drops {}; hosts: CNPs sent {}, PSN gaps {}, retransmitted {} pkts, socket drops {}",
            self.lossless_drops,
            self.ecn_marked,
            self.pfc_frames(),
            self.redirect_drops,
            self.cnp_sent(),
            self.psn_gaps(),
            self.retransmitted(),
            self.hosts.iter().map(|h| h.socket_drops).sum::<u64>()
        );
        for d in &self.drops {
            let _ = writeln!(s, "  drops: {}:{} {}[3] {}", d.0, d.1, d.2, d.3);
        }
        if !self.pfc_ports.is_empty() {
            let _ = writeln!(
                s,
                "{:<8} {:<6} {:>4} {:>8} {:>8} {:>10}",
                "Switch", "Port", "Prio", "Tx PFC", "Rx PFC", "Paused ms"
            );
            for p in &self.pfc_ports {
                let _ = writeln!(
                    s,
                    "{:<8} {:<6} {:>4} {:>8} {:>8} {:>10.1}",
                    p.switch, p.port, p.prio, p.tx, p.rx, p.paused_ms
                );
            }
        }
        if let (Some(u), Some(i)) = (self.uplink_utilisation_pct(), self.uplink_imbalance()) {
            let parts: Vec<String> = self
                .uplinks
                .iter()
                .map(|x| format!("{}:{} {:.2} MB", x.switch, x.port, x.tx_bytes as f64 / 1e6))
                .collect();
            let _ = writeln!(s, "uplinks: {}", parts.join(", "));
            let _ = writeln!(
                s,
                "uplink balance {u:.1}% of ideal, max/mean {i:.3}, mean load {:.1}% of capacity",
                self.uplink_load_pct().unwrap_or(0.0)
            );
        }
        s
    }

    /// (switch, port, egress-queue series) of the queue that held most.
    pub fn hottest_queue(&self) -> Option<(String, String, Series)> {
        let mut best: Option<(usize, usize, u32)> = None;
        for (_, sw) in &self.samples {
            for (i, ports) in sw.iter().enumerate() {
                for (j, p) in ports.iter().enumerate() {
                    if best.is_none_or(|b| p.queue > b.2) {
                        best = Some((i, j, p.queue));
                    }
                }
            }
        }
        let (i, j, peak) = best?;
        if peak == 0 {
            return None;
        }
        let series = self
            .samples
            .iter()
            .map(|(ms, sw)| (*ms, f64::from(sw[i][j].queue)))
            .collect();
        Some((
            self.sampled[i].0.clone(),
            self.sampled[i].1[j].clone(),
            series,
        ))
    }

    /// Queue occupancy vs time of the hottest queue, with Kmin, Kmax and the
    /// occupancy of the most loaded ingress PG of the same switch (and its
    /// level when that switch first sent XOFF).
    pub fn queue_svg(&self) -> Option<String> {
        let (sw, port, q) = self.hottest_queue()?;
        let i = self.sampled.iter().position(|s| s.0 == sw)?;
        let nports = self.sampled[i].1.len();
        let pg_peak = (0..nports).max_by_key(|&j| {
            self.samples
                .iter()
                .map(|(_, s)| s[i][j].pg)
                .max()
                .unwrap_or(0)
        })?;
        let pg: Vec<(f64, f64)> = self
            .samples
            .iter()
            .map(|(ms, s)| (*ms, f64::from(s[i][pg_peak].pg)))
            .collect();
        let first_xoff = self
            .samples
            .iter()
            .find(|(_, s)| s[i][pg_peak].xoff)
            .map(|(_, s)| f64::from(s[i][pg_peak].pg));
        let qname = format!("egress queue {sw}:{port} TC3 (bytes)");
        let pname = format!("ingress PG {sw}:{} TC3 (bytes)", self.sampled[i].1[pg_peak]);
        let mut th = vec![
            ("Kmin", f64::from(self.kmin)),
            ("Kmax", f64::from(self.kmax)),
        ];
        let xoff_label;
        if let Some(x) = first_xoff {
            xoff_label = format!("XOFF sent at PG {:.0} KB", x / 1024.0);
            th.push((xoff_label.as_str(), x));
        }
        Some(crate::plot::lines(
            &format!(
                "{}: hottest RoCE queue ({}, PFC {}, ECN {})",
                self.scenario,
                self.lb_mode,
                onoff(self.pfc),
                onoff(self.ecn)
            ),
            "time (ms)",
            "bytes",
            &[(qname.as_str(), q), (pname.as_str(), pg)],
            &th,
        ))
    }

    /// PFC pause timeline: when each switch port was pausing its peer
    /// (sent XOFF, from the model's state) and when each host was paused.
    pub fn pfc_svg(&self) -> Option<String> {
        let mut rows: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
        for (i, (sw, ports)) in self.sampled.iter().enumerate() {
            for (j, port) in ports.iter().enumerate() {
                let mut spans = Vec::new();
                let mut start: Option<f64> = None;
                for (ms, s) in &self.samples {
                    match (s[i][j].xoff, start) {
                        (true, None) => start = Some(*ms),
                        (false, Some(a)) => {
                            spans.push((a, *ms));
                            start = None;
                        }
                        _ => {}
                    }
                }
                if let (Some(a), Some((ms, _))) = (start, self.samples.last()) {
                    spans.push((a, *ms));
                }
                if !spans.is_empty() {
                    rows.push((format!("{sw}:{port} XOFF"), spans));
                }
            }
        }
        for h in &self.hosts {
            if !h.pauses.is_empty() {
                rows.push((format!("{} paused", h.name), h.pauses.clone()));
            }
        }
        if rows.is_empty() {
            return None;
        }
        Some(crate::plot::timeline(
            &format!(
                "{}: PFC on priority 3 ({}, ECN {})",
                self.scenario,
                self.lb_mode,
                onoff(self.ecn)
            ),
            "time (ms)",
            &rows,
            self.elapsed_ms,
        ))
    }

    /// Each host's sending rate over time (DCQCN at work).
    pub fn rates_svg(&self) -> Option<String> {
        let series: Vec<(String, Vec<(f64, f64)>)> = self
            .hosts
            .iter()
            .filter(|h| h.tx_pkts > 0)
            .map(|h| {
                (
                    format!("{} Mb/s", h.name),
                    h.rate_series.iter().map(|r| (r.0, r.1)).collect(),
                )
            })
            .collect();
        if series.is_empty() {
            return None;
        }
        let refs: Vec<(&str, Vec<(f64, f64)>)> = series
            .iter()
            .map(|(n, v)| (n.as_str(), v.clone()))
            .collect();
        Some(crate::plot::lines(
            &format!("{}: host sending rates (10 ms windows)", self.scenario),
            "time (ms)",
            "Mb/s",
            &refs,
            &[],
        ))
    }
}

fn onoff(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::Shape;

    #[test]
    fn all_reduce_ring_alternates_leaves_and_gates_on_the_left() {
        let t = Topology::default();
        let ring = Scenario::ring(&t);
        assert_eq!(ring, vec![0, 4, 1, 5, 2, 6, 3, 7]);
        let plans = Scenario::AllReduce {
            bytes: 8 * 1024 * 1024,
        }
        .plans(&t)
        .unwrap();
        // h4 (ring position 1) sends to h1 and waits for h0 (position 0)
        let p = &plans[4];
        assert_eq!(p.sends[0].dst_ip, t.hosts()[1].ipv4);
        assert_eq!(p.sends[0].messages, vec![1024 * 1024; 14]);
        assert_eq!(p.sends[0].gate_qp, Some(0x200));
        assert_eq!(p.recvs[0].qp, 0x200);
    }

    #[test]
    fn incast_and_permutation_plans() {
        let t = Topology::default();
        let plans = Scenario::Incast {
            receiver: "h0".into(),
            senders: None,
            bytes: 100_000,
        }
        .plans(&t)
        .unwrap();
        assert_eq!(plans[0].recvs.len(), 7);
        assert!(plans[1..]
            .iter()
            .all(|p| p.sends.len() == 1 && p.sends[0].messages == vec![65536, 100_000 - 65536]));
        let e = Scenario::Incast {
            receiver: "h9".into(),
            senders: None,
            bytes: 1,
        }
        .plans(&t)
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown host \"h9\""), "{e}");
        let e = Scenario::Incast {
            receiver: "h0".into(),
            senders: Some(vec!["h0".into()]),
            bytes: 1,
        }
        .plans(&t)
        .unwrap_err()
        .to_string();
        assert!(e.contains("senders other than the receiver"), "{e}");
        let el = Scenario::Elephants { bytes: 1 }.flow_keys(&t).unwrap();
        assert_eq!(el.len(), 8);
        assert!(el.iter().all(|(_, k)| k.sport == ELEPHANT_SPORT));
        let pm = Scenario::Permutation { bytes: 1 }.plans(&t).unwrap();
        assert_eq!(pm[0].sends[0].dst_ip, t.hosts()[4].ipv4);
        let star = Topology {
            shape: Shape::Star { hosts: 4 },
            ..Topology::default()
        };
        assert!(Scenario::Elephants { bytes: 1 }.plans(&star).is_err());
    }
}
