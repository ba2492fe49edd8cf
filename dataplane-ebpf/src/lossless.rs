//! The lossless stage of `xdp_forward`: the buffer model (egress queues
//! drained at line rate, ingress PG accounting, ECN/WRED, PFC generation
//! decisions) and PFC reception; plus `xdp_lossless_tick`, the timer the
//! controller runs so quiet queues drain and XON / refreshes happen.
//!
//! Every step is a function of `dataplane_common::buffer`; this file holds
//! the maps, the lock and the packet rewrite only. The model's state is
//! shared by all CPUs: one lock (BPF compare-and-exchange) serialises the
//! steps; a CPU that cannot take it within a bounded spin forwards the packet
//! unaccounted and counts `model_busy`.

use core::intrinsics::{atomic_cxchg, atomic_xchg, AtomicOrdering};

use aya_ebpf::{
    helpers::{bpf_get_prandom_u32, bpf_ktime_get_ns},
    macros::map,
    maps::{Array, PerCpuArray, RingBuf},
};
use dataplane_common::{
    buffer::{
        on_arrival, on_pfc_rx, pfc_event, storm_override, tick_pg, tick_queue, Arrival, BufVerdict,
        LosslessCounters, PauseStat, PortBuffer, TcRow, WdStat, NUM_TC, STORM_DROP, STORM_NONE,
    },
    lossless::{ipv4_set_ce, ipv6_set_ce, DropReason, EgressQueue, SharedPool, MODEL_PORTS},
    maps::MAX_PORTS,
    parse::L3,
    reason::Reason,
    wire::{ipv4, macctl::MacCtl, Packet},
};

use crate::packet::XdpPacket;

#[map]
static MODEL_LOCK: Array<u64> = Array::with_max_entries(1, 0);
/// Egress queue per (port, TC): index port * 8 + tc.
#[map]
static QUEUES: Array<EgressQueue> = Array::with_max_entries((MODEL_PORTS * NUM_TC) as u32, 0);
/// Ingress PG state per TC.
#[map]
static TC_ROWS: Array<TcRow> = Array::with_max_entries(NUM_TC as u32, 0);
/// Buffer configuration per port (model slot).
#[map]
static PORT_BUF: Array<PortBuffer> = Array::with_max_entries(MODEL_PORTS as u32, 0);
/// The shared pool (entry 0).
#[map]
static POOL: Array<SharedPool> = Array::with_max_entries(1, 0);
/// Paused time per (port, priority): index port * 8 + prio.
#[map]
static PAUSE_STATS: Array<PauseStat> = Array::with_max_entries((MODEL_PORTS * NUM_TC) as u32, 0);
/// PFC watchdog counters per (port, priority); written by the controller
/// only (kept here so they are pinned with the rest).
#[map]
static WD_STATS: Array<WdStat> = Array::with_max_entries((MODEL_PORTS * NUM_TC) as u32, 0);
/// PFC frames for the controller to send.
#[map]
static PFC_EVENTS: RingBuf = RingBuf::with_byte_size(64 * 1024, 0);
/// Lossless counters per port (per CPU).
#[map]
static LOSSLESS_COUNTERS: PerCpuArray<LosslessCounters> =
    PerCpuArray::with_max_entries(MAX_PORTS, 0);

/// Lock attempts before giving up (a holder keeps it well under a
/// microsecond; two CPUs contend).
const SPIN: u32 = 1024;

#[inline(always)]
fn lock() -> Option<*mut u64> {
    let l = MODEL_LOCK.get_ptr_mut(0)?;
    let mut i = 0;
    while i < SPIN {
        // SAFETY: a u64 in a map value; BPF cmpxchg.
        let (_, ok) = unsafe {
            atomic_cxchg::<u64, { AtomicOrdering::SeqCst }, { AtomicOrdering::SeqCst }>(l, 0, 1)
        };
        if ok {
            return Some(l);
        }
        i += 1;
    }
    None
}

#[inline(always)]
fn unlock(l: *mut u64) {
    // SAFETY: we hold the lock; BPF xchg publishes the release.
    unsafe { atomic_xchg::<u64, { AtomicOrdering::SeqCst }>(l, 0) };
}

#[inline(always)]
pub(crate) fn counters(port: u16) -> Option<&'static mut LosslessCounters> {
    // SAFETY: per-CPU slot, only this program on this CPU touches it.
    LOSSLESS_COUNTERS
        .get_ptr_mut(u32::from(port))
        .map(|p| unsafe { &mut *p })
}

#[inline(always)]
fn emit(now: u64, port: u8, prio: u8, a: dataplane_common::lossless::PfcAction) {
    if let Some(ev) = pfc_event(now, port, prio, a) {
        if let Some(c) = counters(u16::from(port)) {
            c.count_pfc(prio as usize, a);
            if PFC_EVENTS
                .output::<dataplane_common::buffer::PfcEvent>(&ev, 0)
                .is_err()
            {
                c.event_lost += 1;
            }
        }
    }
}

