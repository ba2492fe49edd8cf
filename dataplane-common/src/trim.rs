//! Packet trimming: instead of dropping a packet the shared buffer cannot
//! admit, cut it to its headers, mark it with the trim DSCP and send it on
//! the trim queue, so the receiver learns of the loss at once (UET answers
//! a trimmed packet with a NACK; see `wire::uet`).
//!
//! SONiC's design (doc/packet_trimming/packet-trimming-design.md, rev 0.3):
//! eligibility is per queue, by its buffer profile
//! (`BUFFER_PROFILE|packet_discard_action = trim`); a packet is trimmed when
//! it "fails admission to the shared buffer"; the trim size, the DSCP and
//! the queue are switch-wide (`SWITCH_TRIMMING|GLOBAL size, dscp_value,
//! queue_index`, size 128 by default); a packet shorter than the size goes
//! out whole. Counters per queue: `Trim/pkts`, `TrimSent/pkts`,
//! `TrimDrop/pkts` (`show queue counters --all`).
//!
//! Here, as pure functions:
//!
//! * [`decide`]: whether the model's drop becomes a trim. Only a shared
//!   buffer exhaustion ([`DropReason::SharedFull`]) of a trimming queue,
//!   never a WRED drop, never headroom exhaustion (a lossless PG), never a
//!   lossless class (lossless queues do not drop), never a control packet
//!   (CNPs: Spectrum does not trim them either). Only unfragmented UDP over
//!   IPv4/IPv6 is trimmed: its lengths can be fixed; anything else (TCP's
//!   checksum covers the cut payload, a fragment's UDP length the whole
//!   datagram) is dropped as before.
//! * [`rewrite`]: the cut frame's headers: DSCP (ECN kept), IPv4 total
//!   length and header checksum, or IPv6 payload length; UDP length; UDP
//!   checksum 0 over IPv4 (allowed, RFC 768), recomputed over IPv6 (where 0
//!   is not allowed, RFC 8200; so an IPv6 cut keeps at most
//!   [`MAX_UDP6_SUM_LEN`] bytes of UDP, the bound of the checksum loop and
//!   of the XDP frame's 1 KiB read window).
//!
//! SONiC's other modes (same HLD, section 2.6.1.1 "Switch OA": `dscp_value
//! = from-tc` with `tc_value`, `queue_index = dynamic`; the SWITCH_TRIMMING
//! schema of sonic-swss `orchagent/switch/trimming/schema.h` names them
//! FROM_TC and DYNAMIC):
//!
//! * `from-tc` (asymmetric DSCP): the trim DSCP is what the *egress* port's
//!   TC_TO_DSCP_MAP (PORT_QOS_MAP `tc_to_dscp_map`) gives `tc_value`, so
//!   receivers can tell where the congestion was. Per egress port and
//!   fixed by the configuration: the controller resolves it into each
//!   port's [`TrimPort::dscp`]; nothing is left to decide per packet.
//! * `dynamic` queue ([`QUEUE_DYNAMIC`]): the trimmed packet goes to the
//!   queue its new DSCP maps to "according to the configured QoS mapping":
//!   here the class the *ingress* port's DSCP_TO_TC_MAP gives the trim DSCP
//!   (this data plane has no TC_TO_QUEUE_MAP: queue = class), whatever the
//!   port trusts ([`trim_queue`]).

use crate::buffer::BufVerdict;
use crate::lossless::DropReason;
use crate::maps::NUM_TC;
use crate::parse::{Parsed, L3};
use crate::wire::{csum, ipv4, ipv6, udp, Packet, PacketMut};

/// SONiC's default trim size.
pub const DEFAULT_TRIM_SIZE: u16 = 128;
/// Smallest trim size: an Ethernet minimum frame (60 bytes without FCS)
/// rounded up; the size must also hold the packet's headers (see
/// [`decide`]).
pub const MIN_TRIM_SIZE: u16 = 64;

/// The switch-wide trimming settings (SONiC `SWITCH_TRIMMING|GLOBAL`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrimConfig {
    /// Frame bytes kept (`size`).
    pub size: u16,
    /// DSCP of a trimmed packet (`dscp_value`).
    pub dscp: u8,
    /// Egress queue of a trimmed packet (`queue_index`), or
    /// [`QUEUE_DYNAMIC`].
    pub queue: u8,
}

