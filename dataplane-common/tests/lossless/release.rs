use super::*;

#[test]
fn steady_interleaved_shares_release_in_proportion() {
    // 3:1 interleaved arrivals: FIFO releases 3:1, and so does the model.
    let mut q = queue_with(&[(0, 30_000), (5, 10_000)]);
    let (d, rel) = drain(&mut q, 320, G100); // 4000 bytes
    assert_eq!(d, 4000);
    assert_eq!((rel[0], rel[5]), (3000, 1000));
    assert_eq!((q.ingress[0], q.ingress[5]), (27_000, 9_000));
}

#[test]
fn remainder_goes_one_byte_at_a_time_from_a_rotating_cursor() {
    // Three slots with one byte each, drained one byte per update
    // (8 bits at 1000 Mb/s = 8 ns): each slot gets a turn.
    let mut q = queue_with(&[(4, 1), (7, 1), (9, 1)]);
    let mut order = Vec::new();
    for t in [8, 16, 24] {
        let (d, rel) = drain(&mut q, t, 1000);
        assert_eq!(d, 1);
        order.push(rel.iter().position(|&r| r == 1).unwrap());
    }
    order.sort();
    assert_eq!(order, vec![4, 7, 9]);
    assert_eq!(q.bytes, 0);
}

#[test]
fn remainder_is_deterministic() {
    let q0 = queue_with(&[(0, 7), (1, 5), (2, 3), (3, 1)]);
    let (mut a, mut b) = (q0, q0);
    assert_eq!(drain(&mut a, 40, 1000), drain(&mut b, 40, 1000)); // 5 bytes
    assert_eq!(a, b);
    assert_invariant(&a);
}

#[test]
fn released_bytes_sum_exactly_to_drained_bytes() {
    // Random contributions over 16 slots and random drains: nothing lost
    // or created by rounding, no slot released more than it held.
    let mut rng = XorShift32(0x1234_5678);
    let mut q = EgressQueue::ZERO;
    let mut now = 0u64;
    let (mut total_in, mut total_out) = (0u64, 0u64);
    for _ in 0..20_000 {
        for _ in 0..(rng.next_u32() % 4) {
            let slot = (rng.next_u32() % 16) as usize;
            let len = 64 + rng.next_u32() % 9000;
            assert_eq!(q.enqueue(slot, len), len);
            total_in += u64::from(len);
        }
        let before = q;
        now += u64::from(rng.next_u32() % 2000);
        let (d, rel) = drain(&mut q, now, G25);
        let sum: u64 = rel.iter().map(|&r| u64::from(r)).sum();
        assert_eq!(sum, u64::from(d));
        for (i, &r) in rel.iter().enumerate() {
            assert!(r <= before.ingress[i]);
            assert_eq!(q.ingress[i], before.ingress[i] - r);
        }
        assert_invariant(&q);
        total_out += u64::from(d);
    }
    assert_eq!(total_in, total_out + u64::from(q.bytes));
    assert_eq!(q.tx_bytes, total_out);
}

#[test]
fn large_queues_do_not_overflow_the_proportion() {
    // c_i * D with both near 2^32.
    let mut q = queue_with(&[(0, u32::MAX / 2), (1, u32::MAX / 2)]);
    let (d, rel) = drain(&mut q, u64::MAX / 2, G800);
    assert_eq!(d, u32::MAX - 1);
    assert_eq!(rel[0] + rel[1], d);
    assert_eq!(q.bytes, 0);
}

