//! A load-balancing fabric: one sender host, one switch running the
//! `dataplane` controller, `U` uplinks into a sink namespace, and a paced
//! RoCEv2 sender whose flows all share ONE UDP source port (the case that
//! defeats 5-tuple ECMP).
//!
//! ```text
//!  host ns            switch ns (dataplane up, xdp_forward)         sink ns
//!  h0 ─────────────── sw-d0        group "uplinks" ─ sw-u0 ───────── k0
//!  (AF_PACKET sender)              (mode under test)  sw-u1 ───────── k1
//!                                                     ...
//!                                                     sw-u{U-1} ──── k{U-1}
//! ```
//!
//! * Every namespace is a [`Netns`] guard and the controller a child killed
//!   (SIGTERM, then SIGKILL) on drop, so everything goes away on success,
//!   error and panic. Addresses are from 198.18.0.0/15 only: the flows go
//!   from [`SRC_IP`] to [`DST_IP`] (route [`DST_PREFIX`] via the group); the
//!   sinks have no address at all (the frames are counted by the veth and
//!   dropped by IP, which does not forward there).
//! * The sinks' interfaces have GRO on: XDP_REDIRECT into a veth delivers
//!   only if the peer has an XDP program or GRO.
//! * IPv6 is off in every namespace, so no router solicitation or MLD
//!   report is counted as traffic.
//!
//! ## Traffic
//!
//! `N` flows from one host to one host, one UDP source port
//! ([`LbSpec::sport`]), destination QPs `0x100 + i`: the flow hash differs
//! only by the QP. Each flow sends messages (RDMA WRITE first / middle /
//! last, [`LbSpec::frame_len`] bytes each, `M` = [`LbSpec::burst_pkts`]
//! frames back to back) separated by idle gaps drawn uniformly from
//! `[gap_min, gap_max] x flowlet timeout` (a seeded generator, so runs are
//! repeatable): each message is one flowlet.
//!
//! All flows leave through the host's one link, a pacer at the host link
//! rate `H = U x C` that serves the flows with a message in progress round
//! robin (as a NIC serves its QPs), so a message is a burst at link rate.
//!
//! ## Scaling
//!
//! Real fabrics run 100-400 Gb/s uplinks; a userspace AF_PACKET sender on
//! this machine keeps up with a few hundred Mb/s of 1 KB frames (~40-80 k
//! frames/s). Time is **not** scaled (the flowlet timeout and the data
//! plane's rate estimator, 50 us periods with a 200 us time constant, run
//! in real microseconds); the **link speed** is: the uplink speed `C` the
//! switch is configured with is derived from the traffic so that the mean
//! offered load is `load x U x C`:
//!
//! ```text
//!   per-flow mean period = M S 8 / H + G      (burst at H, then gap, mean G)
//!   N M S 8 / period = load x U x C, H = U x C
//!   => C = M S 8 (N - load) / (load U G)
//! ```
//!
//! (e.g. M = 8, S = 1024 B, N = 8, U = 4, load 0.5, timeout 500 us, gaps
//! 2-4x: C = 164 Mb/s, H = 655 Mb/s, 40 k frames/s offered). The ratios
//! that matter to the balancer stay realistic: a message is a burst at
//! several times the uplink rate, the estimator sees an uplink carrying
//! one burst as saturated, and a flowlet is idle for 2-4 timeouts.
//! [`LbResult::offered_load`] reports the load actually achieved (the
//! sender can lag under CPU contention).
//!
//! ## Measurement
//!
//! Per-uplink transmitted bytes come from the switch's own counters
//! (`dataplane --netns <sw> stats --instance <name> --json`, the sum over
//! traffic classes of `tx_tc_bytes[tc]`), read while no traffic flows
//! before and after the run (so the window is exact), and are cross-checked
//! with what the sinks received (`ip -s -j link`, rx bytes). Figures:
//!
//! * share of uplink u: `bytes_u / total`;
//! * **imbalance**: `max_u bytes_u / mean_u bytes_u` (1 is perfect; with
//!   4 uplinks, 4 means one uplink carried everything);
//! * **utilisation, % of ideal**: `sum_u min(bytes_u, total / U) / total`:
//!   the part of the offered load that would fit if each uplink could carry
//!   only its fair `1/U` share of it (the situation of a fabric loaded to
//!   capacity, where every byte above an uplink's share queues or is
//!   dropped). 100% is perfect balance; hash placement of 8 flows as
//!   4/2/1/1 gives 75%.
//!
//! Both are also computed per progress window (1 s by default), which
//! shows whether the balance holds at shorter time scales.

