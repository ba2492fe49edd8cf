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
//!   is not allowed, RFC 8200).

use crate::buffer::BufVerdict;
use crate::lossless::DropReason;
use crate::maps::NUM_TC;
use crate::parse::{Parsed, L3};
use crate::wire::{csum, ipv4, ipv6, udp};

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
    /// Egress queue of a trimmed packet (`queue_index`).
    pub queue: u8,
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
/// `control`: a CNP or other control packet; `p`: its headers.
#[inline(always)]
pub fn decide(
    verdict: BufVerdict,
    queue_trims: bool,
    lossless: bool,
    control: bool,
    p: &Parsed,
    cfg: &TrimConfig,
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
    TrimDecision::Trim {
        len,
        queue: cfg.queue & (NUM_TC as u8 - 1),
    }
}

/// Why [`rewrite`] refused a frame (the caller drops it instead).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RewriteError {
    /// The frame does not hold the headers `p` describes.
    Short,
    /// Not UDP over IPv4/IPv6.
    NotUdpIp,
}

/// Rewrites the headers of `frame`, already cut to its new length (its
/// `len()`), of a packet parsed as `p`: DSCP `dscp` (ECN kept), IP and UDP
/// lengths to the cut, IPv4 header checksum, UDP checksum (0 over IPv4,
/// recomputed over IPv6). The bytes after the UDP header are untouched.
pub fn rewrite(frame: &mut [u8], p: &Parsed, dscp: u8) -> Result<(), RewriteError> {
    let l3 = p.l3_off as usize;
    let l4 = p.l4_off as usize;
    let n = frame.len();
    if !p.udp || l4 == 0 {
        return Err(RewriteError::NotUdpIp);
    }
    if n < l4 + udp::HEADER_LEN || l4 < l3 {
        return Err(RewriteError::Short);
    }
    let udp_len = (n - l4) as u16;
    frame[l4 + udp::LEN_OFF..l4 + udp::LEN_OFF + 2].copy_from_slice(&udp_len.to_be_bytes());
    match p.l3 {
        L3::Ipv4 => {
            let h = &mut frame[l3..l4];
            if h.len() < ipv4::MIN_HEADER_LEN {
                return Err(RewriteError::Short);
            }
            h[ipv4::TOS_OFF] = (dscp << 2) | (h[ipv4::TOS_OFF] & 0x3);
            let total = ((n - l3) as u16).to_be_bytes();
            h[ipv4::TOTAL_LEN_OFF..ipv4::TOTAL_LEN_OFF + 2].copy_from_slice(&total);
            h[ipv4::CHECKSUM_OFF..ipv4::CHECKSUM_OFF + 2].copy_from_slice(&[0, 0]);
            let c = csum::internet(h);
            h[ipv4::CHECKSUM_OFF..ipv4::CHECKSUM_OFF + 2].copy_from_slice(&c.to_be_bytes());
            frame[l4 + udp::CHECKSUM_OFF..l4 + udp::CHECKSUM_OFF + 2].copy_from_slice(&[0, 0]);
        }
        L3::Ipv6 => {
            if l4 - l3 < ipv6::HEADER_LEN {
                return Err(RewriteError::Short);
            }
            let h = &mut frame[l3..l3 + ipv6::HEADER_LEN];
            let ecn = ipv6::traffic_class(h[0], h[1]) & 0x3;
            let tc = (dscp << 2) | ecn;
            h[0] = (h[0] & 0xf0) | (tc >> 4);
            h[1] = (h[1] & 0x0f) | (tc << 4);
            let payload = ((n - l3 - ipv6::HEADER_LEN) as u16).to_be_bytes();
            h[ipv6::PAYLOAD_LEN_OFF..ipv6::PAYLOAD_LEN_OFF + 2].copy_from_slice(&payload);
            let c = udp6_checksum(frame, l3, l4);
            frame[l4 + udp::CHECKSUM_OFF..l4 + udp::CHECKSUM_OFF + 2]
                .copy_from_slice(&c.to_be_bytes());
        }
        _ => return Err(RewriteError::NotUdpIp),
    }
    Ok(())
}

/// The UDP checksum of the datagram at `l4` (to the end of `frame`) under
/// the IPv6 header at `l3` (pseudo-header: addresses, length, next header
/// 17); a computed 0 is sent as 0xffff.
fn udp6_checksum(frame: &[u8], l3: usize, l4: usize) -> u16 {
    let mut sum: u32 = 0;
    let add = |sum: &mut u32, b: &[u8]| {
        let mut i = 0;
        while i + 1 < b.len() {
            *sum += u32::from(u16::from_be_bytes([b[i], b[i + 1]]));
            i += 2;
        }
        if i < b.len() {
            *sum += u32::from(u16::from_be_bytes([b[i], 0]));
        }
        *sum = u32::from(csum::fold(*sum));
    };
    add(
        &mut sum,
        &frame[l3 + ipv6::SRC_OFF..l3 + ipv6::DST_OFF + 16],
    );
    let len = (frame.len() - l4) as u32;
    add(&mut sum, &len.to_be_bytes());
    add(&mut sum, &[0, 0, 0, ipv4::PROTO_UDP]);
    // the datagram with its checksum field as zero
    add(&mut sum, &frame[l4..l4 + udp::CHECKSUM_OFF]);
    add(&mut sum, &frame[l4 + udp::CHECKSUM_OFF + 2..]);
    match !csum::fold(sum) {
        0 => 0xffff,
        c => c,
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
        for t in 0..NUM_TC {
            self.trim[t] += o.trim[t];
            self.trim_sent[t] += o.trim_sent[t];
            self.trim_drop[t] += o.trim_drop[t];
        }
    }
}

const _: () = assert!(core::mem::size_of::<TrimCounters>() == 3 * 8 * NUM_TC);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), only arrays of integers, no padding (asserted
    // above), every bit pattern valid.
    unsafe impl aya::Pod for super::TrimCounters {}
}
