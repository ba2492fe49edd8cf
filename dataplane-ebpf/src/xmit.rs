//! Frames redirected through the devmap that the kernel then failed to
//! transmit, summed per destination ifindex: `xdp:xdp_redirect_err` (the
//! redirect the program asked for fails after it returned, e.g. -EOPNOTSUPP
//! for a veth whose peer has neither an XDP program nor GRO) and
//! `xdp:xdp_devmap_xmit` (drops when a devmap bulk queue is flushed:
//! `ndo_xdp_xmit` failed or took only part of it). Counted nowhere else.

use aya_ebpf::{
    macros::map,
    macros::tracepoint,
    maps::{Array, PerCpuHashMap},
    programs::TracePointContext,
};
use dataplane_common::maps::{
    XMIT_DROPS_OFF, XMIT_REDIRECT_ERR_MAP_ID_OFF, XMIT_REDIRECT_ERR_TO_IFINDEX_OFF,
    XMIT_TO_IFINDEX_OFF,
};

/// Transmit drops after a redirect, by destination ifindex (per CPU).
#[map]
static XMIT_ERRORS: PerCpuHashMap<u32, u64> = PerCpuHashMap::with_max_entries(1024, 0);

/// The id of this instance's redirect devmap (TX_PORTS), written by the
/// controller: failed redirects through other maps (other instances, other
/// namespaces) are not ours.
#[map]
static XMIT_MAP_ID: Array<u32> = Array::with_max_entries(1, 0);

#[tracepoint]
pub fn tp_xdp_devmap_xmit(ctx: TracePointContext) -> u32 {
    // SAFETY: offsets of the tracepoint's record, checked by the controller
    // against the tracepoint's format before it attaches this program.
    let (to, drops) = unsafe {
        (
            ctx.read_at::<i32>(XMIT_TO_IFINDEX_OFF).unwrap_or(0),
            ctx.read_at::<i32>(XMIT_DROPS_OFF).unwrap_or(0),
        )
    };
    add(to, drops)
}

#[tracepoint]
pub fn tp_xdp_redirect_err(ctx: TracePointContext) -> u32 {
    // SAFETY: as above.
    let (to, map_id) = unsafe {
        (
            ctx.read_at::<i32>(XMIT_REDIRECT_ERR_TO_IFINDEX_OFF)
                .unwrap_or(0),
            ctx.read_at::<u32>(XMIT_REDIRECT_ERR_MAP_ID_OFF)
                .unwrap_or(0),
        )
    };
    match XMIT_MAP_ID.get(0) {
        Some(&ours) if ours != 0 && ours == map_id => add(to, 1),
        _ => 0,
    }
}

#[inline(always)]
fn add(to: i32, drops: i32) -> u32 {
    if drops <= 0 {
        return 0;
    }
    let key = to as u32;
    match XMIT_ERRORS.get_ptr_mut(&key) {
        // SAFETY: this CPU's slot.
        Some(v) => unsafe { *v += drops as u64 },
        None => {
            let _ = XMIT_ERRORS.insert(&key, &(drops as u64), 0);
        }
    }
    0
}
