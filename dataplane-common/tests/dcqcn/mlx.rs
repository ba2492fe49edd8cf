//! The "Mlx" reaction point (HPCC simulator / NVIDIA): timer-driven alpha,
//! coalesced cuts, target clamped only after an increase event, F = 1,
//! constant hyper step, no byte counter, limiter never released.

use super::*;

const G25: u64 = 25_000_000_000;
const G400: u64 = 400_000_000_000;

#[test]
fn mlx_params_follow_hpcc_run_py() {
    let p = DcqcnParams::mlx(G25);
    assert_eq!(p.profile, PROFILE_MLX);
    assert_eq!(p.rai_bps, 5_000_000);
    assert_eq!(p.rhai_bps, 50_000_000);
    assert_eq!(p.min_rate_bps, 1_000_000_000);
    assert_eq!(p.alpha_update_period_ns, US);
    assert_eq!(p.rate_decrease_period_ns, 4 * US);
    assert_eq!(p.rate_increase_period_ns, 300 * US);
    assert_eq!(p.fast_recovery_events, 1);
    assert_eq!(p.byte_counter_bytes, 0);
    let p = DcqcnParams::mlx(G400);
    assert_eq!(p.rai_bps, 80_000_000);
    assert_eq!(p.rhai_bps, 800_000_000);
    assert_eq!(DcqcnParams::new(G400).profile, PROFILE_PAPER);
}

#[test]
fn mlx_first_cnp_cuts_at_the_decrease_check_with_decayed_alpha() {
    let p = DcqcnParams::mlx(G400);
    let mut st = RpState::new(&p);
    assert_eq!(rp_on_cnp(&mut st, &p, 0), G400, "no cut on the CNP itself");
    assert_eq!(st.limited, 1);
    assert_eq!(rp_tick(&mut st, &p, 4 * US - 1), G400);
    // four alpha periods without a CNP (the first CNP's bit is cleared),
    // then the cut at 4 us
    let mut a = ALPHA_ONE;
    for _ in 0..4 {
        a = alpha_decay(a, p.g);
    }
    let rc = rp_tick(&mut st, &p, 4 * US);
    assert_eq!(rc, G400 - rate_cut(G400, a));
    assert_eq!(st.alpha, a);
    assert_eq!(st.rt_bps, G400, "first cut: target stays at the old rate");
}

#[test]
fn mlx_coalesces_cnps_into_one_cut_per_period() {
    let p = DcqcnParams::mlx(G400);
    let mut st = RpState::new(&p);
    rp_on_cnp(&mut st, &p, 0);
    let after_first = rp_tick(&mut st, &p, 4 * US);
    for i in 0..10 {
        rp_on_cnp(&mut st, &p, 4 * US + 100 + i * 300);
    }
    let rc = rp_tick(&mut st, &p, 8 * US - 1);
    assert_eq!(rc, after_first, "no cut before the next check");
    let rc2 = rp_tick(&mut st, &p, 8 * US);
    assert!(rc2 < rc);
    // exactly one cut: with alpha as the timer left it
    assert_eq!(rc2, rc - rate_cut(rc, st.alpha));
    // no CNP in the next period: no cut
    assert_eq!(rp_tick(&mut st, &p, 12 * US), rc2);
}

#[test]
fn mlx_target_clamped_only_after_an_increase_event() {
    let p = DcqcnParams::mlx(G400);
    let mut st = RpState::new(&p);
    rp_on_cnp(&mut st, &p, 0);
    rp_tick(&mut st, &p, 4 * US);
    let rt0 = st.rt_bps;
    // a second cut before any increase event: RT kept
    rp_on_cnp(&mut st, &p, 5 * US);
    rp_tick(&mut st, &p, 8 * US);
    assert_eq!(st.rt_bps, rt0, "no increase since the cut: RT not clamped");
    // an increase event (300 us after the cut), then a cut: RT = RC
    rp_tick(&mut st, &p, 308 * US);
    assert_eq!(st.timer_events, 1);
    let rc_before = st.rc_bps;
    rp_on_cnp(&mut st, &p, 309 * US);
    rp_tick(&mut st, &p, 312 * US);
    assert_eq!(st.rt_bps, rc_before, "RT clamped to RC at the cut");
    assert_eq!(st.timer_events, 0);
}

