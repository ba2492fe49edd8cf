//! The load-balancing stage of `xdp_forward`: feeds the pure selection of
//! `dataplane_common::lb` with the flow hash, the flowlet entry (place
//! mode: its way of the set-associative table), the time, a random number
//! and the member ports' load bands.
//!
//! Place mode takes its own path (`place_next` on the flow's way of the
//! 4-way table, the least loaded member by `PortRate::place_key`, then
//! `place_booking` on the chosen port): what `select`'s place arm does,
//! apart so the verifier walks it once. Every choice by load steps
//! `LeastLoaded` over the members in a `bpf_loop` (`least_loaded`), and the
//! RETH is read with `bpf_probe_read_kernel`: 16 unrolled member slots, a
//! second `select_packet` call or a direct packet read each took
//! `xdp_forward` past the verifier's 1 000 000 processed instructions
//! (6.1 for the slots, 6.18 for the others).

use aya_ebpf::{
    helpers::{bpf_get_prandom_u32, bpf_probe_read_kernel},
    macros::map,
    maps::{lpm_trie::Key, Array},
};
use dataplane_common::{
    lb::{
        by_entropy, flow_hash, flow_set_index, flow_way, flowlet_entry, flowlet_hash,
        flowlet_index, flowlet_tag, place_announced, place_booking, place_counts, place_next,
        select_packet_by, uses_flowlets, uses_reservations, Choice, FlowKey, FlowWays, Flowlet,
        FlowletSlot, Group, LeastLoaded, Pick, PortRate, WayLookup, FLOWLET_SLOTS, FLOW_SETS,
        MAX_MEMBERS, MODE_SPRAY, NOT_ANNOUNCED, NUM_BANDS,
    },
    maps::MAX_PORTS,
    parse::{Parsed, L3},
    route::MAX_GROUPS,
    wire::{
        bth,
        farnote::{far_key, FAR_KEY_BITS, FAR_KEY_LEN},
        ipv4, ipv6, udp, Packet,
    },
};

use crate::packet::XdpPacket;
use crate::tables::{live, nexthop};

/// Next-hop groups by index, two slots each; `GROUP_SLOT` names the live
/// one (`dataplane_common::slots`: a group is never read half-written).
#[map]
static GROUPS: Array<Group> = Array::with_max_entries(2 * MAX_GROUPS, 0);

#[map]
static GROUP_SLOT: Array<u32> = Array::with_max_entries(MAX_GROUPS, 0);

/// Group `id` (an unused id reads as a group without members).
#[inline(always)]
fn group(id: u32) -> Option<&'static Group> {
    live(&GROUPS, &GROUP_SLOT, id)
}

/// Flowlet state per (group, flow hash): slots indexed by
/// `flowlet_index`, a flow taking over another's slot when they collide (an
/// array: no LRU list, no lock; see `FlowletSlot`).
#[map]
static FLOWLETS: Array<FlowletSlot> = Array::with_max_entries(FLOWLET_SLOTS, 0);

/// Place mode's flows: sets of `FLOW_WAYS` entries indexed by
/// `flow_set_index` (a flow keeps its way while another flow of the set
/// is active; see `flow_way`).
#[map]
static FLOW_WAYS: Array<FlowWays> = Array::with_max_entries(FLOW_SETS, 0);

/// Discounting rate estimator of every egress port (shared by all CPUs;
/// see `PortRate` for what a race costs).
#[map]
static PORT_RATE: Array<PortRate> = Array::with_max_entries(MAX_PORTS, 0);

/// Per-switch hash seed (entry 0), written by the controller.
#[map]
static HASH_SEED: Array<u32> = Array::with_max_entries(1, 0);

