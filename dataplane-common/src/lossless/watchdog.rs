//! The PFC watchdog (SONiC pfcwd): storm detection and restoration per (port,
//! lossless priority), and what a storm action does to a packet.
//!
//! SONiC's semantics (sonic-swss `pfc_detect_*.lua`, `pfc_restore.lua`,
//! `pfcactionhandler.cpp`), kept here:
//! * detection: every poll interval of the detection time saw the queue
//!   paused, holding packets, transmitting nothing while PFC frames for its
//!   priority arrived. Unlike SONiC, the run is measured between the PFC
//!   frames' arrival times, not by charging the configured poll interval
//!   per poll, so neither bunched polls nor a storm shorter than the
//!   detection time straddling polls can trigger it;
//! * drop / forward: restored once no PFC frame arrived for the restoration
//!   time, counted on the raw receive counter (SONiC's restore criterion;
//!   never on a count the action itself hides, the storm/restore loop of
//!   sonic-buildimage#29203 when every lossless priority is stormed);
//! * alert: nothing changes in the data path, and the storm is over with
//!   the first poll interval that is not storm-like (SONiC's detect script
//!   publishes the restore for alert queues; its restore script skips
//!   them);
//! * drop discards the queue's packets and what the stormed peer sends on
//!   the priority (SONiC's egress and ingress drop rules) and both it and
//!   forward stop honouring and sending PFC on the priority of that port
//!   (SONiC clears the priority from the port's PFC mask).

/// [`PfcWdConfig::action`] values (SONiC pfcwd actions). The caller applies
/// them while the queue is in storm: drop discards the queue's packets and
/// ignores PFC for it, forward ignores PFC and keeps sending, alert only
/// reports.
pub const WD_ACTION_DROP: u8 = 0;
pub const WD_ACTION_FORWARD: u8 = 1;
pub const WD_ACTION_ALERT: u8 = 2;
/// SONiC pfcwd defaults.
pub const WD_DEFAULT_DETECTION_MS: u32 = 200;
pub const WD_DEFAULT_RESTORATION_MS: u32 = 200;
pub const WD_DEFAULT_POLL_MS: u32 = 200;

/// Watchdog configuration of a port (SONiC PFC_WD).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcWdConfig {
    pub detection_time_ms: u32,
    pub restoration_time_ms: u32,
    /// [`WD_ACTION_DROP`], [`WD_ACTION_FORWARD`] or [`WD_ACTION_ALERT`].
    pub action: u8,
    pub _pad: [u8; 3],
}

impl PfcWdConfig {
    pub const DEFAULT: PfcWdConfig = PfcWdConfig {
        detection_time_ms: WD_DEFAULT_DETECTION_MS,
        restoration_time_ms: WD_DEFAULT_RESTORATION_MS,
        action: WD_ACTION_DROP,
        _pad: [0; 3],
    };
}

/// The storm action in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WdAction {
    Drop,
    Forward,
    Alert,
}

/// What one poll observed for a (port, priority) since the previous poll.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WdObservation {
    /// The queue is paused now.
    pub paused: bool,
    /// The queue holds bytes now.
    pub has_bytes: bool,
    /// Bytes the queue transmitted since the previous poll.
    pub tx_bytes_delta: u64,
    /// PFC frames received for the priority since the previous poll that
    /// paused it (XOFF, a nonzero time: an XON storm neither pauses nor
    /// keeps a storm alive, sonic-swss#4581). Must be the raw RX count (the parser counts every PFC frame before any
    /// watchdog action is applied), never a count of frames honoured: with
    /// action drop/forward the port ignores PFC, and a count of honoured
    /// frames would stop, restore the queue while the storm goes on, and
    /// loop storm/restore.
    pub rx_pfc_delta: u64,
    /// When the latest PFC frame the queue honoured arrived (the data
    /// plane's `PauseStat::start_ns`, same clock as the polls): the run of
    /// a storm is measured between frames, so a storm shorter than the
    /// detection time never triggers, wherever it falls between polls.
    pub last_pfc_ns: u64,
}

