//! The shared parser: one defined error per header boundary, and the fields
//! later stages key on for every frame shape we accept.
#![cfg(feature = "user")]

mod common;

use common::*;
use dataplane_common::build::{self, Reth};
use dataplane_common::parse::{parse, ParseError, Parsed, L3, PARSE_ERROR_COUNT};
use dataplane_common::wire::bth::{self, Bth};
use dataplane_common::wire::{ethernet as eth, ipv4, macctl, udp};

fn ok(f: &[u8]) -> Parsed {
    match parse(f) {
        Ok(p) => p,
        Err(e) => panic!("expected a parse, got {e:?} for {} bytes", f.len()),
    }
}

mod errors {
    use super::*;

    #[test]
    fn each_malformed_frame_fails_at_its_boundary() {
        for m in malformed_corpus() {
            assert_eq!(parse(m.frame.as_slice()), Err(m.error), "{}", m.what);
        }
    }

    #[test]
    fn the_corpus_produces_every_error_variant() {
        let corpus = malformed_corpus();
        for e in ParseError::ALL {
            assert!(
                corpus.iter().any(|m| m.error == e),
                "no frame produces {e:?}"
            );
        }
    }

    #[test]
    fn every_ethernet_prefix_shorter_than_the_header_is_eth_truncated() {
        let f = roce_v4();
        for n in 0..eth::HEADER_LEN {
            assert_eq!(parse(&f[..n]), Err(ParseError::EthTruncated), "{n} bytes");
        }
    }

    #[test]
    fn every_vlan_prefix_shorter_than_the_tag_is_vlan_truncated() {
        for l2 in [
            l2_tagged(5, 100),
            l2_qinq(3, 200, 5, 100),
            l2().tag(eth::ETHERTYPE_QINQ, 1, 1),
        ] {
            let f = roce_frame(&l2, &ip4());
            for n in eth::HEADER_LEN..eth::HEADER_LEN + eth::TAG_LEN {
                assert_eq!(parse(&f[..n]), Err(ParseError::VlanTruncated), "{n} bytes");
            }
        }
    }

    #[test]
    fn every_ipv4_header_prefix_is_ipv4_truncated() {
        let f = roce_v4();
        for n in V4_L3..V4_L4 {
            assert_eq!(parse(&f[..n]), Err(ParseError::Ipv4Truncated), "{n} bytes");
        }
    }

    #[test]
    fn every_ipv4_version_but_4_is_rejected() {
        let f = roce_v4();
        for v in (0u8..16).filter(|&v| v != 4) {
            let bad = with_u8(&f, V4_L3, (v << 4) | 5);
            assert_eq!(
                parse(bad.as_slice()),
                Err(ParseError::Ipv4BadVersion),
                "version {v}"
            );
        }
    }

    #[test]
    fn every_ihl_below_5_is_rejected() {
        let f = roce_v4();
        for ihl in 0u8..5 {
            let bad = with_u8(&f, V4_L3, 0x40 | ihl);
            assert_eq!(
                parse(bad.as_slice()),
                Err(ParseError::Ipv4BadIhl),
                "IHL {ihl}"
            );
        }
    }

    #[test]
    fn every_options_prefix_is_options_truncated() {
        for words in 1..=10usize {
            let f = roce_frame(&l2(), &ip4().options(&vec![1; 4 * words]));
            let hlen = 20 + 4 * words;
            for n in V4_L4..V4_L3 + hlen {
                assert_eq!(
                    parse(&f[..n]),
                    Err(ParseError::Ipv4OptionsTruncated),
                    "IHL {}, {n} bytes",
                    5 + words
                );
            }
            // the whole header present: the next check (total length) fires
            assert_eq!(
                parse(&f[..V4_L3 + hlen]),
                Err(ParseError::Ipv4LenExceedsFrame)
            );
        }
    }

    #[test]
    fn every_total_length_below_the_header_is_bad_total_len() {
        let f = roce_frame(&l2(), &ip4().options(&[1; 8]));
        for total in 0u16..28 {
            let bad = with_be16(&f, V4_L3 + ipv4::TOTAL_LEN_OFF, total);
            assert_eq!(
                parse(bad.as_slice()),
                Err(ParseError::Ipv4BadTotalLen),
                "total {total}"
            );
        }
        // exactly the header: no UDP header left
        let bare = with_be16(&f, V4_L3 + ipv4::TOTAL_LEN_OFF, 28);
        assert_eq!(parse(bare.as_slice()), Err(ParseError::UdpTruncated));
    }