/// Drains a copy of `q` to `now` by the host's form (`drain_slots`) and
/// another by the eBPF build's (`drain_as_ebpf`), requires the same bytes
/// to the same slots and the same state, and that the host's form wrote
/// nothing but 0 outside its slot set (it does not clear the others);
/// returns the host's: the queue, the bytes drained, the released bytes
/// per slot (0 outside the set), the slot set.
fn drain_both_forms<const N: usize>(
    q: EgressQueueN<N>,
    now: u64,
    what: &str,
) -> (EgressQueueN<N>, u32, [u32; N], u64) {
    const UNWRITTEN: u32 = 0xdead_beef;
    let (mut a, mut b) = (q, q);
    let mut ra = [UNWRITTEN; N];
    let mut rb = [UNWRITTEN; N];
    let (da, slots) = a.drain_slots(now, G25, &mut ra);
    let db = b.drain_as_ebpf(now, G25, &mut rb);
    for (i, r) in ra.iter_mut().enumerate() {
        if slots & (1 << i) == 0 {
            assert!(
                *r == UNWRITTEN || *r == 0,
                "{what}: slot {i} given {r} outside the set"
            );
            *r = 0;
        }
    }
    assert_eq!((da, ra, a), (db, rb, b), "{what}");
    (a, da, ra, slots)
}

/// Random arrivals and drains on one queue, run by the host's form
/// (`drain_slots`, which visits only the slots holding bytes) and by the
/// eBPF build's form (`drain_as_ebpf`, every slot): the same bytes to the
/// same slots, the same state, and exactly the released slots reported;
/// also from corrupted states (`bytes` off the sum, the cursor out of
/// range).
fn host_form_matches_ebpf_form<const N: usize>(seed: u32) {
    let mut rng = XorShift32(seed);
    let mut q = EgressQueueN::<N>::ZERO;
    let mut now = 0u64;
    for step in 0..20_000 {
        // a few slots busy most of the time, sometimes many
        let spread = if step % 1000 < 100 { N as u32 } else { 3 };
        for _ in 0..(rng.next_u32() % 4) {
            let slot = (rng.next_u32() % spread) as usize * (N / 4).max(1) % N;
            let len = 64 + rng.next_u32() % 9000;
            q.enqueue(slot + (rng.next_u32() as usize % 2), len);
        }
        if step % 997 == 0 {
            q.bytes = q.bytes.wrapping_add(rng.next_u32() % 3000);
            q.cursor = rng.next_u32() % 200;
        }
        now += u64::from(rng.next_u32() % 3000);
        let (a, _da, ra, slots) = drain_both_forms(q, now, &format!("step {step}"));
        let exact = ra
            .iter()
            .enumerate()
            .fold(0u64, |m, (i, &r)| m | (u64::from(r != 0) << i));
        assert_eq!(slots, exact, "step {step}");
        q = a;
    }
}

#[test]
fn host_form_of_the_release_matches_the_ebpf_form() {
    host_form_matches_ebpf_form::<8>(1);
    host_form_matches_ebpf_form::<16>(2);
    host_form_matches_ebpf_form::<32>(3);
    host_form_matches_ebpf_form::<64>(4);
}

