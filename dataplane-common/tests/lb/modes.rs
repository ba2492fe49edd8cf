use super::*;

const T0: u64 = 5_000_000;
const TO: u64 = DEFAULT_FLOWLET_TIMEOUT_NS as u64;

fn hashes(n: u32) -> impl Iterator<Item = u32> {
    (0..n).map(|qp| flow_hash(&roce4(qp), SEED))
}

#[test]
fn hash_mode_uses_the_bucket() {
    let g = group(MODE_HASH, &[1, 2, 3, 4]);
    for h in hashes(1000) {
        let slot = g.buckets[h as usize & (NBUCKETS - 1)];
        let p = select(&g, h, None, T0, 0, || -> [u8; MAX_MEMBERS] {
            unreachable!()
        })
        .unwrap();
        assert_eq!(
            p,
            Pick {
                slot,
                id: 100 + slot as u16,
                flowlet: None
            }
        );
        assert_eq!(
            pick_hash(&g, h),
            Some(Choice {
                slot,
                id: 100 + slot as u16
            })
        );
        // an entry is ignored in hash mode
        let mut e = Flowlet::NEW;
        assert_eq!(
            select(&g, h, Some(&mut e), T0, 0, || -> [u8; MAX_MEMBERS] {
                unreachable!()
            })
            .unwrap()
            .slot,
            slot
        );
        assert_eq!(e, Flowlet::NEW);
    }
}

/// `uses_port_load` names exactly the modes whose selection reads the
/// members' bands: the others never call `bands`, with or without a
/// flowlet entry, new or in a flowlet.
#[test]
fn only_the_modes_that_use_port_load_read_it() {
    for mode in ALL_MODES {
        let g = group(mode, &[1, 2, 3, 4]);
        let read = Cell::new(false);
        let bands = || {
            read.set(true);
            [0u8; MAX_MEMBERS]
        };
        let mut e = Flowlet::NEW;
        for (i, h) in hashes(200).enumerate() {
            let now = T0 + i as u64 * 7 * TO / 10;
            select(&g, h, None, now, h, bands).unwrap();
            select(&g, h, Some(&mut e), now, h, bands).unwrap();
        }
        assert_eq!(read.get(), uses_port_load(mode), "mode {mode}");
    }
}

/// A member marked down before the controller rebuilds the table: its
/// flows go to the live members, by weight; the others stay put.
#[test]
fn hash_mode_survives_a_stale_table() {
    let mut g = group(MODE_HASH, &[1, 1, 2, 4]);
    let before: Vec<u8> = hashes(8000)
        .map(|h| pick_hash(&g, h).unwrap().slot)
        .collect();
    g.members[3].live = 0;
    let mut c = [0u64; 4];
    for (h, &b) in hashes(8000).zip(&before) {
        let s = pick_hash(&g, h).unwrap().slot;
        assert_ne!(s, 3);
        if b == 3 {
            c[s as usize] += 1;
        } else {
            assert_eq!(s, b);
        }
    }
    // weights 1:1:2 -> counts scaled to 1:1:1 should look uniform
    let scaled = [c[0] * 2, c[1] * 2, c[2]];
    assert!(chi_square(&scaled) < 2.0 * chi_square_999(4), "{c:?}");
}

#[test]
fn all_dead_selects_nothing() {
    for mode in ALL_MODES {
        let mut g = group(mode, &[1, 1, 1]);
        for i in 0..3 {
            g.members[i].live = 0;
        }
        for h in hashes(100) {
            let mut e = Flowlet::NEW;
            assert_eq!(
                select(&g, h, Some(&mut e), T0, h, || IDLE),
                None,
                "mode {mode}"
            );
            assert_eq!(select(&g, h, None, T0, h, || IDLE), None, "mode {mode}");
            assert_eq!(e, Flowlet::NEW);
        }
    }
}

#[test]
fn flowlet_mode_first_flowlet_matches_hash_mode() {
    let gf = group(MODE_FLOWLET, &[1, 1, 1, 1]);
    let gh = group(MODE_HASH, &[1, 1, 1, 1]);
    for h in hashes(500) {
        let mut e = Flowlet::NEW;
        let p = select(&gf, h, Some(&mut e), T0, 0, || -> [u8; MAX_MEMBERS] {
            unreachable!()
        })
        .unwrap();
        assert_eq!(p.flowlet, Some(FlowletEvent::First));
        assert_eq!(
            p.slot,
            select(&gh, h, None, T0, 0, || -> [u8; MAX_MEMBERS] {
                unreachable!()
            })
            .unwrap()
            .slot
        );
        // without an entry: the hash choice
        assert_eq!(
            select(&gf, h, None, T0, 0, || -> [u8; MAX_MEMBERS] {
                unreachable!()
            })
            .unwrap()
            .slot,
            p.slot
        );
    }
}

