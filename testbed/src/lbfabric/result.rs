//! What a load-balancing run measured: per-uplink shares, imbalance,
//! utilisation of the ideal, and its report.

use std::time::Duration;

/// What one uplink carried in the measured window.
#[derive(Debug, Clone)]
pub struct UplinkResult {
    pub name: String,
    /// Switch counters: sum over TCs of tx_tc_bytes / tx_tc_pkts.
    pub tx_bytes: u64,
    pub tx_pkts: u64,
    /// What the sink interface received (ip -s link rx).
    pub sink_rx_bytes: u64,
    pub sink_rx_pkts: u64,
}

/// The result of one mode's run.
#[derive(Debug, Clone)]
pub struct LbResult {
    pub mode: String,
    pub uplinks: Vec<UplinkResult>,
    /// Seconds the sender ran.
    pub seconds: f64,
    /// The scaled uplink speed, Mb/s.
    pub uplink_speed_mbps: u32,
    /// Frames the sender put on h0, and messages (flowlets) it completed.
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    pub messages: u64,
    /// sendto() failures (frames not sent).
    pub send_errors: u64,
    /// The switch: frames routed from the downlink, and every drop_* /
    /// pass_* counter of the downlink (name, delta) that moved.
    pub routed: u64,
    pub downlink_other: Vec<(String, u64)>,
    /// Per-uplink tx bytes (switch counters) of each progress window.
    pub windows: Vec<Vec<u64>>,
    /// Per-uplink rx bytes (sink counters) of each short window of
    /// `fine_window`.
    pub fine: Vec<Vec<u64>>,
    pub fine_window: Duration,
}

/// `max / mean` of `v` (1 when all are equal; 0 when all are 0).
pub fn imbalance(v: &[u64]) -> f64 {
    let total: u64 = v.iter().sum();
    if total == 0 || v.is_empty() {
        return 0.0;
    }
    let mean = total as f64 / v.len() as f64;
    *v.iter().max().unwrap() as f64 / mean
}

/// `100 x sum_w sum_u min(v_uw, total_w / U) / sum_w total_w`: the share
/// of the load that fits if, in every window `w`, each uplink can carry
/// only its fair `1/U` of that window's load.
pub fn windowed_utilisation_pct(windows: &[Vec<u64>]) -> f64 {
    let (mut fit, mut total) = (0.0, 0.0);
    for w in windows {
        let t = w.iter().sum::<u64>() as f64;
        if t > 0.0 && !w.is_empty() {
            fit += w
                .iter()
                .map(|&b| (b as f64).min(t / w.len() as f64))
                .sum::<f64>();
            total += t;
        }
    }
    if total > 0.0 {
        100.0 * fit / total
    } else {
        0.0
    }
}

/// `100 x sum_u min(v_u, total / U) / total` (see the module docs).
pub fn utilisation_pct(v: &[u64]) -> f64 {
    let total: u64 = v.iter().sum();
    if total == 0 || v.is_empty() {
        return 0.0;
    }
    let share = total as f64 / v.len() as f64;
    100.0 * v.iter().map(|&b| (b as f64).min(share)).sum::<f64>() / total as f64
}

