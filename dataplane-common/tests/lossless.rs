//! The lossless stage: egress queue model, WRED/ECN, ingress accounting,
//! PFC generation, headroom, PFC watchdog.
#![cfg(feature = "user")]

mod common;

use common::*;
use dataplane_common::build::{self, Ip};
use dataplane_common::lossless::*;
use dataplane_common::rand::XorShift32;
use dataplane_common::wire::{csum, ipv4, ipv6, macctl};

const G100: u32 = 100_000;
const G25: u32 = 25_000;
const G800: u32 = 800_000;

fn queue_with(slots: &[(usize, u32)]) -> EgressQueue {
    let mut q = EgressQueue::ZERO;
    for &(s, b) in slots {
        assert_eq!(q.enqueue(s, b), b);
    }
    q
}

fn drain(q: &mut EgressQueue, now: u64, speed: u32) -> (u32, [u32; MODEL_PORTS]) {
    let mut rel = [0xdead_beef; MODEL_PORTS];
    let d = q.drain(now, speed, &mut rel);
    (d, rel)
}

fn assert_invariant(q: &EgressQueue) {
    let sum: u64 = q.ingress.iter().map(|&b| u64::from(b)).sum();
    assert_eq!(u64::from(q.bytes), sum, "bytes == sum of ingress slots");
}

mod queue {
    use super::*;

    #[test]
    fn drains_at_line_rate() {
        // 100G = 12.5 bytes/ns: 1000 ns -> 12500 bytes.
        let mut q = queue_with(&[(0, 100_000)]);
        let (d, rel) = drain(&mut q, 1000, G100);
        assert_eq!(d, 12_500);
        assert_eq!(rel[0], 12_500);
        assert!(
            rel[1..].iter().all(|&r| r == 0),
            "out-parameter overwritten"
        );
        assert_eq!(q.bytes, 87_500);
        assert_eq!(q.tx_bytes, 12_500);
        assert_eq!(q.last_ns, 1000);
        // 25G = 3.125 bytes/ns: 8000 ns -> 25000 bytes.
        let mut q = queue_with(&[(0, 100_000)]);
        assert_eq!(drain(&mut q, 8000, G25).0, 25_000);
    }

    #[test]
    fn many_small_updates_drain_exactly_like_one() {
        // 25G: 3.125 bytes per ns; 1-ns updates carry the fraction.
        let mut a = queue_with(&[(0, 1_000_000)]);
        let mut b = a;
        let mut total = 0u64;
        for t in 1..=10_000u64 {
            total += u64::from(drain(&mut a, t, G25).0);
        }
        assert_eq!(total, 31_250);
        assert_eq!(drain(&mut b, 10_000, G25).0, 31_250);
        assert_eq!(a.bytes, b.bytes);
        // Odd steps at an odd speed (40G = 5 bytes/ns, 7-ns steps of 35 B;
        // 1234 Mb/s = 0.15425 B/ns).
        let mut c = queue_with(&[(0, 1_000_000)]);
        let mut total = 0u64;
        let mut t = 0;
        while t < 1_000_003 {
            t += 7;
            total += u64::from(drain(&mut c, t, 1234).0);
        }
        assert_eq!(total, t * 1234 / 8000);
    }

    #[test]
    fn stops_when_empty_and_idle_time_earns_no_credit() {
        let mut q = queue_with(&[(3, 1000)]);
        let (d, rel) = drain(&mut q, 1_000_000, G100);
        assert_eq!((d, rel[3], q.bytes, q.drain_frac), (1000, 1000, 0, 0));
        // A packet arriving after a long idle period drains from its arrival.
        assert_eq!(drain(&mut q, 2_000_000, G100).0, 0);
        q.enqueue(3, 10_000);
        assert_eq!(drain(&mut q, 2_000_100, G100).0, 1250);
    }

    #[test]
    fn speed_zero_never_drains_and_old_timestamps_are_no_time() {
        let mut q = queue_with(&[(0, 5000)]);
        assert_eq!(drain(&mut q, 1_000_000, 0).0, 0);
        assert_eq!(q.bytes, 5000);
        let before = q;
        assert_eq!(drain(&mut q, 10, G100).0, 0, "older now_ns drains nothing");
        assert_eq!(q, before);
    }

    #[test]
    fn pause_freezes_until_the_timer_expires() {
        let mut q = queue_with(&[(0, 1_000_000)]);
        let mut rel = [0; MODEL_PORTS];
        // 1000 ns of draining, then PFC with 0xffff quanta at 100G:
        // 65535 x 512 bits / 100 Gb/s = 335539.2 ns -> 335539 ns.
        assert_eq!(q.apply_pfc(1000, 0xffff, G100, &mut rel), 12_500);
        let dur = macctl::quanta_to_nanos(0xffff, u64::from(G100));
        assert_eq!(dur, 335_539);
        assert_eq!(q.paused_until_ns, 1000 + dur);
        assert!(q.is_paused(1000) && q.is_paused(1000 + dur - 1) && !q.is_paused(1000 + dur));
        // Inside the pause: nothing.
        assert_eq!(drain(&mut q, 100_000, G100).0, 0);
        assert_eq!(drain(&mut q, 1000 + dur, G100).0, 0);
        // 800 ns after expiry: only the un-paused 800 ns drain.
        assert_eq!(drain(&mut q, 1000 + dur + 800, G100).0, 10_000);
        assert_eq!(q.tx_bytes, 22_500);
    }

    #[test]
    fn pause_that_ends_between_two_updates_drains_only_the_unpaused_part() {
        let mut q = queue_with(&[(0, 1_000_000)]);
        let mut rel = [0; MODEL_PORTS];
        // 100 quanta at 100G = 512 ns; no update during the pause.
        q.apply_pfc(0, 100, G100, &mut rel);
        assert_eq!(q.paused_until_ns, 512);
        // One update 2512 ns later: 2000 un-paused ns -> 25000 bytes.
        assert_eq!(drain(&mut q, 2512, G100).0, 25_000);
    }