/// One flow's successive flowlets land on members in proportion to their
/// weights (LetFlow), and within a flowlet it stays put even across a
/// table rebuild.
#[test]
fn flowlet_mode_moves_between_flowlets_only() {
    let mut g = group(MODE_FLOWLET, &[1, 1, 2]);
    let h = flow_hash(&roce4(42), SEED);
    let mut e = Flowlet::NEW;
    let mut t = T0;
    let mut c = [0u64; 3];
    for k in 0..8000 {
        let p = select(&g, h, Some(&mut e), t, 0, || -> [u8; MAX_MEMBERS] {
            unreachable!()
        })
        .unwrap();
        assert!(p.flowlet.unwrap().is_new());
        assert_eq!(p.slot, pick_hash(&g, flowlet_hash(h, k)).unwrap().slot);
        c[p.slot as usize] += 1;
        // 10 more packets of the flowlet, 1 ns short of the timeout apart
        for _ in 0..10 {
            t += TO;
            let q = select(&g, h, Some(&mut e), t, 0, || -> [u8; MAX_MEMBERS] {
                unreachable!()
            })
            .unwrap();
            assert_eq!((q.slot, q.flowlet), (p.slot, Some(FlowletEvent::Same)));
        }
        t += TO + 1;
    }
    let scaled = [c[0] * 2, c[1] * 2, c[2]];
    assert!(chi_square(&scaled) < 2.0 * chi_square_999(4), "{c:?}");

    // a rebuild that moves the flow's bucket does not move a flowlet
    let p = select(&g, h, Some(&mut e), t, 0, || -> [u8; MAX_MEMBERS] {
        unreachable!()
    })
    .unwrap();
    g.members[2].weight = 200;
    rebuild(&mut g);
    let q = select(&g, h, Some(&mut e), t + 1, 0, || -> [u8; MAX_MEMBERS] {
        unreachable!()
    })
    .unwrap();
    assert_eq!(q.slot, p.slot);
}

fn bands(v: &[u8]) -> [u8; MAX_MEMBERS] {
    let mut b = [0; MAX_MEMBERS];
    b[..v.len()].copy_from_slice(v);
    b
}

#[test]
fn bandwidth_mode_picks_the_lowest_band_per_flowlet() {
    let g = group(MODE_BANDWIDTH, &[1, 1, 1, 1]);
    let b = bands(&[5, 3, 2, 6]);
    for h in hashes(200) {
        let mut e = Flowlet::NEW;
        let calls = Cell::new(0);
        let fill = || {
            calls.set(calls.get() + 1);
            b
        };
        let p = select(&g, h, Some(&mut e), T0, 0, fill).unwrap();
        assert_eq!(
            (p.slot, p.id, p.flowlet),
            (2, 102, Some(FlowletEvent::First))
        );
        // member 2 gets busy: the flowlet stays, without reading loads
        let q = select(&g, h, Some(&mut e), T0 + TO, 0, || bands(&[0, 0, 7, 0])).unwrap();
        assert_eq!((q.slot, q.flowlet), (2, Some(FlowletEvent::Same)));
        // after a gap, the new flowlet goes by load again
        let r = select(&g, h, Some(&mut e), T0 + 2 * TO + 1, 0, || {
            bands(&[4, 1, 7, 4])
        })
        .unwrap();
        assert_eq!((r.slot, r.flowlet), (1, Some(FlowletEvent::Gap)));
        assert_eq!(calls.get(), 1);
    }
}

#[test]
fn bandwidth_ties_spread_over_the_tied_members_only() {
    let g = group(MODE_BANDWIDTH, &[1, 1, 1, 1, 1]);
    let b = bands(&[2, 1, 4, 1, 1]);
    let mut c = [0u64; 5];
    for h in hashes(6000) {
        let mut e = Flowlet::NEW;
        c[select(&g, h, Some(&mut e), T0, 0, || b).unwrap().slot as usize] += 1;
    }
    assert_eq!((c[0], c[2]), (0, 0), "{c:?}");
    assert!(chi_square(&[c[1], c[3], c[4]]) < chi_square_999(4), "{c:?}");
}

