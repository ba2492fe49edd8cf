//! The forwarding tables the controller writes (routes, next hops, the
//! redirect devmap) and the per-port forwarding counters.

use aya_ebpf::{
    bindings::BPF_F_NO_PREALLOC,
    macros::map,
    maps::{DevMap, HashMap, LpmTrie, PerCpuArray},
};
use dataplane_common::{
    maps::MAX_PORTS,
    route::{
        FwdCounters, NextHop, RouteEntry, MAX_NEXTHOPS, ROUTES_V4_CAPACITY, ROUTES_V6_CAPACITY,
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

/// Next hops by index. A hash map so an update replaces an entry whole.
#[map]
pub(crate) static NEXTHOPS: HashMap<u32, NextHop> = HashMap::with_max_entries(MAX_NEXTHOPS, 0);

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
