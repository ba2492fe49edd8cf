//! Map keys and values shared by the eBPF programs and the controller.
//!
//! Every value is `#[repr(C)]` with explicit fields only (the size asserts at
//! the bottom prove there is no implicit padding), so the bytes the
//! controller writes are the bytes the program reads.

use crate::parse::PARSE_ERROR_COUNT;

/// Ports a data plane instance handles (counter array size).
pub const MAX_PORTS: u32 = 64;

/// Ifindexes below this find their port id in `PORT_INDEX` (an array: no
/// hash on the packet path); the others in `PORT_CONFIG`.
pub const PORT_INDEX_ENTRIES: u32 = 4096;

/// A `PORT_INDEX` entry: the port id plus one, 0 for no port.
#[inline(always)]
pub const fn port_index_word(port_id: u16) -> u32 {
    port_id as u32 + 1
}

/// The port id a `PORT_INDEX` word names.
#[inline(always)]
pub const fn port_of_index_word(w: u32) -> Option<u32> {
    w.checked_sub(1)
}
/// Traffic classes / priorities.
pub const NUM_TC: usize = 8;

/// Trust the IP DSCP (non-IP frames fall back to the PCP of a tag, then to
/// `default_tc`).
pub const TRUST_DSCP: u8 = 0;
/// Trust the 802.1Q PCP (untagged frames get `default_tc`).
pub const TRUST_DOT1P: u8 = 1;

/// Hand malformed frames to the kernel.
pub const MALFORMED_PASS: u8 = 0;
/// Drop malformed frames.
pub const MALFORMED_DROP: u8 = 1;

/// Per-port configuration, keyed by ingress ifindex (`u32`) in a hash map.
///
/// A hash map update replaces the whole value at once (RCU), so a packet
/// sees either the old or the new configuration of a port, never a mix.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortConfig {
    /// Index of this port's counters (0..MAX_PORTS).
    pub port_id: u16,
    /// [`TRUST_DSCP`] or [`TRUST_DOT1P`].
    pub trust: u8,
    /// [`MALFORMED_PASS`] or [`MALFORMED_DROP`].
    pub malformed_action: u8,
    /// Lossless priorities (SONiC `pfc_enable`), bit i = priority i.
    pub pfc_enable: u8,
    /// Class of frames the trusted field does not cover.
    pub default_tc: u8,
    /// Class of RoCEv2 CNPs (BTH opcode 0x81).
    pub cnp_tc: u8,
    /// Class of UET feedback (PDS ACK, NACK, control) as
    /// [`UET_FEEDBACK_TC_SET`]` | tc`; 0: classified like any packet.
    pub uet_feedback_tc: u8,
    /// SONiC DSCP_TO_TC_MAP, resolved to 64 entries.
    pub dscp_to_tc: [u8; 64],
    /// SONiC DOT1P_TO_TC_MAP, resolved to 8 entries.
    pub pcp_to_tc: [u8; 8],
    /// The port's own MAC: routed frames must be addressed to it, and it is
    /// the source of frames sent out of it (rewrites, PFC).
    pub mac: [u8; 6],
    pub _pad: [u8; 2],
    /// Configured line rate in Mb/s (buffer model drain, utilisation).
    pub speed_mbps: u32,
    /// [`PORT_F_FORWARD`] and friends.
    pub flags: u32,
}

/// Bit of [`PortConfig::uet_feedback_tc`]: UET feedback goes to the class
/// in the low 3 bits (the byte was reserved and zero before, so 0 keeps the
/// old meaning).
pub const UET_FEEDBACK_TC_SET: u8 = 0x80;

/// The port routes IP frames addressed to its MAC (the `xdp_forward`
/// program); without it frames are classified and passed to the kernel.
pub const PORT_F_FORWARD: u32 = 1;
/// The port's peer is a switch that places flows by far-side
/// notifications (config `far_notify`): a lossless packet from this port
/// that finds its egress queue at the ECN threshold sends it one
/// ([`crate::lb::far`]).
pub const PORT_F_FAR_NOTIFY: u32 = 2;

impl PortConfig {
    /// The AZURE defaults of SONiC: DSCP 3->3, 4->4, 5->2, 8->0, 46->5,
    /// 48->6, everything else 1; dot1p identity; CNP to TC6.
    pub const fn azure(port_id: u16) -> Self {
        PortConfig {
            port_id,
            trust: TRUST_DSCP,
            malformed_action: MALFORMED_PASS,
            pfc_enable: (1 << 3) | (1 << 4),
            default_tc: 0,
            cnp_tc: 6,
            uet_feedback_tc: 0,
            dscp_to_tc: AZURE_DSCP_TO_TC,
            pcp_to_tc: [0, 1, 2, 3, 4, 5, 6, 7],
            mac: [0; 6],
            _pad: [0; 2],
            speed_mbps: 100_000,
            flags: 0,
        }
    }
}

/// SONiC's default AZURE DSCP_TO_TC_MAP.
pub const AZURE_DSCP_TO_TC: [u8; 64] = {
    let mut m = [1u8; 64];
    m[3] = 3;
    m[4] = 4;
    m[5] = 2;
    m[8] = 0;
    m[46] = 5;
    m[48] = 6;
    m
};

