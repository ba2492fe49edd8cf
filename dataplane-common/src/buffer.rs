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

use crate::lossless::{
    pfc_evaluate, wred, BufferProfile, DropReason, EcnAction, EgressQueue, EgressQueueN, PfcAction,
    PfcTxState, PgState, SharedPool, WredProfile, MODEL_PORTS,
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
/// [`arrival_drain_slots`] returns): the same releases in the same order,
/// without visiting the empty slots. Off eBPF only.
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
        if released[i] > 0 {
            row.pg[i].release(pool, released[i]);
        }
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

/// [`arrival_drain`], also returning a set of slots holding every slot
/// that got bytes back ([`EgressQueueN::drain_slots`]: exactly those off
/// eBPF), for [`release_row_slots`].
#[inline(always)]
pub fn arrival_drain_slots<const N: usize>(
    now_ns: u64,
    q: &mut EgressQueueN<N>,
    egress: &PortBuffer,
    released: &mut [u32; N],
) -> (u32, u64) {
    q.drain_slots(now_ns, egress.speed_mbps, released)
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

/// Time a queue has spent paused by received PFC (pfcstat's pause
/// duration), per (port, priority); updated on every received PFC time.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseStat {
    /// Start of the current (or last) pause.
    pub start_ns: u64,
    /// When it ends (or ended); `<= start_ns` when not paused.
    pub until_ns: u64,
    /// Paused time of every earlier pause.
    pub total_ns: u64,
    /// PFC / PAUSE frames applied.
    pub frames: u64,
}

impl PauseStat {
    pub const ZERO: PauseStat = PauseStat {
        start_ns: 0,
        until_ns: 0,
        total_ns: 0,
        frames: 0,
    };

    /// A received time at `now_ns` pausing until `until_ns` (`now_ns` for
    /// XON): closes the running pause at `now_ns` and starts the new one.
    #[inline(always)]
    pub fn apply(&mut self, now_ns: u64, until_ns: u64) {
        self.total_ns = self.total_ns.saturating_add(self.elapsed(now_ns));
        self.start_ns = now_ns;
        self.until_ns = until_ns;
        self.frames += 1;
    }

    /// Paused time of the current pause up to `now_ns`.
    #[inline(always)]
    pub fn elapsed(&self, now_ns: u64) -> u64 {
        let end = if self.until_ns < now_ns {
            self.until_ns
        } else {
            now_ns
        };
        end.saturating_sub(self.start_ns)
    }

    /// Total paused time up to `now_ns`.
    #[inline(always)]
    pub fn total_at(&self, now_ns: u64) -> u64 {
        self.total_ns.saturating_add(self.elapsed(now_ns))
    }
}

/// The PFC watchdog's state of one (port, priority) (map value).
pub use crate::lossless::WdStat;

/// Kinds of [`PfcEvent`].
pub const PFC_EV_XOFF: u8 = 1;
pub const PFC_EV_REFRESH: u8 = 2;
pub const PFC_EV_XON: u8 = 3;

/// A PFC decision (ring buffer record): a frame the controller must send,
/// or, with [`PFC_EV_SENT`], one the data plane sent (for the event log
/// and the latency figures).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcEvent {
    /// When the data plane decided it (bpf_ktime_get_ns).
    pub time_ns: u64,
    /// [`PFC_EV_XOFF`], [`PFC_EV_REFRESH`] or [`PFC_EV_XON`].
    pub kind: u8,
    /// Port (model slot) out of which to send.
    pub port: u8,
    /// Priority to pause / resume.
    pub prio: u8,
    /// [`PFC_EV_SENT`] or 0.
    pub flags: u8,
    /// Pause time in quanta (0 for XON).
    pub quanta: u16,
    pub _pad2: u16,
    /// With [`PFC_EV_SENT`]: when the data plane handed the frame to the
    /// port (bpf_ktime_get_ns); else 0.
    pub sent_ns: u64,
}