use std::collections::VecDeque;
use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use dataplane_common::build::{self, Ip, Reth, L2};
use dataplane_common::lb::FlowKey;
use dataplane_common::wire::bth::{
    Bth, OP_WRITE_FIRST, OP_WRITE_LAST, OP_WRITE_MIDDLE, OP_WRITE_ONLY,
};

use crate::controller::Controller;
use crate::netns::{veth, Netns};
use crate::raw::RawSocket;

/// Source of every flow (the one sending host).
pub const SRC_IP: [u8; 4] = [198, 18, 0, 1];
/// Destination of every flow (one receiving host behind the uplinks).
pub const DST_IP: [u8; 4] = [198, 18, 100, 1];
/// Routed through the group.
pub const DST_PREFIX: &str = "198.18.100.0/24";
/// Destination QP of flow `i` is `QP_BASE + i`.
pub const QP_BASE: u32 = 0x100;
/// IPv4 protocol number of UDP.
const PROTO_UDP: u8 = 17;
/// RoCEv2's UDP destination port.
const ROCEV2_PORT: u16 = 4791;
/// Group name in the generated config.
pub const GROUP: &str = "uplinks";

/// Switch port names.
pub const DOWNLINK: &str = "sw-d0";
pub fn uplink(i: usize) -> String {
    format!("sw-u{i}")
}
/// Sink interface of uplink `i` (its peer).
pub fn sink_if(i: usize) -> String {
    format!("k{i}")
}

pub const MAC_HOST: [u8; 6] = [0x02, 0, 0, 0x18, 0x00, 0x01];
pub const MAC_DOWNLINK: [u8; 6] = [0x02, 0, 0, 0x18, 0x00, 0xfe];
/// MAC of switch uplink `i`.
pub fn mac_uplink(i: usize) -> [u8; 6] {
    [0x02, 0, 0, 0x18, 0x10 + i as u8, 0xfe]
}
/// MAC of sink `i` (the next hop of uplink `i`).
pub fn mac_sink(i: usize) -> [u8; 6] {
    [0x02, 0, 0, 0x18, 0x10 + i as u8, 0x01]
}

pub use crate::topo::mac_str;

/// Load-balancing modes, as the config names them.
pub const MODES: [&str; 4] = ["hash", "flowlet", "bandwidth", "spray"];

/// What to build and send.
#[derive(Debug, Clone)]
pub struct LbSpec {
    /// Uplinks (group members), 1-16.
    pub uplinks: usize,
    /// Flows (queue pairs), 1-64.
    pub flows: usize,
    /// Frame length without FCS (60-1514).
    pub frame_len: usize,
    /// Frames per message (flowlet).
    pub burst_pkts: u32,
    /// The group's `flowlet_timeout_us`.
    pub flowlet_timeout_us: u32,
    /// Idle gap between a flow's messages, in flowlet timeouts: uniform in
    /// `[gap_min, gap_max]`; `gap_min` must exceed 1.
    pub gap_min: f64,
    pub gap_max: f64,
    /// Mean offered load as a fraction of `uplinks x uplink speed` (0-1].
    pub load: f64,
    /// `[switch] hash_seed`.
    pub hash_seed: u32,
    /// Seed of the traffic's random gaps and start offsets.
    pub traffic_seed: u64,
    /// The one UDP source port of every flow.
    pub sport: u16,
}

impl Default for LbSpec {
    fn default() -> Self {
        LbSpec {
            uplinks: 4,
            flows: 8,
            frame_len: 1024,
            burst_pkts: 8,
            flowlet_timeout_us: 500,
            gap_min: 2.0,
            gap_max: 4.0,
            load: 0.5,
            hash_seed: 1,
            traffic_seed: 0x005e_ed1b,
            sport: 49152,
        }
    }
}

