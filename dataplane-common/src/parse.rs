//! The parser every stage shares.
//!
//! One pass over the header chain Ethernet → (802.1Q) → IPv4 | IPv6 | MAC
//! control → UDP → BTH (RoCEv2, port 4791) | PDS (UET, port 4793). Each header boundary has its own [`ParseError`], so a
//! truncated or malformed frame always gets a defined verdict (chosen per
//! port by the controller) and a counter that says where it broke.

use crate::wire::{
    bth, bth::Bth, ethernet as eth, ipv4, ipv6, macctl, macctl::MacCtl, udp, uet, uet::Pds, Packet,
};

/// Why a frame could not be parsed. The discriminant indexes the per-port
/// `malformed` counters: never reorder, only append.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseError {
    /// Shorter than the 14-byte Ethernet header.
    EthTruncated = 0,
    /// A VLAN TPID without the 4-byte tag (or the inner EtherType).
    VlanTruncated = 1,
    /// EtherType IPv4 but fewer than 20 bytes follow.
    Ipv4Truncated = 2,
    /// EtherType IPv4 but the version nibble is not 4.
    Ipv4BadVersion = 3,
    /// IHL below 5 (header shorter than 20 bytes).
    Ipv4BadIhl = 4,
    /// IHL announces options the frame does not hold.
    Ipv4OptionsTruncated = 5,
    /// Total length smaller than the header length.
    Ipv4BadTotalLen = 6,
    /// Total length beyond the end of the frame.
    Ipv4LenExceedsFrame = 7,
    /// EtherType IPv6 but fewer than 40 bytes follow.
    Ipv6Truncated = 8,
    /// EtherType IPv6 but the version nibble is not 6.
    Ipv6BadVersion = 9,
    /// Payload length beyond the end of the frame.
    Ipv6LenExceedsFrame = 10,
    /// Protocol UDP but fewer than 8 bytes of UDP header.
    UdpTruncated = 11,
    /// UDP length below 8 or beyond the IP payload.
    UdpBadLen = 12,
    /// UDP destination port 4791 without room for BTH (12) and ICRC (4).
    BthTruncated = 13,
    /// EtherType 0x8808 without the opcode, or a PFC/PAUSE frame without its
    /// fields.
    MacCtlTruncated = 14,
    /// UDP destination port 4793 (UET) without room for the PDS prologue
    /// (2 bytes) or for the fixed header its type announces
    /// ([`uet::fixed_len`]).
    UetTruncated = 15,
}

/// Size of the per-port malformed counter array: room for every
/// [`ParseError`] variant. Full since `UetTruncated`: the reason table gives
/// parse errors codes 0..16 only (see `reason.rs`), so a further parse error
/// needs a new code range there first.
pub const PARSE_ERROR_COUNT: usize = 16;

const _: () = assert!(ParseError::ALL.len() <= PARSE_ERROR_COUNT);

impl ParseError {
    /// Every variant, in counter order.
    pub const ALL: [ParseError; 16] = [
        ParseError::EthTruncated,
        ParseError::VlanTruncated,
        ParseError::Ipv4Truncated,
        ParseError::Ipv4BadVersion,
        ParseError::Ipv4BadIhl,
        ParseError::Ipv4OptionsTruncated,
        ParseError::Ipv4BadTotalLen,
        ParseError::Ipv4LenExceedsFrame,
        ParseError::Ipv6Truncated,
        ParseError::Ipv6BadVersion,
        ParseError::Ipv6LenExceedsFrame,
        ParseError::UdpTruncated,
        ParseError::UdpBadLen,
        ParseError::BthTruncated,
        ParseError::MacCtlTruncated,
        ParseError::UetTruncated,
    ];

