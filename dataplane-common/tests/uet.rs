//! UET over UDP 4793: the PDS header's boundaries, its fields, and the
//! classification of UET traffic beside RoCEv2.
#![cfg(feature = "user")]

mod common;

use common::*;
use dataplane_common::build;
use dataplane_common::classify::{classify, traffic_class, Rule};
use dataplane_common::maps::{PortConfig, UET_FEEDBACK_TC_SET};
use dataplane_common::parse::{parse, ParseError, Parsed};
use dataplane_common::wire::uet::{self, Pds};

fn ok(f: &[u8]) -> Parsed {
    parse(f).unwrap_or_else(|e| panic!("{e:?}"))
}

/// A UDP 4793 frame whose payload is `pds`.
fn pds_frame(ip: &build::Ip, pds: &[u8]) -> Vec<u8> {
    build::udp_frame(&l2(), ip, UET_ENTROPY, uet::UET_PORT, pds)
}

/// A PDS header of type `t`, `len` bytes, bytes 4-7 = 0x01020304.
fn header(t: u8, len: usize) -> Vec<u8> {
    let mut h = vec![0u8; len];
    let pro = Pds {
        ptype: t,
        next: 0,
        flags: 0,
        psn: 0,
    }
    .prologue()
    .to_be_bytes();
    h[..2.min(len)].copy_from_slice(&pro[..2.min(len)]);
    for (i, b) in [1u8, 2, 3, 4].iter().enumerate() {
        if 4 + i < len {
            h[4 + i] = *b;
        }
    }
    h
}

mod boundaries {
    use super::*;

    #[test]
    fn every_pds_shorter_than_its_types_fixed_header_is_uet_truncated() {
        for t in 0..32u8 {
            let need = uet::fixed_len(t);
            for ip in [ip4(), ip6()] {
                for n in 0..need {
                    let f = pds_frame(&ip, &header(t, n));
                    assert_eq!(
                        parse(&f[..]),
                        Err(ParseError::UetTruncated),
                        "type {t}, {n} of {need} bytes"
                    );
                }
                let p = ok(&pds_frame(&ip, &header(t, need)));
                assert!(p.uet && !p.roce, "type {t} at {need} bytes");
                assert_eq!(p.pds.ptype, t);
                let psn = if uet::has_psn(t) { 0x0102_0304 } else { 0 };
                assert_eq!(p.pds.psn, psn, "type {t}");
            }
        }
    }

    #[test]
    fn fixed_lengths_are_those_the_sources_agree_on() {
        use uet::*;
        let want = [
            (TYPE_UUD_REQ, 4),
            (TYPE_RUDI_REQ, 8),
            (TYPE_RUDI_RESP, 8),
            (TYPE_RUD_REQ, 12),
            (TYPE_ROD_REQ, 12),
            (TYPE_ACK, 12),
            (TYPE_ACK_CCX, 12),
            (TYPE_CONTROL, 12),
            (TYPE_NACK, 16),
            (TYPE_NACK_CCX, 16),
            (TYPE_RUD_CC_REQ, 16),
            (TYPE_ROD_CC_REQ, 16),
            (TYPE_ACK_CC, 32),
            (TYPE_TSS, 2),
            (0, 2),
            (15, 2),
            (31, 2),
        ];
        for (t, n) in want {
            assert_eq!(fixed_len(t), n, "type {t}");
        }
    }

    #[test]
    fn the_udp_length_not_the_frame_bounds_the_pds() {
        // a 12-byte request whose UDP length says 8 + 11: the 12th byte is
        // frame padding, not PDS
        let f = uet_frame(&ip4(), UET_ENTROPY, 0);
        let ulen_off = V4_L4 + 4;
        let short = with_be16(&f, ulen_off, 8 + 11);
        assert_eq!(parse(&short[..]), Err(ParseError::UetTruncated));
        let exact = with_be16(&f, ulen_off, 8 + 12);
        assert!(ok(&exact).uet);
    }

    #[test]
    fn another_udp_port_with_a_pds_is_plain_udp() {
        let mut pl = uet_request().to_vec();
        pl.truncate(3);
        for port in [4791 + 1, 4794, 5432] {
            let p = ok(&build::udp_frame(&l2(), &ip4(), UET_ENTROPY, port, &pl));
            assert!(p.udp && !p.uet && !p.roce, "port {port}");
        }
    }
}

mod fields {
    use super::*;

