use super::*;

/// Every count is the floor or the ceiling of its exact share, and the
/// counts sum to NBUCKETS.
fn assert_proportional(buckets: &[u8; NBUCKETS], m: &[Member; MAX_MEMBERS], n: u8) {
    let c = bucket_counts(buckets);
    let total: u32 = (0..n as usize)
        .filter(|&i| m[i].live == 1)
        .map(|i| m[i].weight as u32)
        .sum();
    assert!(total > 0);
    for i in 0..MAX_MEMBERS {
        let w = if i < n as usize && m[i].live == 1 {
            m[i].weight as u32
        } else {
            0
        };
        let exact = NBUCKETS as u32 * w;
        let (lo, hi) = (exact / total, exact.div_ceil(total));
        assert!(
            (lo..=hi).contains(&c[i]),
            "slot {i}: {} buckets, share {lo}..={hi} ({c:?})",
            c[i]
        );
    }
    assert_eq!(c.iter().sum::<u32>(), NBUCKETS as u32);
}

#[test]
fn weights_are_honoured() {
    let mut rng = XorShift32(12345);
    let mut sets: Vec<Vec<u8>> = vec![
        vec![1],
        vec![1, 1],
        vec![1, 1, 1],
        vec![1, 1, 1, 1],
        vec![1, 2, 3, 4],
        vec![255, 1],
        vec![100, 100, 50, 25],
        vec![1; 16],
        vec![255; 16],
    ];
    for _ in 0..200 {
        let n = rng.range(1, 16) as usize;
        sets.push((0..n).map(|_| rng.range(1, 255) as u8).collect());
    }
    for w in sets {
        let m = members(&w);
        let t = build_buckets(&m, w.len() as u8, None).unwrap();
        assert_proportional(&t, &m, w.len() as u8);
    }
    // exact when the weights divide the table
    let g = group(MODE_HASH, &[1, 1, 2, 4]);
    assert_eq!(&bucket_counts(&g.buckets)[..4], &[16, 16, 32, 64]);
}

#[test]
fn dead_members_get_no_buckets() {
    let mut m = members(&[1, 1, 1, 1]);
    m[1].live = 0;
    let t = build_buckets(&m, 4, None).unwrap();
    assert_eq!(&bucket_counts(&t)[..4], &[43, 0, 43, 42]);
}

#[test]
fn removing_a_member_moves_only_its_buckets() {
    for (weights, dead, expect) in [
        (&[1u8, 1, 1, 1][..], 2usize, &[43u32, 43, 0, 42][..]),
        (&[1, 2, 3, 4], 1, &[16, 0, 48, 64]),
        (&[1, 2, 3, 4], 3, &[21, 43, 64, 0]),
    ] {
        let mut g = group(MODE_HASH, weights);
        let before = g.buckets;
        g.members[dead].live = 0;
        rebuild(&mut g);
        assert_eq!(
            &bucket_counts(&g.buckets)[..weights.len()],
            expect,
            "{weights:?} minus {dead}"
        );
        for (b, (&now, &was)) in g.buckets.iter().zip(&before).enumerate() {
            if was as usize != dead {
                assert_eq!(now, was, "bucket {b} moved ({weights:?} minus {dead})");
            }
        }
    }
}

#[test]
fn a_member_coming_back_takes_a_fair_share_from_each() {
    let mut g = group(MODE_HASH, &[1, 1, 1, 1]);
    g.members[2].live = 0;
    rebuild(&mut g);
    let without = g.buckets;
    g.members[2].live = 1;
    rebuild(&mut g);
    assert_eq!(&bucket_counts(&g.buckets)[..4], &[32, 32, 32, 32]);
    let mut taken_from = [0u32; 4];
    for b in 0..NBUCKETS {
        if g.buckets[b] != without[b] {
            // a moved bucket only ever goes to the returning member
            assert_eq!(g.buckets[b], 2, "bucket {b}");
            taken_from[without[b] as usize] += 1;
        }
    }
    // each other member gives up exactly its excess
    assert_eq!(taken_from, [11, 11, 0, 10]);
}

#[test]
fn changing_a_weight_moves_the_minimum() {
    let mut g = group(MODE_HASH, &[1, 1, 1, 1]);
    let before = g.buckets;
    g.members[0].weight = 2; // 51.2 / 25.6 each
    rebuild(&mut g);
    assert_eq!(&bucket_counts(&g.buckets)[..4], &[51, 26, 26, 25]);
    let moved: Vec<usize> = (0..NBUCKETS)
        .filter(|&b| g.buckets[b] != before[b])
        .collect();
    assert_eq!(moved.len(), 51 - 32);
    assert!(moved.iter().all(|&b| g.buckets[b] == 0));
}

