//! The buffer model's per-event steps, composed from the primitives of
//! [`crate::lossless`]: what happens when a packet arrives at an egress
//! queue, when a PFC frame arrives on a port, and on a timer tick.
//!
//! State (map values, all `#[repr(C)]`):
//! * an [`EgressQueue`] per (egress port, TC) — bytes, drain, pause;
//! * a [`TcRow`] per TC — the buffer use ([`PgState`]) and PFC generation
//!   state ([`PfcTxState`]) of every ingress port for that priority group
//!   (TC_TO_PRIORITY_GROUP is identity);
//! * a [`PortBuffer`] per port — its speed, its PG buffer profiles and its
//!   egress WRED profiles per TC;
//! * one [`SharedPool`].
//!
//! Ports are model slots `0..MODEL_PORTS` (the port id; the step functions are generic over the slot count `N`, which a simulated switch with more ports raises). Each event is
//! also given as steps that touch one piece of state each, so a caller
//! running on several CPUs can lock per piece ([`queue_lock`],
//! [`pg_lock`]): an arrival is [`arrival_drain`] and [`arrival_wred`] on
//! the egress queue, [`PgState::release`] of what each ingress PG got back,
//! then [`arrival_admit`] on the packet's ingress PG (and its queue). The
//! composed functions ([`on_arrival`], ...) are those steps in that order on
//! one thread. The shared pool is only ever changed by the PG steps, by the
//! bytes they charge or give back, so a concurrent caller applies each
//! step's change of `pool.used` atomically.
//!
//! What leaves the model lives beside it: the records of a PFC decision
//! on its way out (`buffer/pfc_send.rs`) and the lossless stage's counters
//! (`buffer/counters.rs`), re-exported here.

use crate::lossless::{
    pfc_evaluate, wred, BufferProfile, DropReason, EcnAction, EgressQueue, EgressQueueN, PfcAction,
    PfcTxState, PgState, SharedPool, WredProfile, MODEL_PORTS,
};

mod counters;
mod pfc_send;

pub use counters::{Busy, LosslessCounters, PauseRuns, PauseStat};
pub use pfc_send::{
    pfc_copy_fate, pfc_event, CopyFate, PfcEvent, PfcMeta, PFC_EV_REFRESH, PFC_EV_SENT,
    PFC_EV_XOFF, PFC_EV_XON, PFC_META_MAGIC, PFC_NO_DATA, PFC_PATH_DATAPLANE, PFC_PATH_USERSPACE,
};

/// Priority groups / TCs.
pub const NUM_TC: usize = 8;

/// Buffer use and PFC state of every ingress port for one TC, for `N`
/// ingress slots (as [`EgressQueueN`]).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcRowN<const N: usize> {
    pub pg: [PgState; N],
    pub pfc: [PfcTxState; N],
}

/// The data plane's row: [`MODEL_PORTS`] ingress slots.
pub type TcRow = TcRowN<MODEL_PORTS>;

impl<const N: usize> TcRowN<N> {
    pub const ZERO: TcRowN<N> = TcRowN {
        pg: [PgState::ZERO; N],
        pfc: [PfcTxState::ZERO; N],
    };
}

/// A port's buffer configuration.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortBuffer {
    /// Ingress PG profile per TC (lossless ones have headroom).
    pub pg_profile: [BufferProfile; NUM_TC],
    /// Egress queue WRED/ECN profile per TC.
    pub wred: [WredProfile; NUM_TC],
    /// Line rate, Mb/s (queue drain, pause duration).
    pub speed_mbps: u32,
    /// Nonzero when this port takes part in the model.
    pub enabled: u32,
    /// PFC watchdog state per priority of this port's egress queues:
    /// [`STORM_NONE`], [`STORM_DROP`] (drop the queue's packets, ignore its
    /// PFC) or [`STORM_FORWARD`] (ignore its PFC, forward unmodelled).
    pub storm: [u8; NUM_TC],
}

