//! ECN codepoints, SONiC WRED_PROFILE marking and dropping, and the CE
//! rewrite of IPv4/IPv6.

use super::*;

/// ECN codepoints (RFC 3168), the two low bits of TOS / traffic class.
pub const ECN_NOT_ECT: u8 = 0b00;
pub const ECN_ECT1: u8 = 0b01;
pub const ECN_ECT0: u8 = 0b10;
pub const ECN_CE: u8 = 0b11;

/// SONiC WRED_PROFILE `ecn` values, as a bit set of the colours that mark
/// (bit 0 green, bit 1 yellow, bit 2 red). The model colours every packet
/// green, so marking is on iff bit 0 is set.
pub const ECN_NONE: u8 = 0;
pub const ECN_GREEN: u8 = 1;
pub const ECN_YELLOW: u8 = 2;
pub const ECN_GREEN_YELLOW: u8 = 3;
pub const ECN_RED: u8 = 4;
pub const ECN_GREEN_RED: u8 = 5;
pub const ECN_YELLOW_RED: u8 = 6;
pub const ECN_ALL: u8 = 7;

/// The code of a SONiC `ecn` value name (`"ecn_all"` ...).
#[inline(always)]
pub fn ecn_mode_from_name(name: &str) -> Option<u8> {
    Some(match name.as_bytes() {
        b"ecn_none" => ECN_NONE,
        b"ecn_green" => ECN_GREEN,
        b"ecn_yellow" => ECN_YELLOW,
        b"ecn_green_yellow" => ECN_GREEN_YELLOW,
        b"ecn_red" => ECN_RED,
        b"ecn_green_red" => ECN_GREEN_RED,
        b"ecn_yellow_red" => ECN_YELLOW_RED,
        b"ecn_all" => ECN_ALL,
        _ => return None,
    })
}

/// SONiC WRED_PROFILE (green colour only), a map value per (egress port, TC).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WredProfile {
    /// Queue bytes below which nothing is marked or dropped.
    pub green_min_threshold: u32,
    /// Queue bytes at or above which every eligible packet is marked/dropped.
    pub green_max_threshold: u32,
    /// Probability in percent (0..=100) just below the max threshold.
    pub green_drop_probability: u8,
    /// [`ECN_NONE`] .. [`ECN_ALL`]; marking is on iff the green bit is set.
    pub ecn: u8,
    /// SONiC `wred_green_enable`: drop non-ECT packets of lossy classes where
    /// an ECT packet would be marked (and every packet when marking is off).
    pub wred_green_enable: u8,
    pub _pad: u8,
}

impl WredProfile {
    /// SONiC's AZURE_LOSSLESS profile: 1 MiB / 2 MiB, 5 %, ecn_all, WRED on.
    pub const AZURE_LOSSLESS: WredProfile = WredProfile {
        green_min_threshold: 1_048_576,
        green_max_threshold: 2_097_152,
        green_drop_probability: 5,
        ecn: ECN_ALL,
        wred_green_enable: 1,
        _pad: 0,
    };

    /// Green packets are ECN-marked.
    #[inline(always)]
    pub fn marks(&self) -> bool {
        self.ecn & ECN_GREEN != 0
    }
}

/// What WRED does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnAction {
    /// Leave it alone (below the curve, not eligible, or already CE).
    Forward,
    /// Set CE ([`ipv4_set_ce`] / [`ipv6_set_ce`]).
    MarkCe,
    /// WRED drop (lossy class, non-ECT or marking off, WRED enabled).
    Drop,
}

