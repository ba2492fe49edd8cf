//! Classification: trust mode, DSCP/PCP maps, CNP class, lossless flag.
#![cfg(feature = "user")]

mod common;

use common::*;
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::classify::{classify, traffic_class, Class, Rule};
use dataplane_common::maps::{PortConfig, AZURE_DSCP_TO_TC, TRUST_DOT1P, TRUST_DSCP};
use dataplane_common::parse::{parse, Parsed};
use dataplane_common::wire::bth::{self, Bth};
use dataplane_common::wire::udp;

fn parsed(f: &[u8]) -> Parsed {
    parse(f).expect("frame parses")
}

/// A plain UDP (not RoCEv2) frame with `dscp`.
fn udp_dscp(l2: &L2, ip: Ip, dscp: u8) -> Parsed {
    parsed(&build::udp_frame(l2, &ip.dscp(dscp), 1000, 2000, &[0; 8]))
}

/// AZURE with a PCP map that is not the identity, so a test can tell which
/// map (and which entry) was used.
fn azure_reversed_pcp() -> PortConfig {
    PortConfig {
        pcp_to_tc: [7, 6, 5, 4, 3, 2, 1, 0],
        default_tc: 2,
        ..PortConfig::azure(1)
    }
}

fn dot1p(cfg: PortConfig) -> PortConfig {
    PortConfig {
        trust: TRUST_DOT1P,
        ..cfg
    }
}

/// The AZURE entries as SONiC lists them; everything else is TC1.
const AZURE_LISTED: [(u8, u8); 6] = [(3, 3), (4, 4), (5, 2), (8, 0), (46, 5), (48, 6)];

mod dscp_trust {
    use super::*;

    #[test]
    fn azure_listed_dscps_map_to_their_class() {
        let cfg = PortConfig::azure(0);
        assert_eq!(cfg.trust, TRUST_DSCP);
        for (dscp, tc) in AZURE_LISTED {
            for ip in [ip4(), ip6()] {
                let p = udp_dscp(&l2(), ip, dscp);
                assert_eq!(traffic_class(&p, &cfg), (tc, Rule::Dscp), "DSCP {dscp}");
                assert_eq!(classify(&p, &cfg).tc, tc, "DSCP {dscp}");
            }
        }
    }

    #[test]
    fn azure_unlisted_dscps_map_to_tc1() {
        let cfg = PortConfig::azure(0);
        for dscp in [0, 1, 2, 6, 7, 9, 10, 18, 24, 26, 34, 45, 47, 49, 56, 63] {
            let p = udp_dscp(&l2(), ip4(), dscp);
            assert_eq!(traffic_class(&p, &cfg), (1, Rule::Dscp), "DSCP {dscp}");
        }
    }

    #[test]
    fn azure_table_is_exactly_the_listed_entries_plus_tc1() {
        for dscp in 0..64u8 {
            let want = AZURE_LISTED
                .iter()
                .find(|(d, _)| *d == dscp)
                .map_or(1, |(_, tc)| *tc);
            assert_eq!(AZURE_DSCP_TO_TC[usize::from(dscp)], want, "DSCP {dscp}");
            let p = parsed(&roce_frame(&l2(), &ip6().dscp(dscp)));
            assert_eq!(classify(&p, &PortConfig::azure(0)).tc, want, "DSCP {dscp}");
        }
    }

    #[test]
    fn dscp_wins_over_the_tag_of_an_ip_frame() {
        let cfg = azure_reversed_pcp();
        // PCP 0 would be TC7 through the PCP map
        let p = udp_dscp(&l2_tagged(0, 10), ip4(), 46);
        assert_eq!(traffic_class(&p, &cfg), (5, Rule::Dscp));
    }

    #[test]
    fn ecn_bits_do_not_change_the_class() {
        let cfg = PortConfig::azure(0);
        for ecn in 0..4 {
            let p = parsed(&roce_frame(&l2(), &ip4().dscp(3).ecn(ecn)));
            assert_eq!(classify(&p, &cfg).tc, 3, "ECN {ecn}");
        }
    }

    #[test]
    fn non_ip_tagged_frames_fall_back_to_pcp() {
        let cfg = azure_reversed_pcp();
        for pcp in 0..8u8 {
            let p = parsed(&arp_frame(&l2_tagged(pcp, 10)));
            assert_eq!(traffic_class(&p, &cfg), (7 - pcp, Rule::Pcp), "PCP {pcp}");
        }
    }

    #[test]
    fn non_ip_untagged_frames_get_default_tc() {
        let cfg = azure_reversed_pcp();
        let p = parsed(&arp_frame(&l2()));
        assert_eq!(traffic_class(&p, &cfg), (2, Rule::Default));
    }