/// No storm on the queue.
pub const STORM_NONE: u8 = 0;
/// pfcwd action drop in force.
pub const STORM_DROP: u8 = 1;
/// pfcwd action forward in force.
pub const STORM_FORWARD: u8 = 2;

/// What the model says about a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufVerdict {
    Forward,
    /// WRED drop (lossy class, non-ECT above the curve).
    WredDrop,
    /// No buffer (lossy: shared full; lossless: headroom exhausted).
    NoBuffer(DropReason),
}

/// A packet arriving at an egress queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// Ingress model slot.
    pub ingress: u8,
    pub tc: u8,
    pub lossless: bool,
    /// CNP / control class: never marked or WRED-dropped.
    pub control: bool,
    /// The packet's ECN codepoint.
    pub ecn: u8,
    pub len: u32,
}

/// The model's decision for one arrival.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    pub verdict: BufVerdict,
    /// Set CE on the packet.
    pub mark_ce: bool,
    /// What to send to the ingress port's peer for this priority.
    pub pfc: PfcAction,
    /// Queue bytes after the arrival.
    pub queue_bytes: u32,
}

/// Gives released bytes back to every ingress PG of a row.
#[inline(always)]
pub fn release_row<const N: usize>(
    row: &mut TcRowN<N>,
    pool: &mut SharedPool,
    released: &[u32; N],
) {
    let mut i = 0;
    while i < N {
        if released[i] > 0 {
            row.pg[i].release(pool, released[i]);
        }
        i += 1;
    }
}

/// [`release_row`] for the slots in `slots` only (bit `i`: slot `i`), a
/// set holding every slot with `released[i] > 0` (as
/// [`arrival_drain_held`] returns): the same releases in the same order,
/// without visiting the empty slots. A slot of the set with nothing
/// released gets a release of 0, which changes nothing
/// ([`PgState::release`]): no branch per slot. Off eBPF only.
#[cfg(not(target_arch = "bpf"))]
#[inline(always)]
pub fn release_row_slots<const N: usize>(
    row: &mut TcRowN<N>,
    pool: &mut SharedPool,
    released: &[u32; N],
    slots: u64,
) {
    let mut m = slots & (u64::MAX >> (64 - N));
    while m != 0 {
        let i = m.trailing_zeros() as usize & (N - 1);
        m &= m - 1;
        row.pg[i].release(pool, released[i]);
    }
}

/// The lock of egress queue (`port`, `tc`) among the model's locks.
#[inline(always)]
pub const fn queue_lock(port: usize, tc: usize) -> u32 {
    (((port & (MODEL_PORTS - 1)) * NUM_TC) + (tc & (NUM_TC - 1))) as u32
}

/// The lock of ingress PG (`slot`, `tc`): its [`PgState`] and
/// [`PfcTxState`] in the TC's row.
#[inline(always)]
pub const fn pg_lock(slot: usize, tc: usize) -> u32 {
    (MODEL_PORTS * NUM_TC + (slot & (MODEL_PORTS - 1)) * NUM_TC + (tc & (NUM_TC - 1))) as u32
}

/// The model's locks: one per egress queue, one per ingress PG. A step
/// never holds two PG locks, and takes a queue's before a PG's.
pub const MODEL_LOCKS: usize = 2 * MODEL_PORTS * NUM_TC;

/// Arrival, step 1 (the egress queue): drain to now; `released[i]`
/// (overwritten) is what ingress slot `i` gets back (to
/// [`PgState::release`] on its PG). Returns the bytes drained (their sum:
/// 0 means there is nothing to release).
#[inline(always)]
pub fn arrival_drain<const N: usize>(
    now_ns: u64,
    q: &mut EgressQueueN<N>,
    egress: &PortBuffer,
    released: &mut [u32; N],
) -> u32 {
    q.drain(now_ns, egress.speed_mbps, released)
}