/// [`TrimConfig::queue`] of SONiC's `queue_index = dynamic`: the queue of
/// the trim DSCP's class.
pub const QUEUE_DYNAMIC: u8 = 0xff;

/// The queue a trimmed packet is offered to: `cfg.queue`, or with
/// [`QUEUE_DYNAMIC`] the class `dscp_to_tc` (the ingress port's
/// DSCP_TO_TC_MAP, resolved to 64 entries) gives the trim DSCP; `None`
/// when the queue is dynamic and the ingress port's map is unknown.
#[inline(always)]
pub fn trim_queue(cfg: &TrimConfig, dscp_to_tc: Option<&[u8; 64]>) -> Option<u8> {
    if cfg.queue != QUEUE_DYNAMIC {
        return Some(cfg.queue & (NUM_TC as u8 - 1));
    }
    dscp_to_tc.map(|m| m[(cfg.dscp & 63) as usize] & (NUM_TC as u8 - 1))
}

/// What happens to a packet the buffer model would not forward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrimDecision {
    /// Not a trim: the model's verdict stands (forward or drop).
    No,
    /// Trim: keep the first `len` bytes (the whole frame when it is not
    /// longer than the size), rewrite with [`rewrite`], then offer it to
    /// queue `queue`.
    Trim { len: u16, queue: u8 },
}

/// Whether a packet the model judged `verdict` is trimmed. `queue_trims`:
/// its queue's profile says `trim`; `lossless`: its class is lossless;
/// `control`: a CNP or other control packet; `p`: its headers;
/// `dscp_to_tc`: its ingress port's DSCP map (for a dynamic queue,
/// [`trim_queue`]; without it such a packet is not trimmed).
#[inline(always)]
pub fn decide(
    verdict: BufVerdict,
    queue_trims: bool,
    lossless: bool,
    control: bool,
    p: &Parsed,
    cfg: &TrimConfig,
    dscp_to_tc: Option<&[u8; 64]>,
) -> TrimDecision {
    if verdict != BufVerdict::NoBuffer(DropReason::SharedFull)
        || !queue_trims
        || lossless
        || control
        || !p.udp
        || p.first_fragment
        || p.later_fragment
        || !matches!(p.l3, L3::Ipv4 | L3::Ipv6)
    {
        return TrimDecision::No;
    }
    // the headers through UDP must survive the cut
    let headers = p.l4_off as usize + udp::HEADER_LEN;
    if (cfg.size as usize) < headers {
        return TrimDecision::No;
    }
    let len = if p.frame_len > cfg.size {
        cfg.size
    } else {
        p.frame_len
    };
    if p.l3 == L3::Ipv6 && len as usize - p.l4_off as usize > MAX_UDP6_SUM_LEN {
        return TrimDecision::No;
    }
    match trim_queue(cfg, dscp_to_tc) {
        Some(queue) => TrimDecision::Trim { len, queue },
        None => TrimDecision::No,
    }
}

/// Largest UDP datagram (header included) a trimmed IPv6 packet may keep:
/// [`rewrite`] sums it for the checksum in a loop the eBPF verifier must
/// see bounded, in place, and the XDP frame's reads mask their offsets to
/// 10 bits (1 KiB, `dataplane-ebpf/src/packet.rs`), so the datagram must
/// end within the first 1024 bytes: UDP starts at most at byte 58 (VLAN +
/// IPv6), 58 + 960 < 1024. Longer IPv6 cuts are not made ([`decide`] says
/// `No`); a longer bound needs another way to sum (bpf_csum_diff over
/// chunks, or wider reads).
pub const MAX_UDP6_SUM_LEN: usize = 960;

/// Why [`rewrite`] refused a frame (the caller drops it instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteError {
    /// The frame does not hold the headers `p` describes.
    Short,
    /// Not UDP over IPv4/IPv6.
    NotUdpIp,
}

