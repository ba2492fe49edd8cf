//! DCQCN host algorithms: notification point rate limit, reaction point
//! cut / alpha / increase stages / timer catch-up, parameter scaling,
//! pacing, and a deterministic simulation of four senders sharing a RED
//! bottleneck.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use dataplane_common::dcqcn::*;
use dataplane_common::lossless::{red_hit, WredProfile, ECN_ALL};
use dataplane_common::rand::XorShift32;

const G40: u64 = 40_000_000_000;
const G100: u64 = 100_000_000_000;
const M100: u64 = 100_000_000;
const US: u64 = 1_000;
const MS: u64 = 1_000_000;

/// Every invariant a reaction point keeps.
fn assert_rp_invariants(st: &RpState, p: &DcqcnParams) {
    assert!(st.alpha <= ALPHA_ONE, "alpha {} above 1", st.alpha);
    if st.limited == 0 {
        assert_eq!(
            st.rc_bps, p.line_rate_bps,
            "unthrottled QP not at line rate"
        );
        assert_eq!(st.rt_bps, p.line_rate_bps);
    } else {
        assert!(
            st.rc_bps >= p.min_rate(),
            "rc {} below min {}",
            st.rc_bps,
            p.min_rate()
        );
        assert!(
            st.rc_bps <= st.rt_bps,
            "rc {} above rt {}",
            st.rc_bps,
            st.rt_bps
        );
        assert!(
            st.rt_bps <= p.line_rate_bps,
            "rt {} above line {}",
            st.rt_bps,
            p.line_rate_bps
        );
    }
}

// ---------------------------------------------------------------------------
// Parameters
// ---------------------------------------------------------------------------

mod params {
    use super::*;

    #[test]
    fn defaults_at_40g_are_the_papers() {
        let p = DcqcnParams::new(G40);
        assert_eq!(p.line_rate_bps, G40);
        assert_eq!(p.rai_bps, 40_000_000, "R_AI 40 Mb/s at 40G");
        assert_eq!(p.rhai_bps, 400_000_000, "R_HAI = 10 x R_AI");
        assert_eq!(p.byte_counter_bytes, 10_000_000, "B = 10 MB at 40G");
        assert_eq!(p.min_rate_bps, 400_000);
        assert_eq!(p.rate_increase_period_ns, 55 * US);
        assert_eq!(p.alpha_update_period_ns, 55 * US);
        assert_eq!(p.cnp_interval_ns, 50 * US);
        assert_eq!(p.g, ALPHA_ONE / 256);
        assert_eq!(p.initial_alpha, ALPHA_ONE);
        assert_eq!(p.fast_recovery_events, 5);
    }

    #[test]
    fn rates_scale_linearly_with_line_rate() {
        let p = DcqcnParams::new(G100);
        assert_eq!(p.rai_bps, 100_000_000);
        assert_eq!(p.rhai_bps, 1_000_000_000);
        assert_eq!(
            p.min_rate_bps, 1_000_000,
            "NVIDIA rpg_min_rate 1 Mb/s at 100G"
        );
        assert_eq!(p.byte_counter_bytes, 25_000_000);
        // timers are real time in new()
        assert_eq!(DcqcnParams::new(M100).rate_increase_period_ns, 55 * US);
        // a zero line rate is treated as 1 b/s, every step at least 1
        let z = DcqcnParams::new(0);
        assert_eq!(z.line_rate_bps, 1);
        assert!(
            z.rai_bps >= 1 && z.rhai_bps >= 1 && z.min_rate_bps >= 1 && z.byte_counter_bytes >= 1
        );
    }

    #[test]
    fn scaled_100m_is_100g_slowed_1000x() {
        let s = DcqcnParams::scaled(M100);
        let r = DcqcnParams::new(G100);
        assert_eq!(s.line_rate_bps, M100);
        assert_eq!(s.rai_bps * 1000, r.rai_bps);
        assert_eq!(s.rhai_bps * 1000, r.rhai_bps);
        assert_eq!(s.min_rate_bps * 1000, r.min_rate_bps);
        assert_eq!(s.rate_increase_period_ns, 55 * MS);
        assert_eq!(s.alpha_update_period_ns, 55 * MS);
        assert_eq!(s.cnp_interval_ns, 50 * MS);
        assert_eq!(
            s.byte_counter_bytes, r.byte_counter_bytes,
            "bytes do not scale"
        );
        assert_eq!(s.g, r.g);
        assert_eq!(s.fast_recovery_events, r.fast_recovery_events);
        // at the reference rate scaled() is new()
        assert_eq!(DcqcnParams::scaled(G100), r);
        // faster than the reference: timers shrink
        assert_eq!(
            DcqcnParams::scaled(400 * 1_000_000_000).rate_increase_period_ns,
            55 * US / 4
        );
        // absurd inputs do not panic and keep timers nonzero
        assert!(DcqcnParams::scaled(0).rate_increase_period_ns > 0);
        assert!(DcqcnParams::scaled(u64::MAX).rate_increase_period_ns >= 1);
    }