#[test]
fn mlx_increase_stages_fast_additive_then_constant_hyper() {
    let p = DcqcnParams::mlx(G400);
    let mut st = RpState::new(&p);
    rp_on_cnp(&mut st, &p, 0);
    rp_tick(&mut st, &p, 4 * US);
    let (rc, rt) = (st.rc_bps, st.rt_bps);
    let cut_at = 4 * US;
    // t = 0 < F: fast recovery
    rp_tick(&mut st, &p, cut_at + 300 * US);
    assert_eq!(st.stage, STAGE_FAST_RECOVERY);
    assert_eq!(st.rt_bps, rt);
    let rc1 = rt - (rt - rc) / 2;
    assert_eq!(st.rc_bps, rc1);
    // t = F: additive (RT at line already: capped) -- use a lower target
    st.rt_bps = G400 / 2;
    st.rc_bps = G400 / 4;
    rp_tick(&mut st, &p, cut_at + 600 * US);
    assert_eq!(st.stage, STAGE_ADDITIVE);
    assert_eq!(st.rt_bps, G400 / 2 + p.rai_bps);
    // t > F: hyper, a constant Rhai each time
    rp_tick(&mut st, &p, cut_at + 900 * US);
    assert_eq!(st.stage, STAGE_HYPER);
    assert_eq!(st.rt_bps, G400 / 2 + p.rai_bps + p.rhai_bps);
    rp_tick(&mut st, &p, cut_at + 1200 * US);
    assert_eq!(st.rt_bps, G400 / 2 + p.rai_bps + 2 * p.rhai_bps);
}

#[test]
fn mlx_alpha_follows_cnps_per_period() {
    let p = DcqcnParams::mlx(G400);
    let mut st = RpState::new(&p);
    rp_on_cnp(&mut st, &p, 0);
    rp_tick(&mut st, &p, 50 * US);
    let low = st.alpha;
    // a CNP in each of 20 periods raises alpha
    for i in 0..20u64 {
        rp_on_cnp(&mut st, &p, 50 * US + i * US + 500);
    }
    rp_tick(&mut st, &p, 71 * US);
    assert!(st.alpha > low, "alpha {} not above {}", st.alpha, low);
    // none for 100 periods: it decays
    let high = st.alpha;
    rp_tick(&mut st, &p, 171 * US);
    assert!(st.alpha < high);
}

#[test]
fn mlx_recovers_to_line_rate_and_stays_attached() {
    let p = DcqcnParams::mlx(G400);
    let mut st = RpState::new(&p);
    rp_on_cnp(&mut st, &p, 0);
    let rc = rp_tick(&mut st, &p, 4 * US);
    assert!(rc < G400);
    let mut now = 4 * US;
    while now < 200 * MS && st.rc_bps < G400 {
        now += 100 * US;
        rp_tick(&mut st, &p, now);
        assert_rp_invariants(&st, &p);
    }
    assert_eq!(st.rc_bps, G400, "back at line rate by {now} ns");
    assert_eq!(st.limited, 1, "Mlx keeps the limiter attached");
    // nothing is counted by bytes
    rp_on_sent(&mut st, &p, now + 1, 1 << 30);
    assert_eq!(st.byte_events, 0);
}