impl LbSpec {
    pub fn check(&self) -> Result<()> {
        if !(1..=16).contains(&self.uplinks) {
            bail!("uplinks must be 1-16, got {}", self.uplinks);
        }
        if !(1..=64).contains(&self.flows) {
            bail!("flows must be 1-64, got {}", self.flows);
        }
        if !(60..=1514).contains(&self.frame_len) {
            bail!("frame_len must be 60-1514 bytes, got {}", self.frame_len);
        }
        if self.burst_pkts == 0 {
            bail!("burst_pkts must be at least 1");
        }
        if !(1..=4_000_000).contains(&self.flowlet_timeout_us) {
            bail!(
                "flowlet_timeout_us must be 1-4000000, got {}",
                self.flowlet_timeout_us
            );
        }
        if !(self.gap_min > 1.0 && self.gap_max >= self.gap_min) {
            bail!(
                "gaps must satisfy 1 < gap_min <= gap_max (in flowlet timeouts), got {}..{}",
                self.gap_min,
                self.gap_max
            );
        }
        if !(self.load > 0.0 && self.load <= 1.0) {
            bail!("load must be in (0, 1], got {}", self.load);
        }
        let c = self.uplink_speed_mbps();
        if !(1..=1_600_000).contains(&c) {
            bail!("derived uplink speed {c} Mb/s is out of the config's range; change burst_pkts or the timeout");
        }
        Ok(())
    }

    /// Mean idle gap between a flow's messages, seconds.
    pub fn mean_gap_s(&self) -> f64 {
        self.flowlet_timeout_us as f64 * 1e-6 * (self.gap_min + self.gap_max) / 2.0
    }

    /// The scaled uplink speed `C` (Mb/s, rounded, at least 1) that makes
    /// the mean offered load `load x U x C` (see the module docs).
    pub fn uplink_speed_mbps(&self) -> u32 {
        let bits = self.burst_pkts as f64 * self.frame_len as f64 * 8.0;
        let c_bps = bits * (self.flows as f64 - self.load)
            / (self.load * self.uplinks as f64 * self.mean_gap_s());
        (c_bps / 1e6).round().max(1.0) as u32
    }

    /// The host link rate `H = U x C`, b/s: the pace of the sender.
    pub fn host_bps(&self) -> f64 {
        self.uplinks as f64 * self.uplink_speed_mbps() as f64 * 1e6
    }

    /// Offered load the schedule aims at, b/s (`load x U x C`, with the
    /// rounded C).
    pub fn target_bps(&self) -> f64 {
        self.load * self.host_bps()
    }

    /// The flow key of flow `i`, as the data plane hashes it.
    pub fn flow_key(&self, i: usize) -> FlowKey {
        FlowKey::ipv4(
            SRC_IP,
            DST_IP,
            PROTO_UDP,
            self.sport,
            ROCEV2_PORT,
            QP_BASE + i as u32,
        )
    }

    pub fn flow_keys(&self) -> Vec<FlowKey> {
        (0..self.flows).map(|i| self.flow_key(i)).collect()
    }

