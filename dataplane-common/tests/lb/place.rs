use super::*;
use dataplane_common::wire::bth::{OP_WRITE_FIRST, OP_WRITE_MIDDLE};

const T0: u64 = 7_000_000;
const G400: u32 = 400_000;
const TO: u64 = DEFAULT_FLOWLET_TIMEOUT_NS as u64;

/// A switch's view of place mode: a group of `n` members, their ports'
/// rates and bookings (ports 0..n = member slots), and its flow table.
struct Leaf {
    g: Group,
    ports: Vec<PortRate>,
    table: Vec<FlowWays>,
    evictions: u64,
}

impl Leaf {
    fn new(n: usize) -> Leaf {
        Leaf {
            g: group(MODE_PLACE, &vec![1; n]),
            ports: vec![PortRate::new(G400); n],
            table: vec![FlowWays::EMPTY; FLOW_SETS as usize],
            evictions: 0,
        }
    }

    /// What a caller does for one packet of flow `hash` at `now`
    /// announcing `announced` bytes: look up the way, select, book.
    fn packet(&mut self, hash: u32, now: u64, announced: u32, len: u32) -> Pick {
        self.packet_op(hash, now, announced, len, OP_WRITE_FIRST)
    }

    /// [`Leaf::packet`] for a RoCEv2 packet of opcode `op`.
    fn packet_op(&mut self, hash: u32, now: u64, announced: u32, len: u32, op: u8) -> Pick {
        let set = &mut self.table[flow_set_index(7, hash) as usize];
        let (e, how) = flow_way(set, flowlet_tag(7, hash), now, TO);
        if how == WayLookup::Evicted {
            self.evictions += 1;
        }
        let ports = &self.ports;
        let g = &self.g;
        let levels = || {
            let mut keys = [u32::MAX; MAX_MEMBERS];
            for i in 0..g.n_members as usize {
                keys[i] = ports[i].place_key(now);
            }
            keys
        };
        let pick = select(g, hash, Some(e), now, 0, levels).expect("a live member");
        let bytes = place_booking(MODE_PLACE, &pick, announced);
        let port = &mut self.ports[pick.slot as usize];
        port.commit_place(now, bytes, place_counts(&pick, true, op));
        port.update(now, len);
        pick
    }
}

/// A collective step: eight flows start on eight idle uplinks at the same
/// nanosecond, each announcing 512 KiB. A rate estimator sees none of
/// them yet; the bookings put one flow on each uplink, in every seed's
/// hashes.
#[test]
fn a_step_of_simultaneous_flows_takes_one_uplink_each() {
    for round in 0..200u32 {
        let mut leaf = Leaf::new(8);
        let mut used = [0u32; 8];
        for qp in 0..8 {
            let h = flow_hash(&roce4(round * 8 + qp), SEED);
            let p = leaf.packet(h, T0, 512 << 10, 4158);
            assert_eq!(p.flowlet, Some(FlowletEvent::First));
            used[p.slot as usize] += 1;
        }
        assert_eq!(used, [1; 8], "round {round}");
    }
}

/// The same step placed by bandwidth mode (bands of idle ports, all 0):
/// the hash breaks every tie, and some uplink gets two flows (what the
/// simulator's 128-GPU ring showed).
#[test]
fn bandwidth_mode_places_the_same_step_as_a_hash_would() {
    let g = group(MODE_BANDWIDTH, &[1; 8]);
    let mut collided = 0;
    for round in 0..200u32 {
        let mut used = [0u32; 8];
        for qp in 0..8 {
            let h = flow_hash(&roce4(round * 8 + qp), SEED);
            let mut e = Flowlet::NEW;
            let p = select(&g, h, Some(&mut e), T0, 0, || IDLE).unwrap();
            used[p.slot as usize] += 1;
        }
        collided += u32::from(used.iter().any(|&n| n > 1));
    }
    // eight balls in eight bins all apart: 8!/8^8 = 0.24 %
    assert!(collided > 190, "only {collided} of 200 steps collided");
}