/// The model's verdict for a routed packet.
pub enum Egress {
    Forward,
    /// Drop, with the event reason.
    Drop(u8),
}

/// Runs the buffer model for a packet from port `in_port` to `out_port`;
/// marks CE in the packet when the model says so.
#[inline(always)]
pub fn egress(pkt: &XdpPacket, ec: &crate::stages::EgressCtx) -> Egress {
    // frames are at most 16 KiB (bounded so the verifier's ranges stay small)
    let (in_port, out_port, len) = (ec.in_port, ec.out_port, u64::from(ec.len & 0x3fff));
    let (ip, op) = (in_port as usize, out_port as usize);
    if ip >= MODEL_PORTS || op >= MODEL_PORTS {
        return Egress::Forward;
    }
    let (Some(ib), Some(ob)) = (PORT_BUF.get(ip as u32), PORT_BUF.get(op as u32)) else {
        return Egress::Forward;
    };
    if ib.enabled == 0 || ob.enabled == 0 {
        return Egress::Forward;
    }
    let tc = (ec.tc as usize) & (NUM_TC - 1);
    let (Some(q), Some(row), Some(pool)) = (
        QUEUES.get_ptr_mut((op * NUM_TC + tc) as u32),
        TC_ROWS.get_ptr_mut(tc as u32),
        POOL.get_ptr_mut(0),
    ) else {
        return Egress::Forward;
    };
    if ob.storm[tc] != STORM_NONE {
        // pfcwd storm: the queue's pause is over, and for drop its contents
        // are flushed; its packets are dropped (drop) or sent unmodelled
        let drop = ob.storm[tc] == STORM_DROP;
        let now = ec.now;
        if let Some(l) = lock() {
            // SAFETY: lock held; map values.
            unsafe { storm_override(now, &mut *q, &mut *row, &mut *pool, drop) };
            unlock(l);
        }
        if drop {
            if let Some(c) = counters(out_port) {
                c.wd_drop[tc] += 1;
            }
            return Egress::Drop(Reason::PfcWatchdog.code());
        }
        return Egress::Forward;
    }
    // The slot is re-read through a volatile load: the range check above
    // would otherwise let LLVM drop the `& (MODEL_PORTS - 1)` masks inside
    // `on_arrival`, and the verifier, which lost the check's bound across a
    // spill, would refuse the index.
    // SAFETY: reading a local.
    let slot = unsafe { core::ptr::read_volatile(&in_port) } as u8;
    let a = Arrival {
        ingress: slot,
        tc: tc as u8,
        lossless: ec.lossless != 0,
        control: ec.cnp != 0,
        ecn: ec.ecn,
        len: len as u32,
    };
    let now = ec.now;
    // SAFETY: helper without preconditions.
    let rand = unsafe { bpf_get_prandom_u32() };
    let Some(l) = lock() else {
        if let Some(c) = counters(out_port) {
            c.model_busy += 1;
        }
        return Egress::Forward;
    };
    // SAFETY: the model lock is held; the pointers are map values.
    let d = unsafe { on_arrival(now, &mut *q, ob, &mut *row, ib, &mut *pool, &a, rand) };
    unlock(l);
    emit(now, ip as u8, tc as u8, d.pfc);
    let Some(c) = counters(out_port) else {
        return Egress::Forward;
    };
    match d.verdict {
        BufVerdict::Forward => {}
        BufVerdict::WredDrop => {
            c.wred_drop[tc] += 1;
            return Egress::Drop(Reason::Wred.code());
        }
        BufVerdict::NoBuffer(DropReason::SharedFull) => {
            c.drop_shared_full[tc] += 1;
            return Egress::Drop(Reason::SharedBufferFull.code());
        }
        BufVerdict::NoBuffer(DropReason::HeadroomExhausted) => {
            c.drop_headroom[tc] += 1;
            return Egress::Drop(Reason::HeadroomExhausted.code());
        }
    }
    // routed frames are untagged or carry one tag: the L3 offset is 14 or 18
    // (constants keep the verifier's view of the packet writes exact)
    let l3 = if ec.l3_off == 18 { 18 } else { 14 };
    if d.mark_ce && mark_ce(pkt, ec.l3, l3) {
        c.ecn_marked[tc] += 1;
    }
    Egress::Forward
}

/// Sets CE (IPv4: TOS and checksum; IPv6: traffic class). False when the
/// packet was not ECT.
#[inline(always)]
fn mark_ce(pkt: &XdpPacket, l3_kind: u8, l3: usize) -> bool {
    match l3_kind {
        k if k == L3::Ipv4 as u8 => {
            let (Some(h), Some(c)) = (pkt.read::<2>(l3), pkt.read::<2>(l3 + ipv4::CHECKSUM_OFF))
            else {
                return false;
            };
            match ipv4_set_ce(h[0], h[1], u16::from_be_bytes(c)) {
                Some((tos, check)) => {
                    pkt.write(l3 + ipv4::TOS_OFF, &[tos])
                        && pkt.write(l3 + ipv4::CHECKSUM_OFF, &check.to_be_bytes())
                }
                None => false,
            }
        }
        k if k == L3::Ipv6 as u8 => {
            let Some(b1) = pkt.u8_at(l3 + 1) else {
                return false;
            };
            match ipv6_set_ce(b1) {
                Some(b) => pkt.write(l3 + 1, &[b]),
                None => false,
            }
        }
        _ => false,
    }
}