    /// The same scenario (one cut, then a sender at its rate through the
    /// increase stages) at 100G in real time and at 100 Mb/s scaled: every
    /// rate of the second is the first's / 1000 at 1000x the time.
    #[test]
    fn scaled_timeline_matches_100g() {
        fn run(p: &DcqcnParams, dt_ns: u64, steps: u64) -> Vec<u64> {
            let mut st = RpState::new(p);
            rp_on_cnp(&mut st, p, 0);
            rp_on_cnp(&mut st, p, 1); // rc = line/4, rt = line/2: room to increase
            let mut out = Vec::new();
            for s in 1..=steps {
                let now = s * dt_ns;
                let bytes = (u128::from(rp_rate(&st)) * u128::from(dt_ns) / 8_000_000_000) as u64;
                rp_on_sent(&mut st, p, now, bytes);
                out.push(rp_rate(&st));
            }
            out
        }
        let fast = run(&DcqcnParams::new(G100), 10 * US, 4000);
        let slow = run(&DcqcnParams::scaled(M100), 10 * MS, 4000);
        for (i, (f, s)) in fast.iter().zip(&slow).enumerate() {
            let diff = (*f as i128 - (*s as i128) * 1000).unsigned_abs();
            assert!(
                diff * 1000 <= u128::from(*f),
                "step {i}: 100G {f} vs scaled {s} x 1000"
            );
        }
        assert_eq!(*fast.last().unwrap(), G100, "recovered within 40 ms");
        assert_eq!(*slow.last().unwrap(), M100);
    }
}

// ---------------------------------------------------------------------------
// Notification point
// ---------------------------------------------------------------------------

mod np {
    use super::*;

    const I: u64 = DEFAULT_CNP_INTERVAL_NS;
    const T0: u64 = 1_000_000;

    #[test]
    fn first_ce_sends_at_once_plain_never() {
        let mut st = NpState::DEFAULT;
        assert_eq!(st.interval_ns, 50 * US);
        assert!(!np_on_packet(&mut st, T0, false));
        assert_eq!(st, NpState::DEFAULT, "a packet without CE changes nothing");
        assert!(np_on_packet(&mut st, T0, true));
        assert_eq!((st.sent, st.last_cnp_ns, st.cnps), (1, T0, 1));
        for t in [T0 + I, T0 + 2 * I, T0 + 100 * I] {
            assert!(!np_on_packet(&mut st, t, false));
        }
        // even at time 0
        let mut z = NpState::DEFAULT;
        assert!(np_on_packet(&mut z, 0, true));
    }

    #[test]
    fn interval_edges() {
        let mut st = NpState::DEFAULT;
        assert!(np_on_packet(&mut st, T0, true));
        assert!(!np_on_packet(&mut st, T0 + 1, true));
        assert!(
            !np_on_packet(&mut st, T0 + I - 1, true),
            "interval - 1: suppressed"
        );
        assert!(
            np_on_packet(&mut st, T0 + I, true),
            "exactly one interval: sent"
        );
        assert_eq!(st.last_cnp_ns, T0 + I);
        assert!(!np_on_packet(&mut st, T0 + 2 * I - 1, true));

        let mut st = NpState::DEFAULT;
        assert!(np_on_packet(&mut st, T0, true));
        assert!(
            np_on_packet(&mut st, T0 + I + 1, true),
            "interval + 1: sent"
        );
        assert_eq!(st.cnps, 2);
    }

    #[test]
    fn suppressed_ce_does_not_move_the_window() {
        let mut st = NpState::DEFAULT;
        assert!(np_on_packet(&mut st, T0, true));
        for t in (T0 + 1..T0 + I).step_by(997) {
            assert!(!np_on_packet(&mut st, t, true));
        }
        assert_eq!(st.last_cnp_ns, T0);
        assert!(np_on_packet(&mut st, T0 + I, true));
        assert_eq!(st.cnps, 2);
    }

    #[test]
    fn at_most_one_cnp_per_interval_under_continuous_marking() {
        // every packet CE, one every 1 us, for 10 ms: 200 CNPs, 50 us apart
        let mut st = NpState::DEFAULT;
        let mut sent = Vec::new();
        for t in (0..10 * MS).step_by(US as usize) {
            if np_on_packet(&mut st, t, true) {
                sent.push(t);
            }
        }
        assert_eq!(sent.len(), 200);
        assert!(sent.windows(2).all(|w| w[1] - w[0] == I));
    }

    #[test]
    fn qps_are_independent() {
        let mut a = NpState::DEFAULT;
        let mut b = NpState::DEFAULT;
        assert!(np_on_packet(&mut a, T0, true));
        assert!(
            np_on_packet(&mut b, T0 + 1, true),
            "QP b's first CE is not held by QP a's CNP"
        );
        assert!(!np_on_packet(&mut a, T0 + 2, true));
        assert!(np_on_packet(&mut a, T0 + I, true));
        assert!(
            !np_on_packet(&mut b, T0 + I, true),
            "b's window started 1 ns later"
        );
        assert!(np_on_packet(&mut b, T0 + I + 1, true));
    }

