use super::*;

const T: u64 = DEFAULT_FLOWLET_TIMEOUT_NS as u64;

/// Member `slot` of the test groups (ids are 100 + slot).
fn m(slot: u8) -> Option<Choice> {
    Some(Choice {
        slot,
        id: 100 + slot as u16,
    })
}

/// `flowlet_next` as (slot, event), checking the member's id.
fn step<F: FnOnce(u32) -> Option<Choice>>(
    e: &mut Flowlet,
    g: &Group,
    now: u64,
    choose: F,
) -> Option<(u8, FlowletEvent)> {
    flowlet_next(e, g, now, choose).map(|(c, ev)| {
        assert_eq!(c.id, g.members[c.slot as usize].id);
        (c.slot, ev)
    })
}
const T0: u64 = 1_000_000_000;

/// An entry on member `slot` whose last packet was at T0.
fn on(g: &Group, slot: u8) -> Flowlet {
    let mut e = Flowlet::NEW;
    assert_eq!(
        step(&mut e, g, T0, |_| m(slot)),
        Some((slot, FlowletEvent::First))
    );
    e
}

#[test]
fn first_packet_starts_flowlet_zero() {
    let g = group(MODE_FLOWLET, &[1, 1, 1, 1]);
    let mut e = Flowlet::NEW;
    let index = Cell::new(u32::MAX);
    let r = step(&mut e, &g, T0, |n| {
        index.set(n);
        m(3)
    });
    assert_eq!(r, Some((3, FlowletEvent::First)));
    assert_eq!(index.get(), 0);
    assert_eq!(
        e,
        Flowlet {
            last_seen_ns: T0,
            flowlets: 1,
            slot: 3,
            _pad: [0; 3]
        }
    );
    // even at time 0
    let mut e0 = Flowlet::NEW;
    assert_eq!(
        step(&mut e0, &g, 0, |_| m(1)),
        Some((1, FlowletEvent::First))
    );
}

#[test]
fn gap_edges() {
    let g = group(MODE_FLOWLET, &[1, 1, 1, 1]);
    for (gap, expect) in [
        (0, FlowletEvent::Same),
        (1, FlowletEvent::Same),
        (T - 1, FlowletEvent::Same),
        (T, FlowletEvent::Same),
        (T + 1, FlowletEvent::Gap),
        (10 * T, FlowletEvent::Gap),
    ] {
        let mut e = on(&g, 1);
        let called = Cell::new(None);
        let r = step(&mut e, &g, T0 + gap, |n| {
            called.set(Some(n));
            m(2)
        });
        if expect == FlowletEvent::Same {
            assert_eq!(r, Some((1, FlowletEvent::Same)), "gap {gap}");
            assert_eq!(called.get(), None, "no new choice within a flowlet");
            assert_eq!(e.flowlets, 1);
        } else {
            assert_eq!(r, Some((2, FlowletEvent::Gap)), "gap {gap}");
            assert_eq!(called.get(), Some(1), "second flowlet has index 1");
            assert_eq!((e.flowlets, e.slot), (2, 2));
        }
        assert_eq!(e.last_seen_ns, T0 + gap);
    }
}

/// The gap is measured from the previous packet, not the flowlet's start.
#[test]
fn steady_packets_keep_one_flowlet() {
    let g = group(MODE_FLOWLET, &[1, 1]);
    let mut e = on(&g, 0);
    for k in 1..1000 {
        let r = step(&mut e, &g, T0 + k * T, |_| m(1));
        assert_eq!(r, Some((0, FlowletEvent::Same)));
    }
}

#[test]
fn dead_member_moves_at_once() {
    let mut g = group(MODE_FLOWLET, &[1, 1, 1, 1]);
    let mut e = on(&g, 2);
    g.members[2].live = 0;
    let r = step(&mut e, &g, T0 + 1, |_| m(0));
    assert_eq!(r, Some((0, FlowletEvent::MemberDown)));
    assert!(FlowletEvent::MemberDown.is_new() && !FlowletEvent::Same.is_new());
    // and stays on its new member
    assert_eq!(
        step(&mut e, &g, T0 + 2, |_| m(3)),
        Some((0, FlowletEvent::Same))
    );
    // a member dropped from the group (n_members shrank) counts as down
    let mut e = on(&g, 3);
    g.n_members = 3;
    assert_eq!(
        step(&mut e, &g, T0, |_| m(1)),
        Some((1, FlowletEvent::MemberDown))
    );
}

#[test]
fn packet_stamped_before_last_seen_is_no_gap() {
    let g = group(MODE_FLOWLET, &[1, 1]);
    let mut e = on(&g, 1);
    assert_eq!(
        step(&mut e, &g, T0 - 5_000, |_| m(0)),
        Some((1, FlowletEvent::Same))
    );
    assert_eq!(e.last_seen_ns, T0, "last_seen never goes back");
}

#[test]
fn no_choice_leaves_the_entry_alone() {
    let g = group(MODE_FLOWLET, &[1, 1]);
    let mut e = on(&g, 1);
    let before = e;
    assert_eq!(step(&mut e, &g, T0 + 2 * T, |_| None), None);
    assert_eq!(e, before);
}

#[test]
fn a_slot_keeps_its_flow_and_another_flow_takes_it_over_fresh() {
    let g = group(MODE_FLOWLET, &[1, 1]);
    let mut s = FlowletSlot {
        tag: 0,
        entry: Flowlet::NEW,
    };
    let (a, b) = (flowlet_tag(1, 0xabcd), flowlet_tag(2, 0xabcd));
    assert!(a != 0 && a != b, "tags are never 0 and differ by group");
    let e = flowlet_entry(&mut s, a);
    assert_eq!(step(e, &g, T0, |_| m(1)), Some((1, FlowletEvent::First)));
    // the same flow finds its entry
    let e = flowlet_entry(&mut s, a);
    assert_eq!(step(e, &g, T0 + 1, |_| m(0)), Some((1, FlowletEvent::Same)));
    // another flow in the slot starts afresh; the first one then does too
    let e = flowlet_entry(&mut s, b);
    assert_eq!(
        step(e, &g, T0 + 2, |_| m(0)),
        Some((0, FlowletEvent::First))
    );
    let e = flowlet_entry(&mut s, a);
    assert_eq!(
        step(e, &g, T0 + 3, |_| m(1)),
        Some((1, FlowletEvent::First))
    );
}

#[test]
fn flowlet_slots_spread_a_groups_flows_and_separate_groups() {
    let mut seen = std::collections::HashSet::new();
    for h in 0..4096u32 {
        let i = flowlet_index(1, h.wrapping_mul(0x9e37_79b9));
        assert!(i < FLOWLET_SLOTS);
        seen.insert(i);
    }
    // 4096 flows into 65536 slots: about 125 collide
    assert!(seen.len() > 3900, "{} distinct slots", seen.len());
    assert_ne!(flowlet_index(1, 7), flowlet_index(2, 7));
}
