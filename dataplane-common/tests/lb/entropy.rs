//! UET entropy groups (`GROUP_F_UET_ENTROPY`): a UET packet's entropy value
//! (its UDP source port) keeps its path whatever the mode, a new value is
//! hashed anew; RoCEv2 in the same group keeps the group's mode.

use super::*;

const UET_PORT: u16 = 4793;
const T0: u64 = 5_000_000;
const TO: u64 = DEFAULT_FLOWLET_TIMEOUT_NS as u64;

/// UET over IPv4 between SRC4 and DST4 with entropy value `ev`.
fn uet4(ev: u16) -> FlowKey {
    FlowKey::ipv4(SRC4, DST4, UDP, ev, UET_PORT, 0)
}

fn entropy_group(mode: u8) -> Group {
    let mut g = group(mode, &[1, 1, 1, 1]);
    g.flags |= GROUP_F_UET_ENTROPY;
    validate_group(&g).expect("valid group");
    g
}

#[test]
fn an_entropy_value_keeps_its_path_across_gaps_in_every_mode() {
    for mode in ALL_MODES {
        let g = entropy_group(mode);
        for ev in 0..512u16 {
            let h = flow_hash(&uet4(ev), SEED);
            let want = pick_hash(&g, h).unwrap().slot;
            let mut e = Flowlet::NEW;
            // packets far apart (every gap a new flowlet), with loads and
            // random numbers that would move a non-UET packet
            for (k, rand) in [0u32, 1, 2, 3, 0xffff_ffff].into_iter().enumerate() {
                let now = T0 + k as u64 * 10 * TO;
                let p = select_packet(&g, h, true, Some(&mut e), now, rand, || {
                    let mut b = [7u8; MAX_MEMBERS];
                    b[(k + 1) % 4] = 0;
                    b
                })
                .unwrap();
                assert_eq!((p.slot, p.flowlet), (want, None), "mode {mode}, ev {ev}");
            }
            // the flowlet entry was not touched
            assert_eq!(e, Flowlet::NEW);
        }
    }
}

#[test]
fn new_entropy_values_spread_over_the_members() {
    let g = entropy_group(MODE_FLOWLET);
    let mut counts = [0u64; 4];
    for ev in 0..4096u16 {
        let h = flow_hash(&uet4(ev), SEED);
        let p = select_packet(&g, h, true, None, T0, 0, || -> [u8; MAX_MEMBERS] {
            unreachable!()
        })
        .unwrap();
        counts[p.slot as usize] += 1;
    }
    let chi = chi_square(&counts);
    assert!(chi < chi_square_999(4), "{counts:?}: chi-square {chi}");
}

#[test]
fn roce_in_the_same_group_keeps_its_flowlets() {
    let g = entropy_group(MODE_FLOWLET);
    let h = flow_hash(&roce4(7), SEED);
    let mut e = Flowlet::NEW;
    let first = select_packet(
        &g,
        h,
        false,
        Some(&mut e),
        T0,
        0,
        || -> [u8; MAX_MEMBERS] { unreachable!() },
    )
    .unwrap();
    assert_eq!(first.flowlet, Some(FlowletEvent::First));
    let same = select_packet(
        &g,
        h,
        false,
        Some(&mut e),
        T0 + TO / 2,
        0,
        || -> [u8; MAX_MEMBERS] { unreachable!() },
    )
    .unwrap();
    assert_eq!(
        (same.slot, same.flowlet),
        (first.slot, Some(FlowletEvent::Same))
    );
    let gap = select_packet(
        &g,
        h,
        false,
        Some(&mut e),
        T0 + 3 * TO,
        0,
        || -> [u8; MAX_MEMBERS] { unreachable!() },
    )
    .unwrap();
    assert_eq!(gap.flowlet, Some(FlowletEvent::Gap));
    assert_eq!(e.flowlets, 2);
    // exactly what the plain selection does
    let mut e2 = Flowlet::NEW;
    for (t, want) in [(T0, first), (T0 + TO / 2, same), (T0 + 3 * TO, gap)] {
        assert_eq!(
            select(&g, h, Some(&mut e2), t, 0, || -> [u8; MAX_MEMBERS] {
                unreachable!()
            }),
            Some(want)
        );
    }
}

#[test]
fn without_the_flag_uet_follows_the_mode() {
    let mut g = entropy_group(MODE_FLOWLET);
    g.flags = 0;
    let h = flow_hash(&uet4(9), SEED);
    let mut e = Flowlet::NEW;
    let p = select_packet(&g, h, true, Some(&mut e), T0, 0, || -> [u8; MAX_MEMBERS] {
        unreachable!()
    })
    .unwrap();
    assert_eq!(p.flowlet, Some(FlowletEvent::First));
    assert!(!by_entropy(&g, true));
    assert!(by_entropy(&entropy_group(MODE_HASH), true));
    assert!(!by_entropy(&entropy_group(MODE_HASH), false));
}

#[test]
fn a_down_member_moves_only_its_entropy_values() {
    let mut g = entropy_group(MODE_HASH);
    let before: Vec<u8> = (0..2048u16)
        .map(|ev| pick_hash(&g, flow_hash(&uet4(ev), SEED)).unwrap().slot)
        .collect();
    g.members[2].live = 0;
    rebuild(&mut g);
    for (ev, &was) in before.iter().enumerate() {
        let h = flow_hash(&uet4(ev as u16), SEED);
        let now = select_packet(&g, h, true, None, T0, 0, || -> [u8; MAX_MEMBERS] {
            unreachable!()
        })
        .unwrap()
        .slot;
        if was == 2 {
            assert_ne!(now, 2, "ev {ev}");
        } else {
            assert_eq!(now, was, "ev {ev} moved without cause");
        }
    }
}

#[test]
fn unknown_flags_are_refused() {
    let mut g = entropy_group(MODE_HASH);
    g.flags = 0x82;
    assert_eq!(validate_group(&g), Err(GroupError::UnknownFlags(0x82)));
}
