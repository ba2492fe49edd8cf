//! The lossless stage of `xdp_forward`: the buffer model (egress queues
//! drained at line rate, ingress PG accounting, ECN/WRED, PFC generation
//! decisions) and PFC reception; plus `xdp_lossless_tick`, the timer the
//! controller runs so quiet queues drain and XON / refreshes happen.
//!
//! Every step is a function of `dataplane_common::buffer`; this file holds
//! the maps, the locks and the packet rewrite only. The model's state is
//! shared by all CPUs and locked per piece (BPF compare-and-exchange): one
//! lock per egress queue, one per ingress PG (`queue_lock`, `pg_lock`), a
//! PG's taken only inside its queue's and never two at once, so CPUs
//! feeding different queues run in parallel. The shared pool is never
//! locked: each PG step runs on a snapshot of it and adds its change of
//! `used` atomically. A CPU that cannot take a queue's lock within a
//! bounded spin forwards the packet unaccounted and counts `model_busy`.

use core::intrinsics::{atomic_cxchg, atomic_xadd, atomic_xchg, AtomicOrdering};

use aya_ebpf::{
    helpers::{bpf_get_prandom_u32, bpf_ktime_get_ns},
    macros::map,
    maps::{Array, PerCpuArray},
};
use dataplane_common::{
    buffer::{
        arrival_admit, arrival_drain, arrival_drain_one, arrival_wred, arrival_wred_draws,
        pfc_event, pfc_rx_queue, pg_lock, queue_lock, storm_queue, tick_pg, Arrival, BufVerdict,
        Busy, PauseRuns, PauseStat, PfcEvent, PortBuffer, TcRow, WdStat, MODEL_LOCKS, NUM_TC,
        STORM_DROP, STORM_NONE,
    },
    lossless::{
        ipv4_set_ce, ipv6_set_ce, note_pg, note_pool, note_queue, storm_fate, DropReason,
        EgressQueue, SharedPool, StormVerdict, Watermark, WdCount, MODEL_PORTS,
    },
    maps::MAX_PORTS,
    parse::L3,
    reason::Reason,
    wire::{ipv4, macctl::MacCtl, Packet},
};

use crate::counters::lossless as counters;
use crate::packet::XdpPacket;

/// A lock word on a cache line of its own.
#[repr(C)]
pub struct ModelLock {
    word: u64,
    _pad: [u64; 7],
}

/// The model's locks: `queue_lock(port, tc)`, `pg_lock(slot, tc)`.
#[map]
static MODEL_LOCK: Array<ModelLock> = Array::with_max_entries(MODEL_LOCKS as u32, 0);
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
/// Paused runs per (port, priority), index port * 8 + prio (pfcstat
/// --history's transitions and recent pause; updated with PAUSE_STATS).
#[map]
static PAUSE_RUNS: Array<PauseRuns> = Array::with_max_entries((MODEL_PORTS * NUM_TC) as u32, 0);
/// PFC watchdog counters per (port, priority); written by the controller
/// only (kept here so they are pinned with the rest).
#[map]
static WD_STATS: Array<WdStat> = Array::with_max_entries((MODEL_PORTS * NUM_TC) as u32, 0);
/// Watermarks per (port, TC), index port * 8 + tc: the egress queue's
/// (raised under its lock), the ingress PG's and the shared pool's as the
/// PG's admissions left it (under the PG's lock). The
/// controller reads and resets each mark with an atomic exchange through a
/// shared mapping (BPF_F_MMAPABLE), so no raise is lost to a reset.
#[map]
static WATERMARKS: Array<Watermark> = Array::with_max_entries(
    (MODEL_PORTS * NUM_TC) as u32,
    aya_ebpf::bindings::BPF_F_MMAPABLE,
);
/// Bytes of the packets the model dropped, per port and TC (per CPU).
#[map]
static DROP_BYTES: PerCpuArray<[u64; NUM_TC]> = PerCpuArray::with_max_entries(MAX_PORTS, 0);
/// Packets the buffer model dropped at their ingress priority group (a
/// lossy PG with the shared buffer full, a lossless PG past its headroom),
/// per ingress port and TC (per CPU): SAI's ingress PG DROPPED_PACKETS.
#[map]
static PG_DROPS: PerCpuArray<[u64; NUM_TC]> = PerCpuArray::with_max_entries(MAX_PORTS, 0);