    #[test]
    fn every_ipv4_prefix_shorter_than_the_total_length_is_len_exceeds_frame() {
        let f = roce_v4();
        for n in V4_L4..f.len() {
            assert_eq!(
                parse(&f[..n]),
                Err(ParseError::Ipv4LenExceedsFrame),
                "{n} bytes"
            );
        }
        assert!(parse(f.as_slice()).is_ok());
    }

    #[test]
    fn every_ipv6_header_prefix_is_ipv6_truncated() {
        let f = roce_v6();
        for n in V6_L3..V6_L4 {
            assert_eq!(parse(&f[..n]), Err(ParseError::Ipv6Truncated), "{n} bytes");
        }
    }

    #[test]
    fn every_ipv6_version_but_6_is_rejected() {
        let f = roce_v6();
        for v in (0u8..16).filter(|&v| v != 6) {
            let bad = with_u8(&f, V6_L3, (v << 4) | (f[V6_L3] & 0x0f));
            assert_eq!(
                parse(bad.as_slice()),
                Err(ParseError::Ipv6BadVersion),
                "version {v}"
            );
        }
    }

    #[test]
    fn every_ipv6_prefix_shorter_than_the_payload_is_len_exceeds_frame() {
        let f = roce_v6();
        for n in V6_L4..f.len() {
            assert_eq!(
                parse(&f[..n]),
                Err(ParseError::Ipv6LenExceedsFrame),
                "{n} bytes"
            );
        }
    }

    #[test]
    fn ip_payloads_shorter_than_a_udp_header_are_udp_truncated() {
        for n in 0..udp::HEADER_LEN {
            let l4 = vec![0x11; n];
            assert_eq!(
                parse(ipv4_udp_raw(&l4).as_slice()),
                Err(ParseError::UdpTruncated),
                "IPv4, {n} bytes"
            );
            assert_eq!(
                parse(ipv6_udp_raw(&l4).as_slice()),
                Err(ParseError::UdpTruncated),
                "IPv6, {n} bytes"
            );
        }
    }

    #[test]
    fn udp_lengths_outside_8_to_ip_payload_are_bad_len() {
        let f = roce_v4();
        let off = V4_L4 + udp::LEN_OFF;
        let ip_payload = (f.len() - V4_L4) as u16;
        for ulen in (0..8).chain([ip_payload + 1, ip_payload + 100, u16::MAX]) {
            assert_eq!(
                parse(with_be16(&f, off, ulen).as_slice()),
                Err(ParseError::UdpBadLen),
                "UDP length {ulen}"
            );
        }
        // a UDP length below the IP payload is accepted (trailing bytes)
        let shorter = with_be16(&f, off, ip_payload - 1);
        assert!(ok(&shorter).roce);
    }

    #[test]
    fn udp_4791_shorter_than_bth_and_icrc_is_bth_truncated() {
        for n in 0..bth::HEADER_LEN + bth::ICRC_LEN {
            let payload = vec![0; n];
            for ip in [ip4(), ip6()] {
                let f = build::udp_frame(&l2(), &ip, 1000, udp::ROCEV2_PORT, &payload);
                assert_eq!(
                    parse(f.as_slice()),
                    Err(ParseError::BthTruncated),
                    "{n} bytes of payload"
                );
            }
        }
        // 16 bytes is a BTH and an ICRC
        let f = build::udp_frame(&l2(), &ip4(), 1000, udp::ROCEV2_PORT, &[0; 16]);
        assert!(ok(&f).roce);
    }

    #[test]
    fn the_same_short_payload_on_another_port_is_fine() {
        let f = build::udp_frame(&l2(), &ip4(), udp::ROCEV2_PORT, 4790, &[0; 3]);
        let p = ok(&f);
        assert!(p.udp);
        assert!(!p.roce);
        assert_eq!((p.sport, p.dport), (udp::ROCEV2_PORT, 4790));
    }

    #[test]
    fn every_pfc_prefix_shorter_than_its_fields_is_mac_ctl_truncated() {
        let f = build::pfc_frame(SRC_MAC, 0x00ff, [1; 8]);
        for n in eth::HEADER_LEN..eth::HEADER_LEN + macctl::PFC_LEN {
            assert_eq!(
                parse(&f[..n]),
                Err(ParseError::MacCtlTruncated),
                "{n} bytes"
            );
        }
        assert!(parse(&f[..eth::HEADER_LEN + macctl::PFC_LEN]).is_ok());
    }

