//! Wire helpers: checksums, pause quanta, BTH, ICRC, field accessors.
#![cfg(feature = "user")]

mod common;

use common::*;
use dataplane_common::build::{self, Reth};
use dataplane_common::wire::bth::{self, Bth};
use dataplane_common::wire::{csum, ethernet as eth, ipv4, ipv6, macctl, udp, Packet};

/// Hex string to bytes (test vectors).
fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2));
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

mod checksum {
    use super::*;

    /// The classic IPv4 header example (checksum field zeroed).
    const HEADER: &str = "450000730000400040110000c0a80001c0a800c7";

    #[test]
    fn internet_checksum_known_answer() {
        assert_eq!(csum::internet(&unhex(HEADER)), 0xb861);
    }

    #[test]
    fn internet_checksum_over_a_valid_header_is_zero() {
        let mut h = unhex(HEADER);
        h[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert_eq!(csum::internet(&h), 0);
    }

    #[test]
    fn internet_checksum_pads_an_odd_byte_with_zero() {
        assert_eq!(
            csum::internet(&[0x12, 0x34, 0x56]),
            csum::internet(&[0x12, 0x34, 0x56, 0x00])
        );
        assert_eq!(csum::internet(&[0x01]), !0x0100);
        assert_eq!(csum::internet(&[]), 0xffff);
    }

    #[test]
    fn fold_adds_the_carries_back() {
        assert_eq!(csum::fold(0x0001_fffe), 0xffff);
        assert_eq!(csum::fold(0x0002_fffe), 0x0001);
        assert_eq!(csum::fold(0xffff_ffff), 0xffff);
        assert_eq!(csum::fold(0x1234), 0x1234);
    }

    #[test]
    fn builder_ipv4_headers_carry_a_valid_checksum() {
        for opts in [vec![], vec![1; 4], vec![1; 40]] {
            let f = roce_frame(&l2(), &ip4().dscp(26).options(&opts));
            let hlen = usize::from(f[V4_L3] & 0x0f) * 4;
            assert_eq!(
                csum::internet(&f[V4_L3..V4_L3 + hlen]),
                0,
                "{} option bytes",
                opts.len()
            );
        }
    }

    /// Sets the TOS byte of the IPv4 header at `l3` with an RFC 1624 update
    /// and checks the result against a full recomputation.
    fn check_tos_update(f: &[u8], l3: usize, hlen: usize, tos: u8) {
        let mut h = f[l3..l3 + hlen].to_vec();
        let check = u16::from_be_bytes([h[ipv4::CHECKSUM_OFF], h[ipv4::CHECKSUM_OFF + 1]]);
        let old = u16::from_be_bytes([h[0], h[1]]);
        h[ipv4::TOS_OFF] = tos;
        let new = u16::from_be_bytes([h[0], h[1]]);
        let updated = csum::update16(check, old, new);

        h[ipv4::CHECKSUM_OFF..ipv4::CHECKSUM_OFF + 2].copy_from_slice(&[0, 0]);
        let full = csum::internet(&h);
        assert_eq!(updated, full, "TOS {:#04x} -> {tos:#04x}", f[l3 + 1]);
    }

    #[test]
    fn update16_matches_recomputation_when_marking_ce() {
        for dscp in 0..64 {
            for ecn in [1, 2] {
                let f = roce_frame(&l2(), &ip4().dscp(dscp).ecn(ecn));
                check_tos_update(&f, V4_L3, 20, (dscp << 2) | 3);
            }
        }
    }

    #[test]
    fn update16_matches_recomputation_for_every_tos_change() {
        let addrs = [
            ([10, 0, 0, 1], [10, 0, 0, 2]),
            ([255, 255, 255, 255], [255, 255, 255, 254]),
            ([0; 4], [0; 4]),
        ];
        for (src, dst) in addrs {
            for opts in [vec![], vec![0xff; 12]] {
                for old_tos in [0x00, 0x01, 0x6a, 0xfe, 0xff] {
                    let ip = build::Ip::v4(src, dst)
                        .dscp(old_tos >> 2)
                        .ecn(old_tos & 3)
                        .options(&opts);
                    let f = build::udp_frame(&l2(), &ip, 1, 2, &[]);
                    for tos in 0..=255 {
                        check_tos_update(&f, V4_L3, 20 + opts.len(), tos);
                    }
                }
            }
        }
    }

    #[test]
    fn update16_matches_recomputation_for_a_ttl_decrement() {
        let f = roce_frame(&l2(), &ip4().ttl(64));
        let mut h = f[V4_L3..V4_L4].to_vec();
        for _ in 0..64 {
            let check = u16::from_be_bytes([h[10], h[11]]);
            let old = u16::from_be_bytes([h[8], h[9]]);
            h[ipv4::TTL_OFF] -= 1;
            let new = u16::from_be_bytes([h[8], h[9]]);
            let c = csum::update16(check, old, new);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            assert_eq!(csum::internet(&h), 0, "TTL {}", h[8]);
        }
    }

    #[test]
    fn update16_of_an_unchanged_field_keeps_the_checksum() {
        for check in [0x0001, 0x1234, 0xb861, 0xfffe] {
            for v in [0x0000, 0x4500, 0xffff] {
                assert_eq!(
                    csum::update16(check, v, v),
                    check,
                    "check {check:#06x}, field {v:#06x}"
                );
            }
        }
    }
}

mod pause_quanta {
    use super::*;