#[inline(always)]
fn flow_key(pkt: &XdpPacket, p: &Parsed) -> Option<FlowKey> {
    let l3 = p.l3_off as usize;
    let qp = if p.roce { p.bth.dest_qp } else { 0 };
    match p.l3 {
        L3::Ipv4 => {
            let src = pkt.read::<4>(l3 + ipv4::SRC_OFF)?;
            let dst = pkt.read::<4>(l3 + ipv4::DST_OFF)?;
            Some(FlowKey::ipv4(src, dst, p.ip_proto, p.sport, p.dport, qp))
        }
        L3::Ipv6 => {
            let src = pkt.read::<16>(l3 + ipv6::SRC_OFF)?;
            let dst = pkt.read::<16>(l3 + ipv6::DST_OFF)?;
            Some(FlowKey::ipv6(src, dst, p.ip_proto, p.sport, p.dport, qp))
        }
        _ => None,
    }
}

/// Next hop `id`'s egress port (id) and its rate estimator.
#[inline(always)]
fn rate_of(id: u16) -> Option<(u16, *mut PortRate)> {
    let nh = nexthop(id)?;
    Some((nh.port_id, PORT_RATE.get_ptr_mut(u32::from(nh.port_id))?))
}

/// `scan_member`'s context: which group, which level, when, the tie
/// breaker, and the choice so far.
struct Scan {
    group_id: u32,
    /// 1: place keys, 0: load bands
    place: u32,
    now: u64,
    tie: u32,
    /// The key of the far side's notifications toward the packet's
    /// destination (place mode), its port id written per member: built
    /// once, here, since the callback's stack adds to the program's.
    far: Key<[u8; FAR_KEY_LEN]>,
    acc: LeastLoaded<u32>,
}

/// bpf_loop callback: member slot `i` at its egress port's level (place
/// key or load band; the worst level when the port has no estimator) into
/// the choice (`LeastLoaded::step`, the stepwise `pick_least_loaded`);
/// stops after the group's last member. A loop of `bpf_loop`, not an
/// unrolled one: the verifier walks the callback once, where 16 unrolled
/// slots with their branches took kernel 6.1's verifier past its
/// 1M-instruction limit (6.18's pruning kept it under).
extern "C" fn scan_member(i: u64, ctx: *mut core::ffi::c_void) -> i64 {
    // SAFETY: ctx is the Scan `least_loaded` passed.
    let s = unsafe { &mut *(ctx as *mut Scan) };
    let i = (i as usize) & (MAX_MEMBERS - 1);
    let Some(g) = group(s.group_id) else {
        return 1;
    };
    if i >= g.n_members as usize {
        return 1;
    }
    let level = match rate_of(g.members[i].id) {
        Some((port, r)) if s.place != 0 => {
            let far = crate::far::far_ns(&mut s.far, port, s.now);
            // SAFETY: an array slot lives as long as the map.
            unsafe { &*r }.place_key_far(s.now, far)
        }
        // SAFETY: as above.
        Some((_, r)) => u32::from(unsafe { &*r }.band(s.now)),
        None if s.place != 0 => u32::MAX,
        None => u32::from(NUM_BANDS - 1),
    };
    s.acc.step(g, i, level, s.tie);
    0
}

/// `pick_least_loaded` of group `group_id`'s members at `now` by place key
/// (`place`, with the far side's notifications toward `dst`) or load
/// band, ties broken by `tie`.
#[inline(always)]
fn least_loaded(group_id: u16, place: bool, now: u64, tie: u32, dst: [u8; 16]) -> Option<Choice> {
    let mut s = Scan {
        group_id: u32::from(group_id),
        place: u32::from(place),
        now,
        tie,
        far: Key::new(FAR_KEY_BITS, far_key(0, &dst)),
        acc: LeastLoaded::new(),
    };
    // SAFETY: callback and context follow bpf_loop's contract.
    let n = unsafe {
        aya_ebpf::helpers::generated::bpf_loop(
            MAX_MEMBERS as u32,
            scan_member as *mut core::ffi::c_void,
            &mut s as *mut Scan as *mut core::ffi::c_void,
            0,
        )
    };
    if n < 0 {
        return None;
    }
    s.acc.choice()
}