    /// Stable snake_case name used in stats output and metrics labels.
    pub const fn name(self) -> &'static str {
        match self {
            ParseError::EthTruncated => "eth_truncated",
            ParseError::VlanTruncated => "vlan_truncated",
            ParseError::Ipv4Truncated => "ipv4_truncated",
            ParseError::Ipv4BadVersion => "ipv4_bad_version",
            ParseError::Ipv4BadIhl => "ipv4_bad_ihl",
            ParseError::Ipv4OptionsTruncated => "ipv4_options_truncated",
            ParseError::Ipv4BadTotalLen => "ipv4_bad_total_len",
            ParseError::Ipv4LenExceedsFrame => "ipv4_len_exceeds_frame",
            ParseError::Ipv6Truncated => "ipv6_truncated",
            ParseError::Ipv6BadVersion => "ipv6_bad_version",
            ParseError::Ipv6LenExceedsFrame => "ipv6_len_exceeds_frame",
            ParseError::UdpTruncated => "udp_truncated",
            ParseError::UdpBadLen => "udp_bad_len",
            ParseError::BthTruncated => "bth_truncated",
            ParseError::MacCtlTruncated => "mac_ctl_truncated",
            ParseError::UetTruncated => "uet_truncated",
        }
    }
}

/// What sits after the L2 header.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum L3 {
    /// Not IP and not MAC control (ARP, LLDP, QinQ inner, ...).
    #[default]
    Other = 0,
    Ipv4 = 1,
    Ipv6 = 2,
    MacControl = 3,
}

/// Everything later stages need from the headers, as plain values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    /// Bytes in the frame.
    pub frame_len: u16,
    /// EtherType after at most one VLAN tag.
    pub ethertype: u16,
    /// A VLAN tag was present.
    pub vlan: bool,
    /// PCP of the (outer) tag, 0 when untagged.
    pub pcp: u8,
    /// VLAN id of the (outer) tag.
    pub vid: u16,
    /// Two tags: counted and passed, not parsed further.
    pub qinq: bool,
    pub l3: L3,
    /// Offset of the L3 header.
    pub l3_off: u16,
    /// DSCP (6 bits) of an IP packet.
    pub dscp: u8,
    /// ECN (2 bits) of an IP packet.
    pub ecn: u8,
    /// IPv4 protocol or IPv6 next header.
    pub ip_proto: u8,
    /// A non-first IPv4 fragment: no L4 header in this packet.
    pub later_fragment: bool,
    /// The first fragment of a fragmented IPv4 datagram (MF set, offset 0):
    /// its UDP length covers the whole datagram, not this packet.
    pub first_fragment: bool,
    /// Offset of the L4 header (0 when none).
    pub l4_off: u16,
    /// Bytes of IP payload as the IP header states them (frame padding
    /// excluded).
    pub ip_payload_len: u16,
    /// UDP header present.
    pub udp: bool,
    pub sport: u16,
    pub dport: u16,
    /// RoCEv2: UDP destination 4791 with a BTH.
    pub roce: bool,
    pub bth: Bth,
    /// UET: UDP destination 4793 with a PDS header (the entropy value is
    /// `sport`).
    pub uet: bool,
    pub pds: Pds,
    /// MAC control frame fields (when `l3 == MacControl`).
    pub mac_ctl: MacCtl,
}

impl Parsed {
    /// The entropy value of a UET-over-UDP packet: its UDP source port.
    #[inline(always)]
    pub const fn uet_entropy(&self) -> u16 {
        self.sport
    }
}