    #[test]
    fn max_quanta_at_40g_is_838_848_ns() {
        assert_eq!(macctl::quanta_to_nanos(u16::MAX, 40_000), 838_848);
    }

    #[test]
    fn one_quantum_is_512_bit_times() {
        assert_eq!(macctl::quanta_to_nanos(1, 1_000), 512);
        assert_eq!(macctl::quanta_to_nanos(1, 10_000), 51); // 51.2 ns, truncated
        assert_eq!(macctl::quanta_to_nanos(1, 100_000), 5); // 5.12 ns, truncated
        assert_eq!(macctl::quanta_to_nanos(100, 100_000), 512);
        assert_eq!(macctl::quanta_to_nanos(0, 100_000), 0);
    }

    #[test]
    fn quanta_for_rounds_up() {
        assert_eq!(macctl::quanta_for(0, 100_000), 0);
        assert_eq!(macctl::quanta_for(1, 100_000), 1);
        assert_eq!(macctl::quanta_for(5, 100_000), 1);
        assert_eq!(macctl::quanta_for(6, 100_000), 2); // 5.12 ns per quantum
        assert_eq!(macctl::quanta_for(512, 1_000), 1);
        assert_eq!(macctl::quanta_for(513, 1_000), 2);
        assert_eq!(macctl::quanta_for(838_848, 40_000), u16::MAX);
        assert_eq!(macctl::quanta_for(838_847, 40_000), u16::MAX);
        assert_eq!(macctl::quanta_for(838_835, 40_000), u16::MAX - 1);
        assert_eq!(macctl::quanta_for(1_000_000, 100_000), u16::MAX); // 195_313, capped
        assert_eq!(macctl::quanta_for(100_000, 100_000), 19_532); // 19531.25 rounded up
    }

    #[test]
    fn quanta_for_caps_at_65535() {
        assert_eq!(macctl::quanta_for(838_849, 40_000), u16::MAX);
        assert_eq!(macctl::quanta_for(1_000_000_000, 400_000), u16::MAX);
    }

    #[test]
    fn zero_speed_is_the_longest_pause_and_no_time() {
        assert_eq!(macctl::quanta_for(1, 0), u16::MAX);
        assert_eq!(macctl::quanta_to_nanos(1234, 0), 0);
    }

    #[test]
    fn quanta_cover_the_time_asked_for() {
        for speed in [
            1_000u64, 10_000, 25_000, 40_000, 50_000, 100_000, 200_000, 400_000,
        ] {
            for nanos in [1u64, 7, 100, 999, 5_000, 65_536, 123_457] {
                let q = macctl::quanta_for(nanos, speed);
                if q == u16::MAX {
                    continue;
                }
                assert!(
                    macctl::quanta_to_nanos(q, speed) >= nanos,
                    "{nanos} ns at {speed} Mb/s: {q} quanta"
                );
                if q > 1 {
                    // one quantum less would not cover it (exact arithmetic)
                    assert!(
                        u64::from(q - 1) * 512_000 < nanos * speed,
                        "{nanos} ns at {speed} Mb/s"
                    );
                }
            }
        }
    }
}

mod bth_header {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let cases = [
            Bth::default(),
            write_bth(),
            Bth {
                opcode: 0xff,
                fecn: true,
                becn: true,
                pkey: 0xffff,
                dest_qp: 0x00ff_ffff,
                ack_req: true,
                psn: 0x00ff_ffff,
            },
            Bth {
                opcode: bth::OP_CNP,
                becn: true,
                pkey: 0xffff,
                dest_qp: 1,
                ..Bth::default()
            },
            Bth {
                opcode: bth::OP_SEND_FIRST,
                fecn: true,
                psn: 1,
                ..Bth::default()
            },
        ];
        for b in cases {
            assert_eq!(Bth::decode(&b.encode()), b);
        }
        for bits in 0u32..64 {
            let b = Bth {
                opcode: bits as u8,
                fecn: bits & 1 != 0,
                becn: bits & 2 != 0,
                pkey: (bits as u16).wrapping_mul(0x1111),
                dest_qp: (bits * 0x0004_0f03) & 0x00ff_ffff,
                ack_req: bits & 4 != 0,
                psn: (bits * 0x0003_0507) & 0x00ff_ffff,
            };
            assert_eq!(Bth::decode(&b.encode()), b);
        }
    }

