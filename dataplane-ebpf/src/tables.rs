//! The forwarding tables the controller writes (routes, next hops, the
//! redirect devmap) and the per-port forwarding counters.

use aya_ebpf::{
    bindings::BPF_F_NO_PREALLOC,
    macros::map,
    maps::{Array, DevMap, HashMap, LpmTrie, PerCpuArray},
};
use dataplane_common::{
    maps::MAX_PORTS,
    route::{
        nexthop_slot, FwdCounters, NextHop, RouteEntry, MAX_NEXTHOPS, NEXTHOP_SLOTS,
        ROUTES_V4_CAPACITY, ROUTES_V6_CAPACITY,
    },
};

/// IPv4 routes (longest prefix match).
#[map]
pub(crate) static ROUTES_V4: LpmTrie<[u8; 4], RouteEntry> =
    LpmTrie::with_max_entries(ROUTES_V4_CAPACITY, 0);

/// IPv6 routes (longest prefix match).
#[map]
pub(crate) static ROUTES_V6: LpmTrie<[u8; 16], RouteEntry> =
    LpmTrie::with_max_entries(ROUTES_V6_CAPACITY, 0);

/// IPv4 host routes (/32, exact match), consulted before the trie;
/// allocated on demand like the trie (BPF_F_NO_PREALLOC).
#[map]
pub(crate) static HOSTS_V4: HashMap<[u8; 4], RouteEntry> =
    HashMap::with_max_entries(ROUTES_V4_CAPACITY, BPF_F_NO_PREALLOC);

/// IPv6 host routes (/128, exact match), consulted before the trie.
#[map]
pub(crate) static HOSTS_V6: HashMap<[u8; 16], RouteEntry> =
    HashMap::with_max_entries(ROUTES_V6_CAPACITY, BPF_F_NO_PREALLOC);

/// Next hops: two slots per index, the generation in `NH_GEN` selects one
/// (`dataplane_common::route::NEXTHOP_SLOTS`; read with [`nexthop`]).
#[map]
pub(crate) static NEXTHOPS: Array<NextHop> = Array::with_max_entries(NEXTHOP_SLOTS, 0);

/// Generation of every next hop (its low bit: the slot in use), published
/// by the controller after it filled the other slot.
#[map]
static NH_GEN: Array<u32> = Array::with_max_entries(MAX_NEXTHOPS, 0);

/// Next hop `id` (all zero, `valid` 0, when none was written), or `Err`
/// when the controller published a new generation during the read: never
/// a half-written entry (see `NEXTHOP_SLOTS`). One attempt (a retry
/// doubles the paths the verifier walks in `balance`'s member loop).
#[inline(always)]
pub(crate) fn nexthop(id: u32) -> Option<Result<NextHop, ()>> {
    let gen = NH_GEN.get_ptr(id)?;
    // SAFETY (all three): map values, read as the controller may write
    // them; volatile so the copy stays between the two generation loads
    // (x86 keeps loads in order).
    let g = unsafe { core::ptr::read_volatile(gen) };
    let slot = NEXTHOPS.get_ptr(nexthop_slot(id, g))?;
    let nh = unsafe { core::ptr::read_volatile(slot) };
    if unsafe { core::ptr::read_volatile(gen) } == g {
        Some(Ok(nh))
    } else {
        Some(Err(()))
    }
}

/// Egress ports for XDP_REDIRECT, indexed by port id.
#[map]
pub(crate) static TX_PORTS: DevMap = DevMap::with_max_entries(MAX_PORTS, 0);

/// Forwarding counters per port (per CPU).
#[map]
static FWD_COUNTERS: PerCpuArray<FwdCounters> = PerCpuArray::with_max_entries(MAX_PORTS, 0);

#[inline(always)]
pub(crate) fn fwd_counters(port_id: u16) -> Option<&'static mut FwdCounters> {
    // SAFETY: per-CPU slot, only this program on this CPU touches it.
    FWD_COUNTERS
        .get_ptr_mut(u32::from(port_id))
        .map(|p| unsafe { &mut *p })
}