/// Parses the header chain of `p`.
#[inline(always)]
pub fn parse<P: Packet + ?Sized>(p: &P) -> Result<Parsed, ParseError> {
    let len = p.len();
    let mut out = Parsed {
        frame_len: if len > u16::MAX as usize {
            u16::MAX
        } else {
            len as u16
        },
        ..Parsed::default()
    };

    let Some(mut ethertype) = p.be16_at(eth::ETHERTYPE_OFF) else {
        return Err(ParseError::EthTruncated);
    };
    let mut off = eth::HEADER_LEN;
    if eth::is_tpid(ethertype) {
        // TCI (2) + inner EtherType (2)
        let Some(tag) = p.read::<4>(off) else {
            return Err(ParseError::VlanTruncated);
        };
        let tci = u16::from_be_bytes([tag[0], tag[1]]);
        ethertype = u16::from_be_bytes([tag[2], tag[3]]);
        out.vlan = true;
        out.pcp = eth::tci_pcp(tci);
        out.vid = eth::tci_vid(tci);
        off += eth::TAG_LEN;
        if eth::is_tpid(ethertype) {
            out.qinq = true;
            out.ethertype = ethertype;
            out.l3_off = off as u16;
            return Ok(out);
        }
    }
    out.ethertype = ethertype;
    out.l3_off = off as u16;

    match ethertype {
        eth::ETHERTYPE_IPV4 => parse_ipv4(p, off, &mut out)?,
        eth::ETHERTYPE_IPV6 => parse_ipv6(p, off, &mut out)?,
        eth::ETHERTYPE_MAC_CONTROL => {
            parse_mac_ctl(p, off, &mut out)?;
            return Ok(out);
        }
        _ => return Ok(out),
    }

    if out.udp {
        parse_udp_payload(p, &mut out)?;
    }
    Ok(out)
}

#[inline(always)]
fn parse_ipv4<P: Packet + ?Sized>(p: &P, off: usize, out: &mut Parsed) -> Result<(), ParseError> {
    let Some(h) = p.read::<20>(off) else {
        return Err(ParseError::Ipv4Truncated);
    };
    if ipv4::version(h[0]) != 4 {
        return Err(ParseError::Ipv4BadVersion);
    }
    let hlen = ipv4::header_len(h[0]);
    if hlen < ipv4::MIN_HEADER_LEN {
        return Err(ParseError::Ipv4BadIhl);
    }
    // the options must be in the frame
    if off + hlen > p.len() {
        return Err(ParseError::Ipv4OptionsTruncated);
    }
    let total = u16::from_be_bytes([h[ipv4::TOTAL_LEN_OFF], h[ipv4::TOTAL_LEN_OFF + 1]]) as usize;
    if total < hlen {
        return Err(ParseError::Ipv4BadTotalLen);
    }
    if off + total > p.len() {
        return Err(ParseError::Ipv4LenExceedsFrame);
    }
    out.l3 = L3::Ipv4;
    out.dscp = h[ipv4::TOS_OFF] >> 2;
    out.ecn = h[ipv4::TOS_OFF] & 0x3;
    out.ip_proto = h[ipv4::PROTO_OFF];
    let frag = u16::from_be_bytes([h[ipv4::FRAG_OFF], h[ipv4::FRAG_OFF + 1]]);
    out.later_fragment = ipv4::is_later_fragment(frag);
    out.first_fragment = frag & ipv4::MF_BIT != 0 && !out.later_fragment;
    out.l4_off = if out.later_fragment {
        0
    } else {
        (off + hlen) as u16
    };
    if out.ip_proto == ipv4::PROTO_UDP && !out.later_fragment {
        out.udp = true;
    }
    out.ip_payload_len = (total - hlen) as u16;
    Ok(())
}

#[inline(always)]
fn parse_ipv6<P: Packet + ?Sized>(p: &P, off: usize, out: &mut Parsed) -> Result<(), ParseError> {
    let Some(h) = p.read::<8>(off) else {
        return Err(ParseError::Ipv6Truncated);
    };
    if off + ipv6::HEADER_LEN > p.len() {
        return Err(ParseError::Ipv6Truncated);
    }
    if ipv6::version(h[0]) != 6 {
        return Err(ParseError::Ipv6BadVersion);
    }
    let payload =
        u16::from_be_bytes([h[ipv6::PAYLOAD_LEN_OFF], h[ipv6::PAYLOAD_LEN_OFF + 1]]) as usize;
    if off + ipv6::HEADER_LEN + payload > p.len() {
        return Err(ParseError::Ipv6LenExceedsFrame);
    }
    let tc = ipv6::traffic_class(h[0], h[1]);
    out.l3 = L3::Ipv6;
    out.dscp = tc >> 2;
    out.ecn = tc & 0x3;
    out.ip_proto = h[ipv6::NEXT_HEADER_OFF];
    out.l4_off = (off + ipv6::HEADER_LEN) as u16;
    if out.ip_proto == ipv4::PROTO_UDP {
        out.udp = true;
    }
    out.ip_payload_len = payload as u16;
    Ok(())
}