/// A placed flow keeps its member across any gap (a gap is no proof the
/// old path drained) and moves only when the member goes down.
#[test]
fn a_placed_flow_stays_through_gaps_and_moves_when_its_member_dies() {
    let mut leaf = Leaf::new(4);
    let h = flow_hash(&roce4(1), SEED);
    let first = leaf.packet(h, T0, 1 << 20, 1000);
    for gap in [1, TO, TO + 1, 50 * TO] {
        let p = leaf.packet(h, T0 + gap, NOT_ANNOUNCED, 1000);
        assert_eq!((p.slot, p.flowlet), (first.slot, Some(FlowletEvent::Same)));
    }
    leaf.g.members[first.slot as usize].live = 0;
    let p = leaf.packet(h, T0 + 51 * TO, NOT_ANNOUNCED, 1000);
    assert_eq!(p.flowlet, Some(FlowletEvent::MemberDown));
    assert_ne!(p.slot, first.slot);
    // and it books the default on its new member (no length announced)
    let free = leaf.ports[p.slot as usize].booked_free_at(T0 + 51 * TO) - (T0 + 51 * TO);
    assert_eq!(free, wire_ns(PLACE_DEFAULT_BYTES, G400));
}

#[test]
fn place_next_never_reports_a_gap() {
    let g = group(MODE_PLACE, &[1, 1]);
    let mut e = Flowlet::NEW;
    let c = |s: u8| {
        Some(Choice {
            slot: s,
            id: 100 + s as u16,
        })
    };
    assert_eq!(
        place_next(&mut e, &g, T0, |_| c(1)).map(|x| x.1),
        Some(FlowletEvent::First)
    );
    assert_eq!(
        place_next(&mut e, &g, T0 + 10 * TO, |_| unreachable!()),
        Some((c(1).unwrap(), FlowletEvent::Same))
    );
    assert_eq!(e.last_seen_ns, T0 + 10 * TO);
    // an older timestamp (another CPU's) leaves last_seen alone
    place_next(&mut e, &g, T0, |_| unreachable!()).unwrap();
    assert_eq!(e.last_seen_ns, T0 + 10 * TO);
    // no member to choose: the entry is left as it was
    let mut fresh = Flowlet::NEW;
    assert_eq!(place_next(&mut fresh, &g, T0, |_| None), None);
    assert_eq!(fresh, Flowlet::NEW);
}

#[test]
fn booking_moves_the_free_time_by_the_bytes_at_the_port_speed() {
    assert_eq!(wire_ns(50_000, 400_000), 1000);
    assert_eq!(wire_ns(12_500, 100_000), 1000);
    assert_eq!(wire_ns(1, 0), PLACE_HORIZON_NS);
    let mut r = PortRate::new(G400);
    assert_eq!(r.booked_free_at(T0), T0);
    r.book(T0, 50_000);
    assert_eq!(r.booked_free_at(T0), T0 + 1000);
    // a second booking queues behind the first
    r.book(T0 + 400, 50_000);
    assert_eq!(r.booked_free_at(T0 + 400), T0 + 2000);
    // once free, a booking starts from now
    r.book(T0 + 5000, 50_000);
    assert_eq!(r.booked_free_at(T0 + 5000), T0 + 6000);
    assert_eq!(r.booked_free_at(T0 + 9000), T0 + 9000);
    // one booking lasts at most PLACE_MAX_BOOK_NS
    let mut r = PortRate::new(G400);
    r.book(T0, u32::MAX);
    assert_eq!(r.booked_free_at(T0), T0 + PLACE_MAX_BOOK_NS);
    // a port of unknown speed: every booking is the longest
    let mut r = PortRate::new(0);
    r.book(T0, 1);
    assert_eq!(r.booked_free_at(T0), T0 + PLACE_MAX_BOOK_NS);
    // and all of them reach at most the horizon
    for _ in 0..2 * PLACE_HORIZON_NS / PLACE_MAX_BOOK_NS {
        r.book(T0, u32::MAX);
    }
    assert_eq!(r.booked_free_at(T0), T0 + PLACE_HORIZON_NS);
}

