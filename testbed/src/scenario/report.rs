//! A scenario's result and its report: the table, JSON with stable names,
//! and the SVG plots.

use super::*;
use crate::fabric::Samples;
use crate::host::HostReport;
use crate::lbfabric::{imbalance, utilisation_pct};
use serde_json::json;

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
    /// The hosts' DCQCN: `paper`, `mlx` or `off`.
    pub dcqcn: &'static str,
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
    /// plane's `drop_redirect`, the kernel's veth drops and
    /// [`Self::xmit_errors`].
    pub redirect_drops: u64,
    /// Of those, frames redirected and then not transmitted (the data
    /// plane's `tx_xdp_xmit_err`: e.g. the peer veth's XDP ring full).
    pub xmit_errors: u64,
    pub pfc_ports: Vec<PfcPort>,
    /// Far-side notifications the switches sent and recorded
    /// (`far_notify`: the spines' ports toward leaves in `place` mode).
    pub far_notes: (u64, u64),
    pub uplinks: Vec<Uplink>,
    pub samples: Samples,
    /// (switch, ports) names of the sampled ports, in sample order.
    pub sampled: Vec<(String, Vec<String>)>,
    pub kmin: u32,
    pub kmax: u32,
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
    /// Data frames the hosts sent (retransmissions included) and received
    /// (any PSN): equal when the fabric lost none and none was in flight.
    pub fn data_frames(&self) -> (u64, u64) {
        (
            self.hosts.iter().map(|h| h.tx_pkts).sum(),
            self.hosts.iter().map(|h| h.rx_pkts).sum(),
        )
    }
    pub fn duplicates(&self) -> u64 {
        self.hosts.iter().map(|h| h.duplicates_rx).sum()
    }
    /// Original data frames that arrived after a later PSN of their QP
    /// (overtaken: reordering, not loss).
    pub fn late(&self) -> u64 {
        self.hosts.iter().map(|h| h.late_rx).sum()
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
            "dcqcn": self.dcqcn,
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
            "duplicates_rx": self.duplicates(),
            "late_rx": self.late(),
            "data_frames_sent": self.data_frames().0,
            "data_frames_received": self.data_frames().1,
            "redirect_drops": self.redirect_drops,
            "xmit_errors": self.xmit_errors,
            "far_notes_sent": self.far_notes.0,
            "far_notes_received": self.far_notes.1,
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
                "duplicates_rx": h.duplicates_rx,
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
            "\n== {} | lb {} | PFC {} | ECN {} | DCQCN {} | job completion {jct}",
            self.scenario,
            self.lb_mode,
            if self.pfc { "on" } else { "off" },
            if self.ecn { "on" } else { "off" },
            self.dcqcn
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
            "switches: lossless drops {}, ECN marked {}, PFC frames sent {}, redirect drops {} (transmit errors {}), far-side notes sent {} recorded {}; hosts: data frames sent {} received {}, CNPs sent {}, PSN gaps {} (late originals {}), duplicates {}, retransmitted {} pkts, socket drops {}",
            self.lossless_drops,
            self.ecn_marked,
            self.pfc_frames(),
            self.redirect_drops,
            self.xmit_errors,
            self.far_notes.0,
            self.far_notes.1,
            self.data_frames().0,
            self.data_frames().1,
            self.cnp_sent(),
            self.psn_gaps(),
            self.late(),
            self.duplicates(),
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

pub(crate) fn onoff(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}