    #[test]
    fn every_pause_prefix_shorter_than_its_fields_is_mac_ctl_truncated() {
        let f = build::pause_frame(SRC_MAC, 7);
        for n in eth::HEADER_LEN..eth::HEADER_LEN + macctl::PAUSE_LEN {
            assert_eq!(
                parse(&f[..n]),
                Err(ParseError::MacCtlTruncated),
                "{n} bytes"
            );
        }
        assert!(parse(&f[..eth::HEADER_LEN + macctl::PAUSE_LEN]).is_ok());
    }

    #[test]
    fn errors_index_the_counter_array_in_declaration_order() {
        assert!(ParseError::ALL.len() <= PARSE_ERROR_COUNT);
        for (i, e) in ParseError::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i, "{e:?}");
        }
    }

    #[test]
    fn error_names_are_distinct_snake_case() {
        let names: Vec<&str> = ParseError::ALL.iter().map(|e| e.name()).collect();
        for (i, n) in names.iter().enumerate() {
            assert!(!n.is_empty());
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{n}"
            );
            assert!(!names[..i].contains(n), "duplicate name {n}");
        }
        assert_eq!(
            ParseError::Ipv4OptionsTruncated.name(),
            "ipv4_options_truncated"
        );
        assert_eq!(ParseError::MacCtlTruncated.name(), "mac_ctl_truncated");
    }
}

mod l2_frames {
    use super::*;

    #[test]
    fn untagged_rocev2_ipv4() {
        let f = roce_v4();
        let p = ok(&f);
        assert_eq!(usize::from(p.frame_len), f.len());
        assert_eq!(p.ethertype, eth::ETHERTYPE_IPV4);
        assert!(!p.vlan);
        assert!(!p.qinq);
        assert_eq!((p.pcp, p.vid), (0, 0));
        assert_eq!(p.l3, L3::Ipv4);
        assert_eq!(usize::from(p.l3_off), V4_L3);
        assert_eq!(usize::from(p.l4_off), V4_L4);
    }

    #[test]
    fn one_tag_gives_pcp_vid_and_shifts_offsets_by_four() {
        let f = roce_frame(&l2_tagged(5, 0x0abc), &ip4().dscp(26));
        let p = ok(&f);
        assert!(p.vlan);
        assert!(!p.qinq);
        assert_eq!(p.pcp, 5);
        assert_eq!(p.vid, 0x0abc);
        assert_eq!(p.ethertype, eth::ETHERTYPE_IPV4);
        assert_eq!(p.l3_off, 18);
        assert_eq!(p.l4_off, 38);
        assert_eq!(p.dscp, 26);
        assert!(p.roce);
        assert_eq!(p.bth, write_bth());
    }

    #[test]
    fn tag_with_every_pcp_and_extreme_vids() {
        for pcp in 0..8 {
            for vid in [0, 1, 0x0fff] {
                let p = ok(&roce_frame(&l2_tagged(pcp, vid), &ip6()));
                assert_eq!((p.pcp, p.vid), (pcp, vid));
                assert_eq!(p.l4_off, 18 + 40);
            }
        }
    }

    #[test]
    fn a_single_s_tag_is_parsed_like_a_c_tag() {
        let f = roce_frame(&l2().tag(eth::ETHERTYPE_QINQ, 2, 300), &ip4());
        let p = ok(&f);
        assert!(p.vlan);
        assert!(!p.qinq);
        assert_eq!((p.pcp, p.vid), (2, 300));
        assert!(p.roce);
    }

    #[test]
    fn qinq_reports_the_outer_tag_and_stops() {
        let f = roce_frame(&l2_qinq(3, 200, 6, 100), &ip4().dscp(46));
        let p = ok(&f);
        assert!(p.qinq);
        assert!(p.vlan);
        assert_eq!((p.pcp, p.vid), (3, 200));
        assert_eq!(p.ethertype, eth::ETHERTYPE_VLAN);
        assert_eq!(p.l3, L3::Other);
        assert_eq!(p.l3_off, 18);
        assert_eq!(p.l4_off, 0);
        assert!(!p.udp);
        assert!(!p.roce);
        assert_eq!(p.dscp, 0, "the inner IP header is not read");
        assert_eq!(p.bth, Bth::default());
    }

