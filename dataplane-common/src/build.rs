//! A small packet builder for tests, fixtures, benchmarks and the testbed's
//! host emulator (host only, `user` feature).
//!
//! Frames are built the way a NIC would send them: IPv4 header checksum
//! filled in, RoCEv2 ICRC computed, padded to the 60-byte Ethernet minimum
//! (the IP length fields exclude the padding, as on the wire).

use alloc::vec::Vec;

use crate::wire::{bth, bth::Bth, csum, ethernet as eth, ipv4, macctl, udp};

/// Layer 2: addresses and up to two tags (TPID, PCP, VID), outer first.
#[derive(Clone, Debug)]
pub struct L2 {
    pub dst: [u8; 6],
    pub src: [u8; 6],
    pub tags: Vec<(u16, u8, u16)>,
}

impl L2 {
    pub fn new(dst: [u8; 6], src: [u8; 6]) -> Self {
        L2 {
            dst,
            src,
            tags: Vec::new(),
        }
    }

    /// Adds an 802.1Q tag.
    pub fn vlan(mut self, pcp: u8, vid: u16) -> Self {
        self.tags.push((eth::ETHERTYPE_VLAN, pcp, vid));
        self
    }

    /// Adds a tag with an explicit TPID (0x88a8 for an S-tag).
    pub fn tag(mut self, tpid: u16, pcp: u8, vid: u16) -> Self {
        self.tags.push((tpid, pcp, vid));
        self
    }
}

/// IP addresses of either family.
#[derive(Clone, Copy, Debug)]
pub enum Addrs {
    V4([u8; 4], [u8; 4]),
    V6([u8; 16], [u8; 16]),
}

/// Layer 3 settings.
#[derive(Clone, Debug)]
pub struct Ip {
    pub addrs: Addrs,
    pub dscp: u8,
    pub ecn: u8,
    pub ttl: u8,
    /// IPv4 options (padded to a multiple of 4 by the caller).
    pub options: Vec<u8>,
}

impl Ip {
    pub fn v4(src: [u8; 4], dst: [u8; 4]) -> Self {
        Ip {
            addrs: Addrs::V4(src, dst),
            dscp: 0,
            ecn: 0,
            ttl: 64,
            options: Vec::new(),
        }
    }

    pub fn v6(src: [u8; 16], dst: [u8; 16]) -> Self {
        Ip {
            addrs: Addrs::V6(src, dst),
            dscp: 0,
            ecn: 0,
            ttl: 64,
            options: Vec::new(),
        }
    }

    pub fn dscp(mut self, dscp: u8) -> Self {
        self.dscp = dscp;
        self
    }

    pub fn ecn(mut self, ecn: u8) -> Self {
        self.ecn = ecn;
        self
    }

    pub fn ttl(mut self, ttl: u8) -> Self {
        self.ttl = ttl;
        self
    }

    pub fn options(mut self, options: &[u8]) -> Self {
        self.options = options.to_vec();
        self
    }
}

/// An Ethernet frame around `payload`, padded to 60 bytes.
pub fn frame(l2: &L2, ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(64 + payload.len());
    f.extend_from_slice(&l2.dst);
    f.extend_from_slice(&l2.src);
    for &(tpid, pcp, vid) in &l2.tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&((u16::from(pcp & 7) << 13) | (vid & 0x0fff)).to_be_bytes());
    }
    f.extend_from_slice(&ethertype.to_be_bytes());
    f.extend_from_slice(payload);
    if f.len() < macctl::MIN_FRAME {
        f.resize(macctl::MIN_FRAME, 0);
    }
    f
}

/// An IP packet (header + `l4`) with protocol `proto`.
pub fn ip_packet(ip: &Ip, proto: u8, l4: &[u8]) -> Vec<u8> {
    let tos = (ip.dscp << 2) | (ip.ecn & 3);
    match ip.addrs {
        Addrs::V4(src, dst) => {
            let hlen = 20 + ip.options.len();
            let total = (hlen + l4.len()) as u16;
            let mut h = Vec::with_capacity(hlen + l4.len());
            h.push(0x40 | (hlen / 4) as u8);
            h.push(tos);
            h.extend_from_slice(&total.to_be_bytes());
            h.extend_from_slice(&[0x12, 0x34, 0x40, 0x00]); // id, DF
            h.push(ip.ttl);
            h.push(proto);
            h.extend_from_slice(&[0, 0]);
            h.extend_from_slice(&src);
            h.extend_from_slice(&dst);
            h.extend_from_slice(&ip.options);
            let c = csum::internet(&h[..hlen]);
            h[ipv4::CHECKSUM_OFF..ipv4::CHECKSUM_OFF + 2].copy_from_slice(&c.to_be_bytes());
            h.extend_from_slice(l4);
            h
        }
        Addrs::V6(src, dst) => {
            let mut h = Vec::with_capacity(40 + l4.len());
            h.push(0x60 | (tos >> 4));
            h.push((tos << 4) | 0x0a); // flow label 0xa_bcde
            h.extend_from_slice(&[0xbc, 0xde]);
            h.extend_from_slice(&(l4.len() as u16).to_be_bytes());
            h.push(proto);
            h.push(ip.ttl);
            h.extend_from_slice(&src);
            h.extend_from_slice(&dst);
            h.extend_from_slice(l4);
            h
        }
    }
}

