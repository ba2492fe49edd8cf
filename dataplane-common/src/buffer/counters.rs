//! What the lossless stage counts: the time a queue spent paused by
//! received PFC, and the per-port lossless counters (ECN, WRED, buffer
//! drops, PFC decisions, watchdog, model and sender health).

use super::NUM_TC;
use crate::lossless::PfcAction;

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

/// The paused runs of a queue by received PFC, per (port, priority):
/// pfcstat --history's RX Pause Transitions and its most recent pause. A
/// run starts when a received time pauses a queue that was not paused
/// (SONiC's unpaused-to-paused transition) and lasts while later times
/// keep it paused, until an XON, the last time's expiry or a watchdog
/// storm ends it. In a map of its own (`PAUSE_RUNS`) beside `PAUSE_STATS`,
/// whose pinned layout a data plane of an earlier build keeps.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PauseRuns {
    /// Runs started.
    pub started: u64,
    /// Start of the current (or last) run.
    pub start_ns: u64,
}

impl PauseRuns {
    pub const ZERO: PauseRuns = PauseRuns {
        started: 0,
        start_ns: 0,
    };

    /// A received time at `now_ns` on a queue paused until `was_until_ns`
    /// before it and until `until_ns` after it: a run starts when it was
    /// not paused and now is.
    ///
    /// Without a branch (BPF has no conditional set: a comparison is a
    /// jump), so the verifier does not walk the PFC reception callback's
    /// paths once per outcome; the times are ktime ns, below 2^63, so the
    /// sign bit of a difference compares them.
    #[inline(always)]
    pub fn note(&mut self, now_ns: u64, was_until_ns: u64, until_ns: u64) {
        // 1 when was_until > now (paused before), when until > now (after)
        let was_paused = now_ns.wrapping_sub(was_until_ns) >> 63;
        let paused = now_ns.wrapping_sub(until_ns) >> 63;
        let starts = (was_paused ^ 1) & paused;
        let mask = 0u64.wrapping_sub(starts);
        self.started += starts;
        self.start_ns = (self.start_ns & !mask) | (now_ns & mask);
    }

    /// Runs that ended by `now_ns` (paused-to-unpaused transitions, what
    /// pfcstat shows as RX Pause Transitions, SAI's ON2OFF): the last run
    /// has not while the queue is paused (`paused_until_ns` > `now_ns`).
    pub fn ended(&self, paused_until_ns: u64, now_ns: u64) -> u64 {
        let running = self.started > 0 && paused_until_ns > now_ns;
        self.started - u64::from(running)
    }

    /// The most recent run's length up to `now_ns` (it ends at
    /// `paused_until_ns` when that is earlier); `None` before the first.
    pub fn recent_ns(&self, paused_until_ns: u64, now_ns: u64) -> Option<u64> {
        (self.started > 0).then(|| paused_until_ns.min(now_ns).saturating_sub(self.start_ns))
    }
}

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

const _: () = assert!(core::mem::size_of::<PauseStat>() == 32);
const _: () = assert!(core::mem::size_of::<PauseRuns>() == 16);
const _: () = assert!(core::mem::size_of::<LosslessCounters>() == 8 * (11 * NUM_TC + 8));

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), integer fields and arrays of them, no padding
    // (asserted above).
    unsafe impl aya::Pod for super::LosslessCounters {}
    unsafe impl aya::Pod for super::PauseStat {}
    unsafe impl aya::Pod for super::PauseRuns {}
}