/// Rewrites the headers of `pkt`, already cut to its new length (its
/// `len()`), of a packet parsed as `p`: DSCP `dscp` (ECN kept), IP and UDP
/// lengths to the cut, the IPv4 header checksum (updated, RFC 1624), the
/// UDP checksum (0 over IPv4, recomputed over IPv6). The bytes after the
/// UDP header are untouched. The same code runs on a slice (tests, the
/// simulator) and on the XDP frame.
#[inline(always)]
pub fn rewrite<P: PacketMut + ?Sized>(
    pkt: &mut P,
    p: &Parsed,
    dscp: u8,
) -> Result<(), RewriteError> {
    let l3 = p.l3_off as usize;
    let l4 = p.l4_off as usize;
    let n = pkt.len();
    if !p.udp || l4 == 0 || l4 < l3 {
        return Err(RewriteError::NotUdpIp);
    }
    if n < l4 + udp::HEADER_LEN {
        return Err(RewriteError::Short);
    }
    let udp_len = ((n - l4) as u16).to_be_bytes();
    if !pkt.write(l4 + udp::LEN_OFF, &udp_len) {
        return Err(RewriteError::Short);
    }
    let ok = match p.l3 {
        L3::Ipv4 => {
            let (Some(h), Some(c)) = (pkt.read::<4>(l3), pkt.be16_at(l3 + ipv4::CHECKSUM_OFF))
            else {
                return Err(RewriteError::Short);
            };
            let tos = (dscp << 2) | (h[ipv4::TOS_OFF] & 0x3);
            let total = (n - l3) as u16;
            let c = csum::update16(
                c,
                u16::from_be_bytes([h[0], h[1]]),
                u16::from_be_bytes([h[0], tos]),
            );
            let c = csum::update16(c, u16::from_be_bytes([h[2], h[3]]), total);
            pkt.write(l3 + ipv4::TOS_OFF, &[tos])
                && pkt.write(l3 + ipv4::TOTAL_LEN_OFF, &total.to_be_bytes())
                && pkt.write(l3 + ipv4::CHECKSUM_OFF, &c.to_be_bytes())
                && pkt.write(l4 + udp::CHECKSUM_OFF, &[0, 0])
        }
        L3::Ipv6 => {
            if l4 - l3 < ipv6::HEADER_LEN {
                return Err(RewriteError::Short);
            }
            let Some(h) = pkt.read::<2>(l3) else {
                return Err(RewriteError::Short);
            };
            let tc = (dscp << 2) | (ipv6::traffic_class(h[0], h[1]) & 0x3);
            let payload = ((n - l3 - ipv6::HEADER_LEN) as u16).to_be_bytes();
            let ok = pkt.write(l3, &[(h[0] & 0xf0) | (tc >> 4), (h[1] & 0x0f) | (tc << 4)])
                && pkt.write(l3 + ipv6::PAYLOAD_LEN_OFF, &payload)
                && pkt.write(l4 + udp::CHECKSUM_OFF, &[0, 0]);
            match udp6_checksum(pkt, l3, l4) {
                Some(c) => ok && pkt.write(l4 + udp::CHECKSUM_OFF, &c.to_be_bytes()),
                None => false,
            }
        }
        _ => return Err(RewriteError::NotUdpIp),
    };
    if ok {
        Ok(())
    } else {
        Err(RewriteError::Short)
    }
}

/// The UDP checksum of the datagram at `l4` (its UDP length, which
/// [`rewrite`] has just set to the end of `pkt`; at most
/// [`MAX_UDP6_SUM_LEN`] bytes; its checksum field must read 0) under the
/// IPv6 header at `l3` (pseudo-header: addresses, length, next header 17);
/// a computed 0 is sent as 0xffff. `None`: the datagram is longer, or a
/// byte is not in the frame.
#[inline(always)]
fn udp6_checksum<P: Packet + ?Sized>(pkt: &P, l3: usize, l4: usize) -> Option<u16> {
    // The length read back from the header, not `pkt.len() - l4`: from the
    // latter the compiler can prove the reads below in bounds and drop
    // their checks, which the eBPF verifier cannot follow.
    let len = usize::from(pkt.be16_at(l4 + udp::LEN_OFF)?);
    if !(udp::HEADER_LEN..=MAX_UDP6_SUM_LEN).contains(&len) {
        return None;
    }
    let src = pkt.read::<32>(l3 + ipv6::SRC_OFF)?;
    let mut sum: u32 = 0;
    let mut i = 0;
    while i < 32 {
        sum += u32::from(u16::from_be_bytes([src[i], src[i + 1]]));
        i += 2;
    }
    sum += len as u32 + u32::from(ipv4::PROTO_UDP);
    let mut i = 0;
    while i < MAX_UDP6_SUM_LEN {
        if i + 2 > len {
            break;
        }
        sum += u32::from(pkt.be16_at(l4 + i)?);
        i += 2;
    }
    if i < len {
        // the odd last byte, as the low byte of the word before it (i >= 8:
        // the header was summed): a one-byte read's bounds check becomes
        // `p >= end`, which the eBPF verifier does not take as a bound
        sum += u32::from(pkt.be16_at(l4 + i - 1)? & 0xff) << 8;
    }
    match !csum::fold(sum) {
        0 => Some(0xffff),
        c => Some(c),
    }
}