    #[test]
    fn two_c_tags_are_qinq_too() {
        let p = ok(&roce_frame(&l2_tagged(1, 10).vlan(2, 20), &ip4()));
        assert!(p.qinq);
        assert_eq!((p.pcp, p.vid), (1, 10));
    }

    #[test]
    fn arp_is_other_and_not_parsed_further() {
        let f = arp_frame(&l2());
        let p = ok(&f);
        assert_eq!(p.l3, L3::Other);
        assert_eq!(p.ethertype, eth::ETHERTYPE_ARP);
        assert_eq!(p.l3_off, 14);
        assert_eq!(p.l4_off, 0);
        assert_eq!(p.frame_len, 60);
        assert!(!p.udp && !p.roce);
    }

    #[test]
    fn tagged_arp_keeps_its_tag() {
        let p = ok(&arp_frame(&l2_tagged(7, 4094)));
        assert_eq!(p.l3, L3::Other);
        assert_eq!(p.ethertype, eth::ETHERTYPE_ARP);
        assert_eq!((p.vlan, p.pcp, p.vid), (true, 7, 4094));
        assert_eq!(p.l3_off, 18);
    }

    #[test]
    fn a_bare_ethernet_header_with_unknown_ethertype_parses() {
        let f = build::frame(&l2(), 0x88cc, &[])[..14].to_vec();
        let p = ok(&f);
        assert_eq!(p.ethertype, 0x88cc);
        assert_eq!(p.l3, L3::Other);
        assert_eq!(p.frame_len, 14);
    }
}

mod ipv4_frames {
    use super::*;

    #[test]
    fn rocev2_fields() {
        let f = roce_frame(&l2(), &ip4().dscp(26).ecn(2));
        let p = ok(&f);
        assert_eq!(p.l3, L3::Ipv4);
        assert_eq!(p.dscp, 26);
        assert_eq!(p.ecn, 2);
        assert_eq!(p.ip_proto, ipv4::PROTO_UDP);
        assert!(!p.later_fragment);
        assert_eq!(
            usize::from(p.ip_payload_len),
            udp::HEADER_LEN + ROCE_UDP_PAYLOAD_LEN
        );
        assert!(p.udp);
        assert_eq!(p.sport, ROCE_SPORT);
        assert_eq!(p.dport, udp::ROCEV2_PORT);
        assert!(p.roce);
        assert_eq!(p.bth.opcode, bth::OP_WRITE_ONLY);
        assert_eq!(p.bth.pkey, 0x8001);
        assert_eq!(p.bth.dest_qp, 0x00ab_cd12);
        assert_eq!(p.bth.psn, 0x0012_3456);
        assert!(p.bth.ack_req);
        assert!(!p.bth.fecn && !p.bth.becn);
        assert_eq!(p.l3, L3::Ipv4);
        assert_eq!(p.mac_ctl, Default::default());
    }

    #[test]
    fn every_dscp_and_ecn_is_extracted() {
        for dscp in 0..64 {
            for ecn in 0..4 {
                let p = ok(&build::udp_frame(
                    &l2(),
                    &ip4().dscp(dscp).ecn(ecn),
                    1,
                    2,
                    &[],
                ));
                assert_eq!((p.dscp, p.ecn), (dscp, ecn));
            }
        }
    }

    #[test]
    fn options_move_the_l4_header_for_every_ihl() {
        for words in 1..=10usize {
            let opts: Vec<u8> = (0..4 * words as u8).collect();
            let f = roce_frame(&l2_tagged(4, 7), &ip4().dscp(3).options(&opts));
            assert_eq!(f[18] & 0x0f, 5 + words as u8, "builder IHL");
            let p = ok(&f);
            assert_eq!(p.l3_off, 18);
            assert_eq!(
                usize::from(p.l4_off),
                18 + 20 + 4 * words,
                "IHL {}",
                5 + words
            );
            assert_eq!(p.dscp, 3);
            assert!(p.roce, "IHL {}", 5 + words);
            assert_eq!(p.sport, ROCE_SPORT);
            assert_eq!(p.bth, write_bth());
            assert_eq!(
                usize::from(p.ip_payload_len),
                udp::HEADER_LEN + ROCE_UDP_PAYLOAD_LEN
            );
        }
    }

