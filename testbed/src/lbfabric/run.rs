//! Building the LB fabric (namespaces, veths, the controller) and running
//! one mode: the sender, the sinks' counters, the switch's view.

use super::sender::{wait_until, SenderPlan, SenderStats};
use super::*;
use crate::fabric::Fabric;
use crate::netns::Netns;
use anyhow::{anyhow, bail, Context, Result};
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Options of one run.
#[derive(Debug, Clone)]
pub struct RunOpts {
    /// How long the sender runs.
    pub seconds: f64,
    /// Progress line (and window) period.
    pub progress: Duration,
    /// Label of the progress lines.
    pub label: String,
    /// Short windows sampled from the sinks' counters (0: none).
    pub fine_window: Duration,
}

impl Default for RunOpts {
    fn default() -> Self {
        RunOpts {
            seconds: 5.0,
            progress: Duration::from_secs(1),
            label: "lb".into(),
            fine_window: Duration::from_millis(10),
        }
    }
}

/// Runs the load-balancing measurement, one fresh fan per mode.
pub struct LbFabric {
    pub spec: LbSpec,
    dataplane: PathBuf,
    /// Set by the caller (e.g. a SIGINT handler) to cut a run short.
    pub interrupt: Option<&'static AtomicBool>,
}

impl LbFabric {
    /// Checks the spec and the controller binary `dataplane`; nothing is
    /// built until [`LbFabric::run`].
    pub fn create(spec: LbSpec, dataplane: &Path) -> Result<LbFabric> {
        spec.check()?;
        if !dataplane.exists() {
            bail!("no controller binary at {}", dataplane.display());
        }
        Ok(LbFabric {
            spec,
            dataplane: dataplane.to_path_buf(),
            interrupt: None,
        })
    }

    fn interrupted(&self) -> bool {
        self.interrupt
            .map(|f| f.load(Ordering::SeqCst))
            .unwrap_or(false)
    }

    /// Builds the fan with its group in `mode`, sends for `opts.seconds`,
    /// measures, and tears the fan down.
    pub fn run(&mut self, mode: &str, opts: &RunOpts) -> Result<LbResult> {
        if !MODES.contains(&mode) {
            bail!(
                "unknown mode {mode:?}, expected one of {}",
                MODES.join(", ")
            );
        }
        let label = format!("{} {mode}", opts.label);
        eprintln!(
            "[{label}] {} flows (one UDP source port {}), {} uplinks at {} Mb/s (scaled), {} x {} B per message, gaps {:.1}-{:.1} x {} us, target load {:.0}%",
            self.spec.flows,
            self.spec.sport,
            self.spec.uplinks,
            self.spec.uplink_speed_mbps(),
            self.spec.burst_pkts,
            self.spec.frame_len,
            self.spec.gap_min,
            self.spec.gap_max,
            self.spec.flowlet_timeout_us,
            100.0 * self.spec.load
        );
        let fabric = Fabric::build(self.spec.topology(mode), &self.dataplane, "lb")?;
        let result = self.measure(mode, &fabric, opts, &label);
        let _ = fabric.drain_log(0, &label);
        drop(fabric);
        let r = result?;
        eprint!(
            "{}",
            r.render()
                .lines()
                .map(|l| format!("[{label}] {l}\n"))
                .collect::<String>()
        );
        Ok(r)
    }

