//! Topology descriptions and everything derived from them without touching
//! the machine: names, MACs, addresses, and each switch's `dataplane`
//! config. [`crate::fabric::Fabric`] builds a validated [`Topology`].
//!
//! ```text
//!  leaf-spine (S spines, L leaves, H hosts per leaf)      star (H hosts)
//!
//!      spine0 ... spine{S-1}                                   sw
//!       l0 l1        l0 l1          spine port l<j> -> leaf j   h0 .. h{H-1}
//!       |   \______  |   |
//!      s0 s1       \ s0 s1          leaf port s<i> -> spine i
//!      leaf0  ...  leaf{L-1}
//!     h0 .. h{H-1}                  leaf port h<k> -> host k of that leaf
//!      |
//!     eth0 of host h<l*H+k>
//!
//!  fan (U uplinks): the load-balancing fabric
//!
//!     h0 eth0 ── d0  sw  u0 ── k0  sink
//!                        u1 ── k1
//!                        ..
//!                    u{U-1} ── k{U-1}
//! ```
//!
//! A fan's one host sends raw frames only: it has no address and its IPv6
//! is off (nothing but the test's frames reach the switch); its frames carry
//! [`FAN_SRC_IP`] to [`FAN_DST_PREFIX`], which the switch routes to the
//! group of its uplinks. The sink is one namespace with an interface per
//! uplink and no address: it counts what arrives (the kernel drops it). The
//! fan's switch runs forwarding and balancing only (no `[buffer]`): it
//! measures placement, not queues.
//!
//! Addresses: host `k` of leaf `l` is `198.18.<l+1>.<k+1>/24` and
//! `2001:db8:0:<l+1>::<k+1>/64`; a star's hosts are on leaf 0. Leaves
//! route their hosts' /32 and /128 to the host port and the whole fabric
//! (`198.18.0.0/15`, `2001:db8::/32`) to the group of spine uplinks; spines
//! route each leaf's /24 and /64 to that leaf. Switch-to-switch links carry
//! no addresses: next hops are MACs in the configs, as on an L3 fabric with
//! static neighbours.

use crate::config_text::ConfigText;
pub use crate::config_text::{ipv4_str, ipv6_str, mac_str};
use anyhow::{bail, Result};

/// Ports one switch's buffer model covers (`dataplane_common` MODEL_PORTS).
pub const MAX_SWITCH_PORTS: usize = 16;
/// Leaves addressable with one /24 each inside 198.18.0.0/15 (leaf l uses
/// 198.18.<l+1>.0/24, so 1..=254 on the first /16).
pub const MAX_LEAVES_BY_ADDRESS: usize = 254;
/// Hosts per /24 (.1 to .253; .254 is left for a gateway).
pub const MAX_HOSTS_BY_ADDRESS: usize = 253;

/// The DSCP RoCEv2 data uses (SONiC AZURE map: TC 3, lossless).
pub const ROCE_DSCP: u8 = 3;
/// The priority / traffic class of RoCEv2 data.
pub const ROCE_TC: u8 = 3;
/// The DSCP of CNPs (AZURE: TC 6).
pub const CNP_DSCP: u8 = 48;

/// Source address of a fan's frames.
pub const FAN_SRC_IP: [u8; 4] = [198, 18, 0, 1];
/// Behind a fan's uplinks: routed to the group of them.
pub const FAN_DST_PREFIX: &str = "198.18.100.0/24";
/// The group of a fan's uplinks.
pub const FAN_GROUP: &str = "uplinks";

/// The shape of a fabric.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// `hosts` hosts around one switch.
    Star { hosts: usize },
    /// One host, one switch, `uplinks` links into one sink (see the module
    /// docs).
    Fan { uplinks: usize },
    /// `spines` spines, `leaves` leaves, `hosts_per_leaf` hosts on each.
    LeafSpine {
        spines: usize,
        leaves: usize,
        hosts_per_leaf: usize,
    },
}