/// [`arrival_drain`] when the queue's bytes are all in ingress slot
/// `slot` ([`EgressQueueN::drain_one`]): `Some(bytes)` released, all to
/// `slot` (every other slot gets 0), as [`arrival_drain`] would give; `None`
/// (the queue untouched) when other slots hold bytes, for the caller to run
/// [`arrival_drain`].
#[inline(always)]
pub fn arrival_drain_one<const N: usize>(
    now_ns: u64,
    q: &mut EgressQueueN<N>,
    egress: &PortBuffer,
    slot: usize,
) -> Option<u32> {
    q.drain_one(now_ns, egress.speed_mbps, slot)
}

/// [`arrival_drain`] for a caller that keeps the set of slots holding
/// bytes ([`EgressQueueN::drain_held`]): the same drain, visiting only
/// those slots, and returning the set of slots that got bytes back, for
/// [`release_row_slots`]; `released` is written for those slots, the
/// others are not cleared. `q` stands for a queue of `n` slots (a power of
/// two, at most `N`): the drain is that of an `EgressQueueN<n>`. Off eBPF
/// only.
#[cfg(not(target_arch = "bpf"))]
#[inline(always)]
pub fn arrival_drain_held<const N: usize>(
    now_ns: u64,
    q: &mut EgressQueueN<N>,
    egress: &PortBuffer,
    released: &mut [u32; N],
    held: &mut u64,
    n: usize,
) -> (u32, u64) {
    q.drain_held(now_ns, egress.speed_mbps, released, held, n)
}

/// Arrival, step 2 (the egress queue): WRED/ECN on the drained queue's
/// bytes. `Ok(mark_ce)`, or the decision of a WRED drop.
#[inline(always)]
pub fn arrival_wred<const N: usize>(
    q: &EgressQueueN<N>,
    egress: &PortBuffer,
    a: &Arrival,
    rand: u32,
) -> Result<bool, Decision> {
    let tc = (a.tc as usize) & (NUM_TC - 1);
    match wred(
        &egress.wred[tc],
        q.bytes,
        a.ecn,
        a.lossless,
        a.control,
        rand,
    ) {
        EcnAction::Forward => Ok(false),
        EcnAction::MarkCe => Ok(true),
        EcnAction::Drop => Err(Decision {
            verdict: BufVerdict::WredDrop,
            mark_ce: false,
            pfc: PfcAction::None,
            queue_bytes: q.bytes,
        }),
    }
}

/// Whether [`arrival_wred`] on the drained queue `q` uses its random
/// number (the queue is between the TC's WRED thresholds and the packet
/// is not a control packet): when false, any `rand` gives the same
/// decision, so a caller may skip drawing one.
#[inline(always)]
pub fn arrival_wred_draws<const N: usize>(
    q: &EgressQueueN<N>,
    egress: &PortBuffer,
    a: &Arrival,
) -> bool {
    let tc = (a.tc as usize) & (NUM_TC - 1);
    !a.control && crate::lossless::red_draws(&egress.wred[tc], q.bytes)
}

/// Arrival, step 3 (the packet's ingress PG `pg` / `pfc`, and its queue):
/// admission (reserve, shared, headroom), enqueue, then the PG's PFC state.
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the pieces of state one step touches; bundling them would copy in eBPF
pub fn arrival_admit<const N: usize>(
    now_ns: u64,
    q: &mut EgressQueueN<N>,
    pg: &mut PgState,
    pfc: &mut PfcTxState,
    ingress: &PortBuffer,
    pool: &mut SharedPool,
    a: &Arrival,
    mark_ce: bool,
) -> Decision {
    let tc = (a.tc as usize) & (NUM_TC - 1);
    let slot = (a.ingress as usize) & (N - 1);
    let prof = &ingress.pg_profile[tc];
    let verdict = match pg.admit(pool, prof, a.len) {
        Ok(_) => {
            let took = q.enqueue(slot, a.len);
            if took < a.len {
                // the queue is at 4 GiB: give back what the PG charged
                pg.release(pool, a.len - took);
            }
            BufVerdict::Forward
        }
        Err(r) => BufVerdict::NoBuffer(r),
    };
    let pfc = pfc_evaluate(pfc, pg, prof, pool, now_ns, ingress.speed_mbps);
    Decision {
        verdict,
        mark_ce: mark_ce && verdict == BufVerdict::Forward,
        pfc,
        queue_bytes: q.bytes,
    }
}