/// Lock attempts before giving up (a holder keeps it well under a
/// microsecond; two CPUs contend).
const SPIN: u32 = 1024;

/// Takes lock `idx` of the model (see `queue_lock`, `pg_lock`).
#[inline(always)]
fn lock(idx: u32) -> Option<*mut u64> {
    let m = MODEL_LOCK.get_ptr_mut(idx)?;
    // SAFETY: a field of a map value.
    let l = unsafe { core::ptr::addr_of_mut!((*m).word) };
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

/// Runs a PG step on a snapshot of the shared pool and adds the step's
/// change of `used` to the pool atomically (the pool is never locked).
#[inline(always)]
fn with_pool<R>(pool: *mut SharedPool, f: impl FnOnce(&mut SharedPool) -> R) -> R {
    with_pool_used(pool, f).0
}

/// [`with_pool`], also returning the pool's `used` right after the step's
/// atomic add (what this CPU's add left, whatever other CPUs did; 0 when
/// the step did not change the pool): the pool's watermark.
#[inline(always)]
fn with_pool_used<R>(pool: *mut SharedPool, f: impl FnOnce(&mut SharedPool) -> R) -> (R, u32) {
    // SAFETY: a map value; concurrent writers only add to `used` atomically.
    let mut snap = unsafe { core::ptr::read_volatile(pool) };
    let before = snap.used;
    let r = f(&mut snap);
    let d = snap.used.wrapping_sub(before);
    let mut after = 0;
    if d != 0 {
        // SAFETY: an aligned u32 of a map value, only ever changed
        // atomically by the data plane; BPF atomic add (two's complement: a
        // release adds the negated amount); it returns the value before.
        let prev = unsafe {
            atomic_xadd::<u32, u32, { AtomicOrdering::SeqCst }>(
                core::ptr::addr_of_mut!((*pool).used),
                d,
            )
        };
        after = prev.wrapping_add(d);
    }
    (r, after)
}

/// Bytes queue steps released that the ingress PGs are still to get back,
/// per (TC, slot), per CPU. A queue step writes (egress) or adds (steps
/// inside a bpf_loop callback: PFC reception, the timer, which cannot start
/// a loop of their own) here; `release` then gives them back, each under
/// its PG's lock. Zero between programs, but for bytes whose PG lock was
/// not taken (counted as `model_busy`).
#[map]
static MODEL_PENDING: PerCpuArray<[[u32; MODEL_PORTS]; NUM_TC]> =
    PerCpuArray::with_max_entries(1, 0);

/// This CPU's pending releases.
#[inline(always)]
fn pending() -> Option<*mut [[u32; MODEL_PORTS]; NUM_TC]> {
    MODEL_PENDING.get_ptr_mut(0)
}

/// Adds what a queue step released to this CPU's pending releases.
#[inline(always)]
fn pend(tc: usize, bytes: &[u32; MODEL_PORTS]) {
    let Some(p) = pending() else {
        return;
    };
    let tc = tc & (NUM_TC - 1);
    let mut i = 0;
    while i < MODEL_PORTS {
        // SAFETY: per-CPU slot, only this program on this CPU touches it.
        unsafe { (*p)[tc][i & (MODEL_PORTS - 1)] += bytes[i & (MODEL_PORTS - 1)] };
        i += 1;
    }
}

/// The releases `release_one` works through: entries `first..` of the
/// pending table (index tc x MODEL_PORTS + slot); a PG lock not taken counts
/// as `model_busy` of `port`. Read-only in the callback, so the verifier's
/// walk of the loop converges.
#[repr(C)]
struct Releasing {
    first: u32,
    port: u32,
}

/// bpf_loop callback: gives pending entry `first + i` back to its PG under
/// the PG's lock.
extern "C" fn release_one(i: u64, ctx: *mut core::ffi::c_void) -> i64 {
    // SAFETY: ctx is the Releasing `release` passed.
    let r = unsafe { &*(ctx as *const Releasing) };
    let e = (r.first as usize + i as usize) & (MODEL_PORTS * NUM_TC - 1);
    let (tc, slot) = (e / MODEL_PORTS, e % MODEL_PORTS);
    let Some(p) = pending() else {
        return 1;
    };
    // SAFETY: per-CPU slot.
    let bytes = unsafe { (*p)[tc][slot] };
    if bytes == 0 {
        return 0;
    }
    let (Some(row), Some(pool)) = (TC_ROWS.get_ptr_mut(tc as u32), POOL.get_ptr_mut(0)) else {
        return 0;
    };
    let Some(l) = lock(pg_lock(slot, tc)) else {
        if let Some(c) = counters(r.port as u16) {
            c.count_busy(Busy::Pg);
        }
        return 0;
    };
    // SAFETY: the PG's lock is held; a map value; the per-CPU slot.
    unsafe {
        with_pool(pool, |q| (*row).pg[slot].release(q, bytes));
        (*p)[tc][slot] = 0;
    }
    unlock(l);
    0
}

/// Gives the pending releases of `tc` (or of every TC with `None`) back
/// to their PGs, at the top level of a program; counts PG locks not taken
/// as `model_busy` of `port` (their bytes stay pending).
#[inline(always)]
fn release(tc: Option<usize>, port: u16) {
    let (first, n) = match tc {
        Some(tc) => ((tc & (NUM_TC - 1)) * MODEL_PORTS, MODEL_PORTS),
        None => (0, MODEL_PORTS * NUM_TC),
    };
    let mut r = Releasing {
        first: first as u32,
        port: u32::from(port),
    };
    // SAFETY: callback and context follow bpf_loop's contract.
    unsafe {
        aya_ebpf::helpers::generated::bpf_loop(
            n as u32,
            release_one as *mut core::ffi::c_void,
            &mut r as *mut Releasing as *mut core::ffi::c_void,
            0,
        )
    };
}

/// Counts the bytes of a packet the model dropped on egress port `port`.
#[inline(always)]
fn dropped_bytes(port: u16, tc: usize, len: u64) {
    if let Some(b) = DROP_BYTES.get_ptr_mut(u32::from(port)) {
        // SAFETY: per-CPU slot, only this program on this CPU touches it.
        unsafe { (*b)[tc & (NUM_TC - 1)] += len };
    }
}

/// Counts a packet dropped at ingress port `port`'s priority group `tc`.
#[inline(always)]
fn pg_dropped(port: u16, tc: usize) {
    if let Some(b) = PG_DROPS.get_ptr_mut(u32::from(port)) {
        // SAFETY: per-CPU slot, only this program on this CPU touches it.
        unsafe { (*b)[tc & (NUM_TC - 1)] += 1 };
    }
}

/// Counts a PFC decision for port `port` and gives its event, if any (sent
/// by `pfc_tx`).
#[inline(always)]
fn decided(
    now: u64,
    port: u8,
    prio: u8,
    a: dataplane_common::lossless::PfcAction,
) -> Option<PfcEvent> {
    let ev = pfc_event(now, port, prio, a)?;
    if let Some(c) = counters(u16::from(port)) {
        c.count_pfc(prio as usize, a);
    }
    Some(ev)
}

/// Whether a packet from `in_port` to `out_port` goes through the buffer
/// model (both ports in it).
#[inline(always)]
pub fn modelled(in_port: u16, out_port: u16) -> bool {
    let (ip, op) = (in_port as usize, out_port as usize);
    if ip >= MODEL_PORTS || op >= MODEL_PORTS {
        return false;
    }
    // the egress port's entry only when the ingress port is in the model
    PORT_BUF.get(ip as u32).is_some_and(|ib| ib.enabled != 0)
        && PORT_BUF.get(op as u32).is_some_and(|ob| ob.enabled != 0)
}

/// The model's verdict for a routed packet.
pub enum Egress {
    Forward,
    /// Not admitted to a trimming queue: to the trimming stage.
    Trim,
    /// Drop, with the event reason.
    Drop(u8),
}

/// The model's verdict, and whether its arrival made a PFC decision for
/// the ingress port (left in `pfc_tx::decision()` for `pfc_tx` to send).
pub struct EgressOut {
    pub verdict: Egress,
    pub pfc: bool,
    /// A far-side notification is due (`far::due`): the drain time it
    /// carries; 0: none.
    pub note_ns: u64,
}

impl From<Egress> for EgressOut {
    #[inline(always)]
    fn from(verdict: Egress) -> Self {
        EgressOut {
            verdict,
            pfc: false,
            note_ns: 0,
        }
    }
}

/// Runs the buffer model for a packet from port `in_port` to `out_port`;
/// marks CE in the packet when the model says so.
#[inline(always)]
pub fn egress(pkt: &XdpPacket, ec: &crate::stages::EgressCtx) -> EgressOut {
    // frames are at most 16 KiB (bounded so the verifier's ranges stay small)
    let (in_port, out_port, len) = (ec.in_port, ec.out_port, u64::from(ec.len & 0x3fff));
    let (ip, op) = (in_port as usize, out_port as usize);
    if ip >= MODEL_PORTS || op >= MODEL_PORTS {
        return Egress::Forward.into();
    }
    let (Some(ib), Some(ob)) = (PORT_BUF.get(ip as u32), PORT_BUF.get(op as u32)) else {
        return Egress::Forward.into();
    };
    if ib.enabled == 0 || ob.enabled == 0 {
        return Egress::Forward.into();
    }
    let tc = (ec.tc as usize) & (NUM_TC - 1);
    let (Some(q), Some(row), Some(pool)) = (
        QUEUES.get_ptr_mut((op * NUM_TC + tc) as u32),
        TC_ROWS.get_ptr_mut(tc as u32),
        POOL.get_ptr_mut(0),
    ) else {
        return Egress::Forward.into();
    };
    let qlock = queue_lock(op, tc);
    // pfcwd: the storm actions in force on the packet's ingress (port,
    // priority) and egress queue (`storm_fate`), counted per CPU
    let fate = storm_fate(ib.storm[tc], ob.storm[tc]);
    if fate.rx != WdCount::None {
        if let Some(c) = counters(in_port) {
            c.count_storm(tc, true, fate.rx);
        }
    }
    if fate.tx != WdCount::None {
        if let Some(c) = counters(out_port) {
            c.count_storm(tc, false, fate.tx);
        }
    }
    if ob.storm[tc] != STORM_NONE {
        // a stormed egress queue: its pause is over, and for drop its
        // contents are flushed
        if let Some(l) = lock(qlock) {
            // SAFETY: the queue's lock is held; a map value.
            let released = unsafe { storm_queue(ec.now, &mut *q, ob.storm[tc] == STORM_DROP) };
            pend(tc, &released);
            release(Some(tc), out_port);
            unlock(l);
        }
    }
    match fate.verdict {
        StormVerdict::Drop => {
            if fate.tx == WdCount::Drop {
                // dropped at the queue: its Drop/bytes (`show queue counters`)
                dropped_bytes(out_port, tc, len);
            }
            return Egress::Drop(Reason::PfcWatchdog.code()).into();
        }
        StormVerdict::Unmodelled => return Egress::Forward.into(),
        StormVerdict::Model => {}
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
        lossless: ec.lossless != 0 && fate.lossless,
        control: ec.cnp != 0,
        ecn: ec.ecn,
        len: len as u32,
    };
    let now = ec.now;
    let Some(l) = lock(qlock) else {
        if let Some(c) = counters(out_port) {
            c.count_busy(Busy::Queue);
        }
        return Egress::Forward.into();
    };
    // the steps of `on_arrival`, each under the lock of what it touches
    let slot = (slot as usize) & (MODEL_PORTS - 1);
    // A queue whose bytes all came from the packet's own ingress port (one
    // port feeding it, the common case) drains without a pass over the
    // slots, and its bytes go back to the packet's own PG below.
    // SAFETY: the queue's lock is held; a map value.
    let own = match unsafe { arrival_drain_one(now, &mut *q, ob, slot) } {
        Some(own) => own,
        None => {
            let Some(p) = pending() else {
                unlock(l);
                return Egress::Forward.into();
            };
            // SAFETY: the queue's lock is held; a map value; the per-CPU
            // slot (drained into: it holds no pending bytes of this TC but
            // those of a PG lock not taken, already counted).
            unsafe {
                let released = &mut (*p)[tc];
                arrival_drain(now, &mut *q, ob, released);
                // the packet's own PG gets its bytes back under the lock
                // the admission takes anyway; a loop only for the other PGs
                let own = released[slot];
                released[slot] = 0;
                let mut others = 0;
                let mut i = 0;
                while i < MODEL_PORTS {
                    others |= released[i];
                    i += 1;
                }
                if others != 0 {
                    release(Some(tc), out_port);
                }
                own
            }
        }
    };
    // a random number only where WRED draws one (between its thresholds):
    // elsewhere the decision does not depend on it
    // SAFETY: the queue's lock is held; a map value; a helper without
    // preconditions.
    let rand = if unsafe { arrival_wred_draws(&*q, ob, &a) } {
        unsafe { bpf_get_prandom_u32() }
    } else {
        0
    };
    // SAFETY: the queue's lock is held; a map value.
    let wred = unsafe { arrival_wred(&*q, ob, &a, rand) };
    let Some(pl) = lock(pg_lock(slot, tc)) else {
        unlock(l);
        if let Some(c) = counters(out_port) {
            c.count_busy(Busy::Pg);
        }
        return Egress::Forward.into();
    };
    // SAFETY: the queue's and the PG's locks are held; map values. (A
    // release and WRED do not touch each other's state: the order is
    // `on_arrival`'s in effect.)
    // the PG's watermark entry: its mark and the pool's, under the PG's lock
    let pg_wm = WATERMARKS.get_ptr_mut((slot * NUM_TC + tc) as u32);
    let (d, pool_used) = with_pool_used(pool, |pl| unsafe {
        let (pg, pfc) = (&mut (*row).pg[slot], &mut (*row).pfc[slot]);
        if own > 0 {
            pg.release(pl, own);
        }
        match wred {
            Err(d) => d,
            Ok(mark_ce) => {
                let d = arrival_admit(now, &mut *q, pg, pfc, ib, pl, &a, mark_ce);
                // the marks of what admission raised, under both locks
                if let Some(w) = WATERMARKS.get_ptr_mut((op * NUM_TC + tc) as u32) {
                    note_queue(&mut *w, &*q);
                }
                if let Some(w) = pg_wm {
                    note_pg(&mut *w, pg);
                }
                d
            }
        }
    });
    // the pool's mark, still under the PG's lock (the pool only grows by
    // admissions, so its peak is one of these values)
    if let (true, Some(w)) = (pool_used != 0, pg_wm) {
        // SAFETY: the PG's lock is held; a map value.
        unsafe { note_pool(&mut *w, pool_used) };
    }
    unlock(pl);
    unlock(l);
    let pfc = match decided(now, ip as u8, tc as u8, d.pfc) {
        Some(ev) => crate::pfc_tx::keep_decision(&ev),
        None => false,
    };
    let out = |verdict| EgressOut {
        verdict,
        pfc,
        note_ns: 0,
    };
    let Some(c) = counters(out_port) else {
        return out(Egress::Forward);
    };
    if d.verdict != BufVerdict::Forward {
        dropped_bytes(out_port, tc, len);
    }
    match d.verdict {
        BufVerdict::Forward => {}
        BufVerdict::WredDrop => {
            c.wred_drop[tc] += 1;
            return out(Egress::Drop(Reason::Wred.code()));
        }
        BufVerdict::NoBuffer(DropReason::SharedFull) => {
            if ec.trimmed == 0 && crate::trim::queue_trims(out_port, tc as u8) {
                return out(Egress::Trim);
            }
            c.drop_shared_full[tc] += 1;
            pg_dropped(in_port, tc);
            return out(Egress::Drop(Reason::SharedBufferFull.code()));
        }
        BufVerdict::NoBuffer(DropReason::HeadroomExhausted) => {
            c.drop_headroom[tc] += 1;
            pg_dropped(in_port, tc);
            return out(Egress::Drop(Reason::HeadroomExhausted.code()));
        }
    }
    // routed frames are untagged or carry one tag: the L3 offset is 14 or 18
    // (constants keep the verifier's view of the packet writes exact)
    let l3 = if ec.l3_off == 18 { 18 } else { 14 };
    if d.mark_ce && mark_ce(pkt, ec.l3, l3) {
        c.ecn_marked[tc] += 1;
    }
    let note_ns = if a.lossless && !pfc {
        crate::far::due(
            ec,
            d.queue_bytes,
            ob.wred[tc].green_min_threshold,
            ob.speed_mbps,
        )
    } else {
        0
    };
    EgressOut {
        verdict: Egress::Forward,
        pfc,
        note_ns,
    }
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
    release(None, port as u16);
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
    let (Some(q), Some(st), Some(runs)) = (
        QUEUES.get_ptr_mut((port * NUM_TC + prio) as u32),
        PAUSE_STATS.get_ptr_mut((port * NUM_TC + prio) as u32),
        PAUSE_RUNS.get_ptr_mut((port * NUM_TC + prio) as u32),
    ) else {
        return 0;
    };
    if let Some(l) = lock(queue_lock(port, prio)) {
        // SAFETY: the queue's lock is held (it guards its pause statistics
        // too); map values.
        let released = unsafe {
            let was_until = (*q).paused_until_ns;
            let released = pfc_rx_queue(c.now, &mut *q, pb, quanta, &mut *st);
            (*runs).note(c.now, was_until, (*q).paused_until_ns);
            released
        };
        unlock(l);
        pend(prio, &released);
    } else if let Some(cn) = counters(port as u16) {
        cn.count_busy(Busy::Queue);
    }
    0
}

/// Entry i (= port * 8 + tc) of the tick's loops: (i, port, tc, the port's
/// buffer configuration) when the port is in the model.
#[inline(always)]
fn tick_entry(i: u64) -> Option<(usize, usize, usize, &'static PortBuffer)> {
    let i = (i as usize) & (MODEL_PORTS * NUM_TC - 1);
    let (port, tc) = (i / NUM_TC, i % NUM_TC);
    let pb = PORT_BUF.get(port as u32)?;
    (pb.enabled != 0).then_some((i, port, tc, pb))
}

/// bpf_loop callback of the tick: index i = port * 8 + tc.
extern "C" fn tick_one(i: u64, now: *mut core::ffi::c_void) -> i64 {
    // SAFETY: bpf_loop passes the u64 the tick gave it.
    let now = unsafe { *(now as *const u64) };
    let Some((i, port, tc, pb)) = tick_entry(i) else {
        return 0;
    };
    let Some(q) = QUEUES.get_ptr_mut(i as u32) else {
        return 0;
    };
    // the queue steps of `storm_override` and `tick_queue` under the
    // queue's lock; the PGs get the bytes back in `tick` (`release`)
    let Some(l) = lock(queue_lock(port, tc)) else {
        if let Some(c) = counters(port as u16) {
            c.tick_busy += 1;
        }
        return 0;
    };
    if pb.storm[tc] != STORM_NONE {
        // SAFETY: the queue's lock is held; a map value.
        let released = unsafe { storm_queue(now, &mut *q, pb.storm[tc] == STORM_DROP) };
        pend(tc, &released);
    }
    let mut released = [0u32; MODEL_PORTS];
    // SAFETY: the queue's lock is held; a map value.
    unsafe { arrival_drain(now, &mut *q, pb, &mut released) };
    unlock(l);
    pend(tc, &released);
    0
}

/// bpf_loop callback of the tick's second pass, index i = port * 8 + tc:
/// the PG's PFC state after the queues drained.
extern "C" fn tick_pfc(i: u64, now: *mut core::ffi::c_void) -> i64 {
    // SAFETY: bpf_loop passes the u64 the tick gave it.
    let now = unsafe { *(now as *const u64) };
    let Some((_, port, tc, pb)) = tick_entry(i) else {
        return 0;
    };
    let (Some(row), Some(pool)) = (TC_ROWS.get_ptr_mut(tc as u32), POOL.get_ptr_mut(0)) else {
        return 0;
    };
    let Some(pl) = lock(pg_lock(port, tc)) else {
        if let Some(c) = counters(port as u16) {
            c.tick_busy += 1;
        }
        return 0;
    };
    // SAFETY: the PG's lock is held; `tick_pg` reads the pool only.
    let action = unsafe {
        let p = core::ptr::read_volatile(pool);
        tick_pg(now, &mut *row, port, pb, tc, &p)
    };
    unlock(pl);
    if let Some(ev) = decided(now, port as u8, tc as u8, action) {
        crate::pfc_tx::from_timer(&ev);
    }
    0
}

/// One timer tick over every (port, TC): the queues drain (and storms
/// flush), their bytes go back to the PGs, then each PG's PFC state.
/// Returns `pfc_tx::timer_verdict`.
#[inline(always)]
pub fn tick() -> u32 {
    crate::pfc_tx::timer_start();
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
    // a PG lock not taken leaves its bytes pending for the next tick
    release(None, 0);
    // SAFETY: as above.
    unsafe {
        aya_ebpf::helpers::generated::bpf_loop(
            (MODEL_PORTS * NUM_TC) as u32,
            tick_pfc as *mut core::ffi::c_void,
            &mut now as *mut u64 as *mut core::ffi::c_void,
            0,
        )
    };
    crate::pfc_tx::timer_verdict()
}
