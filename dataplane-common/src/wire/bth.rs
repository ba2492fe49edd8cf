//! InfiniBand Base Transport Header as carried by RoCEv2, and its ICRC.
//!
//! ```text
//! byte 0      opcode
//! byte 1      solicited(1) migreq(1) pad(2) tver(4)
//! bytes 2-3   partition key
//! byte 4      FECN(1) BECN(1) reserved(6)
//! bytes 5-7   destination QP
//! byte 8      ack request(1) reserved(7)
//! bytes 9-11  PSN
//! ```

pub const HEADER_LEN: usize = 12;
/// Invariant CRC trailing every RoCEv2 packet.
pub const ICRC_LEN: usize = 4;
/// RDMA extended transport header (WRITE first / only).
pub const RETH_LEN: usize = 16;
/// Offset of the DMA length in a RETH (after the virtual address and the
/// rkey).
pub const RETH_DMA_LEN_OFF: usize = 12;

/// Whether a packet of BTH `opcode` carries a RETH (RDMA WRITE first or
/// only).
#[inline(always)]
pub const fn carries_reth(opcode: u8) -> bool {
    opcode == OP_WRITE_FIRST || opcode == OP_WRITE_ONLY
}
/// CNP: BTH + 16 reserved bytes + ICRC.
pub const CNP_PAYLOAD_LEN: usize = 16;

pub const OP_SEND_FIRST: u8 = 0x00;
pub const OP_SEND_MIDDLE: u8 = 0x01;
pub const OP_SEND_LAST: u8 = 0x02;
pub const OP_SEND_ONLY: u8 = 0x04;
pub const OP_WRITE_FIRST: u8 = 0x06;
pub const OP_WRITE_MIDDLE: u8 = 0x07;
pub const OP_WRITE_LAST: u8 = 0x08;
pub const OP_WRITE_ONLY: u8 = 0x0a;
pub const OP_ACK: u8 = 0x11;
/// Congestion notification packet.
pub const OP_CNP: u8 = 0x81;

pub const FECN_BIT: u8 = 0x80;
pub const BECN_BIT: u8 = 0x40;

/// The fields of a BTH the pipeline uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bth {
    pub opcode: u8,
    pub fecn: bool,
    pub becn: bool,
    pub pkey: u16,
    pub dest_qp: u32,
    pub ack_req: bool,
    pub psn: u32,
}

impl Bth {
    /// A request header: `opcode` to queue pair `dest_qp` at `psn`, default
    /// partition key, no flags.
    pub const fn request(opcode: u8, dest_qp: u32, psn: u32) -> Self {
        Bth {
            opcode,
            fecn: false,
            becn: false,
            pkey: 0xffff,
            dest_qp,
            ack_req: false,
            psn,
        }
    }

    /// Decodes the 12 header bytes.
    #[inline(always)]
    pub fn decode(b: &[u8; HEADER_LEN]) -> Self {
        Bth {
            opcode: b[0],
            pkey: u16::from_be_bytes([b[2], b[3]]),
            fecn: b[4] & FECN_BIT != 0,
            becn: b[4] & BECN_BIT != 0,
            dest_qp: u32::from_be_bytes([0, b[5], b[6], b[7]]),
            ack_req: b[8] & 0x80 != 0,
            psn: u32::from_be_bytes([0, b[9], b[10], b[11]]),
        }
    }

    /// Encodes into 12 bytes (tver 0, no solicited/migreq bits).
    pub fn encode(&self) -> [u8; HEADER_LEN] {
        let qp = self.dest_qp.to_be_bytes();
        let psn = self.psn.to_be_bytes();
        let pk = self.pkey.to_be_bytes();
        [
            self.opcode,
            0,
            pk[0],
            pk[1],
            (if self.fecn { FECN_BIT } else { 0 }) | (if self.becn { BECN_BIT } else { 0 }),
            qp[1],
            qp[2],
            qp[3],
            if self.ack_req { 0x80 } else { 0 },
            psn[1],
            psn[2],
            psn[3],
        ]
    }

    /// True for a congestion notification packet.
    #[inline(always)]
    pub fn is_cnp(&self) -> bool {
        self.opcode == OP_CNP
    }
}

/// CRC-32 (IEEE 802.3, reflected, as zlib and bmv2's `HashAlgorithm.crc32`)
/// of `data`.
pub fn crc32(data: &[u8]) -> u32 {
    !crc32_update(0xffff_ffff, data)
}

/// Reflected CRC-32 (IEEE 802.3 polynomial) update, bitwise.
pub fn crc32_update(mut crc: u32, data: &[u8]) -> u32 {
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xedb8_8320 & mask);
        }
    }
    crc
}

/// Invariant CRC of a RoCEv2 packet.
///
/// `l3` is the packet from the first byte of the IP header up to (not
/// including) the ICRC. Variant fields are masked with ones as the RoCEv2
/// annex requires: IPv4 TOS, TTL and header checksum; IPv6 traffic class,
/// flow label and hop limit; UDP checksum; the BTH FECN/BECN/reserved byte.
/// Returns the value as it appears on the wire (little-endian bytes).
pub fn icrc(l3: &[u8]) -> Option<[u8; 4]> {
    let v = l3.first()? >> 4;
    let (ip_len, masks): (usize, &[(usize, usize)]) = match v {
        // (offset, length) ranges to mask inside the IP header
        4 => (((l3[0] & 0x0f) as usize) * 4, &[(1, 1), (8, 1), (10, 2)]),
        6 => (40, &[(0, 4), (7, 1)]),
        _ => return None,
    };
    if ip_len < 20 || l3.len() < ip_len + 8 + HEADER_LEN {
        return None;
    }
    let mut crc = crc32_update(0xffff_ffff, &[0xff; 8]);
    // IP header with masks, chunked per masked range.
    let mut pos = 0;
    for &(off, len) in masks {
        crc = crc32_update(crc, &l3[pos..off]);
        if v == 6 && off == 0 {
            // version nibble stays, traffic class + flow label become ones
            crc = crc32_update(crc, &[(l3[0] & 0xf0) | 0x0f, 0xff, 0xff, 0xff]);
        } else {
            for _ in 0..len {
                crc = crc32_update(crc, &[0xff]);
            }
        }
        pos = off + len;
    }
    crc = crc32_update(crc, &l3[pos..ip_len]);
    // UDP with checksum masked
    crc = crc32_update(crc, &l3[ip_len..ip_len + 6]);
    crc = crc32_update(crc, &[0xff, 0xff]);
    let bth = ip_len + 8;
    crc = crc32_update(crc, &l3[bth..bth + 4]);
    crc = crc32_update(crc, &[0xff]);
    crc = crc32_update(crc, &l3[bth + 5..]);
    Some((!crc).to_le_bytes())
}
