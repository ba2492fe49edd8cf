//! The ingress decision and the counters it bumps.
#![cfg(feature = "user")]

mod common;

use common::*;
use dataplane_common::build;
use dataplane_common::classify::Class;
use dataplane_common::maps::{PortConfig, PortCounters, MALFORMED_DROP, MALFORMED_PASS};
use dataplane_common::parse::{parse, ParseError};
use dataplane_common::verdict::{account, decide, Action, Decision, Outcome};
use dataplane_common::wire::macctl;

fn cfg_pass() -> PortConfig {
    PortConfig {
        malformed_action: MALFORMED_PASS,
        ..PortConfig::azure(3)
    }
}

fn cfg_drop() -> PortConfig {
    PortConfig {
        malformed_action: MALFORMED_DROP,
        ..PortConfig::azure(3)
    }
}

fn decide_frame(f: &[u8], cfg: &PortConfig) -> Decision {
    decide(&parse(f), cfg)
}

/// Counters after accounting one frame from zero.
fn count_one(f: &[u8], cfg: &PortConfig) -> PortCounters {
    let mut c = PortCounters::ZERO;
    account(&mut c, &decide_frame(f, cfg), f.len() as u64);
    c
}

mod decide {
    use super::*;

    #[test]
    fn malformed_frames_pass_when_configured_to_pass() {
        for m in malformed_corpus() {
            let d = decide_frame(&m.frame, &cfg_pass());
            assert_eq!(
                d,
                Decision {
                    action: Action::Pass,
                    outcome: Outcome::Malformed(m.error)
                },
                "{}",
                m.what
            );
        }
    }

    #[test]
    fn malformed_frames_drop_when_configured_to_drop() {
        for m in malformed_corpus() {
            let d = decide_frame(&m.frame, &cfg_drop());
            assert_eq!(
                d,
                Decision {
                    action: Action::Drop,
                    outcome: Outcome::Malformed(m.error)
                },
                "{}",
                m.what
            );
        }
    }

    #[test]
    fn every_error_value_gets_the_configured_action() {
        for e in ParseError::ALL {
            assert_eq!(decide(&Err(e), &cfg_pass()).action, Action::Pass);
            assert_eq!(decide(&Err(e), &cfg_drop()).action, Action::Drop);
            assert_eq!(decide(&Err(e), &cfg_drop()).outcome, Outcome::Malformed(e));
        }
    }

    #[test]
    fn mac_control_frames_are_consumed_whatever_the_malformed_policy() {
        let frames = [
            build::pfc_frame(SRC_MAC, 0x0081, [0x10; 8]),
            build::pause_frame(SRC_MAC, 0x20),
            mac_ctl_frame(0x0002),
        ];
        for f in frames {
            let p = parse(f.as_slice()).unwrap();
            for cfg in [cfg_pass(), cfg_drop()] {
                let d = decide_frame(&f, &cfg);
                assert_eq!(
                    d,
                    Decision {
                        action: Action::Drop,
                        outcome: Outcome::MacControl(p.mac_ctl)
                    }
                );
            }
        }
    }

    #[test]
    fn data_frames_pass_with_their_class() {
        let cfg = cfg_drop();
        let d = decide_frame(&roce_frame(&l2(), &ip4().dscp(3)), &cfg);
        assert_eq!(
            d,
            Decision {
                action: Action::Pass,
                outcome: Outcome::Classified {
                    class: Class {
                        tc: 3,
                        lossless: true,
                        roce: true,
                        cnp: false,
                        uet: false
                    },
                    non_ip: false,
                    qinq: false,
                },
            }
        );
    }

    #[test]
    fn non_ip_frames_pass_marked_non_ip() {
        let d = decide_frame(&arp_frame(&l2_tagged(4, 9)), &cfg_drop());
        assert_eq!(
            d,
            Decision {
                action: Action::Pass,
                outcome: Outcome::Classified {
                    class: Class {
                        tc: 4,
                        lossless: true,
                        roce: false,
                        cnp: false,
                        uet: false
                    },
                    non_ip: true,
                    qinq: false,
                },
            }
        );
    }

    #[test]
    fn qinq_frames_pass_marked_qinq_and_non_ip() {
        let d = decide_frame(
            &roce_frame(&l2_qinq(5, 1, 3, 2), &ip4().dscp(3)),
            &cfg_drop(),
        );
        assert_eq!(
            d,
            Decision {
                action: Action::Pass,
                outcome: Outcome::Classified {
                    class: Class {
                        tc: 5,
                        lossless: false,
                        roce: false,
                        cnp: false,
                        uet: false
                    },
                    non_ip: true,
                    qinq: true,
                },
            }
        );
    }