    #[test]
    fn cnp_has_opcode_0x81_and_becn() {
        let f = build::cnp_frame(&l2(), &ip4().dscp(48), 0xc001, 0x00fe_dcba);
        let p = ok(&f);
        assert!(p.roce);
        assert_eq!(p.bth.opcode, bth::OP_CNP);
        assert!(p.bth.is_cnp());
        assert!(p.bth.becn);
        assert!(!p.bth.fecn);
        assert_eq!(p.bth.dest_qp, 0x00fe_dcba);
        assert_eq!(p.bth.pkey, 0xffff);
        assert_eq!(p.sport, 0xc001);
        assert_eq!(
            usize::from(p.ip_payload_len),
            udp::HEADER_LEN + bth::HEADER_LEN + bth::CNP_PAYLOAD_LEN + bth::ICRC_LEN
        );
    }

    #[test]
    fn later_fragments_carry_no_udp() {
        let f = roce_v4();
        for frag in [0x0001, 0x2001, 0x1000, 0x1fff, 0x4100] {
            let p = ok(&with_be16(&f, V4_L3 + ipv4::FRAG_OFF, frag));
            assert!(p.later_fragment, "frag field {frag:#06x}");
            assert!(!p.udp);
            assert!(!p.roce);
            assert_eq!((p.sport, p.dport), (0, 0));
            assert_eq!(p.bth, Bth::default());
            assert_eq!(p.ip_proto, ipv4::PROTO_UDP);
        }
    }

    #[test]
    fn first_fragment_and_flags_only_are_parsed() {
        let f = roce_v4();
        for frag in [0x0000, 0x2000, 0x4000, 0xe000] {
            let p = ok(&with_be16(&f, V4_L3 + ipv4::FRAG_OFF, frag));
            assert!(!p.later_fragment, "frag field {frag:#06x}");
            assert!(p.roce);
        }
    }

    #[test]
    fn a_later_fragment_is_not_checked_for_a_udp_header() {
        // total length = header only, which would be UdpTruncated unfragmented
        let f = with_be16(&roce_v4(), V4_L3 + ipv4::TOTAL_LEN_OFF, 20);
        assert_eq!(parse(f.as_slice()), Err(ParseError::UdpTruncated));
        let p = ok(&with_be16(&f, V4_L3 + ipv4::FRAG_OFF, 0x0010));
        assert!(p.later_fragment);
        assert_eq!(p.ip_payload_len, 0);
    }

    #[test]
    fn padding_beyond_the_total_length_is_ignored() {
        let f = build::udp_frame(&l2(), &ip4().dscp(10), 1234, 5678, &[9, 9, 9, 9]);
        assert_eq!(f.len(), macctl::MIN_FRAME);
        assert_eq!(
            u16::from_be_bytes([f[16], f[17]]),
            20 + 8 + 4,
            "builder total length"
        );
        let p = ok(&f);
        assert_eq!(p.frame_len, 60);
        assert_eq!(p.ip_payload_len, 12);
        assert!(p.udp);
        assert!(!p.roce);
        assert_eq!((p.sport, p.dport), (1234, 5678));
        assert_eq!(p.dscp, 10);
    }

    #[test]
    fn padding_does_not_stretch_a_short_rocev2_udp_length() {
        // a 4791 datagram of 20 bytes in a padded 60-byte frame is still short
        let f = build::udp_frame(&l2(), &ip4(), 1, udp::ROCEV2_PORT, &[0; 12]);
        assert_eq!(f.len(), 60);
        assert_eq!(parse(f.as_slice()), Err(ParseError::BthTruncated));
    }

    #[test]
    fn non_udp_protocols_stop_at_l3() {
        let f = build::frame(
            &l2(),
            eth::ETHERTYPE_IPV4,
            &build::ip_packet(&ip4().dscp(8), ipv4::PROTO_TCP, &[0; 20]),
        );
        let p = ok(&f);
        assert_eq!(p.l3, L3::Ipv4);
        assert_eq!(p.ip_proto, ipv4::PROTO_TCP);
        assert_eq!(usize::from(p.l4_off), V4_L4);
        assert_eq!(p.ip_payload_len, 20);
        assert!(!p.udp && !p.roce);
        assert_eq!(p.dscp, 8);
    }

    #[test]
    fn udp_with_4791_as_source_only_is_not_rocev2() {
        let f = build::udp_frame(&l2(), &ip4(), udp::ROCEV2_PORT, 53, &[0; 32]);
        let p = ok(&f);
        assert!(p.udp);
        assert!(!p.roce);
    }