/// Trimming counters of one port, per queue (SONiC's names: `Trim/pkts`,
/// `TrimSent/pkts`, `TrimDrop/pkts`; `trim = trim_sent + trim_drop`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrimCounters {
    /// Packets of the queue the model would have dropped and trimmed
    /// instead (`Trim/pkts`).
    pub trim: [u64; NUM_TC],
    /// Trimmed packets the trim queue took (`TrimSent/pkts`).
    pub trim_sent: [u64; NUM_TC],
    /// Trimmed packets dropped after all (`TrimDrop/pkts`): the trim queue
    /// had no room, or the rewrite failed.
    pub trim_drop: [u64; NUM_TC],
}

/// SONiC's column names of [`TrimCounters`], in field order.
pub const TRIM_COUNTER_NAMES: [&str; 3] = ["Trim/pkts", "TrimSent/pkts", "TrimDrop/pkts"];

impl TrimCounters {
    pub const ZERO: TrimCounters = TrimCounters {
        trim: [0; NUM_TC],
        trim_sent: [0; NUM_TC],
        trim_drop: [0; NUM_TC],
    };

    /// Counts a trim of queue `tc`'s packet and its fate (`sent`).
    #[inline(always)]
    pub fn count(&mut self, tc: u8, sent: bool) {
        let t = (tc as usize) & (NUM_TC - 1);
        self.trim[t] += 1;
        if sent {
            self.trim_sent[t] += 1;
        } else {
            self.trim_drop[t] += 1;
        }
    }

    /// Adds `o` (summing the per-CPU copies).
    pub fn accumulate(&mut self, o: &TrimCounters) {
        let mut t = 0;
        while t < NUM_TC {
            self.trim[t] += o.trim[t];
            self.trim_sent[t] += o.trim_sent[t];
            self.trim_drop[t] += o.trim_drop[t];
            t += 1;
        }
    }
}

/// A port's trimming settings, the value of the `TRIM_PORTS` map by
/// port id (all zero: the port's queues do not trim).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TrimPort {
    /// [`TrimConfig::size`].
    pub size: u16,
    /// The trim DSCP of this egress port (`dscp_value`, or with `from-tc`
    /// its TC_TO_DSCP_MAP's value for `tc_value`).
    pub dscp: u8,
    /// The trim queue, or [`QUEUE_DYNAMIC`].
    pub queue: u8,
    /// Bit q: queue q's profile trims.
    pub queues: u8,
    pub _pad: [u8; 3],
}

impl TrimPort {
    /// The switch-wide settings it carries.
    #[inline(always)]
    pub const fn config(&self) -> TrimConfig {
        TrimConfig {
            size: self.size,
            dscp: self.dscp,
            queue: self.queue,
        }
    }

    /// Whether queue `tc` trims.
    #[inline(always)]
    pub const fn trims(&self, tc: u8) -> bool {
        self.queues & (1 << (tc & 7)) != 0
    }
}

const _: () = assert!(core::mem::size_of::<TrimCounters>() == 3 * 8 * NUM_TC);
const _: () = assert!(core::mem::size_of::<TrimPort>() == 8);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), only arrays of integers, no padding (asserted
    // above), every bit pattern valid.
    unsafe impl aya::Pod for super::TrimCounters {}
    unsafe impl aya::Pod for super::TrimPort {}
}