    #[test]
    fn pause_and_xon_between_updates_drain_around_the_pause() {
        let mut q = queue_with(&[(0, 1_000_000)]);
        let mut rel = [0; MODEL_PORTS];
        // Update at 0; pause at 1000 (the event drains 0..1000 first).
        assert_eq!(q.apply_pfc(1000, 0xffff, G100, &mut rel), 12_500);
        // XON at 3000: the paused 2000 ns drain nothing.
        assert_eq!(q.apply_pfc(3000, 0, G100, &mut rel), 0);
        assert!(!q.is_paused(3000));
        // 1000 ns later: 12500 bytes.
        assert_eq!(drain(&mut q, 4000, G100).0, 12_500);
        assert_eq!(q.bytes, 1_000_000 - 25_000);
    }

    #[test]
    fn a_new_pause_time_reloads_the_timer_and_xon_without_pause_is_harmless() {
        let mut q = queue_with(&[(0, 1_000_000)]);
        let mut rel = [0; MODEL_PORTS];
        q.apply_pfc(0, 0xffff, G100, &mut rel);
        // A shorter time replaces the longer one (802.1Qbb reloads).
        q.apply_pfc(100, 10, G100, &mut rel); // 10 quanta = 51.2 -> 51 ns
        assert_eq!(q.paused_until_ns, 151);
        assert_eq!(drain(&mut q, 251, G100).0, 1250);
        q.apply_pfc(300, 0, G100, &mut rel);
        assert_eq!(
            q.paused_until_ns, 151,
            "XON on a running queue changes nothing"
        );
    }

    #[test]
    fn enqueue_tracks_slots_and_the_watermark() {
        let mut q = EgressQueue::ZERO;
        q.enqueue(2, 100);
        q.enqueue(2 + MODEL_PORTS, 50); // masked to slot 2
        q.enqueue(15, 25);
        assert_eq!(
            (q.bytes, q.ingress[2], q.ingress[15], q.peak_bytes),
            (175, 150, 25, 175)
        );
        drain(&mut q, 80, G100); // 1000 bytes of capacity: empties
        assert_eq!((q.bytes, q.peak_bytes), (0, 175));
        // Near 4 GiB the queue accepts what fits.
        let mut q = queue_with(&[(0, u32::MAX - 10)]);
        assert_eq!(q.enqueue(1, 100), 10);
        assert_eq!(q.bytes, u32::MAX);
        assert_invariant(&q);
    }
}

mod release {
    use super::*;

    #[test]
    fn steady_interleaved_shares_release_in_proportion() {
        // 3:1 interleaved arrivals: FIFO releases 3:1, and so does the model.
        let mut q = queue_with(&[(0, 30_000), (5, 10_000)]);
        let (d, rel) = drain(&mut q, 320, G100); // 4000 bytes
        assert_eq!(d, 4000);
        assert_eq!((rel[0], rel[5]), (3000, 1000));
        assert_eq!((q.ingress[0], q.ingress[5]), (27_000, 9_000));
    }

    #[test]
    fn remainder_goes_one_byte_at_a_time_from_a_rotating_cursor() {
        // Three slots with one byte each, drained one byte per update
        // (8 bits at 1000 Mb/s = 8 ns): each slot gets a turn.
        let mut q = queue_with(&[(4, 1), (7, 1), (9, 1)]);
        let mut order = Vec::new();
        for t in [8, 16, 24] {
            let (d, rel) = drain(&mut q, t, 1000);
            assert_eq!(d, 1);
            order.push(rel.iter().position(|&r| r == 1).unwrap());
        }
        order.sort();
        assert_eq!(order, vec![4, 7, 9]);
        assert_eq!(q.bytes, 0);
    }

    #[test]
    fn remainder_is_deterministic() {
        let q0 = queue_with(&[(0, 7), (1, 5), (2, 3), (3, 1)]);
        let (mut a, mut b) = (q0, q0);
        assert_eq!(drain(&mut a, 40, 1000), drain(&mut b, 40, 1000)); // 5 bytes
        assert_eq!(a, b);
        assert_invariant(&a);
    }

    #[test]
    fn released_bytes_sum_exactly_to_drained_bytes() {
        // Random contributions over 16 slots and random drains: nothing lost
        // or created by rounding, no slot released more than it held.
        let mut rng = XorShift32(0x1234_5678);
        let mut q = EgressQueue::ZERO;
        let mut now = 0u64;
        let (mut total_in, mut total_out) = (0u64, 0u64);
        for _ in 0..20_000 {
            for _ in 0..(rng.next() % 4) {
                let slot = (rng.next() % 16) as usize;
                let len = 64 + rng.next() % 9000;
                assert_eq!(q.enqueue(slot, len), len);
                total_in += u64::from(len);
            }
            let before = q;
            now += u64::from(rng.next() % 2000);
            let (d, rel) = drain(&mut q, now, G25);
            let sum: u64 = rel.iter().map(|&r| u64::from(r)).sum();
            assert_eq!(sum, u64::from(d));
            for (i, &r) in rel.iter().enumerate() {
                assert!(r <= before.ingress[i]);
                assert_eq!(q.ingress[i], before.ingress[i] - r);
            }
            assert_invariant(&q);
            total_out += u64::from(d);
        }
        assert_eq!(total_in, total_out + u64::from(q.bytes));
        assert_eq!(q.tx_bytes, total_out);
    }

    #[test]
    fn large_queues_do_not_overflow_the_proportion() {
        // c_i * D with both near 2^32.
        let mut q = queue_with(&[(0, u32::MAX / 2), (1, u32::MAX / 2)]);
        let (d, rel) = drain(&mut q, u64::MAX / 2, G800);
        assert_eq!(d, u32::MAX - 1);
        assert_eq!(rel[0] + rel[1], d);
        assert_eq!(q.bytes, 0);
    }
}

mod wred {
    use super::*;

    /// HPCC's 100G marking: Kmin 400 KB, Kmax 1600 KB, Pmax 20 %.
    const HPCC_100G: WredProfile = WredProfile {
        green_min_threshold: 400_000,
        green_max_threshold: 1_600_000,
        green_drop_probability: 20,
        ecn: ECN_ALL,
        wred_green_enable: 1,
        _pad: 0,
    };

    fn fraction(p: &WredProfile, q: u32, n: u32, seed: u32) -> f64 {
        let mut rng = XorShift32(seed);
        let hits = (0..n)
            .filter(|_| wred(p, q, ECN_ECT0, true, false, rng.next()) == EcnAction::MarkCe)
            .count();
        hits as f64 / f64::from(n)
    }