/// A packet arrives at egress queue `q` (of a port configured by
/// `egress`), from an ingress port configured by `ingress`: drain the queue
/// to now and release what left, WRED/ECN on the queue's bytes, admission
/// (reserve, shared, headroom), enqueue, then the ingress PG's PFC state
/// (the three arrival steps in order).
#[inline(always)]
#[allow(clippy::too_many_arguments)] // the model's state is four map values; bundling them would copy in eBPF
pub fn on_arrival<const N: usize>(
    now_ns: u64,
    q: &mut EgressQueueN<N>,
    egress: &PortBuffer,
    row: &mut TcRowN<N>,
    ingress: &PortBuffer,
    pool: &mut SharedPool,
    a: &Arrival,
    rand: u32,
) -> Decision {
    let slot = (a.ingress as usize) & (N - 1);
    let mut released = [0u32; N];
    arrival_drain(now_ns, q, egress, &mut released);
    release_row(row, pool, &released);
    let mark_ce = match arrival_wred(q, egress, a, rand) {
        Ok(m) => m,
        Err(d) => return d,
    };
    let (pg, pfc) = (&mut row.pg[slot], &mut row.pfc[slot]);
    arrival_admit(now_ns, q, pg, pfc, ingress, pool, a, mark_ce)
}

/// A PFC (or PAUSE) time for queue `q`'s priority arrived on its port:
/// drain to now, release, then pause (or resume with 0); the pause time is
/// accounted in `stat`.
#[inline(always)]
pub fn on_pfc_rx<const N: usize>(
    now_ns: u64,
    q: &mut EgressQueueN<N>,
    egress: &PortBuffer,
    row: &mut TcRowN<N>,
    pool: &mut SharedPool,
    quanta: u16,
    stat: &mut PauseStat,
) {
    let released = pfc_rx_queue(now_ns, q, egress, quanta, stat);
    release_row(row, pool, &released);
}

/// [`on_pfc_rx`]'s step on the queue (and its pause statistics): returns
/// what each ingress slot gets back.
#[inline(always)]
pub fn pfc_rx_queue<const N: usize>(
    now_ns: u64,
    q: &mut EgressQueueN<N>,
    egress: &PortBuffer,
    quanta: u16,
    stat: &mut PauseStat,
) -> [u32; N] {
    let mut released = [0u32; N];
    q.apply_pfc(now_ns, quanta, egress.speed_mbps, &mut released);
    let until = if q.paused_until_ns > now_ns {
        q.paused_until_ns
    } else {
        now_ns
    };
    stat.apply(now_ns, until);
    released
}

/// A PFC watchdog storm action on queue `q`: its pause is no longer
/// honoured (ended now) and, for action drop, what it holds is flushed and
/// given back to the ingress PGs that held it, as a switch flushes a
/// stormed queue.
#[inline(always)]
pub fn storm_override<const N: usize>(
    now_ns: u64,
    q: &mut EgressQueueN<N>,
    row: &mut TcRowN<N>,
    pool: &mut SharedPool,
    flush: bool,
) {
    let released = storm_queue(now_ns, q, flush);
    release_row(row, pool, &released);
}

/// [`storm_override`]'s step on the queue: returns what each ingress slot
/// gets back (all it held, for a flush).
#[inline(always)]
pub fn storm_queue<const N: usize>(now_ns: u64, q: &mut EgressQueueN<N>, flush: bool) -> [u32; N] {
    if q.paused_until_ns > now_ns {
        q.paused_until_ns = now_ns;
    }
    if flush && q.bytes > 0 {
        let released = q.ingress;
        crate::lossless::fill(&mut q.ingress, 0);
        q.bytes = 0;
        q.drain_frac = 0;
        return released;
    }
    [0; N]
}

