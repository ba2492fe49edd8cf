//! Scenes: small fabrics the demo and the tests show one mechanism on,
//! built by the one fabric builder and driven by the one host emulator.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{anyhow, Result};

use crate::controller::stats_json;
use crate::fabric::Fabric;
use crate::host::{run_host, HostCfg, HostPlan, HostReport, RecvJob, RunShared, SendJob};
use crate::topo::{Shape, Topology};

/// The DCQCN scene's sender link (Mb/s) and the receiver's, the
/// bottleneck.
pub const DCQCN_SENDER_MBPS: u32 = 100;
pub const DCQCN_RECEIVER_MBPS: u32 = 10;
/// The scene's queue pair.
const DCQCN_QP: u32 = 0x1234;

/// The DCQCN scene's fabric: two hosts on one switch, `h0` at 100 Mb/s,
/// `h1` at 10 Mb/s; PFC off; WRED marking (no drop) from 20 KB to 200 KB,
/// 100% at 200 KB; a 4 MiB pool.
pub fn dcqcn_topology() -> Topology {
    Topology {
        shape: Shape::Star { hosts: 2 },
        host_mbps: DCQCN_SENDER_MBPS,
        host_speeds: vec![DCQCN_SENDER_MBPS, DCQCN_RECEIVER_MBPS],
        pfc: false,
        ecn: true,
        kmin: 20_000,
        kmax: 200_000,
        pmax: 100,
        pool_bytes: 4 << 20,
        ..Topology::default()
    }
}

/// What the DCQCN scene measured.
pub struct DcqcnScene {
    /// The receiving host (notification point) and the sending one
    /// (reaction point).
    pub receiver: HostReport,
    pub sender: HostReport,
    /// How long the sender ran, ms.
    pub run_ms: f64,
    /// The switch's `stats --json` at the end, and its table.
    pub stats: serde_json::Value,
    pub stats_text: String,
    /// The sender's line rate, bit/s.
    pub line_bps: u64,
}

impl DcqcnScene {
    /// The sender's average rate before the first CNP reached it, Mb/s.
    pub fn rate_before_mbps(&self) -> f64 {
        let (bytes, ms) = self.split();
        bytes as f64 * 8.0 / (ms * 1e3).max(1e-9)
    }

    /// Its average rate from the first CNP to the end, Mb/s.
    pub fn rate_after_mbps(&self) -> f64 {
        let (bytes, ms) = self.split();
        (self.sender.tx_bytes - bytes) as f64 * 8.0 / ((self.run_ms - ms) * 1e3).max(1e-9)
    }

    /// (bytes sent, ms) at the first CNP; the whole run without one.
    fn split(&self) -> (u64, f64) {
        match (self.sender.first_cnp_ms, self.sender.tx_bytes_at_first_cnp) {
            (Some(ms), Some(b)) => (b, ms),
            _ => (self.sender.tx_bytes, self.run_ms),
        }
    }
}

/// A DCQCN sender at 100 Mb/s into the switch's 10 Mb/s port for `run`: the
/// switch's buffer model marks CE, the receiver (notification point)
/// answers with CNPs, the sender (reaction point) slows down. The sender
/// is the emulator's RC host with a window large enough that only DCQCN
/// limits it (more than `run` at line rate), PFC not honoured. Namespaces
/// `dpt-<tag>*`; everything is torn down on return.
pub fn dcqcn_one_switch(dataplane: &Path, tag: &str, run: Duration) -> Result<DcqcnScene> {
    let topo = dcqcn_topology();
    let fabric = Fabric::build(topo.clone(), dataplane, tag)?;
    let hosts = topo.hosts();
    let (h0, h1) = (&hosts[0], &hosts[1]);
    let line_bps = u64::from(h0.mbps) * 1_000_000;
    let mut sender = HostCfg::of(h0);
    sender.honour_pfc = false;
    // one frame per message of 1 KiB, as many as `run` can carry at line
    // rate, all in flight if DCQCN allows
    let frames = (line_bps as f64 / 8.0 * run.as_secs_f64() / 1024.0) as u64 + 1;
    sender.window = frames as u32;
    let mut receiver = HostCfg::of(h1);
    // one DCQCN setting on both NICs (the CNP interval is the receiver's),
    // scaled for the sender's line rate
    receiver.params = sender.params;
    let plans = [
        HostPlan {
            sends: vec![SendJob {
                qp: DCQCN_QP,
                dst_ip: h1.ipv4,
                udp_sport: 49152,
                messages: vec![1024; frames as usize],
                gate_qp: None,
            }],
            recvs: Vec::new(),
        },
        HostPlan {
            sends: Vec::new(),
            recvs: vec![RecvJob {
                qp: DCQCN_QP,
                messages: frames,
            }],
        },
    ];
    let cfgs = [sender, receiver];
    let shared = RunShared::new(2);
    let reports = std::thread::scope(|s| -> Result<Vec<HostReport>> {
        let handles: Vec<_> = (0..2)
            .map(|i| {
                let (ns, cfg, plan, shared) = (fabric.host_ns(i), &cfgs[i], &plans[i], &shared);
                s.spawn(move || -> Result<HostReport> {
                    let _in = ns.enter()?;
                    run_host(cfg, plan, shared, i)
                })
            })
            .collect();
        std::thread::sleep(run);
        shared.stop.store(true, Ordering::SeqCst);
        handles
            .into_iter()
            .map(|h| h.join().map_err(|_| anyhow!("a host emulator panicked"))?)
            .collect()
    })?;
    let run_ms = shared.now_ns() as f64 / 1e6;
    let (bin, ns, instance) = (
        fabric.bin(),
        &fabric.switch_ns(0).name,
        &fabric.switches[0].instance,
    );
    let stats = stats_json(bin, ns, instance)?;
    let o = Command::new(bin)
        .args(["--netns", ns, "stats", "--instance", instance])
        .output()?;
    let stats_text = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut reports = reports.into_iter();
    let (sender, receiver) = (reports.next().expect("two"), reports.next().expect("two"));
    Ok(DcqcnScene {
        receiver,
        sender,
        run_ms,
        stats,
        stats_text,
        line_bps,
    })
}
