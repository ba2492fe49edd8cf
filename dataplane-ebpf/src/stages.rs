//! The tail-call table that joins the pipeline's programs (egress, PFC
//! reception, drop snapshot) and the per-CPU slot the forwarding stage
//! hands its routed frame over in.

use aya_ebpf::{
    macros::map,
    maps::{PerCpuArray, ProgramArray},
    programs::XdpContext,
};

/// What the ingress half hands to the egress half.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct EgressCtx {
    pub in_port: u16,
    pub out_port: u16,
    pub len: u32,
    pub l3_off: u16,
    /// `L3` as u8.
    pub l3: u8,
    pub ecn: u8,
    pub tc: u8,
    pub lossless: u8,
    pub cnp: u8,
    /// 0, or `trim::TRIMMED | queue` for a packet the trimming stage cut
    /// (its queue before trimming).
    pub trimmed: u8,
    /// The route's prefix length plus one (`RouteEntry::plen`; 0: not
    /// known): what a far-side notification names.
    pub plen: u8,
    pub _pad: u8,
    /// The packet's clock reading (`bpf_ktime_get_ns`), taken once.
    pub now: u64,
}

/// Per-CPU hand-over slot between `xdp_forward` and `xdp_forward_egress`.
#[map]
pub(crate) static EGRESS_CTX: PerCpuArray<EgressCtx> = PerCpuArray::with_max_entries(1, 0);

/// Entry 0: `xdp_forward_egress`; entry 1: `xdp_forward_pfc_rx`; entry 2:
/// `xdp_drop_snapshot`; entry 3: `xdp_forward_trim`; installed by the
/// controller.
#[map]
static EGRESS_STAGE: ProgramArray = ProgramArray::with_max_entries(4, 0);

/// Entry 0: `xdp_forward_far_rx`, installed by the controller. A table of
/// its own: a pinned `EGRESS_STAGE` of four entries (an older build's)
/// stays adoptable by `upgrade`.
#[map]
static FAR_STAGE: ProgramArray = ProgramArray::with_max_entries(1, 0);

/// Hands a packet the model could not admit to a trimming queue to
/// `xdp_forward_trim` (`EGRESS_CTX` still holds its context); returns if
/// that stage is not installed.
#[inline(always)]
pub fn tail_call_trim(ctx: &XdpContext) {
    // SAFETY: tail call with our own context; returns only on failure.
    unsafe { EGRESS_STAGE.tail_call(ctx, 3) };
}

/// Hands a trimmed frame back to `xdp_forward_egress` with its new
/// context; returns if that fails.
#[inline(always)]
pub fn reenter_egress(ctx: &XdpContext, ec: &EgressCtx) {
    enter_egress(ctx, ec)
}

/// Hands a frame to be dropped to `xdp_drop_snapshot`; returns if that
/// stage is not installed.
#[inline(always)]
pub fn tail_call_snapshot(ctx: &XdpContext) {
    // SAFETY: tail call with our own context; returns only on failure.
    unsafe { EGRESS_STAGE.tail_call(ctx, 2) };
}

/// Hands a far-side notification to `xdp_forward_far_rx`; returns if
/// that stage is not installed.
#[inline(always)]
pub fn tail_call_far_rx(ctx: &XdpContext) {
    // SAFETY: tail call with our own context; returns only on failure.
    unsafe { FAR_STAGE.tail_call(ctx, 0) };
}

/// Hands a MAC control frame to `xdp_forward_pfc_rx`; returns if that
/// stage is not installed.
#[inline(always)]
pub fn tail_call_pfc_rx(ctx: &XdpContext) {
    // SAFETY: tail call with our own context; returns only on failure.
    unsafe { EGRESS_STAGE.tail_call(ctx, 1) };
}

/// Hands a routed frame to `xdp_forward_egress`; returns if that stage is
/// not installed. The egress stage (buffer model, redirect) is its own
/// program so the verifier checks each half on its own: together their
/// paths multiply past its limit.
#[inline(always)]
pub fn enter_egress(ctx: &XdpContext, ec: &EgressCtx) {
    if let Some(slot) = EGRESS_CTX.get_ptr_mut(0) {
        // SAFETY: per-CPU slot, read by the tail-called program on this CPU.
        unsafe { *slot = *ec };
        // SAFETY: tail call with our own context; returns only on failure.
        unsafe { EGRESS_STAGE.tail_call(ctx, 0) };
    }
}
