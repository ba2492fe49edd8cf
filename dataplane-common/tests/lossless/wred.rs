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
        .filter(|_| wred(p, q, ECN_ECT0, true, false, rng.next_u32()) == EcnAction::MarkCe)
        .count();
    hits as f64 / f64::from(n)
}

#[test]
fn below_min_never_marks() {
    let mut rng = XorShift32(1);
    for q in [0, 1, 399_999] {
        for _ in 0..10_000 {
            assert_eq!(
                wred(&HPCC_100G, q, ECN_ECT0, true, false, rng.next_u32()),
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
                wred(&HPCC_100G, q, ECN_ECT1, true, false, rng.next_u32()),
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

/// `red_draws` is false exactly where the decision does not depend on the
/// random number: outside it, every random number gives the decision of
/// 0, for every codepoint, class and profile shape (a step when min == max).
#[test]
fn the_random_number_matters_only_where_red_draws() {
    let mut rng = XorShift32(9);
    let step = WredProfile {
        green_min_threshold: 5000,
        green_max_threshold: 5000,
        ..HPCC_100G
    };
    let drop_only = WredProfile {
        ecn: 0,
        ..HPCC_100G
    };
    for p in [HPCC_100G, step, drop_only] {
        for q in [
            0,
            4999,
            5000,
            5001,
            399_999,
            400_000,
            1_000_000,
            1_599_999,
            1_600_000,
            u32::MAX,
        ] {
            let mut varies = false;
            for ecn in 0..4 {
                for lossless in [false, true] {
                    for control in [false, true] {
                        let at0 = wred(&p, q, ecn, lossless, control, 0);
                        for _ in 0..200 {
                            let d = wred(&p, q, ecn, lossless, control, rng.next_u32());
                            if d != at0 {
                                varies = true;
                                assert!(red_draws(&p, q), "q {q}: the decision varies");
                            }
                        }
                    }
                }
            }
            if !red_draws(&p, q) {
                assert!(!varies);
            }
        }
    }
}
