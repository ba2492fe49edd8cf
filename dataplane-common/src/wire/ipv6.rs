//! IPv6 fixed header (RFC 8200). Extension headers are not walked: a packet
//! whose next header is not UDP is classified as IP but not RoCEv2.

pub const HEADER_LEN: usize = 40;
pub const PAYLOAD_LEN_OFF: usize = 4;
pub const NEXT_HEADER_OFF: usize = 6;
pub const HOP_LIMIT_OFF: usize = 7;
pub const SRC_OFF: usize = 8;
pub const DST_OFF: usize = 24;

/// Version nibble of the first byte.
#[inline(always)]
pub fn version(b0: u8) -> u8 {
    b0 >> 4
}

/// Traffic class from the first two bytes (version | TC | flow label...).
#[inline(always)]
pub fn traffic_class(b0: u8, b1: u8) -> u8 {
    (b0 << 4) | (b1 >> 4)
}