/// `PfcEvent::flags`: the data plane sent this frame itself.
pub const PFC_EV_SENT: u8 = 1;

/// The event for a PFC action, if any.
#[inline(always)]
pub fn pfc_event(now_ns: u64, port: u8, prio: u8, a: PfcAction) -> Option<PfcEvent> {
    let (kind, quanta) = match a {
        PfcAction::None => return None,
        PfcAction::SendXoff { quanta } => (PFC_EV_XOFF, quanta),
        PfcAction::SendRefresh { quanta } => (PFC_EV_REFRESH, quanta),
        PfcAction::SendXon => (PFC_EV_XON, 0),
    };
    Some(PfcEvent {
        time_ns: now_ns,
        kind,
        port,
        prio,
        flags: 0,
        quanta,
        _pad2: 0,
        sent_ns: 0,
    })
}

/// How the data plane's packet path sends a PFC frame: the packet that
/// caused the decision is redirected with `BPF_F_BROADCAST` to a devmap of
/// every model port, carrying this record as XDP metadata; each copy's
/// devmap program asks [`pfc_copy_fate`] what to do with it. Metadata, not a
/// per-CPU scratch: devmap programs run at the flush, after later packets
/// of the same batch.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcMeta {
    /// When the model decided (for the latency record).
    pub time_ns: u64,
    /// [`PFC_META_MAGIC`]: a copy without it is not ours and is dropped.
    pub magic: u32,
    /// Port (id) out of which the PFC frame goes: the packet's ingress.
    pub pfc_port: u16,
    /// Port (id) the packet itself leaves by; [`PFC_NO_DATA`] when the
    /// packet is dropped and only the PFC frame goes out.
    pub data_port: u16,
    /// Priority paused / resumed.
    pub prio: u8,
    /// [`PFC_EV_XOFF`], [`PFC_EV_REFRESH`] or [`PFC_EV_XON`].
    pub kind: u8,
    /// Pause time in quanta (0 for XON).
    pub quanta: u16,
}

/// `PfcMeta::magic` ("PFC1").
pub const PFC_META_MAGIC: u32 = 0x5046_4331;
/// `PfcMeta::data_port` of a packet that is dropped.
pub const PFC_NO_DATA: u16 = 0xffff;

/// What a broadcast copy becomes on its egress port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyFate {
    /// The packet itself, on its way out.
    Data,
    /// Rewritten into the 802.1Qbb frame of the decision.
    Pfc,
    /// Any other port's copy.
    Drop,
}

/// The fate of a broadcast copy leaving by port `egress` (id).
#[inline(always)]
pub fn pfc_copy_fate(m: &PfcMeta, egress: u16) -> CopyFate {
    if m.magic != PFC_META_MAGIC {
        CopyFate::Drop
    } else if egress == m.pfc_port {
        CopyFate::Pfc
    } else if egress == m.data_port {
        CopyFate::Data
    } else {
        CopyFate::Drop
    }
}

impl PfcMeta {
    /// The decision it carries, as sent at `sent_ns` (the record the data
    /// plane leaves for the controller).
    #[inline(always)]
    pub fn sent_event(&self, sent_ns: u64) -> PfcEvent {
        PfcEvent {
            time_ns: self.time_ns,
            kind: self.kind,
            port: self.pfc_port as u8,
            prio: self.prio,
            flags: PFC_EV_SENT,
            quanta: self.quanta,
            _pad2: 0,
            sent_ns,
        }
    }

    /// The metadata of an event, for a packet leaving by `data_port`.
    #[inline(always)]
    pub fn of(ev: &PfcEvent, data_port: u16) -> PfcMeta {
        PfcMeta {
            time_ns: ev.time_ns,
            magic: PFC_META_MAGIC,
            pfc_port: u16::from(ev.port),
            data_port,
            prio: ev.prio & 7,
            kind: ev.kind,
            quanta: ev.quanta,
        }
    }
}