    #[test]
    fn qinq_uses_the_outer_pcp() {
        let cfg = azure_reversed_pcp();
        // the inner IP header (DSCP 46) is never read
        let p = parsed(&roce_frame(&l2_qinq(1, 100, 5, 200), &ip4().dscp(46)));
        assert_eq!(traffic_class(&p, &cfg), (6, Rule::Pcp));
    }

    #[test]
    fn a_trust_value_other_than_dot1p_trusts_dscp() {
        let cfg = PortConfig {
            trust: 7,
            ..azure_reversed_pcp()
        };
        let p = udp_dscp(&l2_tagged(0, 1), ip4(), 4);
        assert_eq!(traffic_class(&p, &cfg), (4, Rule::Dscp));
    }
}

mod dot1p_trust {
    use super::*;

    #[test]
    fn tagged_ip_frames_use_the_pcp_map_whatever_the_dscp() {
        let cfg = dot1p(azure_reversed_pcp());
        for pcp in 0..8u8 {
            for dscp in [0, 3, 46, 63] {
                let p = udp_dscp(&l2_tagged(pcp, 42), ip4(), dscp);
                assert_eq!(
                    traffic_class(&p, &cfg),
                    (7 - pcp, Rule::Pcp),
                    "PCP {pcp} DSCP {dscp}"
                );
            }
        }
    }

    #[test]
    fn untagged_ip_frames_get_default_tc() {
        let cfg = dot1p(azure_reversed_pcp());
        for ip in [ip4(), ip6()] {
            let p = udp_dscp(&l2(), ip, 3);
            assert_eq!(traffic_class(&p, &cfg), (2, Rule::Default));
        }
    }

    #[test]
    fn tagged_non_ip_frames_use_the_pcp_map() {
        let cfg = dot1p(azure_reversed_pcp());
        let p = parsed(&arp_frame(&l2_tagged(3, 1)));
        assert_eq!(traffic_class(&p, &cfg), (4, Rule::Pcp));
    }

    #[test]
    fn azure_identity_pcp_map() {
        let cfg = dot1p(PortConfig::azure(0));
        for pcp in 0..8u8 {
            let p = parsed(&roce_frame(&l2_tagged(pcp, 7), &ip6().dscp(48)));
            assert_eq!(traffic_class(&p, &cfg), (pcp, Rule::Pcp));
        }
    }
}

mod config_values {
    use super::*;

    #[test]
    fn default_tc_is_configurable() {
        for default_tc in 0..8 {
            let cfg = PortConfig {
                default_tc,
                ..PortConfig::azure(0)
            };
            let p = parsed(&arp_frame(&l2()));
            assert_eq!(traffic_class(&p, &cfg), (default_tc, Rule::Default));
        }
    }

    #[test]
    fn map_entries_beyond_7_are_masked_to_a_class() {
        let mut cfg = PortConfig {
            default_tc: 9,
            cnp_tc: 14,
            ..PortConfig::azure(0)
        };
        cfg.dscp_to_tc[10] = 0xfb;
        cfg.pcp_to_tc[2] = 8;
        assert_eq!(
            traffic_class(&parsed(&arp_frame(&l2())), &cfg),
            (1, Rule::Default)
        );
        assert_eq!(
            traffic_class(&udp_dscp(&l2(), ip4(), 10), &cfg),
            (3, Rule::Dscp)
        );
        assert_eq!(
            traffic_class(&parsed(&arp_frame(&l2_tagged(2, 1))), &cfg),
            (0, Rule::Pcp)
        );
        let cnp = parsed(&build::cnp_frame(&l2(), &ip4(), 1, 1));
        assert_eq!(traffic_class(&cnp, &cfg), (6, Rule::Cnp));
    }
}

mod cnp {
    use super::*;

    #[test]
    fn cnp_goes_to_cnp_tc_whatever_its_dscp() {
        let cfg = PortConfig::azure(0);
        for dscp in [0, 3, 4, 46, 48, 63] {
            for ip in [ip4(), ip6()] {
                let p = parsed(&build::cnp_frame(&l2(), &ip.dscp(dscp), 1, 0x10));
                assert_eq!(traffic_class(&p, &cfg), (6, Rule::Cnp), "DSCP {dscp}");
            }
        }
    }

    #[test]
    fn cnp_wins_over_dot1p_trust() {
        let cfg = PortConfig {
            cnp_tc: 5,
            ..dot1p(azure_reversed_pcp())
        };
        let p = parsed(&build::cnp_frame(&l2_tagged(0, 1), &ip4(), 1, 1));
        assert_eq!(traffic_class(&p, &cfg), (5, Rule::Cnp));
    }

