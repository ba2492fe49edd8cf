use super::*;

const G100: u32 = 100_000;
const P: u64 = DRE_PERIOD_NS;

/// Sends `pkt` bytes every `gap_ns` on `r` from `from` for `dur` ns;
/// returns the time after the last packet.
fn send(r: &mut PortRate, from: u64, dur: u64, pkt: u32, gap_ns: u64) -> u64 {
    let mut t = from;
    while t < from + dur {
        r.update(t, pkt);
        t += gap_ns;
    }
    t
}

#[test]
fn decay_steps() {
    assert_eq!(dre_decay(1000, 0), 1000);
    assert_eq!(dre_decay(1000, 1), 750);
    assert_eq!(dre_decay(1000, 2), 562); // floor(1000 * 9 / 16)
    assert_eq!(dre_decay(4, 1), 3);
    assert_eq!(dre_decay(1, 1), 0, "small values still reach 0");
    assert_eq!(dre_decay(u64::MAX, 0), DRE_MAX_BYTES);
    assert_eq!(dre_decay(u64::MAX, 1), DRE_MAX_BYTES / 4 * 3);
    assert_eq!(
        dre_decay(u64::MAX, DRE_MAX_STEPS - 1),
        dre_decay(DRE_MAX_BYTES, DRE_MAX_STEPS - 1)
    );
    assert_eq!(dre_decay(u64::MAX, DRE_MAX_STEPS), 0);
    assert_eq!(dre_decay(u64::MAX, u64::MAX), 0);
    // one step always takes something off; one more step never leaves
    // more, up to the rounding of the factors (10 bytes: 7 steps leave 0,
    // 8 steps leave 1)
    for x in 1..100_000u64 {
        assert!(dre_decay(x, 1) < x);
    }
    assert_eq!((dre_decay(10, 7), dre_decay(10, 8)), (0, 1));
    let mut rng = XorShift32(99);
    for x0 in (0..2000).map(|i| {
        if i < 1000 {
            i
        } else {
            (rng.next_u32() as u64) << (i % 9)
        }
    }) {
        for k in 0..DRE_MAX_STEPS {
            assert!(
                dre_decay(x0, k + 1) <= dre_decay(x0, k) + 6,
                "{x0}: {k} steps"
            );
        }
    }
}

/// Several steps at once agree with (3/4)^k and with as many single
/// steps, up to a few bytes of rounding (each factor rounds down once).
#[test]
fn decay_in_one_go_matches_single_steps() {
    for x in [1u64, 7, 1000, 123_456_789, 2_500_000, 1 << 40] {
        let mut eager = x;
        for k in 0..DRE_MAX_STEPS {
            let exact = x as f64 * 0.75f64.powi(k as i32);
            let lazy = dre_decay(x, k);
            assert!(
                lazy as f64 <= exact + 1e-6 && exact - (lazy as f64) < 6.0,
                "{x} {k}: {lazy} vs {exact}"
            );
            assert!(
                eager as f64 <= exact + 1e-6 && exact - (eager as f64) < 4.0,
                "{x} {k}: {eager} vs {exact}"
            );
            assert!(lazy.abs_diff(eager) <= 6, "{x} {k}: {lazy} vs {eager}");
            eager = dre_decay(eager, 1);
        }
    }
}

/// Constant rates converge to their utilisation; read at 20 points over
/// a period, within 2% relative (the documented ripple) + 1 per-mille
/// (integer rounding and packet granularity).
#[test]
fn constant_rate_converges() {
    for (rate_permille, pkt, gap) in [
        (100, 1000u32, 800u64),
        (250, 4096, 1311),
        (400, 1000, 200),
        (900, 9000, 800),
    ] {
        let mut r = PortRate::new(G100);
        // 100 Gb/s = 12.5 bytes/ns
        let expect = pkt as f64 / gap as f64 / 12.5 * 1000.0;
        assert!((expect - rate_permille as f64).abs() / (rate_permille as f64) < 0.01);
        let t = send(&mut r, 10 * P, 40 * P, pkt, gap); // 10 time constants
        let mut t2 = t;
        for k in 0..20 {
            t2 = send(&mut r, t2, P / 20, pkt, gap);
            let u = r.utilisation(t2 + k) as f64;
            assert!(
                u >= expect * 0.99 - 1.0 && u <= expect * 1.02 + 1.0,
                "{rate_permille}: read {u} expected {expect:.1}"
            );
        }
    }
}

/// The steady-state relation: just before a decay, X = R * T_dre / alpha.
#[test]
fn steady_state_x_is_rate_times_period_over_alpha() {
    let mut r = PortRate::new(G100);
    // 1000 bytes every 200 ns: B = 250_000 bytes per period, 4B = 1e6
    send(&mut r, 0, 40 * P, 1000, 200);
    assert_eq!(r.epoch_ns, 39 * P);
    let x_before = r.bytes; // the whole 40th period added, not yet decayed
    assert!((999_000..=1_000_000).contains(&x_before), "{x_before}");
    let x_after = r.bytes_at(40 * P);
    assert!((749_000..=750_000).contains(&x_after), "{x_after}");
}