    #[test]
    fn below_min_never_marks() {
        let mut rng = XorShift32(1);
        for q in [0, 1, 399_999] {
            for _ in 0..10_000 {
                assert_eq!(
                    wred(&HPCC_100G, q, ECN_ECT0, true, false, rng.next()),
                    EcnAction::Forward
                );
            }
        }
        // At exactly min the probability is 0, even for the smallest draw.
        assert!(!red_hit(&HPCC_100G, 400_000, 0));
    }

    #[test]
    fn at_or_above_max_always_marks() {
        let mut rng = XorShift32(2);
        for q in [1_600_000, 1_600_001, u32::MAX] {
            for _ in 0..10_000 {
                assert_eq!(
                    wred(&HPCC_100G, q, ECN_ECT1, true, false, rng.next()),
                    EcnAction::MarkCe
                );
            }
            assert!(red_hit(&HPCC_100G, q, u32::MAX));
        }
    }

    #[test]
    fn in_between_marks_with_the_linear_probability() {
        // 100k draws; tolerance 0.005 absolute (the standard deviation is at
        // most 0.0016 for p <= 0.5, so this is > 3 sigma).
        let cases = [
            (HPCC_100G, 400_000 + 300_000, 0.05), // 20% x 1/4
            (HPCC_100G, 1_000_000, 0.10),         // 20% x 1/2
            (HPCC_100G, 400_000 + 1_080_000, 0.18),
            (
                WredProfile {
                    green_drop_probability: 100,
                    ..HPCC_100G
                },
                1_000_000,
                0.5,
            ),
            (WredProfile::AZURE_LOSSLESS, 1_048_576 + 524_288, 0.025),
        ];
        for (i, (p, q, want)) in cases.into_iter().enumerate() {
            let got = fraction(&p, q, 100_000, 0x9e37_79b9 + i as u32);
            assert!((got - want).abs() < 0.005, "q={q}: {got} vs {want}");
        }
    }

    #[test]
    fn decision_is_exact_at_the_24_bit_resolution() {
        // p = 20% x 1/2 = 0.1: the draws r < 0.1 x 2^24 (1677721.6) hit.
        let q = 1_000_000;
        assert!(red_hit(&HPCC_100G, q, 1_677_721 << 8));
        assert!(!red_hit(&HPCC_100G, q, 1_677_722 << 8));
        // Low 8 bits of the draw are ignored.
        assert!(red_hit(&HPCC_100G, q, (1_677_721 << 8) | 0xff));
    }

    #[test]
    fn only_ect_gets_ce_and_ce_stays_ce() {
        let max = HPCC_100G.green_max_threshold;
        assert_eq!(
            wred(&HPCC_100G, max, ECN_ECT0, true, false, 0),
            EcnAction::MarkCe
        );
        assert_eq!(
            wred(&HPCC_100G, max, ECN_ECT1, false, false, 0),
            EcnAction::MarkCe
        );
        assert_eq!(
            wred(&HPCC_100G, max, ECN_CE, true, false, 0),
            EcnAction::Forward
        );
        assert_eq!(
            wred(&HPCC_100G, max, ECN_CE, false, false, 0),
            EcnAction::Forward
        );
        assert_eq!(
            wred(&HPCC_100G, max, ECN_NOT_ECT, true, false, 0),
            EcnAction::Forward
        );
    }

    #[test]
    fn lossy_non_ect_is_dropped_only_with_wred_enabled_and_lossless_never() {
        let max = HPCC_100G.green_max_threshold;
        assert_eq!(
            wred(&HPCC_100G, max, ECN_NOT_ECT, false, false, 0),
            EcnAction::Drop
        );
        assert_eq!(
            wred(&HPCC_100G, max, ECN_NOT_ECT, true, false, 0),
            EcnAction::Forward
        );
        let no_wred = WredProfile {
            wred_green_enable: 0,
            ..HPCC_100G
        };
        assert_eq!(
            wred(&no_wred, max, ECN_NOT_ECT, false, false, 0),
            EcnAction::Forward
        );
        // Below min nothing is dropped either.
        assert_eq!(
            wred(&HPCC_100G, 0, ECN_NOT_ECT, false, false, 0),
            EcnAction::Forward
        );
        // Marking off (ecn_none, or a colour that is not green): plain WRED
        // drops every lossy packet on the curve, lossless ones pass.
        for ecn in [ECN_NONE, ECN_YELLOW_RED] {
            let p = WredProfile { ecn, ..HPCC_100G };
            assert_eq!(wred(&p, max, ECN_ECT0, false, false, 0), EcnAction::Drop);
            assert_eq!(wred(&p, max, ECN_ECT0, true, false, 0), EcnAction::Forward);
        }
    }

    #[test]
    fn control_classes_are_never_marked_or_dropped() {
        for ecn in 0..4 {
            for lossless in [false, true] {
                assert_eq!(
                    wred(&HPCC_100G, u32::MAX, ecn, lossless, true, 0),
                    EcnAction::Forward
                );
            }
        }
    }

    #[test]
    fn equal_thresholds_are_a_step_and_probability_is_capped() {
        let step = WredProfile {
            green_min_threshold: 1000,
            green_max_threshold: 1000,
            ..HPCC_100G
        };
        assert!(!red_hit(&step, 999, 0));
        assert!(red_hit(&step, 1000, u32::MAX));
        let over = WredProfile {
            green_drop_probability: 250,
            ..HPCC_100G
        };
        // Capped at 100%: at q = max - 1 nearly every draw hits.
        assert!(red_hit(&over, 1_599_999, u32::MAX - 0x1000));
        assert!(!red_hit(&over, 400_001, u32::MAX));
    }

    #[test]
    fn sonic_ecn_names() {
        assert_eq!(ecn_mode_from_name("ecn_all"), Some(ECN_ALL));
        assert_eq!(ecn_mode_from_name("ecn_none"), Some(ECN_NONE));
        assert_eq!(ecn_mode_from_name("ecn_green_red"), Some(ECN_GREEN_RED));
        assert_eq!(ecn_mode_from_name("ecn_bogus"), None);
        assert!(WredProfile::AZURE_LOSSLESS.marks());
        assert!(!WredProfile {
            ecn: ECN_YELLOW,
            ..HPCC_100G
        }
        .marks());
    }
}

mod ce {
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
}

fn lossless_profile() -> BufferProfile {
    BufferProfile {
        size: 1000,
        xon: 0,
        xoff: 5000,
        xon_offset: DEFAULT_XON_OFFSET,
        static_th: 0,
        dynamic_th: 0,
        mode: TH_DYNAMIC,
        lossless: 1,
        _pad: 0,
    }
}

