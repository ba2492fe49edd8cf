//! The PFC watchdog (SONiC pfcwd): storm detection and restoration per (port,
//! lossless priority).

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
    /// PFC frames received for the priority since the previous poll. Must be
    /// the raw RX count (the parser counts every PFC frame before any
    /// watchdog action is applied), never a count of frames honoured: with
    /// action drop/forward the port ignores PFC, and a count of honoured
    /// frames would stop, restore the queue while the storm goes on, and
    /// loop storm/restore.
    pub rx_pfc_delta: u64,
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
    /// Start of the current run of storm-like intervals.
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
    /// frames kept arriving. A run of storm-like intervals starts at the
    /// start of its first interval; the storm is detected when the run
    /// covers the whole detection time, measured in time, not polls, so
    /// polls bunched by jitter cannot add up to a false alarm, and one
    /// interval that is not storm-like (a single byte transmitted, no PFC)
    /// ends the run. Each interval must be long enough to see the peer's
    /// PFC refreshes (SONiC's 200 ms poll is far above them).
    ///
    /// In storm, the queue is restored once no PFC frame has been seen for
    /// the restoration time (counted from the last poll that saw one, so at
    /// least that long after the last frame). The first poll only records
    /// the time; a poll older than the previous one is ignored.
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
        let prev = self.last_poll_ns;
        self.last_poll_ns = now_ns;
        if obs.rx_pfc_delta > 0 {
            self.last_pfc_ns = now_ns;
        }
        if self.storm != 0 {
            let restoration = u64::from(cfg.restoration_time_ms) * 1_000_000;
            if now_ns - self.last_pfc_ns >= restoration {
                self.storm = 0;
                self.streak = 0;
                return WdEvent::StormRestored;
            }
            return WdEvent::None;
        }
        let storm_like =
            obs.paused && obs.has_bytes && obs.tx_bytes_delta == 0 && obs.rx_pfc_delta > 0;
        if !storm_like {
            self.streak = 0;
            return WdEvent::None;
        }
        if self.streak == 0 {
            self.streak = 1;
            self.streak_start_ns = prev;
        }
        let detection = u64::from(cfg.detection_time_ms) * 1_000_000;
        if now_ns - self.streak_start_ns >= detection {
            self.storm = 1;
            self.streak = 0;
            return WdEvent::StormDetected;
        }
        WdEvent::None
    }
}