/// Where a PFC decision is sent from (`PFC_PATH` entry 0, written by the
/// controller): the data plane itself, or the controller's AF_PACKET
/// sender through the ring buffer (the fallback, where the kernel lacks
/// devmap programs or live-frame test runs).
pub const PFC_PATH_USERSPACE: u32 = 0;
pub const PFC_PATH_DATAPLANE: u32 = 1;

/// Lossless-stage counters per port (per-CPU array indexed by port id):
/// ECN marks, WRED drops and buffer drops count on the egress port's
/// queues; PFC decisions on the ingress port.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LosslessCounters {
    pub ecn_marked: [u64; NUM_TC],
    pub wred_drop: [u64; NUM_TC],
    /// Lossy PG: shared buffer full.
    pub drop_shared_full: [u64; NUM_TC],
    /// Lossless PG: headroom exhausted (a lossless drop).
    pub drop_headroom: [u64; NUM_TC],
    /// XOFF / refresh / XON decisions per priority (frames the controller
    /// is asked to send).
    pub pfc_xoff: [u64; NUM_TC],
    pub pfc_refresh: [u64; NUM_TC],
    pub pfc_xon: [u64; NUM_TC],
    /// Packets dropped by the PFC watchdog (action drop during a storm).
    pub wd_drop: [u64; NUM_TC],
    /// pfcwd queue statistics while in storm (action drop or forward;
    /// `watchdog::storm_fate`): packets of the stormed egress queue sent
    /// (TX OK; `wd_drop` is TX DROP), and packets received on the stormed
    /// (port, priority) passed on or dropped (RX OK / RX DROP).
    pub wd_tx_ok: [u64; NUM_TC],
    pub wd_rx_ok: [u64; NUM_TC],
    pub wd_rx_drop: [u64; NUM_TC],
    /// Packets not accounted because another CPU held the model's lock past
    /// the spin bound, or the ring buffer was full for a PFC event.
    pub model_busy: u64,
    pub event_lost: u64,
    /// Timer steps skipped because the model's lock was busy (the next
    /// tick catches up: draining is computed from elapsed time).
    pub tick_busy: u64,
    /// `model_busy` by cause ([`Busy`]).
    pub busy_queue: u64,
    pub busy_pg: u64,
    pub busy_stage: u64,
    /// PFC frames the data plane wrote and handed to this port (its own
    /// emitters: devmap program, timer program).
    pub pfc_sent_dp: u64,
    /// PFC frames the data plane decided but could not send itself (frame
    /// not resizable, redirect refused, timer queue full); the first two
    /// go to the controller's fallback sender instead.
    pub pfc_send_fail: u64,
}

/// Why the data plane's packet path could not account in the model
/// (each counts in `model_busy` and in its own counter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Busy {
    /// An egress queue's lock was not taken within the spin bound (the
    /// packet is forwarded unaccounted).
    Queue,
    /// An ingress PG's lock was not taken: at admission (the packet is
    /// forwarded unaccounted) or for a release (the bytes stay charged).
    Pg,
    /// The egress stage's tail call failed (not installed).
    Stage,
}

impl LosslessCounters {
    pub const ZERO: LosslessCounters = LosslessCounters {
        ecn_marked: [0; NUM_TC],
        wred_drop: [0; NUM_TC],
        drop_shared_full: [0; NUM_TC],
        drop_headroom: [0; NUM_TC],
        pfc_xoff: [0; NUM_TC],
        pfc_refresh: [0; NUM_TC],
        pfc_xon: [0; NUM_TC],
        wd_drop: [0; NUM_TC],
        wd_tx_ok: [0; NUM_TC],
        wd_rx_ok: [0; NUM_TC],
        wd_rx_drop: [0; NUM_TC],
        model_busy: 0,
        event_lost: 0,
        tick_busy: 0,
        busy_queue: 0,
        busy_pg: 0,
        busy_stage: 0,
        pfc_sent_dp: 0,
        pfc_send_fail: 0,
    };