/// Random arrivals and drains on one queue of `N` slots, drained by
/// `drain_slots` (which finds the slots holding bytes by visiting all
/// `N`) and, on a copy stored in 64 slots standing for `N`, by
/// `drain_held` with the caller's set of slots holding bytes (a slot added
/// at each enqueue, sometimes with empty slots added too, which must
/// change nothing): the same bytes to the same slots, the same state (the
/// rounding start wrapping at `N`), and the set left exactly the slots
/// holding bytes.
fn held_form_matches_slots_form<const N: usize>(seed: u32) {
    const UNWRITTEN: u32 = 0xdead_beef;
    let mut rng = XorShift32(seed);
    let (mut a, mut b) = (EgressQueueN::<N>::ZERO, EgressQueueN::<64>::ZERO);
    let mut held = 0u64;
    let mut now = 0u64;
    for step in 0..20_000 {
        let spread = if step % 1000 < 100 { N as u32 } else { 3 };
        for _ in 0..(rng.next_u32() % 4) {
            let slot = ((rng.next_u32() % spread) as usize * (N / 4).max(1)
                + (rng.next_u32() as usize % 2))
                % N;
            let len = 64 + rng.next_u32() % 9000;
            a.enqueue(slot, len);
            b.enqueue(slot, len);
            held |= 1 << slot;
        }
        if step % 7 == 0 {
            // a superset: slots that hold nothing
            held |= u64::from(rng.next_u32()) << (rng.next_u32() % 32) & (u64::MAX >> (64 - N));
        }
        now += u64::from(rng.next_u32() % 3000);
        let (mut ra, mut rb) = ([UNWRITTEN; N], [UNWRITTEN; 64]);
        let (da, sa) = a.drain_slots(now, G25, &mut ra);
        let (db, sb) = b.drain_held(now, G25, &mut rb, &mut held, N);
        assert_eq!((da, sa), (db, sb), "step {step}");
        assert_eq!(
            (
                a.bytes,
                a.drain_frac,
                a.last_ns,
                a.tx_bytes,
                a.peak_bytes,
                a.cursor
            ),
            (
                b.bytes,
                b.drain_frac,
                b.last_ns,
                b.tx_bytes,
                b.peak_bytes,
                b.cursor
            ),
            "step {step}"
        );
        assert_eq!(a.ingress[..], b.ingress[..N], "step {step}");
        assert!(b.ingress[N..].iter().all(|&c| c == 0), "step {step}");
        for i in 0..N {
            if sa & (1 << i) != 0 {
                assert_eq!(ra[i], rb[i], "step {step}: slot {i}");
            }
        }
        let holding = b
            .ingress
            .iter()
            .enumerate()
            .fold(0u64, |m, (i, &c)| m | (u64::from(c != 0) << i));
        assert_eq!(
            held & holding,
            holding,
            "step {step}: a slot with bytes left the set"
        );
        if da > 0 {
            assert_eq!(held, holding, "step {step}: the set after a drain");
        }
    }
}

#[test]
fn the_drain_by_held_slots_is_the_drain_by_all_slots() {
    held_form_matches_slots_form::<8>(9);
    held_form_matches_slots_form::<16>(10);
    held_form_matches_slots_form::<32>(11);
    held_form_matches_slots_form::<64>(12);
}

/// A queue whose bytes all come from one slot (the host form's shortcut:
/// no division): partial drains release exactly what the eBPF form does,
/// from every slot position, with the cursor anywhere, until empty.
fn one_slot_matches_ebpf_form<const N: usize>(seed: u32) {
    let mut rng = XorShift32(seed);
    for slot in 0..N {
        let mut q = EgressQueueN::<N>::ZERO;
        q.cursor = rng.next_u32() % (2 * N as u32);
        q.enqueue(slot, 1 + rng.next_u32() % 200_000);
        let mut now = 0u64;
        // about 3 KB drained a step at 25G, 1 KB added: empty in ~100 steps
        for _ in 0..10_000 {
            if q.bytes == 0 {
                break;
            }
            now += u64::from(1 + rng.next_u32() % 2000);
            if rng.next_u32().is_multiple_of(4) {
                // more from the same slot between drains
                q.enqueue(slot, 64 + rng.next_u32() % 9000);
            }
            let (a, da, ra, slots) = drain_both_forms(q, now, &format!("slot {slot} at {now} ns"));
            assert_eq!(ra[slot], da);
            assert_eq!(slots, u64::from(da != 0) << slot);
            q = a;
        }
        assert_eq!(q.bytes, 0, "slot {slot}: drained");
    }
}

#[test]
fn one_occupied_slot_releases_as_the_ebpf_form_does() {
    one_slot_matches_ebpf_form::<8>(5);
    one_slot_matches_ebpf_form::<16>(6);
    one_slot_matches_ebpf_form::<32>(7);
    one_slot_matches_ebpf_form::<64>(8);
}