/// Watchdog events.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WdEvent {
    None,
    StormDetected,
    StormRestored,
}

/// Watchdog state of one (port, lossless priority).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcWd {
    /// The latest PFC frame seen at the first poll of the current run of
    /// storm-like intervals.
    pub streak_start_ns: u64,
    /// Time of the previous poll.
    pub last_poll_ns: u64,
    /// Time of the last poll that saw PFC frames.
    pub last_pfc_ns: u64,
    /// Nonzero while in storm.
    pub storm: u8,
    /// Nonzero once a first poll set `last_poll_ns`.
    pub primed: u8,
    /// Nonzero while a storm-like run is in progress.
    pub streak: u8,
    pub _pad: [u8; 5],
}

impl PfcWd {
    pub const ZERO: PfcWd = PfcWd {
        streak_start_ns: 0,
        last_poll_ns: 0,
        last_pfc_ns: 0,
        storm: 0,
        primed: 0,
        streak: 0,
        _pad: [0; 5],
    };

    /// The action in force, `None` when not in storm.
    #[inline(always)]
    pub fn action(&self, cfg: &PfcWdConfig) -> Option<WdAction> {
        if self.storm == 0 {
            return None;
        }
        Some(match cfg.action {
            WD_ACTION_FORWARD => WdAction::Forward,
            WD_ACTION_ALERT => WdAction::Alert,
            _ => WdAction::Drop,
        })
    }

    /// One poll at `now_ns` with what was observed since the previous poll.
    ///
    /// An interval is storm-like when, at its end, the queue is paused and
    /// holds bytes, and during it the queue transmitted nothing and PFC
    /// frames kept arriving. The storm is detected when a run of
    /// storm-like intervals holds PFC frames spanning the whole detection
    /// time: from the latest frame seen at the run's first poll to the
    /// latest frame now. Frames mark the storm's extent, so a storm shorter
    /// than the detection time never triggers, however it falls between
    /// polls (SONiC's poll counting can fire on a storm up to two polls
    /// shorter), and polls bunched by jitter cannot add up to a false
    /// alarm. Detection comes the detection time to that plus one poll
    /// interval after the storm starts. One interval that is not
    /// storm-like (a single byte transmitted, no PFC) ends the run.
    ///
    /// In storm with action drop or forward, the queue is restored once no
    /// PFC frame has been seen for the restoration time (counted from the
    /// last poll that saw one, so at least that long after the last frame);
    /// with action alert, at the first interval that is not storm-like
    /// (SONiC). The first poll only records the time; a poll older than the
    /// previous one is ignored.
    #[inline(always)]
    pub fn poll(&mut self, cfg: &PfcWdConfig, now_ns: u64, obs: &WdObservation) -> WdEvent {
        if self.primed == 0 {
            self.primed = 1;
            self.last_poll_ns = now_ns;
            self.last_pfc_ns = now_ns;
            return WdEvent::None;
        }
        if now_ns < self.last_poll_ns {
            return WdEvent::None;
        }
        self.last_poll_ns = now_ns;
        if obs.rx_pfc_delta > 0 {
            self.last_pfc_ns = now_ns;
        }
        let storm_like =
            obs.paused && obs.has_bytes && obs.tx_bytes_delta == 0 && obs.rx_pfc_delta > 0;
        if self.storm != 0 {
            let over = if cfg.action == WD_ACTION_ALERT {
                // alert changes nothing, so the storm is visible as such:
                // over with the first interval that is not storm-like
                !storm_like
            } else {
                let restoration = u64::from(cfg.restoration_time_ms) * 1_000_000;
                now_ns - self.last_pfc_ns >= restoration
            };
            if over {
                self.storm = 0;
                self.streak = 0;
                return WdEvent::StormRestored;
            }
            return WdEvent::None;
        }
        if !storm_like {
            self.streak = 0;
            return WdEvent::None;
        }
        if self.streak == 0 {
            self.streak = 1;
            self.streak_start_ns = obs.last_pfc_ns;
        }
        let detection = u64::from(cfg.detection_time_ms) * 1_000_000;
        if obs.last_pfc_ns >= self.streak_start_ns
            && obs.last_pfc_ns - self.streak_start_ns >= detection
        {
            self.storm = 1;
            self.streak = 0;
            return WdEvent::StormDetected;
        }
        WdEvent::None
    }
}

