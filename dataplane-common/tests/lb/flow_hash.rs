use super::*;

/// Pinned values: a change of the function moves every flow of a switch
/// that restarts with the new build (and the fixtures, the corpus and the
/// simulator's reports with it), so it must be a visible decision here.
/// The values are this function's own, written down once.
#[test]
fn pinned_values() {
    let cases: [(u32, u32, u32, u32); 4] = [
        // (seed, qp, IPv4 key, IPv6 key)
        (0, 0x11a, 0x7a57_844c, 0xde3c_8cfd),
        (SEED, 0, 0x7dcc_d7c4, 0x65d8_9095),
        (SEED, 0xff_ffff, 0xaf58_cf8b, 0xa942_f0c5),
        (0xdead_beef, 0x100, 0xd328_2408, 0x8c4b_0dc4),
    ];
    for (seed, qp, v4, v6) in cases {
        assert_eq!(
            flow_hash(&roce4(qp), seed),
            v4,
            "IPv4, seed {seed:#x}, qp {qp:#x}"
        );
        assert_eq!(
            flow_hash(&roce6(qp), seed),
            v6,
            "IPv6, seed {seed:#x}, qp {qp:#x}"
        );
    }
    // a flow's later flowlets (bandwidth, flowlet and place modes' tie
    // breaks): the first is the flow hash itself
    assert_eq!(flowlet_hash(0x7a57_844c, 0), 0x7a57_844c);
    assert_eq!(flowlet_hash(0x7a57_844c, 5), 0xf602_1e68);
    assert_eq!(flowlet_hash(0xaf58_cf8b, 5), 0x633a_ed03);
    assert_eq!(flowlet_hash(0xd328_2408, 5), 0x904a_e190);
}

/// 4096 QPs on one 5-tuple (sequential QP numbers, as NICs allocate them)
/// over 2, 4 and 8 buckets by the low bits (what the bucket table uses):
/// chi-square below its 99.9% quantile, for IPv4 and IPv6 and 4 seeds.
#[test]
fn qps_spread_uniformly_over_buckets() {
    for seed in [0, 1, SEED, 0xdead_beef] {
        for key in [roce4 as fn(u32) -> FlowKey, roce6] {
            for buckets in [2usize, 4, 8] {
                let mut c = vec![0u64; buckets];
                for qp in 0x100..0x100 + 4096 {
                    c[flow_hash(&key(qp), seed) as usize & (buckets - 1)] += 1;
                }
                let x2 = chi_square(&c);
                assert!(
                    x2 < chi_square_999(buckets),
                    "seed {seed:#x} {buckets} buckets: {c:?} chi2 {x2:.2}"
                );
            }
        }
    }
}

/// The high bits (used for tie-breaks and fallbacks) spread too.
#[test]
fn high_bits_spread_too() {
    let mut c = vec![0u64; 8];
    for qp in 0..4096 {
        c[(flow_hash(&roce4(qp), SEED) >> 29) as usize] += 1;
    }
    assert!(chi_square(&c) < chi_square_999(8), "{c:?}");
}

/// Through a real table: 8 QPs of one 5-tuple are not all on one member,
/// and 4096 QPs spread evenly over 4 equal members.
#[test]
fn qps_spread_over_group_members() {
    let g = group(MODE_HASH, &[1, 1, 1, 1]);
    let mut c = vec![0u64; 4];
    for qp in 0..4096 {
        c[pick_hash(&g, flow_hash(&roce4(qp), SEED)).unwrap().slot as usize] += 1;
    }
    assert!(chi_square(&c) < chi_square_999(4), "{c:?}");
}

#[test]
fn seeds_change_the_mapping() {
    let moved =
        (0..1024).filter(|&qp| flow_hash(&roce4(qp), 1) & 7 != flow_hash(&roce4(qp), 2) & 7);
    // 7/8 of the flows change bucket when the seeds are independent
    let moved = moved.count();
    assert!((800..=990).contains(&moved), "{moved} of 1024 moved");
}

/// No polarisation: the flows one switch (seed 1) puts on bucket 0 spread
/// evenly over the next switch's (seed 2) 4 buckets.
#[test]
fn next_tier_does_not_polarise() {
    let mut c = vec![0u64; 4];
    for qp in 0..16384 {
        if flow_hash(&roce4(qp), 1) & 3 == 0 {
            c[flow_hash(&roce4(qp), 2) as usize & 3] += 1;
        }
    }
    assert!(c.iter().sum::<u64>() > 3500);
    assert!(chi_square(&c) < chi_square_999(4), "{c:?}");
}

#[test]
fn every_field_counts() {
    let base = roce4(7);
    let h = flow_hash(&base, SEED);
    let variants = [
        FlowKey { dest_qp: 8, ..base },
        FlowKey {
            sport: SPORT + 1,
            ..base
        },
        FlowKey {
            dport: ROCE_PORT + 1,
            ..base
        },
        FlowKey { proto: 6, ..base },
        FlowKey {
            src: ipv4_mapped([10, 0, 0, 2]),
            ..base
        },
        FlowKey {
            dst: ipv4_mapped([10, 0, 1, 2]),
            ..base
        },
        // direction matters (the two directions are two flows)
        FlowKey {
            src: base.dst,
            dst: base.src,
            ..base
        },
    ];
    for v in variants {
        assert_ne!(flow_hash(&v, SEED), h, "{v:?}");
    }
}

#[test]
fn ipv4_is_mapped_into_ipv6() {
    assert_eq!(
        ipv4_mapped([192, 0, 2, 1]),
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1]
    );
    let v4 = roce4(5);
    let mapped = FlowKey::ipv6(
        ipv4_mapped(SRC4),
        ipv4_mapped(DST4),
        UDP,
        SPORT,
        ROCE_PORT,
        5,
    );
    assert_eq!(v4, mapped);
    assert_eq!(flow_hash(&v4, SEED), flow_hash(&mapped, SEED));
    assert_ne!(flow_hash(&roce4(5), SEED), flow_hash(&roce6(5), SEED));
}

#[test]
fn flowlet_hash_starts_at_the_flow_hash_then_moves() {
    let h = flow_hash(&roce4(1), SEED);
    assert_eq!(flowlet_hash(h, 0), h);
    let mut c = vec![0u64; 8];
    for n in 1..4097 {
        c[flowlet_hash(h, n) as usize & 7] += 1;
    }
    assert!(chi_square(&c) < chi_square_999(8), "{c:?}");
}
