//! Ultra Ethernet Transport (UEC specification 1.0, June 2025): the PDS
//! (Packet Delivery Sublayer) header as a switch reads it.
//!
//! What a switch needs, and where each fact comes from (read, not copied;
//! see the README section "Ultra Ethernet (UET)"):
//!
//! * UET over UDP uses destination port **4793** (IANA). Wireshark's `uet`
//!   dissector (packet-uet.c, Keysight, 2024-25) registers on UDP 4793;
//!   Tom Herbert's XDP2 headers (`src/include/uet/pds.h`) define
//!   `UET_UDP_PORT_NUM 4793`. The Linux RFC patch set (N. Aleksandrov, 2025,
//!   `include/uapi/linux/ultraeth.h`) used a default of 5432 for its UDP
//!   tunnel instead: this parser recognises 4793 only.
//! * Over UDP the PDS header starts right after the UDP header; there is no
//!   separate entropy header there (Wireshark dissects one, `entropy(16)
//!   reserved(16)`, only for UET directly over IP). The **entropy value**
//!   that senders change to spray packets over paths is carried in the UDP
//!   source port, which is why a switch's ECMP hash over the 5-tuple
//!   follows it ([`entropy`]).
//! * The PDS **prologue** is the first 16 bits, big-endian:
//!   `type(5) | next_hdr or ctl_type(4) | flags(7)` (masks 0xf800, 0x0780,
//!   0x007f: Wireshark, XDP2, Linux `UET_PROLOGUE_*`).
//! * Types ([`TYPE_RUD_REQ`] ...): 1 TSS encryption header, 2 RUD request,
//!   3 ROD request, 4 RUDI request, 5 RUDI response, 6 UUD request, 7 ACK,
//!   8 ACK_CC, 9 ACK_CCX, 10 NACK, 11 control, 12 NACK_CCX, 13 RUD_CC
//!   request, 14 ROD_CC request; 0 and 15-31 reserved (XDP2, Wireshark; ns-3's
//!   UEC notes cite Table 3-32 of UEC 1.0.3 for 2, 3, 6-11).
//! * Flags (low 7 bits): RETX 0x10 and, on requests and control packets,
//!   AR (ACK request) 0x08 and SYN 0x04; on ACK/NACK, M (ECN marked at the
//!   receiver) 0x20 (Wireshark, Linux).
//! * Fixed header lengths: requests (RUD/ROD), ACK and control 12 bytes
//!   (+4 CC state for RUD_CC/ROD_CC; ACK_CC adds 20), NACK 16, UUD 4,
//!   RUDI 8. Bytes 4-7 hold the request PSN, the cumulative ACK PSN (ACK),
//!   the NACK PSN (NACK) or the RUDI packet id. Sources disagree on the
//!   control packet (12 bytes in ns-3's notes, 16 in Wireshark and XDP2)
//!   and on the CCX extensions, so [`fixed_len`] takes the smallest length
//!   they agree a packet of that type has: a switch must not call malformed
//!   what a conformant sender may send.
//! * NACK code 0x01 is "trimmed" (Linux, XDP2, Wireshark): the receiver of a
//!   packet a switch trimmed answers with it.

/// IANA UDP port of UET.
pub const UET_PORT: u16 = 4793;

/// The PDS prologue (type, next header, flags).
pub const PROLOGUE_LEN: usize = 2;

pub const TYPE_TSS: u8 = 1;
pub const TYPE_RUD_REQ: u8 = 2;
pub const TYPE_ROD_REQ: u8 = 3;
pub const TYPE_RUDI_REQ: u8 = 4;
pub const TYPE_RUDI_RESP: u8 = 5;
pub const TYPE_UUD_REQ: u8 = 6;
pub const TYPE_ACK: u8 = 7;
pub const TYPE_ACK_CC: u8 = 8;
pub const TYPE_ACK_CCX: u8 = 9;
pub const TYPE_NACK: u8 = 10;
pub const TYPE_CONTROL: u8 = 11;
pub const TYPE_NACK_CCX: u8 = 12;
pub const TYPE_RUD_CC_REQ: u8 = 13;
pub const TYPE_ROD_CC_REQ: u8 = 14;

/// Flags (the prologue's low 7 bits).
pub const FLAG_M: u8 = 0x20;
pub const FLAG_RETX: u8 = 0x10;
pub const FLAG_AR: u8 = 0x08;
pub const FLAG_SYN: u8 = 0x04;

/// NACK code: the packet was trimmed.
pub const NACK_TRIMMED: u8 = 0x01;

/// The PDS fields the pipeline uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pds {
    /// Packet type (5 bits).
    pub ptype: u8,
    /// Next header, or the control type of a control packet (4 bits).
    pub next: u8,
    /// Flags (7 bits).
    pub flags: u8,
    /// Bytes 4-7 (PSN, cumulative ACK PSN, NACK PSN or RUDI packet id); 0
    /// for types without them (TSS, UUD, reserved).
    pub psn: u32,
}