/// Keys order members by booking first (in units of about 1 us), load
/// band second; the hash breaks what is left.
#[test]
fn keys_order_by_booking_then_band() {
    let mut g = group(MODE_PLACE, &[1, 1, 1, 1, 1]);
    let us = 1u64 << PLACE_LEVEL_SHIFT;
    let mut keys = [u32::MAX; MAX_MEMBERS];
    let ahead = [3 * us, 5000 * us, us, 200 * us, 5000 * us];
    let bands = [1, 7, 0, 2, 3];
    for i in 0..5 {
        keys[i] = place_key(ahead[i], bands[i], 0);
    }
    // the least booked wins whatever its band
    assert_eq!(pick_least_loaded(&g, &keys, 0).unwrap().slot, 2);
    // members 1 and 4 booked alike and least: the lower band wins (4),
    // however far ahead they are
    g.members[0].live = 0;
    g.members[2].live = 0;
    g.members[3].live = 0;
    for tie in 0..100 {
        assert_eq!(pick_least_loaded(&g, &keys, tie).unwrap().slot, 4);
    }
    // less than a unit apart is alike: the band decides
    g.members[0].live = 1;
    keys[0] = place_key(5000 * us + us - 1, 5, 0);
    assert_eq!(pick_least_loaded(&g, &keys, 0).unwrap().slot, 4);
    keys[0] = place_key(5000 * us + us - 1, 2, 0);
    assert_eq!(pick_least_loaded(&g, &keys, 0).unwrap().slot, 0);
    // exactly alike: the tie spreads over them
    let g = group(MODE_PLACE, &[1, 1, 1, 1]);
    let same = [place_key(7 * us, 2, 3 * PLACE_COUNT_ONE); MAX_MEMBERS];
    let mut seen = [0u32; 4];
    for tie in 0..400 {
        seen[pick_least_loaded(&g, &same, tie).unwrap().slot as usize] += 1;
    }
    assert!(seen.iter().all(|&n| n > 50), "{seen:?}");
}

#[test]
fn a_key_is_the_booking_ahead_over_the_band_over_the_placements() {
    let mut r = PortRate::new(G400);
    assert_eq!(r.place_key(T0), 0);
    r.book(T0, 500_000); // 10 us at 400G
    assert_eq!(
        r.place_key(T0),
        ((10_000 >> PLACE_LEVEL_SHIFT) as u32) << 15
    );
    assert_eq!(r.place_key(T0 + 20_000), 0, "the booking ended");
    r.count_placement(T0);
    assert_eq!(r.place_key(T0 + 20_000), PLACE_COUNT_ONE);
    assert_eq!(
        place_key(u64::MAX, 9, u32::MAX),
        ((1 << 17) - 1) << 15 | 1 << 12 | PLACE_COUNT_MAX
    );
    // each part outranks everything below it
    assert!(place_key(1 << PLACE_LEVEL_SHIFT, 0, 0) > place_key(0, 7, u32::MAX));
    assert!(place_key(0, 1, 0) > place_key(0, 0, u32::MAX));
    // bookings up to the horizon stay ordered
    assert!(place_key(PLACE_HORIZON_NS, 0, 0) > place_key(PLACE_HORIZON_NS - 1024, 7, 9));
}

