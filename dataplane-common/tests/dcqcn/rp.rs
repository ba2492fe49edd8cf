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
        let rate = (u64::from(rng.next_u32()) << 32) | u64::from(rng.next_u32());
        let alpha = rng.next_u32() % (ALPHA_ONE + 1);
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
        st.alpha_due_ns > now && (st.alpha_due_ns - 1000).is_multiple_of(p.alpha_update_period_ns)
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
            2 => u64::from(rng.next_u32()) << (rng.next_u32() % 32),
            _ => u64::MAX >> (rng.next_u32() % 64),
        };
        let mut p = if round % 2 == 0 {
            DcqcnParams::new(line)
        } else {
            DcqcnParams::scaled(line)
        };
        if round % 5 == 0 {
            // hostile parameters
            p.g = rng.next_u32();
            p.initial_alpha = rng.next_u32();
            p.fast_recovery_events = rng.next_u32() % 8;
            p.rate_increase_period_ns = u64::from(rng.next_u32() % 4);
            p.alpha_update_period_ns = u64::from(rng.next_u32() % 4);
            p.byte_counter_bytes = u64::from(rng.next_u32() % 3);
            p.rai_bps = u64::MAX >> (rng.next_u32() % 64);
            p.rhai_bps = u64::MAX >> (rng.next_u32() % 64);
            p.min_rate_bps = u64::MAX >> (rng.next_u32() % 64);
        }
        let mut st = RpState::new(&p);
        let mut now = u64::from(rng.next_u32());
        for _ in 0..200 {
            now = match rng.next_u32() % 8 {
                0 => now.saturating_sub(u64::from(rng.next_u32() % 1000)),
                1 => now.saturating_add(u64::from(rng.next_u32()) << 16),
                _ => now.saturating_add(u64::from(rng.next_u32() % 100_000)),
            };
            match rng.next_u32() % 3 {
                0 => rp_on_cnp(&mut st, &p, now),
                1 => rp_on_sent(
                    &mut st,
                    &p,
                    now,
                    u64::from(rng.next_u32()) << (rng.next_u32() % 40),
                ),
                _ => rp_tick(&mut st, &p, now),
            };
            assert_rp_invariants(&st, &p);
            let mut pacer = Pacer::NEW;
            pacer.on_send(now, rp_rate(&st), u64::from(rng.next_u32()));
        }
    }
}