    /// The switch config for `mode` ("hash", "flowlet", "bandwidth" or
    /// "spray"); member `i` of the group is next hop `n<i>` = sink `i` on
    /// uplink `sw-u<i>`.
    pub fn config_text(&self, instance: &str, mode: &str) -> String {
        use std::fmt::Write;
        let c = self.uplink_speed_mbps();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "# generated by testbed::lbfabric: {} uplinks, {} flows",
            self.uplinks, self.flows
        );
        let _ = writeln!(
            s,
            "[switch]\nname = \"{instance}\"\nhash_seed = {}\n",
            self.hash_seed
        );
        let _ = writeln!(
            s,
            "[[port]]\nname = \"{DOWNLINK}\"\nmac = \"{}\"\nspeed = {}\n",
            mac_str(MAC_DOWNLINK),
            c * self.uplinks as u32
        );
        for i in 0..self.uplinks {
            let _ = writeln!(
                s,
                "[[port]]\nname = \"{}\"\nmac = \"{}\"\nspeed = {c}\n",
                uplink(i),
                mac_str(mac_uplink(i))
            );
        }
        for i in 0..self.uplinks {
            let _ = writeln!(
                s,
                "[[nexthop]]\nname = \"n{i}\"\nport = \"{}\"\nmac = \"{}\"\n",
                uplink(i),
                mac_str(mac_sink(i))
            );
        }
        let members: Vec<String> = (0..self.uplinks)
            .map(|i| format!("{{ nexthop = \"n{i}\" }}"))
            .collect();
        let _ = writeln!(
            s,
            "[[group]]\nname = \"{GROUP}\"\nmode = \"{mode}\"\nflowlet_timeout_us = {}\nmembers = [{}]\n",
            self.flowlet_timeout_us,
            members.join(", ")
        );
        let _ = writeln!(
            s,
            "[[route]]\nprefix = \"{DST_PREFIX}\"\ngroup = \"{GROUP}\""
        );
        s
    }

    /// The frames of flow `i`: [first, middle, last, only], all
    /// `frame_len` bytes, addressed to the switch's downlink.
    fn flow_frames(&self, i: usize) -> Vec<Vec<u8>> {
        let l2 = L2::new(MAC_DOWNLINK, MAC_HOST);
        let ip = Ip::v4(SRC_IP, DST_IP).dscp(26).ecn(2).ttl(64);
        let qp = QP_BASE + i as u32;
        // 58 bytes of headers (Ethernet 14, IPv4 20, UDP 8, BTH 12, ICRC 4),
        // 16 more with a RETH
        let plain = self.frame_len.saturating_sub(58);
        let with_reth = self.frame_len.saturating_sub(58 + 16);
        let reth = Reth {
            va: 0x7f00_0000_0000 + ((i as u64) << 24),
            rkey: 0x1000 + i as u32,
            len: self.burst_pkts * plain as u32,
        };
        let bth = |opcode, psn| Bth::request(opcode, qp, psn);
        // FIRST (with RETH), MIDDLE, LAST, and ONLY (with RETH)
        [
            (OP_WRITE_FIRST, 0, true),
            (OP_WRITE_MIDDLE, 1, false),
            (OP_WRITE_LAST, 2, false),
            (OP_WRITE_ONLY, 0, true),
        ]
        .into_iter()
        .map(|(op, psn, first)| {
            let (r, payload) = if first {
                (Some(reth), with_reth)
            } else {
                (None, plain)
            };
            build::rocev2_frame(&l2, &ip, self.sport, &bth(op, psn), r, &vec![0xa5; payload])
        })
        .collect()
    }
}

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// The fabric
// ---------------------------------------------------------------------------

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

/// The namespaces of the fabric (torn down on drop, in reverse order).
pub struct LbFabric {
    pub spec: LbSpec,
    dataplane: PathBuf,
    pub host: Netns,
    pub switch: Netns,
    pub sink: Netns,
    runs: u32,
    /// Set by the caller (e.g. a SIGINT handler) to cut a run short.
    pub interrupt: Option<&'static AtomicBool>,
}

impl LbFabric {
    /// Builds the namespaces and links. `dataplane` is the controller
    /// binary.
    pub fn create(spec: LbSpec, dataplane: &Path) -> Result<LbFabric> {
        spec.check()?;
        if !dataplane.exists() {
            bail!("no controller binary at {}", dataplane.display());
        }
        let host = Netns::create("lbh")?;
        let switch = Netns::create("lbs")?;
        let sink = Netns::create("lbk")?;
        let fabric = LbFabric {
            spec,
            dataplane: dataplane.to_path_buf(),
            host,
            switch,
            sink,
            runs: 0,
            interrupt: None,
        };
        for ns in [&fabric.host, &fabric.switch, &fabric.sink] {
            ns.disable_ipv6()?;
        }
        veth(
            &fabric.host,
            "h0",
            &mac_str(MAC_HOST),
            &fabric.switch,
            DOWNLINK,
            &mac_str(MAC_DOWNLINK),
        )?;
        for i in 0..fabric.spec.uplinks {
            veth(
                &fabric.switch,
                &uplink(i),
                &mac_str(mac_uplink(i)),
                &fabric.sink,
                &sink_if(i),
                &mac_str(mac_sink(i)),
            )?;
            // veth() asks for GRO best effort; without it (and with no XDP
            // program on the sink) redirected frames vanish: insist.
            fabric
                .sink
                .exec(&["ethtool", "-K", &sink_if(i), "gro", "on"])
                .with_context(|| {
                    format!("GRO on {} (XDP_REDIRECT into a veth needs it)", sink_if(i))
                })?;
        }
        // the switch's kernel must not forward anything the program passes
        fabric
            .switch
            .exec(&["sysctl", "-qw", "net.ipv4.ip_forward=0"])?;
        Ok(fabric)
    }

    fn interrupted(&self) -> bool {
        self.interrupt
            .map(|f| f.load(Ordering::SeqCst))
            .unwrap_or(false)
    }

