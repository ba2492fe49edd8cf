//! Drop snapshots: a program that drops a frame hands it, by tail call, to
//! `xdp_drop_snapshot`, which posts the first `SNAP_LEN` bytes, the port,
//! the reason and the time to a ring buffer (rate-limited per CPU so a
//! storm of drops cannot flood it) and drops the frame.

use aya_ebpf::{
    bindings::xdp_action,
    helpers::{bpf_ktime_get_ns, generated::bpf_xdp_load_bytes},
    macros::map,
    maps::{PerCpuArray, RingBuf},
    programs::XdpContext,
};
use dataplane_common::events::{
    DropCtx, DropEvent, RateLimit, EVENTS_BURST, EVENTS_PER_SEC, SNAP_LEN,
};

/// Drop snapshots for `dataplane events`.
#[map]
static DROP_EVENTS: RingBuf = RingBuf::with_byte_size(256 * 1024, 0);
/// Hand-over from the dropping program (per CPU).
#[map]
static DROP_CTX: PerCpuArray<DropCtx> = PerCpuArray::with_max_entries(1, 0);
/// Token bucket per CPU.
#[map]
pub(crate) static DROP_RATE: PerCpuArray<RateLimit> = PerCpuArray::with_max_entries(1, 0);

/// Drops the frame, with a snapshot when the snapshot stage is installed.
#[inline(always)]
pub fn drop_frame(ctx: &XdpContext, port_id: u16, reason: u8) -> u32 {
    if let Some(s) = DROP_CTX.get_ptr_mut(0) {
        // SAFETY: per-CPU slot, read by the tail-called program on this CPU.
        unsafe {
            *s = DropCtx {
                port_id,
                reason,
                _pad: 0,
            }
        };
        crate::stages::tail_call_snapshot(ctx);
    }
    xdp_action::XDP_DROP
}

/// The snapshot stage.
#[inline(always)]
pub fn snapshot(ctx: &XdpContext) -> u32 {
    let Some(dc) = DROP_CTX.get(0).copied() else {
        return xdp_action::XDP_DROP;
    };
    // SAFETY: helper without preconditions.
    let now = unsafe { bpf_ktime_get_ns() };
    let Some(rl) = DROP_RATE.get_ptr_mut(0) else {
        return xdp_action::XDP_DROP;
    };
    // SAFETY: per-CPU slot.
    if !unsafe { (*rl).allow(now, EVENTS_PER_SEC, EVENTS_BURST) } {
        return xdp_action::XDP_DROP;
    }
    // through a volatile local: LLVM would otherwise narrow the pointers
    // before subtracting and spill a 32-bit half of one, which the
    // verifier refuses
    let diff = ctx.data_end() - ctx.data();
    // SAFETY: reading a local.
    let len = unsafe { core::ptr::read_volatile(&diff) } as u32;
    let cap = if len as usize > SNAP_LEN {
        SNAP_LEN as u32
    } else {
        len
    };
    if let Some(mut e) = DROP_EVENTS.reserve::<DropEvent>(0) {
        let ev = e.as_mut_ptr();
        // SAFETY: the entry is ours until submitted; fields written in place.
        unsafe {
            (*ev).time_ns = now;
            (*ev).ifindex = ctx.ingress_ifindex() as u32;
            (*ev).port_id = dc.port_id;
            (*ev).reason = dc.reason;
            (*ev)._pad = 0;
            (*ev).frame_len = len;
            (*ev).data = [0; SNAP_LEN];
            let got = if cap > 0 {
                // 1..=SNAP_LEN, in a form the verifier can bound
                let n = ((cap - 1) & (SNAP_LEN as u32 - 1)) + 1;
                bpf_xdp_load_bytes(
                    ctx.ctx,
                    0,
                    (*ev).data.as_mut_ptr() as *mut core::ffi::c_void,
                    n,
                )
            } else {
                -1
            };
            (*ev).cap_len = if got == 0 { cap } else { 0 };
        }
        e.submit(0);
    }
    xdp_action::XDP_DROP
}
