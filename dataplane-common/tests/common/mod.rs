//! Frames and helpers shared by the integration tests.
//!
//! Every test file includes this module with `mod common;`, and not every
//! file uses every helper.
#![allow(dead_code)]

use dataplane_common::build::{self, Ip, Reth, L2};
use dataplane_common::parse::ParseError;
use dataplane_common::wire::bth::{self, Bth};
use dataplane_common::wire::{ethernet as eth, ipv4, macctl, udp, uet};

pub const SRC_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
pub const DST_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];
pub const SRC_V4: [u8; 4] = [10, 0, 0, 1];
pub const DST_V4: [u8; 4] = [10, 0, 0, 2];
pub const SRC_V6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
pub const DST_V6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];

/// UDP source port of every RoCEv2 frame built here.
pub const ROCE_SPORT: u16 = 0xc0de;
/// Bytes of RDMA payload in [`roce_frame`].
pub const ROCE_PAYLOAD_LEN: usize = 32;
/// UDP payload of [`roce_frame`]: BTH + RETH + payload + ICRC.
pub const ROCE_UDP_PAYLOAD_LEN: usize =
    bth::HEADER_LEN + bth::RETH_LEN + ROCE_PAYLOAD_LEN + bth::ICRC_LEN;

/// UDP source port (the entropy value) of every UET frame built here.
pub const UET_ENTROPY: u16 = 0xe17a;
/// PSN of [`uet_request`].
pub const UET_PSN: u32 = 0x8765_4321;

/// A RUD request PDS header: standard SES request next, ACK requested,
/// every field non-trivial.
pub fn uet_request() -> [u8; 12] {
    uet::Pds::request(uet::TYPE_RUD_REQ, 3, uet::FLAG_AR, UET_PSN, 0x0102, 0x0304)
}

/// UET over UDP 4793: the RUD request header and `payload_len` bytes.
pub fn uet_frame(ip: &Ip, entropy: u16, payload_len: usize) -> Vec<u8> {
    let mut pl = uet_request().to_vec();
    pl.extend((0..payload_len).map(|i| i as u8));
    build::udp_frame(&l2(), ip, entropy, uet::UET_PORT, &pl)
}

/// Untagged L2.
pub fn l2() -> L2 {
    L2::new(DST_MAC, SRC_MAC)
}

/// One 802.1Q tag.
pub fn l2_tagged(pcp: u8, vid: u16) -> L2 {
    l2().vlan(pcp, vid)
}

/// 802.1ad S-tag outside an 802.1Q C-tag.
pub fn l2_qinq(outer_pcp: u8, outer_vid: u16, inner_pcp: u8, inner_vid: u16) -> L2 {
    l2().tag(eth::ETHERTYPE_QINQ, outer_pcp, outer_vid)
        .vlan(inner_pcp, inner_vid)
}

pub fn ip4() -> Ip {
    Ip::v4(SRC_V4, DST_V4)
}

pub fn ip6() -> Ip {
    Ip::v6(SRC_V6, DST_V6)
}

/// The BTH of [`roce_frame`]: RDMA WRITE only, every field non-trivial.
pub fn write_bth() -> Bth {
    Bth {
        opcode: bth::OP_WRITE_ONLY,
        fecn: false,
        becn: false,
        pkey: 0x8001,
        dest_qp: 0x00ab_cd12,
        ack_req: true,
        psn: 0x0012_3456,
    }
}

/// A RoCEv2 RDMA WRITE only (BTH + RETH + 32 bytes) over `ip`.
pub fn roce_frame(l2: &L2, ip: &Ip) -> Vec<u8> {
    let payload: Vec<u8> = (0..ROCE_PAYLOAD_LEN as u8).collect();
    let reth = Reth {
        va: 0x7f00_dead_b000,
        rkey: 0x1234_5678,
        len: ROCE_PAYLOAD_LEN as u32,
    };
    build::rocev2_frame(l2, ip, ROCE_SPORT, &write_bth(), Some(reth), &payload)
}