mod ingress {
    use super::*;

    #[test]
    fn dynamic_threshold_is_two_to_the_dynamic_th_times_free() {
        let pool = SharedPool {
            size: 3 << 20,
            used: 2 << 20,
        }; // free 1 MiB
        let free = 1u64 << 20;
        for th in -8i8..=7 {
            let p = BufferProfile {
                dynamic_th: th,
                ..lossless_profile()
            };
            let want = if th >= 0 { free << th } else { free >> -th };
            assert_eq!(shared_threshold(&p, &pool), want, "dynamic_th {th}");
        }
        assert_eq!(
            shared_threshold(
                &BufferProfile {
                    dynamic_th: -3,
                    ..lossless_profile()
                },
                &pool
            ),
            131_072
        );
        // Out of range is clamped (and rejected by validation).
        assert_eq!(
            shared_threshold(
                &BufferProfile {
                    dynamic_th: 100,
                    ..lossless_profile()
                },
                &pool
            ),
            free << 7
        );
        assert_eq!(
            shared_threshold(
                &BufferProfile {
                    dynamic_th: -100,
                    ..lossless_profile()
                },
                &pool
            ),
            free >> 8
        );
        // Full pool: threshold 0. Static: the configured bytes.
        assert_eq!(
            shared_threshold(&lossless_profile(), &SharedPool { size: 10, used: 10 }),
            0
        );
        let st = BufferProfile {
            mode: TH_STATIC,
            static_th: 12_345,
            ..lossless_profile()
        };
        assert_eq!(shared_threshold(&st, &pool), 12_345);
    }

    #[test]
    fn admit_charges_reserve_then_shared_then_headroom() {
        // Reserve 1000, alpha 1 (dynamic_th 0), headroom 5000, pool 10000:
        // shared stops at 5000 (threshold = free = 10000 - used).
        let p = lossless_profile();
        let mut pool = SharedPool {
            size: 10_000,
            used: 0,
        };
        let mut pg = PgState::ZERO;
        assert_eq!(
            pg.admit(&mut pool, &p, 500),
            Ok(Charge {
                reserve: 500,
                shared: 0,
                headroom: 0
            })
        );
        assert_eq!(
            pg.admit(&mut pool, &p, 500),
            Ok(Charge {
                reserve: 500,
                shared: 0,
                headroom: 0
            })
        );
        for _ in 0..10 {
            assert_eq!(
                pg.admit(&mut pool, &p, 500),
                Ok(Charge {
                    reserve: 0,
                    shared: 500,
                    headroom: 0
                })
            );
        }
        assert_eq!(
            (pg.shared_used, pool.used, shared_threshold(&p, &pool)),
            (5000, 5000, 5000)
        );
        for _ in 0..10 {
            assert_eq!(
                pg.admit(&mut pool, &p, 500),
                Ok(Charge {
                    reserve: 0,
                    shared: 0,
                    headroom: 500
                })
            );
        }
        let full = pg;
        assert_eq!(
            pg.admit(&mut pool, &p, 1),
            Err(DropReason::HeadroomExhausted)
        );
        assert_eq!(pg, full, "a drop changes nothing");
        assert_eq!(pool.used, 5000);
        assert_eq!((pg.total(), pg.peak), (11_000, 11_000));
    }

    #[test]
    fn a_packet_straddling_tiers_is_split() {
        let p = lossless_profile();
        let mut pool = SharedPool {
            size: 10_000,
            used: 0,
        };
        let mut pg = PgState {
            reserve_used: 700,
            ..PgState::ZERO
        };
        assert_eq!(
            pg.admit(&mut pool, &p, 500),
            Ok(Charge {
                reserve: 300,
                shared: 200,
                headroom: 0
            })
        );
        // Shared room 100 left under a static threshold of 300.
        let st = BufferProfile {
            mode: TH_STATIC,
            static_th: 300,
            ..p
        };
        assert_eq!(
            pg.admit(&mut pool, &st, 500),
            Ok(Charge {
                reserve: 0,
                shared: 100,
                headroom: 400
            })
        );
        // The pool's free bytes also bound the shared charge.
        let mut tiny = SharedPool { size: 50, used: 0 };
        let big = BufferProfile {
            mode: TH_STATIC,
            static_th: 1 << 20,
            ..p
        };
        let mut pg = PgState {
            reserve_used: 1000,
            ..PgState::ZERO
        };
        assert_eq!(
            pg.admit(&mut tiny, &big, 80),
            Ok(Charge {
                reserve: 0,
                shared: 50,
                headroom: 30
            })
        );
    }

    #[test]
    fn lossy_drops_when_shared_is_full_lossless_uses_headroom() {
        let lossy = BufferProfile {
            lossless: 0,
            xoff: 0,
            ..lossless_profile()
        };
        let mut pool = SharedPool {
            size: 10_000,
            used: 0,
        };
        let mut pg = PgState::ZERO;
        let mut admitted = 0;
        loop {
            match pg.admit(&mut pool, &lossy, 500) {
                Ok(c) => {
                    assert_eq!(c.headroom, 0);
                    admitted += 500;
                }
                Err(e) => {
                    assert_eq!(e, DropReason::SharedFull);
                    break;
                }
            }
        }
        assert_eq!(admitted, 6000); // 1000 reserve + 5000 shared
                                    // The same load on a lossless PG goes on into headroom.
        let mut pool = SharedPool {
            size: 10_000,
            used: 0,
        };
        let mut pg = PgState::ZERO;
        for _ in 0..12 {
            pg.admit(&mut pool, &lossless_profile(), 500).unwrap();
        }
        assert_eq!(
            pg.admit(&mut pool, &lossless_profile(), 500)
                .unwrap()
                .headroom,
            500
        );
    }

