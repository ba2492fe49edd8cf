//! PFC emission by the data plane itself.
//!
//! Packet path: the packet whose arrival made the buffer model decide XOFF,
//! a refresh or XON for its ingress port is redirected with
//! `BPF_F_BROADCAST` to `PFC_BCAST` (a devmap of every model port, each
//! entry with `xdp_devmap_pfc` as its egress program), carrying a
//! [`PfcMeta`] as XDP metadata. `TX_PORTS` entries carry the same program
//! (frames without metadata pass): the kernel runs the program of the first
//! frame a device's bulk queue took since its last flush on every frame of
//! the flush, so two maps with different programs on one device would drop
//! plain frames queued behind a broadcast copy, or send copies unjudged.
//! Each copy's program asks `pfc_copy_fate`: the copy for the packet's
//! egress port goes out as the packet, the copy
//! for its ingress port is rewritten into the 802.1Qbb frame, the rest are
//! dropped. The frame leaves in the same NAPI poll as the decision.
//!
//! Timer path (no packet arrives: XON when a quiet queue drains, refreshes
//! while it stays paused): the tick, which the controller's real-time timer
//! thread runs (BPF_PROG_RUN), queues its decisions in `PFC_QUEUE` and
//! returns `XDP_TX` when it queued any; that thread then pops them and
//! sends their frames (AF_PACKET) before it sleeps. (A live-frames run of an
//! XDP sender per tick was tried: on a loaded 2-CPU machine its set-up held
//! the timer thread, and the CPU's softirq work behind it, for 4-12 ms.)
//!
//! `PFC_PATH` (written by the controller after this path passed its
//! self-test, `dataplane-user/src/lossless/selftest.rs`) selects this path; otherwise, and for a
//! decision this path cannot carry (a hairpin: the packet leaves by its own
//! ingress port; a frame that cannot be resized), the decision goes to the
//! controller's AF_PACKET sender through the `PFC_EVENTS` ring.

use aya_ebpf::{
    bindings::{xdp_action, BPF_F_BROADCAST},
    helpers::{
        bpf_ktime_get_ns,
        generated::{bpf_xdp_adjust_meta, bpf_xdp_adjust_tail},
    },
    macros::map,
    maps::{Array, DevMap, PerCpuArray, PerCpuHashMap, Queue, RingBuf},
    programs::XdpContext,
};
use dataplane_common::{
    buffer::{pfc_copy_fate, CopyFate, PfcEvent, PfcMeta, PFC_NO_DATA, PFC_PATH_DATAPLANE},
    lossless::MODEL_PORTS,
    maps::MAX_PORTS,
    wire::macctl::{pfc_decision_frame, MIN_FRAME},
};

use crate::counters::lossless as counters;
use crate::stages::EgressCtx;

/// PFC frames for the controller's fallback sender.
#[map]
static PFC_EVENTS: RingBuf = RingBuf::with_byte_size(64 * 1024, 0);
/// Entry 0: `PFC_PATH_DATAPLANE` or `PFC_PATH_USERSPACE` (the default).
#[map]
static PFC_PATH: Array<u32> = Array::with_max_entries(1, 0);
/// Every model port (index = port id) with `xdp_devmap_pfc` as its egress
/// program: the packet path's broadcast.
#[map]
static PFC_BCAST: DevMap = DevMap::with_max_entries(MODEL_PORTS as u32, 0);
/// The timer's decisions, for the controller's timer thread.
#[map]
static PFC_QUEUE: Queue<PfcEvent> = Queue::with_max_entries(256, 0);
/// Entry 0: how many decisions the last tick queued (only the tick, run by
/// one controller thread, writes it).
#[map]
static PFC_QUEUED: Array<u32> = Array::with_max_entries(1, 0);
/// The packet path's decision between the model and `broadcast` (per CPU:
/// both run in one program on one CPU).
#[map]
static PFC_DECISION: PerCpuArray<PfcEvent> = PerCpuArray::with_max_entries(1, 0);
/// Broadcast copies `xdp_devmap_pfc` dropped, by egress ifindex (per CPU):
/// the kernel's `xdp:xdp_devmap_xmit` tracepoint counts them among a
/// flush's drops, so the transmit-error count subtracts them.
#[map]
static PFC_COPY_DROPS: PerCpuHashMap<u32, u64> = PerCpuHashMap::with_max_entries(1024, 0);
/// Each port's own MAC (index = port id), the source of its PFC frames.
#[map]
static PORT_MACS: Array<[u8; 8]> = Array::with_max_entries(MAX_PORTS, 0);

const META_LEN: i32 = core::mem::size_of::<PfcMeta>() as i32;

/// Whether the data plane sends PFC frames itself.
#[inline(always)]
pub fn dataplane() -> bool {
    PFC_PATH.get(0).copied() == Some(PFC_PATH_DATAPLANE)
}