    #[test]
    fn encode_layout() {
        let b = Bth {
            opcode: 0x0a,
            fecn: true,
            becn: false,
            pkey: 0x8001,
            dest_qp: 0x00ab_cd12,
            ack_req: true,
            psn: 0x0012_3456,
        };
        assert_eq!(
            b.encode(),
            [0x0a, 0x00, 0x80, 0x01, 0x80, 0xab, 0xcd, 0x12, 0x80, 0x12, 0x34, 0x56]
        );
        let becn = Bth {
            becn: true,
            ..Bth::default()
        };
        assert_eq!(becn.encode()[4], bth::BECN_BIT);
    }

    #[test]
    fn decode_ignores_reserved_and_header_bits() {
        // solicited, migreq, pad count, tver, resv6, resv7 all set
        let raw = [
            0x04, 0xff, 0x12, 0x34, 0x3f, 0x00, 0x00, 0x07, 0x7f, 0x00, 0x00, 0x09,
        ];
        let b = Bth::decode(&raw);
        assert_eq!(
            b,
            Bth {
                opcode: 0x04,
                fecn: false,
                becn: false,
                pkey: 0x1234,
                dest_qp: 7,
                ack_req: false,
                psn: 9
            }
        );
    }

    #[test]
    fn only_opcode_0x81_is_a_cnp() {
        for opcode in 0..=255u8 {
            let b = Bth {
                opcode,
                ..Bth::default()
            };
            assert_eq!(b.is_cnp(), opcode == 0x81, "opcode {opcode:#04x}");
        }
    }
}

mod icrc {
    use super::*;

    /// Built by scapy 2.8.0 (scapy.contrib.roce) from field values:
    ///
    /// ```python
    /// IP(src="10.0.0.1", dst="10.0.0.2", tos=(26<<2)|2, ttl=64, id=0x1234, flags="DF")
    ///   / UDP(sport=0xc0de, dport=4791, chksum=0)
    ///   / BTH(opcode=0x04, pkey=0xffff, dqpn=0x123, ackreq=1, psn=0xabcdef)
    ///   / Raw(b"RoCEv2 ICRC known answer")
    /// ```
    /// The last four bytes are the ICRC scapy computed.
    const SCAPY_V4: &str =
        "456a004412344000401114090a0000010a000002c0de12b7003000000400ffff0000012380abcdef\
                            526f434576322049435243206b6e6f776e20616e73776572081b6e5a";
    const SCAPY_V4_ICRC: [u8; 4] = [0x08, 0x1b, 0x6e, 0x5a];

    /// Built by scapy 2.8.0 from field values (UDP checksum by scapy):
    ///
    /// ```python
    /// IPv6(src="fd00::1", dst="fd00::2", tc=(26<<2)|1, fl=0xabcde, hlim=32)
    ///   / UDP(sport=0xd00d, dport=4791)
    ///   / BTH(opcode=0x0a, pkey=0x8001, fecn=1, dqpn=0xabcd12, ackreq=1, psn=0x123456)
    ///   / Raw(RETH(va=0x7f00deadb000, rkey=0x12345678, len=32) + bytes(range(32)))
    /// ```
    const SCAPY_V6: &str = "669abcde00481120fd000000000000000000000000000001fd000000000000000000000000000002\
                            d00d12b70048bb870a00800180abcd128012345600007f00deadb0001234567800000020\
                            000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f6129123f";
    const SCAPY_V6_ICRC: [u8; 4] = [0x61, 0x29, 0x12, 0x3f];

