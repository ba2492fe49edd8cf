//! PFC generation per (ingress port, lossless priority): when to send XOFF,
//! refresh it, and XON.

use super::*;

/// Pause time we send: 0xffff quanta, what switches commonly send. Its
/// duration shrinks with speed (335.5 us at 100G, 41.9 us at 800G, 3.36 ms
/// at 10G), and we refresh at half of it, so the controller's emit latency
/// must stay below half the duration (21 us at 800G).
pub const PFC_QUANTA: u16 = 0xffff;
/// Floor of the refresh interval, so a port of unknown speed (0) does not
/// refresh on every call.
pub const MIN_REFRESH_NS: u64 = 1_000;

/// Quanta to put in our XOFF/refresh frames for a port of `speed_mbps`: always
/// [`PFC_QUANTA`] (see there).
#[inline(always)]
pub fn pause_quanta(_speed_mbps: u32) -> u16 {
    PFC_QUANTA
}

/// Refresh interval of a pause of `quanta` at `speed_mbps`: half its
/// duration, at least [`MIN_REFRESH_NS`].
#[inline(always)]
pub fn refresh_interval_ns(quanta: u16, speed_mbps: u32) -> u64 {
    let half = quanta_to_nanos(quanta, u64::from(speed_mbps)) / 2;
    if half < MIN_REFRESH_NS {
        MIN_REFRESH_NS
    } else {
        half
    }
}

/// Where a lossless PG stands against its threshold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PfcCondition {
    /// Uses headroom, or shared use reached the threshold: pause the peer.
    Xoff,
    /// No headroom use and shared use + xon_offset <= threshold: resume.
    Xon,
    /// In the hysteresis band: keep the current state.
    Hold,
}

/// HPCC's rule: XOFF when the PG uses headroom or its shared use reaches
/// `threshold`; XON when headroom use is 0 and shared use + `xon_offset` is
/// at or under it. XOFF wins when both hold (only with `xon_offset == 0`).
#[inline(always)]
pub fn pfc_condition(pg: &PgState, threshold: u64, xon_offset: u32) -> PfcCondition {
    let shared = u64::from(pg.shared_used);
    if pg.headroom_used > 0 || shared >= threshold {
        PfcCondition::Xoff
    } else if shared + u64::from(xon_offset) <= threshold {
        PfcCondition::Xon
    } else {
        PfcCondition::Hold
    }
}

/// What to send to the peer on the ingress port for this priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PfcAction {
    None,
    /// First pause.
    SendXoff {
        quanta: u16,
    },
    /// Pause again before the previous one expires.
    SendRefresh {
        quanta: u16,
    },
    /// Resume (pause time 0).
    SendXon,
}

/// PFC generation state of one (ingress port, lossless priority), a map
/// value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcTxState {
    /// Nonzero while the peer is paused (we sent XOFF and no XON since).
    pub xoff: u8,
    pub _pad: [u8; 7],
    /// When the last XOFF or refresh was sent.
    pub sent_ns: u64,
    /// When the next refresh is due.
    pub refresh_due_ns: u64,
}

impl PfcTxState {
    pub const ZERO: PfcTxState = PfcTxState {
        xoff: 0,
        _pad: [0; 7],
        sent_ns: 0,
        refresh_due_ns: 0,
    };

    /// Advances the state machine with the PG's condition at `now_ns`.
    /// Off: `Xoff` sends XOFF. On: `Xon` sends XON; otherwise a refresh is
    /// sent once `now_ns` reaches the due time (half the pause duration after
    /// the last one). The caller must call at least once per refresh interval
    /// while paused (on arrivals, on releases, and from a timer), or the
    /// peer's pause lapses before the refresh.
    #[inline(always)]
    pub fn step(&mut self, now_ns: u64, cond: PfcCondition, speed_mbps: u32) -> PfcAction {
        let quanta = pause_quanta(speed_mbps);
        if self.xoff == 0 {
            if cond == PfcCondition::Xoff {
                self.xoff = 1;
                self.sent_ns = now_ns;
                self.refresh_due_ns =
                    now_ns.saturating_add(refresh_interval_ns(quanta, speed_mbps));
                return PfcAction::SendXoff { quanta };
            }
            return PfcAction::None;
        }
        if cond == PfcCondition::Xon {
            self.xoff = 0;
            return PfcAction::SendXon;
        }
        if now_ns >= self.refresh_due_ns {
            self.sent_ns = now_ns;
            self.refresh_due_ns = now_ns.saturating_add(refresh_interval_ns(quanta, speed_mbps));
            return PfcAction::SendRefresh { quanta };
        }
        PfcAction::None
    }
}

/// Threshold, condition and step for one PG in one call; `None` for a lossy
/// PG.
#[inline(always)]
pub fn pfc_evaluate(
    st: &mut PfcTxState,
    pg: &PgState,
    prof: &BufferProfile,
    pool: &SharedPool,
    now_ns: u64,
    speed_mbps: u32,
) -> PfcAction {
    if prof.lossless == 0 {
        return PfcAction::None;
    }
    let cond = pfc_condition(pg, shared_threshold(prof, pool), prof.xon_offset);
    st.step(now_ns, cond, speed_mbps)
}