/// Hands a decision to the controller's sender (the ring buffer).
#[inline(always)]
pub fn to_controller(ev: &PfcEvent) {
    if PFC_EVENTS.output::<PfcEvent>(ev, 0).is_err() {
        if let Some(c) = counters(u16::from(ev.port)) {
            c.event_lost += 1;
        }
    }
}

/// A decision of the timer: queued for the timer thread on the data
/// plane's path, else to the controller's emitter (ring buffer).
#[inline(always)]
pub fn from_timer(ev: &PfcEvent) {
    if !dataplane() {
        to_controller(ev);
        return;
    }
    if PFC_QUEUE.push(ev, 0).is_err() {
        if let Some(c) = counters(u16::from(ev.port)) {
            c.pfc_send_fail += 1;
        }
        to_controller(ev);
        return;
    }
    if let Some(n) = PFC_QUEUED.get_ptr_mut(0) {
        // SAFETY: a map value only the tick writes (one thread runs it).
        unsafe { *n += 1 };
    }
}

/// Starts a tick's count of queued decisions.
#[inline(always)]
pub fn timer_start() {
    if let Some(n) = PFC_QUEUED.get_ptr_mut(0) {
        // SAFETY: as in `from_timer`.
        unsafe { *n = 0 };
    }
}

/// The tick's return value: `XDP_TX` when it queued frames for
/// the timer thread, else `XDP_DROP`.
#[inline(always)]
pub fn timer_verdict() -> u32 {
    match PFC_QUEUED.get(0) {
        Some(&n) if n > 0 => xdp_action::XDP_TX,
        _ => xdp_action::XDP_DROP,
    }
}

/// Keeps the packet path's decision for `broadcast`; false if it cannot.
#[inline(always)]
pub fn keep_decision(ev: &PfcEvent) -> bool {
    match PFC_DECISION.get_ptr_mut(0) {
        Some(d) => {
            // SAFETY: per-CPU slot, only this program on this CPU touches it.
            unsafe { *d = *ev };
            true
        }
        None => false,
    }
}

/// The decision `keep_decision` kept on this CPU.
#[inline(always)]
pub fn decision() -> Option<PfcEvent> {
    PFC_DECISION.get(0).copied()
}

/// Sends a packet-path decision: broadcast with the decision as metadata
/// (`Ok(action)`), or `Err(())` after handing it to the controller when this
/// path cannot carry it. `drop`: the packet itself does not leave.
#[inline(always)]
pub fn broadcast(ctx: &XdpContext, ev: &PfcEvent, ec: &EgressCtx, drop: bool) -> Result<u32, ()> {
    let hairpin = u16::from(ev.port) == ec.out_port;
    if !dataplane() || (hairpin && !drop) {
        to_controller(ev);
        return Err(());
    }
    let data_port = if drop { PFC_NO_DATA } else { ec.out_port };
    // on failure the metadata, if added, stays behind the packet; it is
    // not sent
    broadcast_meta(ctx, &PfcMeta::of(ev, data_port)).ok_or_else(|| fail(ev))
}

/// Sends a far-side notification (`far::due`) out of the packet's ingress
/// port with the packet: the broadcast of `broadcast`, its metadata
/// saying so. `Err(())` (counted) when this path cannot: the controller's
/// PFC path is in use (no broadcast), a hairpin, or the broadcast fails.
#[inline(always)]
pub fn broadcast_note(ctx: &XdpContext, ec: &EgressCtx, drain_ns: u64) -> Result<u32, ()> {
    if !dataplane() || ec.in_port == ec.out_port {
        crate::far::send_failed();
        return Err(());
    }
    broadcast_meta(ctx, &crate::far::meta(ec, drain_ns)).ok_or_else(crate::far::send_failed)
}

/// Puts `m` in the packet's XDP metadata and redirects it with
/// `BPF_F_BROADCAST` to `PFC_BCAST`, whose `xdp_devmap_pfc` gives each
/// copy its fate; `None` when the metadata does not fit or the redirect
/// fails.
#[inline(always)]
fn broadcast_meta(ctx: &XdpContext, m: &PfcMeta) -> Option<u32> {
    // SAFETY: the helper checks the room it grows into.
    if unsafe { bpf_xdp_adjust_meta(ctx.ctx, -META_LEN) } != 0 {
        return None;
    }
    let (meta, data) = (ctx.metadata(), ctx.data());
    if meta + META_LEN as usize > data {
        return None;
    }
    // SAFETY: [meta, meta + META_LEN) lies before data, checked just above.
    unsafe { core::ptr::write_unaligned(meta as *mut PfcMeta, *m) };
    PFC_BCAST.redirect(0, u64::from(BPF_F_BROADCAST)).ok()
}