/// A port's count of placements: one per placement, halved every period
/// of 2^PLACE_COUNT_SHIFT ns begun since, gone after 24 periods.
#[test]
fn placements_count_and_fade() {
    let period = 1u64 << PLACE_COUNT_SHIFT;
    let t = 3 * period + 5;
    let mut r = PortRate::new(G400);
    assert_eq!(r.placements_at(t), 0);
    for _ in 0..3 {
        r.count_placement(t);
    }
    assert_eq!(r.placements_at(t), 3 * PLACE_COUNT_ONE);
    assert_eq!(
        r.placements_at(t + period - 6),
        3 * PLACE_COUNT_ONE,
        "same period"
    );
    assert_eq!(r.placements_at(t + period), 3 * PLACE_COUNT_ONE / 2);
    assert_eq!(r.placements_at(t + 4 * period), 3);
    assert_eq!(r.placements_at(t + 23 * period), 0);
    assert_eq!(r.placements_at(t + 24 * period), 0);
    // 3 placements still count more than 2 after 4 halvings
    let mut two = PortRate::new(G400);
    two.count_placement(t);
    two.count_placement(t);
    assert!(r.placements_at(t + 4 * period) > two.placements_at(t + 4 * period));
    // a placement after a fade counts on what is left
    r.count_placement(t + period);
    assert_eq!(
        r.placements_at(t + period),
        3 * PLACE_COUNT_ONE / 2 + PLACE_COUNT_ONE
    );
    // the count saturates instead of wrapping
    let mut full = PortRate::new(G400);
    for _ in 0..(1 << 21) {
        full.count_placement(t);
    }
    assert_eq!(full.placements_at(t), (1 << 24) - 1);
    assert_eq!(place_key(0, 0, full.placements_at(t)), PLACE_COUNT_MAX);
}

/// Sparse flows (the fan bench): each starts when every earlier flow's
/// booking has lapsed and the ports read idle, so bookings and bands tie.
/// The placement counts still spread them evenly, whatever the hashes: 8
/// flows on 4 members go 2/2/2/2, where ties broken by the hash alone
/// put 3 or more on one member for some hash seeds.
#[test]
fn sparse_flows_spread_by_their_placements() {
    let mut hash_polarised = 0;
    for round in 0..200u32 {
        let mut leaf = Leaf::new(4);
        let mut used = [0u32; 4];
        let mut by_hash = [0u32; 4];
        for qp in 0..8u64 {
            let h = flow_hash(&roce4(round * 8 + qp as u32), SEED);
            // 1 ms apart: each booking (<= 100 us) has lapsed
            let p = leaf.packet(h, T0 + qp * 1_000_000, NOT_ANNOUNCED, 1024);
            assert_eq!(p.flowlet, Some(FlowletEvent::First));
            used[p.slot as usize] += 1;
            by_hash[pick_hash(&leaf.g, flowlet_hash(h, 0)).unwrap().slot as usize] += 1;
        }
        assert_eq!(used, [2; 4], "round {round}");
        if by_hash.iter().any(|&n| n >= 3) {
            hash_polarised += 1;
        }
    }
    assert!(
        hash_polarised > 20,
        "the hash alone would polarise some rounds: {hash_polarised}"
    );
}

/// The acknowledgement flows a leaf also carries (its hosts' ACKs and
/// CNPs to the senders of other leaves) are placed but not counted: the
/// data flows spread 2/2/2/2 over 4 uplinks whichever ports the ACK flows
/// took, where counting them would push data flows off the ports that
/// carry only ACKs.
#[test]
fn acknowledgement_flows_are_placed_but_not_counted() {
    use dataplane_common::wire::bth::{OP_ACK, OP_CNP};
    let first = Pick {
        slot: 0,
        id: 1,
        flowlet: Some(FlowletEvent::First),
    };
    let same = Pick {
        flowlet: Some(FlowletEvent::Same),
        ..first
    };
    assert!(place_counts(&first, true, OP_WRITE_FIRST));
    assert!(place_counts(&first, true, OP_WRITE_MIDDLE));
    assert!(!place_counts(&first, true, OP_ACK));
    assert!(!place_counts(&first, true, OP_CNP));
    assert!(!place_counts(&same, true, OP_WRITE_FIRST));
    // not RoCE: the byte is no opcode
    assert!(place_counts(&first, false, OP_ACK));
    for round in 0..200u32 {
        let mut leaf = Leaf::new(4);
        let mut used = [0u32; 4];
        for k in 0..8u64 {
            let t = T0 + k * 1_000_000;
            let ack = flow_hash(&roce4(100_000 + round * 8 + k as u32), SEED);
            let a = leaf.packet_op(ack, t, 80, 80, OP_ACK);
            assert_eq!(a.flowlet, Some(FlowletEvent::First));
            let h = flow_hash(&roce4(round * 8 + k as u32), SEED);
            // 0.5 ms after the ACK: its 80-byte booking has lapsed
            let p = leaf.packet(h, t + 500_000, NOT_ANNOUNCED, 1024);
            used[p.slot as usize] += 1;
        }
        assert_eq!(used, [2; 4], "round {round}: data flows per uplink");
    }
}

