//! Load balancing measured on a fan ([`Shape::Fan`](crate::topo::Shape::Fan), built by the one
//! fabric builder, [`crate::fabric::Fabric::build`]): one sender host, one switch running
//! the `dataplane` controller, `U` uplinks into a sink, and a paced RoCEv2
//! sender whose flows all share ONE UDP source port (the case that defeats
//! 5-tuple ECMP).
//!
//! ```text
//!  h0 ns              sw ns (dataplane up, xdp_forward)            sink ns
//!  eth0 ───────────── d0           group "uplinks" ─ u0 ──────────── k0
//!  (AF_PACKET sender)              (mode under test)  u1 ──────────── k1
//!                                                     ...
//!                                                     u{U-1} ─────── k{U-1}
//! ```
//!
//! * Each mode runs on a fabric of its own (a fresh controller: no flowlet
//!   or load state carried over), torn down by the fabric's guards on
//!   success, error and panic. The flows go from [`SRC_IP`] to [`DST_IP`]
//!   (route [`crate::topo::FAN_DST_PREFIX`] via the group); neither the host nor the
//!   sink has an address, and IPv6 is off in all three namespaces, so no
//!   router solicitation or MLD report is counted as traffic (see
//!   [`crate::topo`]).
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

use crate::topo::{Shape, Topology};
use anyhow::{bail, Result};
use dataplane_common::build::{self, Ip, Reth, L2};
use dataplane_common::lb::FlowKey;
use dataplane_common::wire::bth::{
    Bth, OP_WRITE_FIRST, OP_WRITE_LAST, OP_WRITE_MIDDLE, OP_WRITE_ONLY,
};

/// Source of every flow (the fan's one host).
pub use crate::topo::FAN_SRC_IP as SRC_IP;
/// Destination of every flow (one address behind the uplinks).
pub const DST_IP: [u8; 4] = [198, 18, 100, 1];
/// Destination QP of flow `i` is `QP_BASE + i`.
pub const QP_BASE: u32 = 0x100;
/// IPv4 protocol number of UDP.
const PROTO_UDP: u8 = 17;
/// RoCEv2's UDP destination port.
const ROCEV2_PORT: u16 = 4791;
/// The fan's host port on the switch (the flows' ingress).
pub const DOWNLINK: &str = "d0";
pub use crate::topo::{fan_sink_if as sink_if, fan_uplink as uplink, fan_uplink_mac as mac_uplink};

/// Load-balancing modes, as the config names them.
pub use dataplane_config::MODES;

mod result;
mod run;
mod sender;

pub use result::*;
pub use run::*;

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
        self.topology("hash").check()
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

    /// The fan this spec runs on, its group in `mode` ("hash", "flowlet",
    /// "bandwidth" or "spray"): uplinks at the scaled speed `C`, the host
    /// link at `U x C`; member `i` of the group is next hop `n<i>` = the
    /// sink's `k<i>` on uplink `u<i>`.
    pub fn topology(&self, mode: &str) -> Topology {
        let c = self.uplink_speed_mbps();
        Topology {
            shape: Shape::Fan {
                uplinks: self.uplinks,
            },
            host_mbps: c * self.uplinks as u32,
            uplink_mbps: c,
            lb_mode: mode.into(),
            flowlet_timeout_us: self.flowlet_timeout_us,
            hash_seed: self.hash_seed,
            ..Topology::default()
        }
    }

    /// The switch config for `mode` (see [`LbSpec::topology`]).
    pub fn config_text(&self, instance: &str, mode: &str) -> String {
        let t = self.topology(mode);
        t.switch_config(&t.leaves()[0], instance)
    }

    /// The frames of flow `i`: [first, middle, last, only], all
    /// `frame_len` bytes, from the fan's host to its switch port.
    fn flow_frames(&self, i: usize) -> Vec<Vec<u8>> {
        let host = &self.topology("hash").hosts()[0];
        let l2 = L2::new(host.gw_mac, host.mac);
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