/// The RED curve hit: `queue_bytes` below min never, at or above max always,
/// in between with probability `Pmax% * (q - min) / (max - min)`.
///
/// Integer-only: with `r = rand >> 8` (24 bits, the high bits of the
/// generator), hit iff `r * 100 * (max - min) < Pmax * (q - min) * 2^24`.
/// Both sides are below `2^24 * 100 * 2^32 < 2^63`; the probability is exact
/// to within `2^-24`. No division, so `min == max` is a plain step. A
/// probability above 100 is treated as 100.
#[inline(always)]
pub fn red_hit(p: &WredProfile, queue_bytes: u32, rand: u32) -> bool {
    if queue_bytes >= p.green_max_threshold {
        return true;
    }
    if queue_bytes < p.green_min_threshold {
        return false;
    }
    // min <= q < max here, so max - min > 0.
    let pmax = if p.green_drop_probability > 100 {
        100
    } else {
        p.green_drop_probability
    };
    let range = u64::from(p.green_max_threshold - p.green_min_threshold);
    let over = u64::from(queue_bytes - p.green_min_threshold);
    let r = u64::from(rand >> 8);
    r * 100 * range < (u64::from(pmax) * over) << 24
}

/// Whether [`red_hit`] on a queue of `queue_bytes` depends on its random
/// number: only between the thresholds (at or above the maximum it always
/// hits, below the minimum never).
#[inline(always)]
pub fn red_draws(p: &WredProfile, queue_bytes: u32) -> bool {
    queue_bytes < p.green_max_threshold && queue_bytes >= p.green_min_threshold
}

/// WRED / ECN decision for one packet entering a queue of `queue_bytes`.
///
/// `ecn` is the packet's codepoint; `lossless` its class is in pfc_enable;
/// `control` it is a CNP or another control class (never marked or
/// dropped). Only ECT(0)/ECT(1) get CE; CE stays CE; non-ECT is never
/// marked; lossless classes are never WRED-dropped.
#[inline(always)]
pub fn wred(
    p: &WredProfile,
    queue_bytes: u32,
    ecn: u8,
    lossless: bool,
    control: bool,
    rand: u32,
) -> EcnAction {
    if control || !red_hit(p, queue_bytes, rand) {
        return EcnAction::Forward;
    }
    let ecn = ecn & 3;
    if p.marks() {
        if ecn == ECN_ECT0 || ecn == ECN_ECT1 {
            return EcnAction::MarkCe;
        }
        if ecn == ECN_CE {
            return EcnAction::Forward;
        }
    }
    if !lossless && p.wred_green_enable != 0 {
        EcnAction::Drop
    } else {
        EcnAction::Forward
    }
}

/// Sets CE in an IPv4 header: from the first header byte (version/IHL), the
/// TOS byte and the header checksum, the new TOS and checksum (RFC 1624
/// incremental update of the 16-bit word holding version/IHL and TOS).
/// `None` when nothing changes: non-ECT is never marked, CE stays CE.
#[inline(always)]
pub fn ipv4_set_ce(ver_ihl: u8, tos: u8, check: u16) -> Option<(u8, u16)> {
    let ecn = tos & 3;
    if ecn != ECN_ECT0 && ecn != ECN_ECT1 {
        return None;
    }
    let new_tos = tos | ECN_CE;
    let old = u16::from_be_bytes([ver_ihl, tos]);
    let new = u16::from_be_bytes([ver_ihl, new_tos]);
    Some((new_tos, csum::update16(check, old, new)))
}

/// ECN codepoint of an IPv6 header from its second byte (the traffic class
/// spans bytes 0-1: its two low bits, the ECN field, are bits 5..4 of byte
/// 1).
#[inline(always)]
pub fn ipv6_ecn(b1: u8) -> u8 {
    (b1 >> 4) & 3
}

/// Sets CE in an IPv6 header: the new second byte (byte 0 holds only the
/// version and the DSCP's high bits, so it never changes; the flow label
/// nibble is kept). `None` when nothing changes (non-ECT or already CE).
#[inline(always)]
pub fn ipv6_set_ce(b1: u8) -> Option<u8> {
    let ecn = ipv6_ecn(b1);
    if ecn != ECN_ECT0 && ecn != ECN_ECT1 {
        return None;
    }
    Some(b1 | (ECN_CE << 4))
}