impl LbResult {
    pub fn tx_bytes(&self) -> Vec<u64> {
        self.uplinks.iter().map(|u| u.tx_bytes).collect()
    }
    pub fn total_bytes(&self) -> u64 {
        self.uplinks.iter().map(|u| u.tx_bytes).sum()
    }
    /// Share of each uplink, 0-1.
    pub fn shares(&self) -> Vec<f64> {
        let t = self.total_bytes().max(1) as f64;
        self.uplinks.iter().map(|u| u.tx_bytes as f64 / t).collect()
    }
    pub fn imbalance(&self) -> f64 {
        imbalance(&self.tx_bytes())
    }
    pub fn utilisation_pct(&self) -> f64 {
        utilisation_pct(&self.tx_bytes())
    }
    /// Utilisation over the progress windows: `sum_w sum_u min(b_uw,
    /// total_w / U) / sum_w total_w` (each window's load split fairly).
    pub fn window_utilisation_pct(&self) -> f64 {
        windowed_utilisation_pct(&self.windows)
    }
    /// Worst per-window imbalance.
    pub fn window_imbalance_max(&self) -> f64 {
        self.windows
            .iter()
            .map(|w| imbalance(w))
            .fold(0.0, f64::max)
    }
    /// Utilisation over the short windows (see
    /// [`windowed_utilisation_pct`]): how much of the load fits if, in
    /// every `fine_window`, each uplink carries only a fair share of that
    /// window's load.
    pub fn fine_utilisation_pct(&self) -> f64 {
        windowed_utilisation_pct(&self.fine)
    }
    /// Byte-weighted mean of the short windows' max/mean.
    pub fn fine_imbalance(&self) -> f64 {
        let (mut num, mut den) = (0.0, 0.0);
        for w in &self.fine {
            let t = w.iter().sum::<u64>() as f64;
            if t > 0.0 {
                num += t * imbalance(w);
                den += t;
            }
        }
        if den > 0.0 {
            num / den
        } else {
            0.0
        }
    }
    /// Achieved offered load: bytes carried / (U x C x seconds).
    pub fn offered_load(&self) -> f64 {
        let cap =
            self.uplinks.len() as f64 * self.uplink_speed_mbps as f64 * 1e6 / 8.0 * self.seconds;
        if cap > 0.0 {
            self.total_bytes() as f64 / cap
        } else {
            0.0
        }
    }
    /// Largest relative difference between an uplink's switch tx bytes and
    /// its sink's rx bytes.
    pub fn sink_mismatch(&self) -> f64 {
        self.uplinks
            .iter()
            .map(|u| {
                (u.tx_bytes as f64 - u.sink_rx_bytes as f64).abs() / (u.tx_bytes.max(1) as f64)
            })
            .fold(0.0, f64::max)
    }
    /// One line per uplink plus the summary, for humans.
    pub fn render(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let shares = self.shares();
        let _ = writeln!(
            s,
            "mode {}: {:.1} s, {} frames sent ({} messages, {} send errors), {} routed, offered load {:.1}% of {} x {} Mb/s",
            self.mode,
            self.seconds,
            self.sent_pkts,
            self.messages,
            self.send_errors,
            self.routed,
            100.0 * self.offered_load(),
            self.uplinks.len(),
            self.uplink_speed_mbps
        );
        let _ = writeln!(
            s,
            "  {:<8} {:>14} {:>10} {:>8} {:>14} {:>10}",
            "uplink", "tx bytes", "tx pkts", "share", "sink rx bytes", "sink pkts"
        );
        for (u, sh) in self.uplinks.iter().zip(&shares) {
            let _ = writeln!(
                s,
                "  {:<8} {:>14} {:>10} {:>7.1}% {:>14} {:>10}",
                u.name,
                u.tx_bytes,
                u.tx_pkts,
                100.0 * sh,
                u.sink_rx_bytes,
                u.sink_rx_pkts
            );
        }
        let _ = writeln!(
            s,
            "  imbalance (max/mean) {:.3}, utilisation {:.2}% of ideal; {} progress windows: utilisation {:.2}%, worst max/mean {:.3}; {} windows of {} ms: utilisation {:.1}%, mean max/mean {:.3}; sink vs switch mismatch {:.3}%",
            self.imbalance(),
            self.utilisation_pct(),
            self.windows.len(),
            self.window_utilisation_pct(),
            self.window_imbalance_max(),
            self.fine.len(),
            self.fine_window.as_millis(),
            self.fine_utilisation_pct(),
            self.fine_imbalance(),
            100.0 * self.sink_mismatch()
        );
        if !self.downlink_other.is_empty() {
            let o: Vec<String> = self
                .downlink_other
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let _ = writeln!(s, "  downlink also counted: {}", o.join(" "));
        }
        s
    }
}