    #[test]
    fn release_goes_headroom_then_shared_then_reserve() {
        let mut pool = SharedPool {
            size: 10_000,
            used: 7000,
        };
        let mut pg = PgState {
            reserve_used: 1000,
            shared_used: 5000,
            headroom_used: 2000,
            peak: 8000,
        };
        assert_eq!(
            pg.release(&mut pool, 1500),
            Charge {
                reserve: 0,
                shared: 0,
                headroom: 1500
            }
        );
        assert_eq!(
            pg.release(&mut pool, 1000),
            Charge {
                reserve: 0,
                shared: 500,
                headroom: 500
            }
        );
        assert_eq!(pool.used, 6500);
        assert_eq!(
            pg.release(&mut pool, 4800),
            Charge {
                reserve: 300,
                shared: 4500,
                headroom: 0
            }
        );
        assert_eq!(pool.used, 2000);
        // More than held: releases what is left.
        assert_eq!(
            pg.release(&mut pool, 10_000),
            Charge {
                reserve: 700,
                shared: 0,
                headroom: 0
            }
        );
        assert_eq!(pg.total(), 0);
        assert_eq!(pg.peak, 8000, "watermark kept");
    }

    #[test]
    fn dynamic_threshold_shrinks_as_other_pgs_fill_the_pool() {
        // alpha 1: one PG alone gets S/2, two PGs S/3 each (shared = free).
        let p = BufferProfile {
            size: 0,
            ..lossless_profile()
        };
        let mut pool = SharedPool {
            size: 30_000,
            used: 0,
        };
        let (mut a, mut b) = (PgState::ZERO, PgState::ZERO);
        for _ in 0..120 {
            a.admit(&mut pool, &p, 100).unwrap();
            b.admit(&mut pool, &p, 100).unwrap();
        }
        assert_eq!((a.shared_used, b.shared_used), (10_000, 10_000));
        assert!(a.headroom_used > 0 && b.headroom_used > 0);
    }
}

mod pfc {
    use super::*;

    fn static_profile() -> BufferProfile {
        BufferProfile {
            mode: TH_STATIC,
            static_th: 10_000,
            xon_offset: 3072,
            ..lossless_profile()
        }
    }

    fn pg(shared: u32, headroom: u32) -> PgState {
        PgState {
            reserve_used: 1000,
            shared_used: shared,
            headroom_used: headroom,
            peak: 0,
        }
    }

    #[test]
    fn xoff_and_xon_hysteresis_edges() {
        let th = 10_000;
        assert_eq!(pfc_condition(&pg(10_000, 0), th, 3072), PfcCondition::Xoff);
        assert_eq!(pfc_condition(&pg(9_999, 0), th, 3072), PfcCondition::Hold);
        assert_eq!(pfc_condition(&pg(6_929, 0), th, 3072), PfcCondition::Hold);
        assert_eq!(pfc_condition(&pg(6_928, 0), th, 3072), PfcCondition::Xon);
        assert_eq!(
            pfc_condition(&pg(0, 1), th, 3072),
            PfcCondition::Xoff,
            "any headroom use pauses"
        );
        assert_eq!(
            pfc_condition(&pg(0, 0), 0, 3072),
            PfcCondition::Xoff,
            "threshold 0 (pool full)"
        );
        assert_eq!(
            pfc_condition(&pg(10_000, 0), th, 0),
            PfcCondition::Xoff,
            "XOFF wins a tie"
        );
    }

    #[test]
    fn state_machine_sends_xoff_once_then_xon() {
        let mut st = PfcTxState::ZERO;
        assert_eq!(st.step(0, PfcCondition::Hold, G100), PfcAction::None);
        assert_eq!(st.step(1, PfcCondition::Xon, G100), PfcAction::None);
        assert_eq!(
            st.step(2, PfcCondition::Xoff, G100),
            PfcAction::SendXoff { quanta: 0xffff }
        );
        assert_eq!(st.step(3, PfcCondition::Xoff, G100), PfcAction::None);
        assert_eq!(
            st.step(4, PfcCondition::Hold, G100),
            PfcAction::None,
            "hysteresis band keeps XOFF"
        );
        assert_eq!(st.step(5, PfcCondition::Xon, G100), PfcAction::SendXon);
        assert_eq!(st.step(6, PfcCondition::Xon, G100), PfcAction::None);
        assert_eq!(st.step(7, PfcCondition::Hold, G100), PfcAction::None);
    }

    #[test]
    fn refresh_is_due_at_half_the_pause() {
        // 0xffff quanta at 100G = 335539 ns; refresh every 167769 ns.
        assert_eq!(refresh_interval_ns(0xffff, G100), 167_769);
        let mut st = PfcTxState::ZERO;
        let t0 = 1_000_000;
        assert_eq!(
            st.step(t0, PfcCondition::Xoff, G100),
            PfcAction::SendXoff { quanta: 0xffff }
        );
        assert_eq!(
            st.step(t0 + 167_768, PfcCondition::Xoff, G100),
            PfcAction::None
        );
        assert_eq!(
            st.step(t0 + 167_769, PfcCondition::Hold, G100),
            PfcAction::SendRefresh { quanta: 0xffff }
        );
        assert_eq!(st.refresh_due_ns, t0 + 2 * 167_769);
        assert_eq!(
            st.step(t0 + 2 * 167_769 - 1, PfcCondition::Xoff, G100),
            PfcAction::None
        );
        assert_eq!(
            st.step(t0 + 2 * 167_769, PfcCondition::Xoff, G100),
            PfcAction::SendRefresh { quanta: 0xffff }
        );
        // 800G: 65535 x 0.64 ns = 41942 ns, refresh 20971 ns. Speed 0: floor.
        assert_eq!(refresh_interval_ns(0xffff, G800), 20_971);
        assert_eq!(refresh_interval_ns(0xffff, 0), MIN_REFRESH_NS);
        // A late call refreshes at once and re-bases the next due time.
        let late = t0 + 10_000_000;
        assert_eq!(
            st.step(late, PfcCondition::Xoff, G100),
            PfcAction::SendRefresh { quanta: 0xffff }
        );
        assert_eq!(st.refresh_due_ns, late + 167_769);
    }

    #[test]
    fn evaluate_uses_the_profile_and_ignores_lossy_pgs() {
        let prof = static_profile();
        let pool = SharedPool {
            size: 1 << 20,
            used: 0,
        };
        let mut st = PfcTxState::ZERO;
        assert_eq!(
            pfc_evaluate(&mut st, &pg(10_000, 0), &prof, &pool, 0, G100),
            PfcAction::SendXoff { quanta: 0xffff }
        );
        assert_eq!(
            pfc_evaluate(&mut st, &pg(7_000, 0), &prof, &pool, 1, G100),
            PfcAction::None
        );
        assert_eq!(
            pfc_evaluate(&mut st, &pg(6_928, 0), &prof, &pool, 2, G100),
            PfcAction::SendXon
        );
        let lossy = BufferProfile {
            lossless: 0,
            ..prof
        };
        let mut st = PfcTxState::ZERO;
        assert_eq!(
            pfc_evaluate(&mut st, &pg(1 << 20, 99), &lossy, &pool, 0, G100),
            PfcAction::None
        );
    }