    #[test]
    fn cnp_class_flags() {
        let cfg = PortConfig::azure(0);
        let p = parsed(&build::cnp_frame(&l2(), &ip4().dscp(3), 1, 1));
        assert_eq!(
            classify(&p, &cfg),
            Class {
                tc: 6,
                lossless: false,
                roce: true,
                cnp: true,
                uet: false
            }
        );
        let lossless_cnp = PortConfig {
            pfc_enable: 1 << 6,
            ..cfg
        };
        assert_eq!(
            classify(&p, &lossless_cnp),
            Class {
                tc: 6,
                lossless: true,
                roce: true,
                cnp: true,
                uet: false
            }
        );
    }

    #[test]
    fn a_cnp_opcode_without_the_roce_flag_is_ignored() {
        // classify trusts `roce`, not a stale BTH, e.g. from a caller that
        // fills `Parsed` by hand
        let cfg = PortConfig::azure(0);
        let mut p = udp_dscp(&l2(), ip4(), 46);
        p.bth = Bth {
            opcode: bth::OP_CNP,
            becn: true,
            ..Bth::default()
        };
        assert!(!p.roce);
        assert_eq!(traffic_class(&p, &cfg), (5, Rule::Dscp));
        assert_eq!(
            classify(&p, &cfg),
            Class {
                tc: 5,
                lossless: false,
                roce: false,
                cnp: false,
                uet: false
            }
        );
    }

    #[test]
    fn opcode_0x81_outside_rocev2_is_not_a_cnp() {
        let cfg = PortConfig::azure(0);
        let mut payload = build::cnp_frame(&l2(), &ip4(), 1, 1)[42..].to_vec();
        payload.truncate(32);
        assert_eq!(payload[0], 0x81);
        let p = parsed(&build::udp_frame(
            &l2(),
            &ip4().dscp(3),
            1,
            udp::ROCEV2_PORT + 1,
            &payload,
        ));
        assert!(!p.roce);
        assert_eq!(
            classify(&p, &cfg),
            Class {
                tc: 3,
                lossless: true,
                roce: false,
                cnp: false,
                uet: false
            }
        );
    }
}

mod flags {
    use super::*;

    #[test]
    fn lossless_follows_pfc_enable() {
        let cfg = PortConfig::azure(0);
        assert_eq!(cfg.pfc_enable, 0b0001_1000);
        for (dscp, tc, lossless) in [
            (3, 3, true),
            (4, 4, true),
            (5, 2, false),
            (8, 0, false),
            (0, 1, false),
            (48, 6, false),
        ] {
            let p = parsed(&roce_frame(&l2(), &ip4().dscp(dscp)));
            let c = classify(&p, &cfg);
            assert_eq!((c.tc, c.lossless), (tc, lossless), "DSCP {dscp}");
        }
    }

    #[test]
    fn every_pfc_enable_bit_makes_exactly_its_class_lossless() {
        let mut cfg = dot1p(PortConfig::azure(0));
        for bit in 0..8 {
            cfg.pfc_enable = 1 << bit;
            for pcp in 0..8u8 {
                let p = parsed(&arp_frame(&l2_tagged(pcp, 1)));
                assert_eq!(
                    classify(&p, &cfg).lossless,
                    pcp == bit,
                    "pfc_enable bit {bit}, PCP {pcp}"
                );
            }
        }
        cfg.pfc_enable = 0;
        assert!(!classify(&parsed(&arp_frame(&l2_tagged(3, 1))), &cfg).lossless);
    }

    #[test]
    fn roce_flag_only_for_rocev2() {
        let cfg = PortConfig::azure(0);
        let roce = classify(&parsed(&roce_v4()), &cfg);
        assert!(roce.roce && !roce.cnp);
        let roce6 = classify(&parsed(&roce_v6()), &cfg);
        assert!(roce6.roce && !roce6.cnp);
        let plain = classify(&udp_dscp(&l2(), ip4(), 0), &cfg);
        assert!(!plain.roce && !plain.cnp);
        let arp = classify(&parsed(&arp_frame(&l2())), &cfg);
        assert!(!arp.roce && !arp.cnp);
    }

    #[test]
    fn classify_agrees_with_traffic_class() {
        let cfg = azure_reversed_pcp();
        let frames = [
            roce_v4(),
            roce_v6(),
            arp_frame(&l2_tagged(4, 1)),
            arp_frame(&l2()),
            build::cnp_frame(&l2(), &ip4(), 1, 1),
            roce_frame(&l2_qinq(2, 1, 3, 4), &ip4()),
        ];
        for f in frames {
            let p = parsed(&f);
            assert_eq!(classify(&p, &cfg).tc, traffic_class(&p, &cfg).0);
        }
    }
}
