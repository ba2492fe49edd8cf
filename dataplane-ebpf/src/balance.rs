//! The load-balancing stage of `xdp_forward`: feeds the pure selection of
//! `dataplane_common::lb` with the flow hash, the flowlet entry, the time,
//! a random number and the member ports' load bands.

use aya_ebpf::{
    helpers::{bpf_get_prandom_u32, bpf_ktime_get_ns},
    macros::map,
    maps::{Array, HashMap, LruHashMap},
};
use dataplane_common::{
    lb::{
        flow_hash, select, uses_flowlets, FlowKey, Flowlet, Group, PortRate, MAX_MEMBERS,
        MODE_HASH, MODE_SPRAY, NUM_BANDS,
    },
    maps::MAX_PORTS,
    parse::{Parsed, L3},
    route::MAX_GROUPS,
    wire::{ipv4, ipv6, Packet},
};

use crate::packet::XdpPacket;
use crate::tables::NEXTHOPS;

/// Next-hop groups by index (hash map: an update replaces a group whole).
#[map]
static GROUPS: HashMap<u32, Group> = HashMap::with_max_entries(MAX_GROUPS, 0);

/// Flowlet state per (group, flow hash), least recently used evicted.
#[map]
static FLOWLETS: LruHashMap<u64, Flowlet> = LruHashMap::with_max_entries(65536, 0);

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

/// Load band of every member slot's egress port at `now`.
#[inline(always)]
fn member_bands(g: &Group, now: u64) -> [u8; MAX_MEMBERS] {
    let mut bands = [NUM_BANDS - 1; MAX_MEMBERS];
    let mut i = 0;
    while i < MAX_MEMBERS {
        if i < g.n_members as usize {
            let id = u32::from(g.members[i].id);
            // SAFETY: read-only; entries are replaced whole.
            if let Some(nh) = unsafe { NEXTHOPS.get(&id) } {
                if let Some(r) = PORT_RATE.get(u32::from(nh.port_id)) {
                    bands[i] = r.band(now);
                }
            }
        }
        i += 1;
    }
    bands
}

/// The next-hop index group `group_id` gives this packet, or `None` when
/// the group has no eligible member (or does not exist).
#[inline(always)]
pub fn pick(pkt: &XdpPacket, p: &Parsed, group_id: u16) -> Option<u16> {
    // SAFETY: read-only; hash-map updates replace groups whole.
    let g = unsafe { GROUPS.get(&u32::from(group_id)) }?;
    let seed = HASH_SEED.get(0).copied().unwrap_or(0);
    let key = flow_key(pkt, p)?;
    let hash = flow_hash(&key, seed);
    // the clock only where time matters, randomness only for spray
    // SAFETY: helpers without preconditions.
    let now = if g.mode == MODE_HASH {
        0
    } else {
        unsafe { bpf_ktime_get_ns() }
    };
    let rand = if g.mode == MODE_SPRAY {
        unsafe { bpf_get_prandom_u32() }
    } else {
        0
    };
    let flowlet: Option<&mut Flowlet> = if uses_flowlets(g.mode) {
        let fkey = (u64::from(group_id) << 32) | u64::from(hash);
        if FLOWLETS.get_ptr_mut(&fkey).is_none() {
            let _ = FLOWLETS.insert(&fkey, &Flowlet::NEW, 0);
        }
        // SAFETY: the entry lives until evicted; a race loses at most one
        // write (see `Flowlet`).
        FLOWLETS.get_ptr_mut(&fkey).map(|e| unsafe { &mut *e })
    } else {
        None
    };
    select(g, hash, flowlet, now, rand, || member_bands(g, now)).map(|pick| pick.id)
}

/// Accounts `len` bytes sent on `port_id` in its rate estimator.
#[inline(always)]
pub fn sent(port_id: u16, len: u64) {
    if let Some(r) = PORT_RATE.get_ptr_mut(u32::from(port_id)) {
        // SAFETY: shared slot; a race loses one update (see `PortRate`).
        let now = unsafe { bpf_ktime_get_ns() };
        unsafe { (*r).update(now, len as u32) };
    }
}