    struct SimResult {
        drops: u32,
        xoffs: u32,
        refreshes: u32,
        xons: u32,
        max_headroom: u32,
        xoff: u32,
        react_ns: u64,
    }

    /// Two senders at 100G into one egress queue with 1000-byte packets,
    /// every 80 ns each, for 2 ms. Our XOFF/refresh/XON takes effect at a
    /// sender `react_ns` after the decision: emit latency (2 us) + cable
    /// round trip (100 m: 2 x 505 ns) + the peer's response (394 quanta =
    /// 2017 ns). The simulation delivers a packet when it is sent and charges
    /// the cable's flight to the reaction time instead. A pause lasts
    /// 0xffff quanta unless refreshed. With `egress_paused`, the egress queue
    /// itself is held by a downstream PFC (refreshed), so nothing drains:
    /// the worst case the headroom is sized for.
    fn incast(egress_paused: bool, xoff_percent: u32) -> SimResult {
        const PKT: u32 = 1000;
        let speed = G100;
        let hr = headroom(&HeadroomInput::new(speed, 100, 1500, 2_000));
        let peer_ns = u64::from(peer_response_quanta(speed)) * 512_000 / u64::from(speed);
        let react_ns = 2_000 + 2 * 505 + peer_ns;
        let pause_ns = macctl::quanta_to_nanos(PFC_QUANTA, u64::from(speed));
        let xoff = (u64::from(hr.xoff) * u64::from(xoff_percent) / 100) as u32;
        let prof = BufferProfile {
            size: 2000,
            xoff,
            dynamic_th: -2,
            ..lossless_profile()
        };
        let mut pool = SharedPool {
            size: 200_000,
            used: 0,
        };
        let mut pgs = [PgState::ZERO; 2];
        let mut tx = [PfcTxState::ZERO; 2];
        // Sender i is silent in [stop_at, resume_at).
        let mut stop_at = [u64::MAX; 2];
        let mut resume_at = [0u64; 2];
        let mut q = EgressQueue::ZERO;
        let gap = u64::from(PKT) * 8000 / u64::from(speed);
        let mut r = SimResult {
            drops: 0,
            xoffs: 0,
            refreshes: 0,
            xons: 0,
            max_headroom: 0,
            xoff,
            react_ns,
        };
        let mut rel = [0u32; MODEL_PORTS];
        let mut t = 0;
        while t < 2_000_000 {
            if egress_paused && !q.is_paused(t + 1) {
                q.apply_pfc(t, PFC_QUANTA, speed, &mut rel);
            } else {
                q.drain(t, speed, &mut rel);
            }
            for (i, pg) in pgs.iter_mut().enumerate() {
                pg.release(&mut pool, rel[i]);
            }
            for i in 0..2 {
                if !(stop_at[i] <= t && t < resume_at[i]) {
                    match pgs[i].admit(&mut pool, &prof, PKT) {
                        Ok(_) => assert_eq!(q.enqueue(i, PKT), PKT),
                        Err(e) => {
                            assert_eq!(e, DropReason::HeadroomExhausted);
                            r.drops += 1;
                        }
                    }
                }
                match pfc_evaluate(&mut tx[i], &pgs[i], &prof, &pool, t, speed) {
                    PfcAction::SendXoff { quanta } => {
                        r.xoffs += 1;
                        stop_at[i] = t + react_ns;
                        resume_at[i] =
                            stop_at[i] + macctl::quanta_to_nanos(quanta, u64::from(speed));
                    }
                    PfcAction::SendRefresh { .. } => {
                        r.refreshes += 1;
                        resume_at[i] = t + react_ns + pause_ns;
                    }
                    PfcAction::SendXon => {
                        r.xons += 1;
                        resume_at[i] = resume_at[i].min(t + react_ns);
                    }
                    PfcAction::None => {}
                }
                r.max_headroom = r.max_headroom.max(pgs[i].headroom_used);
            }
            t += gap;
        }
        // Drain everything: all accounting returns to zero.
        let mut rel = [0u32; MODEL_PORTS];
        q.apply_pfc(t, 0, speed, &mut rel);
        for (i, pg) in pgs.iter_mut().enumerate() {
            pg.release(&mut pool, rel[i]);
        }
        q.drain(t + 100_000_000, speed, &mut rel);
        for (i, pg) in pgs.iter_mut().enumerate() {
            pg.release(&mut pool, rel[i]);
            assert_eq!(pg.total(), 0);
        }
        assert_eq!((q.bytes, pool.used), (0, 0));
        r
    }

    #[test]
    fn incast_is_lossless_with_the_computed_headroom() {
        // 2:1 incast at 100G: each PG grows at half the line rate; XOFF and
        // XON alternate, headroom use stays under the computed xoff.
        let r = incast(false, 100);
        assert_eq!(r.drops, 0);
        assert!(
            r.xoffs > 10 && r.xons > 10,
            "xoff {} xon {}",
            r.xoffs,
            r.xons
        );
        assert!(
            r.max_headroom > 0 && r.max_headroom <= r.xoff,
            "{} of {}",
            r.max_headroom,
            r.xoff
        );
    }

    #[test]
    fn stuck_egress_is_lossless_and_refreshes_hold_the_senders() {
        // Nothing drains: each sender fills at line rate for the whole
        // reaction time (5027 ns x 12.5 B/ns = 62838 B, plus the packet
        // that crossed the threshold); the computed xoff (66663 B) holds it.
        let r = incast(true, 100);
        assert_eq!(r.drops, 0);
        assert_eq!((r.xoffs, r.xons), (2, 0));
        assert!(r.refreshes >= 2 * 11, "refreshes {}", r.refreshes); // 2 ms / 167.8 us each
        assert_eq!(r.xoff, 66_663);
        assert!(r.max_headroom <= r.xoff, "{} of {}", r.max_headroom, r.xoff);
        assert!(
            u64::from(r.max_headroom) >= r.react_ns * 25 / 2 - 1000,
            "{} vs {} ns",
            r.max_headroom,
            r.react_ns
        );
    }