#[test]
fn mlx_catch_up_in_one_call_equals_many_calls() {
    let p = DcqcnParams::mlx(G400);
    let mut a = RpState::new(&p);
    rp_on_cnp(&mut a, &p, 0);
    rp_on_cnp(&mut a, &p, 2_500);
    let mut b = a;
    rp_tick(&mut a, &p, 1_500 * US);
    let mut t = 0;
    while t < 1_500 * US {
        t += 700;
        rp_tick(&mut b, &p, t.min(1_500 * US));
    }
    assert_eq!(a, b);
}

#[test]
fn mlx_min_rate_holds_under_constant_cnps() {
    let p = DcqcnParams::mlx(G25);
    let mut st = RpState::new(&p);
    for i in 0..2_000u64 {
        rp_on_cnp(&mut st, &p, i * US);
        assert_rp_invariants(&st, &p);
    }
    assert_eq!(st.rc_bps, p.min_rate_bps);
}

const M20: u64 = 20_000_000;

#[test]
fn mlx_scaled_20m_is_mlx_100g_slowed_5000x() {
    let s = DcqcnParams::mlx_scaled(M20);
    let r = DcqcnParams::mlx(G100);
    assert_eq!(s.profile, PROFILE_MLX);
    assert_eq!(s.line_rate_bps, M20);
    assert_eq!(s.rai_bps * 5000, r.rai_bps);
    assert_eq!(s.rhai_bps * 5000, r.rhai_bps);
    assert_eq!(s.min_rate_bps * 5000, r.min_rate_bps, "1 Gb/s at 100G");
    assert_eq!(s.alpha_update_period_ns, 5 * MS);
    assert_eq!(s.rate_decrease_period_ns, 20 * MS);
    assert_eq!(s.rate_increase_period_ns, 1_500 * MS);
    assert_eq!(s.cnp_interval_ns, 5 * MS);
    assert_eq!(s.byte_counter_bytes, 0);
    assert_eq!((s.g, s.fast_recovery_events), (r.g, r.fast_recovery_events));
    // at the reference rate it is mlx(); the paper profile keeps no
    // decrease period when dilated
    assert_eq!(DcqcnParams::mlx_scaled(G100), r);
    assert_eq!(DcqcnParams::scaled(M20).rate_decrease_period_ns, 0);
    // chosen by profile
    assert_eq!(DcqcnParams::scaled_profile(PROFILE_MLX, M20), s);
    assert_eq!(
        DcqcnParams::scaled_profile(PROFILE_PAPER, M20),
        DcqcnParams::scaled(M20)
    );
    // absurd inputs keep the timers nonzero and the min rate within line
    let z = DcqcnParams::mlx_scaled(0);
    assert!(z.rate_decrease_period_ns > 0 && z.min_rate() <= z.line_rate_bps);
}

/// CNPs, cuts and increases at 100G in real time and at 20 Mb/s scaled:
/// every rate of the second is the first's / 5000 at 5000x the time.
#[test]
fn mlx_scaled_timeline_matches_100g() {
    fn run(p: &DcqcnParams, k: u64) -> Vec<u64> {
        let mut st = RpState::new(p);
        let mut out = Vec::new();
        // a CNP every 3 us for 40 us (several coalesced cuts), then none:
        // fast recovery, additive and hyper increase over 3 ms
        for s in 1..=3_000u64 {
            let now = s * US * k;
            if s <= 40 && s % 3 == 0 {
                rp_on_cnp(&mut st, p, now);
            }
            out.push(rp_tick(&mut st, p, now));
        }
        out
    }
    let fast = run(&DcqcnParams::mlx(G100), 1);
    let slow = run(&DcqcnParams::mlx_scaled(M20), 5000);
    assert!(fast.iter().any(|&r| r < G100 / 2), "the CNPs cut the rate");
    for (i, (f, s)) in fast.iter().zip(&slow).enumerate() {
        let diff = (*f as i128 - (*s as i128) * 5000).unsigned_abs();
        assert!(
            diff * 1000 <= u128::from(*f),
            "step {i}: 100G {f} vs scaled {s} x 5000"
        );
    }
}