    #[test]
    fn custom_interval_and_clock_going_back() {
        let p = DcqcnParams::scaled(M100);
        let mut st = NpState::new(p.cnp_interval_ns);
        assert!(np_on_packet(&mut st, 10 * MS, true));
        assert!(!np_on_packet(&mut st, 59 * MS, true));
        assert!(np_on_packet(&mut st, 60 * MS, true));
        // an older timestamp is no time elapsed
        assert!(!np_on_packet(&mut st, 0, true));
        assert_eq!(st.last_cnp_ns, 60 * MS);
        // interval 0: every CE packet
        let mut z = NpState::new(0);
        assert!(np_on_packet(&mut z, 5, true) && np_on_packet(&mut z, 5, true));
    }
}

// ---------------------------------------------------------------------------
// Reaction point
// ---------------------------------------------------------------------------

mod rp {
    use super::*;

    /// Reference `floor(rate * alpha / 2)` in 128-bit arithmetic.
    fn ref_cut(rate: u64, alpha: u32) -> u64 {
        ((u128::from(rate) * u128::from(alpha)) >> 17) as u64
    }

    #[test]
    fn starts_unthrottled_and_timers_idle() {
        let p = DcqcnParams::new(G40);
        let mut st = RpState::new(&p);
        assert_eq!(rp_rate(&st), G40);
        assert_eq!(st.limited, 0);
        for now in [0, 55 * US, 10 * MS, u64::MAX] {
            assert_eq!(rp_tick(&mut st, &p, now), G40);
            assert_eq!(rp_on_sent(&mut st, &p, now, 100_000_000), G40);
        }
        assert_eq!(st, RpState::new(&p), "nothing counted while unthrottled");
    }

    #[test]
    fn first_cnp_halves_the_rate() {
        let p = DcqcnParams::new(G40);
        let mut st = RpState::new(&p);
        assert_eq!(rp_on_cnp(&mut st, &p, 7 * MS), G40 / 2);
        assert_eq!(st.rt_bps, G40, "RT = RC before the cut");
        assert_eq!(st.alpha, ALPHA_ONE, "alpha = (1-g) 1 + g = 1");
        assert_eq!(st.limited, 1);
        assert_eq!(st.cnps, 1);
        assert_eq!(st.increase_due_ns, 7 * MS + 55 * US);
        assert_eq!(st.alpha_due_ns, 7 * MS + 55 * US);
        assert_rp_invariants(&st, &p);
    }

    #[test]
    fn cnp_cuts_by_alpha_over_two() {
        // A tiny Rai keeps the QP limited while alpha decays.
        let mut p = DcqcnParams::new(G40);
        p.rai_bps = 1;
        p.rhai_bps = 1;
        let mut st = RpState::new(&p);
        rp_on_cnp(&mut st, &p, 0);
        rp_on_cnp(&mut st, &p, 0); // RT = line/2: Rai = 1 keeps it limited
                                   // 200 alpha periods without CNP: alpha ~ (255/256)^200 = 0.458
        let now = 200 * p.alpha_update_period_ns;
        rp_tick(&mut st, &p, now);
        let a = st.alpha;
        assert!((29_500..30_500).contains(&a), "alpha {a}");
        let rc = st.rc_bps;
        rp_on_cnp(&mut st, &p, now);
        assert_eq!(st.rt_bps, rc, "RT = RC");
        assert_eq!(st.rc_bps, rc - ref_cut(rc, a), "RC = RC (1 - alpha/2)");
        // a cut of ~22.9 %
        let kept_permille = st.rc_bps * 1000 / rc;
        assert!(
            (768..=774).contains(&kept_permille),
            "kept {kept_permille} permille"
        );
        let g = u64::from(p.g);
        let expect_alpha = u64::from(a) + ((65536 - u64::from(a)) * g).div_ceil(65536);
        assert_eq!(
            u64::from(st.alpha),
            expect_alpha,
            "alpha = (1-g) alpha + g, step rounded up"
        );
        let exact = f64::from(a) * 255.0 / 256.0 + 256.0;
        assert!((f64::from(st.alpha) - exact).abs() <= 1.0);
        assert_rp_invariants(&st, &p);
    }

    #[test]
    fn rate_cut_is_exact_for_any_rate() {
        let mut rng = XorShift32(0x1234_5678);
        for _ in 0..10_000 {
            let rate = (u64::from(rng.next()) << 32) | u64::from(rng.next());
            let alpha = rng.next() % (ALPHA_ONE + 1);
            assert_eq!(
                rate_cut(rate, alpha),
                ref_cut(rate, alpha),
                "rate {rate} alpha {alpha}"
            );
        }
        assert_eq!(rate_cut(u64::MAX, ALPHA_ONE), u64::MAX / 2);
        assert_eq!(
            rate_cut(u64::MAX, u32::MAX),
            u64::MAX / 2,
            "alpha capped at 1"
        );
    }

