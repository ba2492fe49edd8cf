//! Packet trimming (tail call from the egress stage): a packet the buffer
//! model could not admit to a trimming queue is cut by
//! `dataplane_common::trim::decide`, its headers rewritten by
//! `trim::rewrite`, and offered again to the egress stage for the trim
//! queue; what that stage decides is counted as TrimSent or TrimDrop.

use aya_ebpf::{
    bindings::xdp_action, helpers::generated::bpf_xdp_adjust_tail, macros::map, maps::Array,
    programs::XdpContext,
};
use dataplane_common::{
    buffer::BufVerdict,
    lossless::DropReason,
    maps::MAX_PORTS,
    parse::parse,
    reason::Reason,
    trim::{decide, rewrite, TrimDecision, TrimPort},
    wire::Packet,
};

use crate::packet::XdpPacket;
use crate::stages::{EgressCtx, EGRESS_CTX};
use crate::tables::fwd_counters;

/// Trimming settings by port id (zero: no queue trims), written by the
/// controller.
#[map]
static TRIM_PORTS: Array<TrimPort> = Array::with_max_entries(MAX_PORTS, 0);

/// `EgressCtx::trimmed` of a trimmed packet: this bit and the queue it was
/// trimmed in.
pub const TRIMMED: u8 = 0x80;

/// Whether queue `tc` of `port` trims (the egress stage then hands a
/// shared-buffer drop here instead of dropping it).
#[inline(always)]
pub fn queue_trims(port: u16, tc: u8) -> bool {
    TRIM_PORTS.get(u32::from(port)).is_some_and(|t| t.trims(tc))
}

/// Counts the fate of a trimmed packet (`ec.trimmed` set) on its egress
/// port, in the queue it was trimmed in.
#[inline(always)]
pub fn count(ec: &EgressCtx, sent: bool) {
    if ec.trimmed & TRIMMED != 0 {
        if let Some(c) = fwd_counters(ec.out_port) {
            c.trim.count(ec.trimmed & 7, sent);
        }
    }
}

/// A shared-buffer drop that is not trimmed after all (not UDP, a
/// fragment, a size below its headers...): counted and dropped as the
/// model said.
#[inline(always)]
fn not_trimmed(ctx: &XdpContext, ec: &EgressCtx) -> u32 {
    if let Some(c) = crate::counters::lossless(ec.out_port) {
        c.drop_shared_full[(ec.tc & 7) as usize] += 1;
    }
    crate::snapshot::drop_frame(ctx, ec.in_port, Reason::SharedBufferFull.code())
}

/// The trimming stage: cut, rewrite, back to the egress stage for the trim
/// queue.
#[inline(always)]
pub fn stage(ctx: &XdpContext) -> u32 {
    let Some(mut ec) = EGRESS_CTX.get(0).copied() else {
        return xdp_action::XDP_DROP;
    };
    let tc = ec.tc & 7;
    let Some(tp) = TRIM_PORTS.get(u32::from(ec.out_port)).copied() else {
        return not_trimmed(ctx, &ec);
    };
    let pkt = XdpPacket::new(ctx);
    let Ok(p) = parse(&pkt) else {
        return not_trimmed(ctx, &ec);
    };
    let full = BufVerdict::NoBuffer(DropReason::SharedFull);
    let cfg = tp.config();
    // a dynamic trim queue: the class the ingress port's DSCP map gives the
    // trim DSCP (the frame is still the ingress port's XDP frame)
    let ifindex = ctx.ingress_ifindex() as u32;
    let dscp_to_tc = crate::port_config(ifindex).map(|c| &c.dscp_to_tc);
    let TrimDecision::Trim { len, queue } = decide(
        full,
        tp.trims(tc),
        ec.lossless != 0,
        ec.cnp != 0,
        &p,
        &cfg,
        dscp_to_tc,
    ) else {
        return not_trimmed(ctx, &ec);
    };
    // from here on the packet is trimmed: it is sent or counted TrimDrop
    ec.trimmed = TRIMMED | tc;
    // the parsed length (a scalar): `pkt.len()` here is pointer arithmetic
    // the compiler may narrow to 32 bits, which the verifier refuses
    let cut = i32::from(p.frame_len) - i32::from(len);
    // SAFETY: helper on our own context; a negative delta shrinks the frame
    if cut > 0 && unsafe { bpf_xdp_adjust_tail(ctx.ctx as *mut _, -cut) } != 0 {
        count(&ec, false);
        return xdp_action::XDP_DROP;
    }
    let mut pkt = XdpPacket::new(ctx);
    if rewrite(&mut pkt, &p, cfg.dscp).is_err() {
        count(&ec, false);
        return xdp_action::XDP_DROP;
    }
    ec.len = pkt.len() as u32;
    ec.tc = queue & 7;
    // a loss notification: never ECN-marked or WRED-dropped (as a CNP)
    ec.cnp = 1;
    ec.lossless = 0;
    crate::stages::reenter_egress(ctx, &ec);
    count(&ec, false);
    xdp_action::XDP_DROP
}