/// A fabric to build: its shape and its switches' settings.
#[derive(Clone, Debug)]
pub struct Topology {
    pub shape: Shape,
    /// Host link speed, Mb/s (hosts send at this rate).
    pub host_mbps: u32,
    /// Per-host link speeds, Mb/s, by host index: host `i` runs at
    /// `host_speeds[i]` where given, else at `host_mbps`.
    pub host_speeds: Vec<u32>,
    /// Leaf-spine link speed, Mb/s.
    pub uplink_mbps: u32,
    /// Load-balancing mode of the leaves' uplink group.
    pub lb_mode: String,
    pub flowlet_timeout_us: u32,
    /// In `place` mode, far-side notifications from the spines' ports
    /// toward leaves (`far_notify`); no effect in other modes.
    pub far_notify: bool,
    /// PFC on priority 3 on every port.
    pub pfc: bool,
    /// ECN marking (WRED profile ROCE) on every port.
    pub ecn: bool,
    /// WRED/ECN thresholds (bytes) and marking probability at Kmax (%).
    pub kmin: u32,
    pub kmax: u32,
    pub pmax: u32,
    /// Shared buffer pool per switch, bytes.
    pub pool_bytes: u32,
    /// `[buffer] dynamic_th` of lossless PGs: a PG sends XOFF above
    /// `2^dynamic_th x` the free pool.
    pub dynamic_th: i8,
    /// `[buffer] lossy_dynamic_th`: a lossy PG (PFC off) drops above
    /// `2^lossy_dynamic_th x` the free pool.
    pub lossy_dynamic_th: i8,
    /// Headroom (XOFF) per lossless PG, bytes. It must hold what arrives
    /// after XOFF: in this emulation a paused switch still forwards what
    /// it has admitted (its model queue is paused, the veth is not), so the
    /// frames already on their way over several hops land in the headroom
    /// of the switch that paused; it is sized for that, not from cable
    /// length.
    pub headroom_bytes: u32,
    /// PFC response time the headroom is sized for, us (`[buffer]
    /// response_us`): it covers the controller's emitter and the peer.
    pub response_us: u32,
    /// `[switch] hash_seed` of every switch.
    pub hash_seed: u32,
    /// Where the switches' routes come from.
    pub routing: Routing,
    /// Packet trimming settings of every switch (issue 18); `None`: no
    /// `[switch_trimming]` and no buffer profile on the queues.
    pub trimming: Option<Trimming>,
}

/// `[switch_trimming]` of every switch and one `[buffer_profile]`,
/// [`TRIM_PROFILE`], on the queues 0-2 of every port (lossy with PFC on 3,4
/// or off), whose `packet_discard_action` is `trim` or `drop`: the same
/// buffer either way, so a run with `trim: false` is the plain-drop
/// baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trimming {
    /// `packet_discard_action = "trim"` (else `"drop"`).
    pub trim: bool,
    pub size: u16,
    pub dscp: u8,
    pub queue: u8,
}

/// The buffer profile name [`Trimming`] writes.
pub const TRIM_PROFILE: &str = "q_lossy_trim_profile";

/// The fabric's control plane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Routing {
    /// Routes and neighbours in each switch's config.
    #[default]
    Static,
    /// FRR (zebra + bgpd) in each switch namespace, eBGP unnumbered; the
    /// controllers follow the kernel FIB (`[routing] source = "kernel"`).
    Bgp,
}

impl Default for Topology {
    /// The default fabric: 2 spines, 2 leaves, 4 hosts per leaf, hosts at
    /// 20 Mb/s, uplinks at 40 Mb/s (no oversubscription), flowlet mode,
    /// PFC and ECN on. Under a slow-machine factor the speeds are divided
    /// by it (`slow::rate_mbps`).
    fn default() -> Self {
        Topology {
            shape: Shape::LeafSpine {
                spines: 2,
                leaves: 2,
                hosts_per_leaf: 4,
            },
            host_mbps: crate::slow::rate_mbps(20),
            host_speeds: Vec::new(),
            uplink_mbps: crate::slow::rate_mbps(40),
            lb_mode: "flowlet".into(),
            flowlet_timeout_us: 500,
            far_notify: true,
            pfc: true,
            ecn: true,
            kmin: 8_000,
            kmax: 64_000,
            pmax: 20,
            pool_bytes: 512 * 1024,
            dynamic_th: -4,
            lossy_dynamic_th: -2,
            headroom_bytes: 256 * 1024,
            response_us: 2_000,
            hash_seed: 1,
            routing: Routing::Static,
            trimming: None,
        }
    }
}