    fn measure(
        &self,
        mode: &str,
        fabric: &Fabric,
        opts: &RunOpts,
        label: &str,
    ) -> Result<LbResult> {
        let u = self.spec.uplinks;
        let names: Vec<String> = (0..u).map(uplink).collect();
        let (host, switch, sink) = (fabric.host_ns(0), fabric.switch_ns(0), fabric.sink_ns(0));
        let instance = &fabric.switches[0].instance;
        // quiet before: nothing is being sent
        std::thread::sleep(Duration::from_millis(50));
        let sw0 = switch_stats(&self.dataplane, switch, instance)?;
        let sk0 = sink_stats(sink, u)?;

        let stats = SenderStats::default();
        let stop = AtomicBool::new(false);
        let plan = SenderPlan::new(&self.spec);
        let dur = Duration::from_secs_f64(opts.seconds);
        let mut windows = Vec::new();
        let mut last = sw0.clone();
        let done = AtomicBool::new(false);
        let (seconds, fine, failure) = std::thread::scope(
            |s| -> Result<(f64, Vec<Vec<u64>>, Option<anyhow::Error>)> {
                let sender = std::thread::Builder::new()
                    .name("lb-sender".into())
                    .spawn_scoped(s, || -> Result<f64> {
                        let _in = host.enter()?;
                        plan.run("eth0", dur, &stop, &stats)
                    })?;
                let sampler = (!opts.fine_window.is_zero()).then(|| {
                    std::thread::Builder::new()
                        .name("lb-sampler".into())
                        .spawn_scoped(s, || -> Result<Vec<Vec<u64>>> {
                            let _in = sink.enter()?;
                            sample_windows(u, opts.fine_window, &stop, &done)
                        })
                });
                let t0 = Instant::now();
                let mut next = t0 + opts.progress;
                let mut failure = None;
                while !sender.is_finished() {
                    if self.interrupted() {
                        stop.store(true, Ordering::SeqCst);
                        failure = Some(anyhow!("interrupted"));
                        break;
                    }
                    let now = Instant::now();
                    if now < next {
                        std::thread::sleep((next - now).min(Duration::from_millis(50)));
                        continue;
                    }
                    next += opts.progress;
                    match switch_stats(&self.dataplane, switch, instance) {
                        Ok(cur) => {
                            let w: Vec<u64> = names
                                .iter()
                                .map(|n| cur.tx_bytes(n).saturating_sub(last.tx_bytes(n)))
                                .collect();
                            let cum: Vec<u64> = names
                                .iter()
                                .map(|n| cur.tx_bytes(n).saturating_sub(sw0.tx_bytes(n)))
                                .collect();
                            let total: u64 = cum.iter().sum();
                            let el = t0.elapsed().as_secs_f64();
                            let shares: Vec<String> = cum
                                .iter()
                                .map(|&b| format!("{:.1}%", 100.0 * b as f64 / total.max(1) as f64))
                                .collect();
                            let sent = stats.pkts.load(Ordering::Relaxed);
                            eprintln!(
                            "[{label}] {el:5.1}/{:.1} s  sent {sent} frames ({:.1} kpps, load {:.0}%)  shares {}  max/mean {:.3} (window {:.3})  util {:.1}%",
                            opts.seconds,
                            sent as f64 / el / 1e3,
                            100.0 * total as f64 * 8.0 / (u as f64 * self.spec.uplink_speed_mbps() as f64 * 1e6 * el),
                            shares.join(" "),
                            imbalance(&cum),
                            imbalance(&w),
                            utilisation_pct(&cum)
                        );
                            windows.push(w);
                            last = cur;
                        }
                        Err(e) => eprintln!("[{label}] stats: {e:#}"),
                    }
                    let _ = fabric.drain_log(0, label);
                }
                let seconds = sender.join();
                done.store(true, Ordering::SeqCst);
                let fine = match sampler {
                    None => Vec::new(),
                    Some(h) => match h?.join() {
                        Ok(Ok(f)) => f,
                        Ok(Err(e)) => return Err(e.context("the sink sampler failed")),
                        Err(_) => bail!("the sink sampler panicked"),
                    },
                };
                let seconds = match seconds {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => return Err(e.context("the sender failed")),
                    Err(_) => bail!("the sender thread panicked"),
                };
                Ok((seconds, fine, failure))
            },
        )?;
        if let Some(e) = failure {
            return Err(e);
        }
        // quiet after: let the last frames drain through the switch
        std::thread::sleep(Duration::from_millis(100));
        let sw1 = switch_stats(&self.dataplane, switch, instance)?;
        let sk1 = sink_stats(sink, u)?;
        // the last, partial window
        let w: Vec<u64> = names
            .iter()
            .map(|n| sw1.tx_bytes(n).saturating_sub(last.tx_bytes(n)))
            .collect();
        if w.iter().sum::<u64>() > 0 {
            windows.push(w);
        }
        let uplinks = (0..u)
            .map(|i| UplinkResult {
                name: names[i].clone(),
                tx_bytes: sw1
                    .tx_bytes(&names[i])
                    .saturating_sub(sw0.tx_bytes(&names[i])),
                tx_pkts: sw1
                    .tx_pkts(&names[i])
                    .saturating_sub(sw0.tx_pkts(&names[i])),
                sink_rx_bytes: sk1[i].0.saturating_sub(sk0[i].0),
                sink_rx_pkts: sk1[i].1.saturating_sub(sk0[i].1),
            })
            .collect();
        let mut downlink_other = Vec::new();
        for (k, v) in sw1.counters(DOWNLINK) {
            if k.starts_with("drop_") || k.starts_with("pass_") {
                let d = v.saturating_sub(sw0.counter(DOWNLINK, &k));
                if d > 0 {
                    downlink_other.push((k, d));
                }
            }
        }
        Ok(LbResult {
            mode: mode.into(),
            uplinks,
            seconds,
            uplink_speed_mbps: self.spec.uplink_speed_mbps(),
            sent_pkts: stats.pkts.load(Ordering::SeqCst),
            sent_bytes: stats.bytes.load(Ordering::SeqCst),
            messages: stats.messages.load(Ordering::SeqCst),
            send_errors: stats.errors.load(Ordering::SeqCst),
            routed: sw1
                .counter(DOWNLINK, "rx_routed")
                .saturating_sub(sw0.counter(DOWNLINK, "rx_routed")),
            downlink_other,
            windows,
            fine,
            fine_window: opts.fine_window,
        })
    }
}

/// Every port's counters from `dataplane stats --json`, by port name.
#[derive(Debug, Clone, Default)]
pub(crate) struct SwitchStats {
    ports: Vec<(String, Vec<(String, u64)>)>,
}