    #[test]
    fn undersized_headroom_drops_so_the_check_above_is_not_vacuous() {
        let r = incast(true, 80);
        assert!(r.drops > 0);
        assert!(
            r.max_headroom > r.xoff - 1000 && r.max_headroom <= r.xoff,
            "filled up to the last packet that fits"
        );
    }
}

mod headroom_calc {
    use super::*;

    #[test]
    fn formula_against_a_hand_computed_example() {
        // 100G, 40 m, MTU 9100, 2000 ns measured emit latency, Mellanox
        // defaults (MAC/PHY 820 B, pipeline latency 18 KB):
        //   cable    = 2 x 40 x 100e9 / 1.98e8 / 8 = 40 x 100000 / 792
        //            = 5050.5 -> 5051
        //   peer     = 394 quanta x 64            = 25216
        //   response = 2000 ns x 12.5 B/ns         = 25000
        //   propagation = 9100 + 5051 + 820 + 25216 + 25000 = 65187
        //   xoff = 9100 + 65187 = 74287; xon = 18432; size = 92719
        assert_eq!(cable_bytes(40, G100), 5051);
        let h = headroom(&HeadroomInput::new(G100, 40, 9100, 2000));
        assert_eq!(
            h,
            Headroom {
                xoff: 74_287,
                xon: 18_432,
                size: 92_719
            }
        );
        // Explicit delays: 25G, 5 m, MTU 1500, no latency, no MAC/PHY, xon 0:
        //   cable = 5 x 25000 / 792 = 157.8 -> 158; peer = 80 x 64 = 5120
        //   xoff = 1500 + (1500 + 158 + 0 + 5120 + 0) = 8278
        let inp = HeadroomInput {
            mac_phy_delay: 0,
            pipeline_latency: 0,
            ..HeadroomInput::new(G25, 5, 1500, 0)
        };
        assert_eq!(
            headroom(&inp),
            Headroom {
                xoff: 8278,
                xon: 0,
                size: 8278
            }
        );
    }

    #[test]
    fn peer_response_table_and_other_speeds() {
        for (s, q) in [
            (800_000, 905),
            (400_000, 905),
            (200_000, 453),
            (100_000, 394),
            (50_000, 147),
            (40_000, 118),
            (25_000, 80),
            (10_000, 67),
        ] {
            assert_eq!(peer_response_quanta(s), q);
        }
        // Next listed speed above; 905 above 800G; 67 below 10G.
        assert_eq!(peer_response_quanta(1_000), 67);
        assert_eq!(peer_response_quanta(20_000), 80);
        assert_eq!(peer_response_quanta(300_000), 905);
        assert_eq!(peer_response_quanta(1_600_000), 905);
    }

    #[test]
    fn latency_bytes_round_up() {
        assert_eq!(bytes_for_nanos(1, G100), 13); // 12.5
        assert_eq!(bytes_for_nanos(8, 1000), 1);
        assert_eq!(bytes_for_nanos(9, 1000), 2);
        // Exact to 9.5 hours; beyond, at least 2^32 - 1 bytes per Mb/s.
        let h9 = 9 * 3600 * 1_000_000_000u64;
        assert_eq!(bytes_for_nanos(h9, G800), h9 * 100); // 100 B/ns
        assert!(bytes_for_nanos(u64::MAX, G800) >= u64::from(u32::MAX) * 800_000);
    }

    #[test]
    fn validation_names_the_problem() {
        let w = WredProfile::AZURE_LOSSLESS;
        assert_eq!(validate_wred(&w), Ok(()));
        let bad = WredProfile {
            green_min_threshold: 3,
            green_max_threshold: 2,
            ..w
        };
        assert_eq!(validate_wred(&bad), Err(ConfigError::WredMinAboveMax));
        assert_eq!(
            validate_wred(&WredProfile {
                green_drop_probability: 101,
                ..w
            }),
            Err(ConfigError::WredProbabilityOver100)
        );
        assert_eq!(
            validate_wred(&WredProfile { ecn: 8, ..w }),
            Err(ConfigError::UnknownEcnMode)
        );

        let pool = SharedPool {
            size: 100_000,
            used: 0,
        };
        let p = BufferProfile {
            xon: 18_432,
            xoff: 74_287,
            ..lossless_profile()
        };
        assert_eq!(validate_buffer_profile(&p, &pool), Ok(()));
        assert_eq!(
            validate_buffer_profile(&BufferProfile { xon: 80_000, ..p }, &pool),
            Err(ConfigError::XonAboveXoff)
        );
        assert_eq!(
            validate_buffer_profile(&BufferProfile { xoff: 100_001, ..p }, &pool),
            Err(ConfigError::HeadroomExceedsPool)
        );
        for th in [-9i8, 8, i8::MIN, i8::MAX] {
            assert_eq!(
                validate_buffer_profile(
                    &BufferProfile {
                        dynamic_th: th,
                        ..p
                    },
                    &pool
                ),
                Err(ConfigError::DynamicThOutOfRange)
            );
        }
        // A static profile does not care about dynamic_th.
        assert_eq!(
            validate_buffer_profile(
                &BufferProfile {
                    dynamic_th: 99,
                    mode: TH_STATIC,
                    ..p
                },
                &pool
            ),
            Ok(())
        );
        assert_eq!(
            validate_buffer_profile(&BufferProfile { mode: 9, ..p }, &pool),
            Err(ConfigError::UnknownThresholdMode)
        );

        let h = headroom(&HeadroomInput::new(G100, 40, 9100, 2000));
        assert_eq!(validate_headroom(&h, &pool), Ok(()));
        assert_eq!(
            validate_headroom(
                &h,
                &SharedPool {
                    size: 90_000,
                    used: 0
                }
            ),
            Err(ConfigError::HeadroomExceedsPool)
        );
        assert_eq!(
            validate_headroom(
                &Headroom {
                    xoff: 1,
                    xon: 2,
                    size: 3
                },
                &pool
            ),
            Err(ConfigError::XonAboveXoff)
        );
    }
}

mod watchdog {
    use super::*;

    const MS: u64 = 1_000_000;

    const STORM: WdObservation = WdObservation {
        paused: true,
        has_bytes: true,
        tx_bytes_delta: 0,
        rx_pfc_delta: 3,
    };
    const QUIET: WdObservation = WdObservation {
        paused: false,
        has_bytes: false,
        tx_bytes_delta: 0,
        rx_pfc_delta: 0,
    };

