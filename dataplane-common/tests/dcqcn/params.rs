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
    assert!(z.rai_bps >= 1 && z.rhai_bps >= 1 && z.min_rate_bps >= 1 && z.byte_counter_bytes >= 1);
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