/// A switch of a fabric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchNode {
    /// `leaf0`, `spine1`, `sw`.
    pub name: String,
    pub kind: SwitchKind,
    pub index: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchKind {
    Leaf,
    Spine,
}

/// A node that only receives: one namespace, an interface per link into
/// it, no address (a fan's sink).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SinkNode {
    pub name: String,
    /// Its interfaces, in link order.
    pub ifs: Vec<String>,
}

/// A host of a fabric.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostNode {
    /// `h0` .. : hosts numbered across leaves.
    pub name: String,
    pub leaf: usize,
    /// Its index on the leaf (the leaf's port `h<k>`).
    pub slot: usize,
    pub mac: [u8; 6],
    pub ipv4: [u8; 4],
    pub ipv6: [u8; 16],
    /// The leaf port's MAC (the host's gateway).
    pub gw_mac: [u8; 6],
    /// Its link speed, Mb/s (both ends).
    pub mbps: u32,
}

/// A link between two nodes (switch port or host `eth0`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    pub a_node: String,
    pub a_if: String,
    pub a_mac: [u8; 6],
    pub b_node: String,
    pub b_if: String,
    pub b_mac: [u8; 6],
}

/// `[2, 0, kind, node, port, 1]`: kind 1 leaf port, 2 spine port, 3 host,
/// 4 sink interface.
pub fn mac(kind: u8, node: usize, port: usize) -> [u8; 6] {
    [2, 0, kind, node as u8, port as u8, 1]
}

/// A fan's uplink port `i`.
pub fn fan_uplink(i: usize) -> String {
    format!("u{i}")
}

/// The MAC of a fan's uplink port `i` (its host port is port 0).
pub fn fan_uplink_mac(i: usize) -> [u8; 6] {
    mac(1, 0, 1 + i)
}

/// The sink's interface on uplink `i`.
pub fn fan_sink_if(i: usize) -> String {
    format!("k{i}")
}

/// The MAC of the sink's interface `i`: the next hop of uplink `i`.
pub fn fan_sink_mac(i: usize) -> [u8; 6] {
    mac(4, 0, i)
}

impl Topology {
    /// (spines, leaves, hosts per leaf); a star is one leaf, no spine.
    pub fn dims(&self) -> (usize, usize, usize) {
        match self.shape {
            Shape::Star { hosts } => (0, 1, hosts),
            Shape::Fan { .. } => (0, 1, 1),
            Shape::LeafSpine {
                spines,
                leaves,
                hosts_per_leaf,
            } => (spines, leaves, hosts_per_leaf),
        }
    }