    fn ours_v4() -> Vec<u8> {
        let ip = ip4().dscp(26).ecn(2).ttl(64);
        let b = Bth {
            opcode: bth::OP_SEND_ONLY,
            pkey: 0xffff,
            dest_qp: 0x123,
            ack_req: true,
            psn: 0x00ab_cdef,
            ..Bth::default()
        };
        build::rocev2_packet(&ip, 0xc0de, &b, None, b"RoCEv2 ICRC known answer")
    }

    fn ours_v6() -> Vec<u8> {
        let ip = ip6().dscp(26).ecn(1).ttl(32);
        let b = Bth {
            opcode: bth::OP_WRITE_ONLY,
            pkey: 0x8001,
            fecn: true,
            dest_qp: 0x00ab_cd12,
            ack_req: true,
            psn: 0x0012_3456,
            ..Bth::default()
        };
        let reth = Reth {
            va: 0x7f00_dead_b000,
            rkey: 0x1234_5678,
            len: 32,
        };
        let payload: Vec<u8> = (0..32).collect();
        build::rocev2_packet(&ip, 0xd00d, &b, Some(reth), &payload)
    }

    fn without_icrc(p: &[u8]) -> &[u8] {
        &p[..p.len() - bth::ICRC_LEN]
    }

    #[test]
    fn ipv4_icrc_matches_scapy() {
        let scapy = unhex(SCAPY_V4);
        assert_eq!(bth::icrc(without_icrc(&scapy)), Some(SCAPY_V4_ICRC));
    }

    #[test]
    fn ipv6_icrc_matches_scapy() {
        let scapy = unhex(SCAPY_V6);
        assert_eq!(bth::icrc(without_icrc(&scapy)), Some(SCAPY_V6_ICRC));
    }

    #[test]
    fn builder_ipv4_packet_is_byte_identical_to_scapy() {
        assert_eq!(ours_v4(), unhex(SCAPY_V4));
    }

    #[test]
    fn builder_ipv6_packet_is_byte_identical_to_scapy() {
        // includes the UDP checksum recomputed over the final ICRC
        assert_eq!(ours_v6(), unhex(SCAPY_V6));
    }

    /// `p` with one byte changed, and the ICRC of the result.
    fn icrc_after(p: &[u8], off: usize, v: u8) -> [u8; 4] {
        let mut q = without_icrc(p).to_vec();
        q[off] = v;
        bth::icrc(&q).unwrap()
    }

    #[test]
    fn ipv4_variant_fields_do_not_change_the_icrc() {
        let p = ours_v4();
        let want = SCAPY_V4_ICRC;
        let l4 = 20;
        let variant = [
            1,
            ipv4::TTL_OFF,
            ipv4::CHECKSUM_OFF,
            ipv4::CHECKSUM_OFF + 1,
            l4 + 6,
            l4 + 7,
            l4 + 8 + 4,
        ];
        for off in variant {
            for v in [0x00, 0x5a, 0xff] {
                assert_eq!(icrc_after(&p, off, v), want, "byte {off} = {v:#04x}");
            }
        }
    }

    #[test]
    fn ipv6_variant_fields_do_not_change_the_icrc() {
        let p = ours_v6();
        let want = SCAPY_V6_ICRC;
        // traffic class + flow label (not the version nibble), hop limit,
        // UDP checksum, BTH FECN/BECN/reserved
        for off in [1, 2, 3, 7, 40 + 6, 40 + 7, 40 + 8 + 4] {
            for v in [0x00, 0x5a, 0xff] {
                assert_eq!(icrc_after(&p, off, v), want, "byte {off} = {v:#04x}");
            }
        }
        for low_nibble in 0..16 {
            assert_eq!(
                icrc_after(&p, 0, 0x60 | low_nibble),
                want,
                "traffic class high nibble {low_nibble}"
            );
        }
    }

    #[test]
    fn every_invariant_byte_changes_the_icrc() {
        for (p, l4, variant) in [
            (ours_v4(), 20usize, vec![1usize, 8, 10, 11]),
            (ours_v6(), 40, vec![1, 2, 3, 7]),
        ] {
            let want = bth::icrc(without_icrc(&p)).unwrap();
            let variant: Vec<usize> = variant
                .into_iter()
                .chain([l4 + 6, l4 + 7, l4 + 12])
                .collect();
            // byte 0 (version and IHL / traffic class) selects the layout itself
            for off in (1..p.len() - bth::ICRC_LEN).filter(|o| !variant.contains(o)) {
                let v = p[off] ^ 0x01;
                assert_ne!(icrc_after(&p, off, v), want, "byte {off} is invariant");
            }
        }
    }