/// A UDP datagram. The checksum is 0 over IPv4 (as RoCEv2 NICs send it) and
/// computed over IPv6, where it is mandatory.
pub fn udp_datagram(addrs: &Addrs, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let len = (udp::HEADER_LEN + payload.len()) as u16;
    let mut d = Vec::with_capacity(len as usize);
    d.extend_from_slice(&sport.to_be_bytes());
    d.extend_from_slice(&dport.to_be_bytes());
    d.extend_from_slice(&len.to_be_bytes());
    d.extend_from_slice(&[0, 0]);
    d.extend_from_slice(payload);
    if let Addrs::V6(src, dst) = addrs {
        let mut pseudo = Vec::with_capacity(40 + d.len());
        pseudo.extend_from_slice(src);
        pseudo.extend_from_slice(dst);
        pseudo.extend_from_slice(&u32::from(len).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, ipv4::PROTO_UDP]);
        pseudo.extend_from_slice(&d);
        let mut c = csum::internet(&pseudo);
        if c == 0 {
            c = 0xffff;
        }
        d[udp::CHECKSUM_OFF..udp::CHECKSUM_OFF + 2].copy_from_slice(&c.to_be_bytes());
    }
    d
}

/// RETH: virtual address, rkey, DMA length.
#[derive(Clone, Copy, Debug)]
pub struct Reth {
    pub va: u64,
    pub rkey: u32,
    pub len: u32,
}

/// A RoCEv2 IP packet: IP / UDP (sport → 4791) / BTH / [RETH] / payload /
/// ICRC.
pub fn rocev2_packet(ip: &Ip, sport: u16, b: &Bth, reth: Option<Reth>, payload: &[u8]) -> Vec<u8> {
    let mut l5 = Vec::with_capacity(bth::HEADER_LEN + bth::RETH_LEN + payload.len() + 4);
    l5.extend_from_slice(&b.encode());
    if let Some(r) = reth {
        l5.extend_from_slice(&r.va.to_be_bytes());
        l5.extend_from_slice(&r.rkey.to_be_bytes());
        l5.extend_from_slice(&r.len.to_be_bytes());
    }
    l5.extend_from_slice(payload);
    // ICRC placeholder so the UDP/IP lengths include it
    l5.extend_from_slice(&[0; bth::ICRC_LEN]);
    let dgram = udp_datagram(&ip.addrs, sport, udp::ROCEV2_PORT, &l5);
    let mut pkt = ip_packet(ip, ipv4::PROTO_UDP, &dgram);
    let n = pkt.len();
    let crc = bth::icrc(&pkt[..n - bth::ICRC_LEN]).unwrap_or([0; 4]);
    pkt[n - bth::ICRC_LEN..].copy_from_slice(&crc);
    if let Addrs::V6(src, dst) = ip.addrs {
        // the UDP checksum above covered a zero ICRC: recompute it
        let l4 = pkt[40..].to_vec();
        let mut zeroed = l4.clone();
        zeroed[udp::CHECKSUM_OFF] = 0;
        zeroed[udp::CHECKSUM_OFF + 1] = 0;
        let sport = u16::from_be_bytes([zeroed[0], zeroed[1]]);
        let fixed = udp_datagram(
            &Addrs::V6(src, dst),
            sport,
            udp::ROCEV2_PORT,
            &zeroed[udp::HEADER_LEN..],
        );
        pkt[40..].copy_from_slice(&fixed);
    }
    pkt
}

/// A RoCEv2 Ethernet frame.
pub fn rocev2_frame(
    l2: &L2,
    ip: &Ip,
    sport: u16,
    b: &Bth,
    reth: Option<Reth>,
    payload: &[u8],
) -> Vec<u8> {
    let et = match ip.addrs {
        Addrs::V4(..) => eth::ETHERTYPE_IPV4,
        Addrs::V6(..) => eth::ETHERTYPE_IPV6,
    };
    frame(l2, et, &rocev2_packet(ip, sport, b, reth, payload))
}

/// A CNP for `dest_qp` (BTH opcode 0x81, BECN set, 16 reserved bytes).
pub fn cnp_frame(l2: &L2, ip: &Ip, sport: u16, dest_qp: u32) -> Vec<u8> {
    let b = Bth {
        opcode: bth::OP_CNP,
        becn: true,
        pkey: 0xffff,
        dest_qp,
        ..Bth::default()
    };
    rocev2_frame(l2, ip, sport, &b, None, &[0; bth::CNP_PAYLOAD_LEN])
}

/// A UDP frame (not RoCEv2 unless `dport` is 4791).
pub fn udp_frame(l2: &L2, ip: &Ip, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let et = match ip.addrs {
        Addrs::V4(..) => eth::ETHERTYPE_IPV4,
        Addrs::V6(..) => eth::ETHERTYPE_IPV6,
    };
    let d = udp_datagram(&ip.addrs, sport, dport, payload);
    frame(l2, et, &ip_packet(ip, ipv4::PROTO_UDP, &d))
}

/// An 802.1Qbb PFC frame from `src` (the sending port's own MAC).
pub fn pfc_frame(src: [u8; 6], class_enable: u16, times: [u16; 8]) -> Vec<u8> {
    let mut p = Vec::with_capacity(macctl::PFC_LEN);
    p.extend_from_slice(&macctl::OPCODE_PFC.to_be_bytes());
    p.extend_from_slice(&class_enable.to_be_bytes());
    for t in times {
        p.extend_from_slice(&t.to_be_bytes());
    }
    frame(
        &L2::new(macctl::DST_MAC, src),
        eth::ETHERTYPE_MAC_CONTROL,
        &p,
    )
}

/// An 802.3x PAUSE frame from `src`.
pub fn pause_frame(src: [u8; 6], time: u16) -> Vec<u8> {
    let mut p = Vec::with_capacity(macctl::PAUSE_LEN);
    p.extend_from_slice(&macctl::OPCODE_PAUSE.to_be_bytes());
    p.extend_from_slice(&time.to_be_bytes());
    frame(
        &L2::new(macctl::DST_MAC, src),
        eth::ETHERTYPE_MAC_CONTROL,
        &p,
    )
}