    #[test]
    fn ipv6_and_cnp_frames_pass() {
        let cfg = cfg_drop();
        for f in [roce_v6(), build::cnp_frame(&l2(), &ip6(), 1, 2)] {
            let d = decide_frame(&f, &cfg);
            assert_eq!(d.action, Action::Pass);
            assert!(matches!(
                d.outcome,
                Outcome::Classified {
                    non_ip: false,
                    qinq: false,
                    ..
                }
            ));
        }
    }
}

mod account {
    use super::*;

    #[test]
    fn lossless_rocev2_frame() {
        let f = roce_frame(&l2(), &ip4().dscp(3));
        let mut want = PortCounters::ZERO;
        want.rx_tc_pkts[3] = 1;
        want.rx_tc_bytes[3] = f.len() as u64;
        want.rx_roce = 1;
        want.rx_lossless = 1;
        want.verdict_pass = 1;
        assert_eq!(count_one(&f, &cfg_pass()), want);
    }

    #[test]
    fn lossy_rocev2_frame() {
        let f = roce_frame(&l2(), &ip6().dscp(0));
        let mut want = PortCounters::ZERO;
        want.rx_tc_pkts[1] = 1;
        want.rx_tc_bytes[1] = f.len() as u64;
        want.rx_roce = 1;
        want.verdict_pass = 1;
        assert_eq!(count_one(&f, &cfg_pass()), want);
    }

    #[test]
    fn cnp_counts_as_rocev2_and_cnp() {
        let f = build::cnp_frame(&l2(), &ip4().dscp(46), 1, 1);
        let mut want = PortCounters::ZERO;
        want.rx_tc_pkts[6] = 1;
        want.rx_tc_bytes[6] = f.len() as u64;
        want.rx_roce = 1;
        want.rx_cnp = 1;
        want.verdict_pass = 1;
        assert_eq!(count_one(&f, &cfg_pass()), want);
    }

    #[test]
    fn plain_udp_frame_counts_only_its_class() {
        let f = build::udp_frame(&l2(), &ip4().dscp(46), 1, 2, &[0; 4]);
        let mut want = PortCounters::ZERO;
        want.rx_tc_pkts[5] = 1;
        want.rx_tc_bytes[5] = 60;
        want.verdict_pass = 1;
        assert_eq!(count_one(&f, &cfg_pass()), want);
    }

    #[test]
    fn arp_counts_as_non_ip_in_default_tc() {
        let cfg = PortConfig {
            default_tc: 2,
            ..cfg_pass()
        };
        let f = arp_frame(&l2());
        let mut want = PortCounters::ZERO;
        want.rx_tc_pkts[2] = 1;
        want.rx_tc_bytes[2] = 60;
        want.rx_non_ip = 1;
        want.verdict_pass = 1;
        assert_eq!(count_one(&f, &cfg), want);
    }

    #[test]
    fn qinq_counts_as_qinq_and_non_ip() {
        let f = roce_frame(&l2_qinq(4, 1, 1, 2), &ip4());
        let mut want = PortCounters::ZERO;
        want.rx_tc_pkts[4] = 1;
        want.rx_tc_bytes[4] = f.len() as u64;
        want.rx_lossless = 1;
        want.rx_non_ip = 1;
        want.rx_qinq = 1;
        want.verdict_pass = 1;
        assert_eq!(count_one(&f, &cfg_pass()), want);
    }

    #[test]
    fn pfc_counts_each_enabled_priority() {
        let f = build::pfc_frame(SRC_MAC, 0b1010_0101, [0xffff; 8]);
        let mut want = PortCounters::ZERO;
        want.rx_pfc = [1, 0, 1, 0, 0, 1, 0, 1];
        want.rx_pfc_xoff = [1, 0, 1, 0, 0, 1, 0, 1];
        want.verdict_drop = 1;
        assert_eq!(count_one(&f, &cfg_pass()), want);
    }

    #[test]
    fn pfc_counts_each_priority_alone() {
        for prio in 0..8 {
            let f = build::pfc_frame(SRC_MAC, 1 << prio, [0; 8]);
            let mut want = PortCounters::ZERO;
            want.rx_pfc[prio] = 1;
            want.verdict_drop = 1;
            assert_eq!(count_one(&f, &cfg_pass()), want, "priority {prio}");
        }
    }