/// Smallest PDS header a packet of type `ptype` has (bytes after the UDP
/// header); reserved types and the TSS header: the prologue only (the
/// switch reads no more of them).
#[inline(always)]
pub const fn fixed_len(ptype: u8) -> usize {
    match ptype {
        TYPE_UUD_REQ => 4,
        TYPE_RUDI_REQ | TYPE_RUDI_RESP => 8,
        TYPE_RUD_REQ | TYPE_ROD_REQ | TYPE_ACK | TYPE_ACK_CCX | TYPE_CONTROL => 12,
        TYPE_NACK | TYPE_NACK_CCX | TYPE_RUD_CC_REQ | TYPE_ROD_CC_REQ => 16,
        TYPE_ACK_CC => 32,
        _ => PROLOGUE_LEN,
    }
}

/// Whether bytes 4-7 of type `ptype` hold a PSN (or RUDI packet id).
#[inline(always)]
pub const fn has_psn(ptype: u8) -> bool {
    fixed_len(ptype) >= 8
}

/// Type of the 16-bit prologue.
#[inline(always)]
pub const fn prologue_type(v: u16) -> u8 {
    (v >> 11) as u8
}

impl Pds {
    /// Decodes the prologue `v` and, when the type has one, the PSN word.
    #[inline(always)]
    pub fn decode(v: u16, psn: u32) -> Self {
        let ptype = prologue_type(v);
        Pds {
            ptype,
            next: ((v >> 7) & 0x0f) as u8,
            flags: (v & 0x7f) as u8,
            psn: if has_psn(ptype) { psn } else { 0 },
        }
    }

    /// The 16-bit prologue.
    pub const fn prologue(&self) -> u16 {
        ((self.ptype as u16 & 0x1f) << 11)
            | ((self.next as u16 & 0x0f) << 7)
            | (self.flags as u16 & 0x7f)
    }

    /// A RUD/ROD request (12 bytes: prologue, clear PSN offset 0, PSN,
    /// source and destination PDC ids).
    pub fn request(ptype: u8, next: u8, flags: u8, psn: u32, spdcid: u16, dpdcid: u16) -> [u8; 12] {
        let pro = Pds {
            ptype,
            next,
            flags,
            psn,
        }
        .prologue()
        .to_be_bytes();
        let p = psn.to_be_bytes();
        let s = spdcid.to_be_bytes();
        let d = dpdcid.to_be_bytes();
        [
            pro[0], pro[1], 0, 0, p[0], p[1], p[2], p[3], s[0], s[1], d[0], d[1],
        ]
    }

    /// True for the feedback a receiver sends (ACK, NACK, control).
    #[inline(always)]
    pub const fn is_feedback(&self) -> bool {
        matches!(
            self.ptype,
            TYPE_ACK | TYPE_ACK_CC | TYPE_ACK_CCX | TYPE_NACK | TYPE_NACK_CCX | TYPE_CONTROL
        )
    }
}

/// Writers of the feedback a receiver sends (layouts as the Linux RFC
/// patch set's `uet_pds_ack_hdr` / `uet_pds_nack_hdr` and Wireshark lay
/// them out; the parser above reads their PSN word at bytes 4-7).
impl Pds {
    /// The prologue bytes of a feedback packet of type `ptype` (next
    /// header 0).
    fn feedback_prologue(ptype: u8, flags: u8) -> [u8; 2] {
        Pds {
            ptype,
            next: 0,
            flags,
            psn: 0,
        }
        .prologue()
        .to_be_bytes()
    }

    /// A RUD/ROD ACK (12 bytes): prologue, ACK PSN offset (the PSN this
    /// ACK is for = `cack_psn + offset`), cumulative ACK PSN (every PSN up
    /// to it arrived), source and destination PDC ids.
    pub fn ack(flags: u8, cack_psn: u32, offset: u16, spdcid: u16, dpdcid: u16) -> [u8; 12] {
        let mut h = [0u8; 12];
        h[..2].copy_from_slice(&Self::feedback_prologue(TYPE_ACK, flags));
        h[2..4].copy_from_slice(&offset.to_be_bytes());
        h[4..8].copy_from_slice(&cack_psn.to_be_bytes());
        h[8..10].copy_from_slice(&spdcid.to_be_bytes());
        h[10..12].copy_from_slice(&dpdcid.to_be_bytes());
        h
    }

    /// A NACK (16 bytes): prologue, NACK code (e.g. [`NACK_TRIMMED`]),
    /// vendor code 0, the PSN NACKed, source and destination PDC ids, 4
    /// bytes of payload (0).
    pub fn nack(flags: u8, code: u8, psn: u32, spdcid: u16, dpdcid: u16) -> [u8; 16] {
        let mut h = [0u8; 16];
        h[..2].copy_from_slice(&Self::feedback_prologue(TYPE_NACK, flags));
        h[2] = code;
        h[4..8].copy_from_slice(&psn.to_be_bytes());
        h[8..10].copy_from_slice(&spdcid.to_be_bytes());
        h[10..12].copy_from_slice(&dpdcid.to_be_bytes());
        h
    }
}