/// Untagged IPv4 RoCEv2 frame.
pub fn roce_v4() -> Vec<u8> {
    roce_frame(&l2(), &ip4())
}

/// Untagged IPv6 RoCEv2 frame.
pub fn roce_v6() -> Vec<u8> {
    roce_frame(&l2(), &ip6())
}

/// An IPv4 packet with protocol UDP whose L4 part is `l4` (any bytes),
/// framed and padded to 60 bytes.
pub fn ipv4_udp_raw(l4: &[u8]) -> Vec<u8> {
    build::frame(
        &l2(),
        eth::ETHERTYPE_IPV4,
        &build::ip_packet(&ip4(), ipv4::PROTO_UDP, l4),
    )
}

/// Same over IPv6.
pub fn ipv6_udp_raw(l4: &[u8]) -> Vec<u8> {
    build::frame(
        &l2(),
        eth::ETHERTYPE_IPV6,
        &build::ip_packet(&ip6(), ipv4::PROTO_UDP, l4),
    )
}

/// An ARP request (28 bytes of body), padded to 60.
pub fn arp_frame(l2: &L2) -> Vec<u8> {
    let mut body = vec![0, 1, 0x08, 0x00, 6, 4, 0, 1];
    body.extend_from_slice(&SRC_MAC);
    body.extend_from_slice(&SRC_V4);
    body.extend_from_slice(&[0; 6]);
    body.extend_from_slice(&DST_V4);
    build::frame(l2, eth::ETHERTYPE_ARP, &body)
}

/// A MAC control frame with an opcode that is neither PFC nor PAUSE.
pub fn mac_ctl_frame(opcode: u16) -> Vec<u8> {
    let mut body = opcode.to_be_bytes().to_vec();
    body.extend_from_slice(&[0xaa; 8]);
    build::frame(
        &L2::new(macctl::DST_MAC, SRC_MAC),
        eth::ETHERTYPE_MAC_CONTROL,
        &body,
    )
}

/// `f` with the big-endian 16-bit field at `off` set to `v`.
pub fn with_be16(f: &[u8], off: usize, v: u16) -> Vec<u8> {
    let mut f = f.to_vec();
    f[off..off + 2].copy_from_slice(&v.to_be_bytes());
    f
}

/// `f` with the byte at `off` set to `v`.
pub fn with_u8(f: &[u8], off: usize, v: u8) -> Vec<u8> {
    let mut f = f.to_vec();
    f[off] = v;
    f
}

/// Offsets in an untagged IPv4 frame without options.
pub const V4_L3: usize = eth::HEADER_LEN;
pub const V4_L4: usize = V4_L3 + ipv4::MIN_HEADER_LEN;
/// Offsets in an untagged IPv6 frame.
pub const V6_L3: usize = eth::HEADER_LEN;
pub const V6_L4: usize = V6_L3 + 40;

/// One malformed frame, the boundary it breaks at, and why.
pub struct Malformed {
    pub what: &'static str,
    pub frame: Vec<u8>,
    pub error: ParseError,
}

fn bad(what: &'static str, frame: Vec<u8>, error: ParseError) -> Malformed {
    Malformed { what, frame, error }
}

