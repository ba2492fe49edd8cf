//! Kernel feature probes, loaded one by one by the controller
//! (`dataplane-user/src/probe`), never attached to a switch port: the
//! object's other programs do not call them and `load_object` skips them.
//!
//! `probe_xdp_redirect` (attached to a veth in a namespace of the probe's
//! own) puts a marker in the frame's XDP metadata and redirects it with
//! `BPF_F_BROADCAST` to every entry of `PROBE_DEVMAP`; each entry carries
//! `probe_devmap_meta` as its egress program, which counts the copy and
//! whether the marker arrived with it, then drops it. `probe_xdp_frags`
//! does nothing: a kernel that loads it accepts multi-buffer programs.

use core::intrinsics::{atomic_xadd, AtomicOrdering};

use aya_ebpf::{
    bindings::{xdp_action, BPF_F_BROADCAST},
    helpers::generated::bpf_xdp_adjust_meta,
    macros::{map, xdp},
    maps::{Array, DevMap},
    programs::XdpContext,
};

/// What the probe's metadata carries.
const MARKER: u32 = 0x5052_4f42;
const META_LEN: i32 = 4;

/// The broadcast's targets (the controller fills both with
/// `probe_devmap_meta`).
#[map]
static PROBE_DEVMAP: DevMap = DevMap::with_max_entries(2, 0);

/// 0: frames `probe_xdp_redirect` saw; 1: copies `probe_devmap_meta` saw;
/// 2: copies that carried the marker in their metadata; 3: frames whose
/// metadata could not be added; 4: redirects the helper refused.
#[map]
static PROBE_SEEN: Array<u32> = Array::with_max_entries(5, 0);

#[inline(always)]
fn bump(i: u32) {
    if let Some(p) = PROBE_SEEN.get_ptr_mut(i) {
        // SAFETY: a live array slot; the add is a BPF atomic.
        unsafe { atomic_xadd::<u32, u32, { AtomicOrdering::SeqCst }>(p, 1) };
    }
}

/// Marks the frame's metadata and broadcasts it through `PROBE_DEVMAP`.
#[xdp]
pub fn probe_xdp_redirect(ctx: XdpContext) -> u32 {
    // only the probe's own frame (EtherType 0x88b5): the kernel's own
    // frames on a fresh veth (IPv6 router solicitations, MLD) pass, or
    // they would be counted as copies of the probe frame
    let (data, end) = (ctx.data(), ctx.data_end());
    if data + 14 > end {
        return xdp_action::XDP_PASS;
    }
    // SAFETY: bytes 12 and 13 lie inside the frame, checked above.
    let ether_type = unsafe { core::ptr::read_unaligned((data + 12) as *const [u8; 2]) };
    if ether_type != [0x88, 0xb5] {
        return xdp_action::XDP_PASS;
    }
    bump(0);
    // SAFETY: the helper checks the room it is asked for.
    if unsafe { bpf_xdp_adjust_meta(ctx.ctx, -META_LEN) } == 0 {
        let (meta, data) = (ctx.metadata(), ctx.data());
        if meta + META_LEN as usize <= data {
            // SAFETY: [meta, meta + 4) lies before data, checked above.
            unsafe { core::ptr::write_unaligned(meta as *mut u32, MARKER) };
        } else {
            bump(3);
        }
    } else {
        bump(3);
    }
    match PROBE_DEVMAP.redirect(0, u64::from(BPF_F_BROADCAST)) {
        Ok(a) => a,
        Err(_) => {
            bump(4);
            xdp_action::XDP_DROP
        }
    }
}

/// Egress program of `PROBE_DEVMAP`'s entries: counts the copy and its
/// marker, drops it.
#[xdp(map = "devmap")]
pub fn probe_devmap_meta(ctx: XdpContext) -> u32 {
    bump(1);
    let (meta, data) = (ctx.metadata(), ctx.data());
    if meta + META_LEN as usize <= data {
        // SAFETY: [meta, meta + 4) lies before data, checked above.
        if unsafe { core::ptr::read_unaligned(meta as *const u32) } == MARKER {
            bump(2);
        }
    }
    xdp_action::XDP_DROP
}

/// A multi-buffer (frags) XDP program that passes every frame.
#[xdp(frags)]
pub fn probe_xdp_frags(_ctx: XdpContext) -> u32 {
    xdp_action::XDP_PASS
}