    /// Runs the controller with a group in `mode`, sends for
    /// `opts.seconds`, and measures.
    pub fn run(&mut self, mode: &str, opts: &RunOpts) -> Result<LbResult> {
        if !MODES.contains(&mode) {
            bail!(
                "unknown mode {mode:?}, expected one of {}",
                MODES.join(", ")
            );
        }
        self.runs += 1;
        let instance = format!("lbfab-{}-{}", std::process::id(), self.runs);
        let text = self.spec.config_text(&instance, mode);
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
        let ctl = Controller::start(&self.dataplane, &self.switch, &instance, &text, &label)?;
        let result = self.measure(mode, &ctl, opts, &label);
        let _ = ctl.drain(&label);
        drop(ctl);
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
        ctl: &Controller,
        opts: &RunOpts,
        label: &str,
    ) -> Result<LbResult> {
        let u = self.spec.uplinks;
        let names: Vec<String> = (0..u).map(uplink).collect();
        // quiet before: nothing is being sent
        std::thread::sleep(Duration::from_millis(50));
        let sw0 = switch_stats(&self.dataplane, &self.switch, &ctl.instance)?;
        let sk0 = sink_stats(&self.sink, u)?;

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
                        let _in = self.host.enter()?;
                        plan.run("h0", dur, &stop, &stats)
                    })?;
                let sampler = (!opts.fine_window.is_zero()).then(|| {
                    std::thread::Builder::new()
                        .name("lb-sampler".into())
                        .spawn_scoped(s, || -> Result<Vec<Vec<u64>>> {
                            let _in = self.sink.enter()?;
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
                    match switch_stats(&self.dataplane, &self.switch, &ctl.instance) {
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
                    let _ = ctl.drain(label);
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
        let sw1 = switch_stats(&self.dataplane, &self.switch, &ctl.instance)?;
        let sk1 = sink_stats(&self.sink, u)?;
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

// ---------------------------------------------------------------------------
// Counters
// ---------------------------------------------------------------------------

/// Every port's counters from `dataplane stats --json`, by port name.
#[derive(Debug, Clone, Default)]
struct SwitchStats {
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

fn switch_stats(bin: &Path, ns: &Netns, instance: &str) -> Result<SwitchStats> {
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
fn sink_stats(ns: &Netns, uplinks: usize) -> Result<Vec<(u64, u64)>> {
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
fn sink_rx_now(uplinks: usize) -> Result<Vec<u32>> {
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
fn sample_windows(
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

// ---------------------------------------------------------------------------
// The controller
// ---------------------------------------------------------------------------

/// `dataplane --netns <ns> up -c <file>`, ready once it printed `ready:`;
/// SIGTERM (then SIGKILL) and the config removed on drop.
// ---------------------------------------------------------------------------
// The paced sender
// ---------------------------------------------------------------------------

#[derive(Default)]
struct SenderStats {
    pkts: AtomicU64,
    bytes: AtomicU64,
    messages: AtomicU64,
    errors: AtomicU64,
}

/// splitmix64: a small, seeded, reproducible generator.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Everything the sender thread needs (owned, sent to the thread).
struct SenderPlan {
    frames: Vec<Vec<Vec<u8>>>,
    burst: u32,
    /// Host link: time per frame, ns.
    tick_ns: f64,
    gap_min_ns: f64,
    gap_max_ns: f64,
    seed: u64,
}

impl SenderPlan {
    fn new(spec: &LbSpec) -> SenderPlan {
        let t = spec.flowlet_timeout_us as f64 * 1e3;
        SenderPlan {
            frames: (0..spec.flows).map(|i| spec.flow_frames(i)).collect(),
            burst: spec.burst_pkts,
            tick_ns: spec.frame_len as f64 * 8.0 * 1e9 / spec.host_bps(),
            gap_min_ns: spec.gap_min * t,
            gap_max_ns: spec.gap_max * t,
            seed: spec.traffic_seed,
        }
    }

    /// Sends on `ifname` (in the calling thread's namespace) for `dur` or
    /// until `stop`; returns the seconds it ran.
    fn run(
        &self,
        ifname: &str,
        dur: Duration,
        stop: &AtomicBool,
        stats: &SenderStats,
    ) -> Result<f64> {
        let sock = RawSocket::open_sender(ifname, true)?;
        // fine-grained sleeps: the default timer slack is 50 us
        // SAFETY: prctl on the calling thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
        let n = self.frames.len();
        let mut rng = Rng(self.seed);
        let gap = |rng: &mut Rng| {
            Duration::from_nanos(
                (self.gap_min_ns + (self.gap_max_ns - self.gap_min_ns) * rng.unit()) as u64,
            )
        };
        let start = Instant::now();
        let end = start + dur;
        // desynchronised starts: each flow begins within one mean gap
        let mut next_start: Vec<Instant> = (0..n)
            .map(|_| {
                start
                    + Duration::from_nanos(
                        ((self.gap_min_ns + self.gap_max_ns) / 2.0 * rng.unit()) as u64,
                    )
            })
            .collect();
        let mut left = vec![0u32; n];
        let mut pos = vec![0u32; n];
        let mut rr: VecDeque<usize> = VecDeque::with_capacity(n);
        let tick = Duration::from_nanos(self.tick_ns.max(1.0) as u64);
        let mut next_tx = start;
        let (mut pkts, mut bytes, mut msgs, mut errs) = (0u64, 0u64, 0u64, 0u64);
        let mut flushed = Instant::now();
        loop {
            let now = Instant::now();
            if now >= end || stop.load(Ordering::Relaxed) {
                break;
            }
            for f in 0..n {
                if left[f] == 0 && next_start[f] <= now {
                    left[f] = self.burst;
                    pos[f] = 0;
                    rr.push_back(f);
                }
            }
            let Some(&f) = rr.front() else {
                let t = next_start
                    .iter()
                    .min()
                    .copied()
                    .unwrap_or(end)
                    .min(end)
                    .min(now + Duration::from_millis(5));
                wait_until(t);
                continue;
            };
            if next_tx > now {
                wait_until(next_tx);
                continue;
            }
            rr.pop_front();
            let variant = match (self.burst, pos[f]) {
                (1, _) => 3,
                (_, 0) => 0,
                (b, p) if p + 1 == b => 2,
                _ => 1,
            };
            let frame = &self.frames[f][variant];
            if sock.send(frame).unwrap_or(false) {
                pkts += 1;
                bytes += frame.len() as u64;
            } else {
                errs += 1;
            }
            next_tx = next_tx.max(now) + tick;
            pos[f] += 1;
            left[f] -= 1;
            if left[f] == 0 {
                msgs += 1;
                next_start[f] = Instant::now() + gap(&mut rng);
            } else {
                rr.push_back(f);
            }
            if now.duration_since(flushed) > Duration::from_millis(20) {
                stats.pkts.store(pkts, Ordering::Relaxed);
                stats.bytes.store(bytes, Ordering::Relaxed);
                stats.messages.store(msgs, Ordering::Relaxed);
                stats.errors.store(errs, Ordering::Relaxed);
                flushed = now;
            }
        }
        stats.pkts.store(pkts, Ordering::SeqCst);
        stats.bytes.store(bytes, Ordering::SeqCst);
        stats.messages.store(msgs, Ordering::SeqCst);
        stats.errors.store(errs, Ordering::SeqCst);
        Ok(start.elapsed().as_secs_f64())
    }
}

/// Sleeps most of the way, spins the rest.
fn wait_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > Duration::from_micros(150) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_speed_gives_the_target_load() {
        let s = LbSpec::default();
        let c = s.uplink_speed_mbps() as f64 * 1e6;
        let h = s.uplinks as f64 * c;
        let burst_s = s.burst_pkts as f64 * s.frame_len as f64 * 8.0 / h;
        let per_flow = s.burst_pkts as f64 * s.frame_len as f64 * 8.0 / (burst_s + s.mean_gap_s());
        let load = s.flows as f64 * per_flow / h;
        assert!((load - s.load).abs() < 0.01, "load {load}");
    }

    #[test]
    fn metrics() {
        assert_eq!(imbalance(&[4, 2, 1, 1]), 2.0);
        assert_eq!(utilisation_pct(&[4, 2, 1, 1]), 75.0);
        assert_eq!(imbalance(&[5, 5, 5, 5]), 1.0);
        assert_eq!(utilisation_pct(&[5, 5, 5, 5]), 100.0);
        assert_eq!(utilisation_pct(&[8, 0, 0, 0]), 25.0);
    }

    #[test]
    fn frames_are_frame_len_and_roce() {
        let s = LbSpec::default();
        for f in s.flow_frames(3) {
            assert_eq!(f.len(), s.frame_len);
            assert_eq!(u16::from_be_bytes([f[36], f[37]]), ROCEV2_PORT);
            assert_eq!(u16::from_be_bytes([f[34], f[35]]), s.sport);
        }
    }
}