/// Counts a decision the data plane could not send and hands it over.
#[inline(always)]
fn fail(ev: &PfcEvent) {
    if let Some(c) = counters(u16::from(ev.port)) {
        c.pfc_send_fail += 1;
    }
    let mut ev = *ev;
    ev.flags = 0;
    ev.sent_ns = 0;
    to_controller(&ev);
}

/// Counts a frame the data plane sent and tells the controller (its event
/// log and latency figures; a full ring loses only the record).
#[inline(always)]
fn sent(ev: &PfcEvent) {
    if let Some(c) = counters(u16::from(ev.port)) {
        c.pfc_sent_dp += 1;
    }
    to_controller(ev);
}

#[inline(always)]
fn now() -> u64 {
    // SAFETY: helper without preconditions.
    unsafe { bpf_ktime_get_ns() }
}

/// Rewrites the whole frame into the 60-byte PFC frame of a decision from
/// port `port` (id); false when the frame cannot be resized.
#[inline(always)]
fn write_pfc(ctx: &XdpContext, port: u16, prio: u8, quanta: u16) -> bool {
    let Some(mac) = PORT_MACS.get(u32::from(port)) else {
        return false;
    };
    let src = [mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]];
    let len = (ctx.data_end() - ctx.data()) as i32;
    if len != MIN_FRAME as i32 {
        // SAFETY: the helper checks the bounds of the new tail.
        if unsafe { bpf_xdp_adjust_tail(ctx.ctx, MIN_FRAME as i32 - len) } != 0 {
            return false;
        }
    }
    let (start, end) = (ctx.data(), ctx.data_end());
    if start + MIN_FRAME > end {
        return false;
    }
    let f = pfc_decision_frame(src, prio, quanta);
    // SAFETY: [start, start + 60) lies inside the frame, checked above.
    unsafe { core::ptr::write_unaligned(start as *mut [u8; MIN_FRAME], f) };
    true
}

/// `xdp_devmap_pfc`: the fate of one broadcast copy on its egress port;
/// every copy it drops is counted in `PFC_COPY_DROPS`.
#[inline(always)]
pub fn devmap_copy(ctx: &XdpContext) -> u32 {
    let action = copy_fate(ctx);
    if action == xdp_action::XDP_DROP {
        // SAFETY: the context of a devmap program; egress_ifindex is readable.
        let egress = unsafe { (*ctx.ctx).egress_ifindex };
        match PFC_COPY_DROPS.get_ptr_mut(&egress) {
            // SAFETY: this CPU's value.
            Some(v) => unsafe { *v += 1 },
            None => {
                let _ = PFC_COPY_DROPS.insert(&egress, &1, 0);
            }
        }
    }
    action
}

#[inline(always)]
fn copy_fate(ctx: &XdpContext) -> u32 {
    let (meta, data) = (ctx.metadata(), ctx.data());
    // a plain redirect through TX_PORTS (which carries this program too:
    // a device's bulk queue runs one program on all its frames) has no
    // metadata and leaves as it is
    if meta == data {
        return xdp_action::XDP_PASS;
    }
    if meta + META_LEN as usize > data {
        return xdp_action::XDP_DROP;
    }
    // SAFETY: [meta, meta + META_LEN) lies before data, checked just above.
    let m = unsafe { core::ptr::read_unaligned(meta as *const PfcMeta) };
    // SAFETY: the context of a devmap program; egress_ifindex is readable.
    let egress = unsafe { (*ctx.ctx).egress_ifindex };
    let Some(cfg) = crate::port_config(egress) else {
        return xdp_action::XDP_DROP;
    };
    match pfc_copy_fate(&m, cfg.port_id) {
        CopyFate::Drop => xdp_action::XDP_DROP,
        CopyFate::Data => {
            // the metadata is ours: not for the next hop's programs
            // SAFETY: shrinking the metadata we added.
            unsafe { bpf_xdp_adjust_meta(ctx.ctx, META_LEN) };
            xdp_action::XDP_PASS
        }
        CopyFate::FarNote => {
            // SAFETY: as above.
            unsafe { bpf_xdp_adjust_meta(ctx.ctx, META_LEN) };
            let Some(mac) = PORT_MACS.get(u32::from(m.pfc_port)) else {
                crate::far::send_failed();
                return xdp_action::XDP_DROP;
            };
            let src = [mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]];
            if crate::far::write_note(ctx, &m, src) {
                xdp_action::XDP_PASS
            } else {
                xdp_action::XDP_DROP
            }
        }
        CopyFate::Pfc => {
            // SAFETY: as above.
            unsafe { bpf_xdp_adjust_meta(ctx.ctx, META_LEN) };
            if write_pfc(ctx, m.pfc_port, m.prio, m.quanta) {
                sent(&m.sent_event(now()));
                xdp_action::XDP_PASS
            } else {
                fail(&m.sent_event(0));
                xdp_action::XDP_DROP
            }
        }
    }
}