    /// Every reason this topology cannot be built (checked before anything
    /// is created).
    pub fn check(&self) -> Result<()> {
        let mut errs = Vec::new();
        let (s, l, h) = self.dims();
        match self.shape {
            Shape::Star { hosts } => {
                if hosts < 2 {
                    errs.push(format!(
                        "star.hosts: expected at least 2 hosts, got {hosts}"
                    ));
                }
                if hosts > MAX_SWITCH_PORTS {
                    errs.push(format!("star.hosts: {hosts} hosts need {hosts} switch ports, but a switch models at most {MAX_SWITCH_PORTS}"));
                }
            }
            Shape::Fan { uplinks } => {
                if !(1..MAX_SWITCH_PORTS).contains(&uplinks) {
                    errs.push(format!("fan.uplinks: expected 1 to {} uplinks (with the host's port, at most {MAX_SWITCH_PORTS} switch ports), got {uplinks}", MAX_SWITCH_PORTS - 1));
                }
            }
            Shape::LeafSpine {
                spines,
                leaves,
                hosts_per_leaf,
            } => {
                if spines == 0 {
                    errs.push("spines: expected at least 1 spine, got 0 (a leaf-spine without spines connects nothing; use a star)".into());
                }
                if leaves == 0 {
                    errs.push("leaves: expected at least 1 leaf, got 0".into());
                }
                if hosts_per_leaf == 0 {
                    errs.push("hosts_per_leaf: expected at least 1 host per leaf, got 0".into());
                }
                if leaves > MAX_SWITCH_PORTS {
                    errs.push(format!("leaves: {leaves} leaves need {leaves} ports on every spine, but a switch models at most {MAX_SWITCH_PORTS}"));
                }
                if leaves > MAX_LEAVES_BY_ADDRESS {
                    errs.push(format!("leaves: {leaves} leaves need {leaves} /24s of 198.18.0.0/16, at most {MAX_LEAVES_BY_ADDRESS}"));
                }
                if hosts_per_leaf + spines > MAX_SWITCH_PORTS {
                    errs.push(format!(
                        "hosts_per_leaf: {hosts_per_leaf} hosts + {spines} uplinks = {} ports on each leaf, but a switch models at most {MAX_SWITCH_PORTS}",
                        hosts_per_leaf + spines
                    ));
                }
            }
        }
        if h > MAX_HOSTS_BY_ADDRESS {
            errs.push(format!("hosts_per_leaf: {h} hosts do not fit a /24 (at most {MAX_HOSTS_BY_ADDRESS} addresses)"));
        }
        let _ = (s, l);
        if self.host_mbps == 0 {
            errs.push("host_mbps: expected a link speed of at least 1 Mb/s, got 0".into());
        }
        if let Some(i) = self.host_speeds.iter().position(|&m| m == 0) {
            errs.push(format!(
                "host_speeds[{i}]: expected a link speed of at least 1 Mb/s, got 0"
            ));
        }
        if self.host_speeds.len() > l * h {
            errs.push(format!(
                "host_speeds: {} speeds for {} hosts",
                self.host_speeds.len(),
                l * h
            ));
        }
        if self.uplink_mbps == 0 && s > 0 {
            errs.push("uplink_mbps: expected a link speed of at least 1 Mb/s, got 0".into());
        }
        if !dataplane_common::lb::MODE_NAMES.contains(&self.lb_mode.as_str()) {
            errs.push(format!(
                "lb_mode: expected one of {}, got {:?}",
                dataplane_common::lb::MODE_NAMES.join(", "),
                self.lb_mode
            ));
        }
        if self.kmin > self.kmax {
            errs.push(format!(
                "kmin: expected kmin <= kmax, got {} > {}",
                self.kmin, self.kmax
            ));
        }
        if self.pfc && self.headroom_bytes >= self.pool_bytes {
            errs.push(format!(
                "headroom_bytes: expected less than the pool ({} bytes), got {}",
                self.pool_bytes, self.headroom_bytes
            ));
        }
        if self.pmax > 100 {
            errs.push(format!(
                "pmax: expected a percentage 0..=100, got {}",
                self.pmax
            ));
        }
        if !errs.is_empty() {
            bail!("the topology cannot be built:\n  {}", errs.join("\n  "));
        }
        Ok(())
    }

    pub fn leaves(&self) -> Vec<SwitchNode> {
        let (_, l, _) = self.dims();
        match self.shape {
            Shape::Star { .. } | Shape::Fan { .. } => vec![SwitchNode {
                name: "sw".into(),
                kind: SwitchKind::Leaf,
                index: 0,
            }],
            Shape::LeafSpine { .. } => (0..l)
                .map(|i| SwitchNode {
                    name: format!("leaf{i}"),
                    kind: SwitchKind::Leaf,
                    index: i,
                })
                .collect(),
        }
    }

    pub fn spines(&self) -> Vec<SwitchNode> {
        let (s, _, _) = self.dims();
        (0..s)
            .map(|i| SwitchNode {
                name: format!("spine{i}"),
                kind: SwitchKind::Spine,
                index: i,
            })
            .collect()
    }

    /// Leaves first, then spines.
    pub fn switches(&self) -> Vec<SwitchNode> {
        let mut v = self.leaves();
        v.extend(self.spines());
        v
    }