/// Weights only split ties (at low load the split follows the weights).
#[test]
fn weights_split_ties_in_load_modes() {
    let g = group(MODE_BANDWIDTH, &[1, 3]);
    let mut c = [0u64; 2];
    for h in hashes(8000) {
        c[pick_least_loaded(&g, &IDLE, h).unwrap().slot as usize] += 1;
    }
    assert!((5700..=6300).contains(&c[1]), "{c:?}");
    // but a lower band wins whatever the weight
    for h in hashes(100) {
        assert_eq!(
            pick_least_loaded(&g, &bands(&[0, 1]), h),
            Some(Choice { slot: 0, id: 100 })
        );
    }
}

#[test]
fn dead_member_is_never_least_loaded() {
    let mut g = group(MODE_BANDWIDTH, &[1, 1, 1]);
    g.members[0].live = 0;
    for h in hashes(300) {
        let mut e = Flowlet::NEW;
        let p = select(&g, h, Some(&mut e), T0, h, || bands(&[0, 5, 6])).unwrap();
        assert_eq!(p.slot, 1);
    }
    // and a flowlet on a member that goes down moves at once
    let mut g = group(MODE_BANDWIDTH, &[1, 1, 1]);
    let mut e = Flowlet::NEW;
    let h = 99;
    assert_eq!(
        select(&g, h, Some(&mut e), T0, 0, || bands(&[0, 5, 6]))
            .unwrap()
            .slot,
        0
    );
    g.members[0].live = 0;
    let p = select(&g, h, Some(&mut e), T0 + 1, 0, || bands(&[0, 5, 6])).unwrap();
    assert_eq!((p.slot, p.flowlet), (1, Some(FlowletEvent::MemberDown)));
}

#[test]
fn spray_picks_per_packet() {
    let g = group(MODE_SPRAY, &[1, 1, 1, 1]);
    let h = 7;
    let mut rng = XorShift32(3);
    let mut c = [0u64; 4];
    for _ in 0..8000 {
        let p = select(&g, h, None, T0, rng.next_u32(), || bands(&[1, 1, 3, 1])).unwrap();
        assert_eq!(p.flowlet, None);
        c[p.slot as usize] += 1;
    }
    assert_eq!(c[2], 0);
    assert!(chi_square(&[c[0], c[1], c[3]]) < chi_square_999(4), "{c:?}");
    // the same flow follows the loads packet by packet
    for (b, want) in [
        ([0, 1, 1, 1], 0),
        ([1, 0, 1, 1], 1),
        ([1, 1, 0, 1], 2),
        ([1, 1, 1, 0], 3),
    ] {
        assert_eq!(select(&g, h, None, T0, 0, || bands(&b)).unwrap().slot, want);
    }
}

/// Any bytes in a group (a torn or corrupt map value) select only an
/// eligible member or nothing, and never panic.
#[test]
fn garbage_groups_are_safe() {
    let mut rng = XorShift32(0xbad);
    for _ in 0..20_000 {
        let mut g = Group::new(rng.next_u32() as u8 & 7, rng.next_u32() & 0x3ffff);
        g.n_members = rng.next_u32() as u8 % 20;
        for m in g.members.iter_mut() {
            *m = Member {
                id: rng.next_u32() as u16,
                weight: rng.next_u32() as u8 % 3,
                live: rng.next_u32() as u8 % 3,
            };
        }
        for b in g.buckets.iter_mut() {
            *b = rng.next_u32() as u8 % 20;
        }
        let mut bands = [0u8; MAX_MEMBERS];
        for b in bands.iter_mut() {
            *b = rng.next_u32() as u8 % 10;
        }
        let mut e = Flowlet {
            last_seen_ns: rng.next_u32() as u64,
            flowlets: rng.next_u32(),
            slot: rng.next_u32() as u8 % 20,
            _pad: [0; 3],
        };
        let h = rng.next_u32();
        if let Some(p) = select(
            &g,
            h,
            Some(&mut e),
            rng.next_u32() as u64,
            rng.next_u32(),
            || bands,
        ) {
            assert!(g.eligible(p.slot), "{p:?}");
            assert!(p.slot < g.n_members && (p.slot as usize) < MAX_MEMBERS);
            assert_eq!(p.id, g.members[p.slot as usize].id);
        } else {
            assert!((0..MAX_MEMBERS as u8).all(|s| !g.eligible(s)));
        }
    }
}