    #[test]
    fn repeated_cnps_drive_alpha_to_one_and_rate_to_min_never_below() {
        let mut p = DcqcnParams::new(G40);
        p.initial_alpha = ALPHA_ONE / 16; // start far from 1
        let mut st = RpState::new(&p);
        let mut prev_alpha = 0;
        let mut prev_rc = u64::MAX;
        let mut at_min = None;
        for n in 0..3000u64 {
            let now = n * 50 * US; // a CNP every NP interval: timers never fire
            rp_on_cnp(&mut st, &p, now);
            assert_rp_invariants(&st, &p);
            assert!(st.alpha >= prev_alpha, "alpha non-decreasing under CNPs");
            assert!(st.rc_bps <= prev_rc, "rate non-increasing under CNPs");
            assert!(st.rc_bps >= p.min_rate_bps, "never below min rate");
            assert_eq!(
                st.stage, STAGE_NONE,
                "no increase event between CNPs 50 us apart"
            );
            if st.rc_bps == p.min_rate_bps && at_min.is_none() {
                at_min = Some(n);
            }
            prev_alpha = st.alpha;
            prev_rc = st.rc_bps;
        }
        // 1 - (15/16) (255/256)^3000 > 0.9999
        assert!(st.alpha >= ALPHA_ONE - 8, "alpha {} -> 1", st.alpha);
        assert_eq!(st.rc_bps, p.min_rate_bps);
        // 40G -> 400 kb/s is a factor 1e5: more CNPs than 17 halvings since
        // alpha starts at 1/16
        let n = at_min.expect("reached min rate");
        assert!(n > 17 && n < 1000, "min rate after {n} CNPs");
    }

    #[test]
    fn alpha_decays_geometrically_without_cnps() {
        let mut p = DcqcnParams::new(G40);
        p.rai_bps = 1;
        p.rhai_bps = 1;
        let mut st = RpState::new(&p);
        rp_on_cnp(&mut st, &p, 0);
        rp_on_cnp(&mut st, &p, 0); // RT = line/2: Rai = 1 keeps it limited
        let k = p.alpha_update_period_ns;
        let mut prev = st.alpha;
        for n in 1..=1000u64 {
            rp_tick(&mut st, &p, n * k);
            assert!(st.alpha < prev, "alpha decays every period ({n})");
            let exact = 65536.0 * (255.0f64 / 256.0).powi(n as i32);
            // each step rounds its decrement up: at most 1 unit per step
            assert!(f64::from(st.alpha) <= exact + 0.5 && f64::from(st.alpha) >= exact - n as f64);
            prev = st.alpha;
        }
        // half-life of 177 periods: (255/256)^177 = 0.50
        let mut h = RpState::new(&p);
        rp_on_cnp(&mut h, &p, 0);
        rp_on_cnp(&mut h, &p, 0);
        rp_tick(&mut h, &p, 177 * k);
        assert!((32_500..32_900).contains(&h.alpha), "alpha {}", h.alpha);
        // no decay in between periods
        let a = h.alpha;
        rp_tick(&mut h, &p, 178 * k - 1);
        assert_eq!(h.alpha, a);
        // and to exactly 0 eventually (steps round up)
        rp_tick(&mut h, &p, 4000 * k);
        assert_eq!(h.alpha, 0);
    }

    #[test]
    fn timer_only_fast_recovery_then_additive() {
        let p = DcqcnParams::new(G40);
        let t = p.rate_increase_period_ns;
        let mut st = RpState::new(&p);
        rp_on_cnp(&mut st, &p, 0);
        rp_on_cnp(&mut st, &p, 1); // rc 10G, rt 20G
        assert_eq!((st.rc_bps, st.rt_bps), (G40 / 4, G40 / 2));
        let rt = st.rt_bps;
        let mut rc = st.rc_bps;
        for k in 1..=5u64 {
            rp_tick(&mut st, &p, 1 + k * t - 1);
            assert_eq!(
                st.timer_events as u64,
                k - 1,
                "no event before the period ends"
            );
            rp_tick(&mut st, &p, 1 + k * t);
            assert_eq!(st.stage, STAGE_FAST_RECOVERY, "event {k}");
            rc = rt - (rt - rc) / 2;
            assert_eq!(
                (st.rc_bps, st.rt_bps),
                (rc, rt),
                "fast recovery halves the gap"
            );
        }
        rp_tick(&mut st, &p, 1 + 6 * t);
        assert_eq!(st.stage, STAGE_ADDITIVE);
        assert_eq!(st.rt_bps, rt + p.rai_bps, "RT += Rai");
        assert_eq!(st.rc_bps, st.rt_bps - (st.rt_bps - rc) / 2);
        // without bytes, never hyper
        rp_tick(&mut st, &p, 1 + 200 * t);
        assert_eq!(st.stage, STAGE_ADDITIVE);
        assert_eq!(st.rt_bps, rt + 195 * p.rai_bps);
    }