#[test]
fn booking_follows_what_the_packet_announces() {
    let new = Pick {
        slot: 0,
        id: 1,
        flowlet: Some(FlowletEvent::First),
    };
    let same = Pick {
        flowlet: Some(FlowletEvent::Same),
        ..new
    };
    assert_eq!(place_booking(MODE_PLACE, &new, 4096), 4096);
    assert_eq!(place_booking(MODE_PLACE, &same, 4096), 4096);
    assert_eq!(
        place_booking(MODE_PLACE, &new, NOT_ANNOUNCED),
        PLACE_DEFAULT_BYTES
    );
    assert_eq!(place_booking(MODE_PLACE, &same, NOT_ANNOUNCED), 0);
    assert_eq!(
        place_booking(MODE_PLACE, &new, u32::MAX - 1),
        PLACE_MAX_BYTES
    );
    for mode in [MODE_HASH, MODE_FLOWLET, MODE_BANDWIDTH, MODE_SPRAY] {
        assert_eq!(place_booking(mode, &new, 4096), 0, "mode {mode}");
    }
    // what packets announce: a WRITE first / only its RETH length, an ACK
    // or CNP itself, anything else nothing
    use dataplane_common::wire::bth::*;
    assert_eq!(place_announced(true, OP_WRITE_FIRST, 9000, 80), 9000);
    assert_eq!(place_announced(true, OP_WRITE_ONLY, 12, 80), 12);
    assert_eq!(
        place_announced(true, OP_WRITE_MIDDLE, 9000, 80),
        NOT_ANNOUNCED
    );
    assert_eq!(
        place_announced(true, OP_SEND_FIRST, 9000, 80),
        NOT_ANNOUNCED
    );
    assert_eq!(place_announced(true, OP_ACK, 0, 80), 80);
    assert_eq!(place_announced(true, OP_CNP, 0, 80), 80);
    assert_eq!(
        place_announced(false, OP_WRITE_FIRST, 9000, 80),
        NOT_ANNOUNCED
    );
    assert!(carries_reth(OP_WRITE_FIRST) && carries_reth(OP_WRITE_ONLY));
    assert!(!carries_reth(OP_WRITE_MIDDLE) && !carries_reth(OP_SEND_ONLY));
}

/// Five flows in one set of four ways: hits keep their entries, an idle
/// way is taken without an eviction, and only when four flows are active
/// does a fifth evict the one seen least recently.
#[test]
fn a_set_keeps_four_active_flows_and_evicts_the_stalest() {
    let mut s = FlowWays::EMPTY;
    let tag = |i: u64| (1 << 63) | i;
    for i in 0..4 {
        let (e, how) = flow_way(&mut s, tag(i), T0 + i, TO);
        assert_eq!(how, WayLookup::Taken);
        e.last_seen_ns = T0 + i;
        e.slot = i as u8;
    }
    for i in 0..4 {
        let (e, how) = flow_way(&mut s, tag(i), T0 + 10, TO);
        assert_eq!((how, e.slot), (WayLookup::Hit, i as u8));
    }
    // all four active: the fifth evicts the stalest (flow 0, seen at T0)
    let (e, how) = flow_way(&mut s, tag(9), T0 + 20, TO);
    assert_eq!((how, *e), (WayLookup::Evicted, Flowlet::NEW));
    e.last_seen_ns = T0 + 20;
    assert_eq!(flow_way(&mut s, tag(1), T0 + 21, TO).1, WayLookup::Hit);
    // after the timeout a way is idle: taken, not evicted
    let later = T0 + 21 + TO + 1;
    assert_eq!(flow_way(&mut s, tag(42), later, TO).1, WayLookup::Taken);
}

