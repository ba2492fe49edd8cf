use super::*;

fn v4_header(dscp: u8, ecn: u8, options: &[u8]) -> Vec<u8> {
    let ip = Ip::v4(SRC_V4, DST_V4).dscp(dscp).ecn(ecn).options(options);
    let pkt = build::ip_packet(&ip, ipv4::PROTO_UDP, &[0u8; 8]);
    pkt[..ipv4::header_len(pkt[0])].to_vec()
}

#[test]
fn ipv4_ce_keeps_a_valid_checksum() {
    for options in [
        &[][..],
        &[1, 1, 1, 0][..],
        &[0x94, 0x04, 0, 0, 1, 1, 1, 0][..],
    ] {
        for dscp in 0..64 {
            for ecn in [ECN_ECT0, ECN_ECT1] {
                let mut h = v4_header(dscp, ecn, options);
                assert_eq!(csum::internet(&h), 0);
                let check = u16::from_be_bytes([h[10], h[11]]);
                let (tos, new_check) = ipv4_set_ce(h[0], h[ipv4::TOS_OFF], check).unwrap();
                assert_eq!(tos, (dscp << 2) | ECN_CE);
                h[ipv4::TOS_OFF] = tos;
                h[ipv4::CHECKSUM_OFF..ipv4::CHECKSUM_OFF + 2]
                    .copy_from_slice(&new_check.to_be_bytes());
                // Valid, and equal to a full recomputation.
                assert_eq!(csum::internet(&h), 0);
                let mut z = h.clone();
                z[10] = 0;
                z[11] = 0;
                assert_eq!(csum::internet(&z), new_check);
                // A CE-marked header built from scratch is the same bytes.
                assert_eq!(h, v4_header(dscp, ECN_CE, options));
            }
        }
    }
}

#[test]
fn ipv4_non_ect_and_ce_are_untouched() {
    for ecn in [ECN_NOT_ECT, ECN_CE] {
        let h = v4_header(26, ecn, &[]);
        assert_eq!(
            ipv4_set_ce(h[0], h[1], u16::from_be_bytes([h[10], h[11]])),
            None
        );
    }
}

#[test]
fn ipv6_ce_sets_the_two_low_traffic_class_bits() {
    for dscp in [0, 26, 46, 63] {
        for ecn in [ECN_ECT0, ECN_ECT1] {
            let ip = Ip::v6(SRC_V6, DST_V6).dscp(dscp).ecn(ecn);
            let mut h = build::ip_packet(&ip, ipv4::PROTO_UDP, &[0u8; 8]);
            let (b0, b1) = (h[0], h[1]);
            assert_eq!(ipv6_ecn(b1), ecn);
            let nb1 = ipv6_set_ce(b1).unwrap();
            h[1] = nb1;
            assert_eq!(h[0], b0, "byte 0 (version, DSCP high bits) unchanged");
            assert_eq!(ipv6::traffic_class(h[0], h[1]), (dscp << 2) | ECN_CE);
            assert_eq!(nb1 & 0x0f, b1 & 0x0f, "flow label nibble unchanged");
            assert_eq!(ipv6::version(h[0]), 6);
            assert_eq!(ipv6_ecn(nb1), ECN_CE);
        }
        for ecn in [ECN_NOT_ECT, ECN_CE] {
            let ip = Ip::v6(SRC_V6, DST_V6).dscp(dscp).ecn(ecn);
            let h = build::ip_packet(&ip, ipv4::PROTO_UDP, &[0u8; 8]);
            assert_eq!(ipv6_set_ce(h[1]), None);
        }
    }
}
