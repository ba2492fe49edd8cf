//! Far-side notification: one switch tells the switch upstream how long
//! its lossless queue toward a destination prefix needs to drain (see
//! [`crate::lb::far`] for when it is sent and what place mode does with
//! it). A frame of this project's own, hop by hop, never forwarded:
//!
//! ```text
//! 0   destination  01:80:c2:00:00:0e (IEEE nearest-bridge group: bridges do not forward it)
//! 6   source       the sending port's MAC
//! 12  EtherType    0x88b6 (IEEE 802 local experimental 2)
//! 14  version      1
//! 15  family       4 or 6
//! 16  prefix_len   bits of the prefix (0..=32 for family 4, 0..=128 for 6)
//! 17  tc           traffic class of the queue
//! 18  drain_ns     u32 BE: the queue's bytes at the port's line rate
//! 22  valid_ns     u32 BE: how long the receiver counts it after arrival
//! 26  prefix       16 bytes: the IPv4 prefix in the first 4 (the rest 0), or the IPv6 prefix
//! 42  zero padding to 60 bytes
//! ```
//!
//! The prefix is the route the sender matched for the packet that filled
//! the queue: the destinations behind the congested port, as far as the
//! sender's table tells them apart.

/// The frame's EtherType (IEEE 802 local experimental 2).
pub const ETHERTYPE_FAR_NOTE: u16 = 0x88b6;
/// Destination MAC: the nearest-bridge group address, which no 802.1D
/// bridge forwards (the notification is for the link's peer only).
pub const FAR_NOTE_DST: [u8; 6] = [0x01, 0x80, 0xc2, 0x00, 0x00, 0x0e];
/// The version this code writes and reads.
pub const FAR_NOTE_VERSION: u8 = 1;
/// Bytes after the Ethernet header the notification uses.
pub const FAR_NOTE_LEN: usize = 28;
/// The whole frame (the Ethernet minimum, without FCS).
pub const FAR_NOTE_FRAME: usize = 60;

/// One notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct FarNote {
    /// 4 or 6.
    pub family: u8,
    pub prefix_len: u8,
    pub tc: u8,
    pub drain_ns: u32,
    pub valid_ns: u32,
    /// IPv4: the first 4 bytes, the rest 0.
    pub prefix: [u8; 16],
}

/// Why a notification was refused, naming the byte (offset after the
/// Ethernet header) and what was expected.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FarNoteError {
    /// Shorter than [`FAR_NOTE_LEN`] bytes after the Ethernet header.
    Truncated = 0,
    /// Byte 0 is not [`FAR_NOTE_VERSION`].
    Version = 1,
    /// Byte 1 is neither 4 nor 6.
    Family = 2,
    /// Byte 2 is longer than the family's addresses.
    PrefixLen = 3,
}

impl FarNoteError {
    /// What was wrong, for logs and tests.
    pub const fn describe(self) -> &'static str {
        match self {
            FarNoteError::Truncated => "fewer than 28 bytes after the Ethernet header",
            FarNoteError::Version => "byte 0 (version): expected 1",
            FarNoteError::Family => "byte 1 (family): expected 4 or 6",
            FarNoteError::PrefixLen => "byte 2 (prefix_len): longer than the family's addresses",
        }
    }
}

impl FarNote {
    /// The notification for the route of `plen` bits that `dst` (IPv4 in
    /// its first 4 bytes when `family` is 4) matched: the prefix is `dst`
    /// with the bits past `plen` cleared.
    #[inline(always)]
    pub fn for_route(
        family: u8,
        dst: [u8; 16],
        plen: u8,
        tc: u8,
        drain_ns: u64,
        valid_ns: u64,
    ) -> FarNote {
        let max = if family == 4 { 32 } else { 128 };
        let plen = if plen > max { max } else { plen };
        let mut prefix = [0u8; 16];
        let mut i = 0;
        while i < 16 {
            let bits = plen as i32 - 8 * i as i32;
            prefix[i] = if (family == 4 && i >= 4) || bits <= 0 {
                0
            } else if bits >= 8 {
                dst[i]
            } else {
                dst[i] & (0xffu8 << (8 - bits))
            };
            i += 1;
        }
        FarNote {
            family: if family == 4 { 4 } else { 6 },
            prefix_len: plen,
            tc: tc & 7,
            drain_ns: sat32(drain_ns),
            valid_ns: sat32(valid_ns),
            prefix,
        }
    }