    #[test]
    fn a_rud_request_decodes_over_ipv4_and_ipv6() {
        for ip in [ip4(), ip6()] {
            let p = ok(&uet_frame(&ip.dscp(26), 0x1234, 100));
            assert!(p.udp && p.uet && !p.roce);
            assert_eq!(p.uet_entropy(), 0x1234);
            assert_eq!(p.dport, uet::UET_PORT);
            assert_eq!(
                p.pds,
                Pds {
                    ptype: uet::TYPE_RUD_REQ,
                    next: 3,
                    flags: uet::FLAG_AR,
                    psn: UET_PSN,
                }
            );
            assert_eq!(p.dscp, 26);
        }
    }

    #[test]
    fn the_prologue_bits_are_type_5_next_4_flags_7() {
        // 0b00111_0101_0010100: type 7 (ACK), next 5, flags M|AR|SYN... 0x14
        let v: u16 = (7 << 11) | (5 << 7) | 0x14;
        let p = Pds::decode(v, 9);
        assert_eq!((p.ptype, p.next, p.flags, p.psn), (7, 5, 0x14, 9));
        assert_eq!(p.prologue(), v);
        assert_eq!(v.to_be_bytes(), [0x3a, 0x94]);
        // every bit pattern round-trips
        for v in (0..=u16::MAX).step_by(7) {
            assert_eq!(Pds::decode(v, 0).prologue(), v);
        }
    }

    #[test]
    fn feedback_types_are_ack_nack_and_control() {
        let fb: Vec<u8> = (0..32u8)
            .filter(|&t| {
                Pds {
                    ptype: t,
                    ..Pds::default()
                }
                .is_feedback()
            })
            .collect();
        assert_eq!(fb, vec![7, 8, 9, 10, 11, 12]);
    }

    #[test]
    fn a_first_fragment_holding_the_pds_is_uet() {
        let whole = uet_frame(&ip4(), UET_ENTROPY, 900);
        let ip_len = 60;
        let mut f = whole[..14 + ip_len].to_vec();
        f[16..18].copy_from_slice(&(ip_len as u16).to_be_bytes());
        f[20] = 0x20; // MF
        let p = ok(&f);
        assert!(p.first_fragment && p.uet);
        assert_eq!(p.pds.psn, UET_PSN);
        // a first fragment cut inside the PDS header is truncated
        let ip_len = 20 + 8 + 10;
        let mut g = whole[..14 + ip_len].to_vec();
        g[16..18].copy_from_slice(&(ip_len as u16).to_be_bytes());
        g[20] = 0x20;
        assert_eq!(parse(&g[..]), Err(ParseError::UetTruncated));
    }
}

mod classes {
    use super::*;

    fn cfg() -> PortConfig {
        let mut c = PortConfig::azure(0);
        c.dscp_to_tc[26] = 3;
        c.dscp_to_tc[10] = 1;
        c.pfc_enable = 1 << 3;
        c
    }

    fn ack(dscp: u8) -> Vec<u8> {
        let mut h = header(uet::TYPE_ACK, 12);
        h[1] |= uet::FLAG_M;
        pds_frame(&ip4().dscp(dscp), &h)
    }

    #[test]
    fn uet_data_is_classified_by_dscp_like_roce() {
        let c = cfg();
        let p = ok(&uet_frame(&ip4().dscp(26), 7, 64));
        let k = classify(&p, &c);
        assert_eq!((k.tc, k.lossless, k.uet, k.roce), (3, true, true, false));
        let p = ok(&uet_frame(&ip6().dscp(10), 7, 64));
        let k = classify(&p, &c);
        assert_eq!((k.tc, k.lossless, k.uet), (1, false, true));
    }

    #[test]
    fn feedback_follows_dscp_unless_a_feedback_class_is_set() {
        let mut c = cfg();
        assert_eq!(traffic_class(&ok(&ack(10)), &c), (1, Rule::Dscp));
        c.uet_feedback_tc = UET_FEEDBACK_TC_SET | 6;
        assert_eq!(traffic_class(&ok(&ack(10)), &c), (6, Rule::UetFeedback));
        // data keeps its DSCP class
        let data = ok(&uet_frame(&ip4().dscp(10), 7, 0));
        assert_eq!(traffic_class(&data, &c), (1, Rule::Dscp));
        // the class bits without the set bit mean nothing
        c.uet_feedback_tc = 6;
        assert_eq!(traffic_class(&ok(&ack(10)), &c), (1, Rule::Dscp));
    }
}