    fn primed(at: u64) -> PfcWd {
        let mut wd = PfcWd::ZERO;
        assert_eq!(
            wd.poll(&PfcWdConfig::DEFAULT, at, &STORM),
            WdEvent::None,
            "first poll only primes"
        );
        wd
    }

    #[test]
    fn storm_is_detected_only_after_the_full_detection_time() {
        let cfg = PfcWdConfig::DEFAULT; // 200 ms
        let mut wd = primed(0);
        for t in [50, 100, 150, 199] {
            assert_eq!(wd.poll(&cfg, t * MS, &STORM), WdEvent::None, "t={t} ms");
        }
        assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
        assert_eq!(wd.action(&cfg), Some(WdAction::Drop));
        assert_eq!(
            wd.poll(&cfg, 250 * MS, &STORM),
            WdEvent::None,
            "reported once"
        );
        // With SONiC's 200 ms poll, one full storm-like interval suffices.
        let mut wd = primed(0);
        assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
    }

    #[test]
    fn bunched_polls_do_not_add_up_to_a_false_alarm() {
        // Five storm-like polls in 120 ms (a poll-count detector with a
        // nominal 50 ms poll would fire at the fourth).
        let cfg = PfcWdConfig::DEFAULT;
        let mut wd = primed(0);
        for t in [100, 105, 110, 115, 120] {
            assert_eq!(wd.poll(&cfg, t * MS, &STORM), WdEvent::None);
        }
        assert_eq!(wd.poll(&cfg, 199 * MS, &STORM), WdEvent::None);
        assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
    }

    #[test]
    fn one_poll_with_tx_progress_resets_the_run() {
        let cfg = PfcWdConfig::DEFAULT;
        let mut wd = primed(0);
        for t in [50, 100, 150] {
            wd.poll(&cfg, t * MS, &STORM);
        }
        let progress = WdObservation {
            tx_bytes_delta: 1,
            ..STORM
        };
        assert_eq!(wd.poll(&cfg, 200 * MS, &progress), WdEvent::None);
        for t in [250, 300, 350, 399] {
            assert_eq!(wd.poll(&cfg, t * MS, &STORM), WdEvent::None, "t={t} ms");
        }
        assert_eq!(wd.poll(&cfg, 400 * MS, &STORM), WdEvent::StormDetected);
    }

    #[test]
    fn every_condition_is_needed() {
        let cfg = PfcWdConfig::DEFAULT;
        for obs in [
            WdObservation {
                rx_pfc_delta: 0,
                ..STORM
            }, // PFC stopped
            WdObservation {
                paused: false,
                ..STORM
            },
            WdObservation {
                has_bytes: false,
                ..STORM
            },
            WdObservation {
                tx_bytes_delta: 64,
                ..STORM
            },
        ] {
            let mut wd = primed(0);
            for t in 1..=20u64 {
                assert_eq!(wd.poll(&cfg, t * 100 * MS, &obs), WdEvent::None, "{obs:?}");
            }
        }
    }

    #[test]
    fn restored_after_the_restoration_time_without_pfc() {
        let cfg = PfcWdConfig {
            action: WD_ACTION_FORWARD,
            ..PfcWdConfig::DEFAULT
        };
        let mut wd = primed(0);
        assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
        assert_eq!(wd.action(&cfg), Some(WdAction::Forward));
        // PFC goes on until 600 ms: stays in storm.
        for t in [300, 400, 500, 600] {
            assert_eq!(wd.poll(&cfg, t * MS, &STORM), WdEvent::None);
        }
        // No PFC after 600 ms: restored at 800 ms, not before.
        for t in [650, 700, 799] {
            assert_eq!(wd.poll(&cfg, t * MS, &QUIET), WdEvent::None, "t={t} ms");
        }
        assert_eq!(wd.poll(&cfg, 800 * MS, &QUIET), WdEvent::StormRestored);
        assert_eq!(wd.action(&cfg), None);
        // A new storm needs the full detection time again.
        assert_eq!(wd.poll(&cfg, 900 * MS, &STORM), WdEvent::None);
        assert_eq!(wd.poll(&cfg, 999 * MS, &STORM), WdEvent::None);
        assert_eq!(wd.poll(&cfg, 1000 * MS, &STORM), WdEvent::StormDetected);
    }

    #[test]
    fn no_restore_loop_while_raw_pfc_keeps_arriving() {
        // Action drop: the caller ignores PFC for the queue, so it is no
        // longer paused and drains; the raw RX PFC count keeps growing.
        let cfg = PfcWdConfig::DEFAULT;
        let mut wd = primed(0);
        assert_eq!(wd.poll(&cfg, 200 * MS, &STORM), WdEvent::StormDetected);
        let under_action = WdObservation {
            paused: false,
            has_bytes: false,
            tx_bytes_delta: 9000,
            rx_pfc_delta: 10,
        };
        for t in 3..=50u64 {
            assert_eq!(wd.poll(&cfg, t * 100 * MS, &under_action), WdEvent::None);
        }
        assert_eq!(wd.action(&cfg), Some(WdAction::Drop));
    }

    #[test]
    fn alert_action_and_out_of_order_polls() {
        let cfg = PfcWdConfig {
            action: WD_ACTION_ALERT,
            detection_time_ms: 100,
            ..PfcWdConfig::DEFAULT
        };
        let mut wd = primed(1000 * MS);
        assert_eq!(
            wd.poll(&cfg, 900 * MS, &STORM),
            WdEvent::None,
            "older poll ignored"
        );
        assert_eq!(wd.last_poll_ns, 1000 * MS);
        assert_eq!(wd.poll(&cfg, 1100 * MS, &STORM), WdEvent::StormDetected);
        assert_eq!(wd.action(&cfg), Some(WdAction::Alert));
    }
}

#[test]
fn layouts() {
    use core::mem::size_of;
    assert_eq!(size_of::<EgressQueue>(), 104);
    assert_eq!(size_of::<WredProfile>(), 12);
    assert_eq!(size_of::<BufferProfile>(), 24);
    assert_eq!(size_of::<SharedPool>(), 8);
    assert_eq!(size_of::<PgState>(), 16);
    assert_eq!(size_of::<PfcTxState>(), 24);
    assert_eq!(size_of::<PfcWdConfig>(), 12);
    assert_eq!(size_of::<PfcWd>(), 32);
}