    #[test]
    fn icrc_rejects_what_it_cannot_cover() {
        let p = ours_v4();
        let body = without_icrc(&p);
        assert_eq!(bth::icrc(&[]), None);
        assert_eq!(bth::icrc(&body[..20 + 8 + 11]), None, "BTH cut");
        assert!(bth::icrc(&body[..20 + 8 + 12]).is_some(), "bare BTH");
        let mut v5 = body.to_vec();
        v5[0] = 0x55;
        assert_eq!(bth::icrc(&v5), None, "version 5");
        let mut ihl4 = body.to_vec();
        ihl4[0] = 0x44;
        assert_eq!(bth::icrc(&ihl4), None, "IHL 4");
        let v6 = ours_v6();
        assert_eq!(bth::icrc(&v6[..40 + 8 + 11]), None, "IPv6 BTH cut");
    }

    #[test]
    fn builder_frames_carry_a_valid_icrc_with_options_and_tags() {
        for opts in [vec![], vec![1; 4], vec![1; 40]] {
            let f = roce_frame(&l2_tagged(3, 3), &ip4().options(&opts));
            let l3 = &f[18..];
            let (body, icrc) = l3.split_at(l3.len() - 4);
            assert_eq!(
                bth::icrc(body).unwrap(),
                icrc,
                "{} option bytes",
                opts.len()
            );
        }
        let f = build::cnp_frame(&l2(), &ip6(), 1, 2);
        let (body, icrc) = f[14..].split_at(f.len() - 14 - 4);
        assert_eq!(bth::icrc(body).unwrap(), icrc);
    }
}

mod fields {
    use super::*;

    #[test]
    fn tci_split() {
        assert_eq!(eth::tci_pcp(0xa123), 5);
        assert_eq!(eth::tci_vid(0xa123), 0x0123);
        assert_eq!(eth::tci_pcp(0xffff), 7);
        assert_eq!(eth::tci_vid(0xffff), 0x0fff);
        assert_eq!(eth::tci_pcp(0x1fff), 0, "DEI is not PCP");
    }

    #[test]
    fn tpids() {
        assert!(eth::is_tpid(0x8100));
        assert!(eth::is_tpid(0x88a8));
        assert!(!eth::is_tpid(0x0800));
        assert!(!eth::is_tpid(0x9100));
    }

    #[test]
    fn ipv4_header_fields() {
        assert_eq!(ipv4::version(0x45), 4);
        assert_eq!(ipv4::header_len(0x45), 20);
        assert_eq!(ipv4::header_len(0x4f), 60);
        assert!(!ipv4::is_later_fragment(0x4000));
        assert!(!ipv4::is_later_fragment(0x2000));
        assert!(ipv4::is_later_fragment(0x0001));
        assert!(ipv4::is_later_fragment(0x3fff));
        assert!(ipv4::is_later_fragment(0x1000), "top bit of the offset");
        assert!(!ipv4::is_later_fragment(0xe000), "flags only");
    }

    #[test]
    fn ipv6_traffic_class_straddles_two_bytes() {
        assert_eq!(ipv6::version(0x6a), 6);
        assert_eq!(ipv6::traffic_class(0x6a, 0xbc), 0xab);
        assert_eq!(ipv6::traffic_class(0x60, 0x0f), 0x00);
        assert_eq!(ipv6::traffic_class(0x6f, 0xf0), 0xff);
    }

    #[test]
    fn mac_control_constants() {
        assert_eq!(macctl::DST_MAC, [0x01, 0x80, 0xc2, 0x00, 0x00, 0x01]);
        assert_eq!(macctl::PFC_LEN, 20);
        assert_eq!(macctl::PAUSE_LEN, 4);
        assert_eq!(udp::ROCEV2_PORT, 4791);
        let f = build::pfc_frame(SRC_MAC, 0x0003, [7; 8]);
        assert_eq!(&f[..6], &macctl::DST_MAC);
        assert_eq!(&f[6..12], &SRC_MAC);
        assert_eq!(&f[12..16], &[0x88, 0x08, 0x01, 0x01]);
    }
}

mod packet_reads {
    use super::*;