/// Honours a received PFC / PAUSE frame on `port`: the paused queues stop
/// draining in the model for the time given (or resume on 0). One bpf_loop
/// iteration per priority (see `egress` on why a callback).
#[inline(always)]
pub fn pfc_rx(port: u16, m: &MacCtl) {
    let port = port as usize;
    if port >= MODEL_PORTS {
        return;
    }
    let mut c = PfcRxCtx {
        port: port as u32,
        m: *m,
        now: 0,
    };
    // SAFETY: helper without preconditions.
    c.now = unsafe { bpf_ktime_get_ns() };
    // SAFETY: callback and context follow bpf_loop's contract.
    unsafe {
        aya_ebpf::helpers::generated::bpf_loop(
            NUM_TC as u32,
            pfc_rx_cb as *mut core::ffi::c_void,
            &mut c as *mut PfcRxCtx as *mut core::ffi::c_void,
            0,
        )
    };
}

struct PfcRxCtx {
    port: u32,
    m: MacCtl,
    now: u64,
}

extern "C" fn pfc_rx_cb(i: u64, ctx: *mut core::ffi::c_void) -> i64 {
    // SAFETY: ctx is the PfcRxCtx `pfc_rx` passed.
    let c = unsafe { &*(ctx as *const PfcRxCtx) };
    let prio = (i as usize) & (NUM_TC - 1);
    let port = (c.port as usize) & (MODEL_PORTS - 1);
    let Some(pb) = PORT_BUF.get(port as u32) else {
        return 1;
    };
    if pb.enabled == 0 {
        return 1;
    }
    // during a watchdog storm the queue's PFC is ignored
    if pb.storm[prio] != STORM_NONE {
        return 0;
    }
    let Some(quanta) = c.m.quanta_for_prio(prio) else {
        return 0;
    };
    let (Some(q), Some(row), Some(pool), Some(st)) = (
        QUEUES.get_ptr_mut((port * NUM_TC + prio) as u32),
        TC_ROWS.get_ptr_mut(prio as u32),
        POOL.get_ptr_mut(0),
        PAUSE_STATS.get_ptr_mut((port * NUM_TC + prio) as u32),
    ) else {
        return 0;
    };
    if let Some(l) = lock() {
        // SAFETY: lock held; map values.
        unsafe { on_pfc_rx(c.now, &mut *q, pb, &mut *row, &mut *pool, quanta, &mut *st) };
        unlock(l);
    } else if let Some(cn) = counters(port as u16) {
        cn.model_busy += 1;
    }
    0
}

/// bpf_loop callback of the tick: index i = port * 8 + tc.
extern "C" fn tick_one(i: u64, now: *mut core::ffi::c_void) -> i64 {
    // SAFETY: bpf_loop passes the u64 the tick gave it.
    let now = unsafe { *(now as *const u64) };
    let i = (i as usize) & (MODEL_PORTS * NUM_TC - 1);
    let (port, tc) = (i / NUM_TC, i % NUM_TC);
    let Some(pb) = PORT_BUF.get(port as u32) else {
        return 0;
    };
    if pb.enabled == 0 {
        return 0;
    }
    let (Some(q), Some(row), Some(pool)) = (
        QUEUES.get_ptr_mut(i as u32),
        TC_ROWS.get_ptr_mut(tc as u32),
        POOL.get_ptr_mut(0),
    ) else {
        return 0;
    };
    let Some(l) = lock() else {
        if let Some(c) = counters(port as u16) {
            c.tick_busy += 1;
        }
        return 0;
    };
    // SAFETY: lock held; map values.
    let action = unsafe {
        if pb.storm[tc] != STORM_NONE {
            storm_override(
                now,
                &mut *q,
                &mut *row,
                &mut *pool,
                pb.storm[tc] == STORM_DROP,
            );
        }
        tick_queue(now, &mut *q, pb, &mut *row, &mut *pool);
        tick_pg(now, &mut *row, port, pb, tc, &*pool)
    };
    unlock(l);
    emit(now, port as u8, tc as u8, action);
    0
}

/// One timer tick over every (port, TC).
#[inline(always)]
pub fn tick() {
    // SAFETY: helper without preconditions.
    let mut now = unsafe { bpf_ktime_get_ns() };
    // SAFETY: callback and context follow bpf_loop's contract.
    unsafe {
        aya_ebpf::helpers::generated::bpf_loop(
            (MODEL_PORTS * NUM_TC) as u32,
            tick_one as *mut core::ffi::c_void,
            &mut now as *mut u64 as *mut core::ffi::c_void,
            0,
        )
    };
}
