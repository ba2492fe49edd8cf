//! IPv4 (RFC 791), including options through IHL.

pub const MIN_HEADER_LEN: usize = 20;
pub const TOS_OFF: usize = 1;
pub const TOTAL_LEN_OFF: usize = 2;
pub const FRAG_OFF: usize = 6;
pub const TTL_OFF: usize = 8;
pub const PROTO_OFF: usize = 9;
pub const CHECKSUM_OFF: usize = 10;
pub const SRC_OFF: usize = 12;
pub const DST_OFF: usize = 16;

/// More-fragments flag in the flags/fragment-offset field.
pub const MF_BIT: u16 = 0x2000;

pub const PROTO_TCP: u8 = 6;
pub const PROTO_UDP: u8 = 17;

/// Version nibble of the first byte.
#[inline(always)]
pub fn version(b0: u8) -> u8 {
    b0 >> 4
}

/// Header length in bytes from the IHL nibble (20..=60 when valid).
#[inline(always)]
pub fn header_len(b0: u8) -> usize {
    ((b0 & 0x0f) as usize) * 4
}

/// True when the fragment-offset field is not zero: the L4 header is not in
/// this packet.
#[inline(always)]
pub fn is_later_fragment(frag_field: u16) -> bool {
    frag_field & 0x1fff != 0
}