    #[test]
    fn rocev2_without_reth_and_payload() {
        let b = Bth {
            opcode: bth::OP_ACK,
            psn: 0x00ff_ffff,
            dest_qp: 1,
            ..Bth::default()
        };
        let f = build::rocev2_frame(&l2(), &ip4(), 49152, &b, None, &[]);
        let p = ok(&f);
        assert!(p.roce);
        assert_eq!(p.bth.opcode, bth::OP_ACK);
        assert_eq!(p.bth.psn, 0x00ff_ffff);
        assert_eq!(p.bth.dest_qp, 1);
        assert_eq!(p.bth.pkey, 0);
    }
}

mod ipv6_frames {
    use super::*;

    #[test]
    fn rocev2_fields() {
        let f = roce_frame(&l2(), &ip6().dscp(46).ecn(3));
        let p = ok(&f);
        assert_eq!(p.ethertype, eth::ETHERTYPE_IPV6);
        assert_eq!(p.l3, L3::Ipv6);
        assert_eq!(usize::from(p.l3_off), V6_L3);
        assert_eq!(usize::from(p.l4_off), V6_L4);
        assert_eq!((p.dscp, p.ecn), (46, 3));
        assert_eq!(p.ip_proto, ipv4::PROTO_UDP);
        assert_eq!(
            usize::from(p.ip_payload_len),
            udp::HEADER_LEN + ROCE_UDP_PAYLOAD_LEN
        );
        assert!(p.udp && p.roce);
        assert_eq!((p.sport, p.dport), (ROCE_SPORT, udp::ROCEV2_PORT));
        assert_eq!(p.bth, write_bth());
        assert!(!p.later_fragment);
    }

    #[test]
    fn every_traffic_class_is_split_into_dscp_and_ecn() {
        for dscp in 0..64 {
            for ecn in 0..4 {
                let p = ok(&roce_frame(&l2(), &ip6().dscp(dscp).ecn(ecn)));
                assert_eq!((p.dscp, p.ecn), (dscp, ecn));
            }
        }
    }

    #[test]
    fn cnp_over_ipv6() {
        let p = ok(&build::cnp_frame(&l2_tagged(6, 5), &ip6(), 7, 0x42));
        assert!(p.roce && p.bth.is_cnp() && p.bth.becn);
        assert_eq!(p.bth.dest_qp, 0x42);
        assert_eq!(p.l4_off, 18 + 40);
    }

    #[test]
    fn extension_headers_are_ip_but_not_udp() {
        // next header 0 (hop-by-hop): not walked
        let f = build::frame(
            &l2(),
            eth::ETHERTYPE_IPV6,
            &build::ip_packet(&ip6().dscp(4), 0, &[17, 0, 0, 0, 0, 0, 0, 0]),
        );
        let p = ok(&f);
        assert_eq!(p.l3, L3::Ipv6);
        assert_eq!(p.ip_proto, 0);
        assert!(!p.udp && !p.roce);
        assert_eq!(p.dscp, 4);
        assert_eq!(p.ip_payload_len, 8);
    }

    #[test]
    fn rocev2_with_reth_and_write_payload_sizes() {
        for n in [0usize, 1, 3, 255, 1024] {
            let payload = vec![0x5a; n];
            let reth = Reth {
                va: 1,
                rkey: 2,
                len: n as u32,
            };
            let f = build::rocev2_frame(&l2(), &ip6(), 1, &write_bth(), Some(reth), &payload);
            let p = ok(&f);
            assert!(p.roce);
            assert_eq!(usize::from(p.ip_payload_len), 8 + 12 + 16 + n + 4);
        }
    }
}

mod mac_control_frames {
    use super::*;

    #[test]
    fn pfc_class_enable_and_all_eight_times() {
        let times = [
            0x0001, 0x0203, 0x0405, 0x0607, 0x0809, 0x0a0b, 0x0c0d, 0xffff,
        ];
        let f = build::pfc_frame(SRC_MAC, 0b1001_0110, times);
        assert_eq!(f.len(), macctl::MIN_FRAME);
        let p = ok(&f);
        assert_eq!(p.ethertype, eth::ETHERTYPE_MAC_CONTROL);
        assert_eq!(p.l3, L3::MacControl);
        assert_eq!(p.mac_ctl.opcode, macctl::OPCODE_PFC);
        assert!(p.mac_ctl.is_pfc() && !p.mac_ctl.is_pause());
        assert_eq!(p.mac_ctl.class_enable, 0b1001_0110);
        assert_eq!(p.mac_ctl.times, times);
        assert!(!p.udp && !p.roce);
        assert_eq!(p.l4_off, 0);
    }