    pub fn accumulate(&mut self, o: &LosslessCounters) {
        let mut i = 0;
        while i < NUM_TC {
            self.ecn_marked[i] += o.ecn_marked[i];
            self.wred_drop[i] += o.wred_drop[i];
            self.drop_shared_full[i] += o.drop_shared_full[i];
            self.drop_headroom[i] += o.drop_headroom[i];
            self.pfc_xoff[i] += o.pfc_xoff[i];
            self.pfc_refresh[i] += o.pfc_refresh[i];
            self.pfc_xon[i] += o.pfc_xon[i];
            self.wd_drop[i] += o.wd_drop[i];
            self.wd_tx_ok[i] += o.wd_tx_ok[i];
            self.wd_rx_ok[i] += o.wd_rx_ok[i];
            self.wd_rx_drop[i] += o.wd_rx_drop[i];
            i += 1;
        }
        self.model_busy += o.model_busy;
        self.event_lost += o.event_lost;
        self.tick_busy += o.tick_busy;
        self.busy_queue += o.busy_queue;
        self.busy_pg += o.busy_pg;
        self.busy_stage += o.busy_stage;
        self.pfc_sent_dp += o.pfc_sent_dp;
        self.pfc_send_fail += o.pfc_send_fail;
    }

    /// Counts one packet-path event the model could not account.
    #[inline(always)]
    pub fn count_busy(&mut self, why: Busy) {
        self.model_busy += 1;
        match why {
            Busy::Queue => self.busy_queue += 1,
            Busy::Pg => self.busy_pg += 1,
            Busy::Stage => self.busy_stage += 1,
        }
    }

    /// Counts a packet's `storm_fate` against its ingress (`rx`) or egress
    /// (`tx`) port's counters.
    #[inline(always)]
    pub fn count_storm(&mut self, tc: usize, rx: bool, c: crate::lossless::WdCount) {
        use crate::lossless::WdCount;
        let t = tc & (NUM_TC - 1);
        match (rx, c) {
            (_, WdCount::None) => {}
            (true, WdCount::Ok) => self.wd_rx_ok[t] += 1,
            (true, WdCount::Drop) => self.wd_rx_drop[t] += 1,
            (false, WdCount::Ok) => self.wd_tx_ok[t] += 1,
            (false, WdCount::Drop) => self.wd_drop[t] += 1,
        }
    }

    /// Counts a PFC action for `prio`.
    #[inline(always)]
    pub fn count_pfc(&mut self, prio: usize, a: PfcAction) {
        let p = prio & (NUM_TC - 1);
        match a {
            PfcAction::None => {}
            PfcAction::SendXoff { .. } => self.pfc_xoff[p] += 1,
            PfcAction::SendRefresh { .. } => self.pfc_refresh[p] += 1,
            PfcAction::SendXon => self.pfc_xon[p] += 1,
        }
    }
}

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
const _: () = assert!(core::mem::size_of::<PfcEvent>() == 24);
const _: () = assert!(core::mem::size_of::<PauseStat>() == 32);
const _: () = assert!(core::mem::size_of::<WdStat>() == 64);
const _: () = assert!(core::mem::size_of::<LosslessCounters>() == 8 * (11 * NUM_TC + 8));
const _: () = assert!(core::mem::size_of::<PfcMeta>() == 24);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), integer fields and arrays of them, no padding
    // (asserted above).
    unsafe impl aya::Pod for super::TcRow {}
    unsafe impl aya::Pod for super::PortBuffer {}
    unsafe impl aya::Pod for super::PfcEvent {}
    unsafe impl aya::Pod for super::LosslessCounters {}
    unsafe impl aya::Pod for super::PauseStat {}
    unsafe impl aya::Pod for super::WdStat {}
}