    /// Decodes the [`FAR_NOTE_LEN`] bytes after the Ethernet header.
    #[inline(always)]
    pub fn decode(b: &[u8; FAR_NOTE_LEN]) -> Result<FarNote, FarNoteError> {
        if b[0] != FAR_NOTE_VERSION {
            return Err(FarNoteError::Version);
        }
        let max = match b[1] {
            4 => 32,
            6 => 128,
            _ => return Err(FarNoteError::Family),
        };
        if b[2] > max {
            return Err(FarNoteError::PrefixLen);
        }
        let mut prefix = [0u8; 16];
        let mut i = 0;
        while i < 16 {
            prefix[i] = b[12 + i];
            i += 1;
        }
        Ok(FarNote {
            family: b[1],
            prefix_len: b[2],
            tc: b[3] & 7,
            drain_ns: u32::from_be_bytes([b[4], b[5], b[6], b[7]]),
            valid_ns: u32::from_be_bytes([b[8], b[9], b[10], b[11]]),
            prefix,
        })
    }

    /// The whole frame, sent from `src`.
    #[inline(always)]
    pub fn frame(&self, src: [u8; 6]) -> [u8; FAR_NOTE_FRAME] {
        let mut f = [0u8; FAR_NOTE_FRAME];
        let mut i = 0;
        while i < 6 {
            f[i] = FAR_NOTE_DST[i];
            f[6 + i] = src[i];
            i += 1;
        }
        f[12] = (ETHERTYPE_FAR_NOTE >> 8) as u8;
        f[13] = ETHERTYPE_FAR_NOTE as u8;
        f[14] = FAR_NOTE_VERSION;
        f[15] = self.family;
        f[16] = self.prefix_len;
        f[17] = self.tc;
        let (d, v) = (self.drain_ns.to_be_bytes(), self.valid_ns.to_be_bytes());
        let mut i = 0;
        while i < 4 {
            f[18 + i] = d[i];
            f[22 + i] = v[i];
            i += 1;
        }
        let mut i = 0;
        while i < 16 {
            f[26 + i] = self.prefix[i];
            i += 1;
        }
        f
    }

    /// Its key in a receiver's table of notifications by (port, prefix),
    /// an LPM trie over [`far_key`]'s 20 bytes: (prefix length in bits,
    /// data).
    #[inline(always)]
    pub fn key(&self, port_id: u16) -> (u32, [u8; FAR_KEY_LEN]) {
        let (addr, bits) = if self.family == 4 {
            let p = &self.prefix;
            (
                crate::lb::ipv4_mapped([p[0], p[1], p[2], p[3]]),
                96 + u32::from(self.prefix_len),
            )
        } else {
            (self.prefix, u32::from(self.prefix_len))
        };
        (32 + bits, far_key(port_id, &addr))
    }
}

/// Bytes of a notification table key: the port id (4, big-endian) and
/// the address (16; IPv4 as `::ffff:a.b.c.d`, as the flow key holds it).
pub const FAR_KEY_LEN: usize = 20;
/// The prefix length of a lookup key: the whole port id and address.
pub const FAR_KEY_BITS: u32 = 8 * FAR_KEY_LEN as u32;

/// The table key of port `port_id` and address `addr` (IPv4-mapped for
/// IPv4): what a lookup of [`FAR_KEY_BITS`] bits matches against.
#[inline(always)]
pub fn far_key(port_id: u16, addr: &[u8; 16]) -> [u8; FAR_KEY_LEN] {
    let mut k = [0u8; FAR_KEY_LEN];
    k[2] = (port_id >> 8) as u8;
    k[3] = port_id as u8;
    let mut i = 0;
    while i < 16 {
        k[4 + i] = addr[i];
        i += 1;
    }
    k
}

#[inline(always)]
const fn sat32(v: u64) -> u32 {
    if v > u32::MAX as u64 {
        u32::MAX
    } else {
        v as u32
    }
}