    #[test]
    fn byte_counter_and_hyper_increase_steps() {
        let p = DcqcnParams::new(G40);
        let (t, b) = (p.rate_increase_period_ns, p.byte_counter_bytes);
        let mut st = RpState::new(&p);
        rp_on_cnp(&mut st, &p, 0);
        rp_on_cnp(&mut st, &p, 0); // rc 10G, rt 20G
                                   // one byte short of B: no event
        rp_on_sent(&mut st, &p, 10, b - 1);
        assert_eq!((st.byte_events, st.stage), (0, STAGE_NONE));
        rp_on_sent(&mut st, &p, 10, 1);
        assert_eq!((st.byte_events, st.stage), (1, STAGE_FAST_RECOVERY));
        // alternate: timer k, then B bytes: counters (k, k+1)
        let mut expect = Vec::new();
        for k in 1..=9u32 {
            let rt0 = st.rt_bps;
            rp_tick(&mut st, &p, u64::from(k) * t);
            assert_eq!((st.timer_events, st.byte_events), (k, k));
            expect.push((st.stage, st.rt_bps - rt0));
            let rt1 = st.rt_bps;
            rp_on_sent(&mut st, &p, u64::from(k) * t + 1, b);
            assert_eq!(st.byte_events, k + 1);
            expect.push((st.stage, st.rt_bps - rt1));
            assert_rp_invariants(&st, &p);
        }
        use dataplane_common::dcqcn::{
            STAGE_ADDITIVE as A, STAGE_FAST_RECOVERY as F, STAGE_HYPER as H,
        };
        let (ai, hai) = (p.rai_bps, p.rhai_bps);
        assert_eq!(
            expect,
            vec![
                (F, 0), // (1,1)
                (F, 0), // (1,2)
                (F, 0),
                (F, 0),
                (F, 0),
                (F, 0),
                (F, 0),
                (F, 0),       // (4,5)
                (F, 0),       // (5,5)
                (A, ai),      // (5,6)
                (H, hai),     // (6,6): i = 1
                (H, hai),     // (6,7): i = 1
                (H, 2 * hai), // (7,7)
                (H, 2 * hai),
                (H, 3 * hai), // (8,8)
                (H, 3 * hai),
                (H, 4 * hai), // (9,9)
                (H, 4 * hai), // (9,10)
            ]
        );
    }

    #[test]
    fn increase_stage_table() {
        for (t, b, s) in [
            (0, 0, STAGE_FAST_RECOVERY),
            (5, 0, STAGE_FAST_RECOVERY),
            (5, 5, STAGE_FAST_RECOVERY),
            (6, 0, STAGE_ADDITIVE),
            (0, 6, STAGE_ADDITIVE),
            (100, 5, STAGE_ADDITIVE),
            (6, 6, STAGE_HYPER),
            (u32::MAX, u32::MAX, STAGE_HYPER),
        ] {
            assert_eq!(increase_stage(t, b, 5), s, "t {t} b {b}");
        }
    }

    /// A sender at its own rate after a deep cut: the stages run fast
    /// recovery, additive, hyper, in that order, RC reaches the line rate
    /// exactly and never exceeds it, and the limiter is released.
    #[test]
    fn recovers_to_line_rate_through_the_three_stages() {
        let mut p = DcqcnParams::new(G40);
        p.byte_counter_bytes = 1_000_000; // 200 us at 40G: the byte counter matters
        let mut st = RpState::new(&p);
        for i in 0..4 {
            rp_on_cnp(&mut st, &p, i);
        }
        assert_eq!(st.rc_bps, G40 / 16);
        let mut stages: Vec<u8> = Vec::new();
        let mut counts = [0u32; 4];
        let mut prev_events = 0u64;
        let dt = US;
        let mut now = 10;
        let mut released_at = None;
        while now < 100 * MS {
            now += dt;
            let bytes = rp_rate(&st) * dt / 8_000_000_000;
            rp_on_sent(&mut st, &p, now, bytes);
            assert!(
                st.rc_bps <= G40 && st.rt_bps <= G40,
                "never above line rate"
            );
            assert_rp_invariants(&st, &p);
            let events = u64::from(st.timer_events) + u64::from(st.byte_events);
            if st.limited == 1 && events != prev_events {
                counts[st.stage as usize] += 1;
                if stages.last() != Some(&st.stage) {
                    stages.push(st.stage);
                }
            }
            prev_events = events;
            if st.limited == 0 {
                released_at = Some(now);
                break;
            }
        }
        let released_at = released_at.expect("back to line rate within 100 ms");
        assert_eq!(st.rc_bps, G40);
        assert_eq!(
            stages,
            vec![STAGE_FAST_RECOVERY, STAGE_ADDITIVE, STAGE_HYPER]
        );
        assert!(
            counts[1] >= 5,
            "at least F fast-recovery events: {counts:?}"
        );
        assert!(counts[2] >= 1 && counts[3] >= 1, "{counts:?}");
        // hyper increase makes it fast (9.7 ms here): additive increase alone
        // would need (40G - 2.5G) / 40 Mb/s = 937 timer periods, 51 ms
        assert!(released_at < 20 * MS, "released at {} us", released_at / US);
    }

    /// Default parameters, timer only (a QP with nothing to send): from
    /// the minimum rate back to the line rate by fast recovery then
    /// additive increase, RC monotone, RT and RC never above line.
    #[test]
    fn recovers_from_min_rate_with_defaults() {
        let p = DcqcnParams::new(G40);
        let t = p.rate_increase_period_ns;
        let mut st = RpState::new(&p);
        for i in 0..40 {
            rp_on_cnp(&mut st, &p, i);
        }
        assert_eq!(st.rc_bps, p.min_rate_bps);
        let mut prev = st.rc_bps;
        let mut n = 0;
        let mut seen = Vec::new();
        while st.limited == 1 {
            n += 1;
            rp_tick(&mut st, &p, 40 + n * t);
            assert!(st.rc_bps >= prev && st.rc_bps <= G40);
            assert_rp_invariants(&st, &p);
            if seen.last() != Some(&st.stage) {
                seen.push(st.stage);
            }
            prev = st.rc_bps;
            assert!(n < 2000);
        }
        assert_eq!(seen, vec![STAGE_FAST_RECOVERY, STAGE_ADDITIVE]);
        // RT starts at min (RT = RC at the last cut): 1000 Rai steps to 40G,
        // then RC closes the gap by halves
        assert!((1000..1050).contains(&n), "{n} timer periods");
        assert_eq!(rp_rate(&st), G40);
        // the next CNP is a first CNP again: alpha back to 1, rate halved
        rp_on_cnp(&mut st, &p, 10_000 * t);
        assert_eq!(rp_rate(&st), G40 / 2);
    }

