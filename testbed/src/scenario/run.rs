//! Running a scenario on a fabric: the hosts' threads, the switches'
//! counters before and after, the buffer samples.

use super::*;
use crate::controller::port_counter;
use crate::fabric::{check_interrupt, Fabric};
use crate::host::{run_host, HostCfg, HostReport, RunShared};
use crate::topo::{HostNode, ROCE_TC};
use anyhow::{anyhow, Result};
use dataplane_common::dcqcn::{DcqcnParams, PROFILE_MLX, PROFILE_PAPER};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

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
    /// Its profile: `dcqcn::PROFILE_PAPER` or `PROFILE_MLX`, scaled to each
    /// host's line rate (`DcqcnParams::scaled_profile`).
    pub dcqcn_profile: u32,
}

impl Default for RunOpts {
    fn default() -> Self {
        RunOpts {
            timeout: Duration::from_secs(30),
            sample: Duration::from_millis(5),
            progress: true,
            dcqcn: true,
            dcqcn_profile: PROFILE_PAPER,
        }
    }
}

pub(crate) fn delta(
    before: &serde_json::Value,
    after: &serde_json::Value,
    port: &str,
    name: &str,
) -> u64 {
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
            let mut c = HostCfg::of(h);
            c.dcqcn = opts.dcqcn;
            c.params = DcqcnParams::scaled_profile(opts.dcqcn_profile, c.nic.line_bps);
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
    let mut xmit_errors = 0;
    let mut drops = Vec::new();
    let mut pfc = Vec::new();
    let mut uplinks = Vec::new();
    let tc = ROCE_TC as usize;
    let mut far_notes = (0, 0);
    for (i, sw) in fabric.switches.iter().enumerate() {
        let (b, a) = (&before[i], &after[i]);
        let far = |s: &serde_json::Value, k: &str| s["far_notes"][k].as_u64().unwrap_or(0);
        far_notes.0 += far(a, "sent").saturating_sub(far(b, "sent"));
        far_notes.1 += far(a, "received").saturating_sub(far(b, "received"));
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
            xmit_errors += delta(b, a, port, "tx_xdp_xmit_err");
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
        dcqcn: match (opts.dcqcn, opts.dcqcn_profile) {
            (false, _) => "off",
            (true, PROFILE_MLX) => "mlx",
            (true, _) => "paper",
        },
        elapsed_ms,
        complete,
        job_completion_ms,
        hosts: reports,
        lossless_drops,
        drops,
        ecn_marked,
        redirect_drops: redirect_drops + veth_drops + xmit_errors,
        xmit_errors,
        pfc_ports: pfc,
        far_notes,
        uplinks,
        samples,
        sampled,
        kmin: topo.kmin,
        kmax: topo.kmax,
    })
}