/// Timer step of one egress queue: drain to now and release.
#[inline(always)]
pub fn tick_queue<const N: usize>(
    now_ns: u64,
    q: &mut EgressQueueN<N>,
    egress: &PortBuffer,
    row: &mut TcRowN<N>,
    pool: &mut SharedPool,
) {
    let mut released = [0u32; N];
    arrival_drain(now_ns, q, egress, &mut released);
    release_row(row, pool, &released);
}

/// Timer step of one (ingress port, TC): XON when the PG emptied, refresh
/// while XOFF holds.
#[inline(always)]
pub fn tick_pg<const N: usize>(
    now_ns: u64,
    row: &mut TcRowN<N>,
    slot: usize,
    ingress: &PortBuffer,
    tc: usize,
    pool: &SharedPool,
) -> PfcAction {
    let slot = slot & (N - 1);
    pfc_evaluate(
        &mut row.pfc[slot],
        &row.pg[slot],
        &ingress.pg_profile[tc & (NUM_TC - 1)],
        pool,
        now_ns,
        ingress.speed_mbps,
    )
}

/// The PFC watchdog's state of one (port, priority) (map value).
pub use crate::lossless::WdStat;

/// Where the model's books do not balance ([`books`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unbalanced {
    /// A queue's bytes are not the sum of what it holds per ingress slot.
    Queue {
        port: usize,
        tc: usize,
        bytes: u32,
        per_slot: u64,
    },
    /// An ingress PG does not hold what the queues hold for it.
    Pg {
        slot: usize,
        tc: usize,
        held: u64,
        queued: u64,
    },
    /// The pool's use is not the PGs' shared use.
    Pool { used: u32, shared: u64 },
}

/// Checks the model's books while no step is in flight: every queue's
/// bytes are the sum of its per-slot bytes, every ingress PG holds exactly
/// what the queues hold for it (reserve + shared + headroom), and the
/// pool's use is the sum of the PGs' shared use. `queues` is indexed
/// `port * NUM_TC + tc` (at most `MODEL_PORTS * NUM_TC`), `rows` by TC.
pub fn books(queues: &[EgressQueue], rows: &[TcRow], pool: &SharedPool) -> Result<(), Unbalanced> {
    let mut shared = 0u64;
    for (tc, row) in rows.iter().enumerate().take(NUM_TC) {
        // what the queues of class tc (one per port present) hold per slot
        let mut per_slot = [0u64; MODEL_PORTS];
        for q in queues.iter().skip(tc).step_by(NUM_TC).take(MODEL_PORTS) {
            for (sum, &b) in per_slot.iter_mut().zip(&q.ingress) {
                *sum += u64::from(b);
            }
        }
        for (slot, &queued) in per_slot.iter().enumerate() {
            let held = row.pg[slot].total();
            if held != queued {
                return Err(Unbalanced::Pg {
                    slot,
                    tc,
                    held,
                    queued,
                });
            }
            shared += u64::from(row.pg[slot].shared_used);
        }
    }
    for (i, q) in queues.iter().enumerate() {
        let per_slot: u64 = q.ingress.iter().map(|&b| u64::from(b)).sum();
        if u64::from(q.bytes) != per_slot {
            return Err(Unbalanced::Queue {
                port: i / NUM_TC,
                tc: i % NUM_TC,
                bytes: q.bytes,
                per_slot,
            });
        }
    }
    if u64::from(pool.used) != shared {
        return Err(Unbalanced::Pool {
            used: pool.used,
            shared,
        });
    }
    Ok(())
}

const _: () = assert!(core::mem::size_of::<TcRow>() == MODEL_PORTS * (16 + 24));
const _: () = assert!(core::mem::size_of::<PortBuffer>() == NUM_TC * (24 + 12) + 8 + NUM_TC);
const _: () = assert!(core::mem::size_of::<WdStat>() == 64);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), integer fields and arrays of them, no padding
    // (asserted above).
    unsafe impl aya::Pod for super::TcRow {}
    unsafe impl aya::Pod for super::PortBuffer {}
    unsafe impl aya::Pod for super::WdStat {}
}