/// The DMA length of a RoCEv2 RDMA WRITE first / only packet's RETH
/// (`NOT_ANNOUNCED` when none), read with `bpf_probe_read_kernel`: a
/// direct read proves a longer packet range on one path and not the
/// other, and the verifier walks the rest of the pipeline twice.
#[inline(always)]
fn reth_len(pkt: &XdpPacket, p: &Parsed) -> u32 {
    if !p.roce || !bth::carries_reth(p.bth.opcode) {
        return NOT_ANNOUNCED;
    }
    let off =
        (p.l4_off as usize & 0x3ff) + udp::HEADER_LEN + bth::HEADER_LEN + bth::RETH_DMA_LEN_OFF;
    if off + 4 > pkt.len() {
        return NOT_ANNOUNCED;
    }
    // SAFETY: copies 4 bytes of the frame (checked above) to the stack.
    unsafe { bpf_probe_read_kernel((pkt.start() + off) as *const [u8; 4]) }
        .map_or(NOT_ANNOUNCED, u32::from_be_bytes)
}

/// The next-hop index group `group_id` gives this packet at `now` (the
/// packet's one clock reading), or `None` when the group has no eligible
/// member (or does not exist).
#[inline(always)]
pub fn pick(pkt: &XdpPacket, p: &Parsed, group_id: u16, now: u64) -> Option<u16> {
    let g = group(u32::from(group_id))?;
    let seed = HASH_SEED.get(0).copied().unwrap_or(0);
    let key = flow_key(pkt, p)?;
    let hash = flow_hash(&key, seed);
    // a UET packet in an entropy group: its hash alone (no state, no rand)
    let entropy = by_entropy(g, p.uet);
    // randomness only for spray
    // SAFETY: helper without preconditions.
    let rand = if g.mode == MODE_SPRAY && !entropy {
        unsafe { bpf_get_prandom_u32() }
    } else {
        0
    };
    let tag = flowlet_tag(group_id, hash);
    if uses_reservations(g.mode) && !entropy {
        // SAFETY: an array slot lives as long as the map; a race between
        // CPUs loses at most one write (see `Flowlet`).
        let set = unsafe { &mut *FLOW_WAYS.get_ptr_mut(flow_set_index(group_id, hash))? };
        let (e, how) = flow_way(set, tag, now, u64::from(g.flowlet_timeout_ns));
        if how == WayLookup::Evicted {
            crate::bump_global(|c| c.lb_evictions += 1);
        }
        let (c, ev) = place_next(e, g, now, |n| {
            least_loaded(group_id, true, now, flowlet_hash(hash, n), key.dst)
        })?;
        let pick = Pick {
            slot: c.slot,
            id: c.id,
            flowlet: Some(ev),
        };
        let announced = place_announced(p.roce, p.bth.opcode, reth_len(pkt, p), p.frame_len);
        let bytes = place_booking(g.mode, &pick, announced);
        let placed = place_counts(&pick, p.roce, p.bth.opcode);
        if bytes > 0 || placed {
            if let Some((_, r)) = rate_of(pick.id) {
                // SAFETY: shared slot; a race loses one booking or count.
                unsafe { (*r).commit_place(now, bytes, placed) };
            }
        }
        return Some(pick.id);
    }
    let flowlet: Option<&mut Flowlet> = if uses_flowlets(g.mode) && !entropy {
        // SAFETY: as above.
        FLOWLETS
            .get_ptr_mut(flowlet_index(group_id, hash))
            .map(|s| flowlet_entry(unsafe { &mut *s }, tag))
    } else {
        None
    };
    select_packet_by(g, hash, p.uet, flowlet, now, rand, |tie| {
        least_loaded(group_id, false, now, tie, key.dst)
    })
    .map(|pick| pick.id)
}

/// Accounts `len` bytes sent on `port_id` at `now` in its rate estimator.
#[inline(always)]
pub fn sent(port_id: u16, len: u64, now: u64) {
    if let Some(r) = PORT_RATE.get_ptr_mut(u32::from(port_id)) {
        // SAFETY: shared slot; a race loses one update (see `PortRate`).
        unsafe { (*r).update(now, len as u32) };
    }
}