/// Two active flows whose hashes meet: in the direct-mapped flowlet table
/// each packet evicts the other flow's entry (so bandwidth mode re-places
/// both at every packet: the NAKs of the simulator's ring), in a set of
/// the place table both keep their ways.
#[test]
fn two_flows_that_meet_do_not_thrash_a_set() {
    let (a, b) = ((1 << 63) | 5, (1 << 63) | 6);
    let mut slot = FlowletSlot {
        tag: 0,
        entry: Flowlet::NEW,
    };
    let mut set = FlowWays::EMPTY;
    let (mut fresh_direct, mut fresh_ways) = (0, 0);
    for i in 0..100u64 {
        let tag = if i % 2 == 0 { a } else { b };
        let e = flowlet_entry(&mut slot, tag);
        fresh_direct += u32::from(e.slot == NO_SLOT);
        e.slot = 0;
        let (e, how) = flow_way(&mut set, tag, T0 + i, TO);
        fresh_ways += u32::from(how != WayLookup::Hit);
        e.slot = 0;
        e.last_seen_ns = T0 + i;
    }
    assert_eq!(fresh_direct, 100);
    assert_eq!(fresh_ways, 2);
}

#[test]
fn set_index_spreads_flows_and_groups() {
    let mut hit = vec![0u32; FLOW_SETS as usize];
    for h in (0..FLOW_SETS * 4).map(|qp| flow_hash(&roce4(qp), SEED)) {
        hit[flow_set_index(3, h) as usize] += 1;
    }
    // 4 flows a set on average: no set holds more than 16
    assert!(hit.iter().all(|&n| n <= 16));
    let h = flow_hash(&roce4(1), SEED);
    assert_ne!(flow_set_index(1, h), flow_set_index(2, h));
}

/// `LeastLoaded` stepped slot by slot, stopping after the group's last
/// member (what the eBPF program's `bpf_loop` does), chooses what
/// `pick_least_loaded` chooses, for bands and place keys alike, with
/// members down, weights of every size and tied levels.
#[test]
fn stepping_least_loaded_is_pick_least_loaded() {
    let mut rng = XorShift32(0x1ea5_7104);
    for round in 0..20_000 {
        let n = 1 + (rng.next_u32() % MAX_MEMBERS as u32) as usize;
        let weights: Vec<u8> = (0..n).map(|_| 1 + (rng.next_u32() % 4) as u8).collect();
        let mut g = group(MODE_PLACE, &weights);
        for i in 0..n {
            if rng.next_u32() % 5 == 0 {
                g.members[i].live = 0;
            }
        }
        // few distinct levels, so ties are common
        let mut bands = [0u8; MAX_MEMBERS];
        for b in bands.iter_mut() {
            *b = (rng.next_u32() % 3) as u8;
        }
        let keys: [u32; MAX_MEMBERS] = core::array::from_fn(|i| u32::from(bands[i]) << 20);
        let tie = rng.next_u32();
        let mut s = LeastLoaded::<u32>::new();
        for i in 0..n {
            s.step(&g, i, keys[i], tie);
        }
        let want = pick_least_loaded(&g, &bands, tie);
        assert_eq!(s.choice(), want, "round {round}: keys vs bands");
        assert_eq!(pick_least_loaded(&g, &keys, tie), want, "round {round}");
    }
}

/// The far side's work counts as booking: with none it is the plain key;
/// a port whose next hop holds a queue loses a tie it would otherwise win.
#[test]
fn far_work_adds_to_the_booking() {
    let now = 1_000_000;
    let idle = PortRate::new(G400);
    let mut other = PortRate::new(G400);
    assert_eq!(idle.place_key_far(now, 0), idle.place_key(now));
    // equal ports: the far side decides
    assert!(idle.place_key_far(now, 30_000) > other.place_key_far(now, 0));
    // 30 us ahead of the far side counts as 30 us booked here
    other.book(now, 1_500_000); // 30 us at 400G
    assert_eq!(idle.place_key_far(now, 30_000), other.place_key(now));
}
