//! UDP (RFC 768).

pub const HEADER_LEN: usize = 8;
pub const SRC_PORT_OFF: usize = 0;
pub const DST_PORT_OFF: usize = 2;
pub const LEN_OFF: usize = 4;
pub const CHECKSUM_OFF: usize = 6;

/// IANA port of RoCEv2.
pub const ROCEV2_PORT: u16 = 4791;