    #[test]
    fn tick_catches_up_like_fine_ticking() {
        let p = DcqcnParams::new(G40);
        let mut a = RpState::new(&p);
        rp_on_cnp(&mut a, &p, 123);
        rp_on_cnp(&mut a, &p, 456);
        let mut b = a;
        // 300 periods of both timers: one call vs one call per microsecond
        let end = 456 + 300 * p.rate_increase_period_ns + 17;
        rp_tick(&mut a, &p, end);
        let mut now = 456;
        while now < end {
            now = (now + US).min(end);
            rp_tick(&mut b, &p, now);
        }
        assert_eq!(a, b);
        assert_eq!(a.timer_events, 300);
        // a long idle gap: both reach the line rate and release
        let mut c = b;
        rp_tick(&mut b, &p, end + 10_000 * MS);
        let mut now = end;
        while c.limited == 1 {
            now += p.rate_increase_period_ns;
            rp_tick(&mut c, &p, now);
        }
        assert_eq!((b.limited, b.rc_bps), (0, G40));
        assert_eq!(b, c);
    }

    #[test]
    fn catch_up_is_bounded_and_keeps_phase() {
        let mut p = DcqcnParams::new(G40);
        p.rai_bps = 1; // never recovers: every event counts
        p.rhai_bps = 1;
        p.g = 1; // alpha barely moves: every decay counts
        let t = p.rate_increase_period_ns;
        let mut st = RpState::new(&p);
        rp_on_cnp(&mut st, &p, 1000);
        rp_on_cnp(&mut st, &p, 1000); // RT = line/2: Rai = 1 keeps it limited
        let a0 = st.alpha;
        let now = 1000 + 1_000_000 * t + 5;
        rp_tick(&mut st, &p, now);
        assert_eq!(
            st.timer_events, MAX_CATCHUP,
            "at most MAX_CATCHUP events per call"
        );
        assert_eq!(
            a0 - st.alpha,
            MAX_CATCHUP,
            "at most MAX_CATCHUP decays per call (1 unit each)"
        );
        assert!(st.increase_due_ns > now && st.increase_due_ns <= now + t);
        assert_eq!((st.increase_due_ns - 1000) % t, 0, "timer keeps its phase");
        assert!(
            st.alpha_due_ns > now
                && (st.alpha_due_ns - 1000).is_multiple_of(p.alpha_update_period_ns)
        );
        // the next period fires exactly on the grid
        let due = st.increase_due_ns;
        rp_tick(&mut st, &p, due - 1);
        assert_eq!(st.timer_events, MAX_CATCHUP);
        rp_tick(&mut st, &p, due);
        assert_eq!(st.timer_events, MAX_CATCHUP + 1);
        // a huge byte count: bounded too
        rp_on_sent(&mut st, &p, due, u64::MAX);
        assert_eq!(st.byte_events, MAX_CATCHUP);
        assert!(st.byte_acc < p.byte_counter_bytes);
    }

    #[test]
    fn cnp_restarts_timers_and_counters() {
        let p = DcqcnParams::new(G40);
        let t = p.rate_increase_period_ns;
        let mut st = RpState::new(&p);
        rp_on_cnp(&mut st, &p, 0);
        rp_on_sent(&mut st, &p, 3 * t, p.byte_counter_bytes + 77);
        assert_eq!((st.timer_events, st.byte_events, st.byte_acc), (3, 1, 77));
        let now = 3 * t + 10;
        rp_on_cnp(&mut st, &p, now);
        assert_eq!(
            (st.timer_events, st.byte_events, st.byte_acc, st.stage),
            (0, 0, 0, STAGE_NONE)
        );
        assert_eq!(st.increase_due_ns, now + t);
        assert_eq!(st.alpha_due_ns, now + p.alpha_update_period_ns);
        // a CNP older than the deadlines (clock skew) applies without catch-up
        let before = st.timer_events;
        rp_on_cnp(&mut st, &p, 0);
        assert_eq!(st.timer_events, before);
        assert_rp_invariants(&st, &p);
    }