/// PFC watchdog state of one (port, priority), written by the controller's
/// watchdog into a map so `stats`, metrics and `show pfcwd stats` can show
/// it.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WdStat {
    pub storm_detected: u64,
    pub storm_restored: u64,
    /// 1 while a storm is in force.
    pub in_storm: u64,
    /// 1 when the watchdog watches this queue (a lossless priority of a
    /// port in the model, `[pfcwd]` on).
    pub watched: u64,
    /// The data plane's storm counters (`LosslessCounters::wd_tx_ok`,
    /// `wd_drop`, `wd_rx_ok`, `wd_rx_drop`) when the last storm was
    /// detected: the last storm's counts are the counters minus these
    /// (SONiC's TX/RX LAST OK/DROP).
    pub base_tx_ok: u64,
    pub base_tx_drop: u64,
    pub base_rx_ok: u64,
    pub base_rx_drop: u64,
}

impl WdStat {
    pub const ZERO: WdStat = WdStat {
        storm_detected: 0,
        storm_restored: 0,
        in_storm: 0,
        watched: 0,
        base_tx_ok: 0,
        base_tx_drop: 0,
        base_rx_ok: 0,
        base_rx_drop: 0,
    };
}

/// What a packet counts against a stormed queue (SONiC's pfcwd queue
/// statistics: TX for the egress queue, RX for the ingress priority group).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WdCount {
    /// The queue is not in a storm with action drop or forward.
    None,
    /// Passed while in storm (TX OK / RX OK).
    Ok,
    /// Dropped by the storm action (TX DROP / RX DROP).
    Drop,
}

/// What the packet becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StormVerdict {
    /// Through the buffer model as usual.
    Model,
    /// Sent without the model (its egress queue is stormed, action
    /// forward: the pause is not honoured).
    Unmodelled,
    /// Dropped by the watchdog.
    Drop,
}

/// The watchdog's part in the fate of one packet of priority `tc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StormFate {
    pub verdict: StormVerdict,
    /// Against the ingress port's (port, priority).
    pub rx: WdCount,
    /// Against the egress port's (port, priority).
    pub tx: WdCount,
    /// The ingress priority group keeps its lossless treatment (PFC sent
    /// to the peer, headroom); false while that (port, priority) is in a
    /// drop or forward storm (SONiC clears it from the port's PFC mask).
    pub lossless: bool,
}

/// The storm actions in force on the packet's ingress and egress (port,
/// priority) (`PortBuffer::storm` values: `STORM_NONE`, `STORM_DROP`,
/// `STORM_FORWARD`) -> its fate. Drop on the ingress side drops before the
/// egress queue is reached (nothing counts there); drop on the egress side
/// drops what reaches the queue; forward passes and counts.
#[inline(always)]
pub fn storm_fate(ingress_storm: u8, egress_storm: u8) -> StormFate {
    use crate::buffer::{STORM_DROP, STORM_FORWARD};
    let lossless = ingress_storm != STORM_DROP && ingress_storm != STORM_FORWARD;
    if ingress_storm == STORM_DROP {
        return StormFate {
            verdict: StormVerdict::Drop,
            rx: WdCount::Drop,
            tx: WdCount::None,
            lossless,
        };
    }
    let rx = if ingress_storm == STORM_FORWARD {
        WdCount::Ok
    } else {
        WdCount::None
    };
    let (verdict, tx) = if egress_storm == STORM_DROP {
        (StormVerdict::Drop, WdCount::Drop)
    } else if egress_storm == STORM_FORWARD {
        (StormVerdict::Unmodelled, WdCount::Ok)
    } else {
        (StormVerdict::Model, WdCount::None)
    };
    StormFate {
        verdict,
        rx,
        tx,
        lossless,
    }
}
