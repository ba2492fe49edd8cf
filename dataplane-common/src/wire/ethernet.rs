//! Ethernet II and IEEE 802.1Q / 802.1ad tags.

/// Destination, source, EtherType.
pub const HEADER_LEN: usize = 14;
/// TPID + TCI.
pub const TAG_LEN: usize = 4;

pub const ETHERTYPE_IPV4: u16 = 0x0800;
pub const ETHERTYPE_IPV6: u16 = 0x86dd;
pub const ETHERTYPE_ARP: u16 = 0x0806;
pub const ETHERTYPE_VLAN: u16 = 0x8100;
pub const ETHERTYPE_QINQ: u16 = 0x88a8;
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;

/// Offsets inside the Ethernet header.
pub const DST_OFF: usize = 0;
pub const SRC_OFF: usize = 6;
pub const ETHERTYPE_OFF: usize = 12;

/// True for a TPID that announces a VLAN tag (C-tag or S-tag).
#[inline(always)]
pub fn is_tpid(ethertype: u16) -> bool {
    ethertype == ETHERTYPE_VLAN || ethertype == ETHERTYPE_QINQ
}

/// Priority code point (3 bits) of a tag control information field.
#[inline(always)]
pub fn tci_pcp(tci: u16) -> u8 {
    (tci >> 13) as u8
}

/// VLAN identifier (12 bits) of a tag control information field.
#[inline(always)]
pub fn tci_vid(tci: u16) -> u16 {
    tci & 0x0fff
}