/// Per-port receive counters, one per CPU (per-CPU array indexed by
/// `port_id`); the controller sums the CPUs.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortCounters {
    /// Frames and bytes received per traffic class (after classification).
    pub rx_tc_pkts: [u64; NUM_TC],
    pub rx_tc_bytes: [u64; NUM_TC],
    /// RoCEv2 frames (CNPs included).
    pub rx_roce: u64,
    /// RoCEv2 CNPs.
    pub rx_cnp: u64,
    /// UET frames (UDP 4793 with a PDS header).
    pub rx_uet: u64,
    /// Frames classified into a lossless (pfc_enable) class.
    pub rx_lossless: u64,
    /// Frames that are neither IP nor MAC control.
    pub rx_non_ip: u64,
    /// Double-tagged frames (passed, not parsed further).
    pub rx_qinq: u64,
    /// PFC frames per priority whose class-enable bit is set (pfcstat Rx
    /// PFCn).
    pub rx_pfc: [u64; NUM_TC],
    /// Of those, frames that paused the priority (a nonzero time; the
    /// rest are XON): what the PFC watchdog watches.
    pub rx_pfc_xoff: [u64; NUM_TC],
    /// 802.3x PAUSE frames.
    pub rx_pause: u64,
    /// MAC control frames with another opcode.
    pub rx_mac_ctl_other: u64,
    /// Malformed frames by [`crate::parse::ParseError`].
    pub malformed: [u64; PARSE_ERROR_COUNT],
    /// Verdicts.
    pub verdict_pass: u64,
    pub verdict_drop: u64,
}

impl PortCounters {
    pub const ZERO: PortCounters = PortCounters {
        rx_tc_pkts: [0; NUM_TC],
        rx_tc_bytes: [0; NUM_TC],
        rx_roce: 0,
        rx_cnp: 0,
        rx_uet: 0,
        rx_lossless: 0,
        rx_non_ip: 0,
        rx_qinq: 0,
        rx_pfc: [0; NUM_TC],
        rx_pfc_xoff: [0; NUM_TC],
        rx_pause: 0,
        rx_mac_ctl_other: 0,
        malformed: [0; PARSE_ERROR_COUNT],
        verdict_pass: 0,
        verdict_drop: 0,
    };

    /// Adds `o` field by field (summing the per-CPU copies).
    pub fn accumulate(&mut self, o: &PortCounters) {
        let mut i = 0;
        while i < NUM_TC {
            self.rx_tc_pkts[i] += o.rx_tc_pkts[i];
            self.rx_tc_bytes[i] += o.rx_tc_bytes[i];
            self.rx_pfc[i] += o.rx_pfc[i];
            self.rx_pfc_xoff[i] += o.rx_pfc_xoff[i];
            i += 1;
        }
        self.rx_roce += o.rx_roce;
        self.rx_cnp += o.rx_cnp;
        self.rx_uet += o.rx_uet;
        self.rx_lossless += o.rx_lossless;
        self.rx_non_ip += o.rx_non_ip;
        self.rx_qinq += o.rx_qinq;
        self.rx_pause += o.rx_pause;
        self.rx_mac_ctl_other += o.rx_mac_ctl_other;
        let mut j = 0;
        while j < PARSE_ERROR_COUNT {
            self.malformed[j] += o.malformed[j];
            j += 1;
        }
        self.verdict_pass += o.verdict_pass;
        self.verdict_drop += o.verdict_drop;
    }
}

/// Switch-wide counters (per-CPU array with one entry).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GlobalCounters {
    /// Frames on an interface with the program attached but no port entry.
    pub unknown_port: u64,
    /// Port entries whose port_id is out of range (a controller bug).
    pub bad_port_id: u64,
    /// Place mode: flows that lost their flow-table entry to another
    /// active flow (a set with more active flows than ways).
    pub lb_evictions: u64,
}

const _: () = assert!(core::mem::size_of::<PortConfig>() == 8 + 64 + 8 + 8 + 4 + 4);
const _: () = assert!(
    core::mem::size_of::<PortCounters>() == 8 * (8 + 8 + 6 + 8 + 8 + 2 + PARSE_ERROR_COUNT + 2)
);
const _: () = assert!(core::mem::size_of::<GlobalCounters>() == 24);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), only integer fields and arrays of integers, no padding
    // (asserted above), every bit pattern valid.
    unsafe impl aya::Pod for super::PortConfig {}
    unsafe impl aya::Pod for super::PortCounters {}
    unsafe impl aya::Pod for super::GlobalCounters {}
    unsafe impl aya::Pod for super::XmitDevFilter {}
}

/// Which devices `tp_xdp_devmap_xmit` counts flush drops for: those of
/// one network namespace (its nsfs inode number, `struct net`'s
/// `ns.inum`), read through the tracepoint's `to_dev` pointer at offsets
/// the controller takes from the kernel's BTF (no CO-RE in Rust eBPF).
/// `netns_inum` 0: count nothing.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct XmitDevFilter {
    pub netns_inum: u32,
    /// `struct net_device`: `ifindex`.
    pub ifindex_off: u32,
    /// `struct net_device`: `nd_net.net` (the device's `struct net *`).
    pub nd_net_off: u32,
    /// `struct net`: `ns.inum`.
    pub ns_inum_off: u32,
}

const _: () = assert!(core::mem::size_of::<XmitDevFilter>() == 16);

/// Offset of to_ifindex in the `xdp:xdp_redirect_err` record (prog_id 8,
/// act 12, ifindex 16, err 20, to_ifindex 24, map_id 28, map_index 32).
pub const XMIT_REDIRECT_ERR_TO_IFINDEX_OFF: usize = 24;
/// Offset of map_id in the `xdp:xdp_redirect_err` record.
pub const XMIT_REDIRECT_ERR_MAP_ID_OFF: usize = 28;
