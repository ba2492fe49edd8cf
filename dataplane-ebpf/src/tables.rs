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
        FwdCounters, NextHop, RouteEntry, MAX_NEXTHOPS, ROUTES_V4_CAPACITY, ROUTES_V6_CAPACITY,
    },
    slots::slot_index,
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

/// Whether each host table may hold routes (entries `HOST_ROUTES_V4`,
/// `_V6`): a packet skips the lookup of an empty one (a hash miss).
#[map]
pub(crate) static HOST_ROUTES: Array<u32> = Array::with_max_entries(2, 0);

/// Whether host table `i` may hold routes.
#[inline(always)]
pub(crate) fn hosts_in_use(i: u32) -> bool {
    HOST_ROUTES.get(i).is_some_and(|&n| n != 0)
}

/// Next hops by index, two slots each; `NEXTHOP_SLOT` names the live one
/// (`dataplane_common::slots`: never read half-written, no hash).
#[map]
pub(crate) static NEXTHOPS: Array<NextHop> = Array::with_max_entries(2 * MAX_NEXTHOPS, 0);

#[map]
pub(crate) static NEXTHOP_SLOT: Array<u32> = Array::with_max_entries(MAX_NEXTHOPS, 0);

/// Entry `id` of a two-slot table: its live slot.
#[inline(always)]
pub(crate) fn live<T>(
    data: &'static Array<T>,
    slot: &'static Array<u32>,
    id: u32,
) -> Option<&'static T> {
    let s = *slot.get(id)?;
    data.get(slot_index(id, s))
}

/// Next hop `id` (an unused id reads as not usable: `valid` 0).
#[inline(always)]
pub(crate) fn nexthop(id: u16) -> Option<&'static NextHop> {
    live(&NEXTHOPS, &NEXTHOP_SLOT, u32::from(id))
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