/// Random changes (weights, liveness, members added and removed): every
/// table is proportional, and the buckets that move are exactly those of
/// members that went away plus each shrinking member's excess, the
/// minimum any table with the new counts allows.
#[test]
fn random_changes_move_only_what_they_must() {
    let mut rng = XorShift32(777);
    let mut m = members(&[10; 8]);
    let mut n = 8u8;
    let mut prev = build_buckets(&m, n, None).unwrap();
    let mut total_moved = 0;
    for step in 0..2000 {
        match rng.range(0, 3) {
            0 => {
                let i = rng.range(0, n as u64 - 1) as usize;
                m[i].live ^= 1;
            }
            1 => {
                let i = rng.range(0, n as u64 - 1) as usize;
                m[i].weight = rng.range(1, 255) as u8;
            }
            2 if n < 16 => {
                m[n as usize] = Member::new(n as u16, rng.range(1, 255) as u8);
                n += 1;
            }
            _ if n > 1 => n -= 1,
            _ => {}
        }
        let live = |s: u8| (s < n) && m[s as usize].live == 1;
        if !(0..n).any(live) {
            // nothing to move to: the table stays as it was
            assert_eq!(build_buckets(&m, n, Some(&prev)).unwrap(), prev);
            continue;
        }
        let next = build_buckets(&m, n, Some(&prev)).unwrap();
        assert_proportional(&next, &m, n);
        let old_c = bucket_counts(&prev);
        let new_c = bucket_counts(&next);
        let mut must = 0;
        for s in 0..MAX_MEMBERS as u8 {
            let i = s as usize;
            must += if live(s) {
                old_c[i].saturating_sub(new_c[i])
            } else {
                old_c[i]
            };
        }
        let mut moved = 0;
        for b in 0..NBUCKETS {
            if next[b] != prev[b] {
                moved += 1;
                let o = prev[b];
                assert!(
                    !live(o) || new_c[o as usize] < old_c[o as usize],
                    "step {step}: bucket {b} left {o}"
                );
            }
        }
        assert_eq!(moved, must, "step {step}");
        total_moved += moved;
        prev = next;
    }
    assert!(total_moved > 0);
}

#[test]
fn validation_names_the_problem() {
    let g = group(MODE_FLOWLET, &[1, 1, 1, 1]);
    assert_eq!(validate_group(&g), Ok(()));

    let mut z = g;
    z.members[2].weight = 0;
    assert_eq!(validate_group(&z), Err(GroupError::ZeroWeight { slot: 2 }));
    assert_eq!(
        build_buckets(&z.members, 4, None),
        Err(GroupError::ZeroWeight { slot: 2 })
    );
    assert_eq!(
        GroupError::ZeroWeight { slot: 2 }.to_string(),
        "member 2 has weight 0 (weights are 1..=255)"
    );
    // a slot beyond n_members is not checked
    let mut unused = g;
    unused.members[9].weight = 0;
    assert_eq!(validate_group(&unused), Ok(()));

    assert_eq!(
        validate_group(&Group {
            mode: MODE_LAST + 1,
            ..g
        }),
        Err(GroupError::UnknownMode(MODE_LAST + 1))
    );
    assert_eq!(
        validate_group(&Group { n_members: 0, ..g }),
        Err(GroupError::NoMembers)
    );
    assert_eq!(
        validate_group(&Group { n_members: 17, ..g }),
        Err(GroupError::TooManyMembers(17))
    );
    assert_eq!(
        validate_group(&Group {
            flowlet_timeout_ns: 0,
            ..g
        }),
        Err(GroupError::ZeroFlowletTimeout)
    );
    assert_eq!(
        validate_group(&Group {
            mode: MODE_HASH,
            flowlet_timeout_ns: 0,
            ..g
        }),
        Ok(())
    );

    let mut live = g;
    live.members[1].live = 2;
    assert_eq!(
        validate_group(&live),
        Err(GroupError::BadLiveFlag { slot: 1, live: 2 })
    );

    let mut range = g;
    range.buckets[5] = 4;
    assert_eq!(
        validate_group(&range),
        Err(GroupError::BucketOutOfRange { bucket: 5, slot: 4 })
    );

    // a member marked down without a rebuild
    let mut stale = g;
    stale.members[stale.buckets[0] as usize].live = 0;
    assert_eq!(
        validate_group(&stale),
        Err(GroupError::BucketToDeadMember {
            bucket: 0,
            slot: stale.buckets[0]
        })
    );
    // ...but with every member down, any in-range table is fine
    let mut all_dead = g;
    for i in 0..4 {
        all_dead.members[i].live = 0;
    }
    assert_eq!(validate_group(&all_dead), Ok(()));

    for e in [
        GroupError::UnknownMode(9),
        GroupError::NoMembers,
        GroupError::TooManyMembers(20),
        GroupError::BadLiveFlag { slot: 1, live: 2 },
        GroupError::ZeroFlowletTimeout,
        GroupError::BucketOutOfRange { bucket: 5, slot: 4 },
        GroupError::BucketToDeadMember { bucket: 0, slot: 3 },
    ] {
        assert!(!e.to_string().is_empty());
    }
}

#[test]
fn all_dead_table_is_kept_for_their_return() {
    let mut g = group(MODE_HASH, &[1, 2, 3]);
    let before = g.buckets;
    for i in 0..3 {
        g.members[i].live = 0;
    }
    rebuild(&mut g);
    assert_eq!(g.buckets, before);
    for i in 0..3 {
        g.members[i].live = 1;
    }
    rebuild(&mut g);
    assert_eq!(g.buckets, before);
}
