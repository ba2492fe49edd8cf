//! Frames redirected through the devmap that the kernel then failed to
//! transmit, summed per destination ifindex: `xdp:xdp_redirect_err` (the
//! redirect the program asked for fails after it returned, e.g. -EOPNOTSUPP
//! for a veth whose peer has neither an XDP program nor GRO) and
//! `xdp_devmap_xmit` (drops when a devmap bulk queue is flushed:
//! `ndo_xdp_xmit` failed or took only part of it). Counted nowhere else.
//!
//! Both count only this instance's frames: a failed redirect by the id of
//! the devmap it went through, a flush drop by the destination device's
//! network namespace (the flush carries no map id, and an ifindex alone is
//! only unique inside one namespace).

use aya_ebpf::{
    helpers::bpf_probe_read_kernel,
    macros::{btf_tracepoint, map, tracepoint},
    maps::{Array, PerCpuHashMap},
    programs::{BtfTracePointContext, TracePointContext},
};
use dataplane_common::maps::{
    XmitDevFilter, XMIT_REDIRECT_ERR_MAP_ID_OFF, XMIT_REDIRECT_ERR_TO_IFINDEX_OFF,
};

/// Transmit drops after a redirect, by destination ifindex (per CPU).
#[map]
static XMIT_ERRORS: PerCpuHashMap<u32, u64> = PerCpuHashMap::with_max_entries(1024, 0);

/// The id of this instance's redirect devmap (TX_PORTS), written by the
/// controller: failed redirects through other maps (other instances, other
/// namespaces) are not ours.
#[map]
static XMIT_MAP_ID: Array<u32> = Array::with_max_entries(1, 0);

/// The namespace whose devices' flush drops are ours, and where to read a
/// device's ifindex and namespace (written by the controller from BTF).
#[map]
static XMIT_DEV_FILTER: Array<XmitDevFilter> = Array::with_max_entries(1, 0);

/// `xdp_devmap_xmit(from_dev, to_dev, sent, drops, err)`, BTF-typed: the
/// devices are pointers, so the destination's namespace can be checked.
#[btf_tracepoint(function = "xdp_devmap_xmit")]
pub fn tp_xdp_devmap_xmit(ctx: BtfTracePointContext) -> u32 {
    let to_dev: *const u8 = ctx.arg(1);
    let drops: i32 = ctx.arg(3);
    if drops <= 0 {
        return 0;
    }
    let Some(f) = XMIT_DEV_FILTER.get(0) else {
        return 0;
    };
    // SAFETY: to_dev is the kernel's net_device; every read goes through
    // bpf_probe_read_kernel, which fails cleanly on a bad address.
    match unsafe { ifindex_in_netns(to_dev, f) } {
        Some(to) => add(to, drops),
        None => 0,
    }
}

/// The device's ifindex when it is in the filter's namespace.
#[inline(always)]
unsafe fn ifindex_in_netns(dev: *const u8, f: &XmitDevFilter) -> Option<i32> {
    if f.netns_inum == 0 {
        return None;
    }
    // offsets are bounded so the pointer arithmetic stays small
    let at = |off: u32| (off & 0xffff) as usize;
    let net: *const u8 = unsafe {
        bpf_probe_read_kernel(dev.wrapping_add(at(f.nd_net_off)) as *const *const u8).ok()?
    };
    let inum: u32 =
        unsafe { bpf_probe_read_kernel(net.wrapping_add(at(f.ns_inum_off)) as *const u32).ok()? };
    if inum != f.netns_inum {
        return None;
    }
    unsafe { bpf_probe_read_kernel(dev.wrapping_add(at(f.ifindex_off)) as *const i32).ok() }
}

#[tracepoint]
pub fn tp_xdp_redirect_err(ctx: TracePointContext) -> u32 {
    // SAFETY: offsets of the tracepoint's record, checked by the controller
    // against the tracepoint's format before it attaches this program.
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