    pub fn hosts(&self) -> Vec<HostNode> {
        let (_, l, h) = self.dims();
        let mut out = Vec::new();
        for leaf in 0..l {
            for k in 0..h {
                let mut v6 = [0u8; 16];
                v6[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
                v6[7] = (leaf + 1) as u8;
                v6[15] = (k + 1) as u8;
                let ipv4 = match self.shape {
                    Shape::Fan { .. } => FAN_SRC_IP,
                    _ => [198, 18, (leaf + 1) as u8, (k + 1) as u8],
                };
                let i = leaf * h + k;
                out.push(HostNode {
                    name: format!("h{i}"),
                    leaf,
                    slot: k,
                    mac: mac(3, leaf, k),
                    ipv4,
                    ipv6: v6,
                    gw_mac: mac(1, leaf, k),
                    mbps: self.host_speeds.get(i).copied().unwrap_or(self.host_mbps),
                });
            }
        }
        out
    }

    /// Whether hosts get their addresses on `eth0` (a fan's raw sender
    /// gets none, and no IPv6).
    pub fn hosts_addressed(&self) -> bool {
        !matches!(self.shape, Shape::Fan { .. })
    }

    /// The receive-only nodes: a fan's sink (none in other shapes).
    pub fn sinks(&self) -> Vec<SinkNode> {
        match self.shape {
            Shape::Fan { uplinks } => vec![SinkNode {
                name: "sink".into(),
                ifs: (0..uplinks).map(fan_sink_if).collect(),
            }],
            _ => Vec::new(),
        }
    }

    /// The host named `name`, or an error listing the hosts there are.
    pub fn host(&self, name: &str) -> Result<HostNode> {
        let hosts = self.hosts();
        match hosts.iter().find(|h| h.name == name) {
            Some(h) => Ok(h.clone()),
            None => bail!(
                "unknown host {name:?}: this fabric has hosts h0 to h{}",
                hosts.len().saturating_sub(1)
            ),
        }
    }

    /// Leaf port numbering: host ports `h<k>` are ports 0..H, uplinks
    /// `s<i>` ports H..H+S (the MAC's port byte).
    pub fn links(&self) -> Vec<Link> {
        let (s, _, h) = self.dims();
        let leaves = self.leaves();
        let mut out = Vec::new();
        let fan = match self.shape {
            Shape::Fan { uplinks } => uplinks,
            _ => 0,
        };
        for host in self.hosts() {
            out.push(Link {
                a_node: leaves[host.leaf].name.clone(),
                a_if: self.host_port(host.slot),
                a_mac: host.gw_mac,
                b_node: host.name.clone(),
                b_if: "eth0".into(),
                b_mac: host.mac,
            });
        }
        for i in 0..fan {
            out.push(Link {
                a_node: leaves[0].name.clone(),
                a_if: fan_uplink(i),
                a_mac: fan_uplink_mac(i),
                b_node: "sink".into(),
                b_if: fan_sink_if(i),
                b_mac: fan_sink_mac(i),
            });
        }
        for leaf in &leaves {
            for sp in 0..s {
                out.push(Link {
                    a_node: leaf.name.clone(),
                    a_if: format!("s{sp}"),
                    a_mac: mac(1, leaf.index, h + sp),
                    b_node: format!("spine{sp}"),
                    b_if: format!("l{}", leaf.index),
                    b_mac: mac(2, sp, leaf.index),
                });
            }
        }
        out
    }

    /// Names of a leaf's uplink ports (a fan's `u<i>`).
    pub fn uplinks(&self) -> Vec<String> {
        match self.shape {
            Shape::Fan { uplinks } => (0..uplinks).map(fan_uplink).collect(),
            _ => {
                let (s, _, _) = self.dims();
                (0..s).map(|i| format!("s{i}")).collect()
            }
        }
    }

    /// The leaf port of host slot `k`: `h<k>`, a fan's `d0`.
    fn host_port(&self, k: usize) -> String {
        match self.shape {
            Shape::Fan { .. } => format!("d{k}"),
            _ => format!("h{k}"),
        }
    }

    /// A fan's switch: the host's port, the uplinks, one next hop per
    /// uplink (the sink's interface), their group, and the route to it.
    fn fan_config(&self, out: &mut ConfigText, instance: &str, uplinks: usize) {
        out.switch(instance, self.hash_seed, "");
        out.port(&self.host_port(0), mac(1, 0, 0), self.hosts()[0].mbps, "");
        for i in 0..uplinks {
            out.port(&fan_uplink(i), fan_uplink_mac(i), self.uplink_mbps, "");
        }
        for i in 0..uplinks {
            out.nexthop(&format!("n{i}"), &fan_uplink(i), fan_sink_mac(i));
        }
        let members: Vec<String> = (0..uplinks).map(|i| format!("n{i}")).collect();
        out.group(FAN_GROUP, &self.lb_mode, self.flowlet_timeout_us, &members);
        out.route_group(FAN_DST_PREFIX, FAN_GROUP);
    }

    fn common_sections(&self, out: &mut ConfigText, instance: &str) {
        out.switch(instance, self.hash_seed, "cnp_tc = 6\n");
        out.raw(&format!(
            "[buffer]\npool_size = {}\ndynamic_th = {}\nlossy_dynamic_th = {}\nresponse_us = {}\n\n",
            self.pool_bytes, self.dynamic_th, self.lossy_dynamic_th, self.response_us
        ));
        if !self.ecn {
            out.raw(&format!("[wred_profile.NO_ECN]\necn = \"ecn_none\"\ngreen_min_threshold = {0}\ngreen_max_threshold = {0}\ngreen_drop_probability = 0\nwred_green_enable = false\n\n", u32::MAX));
        } else {
            out.raw(&format!(
                "[wred_profile.ROCE]\necn = \"ecn_all\"\ngreen_min_threshold = {}\ngreen_max_threshold = {}\ngreen_drop_probability = {}\nwred_green_enable = false\n\n",
                self.kmin, self.kmax, self.pmax
            ));
        }
        if let Some(t) = self.trimming {
            out.raw(&format!(
                "[switch_trimming]\nsize = {}\ndscp_value = {}\nqueue_index = {}\n\n[buffer_profile.{TRIM_PROFILE}]\npacket_discard_action = \"{}\"\n\n",
                t.size,
                t.dscp,
                t.queue,
                if t.trim { "trim" } else { "drop" }
            ));
        }
    }

    /// A switch port: PFC on 3 and 4 with the fabric's headroom (or off),
    /// the WRED profile of the fabric's ECN setting.
    fn port(&self, out: &mut ConfigText, name: &str, mac_: [u8; 6], mbps: u32) {
        self.port_far(out, name, mac_, mbps, false)
    }

    /// A spine's port toward a leaf: [`Topology::port`], and in `place` mode
    /// far-side notifications to the leaf (`far_notify`, unless
    /// [`Topology::far_notify`] is off), which places its new flows by them.
    fn spine_port(&self, out: &mut ConfigText, name: &str, mac_: [u8; 6], mbps: u32) {
        let far = self.lb_mode == "place" && self.far_notify;
        self.port_far(out, name, mac_, mbps, far)
    }

    fn port_far(&self, out: &mut ConfigText, name: &str, mac_: [u8; 6], mbps: u32, far: bool) {
        let mut extra = format!("pfc_enable = \"{}\"\n", if self.pfc { "3,4" } else { "" });
        if far {
            extra.push_str("far_notify = true\n");
        }
        if self.pfc {
            extra.push_str(&format!("headroom_xoff = {}\n", self.headroom_bytes));
        }
        let profile = if self.ecn { "ROCE" } else { "NO_ECN" };
        extra.push_str(&format!(
            "wred_profile = \"{profile}\"\nlossy_wred_profile = \"{profile}\"\n"
        ));
        if self.trimming.is_some() {
            extra.push_str(&format!(
                "buffer_queue = {{ \"0-2\" = \"{TRIM_PROFILE}\" }}\n"
            ));
        }
        out.port(name, mac_, mbps, &extra);
    }

    /// With BGP: the ports and `[routing]` (routes from the kernel, groups
    /// in the fabric's mode); no static next hop or route.
    fn bgp_switch_ports(&self, out: &mut ConfigText, sw: &SwitchNode) {
        let (s, l, h) = self.dims();
        match sw.kind {
            SwitchKind::Leaf => {
                for x in self.hosts().into_iter().filter(|x| x.leaf == sw.index) {
                    self.port(out, &format!("h{}", x.slot), x.gw_mac, x.mbps);
                }
                for sp in 0..s {
                    self.port(
                        out,
                        &format!("s{sp}"),
                        mac(1, sw.index, h + sp),
                        self.uplink_mbps,
                    );
                }
            }
            SwitchKind::Spine => {
                for leaf in 0..l {
                    self.spine_port(
                        out,
                        &format!("l{leaf}"),
                        mac(2, sw.index, leaf),
                        self.uplink_mbps,
                    );
                }
            }
        }
        out.raw(&format!(
            "[routing]\nsource = \"kernel\"\ndefault_mode = \"{}\"\nflowlet_timeout_us = {}\n\n",
            self.lb_mode, self.flowlet_timeout_us
        ));
    }

    /// The `dataplane` config of switch `sw` with instance name `instance`.
    pub fn switch_config(&self, sw: &SwitchNode, instance: &str) -> String {
        let (s, l, h) = self.dims();
        let mut out = ConfigText::new(&format!("testbed::topo for {} ({:?})", sw.name, self.shape));
        if let Shape::Fan { uplinks } = self.shape {
            self.fan_config(&mut out, instance, uplinks);
            return out.0;
        }
        self.common_sections(&mut out, instance);
        if self.routing == Routing::Bgp {
            self.bgp_switch_ports(&mut out, sw);
            return out.0;
        }
        match sw.kind {
            SwitchKind::Leaf => {
                let hosts: Vec<HostNode> = self
                    .hosts()
                    .into_iter()
                    .filter(|x| x.leaf == sw.index)
                    .collect();
                for x in &hosts {
                    self.port(&mut out, &format!("h{}", x.slot), x.gw_mac, x.mbps);
                }
                for sp in 0..s {
                    self.port(
                        &mut out,
                        &format!("s{sp}"),
                        mac(1, sw.index, h + sp),
                        self.uplink_mbps,
                    );
                }
                for x in &hosts {
                    out.nexthop(&x.name, &format!("h{}", x.slot), x.mac);
                }
                for sp in 0..s {
                    out.nexthop(
                        &format!("spine{sp}"),
                        &format!("s{sp}"),
                        mac(2, sp, sw.index),
                    );
                }
                if s > 0 {
                    let members: Vec<String> = (0..s).map(|i| format!("spine{i}")).collect();
                    out.group("spines", &self.lb_mode, self.flowlet_timeout_us, &members);
                }
                for x in &hosts {
                    out.route_nexthop(&format!("{}/32", ipv4_str(x.ipv4)), &x.name);
                    out.route_nexthop(&format!("{}/128", ipv6_str(x.ipv6)), &x.name);
                }
                if s > 0 {
                    out.route_group("198.18.0.0/15", "spines");
                    out.route_group("2001:db8::/32", "spines");
                }
            }
            SwitchKind::Spine => {
                for leaf in 0..l {
                    self.spine_port(
                        &mut out,
                        &format!("l{leaf}"),
                        mac(2, sw.index, leaf),
                        self.uplink_mbps,
                    );
                }
                for leaf in 0..l {
                    let nh = format!("leaf{leaf}");
                    out.nexthop(&nh, &format!("l{leaf}"), mac(1, leaf, h + sw.index));
                    out.route_nexthop(&format!("198.18.{}.0/24", leaf + 1), &nh);
                    out.route_nexthop(&format!("2001:db8:0:{:x}::/64", leaf + 1), &nh);
                }
            }
        }
        out.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_fabric_has_the_expected_nodes_and_links() {
        let t = Topology::default();
        t.check().unwrap();
        assert_eq!(t.switches().len(), 4);
        assert_eq!(t.hosts().len(), 8);
        // 8 host links + 2 leaves x 2 spines
        assert_eq!(t.links().len(), 12);
        let h5 = t.host("h5").unwrap();
        assert_eq!((h5.leaf, h5.slot, h5.ipv4), (1, 1, [198, 18, 2, 2]));
        assert_eq!(ipv6_str(h5.ipv6), "2001:db8:0:2::2");
        // every MAC distinct
        let mut macs: Vec<[u8; 6]> = t.links().iter().flat_map(|l| [l.a_mac, l.b_mac]).collect();
        let n = macs.len();
        macs.sort();
        macs.dedup();
        assert_eq!(macs.len(), n);
    }

    #[test]
    fn bad_topologies_are_refused_with_the_field() {
        let mut t = Topology {
            shape: Shape::LeafSpine {
                spines: 0,
                leaves: 2,
                hosts_per_leaf: 4,
            },
            ..Topology::default()
        };
        let e = t.check().unwrap_err().to_string();
        assert!(
            e.contains("spines: expected at least 1 spine, got 0"),
            "{e}"
        );
        t.shape = Shape::LeafSpine {
            spines: 2,
            leaves: 2,
            hosts_per_leaf: 15,
        };
        let e = t.check().unwrap_err().to_string();
        assert!(
            e.contains("hosts_per_leaf: 15 hosts + 2 uplinks = 17 ports"),
            "{e}"
        );
        t.shape = Shape::LeafSpine {
            spines: 2,
            leaves: 17,
            hosts_per_leaf: 1,
        };
        assert!(t
            .check()
            .unwrap_err()
            .to_string()
            .contains("leaves: 17 leaves need 17 ports on every spine"));
        t.shape = Shape::Star { hosts: 1 };
        assert!(t.check().unwrap_err().to_string().contains("star.hosts"));
        t.shape = Shape::Star { hosts: 4 };
        t.lb_mode = "random".into();
        assert!(t.check().unwrap_err().to_string().contains("lb_mode"));
        let e = Topology::default().host("h8").unwrap_err().to_string();
        assert!(
            e.contains("unknown host \"h8\": this fabric has hosts h0 to h7"),
            "{e}"
        );
    }

    #[test]
    fn configs_route_hosts_locally_and_the_fabric_via_the_spines() {
        let t = Topology::default();
        let leaf = t.switch_config(&t.leaves()[1], "x");
        assert!(
            leaf.contains("prefix = \"198.18.2.3/32\"\nnexthop = \"h6\""),
            "{leaf}"
        );
        assert!(leaf.contains("prefix = \"198.18.0.0/15\"\ngroup = \"spines\""));
        assert!(leaf.contains("mode = \"flowlet\""));
        let spine = t.switch_config(&t.spines()[0], "y");
        assert!(
            spine.contains("prefix = \"198.18.1.0/24\"\nnexthop = \"leaf0\""),
            "{spine}"
        );
        assert!(spine.contains("prefix = \"2001:db8:0:2::/64\"\nnexthop = \"leaf1\""));
        // spine0's next hop to leaf1 is leaf1's port s0 (port index H + 0)
        assert!(spine.contains(&format!("mac = \"{}\"", mac_str(mac(1, 1, 4)))));
        let off = Topology {
            pfc: false,
            ecn: false,
            ..Topology::default()
        };
        let c = off.switch_config(&off.leaves()[0], "z");
        assert!(
            c.contains("pfc_enable = \"\"")
                && c.contains("ecn = \"ecn_none\"")
                && !c.contains("ROCE")
        );
    }

    #[test]
    fn a_fan_is_one_host_one_switch_and_a_sink_with_an_interface_per_uplink() {
        let t = Topology {
            shape: Shape::Fan { uplinks: 3 },
            lb_mode: "spray".into(),
            ..Topology::default()
        };
        t.check().unwrap();
        assert_eq!(t.switches().len(), 1);
        assert_eq!(t.hosts().len(), 1);
        assert!(!t.hosts_addressed());
        assert_eq!(t.sinks()[0].ifs, ["k0", "k1", "k2"]);
        assert_eq!(t.links().len(), 4);
        assert_eq!(t.uplinks(), ["u0", "u1", "u2"]);
        let c = t.switch_config(&t.leaves()[0], "f");
        assert!(c.contains("name = \"d0\""), "{c}");
        assert!(c.contains("mode = \"spray\""), "{c}");
        assert!(c.contains(&format!(
            "prefix = \"{FAN_DST_PREFIX}\"\ngroup = \"{FAN_GROUP}\""
        )));
        // the next hop of uplink 2 is the sink's k2
        assert!(c.contains(&format!(
            "port = \"u2\"\nmac = \"{}\"",
            mac_str(fan_sink_mac(2))
        )));
        // balancing only: no buffer model
        assert!(!c.contains("[buffer]"), "{c}");
        let mut macs: Vec<[u8; 6]> = t.links().iter().flat_map(|l| [l.a_mac, l.b_mac]).collect();
        macs.sort();
        macs.dedup();
        assert_eq!(macs.len(), 8);
        for bad in [0, 16] {
            let f = Topology {
                shape: Shape::Fan { uplinks: bad },
                ..Topology::default()
            };
            let e = f.check().unwrap_err().to_string();
            assert!(
                e.contains("fan.uplinks: expected 1 to 15 uplinks")
                    && e.contains(&format!("got {bad}")),
                "{e}"
            );
        }
    }
}