/// The host form's share by a reciprocal (one division per drain, not one
/// per slot) gives the division's result: every edge (a slot holding
/// everything or nothing, nothing or everything leaving, the largest
/// queue, totals above 2^32 from corrupted states) and random values.
#[test]
fn the_share_by_reciprocal_is_the_division() {
    let max = u64::from(u32::MAX);
    let mut cases = vec![
        (0, 0, 1),
        (1, 1, 1),
        (max, max, max),
        (max - 1, max, max),
        (1, max, max),
        (max, 1, max),
        (7, 3, 10),
        (max, max, 1),
        (max, max, 64 * max),
        (3, 5, 64 * max),
    ];
    let mut rng = XorShift32(0x5eed);
    for _ in 0..200_000 {
        let total = u64::from(rng.next_u32()).max(1)
            << (if rng.next_u32().is_multiple_of(8) {
                6
            } else {
                0
            });
        let c = u64::from(rng.next_u32()) % (total.min(max) + 1);
        let d = u64::from(rng.next_u32()) % (total.min(max) + 1);
        cases.push((c, d, total));
        // small totals: the exact-multiple and one-off remainders
        let t = u64::from(rng.next_u32() % 5000) + 1;
        cases.push((
            u64::from(rng.next_u32()) % (t + 1),
            u64::from(rng.next_u32()) % (t + 1),
            t,
        ));
    }
    for (c, d, total) in cases {
        let (div, inv) = share_both(c, d, total);
        assert_eq!(div, inv, "c {c} d {d} total {total}");
    }
}

/// Random arrivals (mostly from one ingress slot, sometimes from others),
/// pauses and drains on one queue: wherever `drain_one` takes the queue
/// (its bytes all in the slot asked), it gives the bytes, the state and
/// the slot the eBPF build's drain (`drain_as_ebpf`) gives, every other
/// slot releasing 0; where it does not, the queue is left untouched and
/// other slots hold bytes.
fn drain_one_matches_the_drain<const N: usize>(seed: u32) {
    let mut rng = XorShift32(seed);
    let mut q = EgressQueueN::<N>::ZERO;
    let mut now = 0u64;
    let (mut taken, mut emptied, mut partial) = (0, 0, 0);
    for step in 0..20_000 {
        let main = (step / 2000) % N;
        // arrivals about as fast as the port drains: the queue builds
        // up and empties again
        for _ in 0..(rng.next_u32() % 2) {
            let slot = if rng.next_u32().is_multiple_of(50) {
                rng.next_u32() as usize % N
            } else {
                main
            };
            q.enqueue(slot, 64 + rng.next_u32() % 9000);
        }
        if step % 101 == 0 {
            let mut r = [0u32; N];
            let quanta = (rng.next_u32() % 3) as u16 * 100;
            q.apply_pfc(now, quanta, G25, &mut r);
        }
        now += u64::from(rng.next_u32() % 3000);
        if step % 3001 == 0 {
            // an idle gap past the division-free test's 2^31 ns
            now += 3_000_000_000;
        }
        let slot = if rng.next_u32().is_multiple_of(8) {
            rng.next_u32() as usize % N
        } else {
            main
        };
        let (mut a, mut b) = (q, q);
        let mut rb = [0u32; N];
        match a.drain_one(now, G25, slot) {
            Some(da) => {
                taken += 1;
                if da > 0 && a.bytes == 0 {
                    emptied += 1;
                } else if da > 0 {
                    partial += 1;
                }
                let db = b.drain_as_ebpf(now, G25, &mut rb);
                let mut ra = [0u32; N];
                ra[slot] = da;
                assert_eq!((da, ra, a), (db, rb, b), "step {step}");
            }
            None => {
                assert_eq!(a, q, "step {step}: left untouched");
                assert_ne!(q.bytes, q.ingress[slot], "step {step}");
                b.drain_as_ebpf(now, G25, &mut rb);
            }
        }
        q = b;
    }
    // both of its cases: the queue emptied (no division), part left
    assert!(
        taken > 5_000 && emptied > 1_000 && partial > 1_000,
        "the fast path was taken {taken} times ({emptied} emptied, {partial} partial)"
    );
}

#[test]
fn drain_of_one_slot_matches_the_drain() {
    drain_one_matches_the_drain::<8>(5);
    drain_one_matches_the_drain::<16>(6);
    drain_one_matches_the_drain::<64>(7);
}