/// UDP header and, for port 4791, the BTH; for port 4793, the PDS header.
#[inline(always)]
fn parse_udp_payload<P: Packet + ?Sized>(p: &P, out: &mut Parsed) -> Result<(), ParseError> {
    let ip_payload = out.ip_payload_len as usize;
    let off = out.l4_off as usize;
    let Some(u) = p.read::<8>(off) else {
        return Err(ParseError::UdpTruncated);
    };
    if ip_payload < udp::HEADER_LEN {
        return Err(ParseError::UdpTruncated);
    }
    out.sport = u16::from_be_bytes([u[0], u[1]]);
    out.dport = u16::from_be_bytes([u[2], u[3]]);
    let ulen = u16::from_be_bytes([u[4], u[5]]) as usize;
    if ulen < udp::HEADER_LEN || (ulen > ip_payload && !out.first_fragment) {
        return Err(ParseError::UdpBadLen);
    }
    // a first fragment's UDP length covers the whole datagram: only the
    // bytes of this packet count
    let room = if out.first_fragment { ip_payload } else { ulen };
    if out.dport == uet::UET_PORT {
        return parse_pds(p, off + udp::HEADER_LEN, room, out);
    }
    if out.dport != udp::ROCEV2_PORT {
        return Ok(());
    }
    // a first fragment holds the BTH but its ICRC is in the last fragment
    let need =
        udp::HEADER_LEN + bth::HEADER_LEN + if out.first_fragment { 0 } else { bth::ICRC_LEN };
    if room < need {
        return Err(ParseError::BthTruncated);
    }
    let Some(b) = p.read::<{ bth::HEADER_LEN }>(off + udp::HEADER_LEN) else {
        return Err(ParseError::BthTruncated);
    };
    out.roce = true;
    out.bth = Bth::decode(&b);
    Ok(())
}

/// The PDS header at `off`, `room` bytes of UDP datagram (header included)
/// in this packet.
#[inline(always)]
fn parse_pds<P: Packet + ?Sized>(
    p: &P,
    off: usize,
    room: usize,
    out: &mut Parsed,
) -> Result<(), ParseError> {
    let Some(v) = p.be16_at(off) else {
        return Err(ParseError::UetTruncated);
    };
    let ptype = uet::prologue_type(v);
    if room < udp::HEADER_LEN + uet::fixed_len(ptype) {
        return Err(ParseError::UetTruncated);
    }
    let mut psn = 0;
    if uet::has_psn(ptype) {
        let Some(w) = p.read::<4>(off + 4) else {
            return Err(ParseError::UetTruncated);
        };
        psn = u32::from_be_bytes(w);
    }
    out.uet = true;
    out.pds = Pds::decode(v, psn);
    Ok(())
}

#[inline(always)]
fn parse_mac_ctl<P: Packet + ?Sized>(
    p: &P,
    off: usize,
    out: &mut Parsed,
) -> Result<(), ParseError> {
    let Some(opcode) = p.be16_at(off) else {
        return Err(ParseError::MacCtlTruncated);
    };
    out.l3 = L3::MacControl;
    out.mac_ctl.opcode = opcode;
    match opcode {
        macctl::OPCODE_PFC => {
            let Some(f) = p.read::<{ macctl::PFC_LEN - 2 }>(off + 2) else {
                return Err(ParseError::MacCtlTruncated);
            };
            out.mac_ctl.class_enable = u16::from_be_bytes([f[0], f[1]]);
            let mut i = 0;
            while i < 8 {
                out.mac_ctl.times[i] = u16::from_be_bytes([f[2 + 2 * i], f[3 + 2 * i]]);
                i += 1;
            }
        }
        macctl::OPCODE_PAUSE => {
            let Some(t) = p.be16_at(off + 2) else {
                return Err(ParseError::MacCtlTruncated);
            };
            out.mac_ctl.times[0] = t;
        }
        _ => {}
    }
    Ok(())
}