    #[test]
    fn reads_inside_the_frame() {
        let f: &[u8] = &[1, 2, 3, 4, 5];
        assert_eq!(Packet::len(f), 5);
        assert!(!Packet::is_empty(f));
        assert_eq!(f.read::<5>(0), Some([1, 2, 3, 4, 5]));
        assert_eq!(f.read::<2>(3), Some([4, 5]));
        assert_eq!(f.read::<0>(5), Some([]));
        assert_eq!(f.u8_at(4), Some(5));
        assert_eq!(f.be16_at(1), Some(0x0203));
    }

    #[test]
    fn reads_past_the_end_are_none() {
        let f: &[u8] = &[1, 2, 3, 4, 5];
        assert_eq!(f.read::<6>(0), None);
        assert_eq!(f.read::<2>(4), None);
        assert_eq!(f.u8_at(5), None);
        assert_eq!(f.be16_at(4), None);
        assert_eq!(f.read::<1>(usize::MAX), None, "offset overflow");
        assert_eq!(f.read::<4>(usize::MAX - 2), None, "offset overflow");
        let empty: &[u8] = &[];
        assert!(Packet::is_empty(empty));
        assert_eq!(empty.u8_at(0), None);
    }

    #[test]
    fn a_frame_concerns_a_priority_by_its_vector_or_as_pause() {
        use dataplane_common::wire::macctl::{MacCtl, OPCODE_PAUSE, OPCODE_PFC};
        let pfc = MacCtl {
            opcode: OPCODE_PFC,
            class_enable: 0b0001_1000,
            times: [9, 9, 9, 100, 0, 9, 9, 9],
        };
        assert_eq!(pfc.quanta_for_prio(3), Some(100));
        // enabled with time 0: XON
        assert_eq!(pfc.quanta_for_prio(4), Some(0));
        // a time without its enable bit is ignored
        assert_eq!(pfc.quanta_for_prio(0), None);
        let pause = MacCtl {
            opcode: OPCODE_PAUSE,
            class_enable: 0,
            times: [7, 0, 0, 0, 0, 0, 0, 0],
        };
        assert!((0..8).all(|p| pause.quanta_for_prio(p) == Some(7)));
        let other = MacCtl {
            opcode: 0x0002,
            class_enable: 0xff,
            times: [1; 8],
        };
        assert_eq!(other.quanta_for_prio(3), None);
    }
}

/// The one writer of PFC frames (`macctl::pfc_frame_bytes`), held to the
/// 802.1Qbb layout byte by byte and to the generic frame builder.
mod pfc_frame_writer {
    use super::*;
    use dataplane_common::parse::{parse, L3};

    const SRC: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0x07];

    #[test]
    fn xoff_for_priority_3_is_exactly_the_802_1qbb_frame() {
        let f = macctl::pfc_decision_frame(SRC, 3, 0xffff);
        let want = unhex(concat!(
            "0180c2000001",                                         // destination
            "020000000107",                                         // source: the port's MAC
            "8808",                                                 // MAC control
            "0101",                                                 // PFC opcode
            "0008",                                                 // class-enable: priority 3
            "000000000000ffff0000000000000000",                     // times: priority 3 = 0xffff
            "0000000000000000000000000000000000000000000000000000", // padding
        ));
        assert_eq!(want.len(), macctl::MIN_FRAME);
        assert_eq!(f.to_vec(), want);
    }

    #[test]
    fn xon_has_its_enable_bit_and_time_zero() {
        let f = macctl::pfc_decision_frame(SRC, 4, 0);
        assert_eq!(&f[16..18], &[0x00, 0x10]);
        assert!(f[18..].iter().all(|&b| b == 0));
    }

    #[test]
    fn equals_the_builder_and_parses_back() {
        for prio in 0..8u8 {
            for q in [0u16, 1, 0x1234, 0xffff] {
                let f = macctl::pfc_decision_frame(SRC, prio, q);
                let mut times = [0u16; 8];
                times[prio as usize] = q;
                assert_eq!(f.to_vec(), build::pfc_frame(SRC, 1 << prio, times));
                let p = parse(&f[..]).unwrap();
                assert_eq!(p.l3, L3::MacControl);
                assert_eq!(p.mac_ctl.quanta_for_prio(prio as usize), Some(q));
                for other in (0..8).filter(|&o| o != prio as usize) {
                    assert_eq!(p.mac_ctl.quanta_for_prio(other), None);
                }
            }
        }
    }

    #[test]
    fn priority_is_masked_to_0_7() {
        assert_eq!(
            macctl::pfc_decision_frame(SRC, 11, 5),
            macctl::pfc_decision_frame(SRC, 3, 5)
        );
    }
}