    #[test]
    fn pfc_counts_by_enable_bit_not_by_time() {
        // priority 1 has a time but no enable bit; priority 2 is enabled with time 0 (XON)
        let f = build::pfc_frame(SRC_MAC, 0b0000_0100, [0, 0xffff, 0, 0, 0, 0, 0, 0]);
        let mut want = PortCounters::ZERO;
        want.rx_pfc[2] = 1;
        want.verdict_drop = 1;
        assert_eq!(count_one(&f, &cfg_pass()), want);
        // rx_pfc_xoff counts only the enabled priorities with a nonzero time
        let f = build::pfc_frame(SRC_MAC, 0b0000_1100, [0, 0xffff, 0, 7, 0, 0, 0, 0]);
        let mut want = PortCounters::ZERO;
        want.rx_pfc[2] = 1;
        want.rx_pfc[3] = 1;
        want.rx_pfc_xoff[3] = 1;
        want.verdict_drop = 1;
        assert_eq!(count_one(&f, &cfg_pass()), want);
    }

    #[test]
    fn pfc_reserved_vector_bits_count_nothing() {
        let f = build::pfc_frame(SRC_MAC, 0xff00, [1; 8]);
        let mut want = PortCounters::ZERO;
        want.verdict_drop = 1;
        assert_eq!(count_one(&f, &cfg_pass()), want);
    }

    #[test]
    fn pause_counts_pause() {
        let f = build::pause_frame(SRC_MAC, 100);
        let mut want = PortCounters::ZERO;
        want.rx_pause = 1;
        want.verdict_drop = 1;
        assert_eq!(count_one(&f, &cfg_pass()), want);
    }

    #[test]
    fn other_mac_control_opcodes_count_as_other() {
        for opcode in [0x0000, 0x0002, 0x0201, 0xffff] {
            let f = mac_ctl_frame(opcode);
            let mut want = PortCounters::ZERO;
            want.rx_mac_ctl_other = 1;
            want.verdict_drop = 1;
            assert_eq!(count_one(&f, &cfg_drop()), want, "opcode {opcode:#06x}");
        }
    }

    #[test]
    fn malformed_frames_count_their_error_and_verdict() {
        for m in malformed_corpus() {
            for (cfg, pass) in [(cfg_pass(), true), (cfg_drop(), false)] {
                let mut want = PortCounters::ZERO;
                want.malformed[m.error as usize] = 1;
                if pass {
                    want.verdict_pass = 1;
                } else {
                    want.verdict_drop = 1;
                }
                assert_eq!(count_one(&m.frame, &cfg), want, "{}", m.what);
            }
        }
    }

    #[test]
    fn counters_accumulate_over_a_mixed_sequence() {
        let cfg = cfg_drop();
        let roce = roce_frame(&l2(), &ip4().dscp(4));
        let cnp = build::cnp_frame(&l2(), &ip6(), 1, 1);
        let pfc = build::pfc_frame(SRC_MAC, 0b0001_1000, [0xffff; 8]);
        let pause = build::pause_frame(SRC_MAC, 1);
        let arp = arp_frame(&l2_tagged(4, 1));
        let short = roce[..roce.len() - 1].to_vec();
        let seq: [&[u8]; 9] = [
            &roce,
            &roce,
            &cnp,
            &pfc,
            &pfc,
            &pause,
            &arp,
            &short,
            &roce[..5],
        ];

        let mut c = PortCounters::ZERO;
        for f in seq {
            account(&mut c, &decide(&parse(f), &cfg), f.len() as u64);
        }

        let mut want = PortCounters::ZERO;
        want.rx_tc_pkts[4] = 3; // two RoCEv2 frames and the ARP (PCP 4)
        want.rx_tc_bytes[4] = 2 * roce.len() as u64 + arp.len() as u64;
        want.rx_tc_pkts[6] = 1;
        want.rx_tc_bytes[6] = cnp.len() as u64;
        want.rx_roce = 3;
        want.rx_cnp = 1;
        want.rx_lossless = 3;
        want.rx_non_ip = 1;
        want.rx_pfc[3] = 2;
        want.rx_pfc[4] = 2;
        want.rx_pfc_xoff[3] = 2;
        want.rx_pfc_xoff[4] = 2;
        want.rx_pause = 1;
        want.malformed[ParseError::Ipv4LenExceedsFrame as usize] = 1;
        want.malformed[ParseError::EthTruncated as usize] = 1;
        want.verdict_pass = 4; // RoCEv2 x2, CNP, ARP
        want.verdict_drop = 5; // PFC x2, PAUSE, two malformed
        assert_eq!(c, want);
    }