impl SwitchStats {
    fn counters(&self, port: &str) -> Vec<(String, u64)> {
        self.ports
            .iter()
            .find(|(n, _)| n == port)
            .map(|(_, c)| c.clone())
            .unwrap_or_default()
    }
    fn counter(&self, port: &str, name: &str) -> u64 {
        self.ports
            .iter()
            .find(|(n, _)| n == port)
            .and_then(|(_, c)| c.iter().find(|(k, _)| k == name).map(|(_, v)| *v))
            .unwrap_or(0)
    }
    fn sum_prefix(&self, port: &str, prefix: &str) -> u64 {
        self.ports
            .iter()
            .find(|(n, _)| n == port)
            .map(|(_, c)| {
                c.iter()
                    .filter(|(k, _)| k.starts_with(prefix))
                    .map(|(_, v)| *v)
                    .sum()
            })
            .unwrap_or(0)
    }
    /// Sum over traffic classes of tx_tc_bytes[tc].
    fn tx_bytes(&self, port: &str) -> u64 {
        self.sum_prefix(port, "tx_tc_bytes[")
    }
    fn tx_pkts(&self, port: &str) -> u64 {
        self.sum_prefix(port, "tx_tc_pkts[")
    }
}

pub(crate) fn switch_stats(bin: &Path, ns: &Netns, instance: &str) -> Result<SwitchStats> {
    let v = crate::controller::stats_json(bin, &ns.name, instance)?;
    let mut s = SwitchStats::default();
    for p in v["ports"]
        .as_array()
        .ok_or_else(|| anyhow!("stats JSON without ports"))?
    {
        let name = p["name"].as_str().unwrap_or("?").to_string();
        let counters = p["counters"]
            .as_object()
            .map(|c| {
                c.iter()
                    .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default();
        s.ports.push((name, counters));
    }
    Ok(s)
}

/// (rx bytes, rx packets) of every sink interface.
pub(crate) fn sink_stats(ns: &Netns, uplinks: usize) -> Result<Vec<(u64, u64)>> {
    let out = Command::new("ip")
        .args(["-n", &ns.name, "-s", "-j", "link", "show"])
        .output()
        .context("running ip -s -j link")?;
    if !out.status.success() {
        bail!(
            "ip -s -j link: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).context("parsing ip -j output")?;
    let links = v.as_array().ok_or_else(|| anyhow!("ip -j: not a list"))?;
    (0..uplinks)
        .map(|i| {
            let name = sink_if(i);
            let l = links
                .iter()
                .find(|l| l["ifname"] == name.as_str())
                .ok_or_else(|| anyhow!("no {name} in {}", ns.name))?;
            let rx = &l["stats64"]["rx"];
            Ok((
                rx["bytes"].as_u64().unwrap_or(0),
                rx["packets"].as_u64().unwrap_or(0),
            ))
        })
        .collect()
}

/// Rx bytes of every sink interface in the calling thread's namespace
/// (getifaddrs: one netlink dump; 32-bit counters, deltas taken modulo
/// 2^32).
pub(crate) fn sink_rx_now(uplinks: usize) -> Result<Vec<u32>> {
    let mut out = vec![0u32; uplinks];
    let names: Vec<CString> = (0..uplinks)
        .map(|i| CString::new(sink_if(i)).expect("no NUL"))
        .collect();
    // SAFETY: getifaddrs allocates a list we walk read-only and free once;
    // ifa_data of an AF_PACKET entry is a struct rtnl_link_stats.
    unsafe {
        let mut head: *mut libc::ifaddrs = std::ptr::null_mut();
        if libc::getifaddrs(&mut head) != 0 {
            bail!("getifaddrs: {}", std::io::Error::last_os_error());
        }
        let mut p = head;
        while !p.is_null() {
            let a = &*p;
            if !a.ifa_addr.is_null()
                && i32::from((*a.ifa_addr).sa_family) == libc::AF_PACKET
                && !a.ifa_data.is_null()
            {
                let name = std::ffi::CStr::from_ptr(a.ifa_name);
                if let Some(i) = names.iter().position(|n| n.as_c_str() == name) {
                    // struct rtnl_link_stats { __u32 rx_packets, tx_packets,
                    // rx_bytes, ... }
                    out[i] = *(a.ifa_data as *const u32).add(2);
                }
            }
            p = a.ifa_next;
        }
        libc::freeifaddrs(head);
    }
    Ok(out)
}

/// Per-window rx bytes of the sinks, every `w`, until `done` (or `stop`).
pub(crate) fn sample_windows(
    uplinks: usize,
    w: Duration,
    stop: &AtomicBool,
    done: &AtomicBool,
) -> Result<Vec<Vec<u64>>> {
    let mut windows = Vec::new();
    let mut last = sink_rx_now(uplinks)?;
    let mut next = Instant::now() + w;
    while !done.load(Ordering::SeqCst) && !stop.load(Ordering::SeqCst) {
        wait_until(next);
        next += w;
        let cur = sink_rx_now(uplinks)?;
        windows.push(
            cur.iter()
                .zip(&last)
                .map(|(c, l)| u64::from(c.wrapping_sub(*l)))
                .collect(),
        );
        last = cur;
    }
    Ok(windows)
}