/// At least one malformed frame for every [`ParseError`], made by truncating
/// or corrupting builder frames at each header boundary.
pub fn malformed_corpus() -> Vec<Malformed> {
    use ParseError::*;
    let v4 = roce_v4();
    let v6 = roce_v6();
    let v4_tagged = roce_frame(&l2_tagged(5, 100), &ip4());
    let qinq = roce_frame(&l2_qinq(3, 200, 5, 100), &ip4());
    // IPv4 with 4 bytes of options (IHL 6) and with 40 (IHL 15)
    let v4_ihl6 = roce_frame(&l2(), &ip4().options(&[1, 1, 1, 0]));
    let v4_ihl15 = roce_frame(&l2(), &ip4().options(&[1; 40]));
    let small_v4 = ipv4_udp_raw(&build::udp_datagram(
        &ip4().addrs,
        1000,
        2000,
        &[1, 2, 3, 4],
    ));
    let pfc = build::pfc_frame(SRC_MAC, 0x00ff, [0xffff; 8]);
    let pause = build::pause_frame(SRC_MAC, 0xffff);
    let mac_ctl_no_opcode = mac_ctl_frame(0x0101)[..eth::HEADER_LEN].to_vec();

    // UDP fields of the untagged frames
    let v4_ulen = V4_L4 + udp::LEN_OFF;
    let v6_ulen = V6_L4 + udp::LEN_OFF;
    let v4_ip_payload = (v4.len() - V4_L4) as u16;
    let v6_ip_payload = (v6.len() - V6_L4) as u16;

    vec![
        bad("empty frame", Vec::new(), EthTruncated),
        bad("one byte", v4[..1].to_vec(), EthTruncated),
        bad("13 bytes: EtherType cut", v4[..13].to_vec(), EthTruncated),
        bad("TPID without TCI", v4_tagged[..14].to_vec(), VlanTruncated),
        bad(
            "TCI without inner EtherType",
            v4_tagged[..16].to_vec(),
            VlanTruncated,
        ),
        bad(
            "inner EtherType cut",
            v4_tagged[..17].to_vec(),
            VlanTruncated,
        ),
        bad("S-tag cut", qinq[..15].to_vec(), VlanTruncated),
        bad("IPv4 with no header", v4[..V4_L3].to_vec(), Ipv4Truncated),
        bad(
            "IPv4 header 19 bytes",
            v4[..V4_L3 + 19].to_vec(),
            Ipv4Truncated,
        ),
        bad(
            "tagged IPv4 header 19 bytes",
            v4_tagged[..18 + 19].to_vec(),
            Ipv4Truncated,
        ),
        bad(
            "IPv4 EtherType, version 6",
            with_u8(&v4, V4_L3, 0x65),
            Ipv4BadVersion,
        ),
        bad(
            "IPv4 EtherType, version 0",
            with_u8(&v4, V4_L3, 0x05),
            Ipv4BadVersion,
        ),
        bad("IHL 4", with_u8(&v4, V4_L3, 0x44), Ipv4BadIhl),
        bad("IHL 0", with_u8(&v4, V4_L3, 0x40), Ipv4BadIhl),
        bad(
            "IHL 6, options cut",
            v4_ihl6[..V4_L3 + 23].to_vec(),
            Ipv4OptionsTruncated,
        ),
        bad(
            "IHL 15, options cut",
            v4_ihl15[..V4_L3 + 59].to_vec(),
            Ipv4OptionsTruncated,
        ),
        bad(
            "IHL 15 in a 60-byte frame",
            with_u8(&small_v4, V4_L3, 0x4f),
            Ipv4OptionsTruncated,
        ),
        bad(
            "total length 19",
            with_be16(&v4, V4_L3 + ipv4::TOTAL_LEN_OFF, 19),
            Ipv4BadTotalLen,
        ),
        bad(
            "total length 0",
            with_be16(&v4, V4_L3 + ipv4::TOTAL_LEN_OFF, 0),
            Ipv4BadTotalLen,
        ),
        bad(
            "IHL 6, total length 23",
            with_be16(&v4_ihl6, V4_L3 + ipv4::TOTAL_LEN_OFF, 23),
            Ipv4BadTotalLen,
        ),
        bad(
            "IPv4 frame one byte short",
            v4[..v4.len() - 1].to_vec(),
            Ipv4LenExceedsFrame,
        ),
        bad(
            "total length one beyond the frame",
            with_be16(
                &v4,
                V4_L3 + ipv4::TOTAL_LEN_OFF,
                (v4.len() - V4_L3 + 1) as u16,
            ),
            Ipv4LenExceedsFrame,
        ),
        bad(
            "IPv4 cut right after the header",
            v4[..V4_L4].to_vec(),
            Ipv4LenExceedsFrame,
        ),
        bad("IPv6 with no header", v6[..V6_L3].to_vec(), Ipv6Truncated),
        bad(
            "IPv6 header 7 bytes",
            v6[..V6_L3 + 7].to_vec(),
            Ipv6Truncated,
        ),
        bad(
            "IPv6 header 39 bytes",
            v6[..V6_L3 + 39].to_vec(),
            Ipv6Truncated,
        ),
        bad(
            "IPv6 EtherType, version 4",
            with_u8(&v6, V6_L3, 0x46),
            Ipv6BadVersion,
        ),
        bad(
            "IPv6 frame one byte short",
            v6[..v6.len() - 1].to_vec(),
            Ipv6LenExceedsFrame,
        ),
        bad(
            "payload length one beyond the frame",
            with_be16(&v6, V6_L3 + 4, (v6.len() - V6_L4 + 1) as u16),
            Ipv6LenExceedsFrame,
        ),
        bad(
            "IPv4 payload of 7 bytes (frame padded)",
            ipv4_udp_raw(&[0; 7]),
            UdpTruncated,
        ),
        bad(
            "IPv4 payload of 7 bytes, frame ends there",
            ipv4_udp_raw(&[0; 7])[..V4_L4 + 7].to_vec(),
            UdpTruncated,
        ),
        bad("IPv4 payload empty", ipv4_udp_raw(&[]), UdpTruncated),
        bad(
            "IPv6 payload of 4 bytes",
            ipv6_udp_raw(&[0; 4]),
            UdpTruncated,
        ),
        bad("UDP length 7", with_be16(&v4, v4_ulen, 7), UdpBadLen),
        bad("UDP length 0", with_be16(&v4, v4_ulen, 0), UdpBadLen),
        bad(
            "UDP length beyond IPv4 payload",
            with_be16(&v4, v4_ulen, v4_ip_payload + 1),
            UdpBadLen,
        ),
        bad(
            "UDP length beyond IPv6 payload",
            with_be16(&v6, v6_ulen, v6_ip_payload + 1),
            UdpBadLen,
        ),
        bad(
            "UDP 4791 with 15 bytes (BTH + ICRC need 16)",
            build::udp_frame(&l2(), &ip4(), 1000, udp::ROCEV2_PORT, &[0; 15]),
            BthTruncated,
        ),
        bad(
            "UDP 4791 empty",
            build::udp_frame(&l2(), &ip4(), 1000, udp::ROCEV2_PORT, &[]),
            BthTruncated,
        ),
        bad(
            "UDP 4791 over IPv6 with a BTH but no ICRC",
            build::udp_frame(&l2(), &ip6(), 1000, udp::ROCEV2_PORT, &write_bth().encode()),
            BthTruncated,
        ),
        bad(
            "UDP 4793 empty",
            build::udp_frame(&l2(), &ip4(), UET_ENTROPY, uet::UET_PORT, &[]),
            UetTruncated,
        ),
        bad(
            "UDP 4793 over IPv6 with a RUD request cut to 11 bytes",
            build::udp_frame(
                &l2(),
                &ip6(),
                UET_ENTROPY,
                uet::UET_PORT,
                &uet_request()[..11],
            ),
            UetTruncated,
        ),
        bad(
            "MAC control without opcode",
            mac_ctl_no_opcode.clone(),
            MacCtlTruncated,
        ),
        bad(
            "MAC control with half an opcode",
            mac_ctl_frame(0x0101)[..15].to_vec(),
            MacCtlTruncated,
        ),
        bad(
            "PFC without the class-enable vector",
            pfc[..16].to_vec(),
            MacCtlTruncated,
        ),
        bad(
            "PFC with 7 of 8 times",
            pfc[..14 + 18].to_vec(),
            MacCtlTruncated,
        ),
        bad(
            "PFC one byte short",
            pfc[..14 + macctl::PFC_LEN - 1].to_vec(),
            MacCtlTruncated,
        ),
        bad("PAUSE without time", pause[..16].to_vec(), MacCtlTruncated),
        bad(
            "PAUSE one byte short",
            pause[..14 + macctl::PAUSE_LEN - 1].to_vec(),
            MacCtlTruncated,
        ),
    ]
}