    #[test]
    fn bytes_are_the_length_given_not_the_parsed_one() {
        let f = roce_frame(&l2(), &ip4().dscp(8));
        let mut c = PortCounters::ZERO;
        let d = decide_frame(&f, &cfg_pass());
        account(&mut c, &d, 1500);
        account(&mut c, &d, 64);
        assert_eq!(c.rx_tc_pkts[0], 2);
        assert_eq!(c.rx_tc_bytes[0], 1564);
    }

    #[test]
    fn mac_control_min_frame_is_what_the_builder_sends() {
        assert_eq!(
            build::pfc_frame(SRC_MAC, 1, [0; 8]).len(),
            macctl::MIN_FRAME
        );
        assert_eq!(build::pause_frame(SRC_MAC, 1).len(), macctl::MIN_FRAME);
    }
}

mod accumulate {
    use super::*;

    /// Counters with every field set to a distinct value starting at `base`.
    fn distinct(base: u64) -> PortCounters {
        let mut k = base;
        let mut next = || {
            k += 1;
            k
        };
        let mut c = PortCounters::ZERO;
        for i in 0..8 {
            c.rx_tc_pkts[i] = next();
            c.rx_tc_bytes[i] = next();
            c.rx_pfc[i] = next();
            c.rx_pfc_xoff[i] = next();
        }
        c.rx_roce = next();
        c.rx_cnp = next();
        c.rx_lossless = next();
        c.rx_non_ip = next();
        c.rx_qinq = next();
        c.rx_pause = next();
        c.rx_mac_ctl_other = next();
        for m in c.malformed.iter_mut() {
            *m = next();
        }
        c.verdict_pass = next();
        c.verdict_drop = next();
        c
    }

    #[test]
    fn accumulate_adds_every_field() {
        let a = distinct(0);
        let b = distinct(1000);
        let mut sum = a;
        sum.accumulate(&b);

        let mut want = PortCounters::ZERO;
        for i in 0..8 {
            want.rx_tc_pkts[i] = a.rx_tc_pkts[i] + b.rx_tc_pkts[i];
            want.rx_tc_bytes[i] = a.rx_tc_bytes[i] + b.rx_tc_bytes[i];
            want.rx_pfc[i] = a.rx_pfc[i] + b.rx_pfc[i];
            want.rx_pfc_xoff[i] = a.rx_pfc_xoff[i] + b.rx_pfc_xoff[i];
        }
        want.rx_roce = a.rx_roce + b.rx_roce;
        want.rx_cnp = a.rx_cnp + b.rx_cnp;
        want.rx_lossless = a.rx_lossless + b.rx_lossless;
        want.rx_non_ip = a.rx_non_ip + b.rx_non_ip;
        want.rx_qinq = a.rx_qinq + b.rx_qinq;
        want.rx_pause = a.rx_pause + b.rx_pause;
        want.rx_mac_ctl_other = a.rx_mac_ctl_other + b.rx_mac_ctl_other;
        for (i, m) in want.malformed.iter_mut().enumerate() {
            *m = a.malformed[i] + b.malformed[i];
        }
        want.verdict_pass = a.verdict_pass + b.verdict_pass;
        want.verdict_drop = a.verdict_drop + b.verdict_drop;
        assert_eq!(sum, want);
    }

    #[test]
    fn accumulate_of_zero_changes_nothing() {
        let a = distinct(7);
        let mut b = a;
        b.accumulate(&PortCounters::ZERO);
        assert_eq!(b, a);
    }

    #[test]
    fn per_cpu_copies_sum_to_the_single_cpu_count() {
        // the same frames split over two "CPUs" and summed equal one CPU
        let cfg = cfg_drop();
        let frames = [
            roce_frame(&l2(), &ip4().dscp(3)),
            build::cnp_frame(&l2(), &ip6(), 1, 1),
            build::pfc_frame(SRC_MAC, 0x00ff, [1; 8]),
            build::pause_frame(SRC_MAC, 1),
            mac_ctl_frame(0x0002),
            roce_frame(&l2_qinq(1, 1, 1, 1), &ip4()),
            roce_v4()[..20].to_vec(),
        ];
        let mut one = PortCounters::ZERO;
        let mut cpus = [PortCounters::ZERO; 2];
        for (i, f) in frames.iter().enumerate() {
            let d = decide_frame(f, &cfg);
            account(&mut one, &d, f.len() as u64);
            account(&mut cpus[i % 2], &d, f.len() as u64);
        }
        let mut sum = PortCounters::ZERO;
        for c in &cpus {
            sum.accumulate(c);
        }
        assert_eq!(sum, one);
        assert_ne!(one, PortCounters::ZERO);
    }
}