    #[test]
    fn random_calls_keep_invariants_and_never_panic() {
        let mut rng = XorShift32(0xdcc0_0001);
        for round in 0..300 {
            let line = match round % 4 {
                0 => G40,
                1 => M100,
                2 => u64::from(rng.next()) << (rng.next() % 32),
                _ => u64::MAX >> (rng.next() % 64),
            };
            let mut p = if round % 2 == 0 {
                DcqcnParams::new(line)
            } else {
                DcqcnParams::scaled(line)
            };
            if round % 5 == 0 {
                // hostile parameters
                p.g = rng.next();
                p.initial_alpha = rng.next();
                p.fast_recovery_events = rng.next() % 8;
                p.rate_increase_period_ns = u64::from(rng.next() % 4);
                p.alpha_update_period_ns = u64::from(rng.next() % 4);
                p.byte_counter_bytes = u64::from(rng.next() % 3);
                p.rai_bps = u64::MAX >> (rng.next() % 64);
                p.rhai_bps = u64::MAX >> (rng.next() % 64);
                p.min_rate_bps = u64::MAX >> (rng.next() % 64);
            }
            let mut st = RpState::new(&p);
            let mut now = u64::from(rng.next());
            for _ in 0..200 {
                now = match rng.next() % 8 {
                    0 => now.saturating_sub(u64::from(rng.next() % 1000)),
                    1 => now.saturating_add(u64::from(rng.next()) << 16),
                    _ => now.saturating_add(u64::from(rng.next() % 100_000)),
                };
                match rng.next() % 3 {
                    0 => rp_on_cnp(&mut st, &p, now),
                    1 => rp_on_sent(&mut st, &p, now, u64::from(rng.next()) << (rng.next() % 40)),
                    _ => rp_tick(&mut st, &p, now),
                };
                assert_rp_invariants(&st, &p);
                let mut pacer = Pacer::NEW;
                pacer.on_send(now, rp_rate(&st), u64::from(rng.next()));
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Pacing
// ---------------------------------------------------------------------------

mod pacing {
    use super::*;

    #[test]
    fn tx_time() {
        assert_eq!(tx_time_ns(1_000_000_000, 1500), 12_000);
        assert_eq!(tx_time_ns(G100, 1000), 80);
        assert_eq!(tx_time_ns(3_000_000_000, 1000), 2667, "rounded up");
        assert_eq!(tx_time_ns(M100, 1000), 80_000);
        assert_eq!(tx_time_ns(0, 1000), u64::MAX, "rate 0: never");
        assert_eq!(tx_time_ns(1, 0), 0);
        // huge lengths are capped, no overflow
        assert_eq!(tx_time_ns(1, u64::MAX), tx_time_ns(1, MAX_PACED_LEN));
        assert_eq!(next_send_ns(5, 1_000_000_000, 1500), 12_005);
        assert_eq!(next_send_ns(u64::MAX - 1, 1, 1), u64::MAX);
    }

    #[test]
    fn back_to_back_is_exact_in_the_long_run() {
        let mut pc = Pacer::NEW;
        let rate = 3_000_000_000; // 2666.67 ns per 1000-byte frame
        let mut now = 0;
        let mut gaps = Vec::new();
        for _ in 0..3000 {
            assert!(pc.ready(now));
            let next = pc.on_send(now, rate, 1000);
            assert!(!pc.ready(next - 1));
            gaps.push(next - now);
            now = next;
        }
        assert_eq!(
            now, 8_000_000,
            "3000 frames x 8000 bits at 3 Gb/s = 8 ms exactly"
        );
        assert!(gaps.iter().all(|&g| g == 2666 || g == 2667));
    }

    #[test]
    fn idle_banks_no_credit_and_early_frames_wait() {
        let mut pc = Pacer::NEW;
        assert_eq!(pc.on_send(1_000, M100, 1000), 81_000);
        // handed over early: scheduled at next_ns
        assert_eq!(pc.on_send(2_000, M100, 1000), 161_000);
        // idle: starts at its own time
        assert_eq!(pc.on_send(1_000_000, M100, 1000), 1_080_000);
        // rate change between frames
        assert_eq!(pc.on_send(1_080_000, 2 * M100, 1000), 1_120_000);
        // rate 0 blocks
        assert_eq!(pc.on_send(2_000_000, 0, 1000), u64::MAX);
        assert!(!pc.ready(u64::MAX - 1));
    }
}

// ---------------------------------------------------------------------------
// Four senders, one RED bottleneck
// ---------------------------------------------------------------------------

/// Result of [`simulate`].
struct SimResult {
    /// Bytes each sender sent in the measurement window.
    window_bytes: [u64; 4],
    /// Bytes the link can carry in the window.
    window_capacity: u64,
    /// Largest queue (bytes) in the measurement window, and overall.
    max_queue_window: u64,
    max_queue: u64,
    cnps: [u32; 4],
}

/// Four DCQCN senders, each at line rate when it starts (sender i starts at
/// `i x stagger`), one bottleneck link at the same line rate with a RED/ECN
/// marker on its FIFO (fluid drain, exact to the bit-nanosecond), one
/// receiver NP per sender, CNPs back after the queueing delay plus a fixed
/// base round trip. Event driven, integer only, seeded: deterministic.
/// `k` dilates every time constant of the scenario (1 at 100G; 1000 for
/// `scaled(100 Mb/s)`). Without `react` the senders ignore CNPs (a control
/// run showing the assertions can fail).
fn simulate(p: &DcqcnParams, k: u64, frame: u64, seed: u32, react: bool) -> SimResult {
    const N: usize = 4;
    let stagger = 10 * MS * k;
    let base_rtt = 10 * US * k;
    let end = 150 * MS * k;
    let window_start = 80 * MS * k;
    // HPCC simulator's marking at 100G (REFERENCE.md): 400 KB / 1600 KB / 20 %
    let prof = WredProfile {
        green_min_threshold: 400_000,
        green_max_threshold: 1_600_000,
        green_drop_probability: 20,
        ecn: ECN_ALL,
        wred_green_enable: 0,
        _pad: 0,
    };
    let c = u128::from(p.line_rate_bps);
    let unit = 8 * 1_000_000_000u128; // queue in bit-ns per second units: bytes * 8e9
    let mut rng = XorShift32(seed);
    let mut rp = [RpState::new(p); N];
    let mut np = [NpState::new(p.cnp_interval_ns); N];
    let mut pacer = [Pacer::NEW; N];
    for (i, pc) in pacer.iter_mut().enumerate() {
        pc.next_ns = i as u64 * stagger;
    }
    let mut cnps: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::new();
    let mut q: u128 = 0; // bytes * 8e9
    let mut q_time = 0u64;
    let mut res = SimResult {
        window_bytes: [0; N],
        window_capacity: ((end - window_start) as u128 * c / unit) as u64,
        max_queue_window: 0,
        max_queue: 0,
        cnps: [0; N],
    };
    loop {
        let (i, t_send) = (0..N)
            .map(|i| (i, pacer[i].next_ns))
            .min_by_key(|&(i, t)| (t, i))
            .unwrap();
        if let Some(&Reverse((t_cnp, j))) = cnps.peek() {
            if t_cnp <= t_send {
                cnps.pop();
                if react {
                    rp_on_cnp(&mut rp[j], p, t_cnp);
                }
                res.cnps[j] += 1;
                continue;
            }
        }
        let now = t_send;
        if now >= end {
            break;
        }
        // drain to now, then enqueue this frame
        let drained = u128::from(now - q_time) * c;
        q = q.saturating_sub(drained);
        q_time = now;
        let q_bytes = (q / unit) as u64;
        let ce = red_hit(&prof, q_bytes.min(u64::from(u32::MAX)) as u32, rng.next());
        q += u128::from(frame) * unit;
        let q_after = (q / unit) as u64;
        res.max_queue = res.max_queue.max(q_after);
        if now >= window_start {
            res.max_queue_window = res.max_queue_window.max(q_after);
            res.window_bytes[i] += frame;
        }
        // the frame reaches the receiver once the queue ahead has drained
        let t_rx = now + (q / c) as u64 + base_rtt / 2;
        if np_on_packet(&mut np[i], t_rx, ce) {
            cnps.push(Reverse((t_rx + base_rtt / 2, i)));
        }
        rp_on_sent(&mut rp[i], p, now, frame);
        pacer[i].on_send(now, rp_rate(&rp[i]), frame);
    }
    res
}

fn check_fair(name: &str, r: &SimResult) {
    let fair = r.window_capacity / 4;
    let total: u64 = r.window_bytes.iter().sum();
    eprintln!(
        "{name}: shares of fair {:?} permille, utilisation {} permille, max queue {} B (window) {} B (all), cnps {:?}",
        r.window_bytes.map(|b| b * 1000 / fair),
        total * 1000 / r.window_capacity,
        r.max_queue_window,
        r.max_queue,
        r.cnps
    );
    for (i, &b) in r.window_bytes.iter().enumerate() {
        assert!(
            b * 4 >= fair * 3 && b * 4 <= fair * 5,
            "{name}: sender {i} got {b} B, fair share {fair} B"
        );
    }
    // the link is used (the senders together keep it busy)
    assert!(
        total * 100 >= r.window_capacity * 90,
        "{name}: utilisation {total} of {}",
        r.window_capacity
    );
    // the queue stays bounded: DCQCN holds it near the marking range
    assert!(
        r.max_queue_window < 1_600_000,
        "{name}: queue reached {} B after settling",
        r.max_queue_window
    );
    assert!(
        r.max_queue < 4_000_000,
        "{name}: queue reached {} B",
        r.max_queue
    );
}

#[test]
fn four_senders_converge_to_fair_share_100m_scaled() {
    let p = DcqcnParams::scaled(M100);
    let r = simulate(&p, 1000, 1000, 0x5eed_0001, true);
    check_fair("scaled 100M", &r);
}

#[test]
fn four_senders_converge_to_fair_share_100g() {
    let p = DcqcnParams::new(G100);
    let r = simulate(&p, 1, 1000, 0x5eed_0002, true);
    check_fair("100G", &r);
}

#[test]
fn simulation_is_deterministic() {
    let p = DcqcnParams::scaled(M100);
    let a = simulate(&p, 1000, 1000, 7, true);
    let b = simulate(&p, 1000, 1000, 7, true);
    assert_eq!(a.window_bytes, b.window_bytes);
    assert_eq!(a.max_queue, b.max_queue);
    assert_eq!(a.cnps, b.cnps);
}

/// Control: the same scenario with senders that ignore CNPs fills the
/// queue without bound (each sender runs at line rate into a link of line
/// rate), so the bounds checked above are DCQCN's doing.
#[test]
fn without_reaction_the_queue_grows() {
    let p = DcqcnParams::scaled(M100);
    let r = simulate(&p, 1000, 1000, 0x5eed_0001, false);
    eprintln!(
        "no reaction: max queue {} B, window bytes {:?}",
        r.max_queue, r.window_bytes
    );
    assert!(r.max_queue > 100_000_000, "queue {} B", r.max_queue);
}