#[test]
fn idle_port_decays_to_zero() {
    let mut r = PortRate::new(G100);
    let t = send(&mut r, 0, 20 * P, 4096, 400); // ~80%
    assert!(r.utilisation(t) > 700, "{}", r.utilisation(t));
    let mut last = r.bytes_at(t);
    for k in 1..DRE_MAX_STEPS + 1 {
        let x = r.bytes_at(t + k * P);
        assert!(x < last || x == 0, "period {k}: {x} after {last}");
        last = x;
    }
    assert_eq!(r.bytes_at(t + (DRE_MAX_STEPS + 1) * P), 0);
    assert_eq!(r.band(t + (DRE_MAX_STEPS + 1) * P), 0);
    // an update after a long silence starts from 0
    r.update(t + 1_000 * P, 100);
    assert_eq!(r.bytes, 100);
}

/// Reading decays lazily, without a write: a port nobody sends on reads
/// as one updated with 0 bytes every quarter period (up to a few bytes of
/// rounding), until the lazy read cuts to 0 after DRE_MAX_STEPS periods
/// (the eager one is then within 1e-4 of where it started).
#[test]
fn reads_decay_without_updates() {
    let mut a = PortRate::new(G100);
    send(&mut a, 0, 10 * P, 1500, 300);
    let start = a.bytes;
    let mut b = a;
    for k in 0..(DRE_MAX_STEPS + 3) * 4 {
        let t = 10 * P + k * P / 4 + 7;
        b.update(t, 0);
        if t < a.epoch_ns + DRE_MAX_STEPS * P {
            assert!(
                a.bytes_at(t).abs_diff(b.bytes_at(t)) <= 6,
                "t {t}: {} vs {}",
                a.bytes_at(t),
                b.bytes_at(t)
            );
            assert!(a.utilisation(t).abs_diff(b.utilisation(t)) <= 1);
        } else {
            assert_eq!(a.bytes_at(t), 0);
            assert!(
                b.bytes_at(t) * 10_000 <= start,
                "{} of {start}",
                b.bytes_at(t)
            );
        }
    }
}

#[test]
fn time_going_backwards_changes_nothing() {
    let mut r = PortRate::new(G100);
    r.update(10 * P + 5, 1000);
    let x = r.bytes_at(10 * P + 5);
    assert_eq!(r.bytes_at(3 * P), 1000);
    r.update(3 * P, 500); // a CPU whose clock read is behind
    assert_eq!(r.epoch_ns, 10 * P);
    assert_eq!(r.bytes, 1500);
    assert!(x <= 1000);
}

#[test]
fn band_edges_are_exact() {
    let cases = [
        (0, 0),
        (124, 0),
        (125, 1),
        (249, 1),
        (250, 2),
        (374, 2),
        (375, 3),
        (499, 3),
        (500, 4),
        (624, 4),
        (625, 5),
        (749, 5),
        (750, 6),
        (874, 6),
        (875, 7),
        (1000, 7),
        (5000, 7),
        (u32::MAX, 7),
    ];
    for (u, b) in cases {
        assert_eq!(quality_band(u), b, "{u} per-mille");
    }
}

#[test]
fn unknown_speed_reads_saturated() {
    let r = PortRate::new(0);
    assert_eq!(r.utilisation(123), UTIL_UNKNOWN);
    assert_eq!(r.band(123), 7);
}

/// Utilisation is relative to each port's speed.
#[test]
fn slower_port_reads_busier() {
    let mut fast = PortRate::new(100_000);
    let mut slow = PortRate::new(25_000);
    let t = send(&mut fast, 0, 20 * P, 1000, 400); // 2.5 B/ns = 20 Gb/s
    send(&mut slow, 0, 20 * P, 1000, 400);
    let (uf, us) = (fast.utilisation(t), slow.utilisation(t));
    assert!((198..=206).contains(&uf), "{uf}");
    assert!((792..=824).contains(&us), "{us}");
    assert_eq!((quality_band(uf), quality_band(us)), (1, 6));
}

#[test]
fn huge_values_do_not_overflow() {
    let mut r = PortRate::new(u32::MAX);
    r.update(P, u32::MAX);
    r.bytes = u64::MAX; // e.g. written by a confused controller
    r.update(P + 1, u32::MAX);
    assert_eq!(r.bytes, DRE_MAX_BYTES);
    r.update(P + 2, u32::MAX);
    assert_eq!(r.bytes, DRE_MAX_BYTES);
    let _ = r.utilisation(P + P / 2);
    let r = PortRate {
        bytes: u64::MAX,
        epoch_ns: 0,
        speed_mbps: 1,
        placed: 0,
        booked_until_ns: 0,
    };
    assert_eq!(r.utilisation(P / 2), u32::MAX);
    assert_eq!(r.band(P / 2), 7);
}