    #[test]
    fn pfc_keeps_the_reserved_high_octet_of_the_vector() {
        let p = ok(&build::pfc_frame(SRC_MAC, 0xff01, [0; 8]));
        assert_eq!(p.mac_ctl.class_enable, 0xff01);
    }

    #[test]
    fn pause_time() {
        let p = ok(&build::pause_frame(SRC_MAC, 0xbeef));
        assert_eq!(p.l3, L3::MacControl);
        assert!(p.mac_ctl.is_pause() && !p.mac_ctl.is_pfc());
        assert_eq!(p.mac_ctl.opcode, macctl::OPCODE_PAUSE);
        assert_eq!(p.mac_ctl.times, [0xbeef, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(p.mac_ctl.class_enable, 0);
    }

    #[test]
    fn unknown_opcode_is_mac_control_with_no_fields() {
        for opcode in [0x0000, 0x0002, 0x0100, 0x0102, 0xffff] {
            let p = ok(&mac_ctl_frame(opcode));
            assert_eq!(p.l3, L3::MacControl);
            assert_eq!(p.mac_ctl.opcode, opcode);
            assert_eq!(p.mac_ctl.class_enable, 0);
            assert_eq!(p.mac_ctl.times, [0; 8]);
        }
        // an unknown opcode needs nothing after it
        let f = mac_ctl_frame(0x0003);
        assert_eq!(ok(&f[..16]).mac_ctl.opcode, 3);
    }

    #[test]
    fn tagged_pfc_is_still_mac_control() {
        let mut body = macctl::OPCODE_PFC.to_be_bytes().to_vec();
        body.extend_from_slice(&0x0008u16.to_be_bytes());
        body.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0x12, 0x34, 0, 0, 0, 0, 0, 0, 0, 0]);
        let l2 = build::L2::new(macctl::DST_MAC, SRC_MAC).vlan(7, 1);
        let p = ok(&build::frame(&l2, eth::ETHERTYPE_MAC_CONTROL, &body));
        assert_eq!(p.l3, L3::MacControl);
        assert_eq!(p.l3_off, 18);
        assert_eq!(p.mac_ctl.class_enable, 0x0008);
        assert_eq!(p.mac_ctl.times[3], 0x1234);
    }
}

mod first_fragment {
    use dataplane_common::build::{self, Ip, L2};
    use dataplane_common::parse::parse;
    use dataplane_common::wire::csum;

    /// Cuts an untagged IPv4 frame's datagram to `ip_len` bytes and sets MF.
    fn first_fragment_of(frame: &[u8], ip_len: usize) -> Vec<u8> {
        let mut f = frame[..14 + ip_len].to_vec();
        f[16..18].copy_from_slice(&(ip_len as u16).to_be_bytes());
        f[20] = 0x20; // MF, offset 0
        f[21] = 0;
        f[24] = 0;
        f[25] = 0;
        let c = csum::internet(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f
    }

    #[test]
    fn first_fragment_of_a_large_udp_datagram_is_not_malformed() {
        let l2 = L2::new([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]);
        let whole = build::udp_frame(
            &l2,
            &Ip::v4([198, 18, 0, 1], [198, 18, 0, 2]),
            1000,
            2000,
            &[7; 992],
        );
        let frag = first_fragment_of(&whole, 504);
        let p = parse(&frag[..]).expect("a first fragment parses");
        assert!(p.first_fragment && !p.later_fragment && p.udp);
        assert_eq!((p.sport, p.dport), (1000, 2000));
        assert_eq!(p.ip_payload_len, 484);
    }

    #[test]
    fn unfragmented_udp_longer_than_ip_payload_is_still_malformed() {
        let l2 = L2::new([2, 0, 0, 0, 0, 2], [2, 0, 0, 0, 0, 1]);
        let mut f = build::udp_frame(
            &l2,
            &Ip::v4([198, 18, 0, 1], [198, 18, 0, 2]),
            1000,
            2000,
            &[7; 100],
        );
        f[38..40].copy_from_slice(&500u16.to_be_bytes());
        assert_eq!(
            parse(&f[..]),
            Err(dataplane_common::parse::ParseError::UdpBadLen)
        );
    }
}
