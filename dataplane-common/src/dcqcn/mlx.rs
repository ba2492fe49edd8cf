//! The reaction point of [`PROFILE_MLX`]: DCQCN as the HPCC simulator's
//! "Mlx" mode (`rdma-hw.cc`) and NVIDIA NICs run it.
//!
//! ```text
//! CNP:            set "CNP arrived" for the alpha timer and for the decrease timer
//!                 (first CNP: attach the limiter, alpha = initial_alpha, RT = RC,
//!                  start the alpha timer and the decrease timer; no cut yet)
//! alpha timer K:  alpha = (1-g) alpha + g if a CNP arrived in the period, else (1-g) alpha
//! decrease D:     if a CNP arrived in the period:
//!                   RT = RC unless no increase event happened since the last cut
//!                   (HPCC rdma-hw.cc CheckRateDecreaseMlx, ClampTargetRate off)
//!                   RC = max(RC (1 - alpha/2), min_rate)
//!                   increase timer restarts (t = 0)
//! increase T:     t < F fast recovery   RC = (RT + RC) / 2
//!                 t = F additive        RT += Rai;  RC = (RT + RC) / 2
//!                 t > F hyper           RT += Rhai; RC = (RT + RC) / 2      then t += 1
//! ```
//!
//! No byte counter, and hyper increase adds a constant Rhai (not `i x
//! Rhai`). The limiter stays attached once a CNP arrived (as in HPCC): an
//! unthrottled rate is RC = RT = line rate with the timers running. The
//! timers are caught up lazily at each call, in time order (alpha, then
//! decrease, then increase on a tie, as HPCC schedules the first decrease
//! 1 ns after the alpha update), up to [`MAX_CATCHUP`] periods of each.

use super::*;

/// [`DcqcnParams::mlx`]: alpha timer (HPCC `alpha_resume_interval` 1 us).
pub const MLX_ALPHA_UPDATE_PERIOD_NS: u64 = 1_000;
/// [`DcqcnParams::mlx`]: rate-decrease period (HPCC `rate_decrease_interval`
/// 4 us; NVIDIA `rate_reduce_monitor_period`).
pub const MLX_RATE_DECREASE_PERIOD_NS: u64 = 4_000;
/// [`DcqcnParams::mlx`]: rate-increase timer (HPCC `rp_timer` 300 us).
pub const MLX_RATE_INCREASE_PERIOD_NS: u64 = 300_000;
/// [`DcqcnParams::mlx`]: the notification point's CNP interval (1 us).
pub const MLX_CNP_INTERVAL_NS: u64 = 1_000;
/// [`DcqcnParams::mlx`]: F (HPCC `fast_recovery_times` 1).
pub const MLX_FAST_RECOVERY_EVENTS: u32 = 1;
/// [`DcqcnParams::mlx`]: Rai = line / this (5 Mb/s per 25 Gb/s).
pub const MLX_RAI_DIVISOR: u64 = 5_000;
/// [`DcqcnParams::mlx`]: Rhai = line / this (50 Mb/s per 25 Gb/s).
pub const MLX_RHAI_DIVISOR: u64 = 500;
/// [`DcqcnParams::mlx`]: min rate (HPCC `min_rate` 1 Gb/s).
pub const MLX_MIN_RATE_BPS: u64 = 1_000_000_000;

impl DcqcnParams {
    /// The HPCC simulator's "Mlx" DCQCN ([`PROFILE_MLX`]) for a NIC of
    /// `line_rate_bps` (at least 1), as its `run.py` configures it: alpha
    /// timer K = 1 us, rate-decrease period 4 us, increase timer T = 300 us,
    /// F = 1, Rai 5 Mb/s and Rhai 50 Mb/s per 25 Gb/s of line rate, min
    /// rate 1 Gb/s (at most the line rate), g = 1/256, no byte counter.
    /// The notification point's CNP interval is 1 us: HPCC echoes CE on
    /// ACKs, so the alpha timer sees a CNP in every 1 us period while
    /// marking lasts, which one CNP per QP per 1 us reproduces.
    pub const fn mlx(line_rate_bps: u64) -> Self {
        let l = if line_rate_bps == 0 { 1 } else { line_rate_bps };
        let mut p = DcqcnParams::new(l);
        p.profile = PROFILE_MLX;
        p.alpha_update_period_ns = MLX_ALPHA_UPDATE_PERIOD_NS;
        p.rate_decrease_period_ns = MLX_RATE_DECREASE_PERIOD_NS;
        p.rate_increase_period_ns = MLX_RATE_INCREASE_PERIOD_NS;
        p.cnp_interval_ns = MLX_CNP_INTERVAL_NS;
        p.fast_recovery_events = MLX_FAST_RECOVERY_EVENTS;
        p.byte_counter_bytes = 0;
        p.rai_bps = at_least_one(l / MLX_RAI_DIVISOR);
        p.rhai_bps = at_least_one(l / MLX_RHAI_DIVISOR);
        p.min_rate_bps = MLX_MIN_RATE_BPS;
        p
    }

    /// [`DcqcnParams::mlx`] of a [`REFERENCE_LINE_RATE_BPS`] (100 Gb/s)
    /// NIC slowed down to `line_rate_bps` (at least 1), as
    /// [`DcqcnParams::scaled`] slows down the paper profile: with `k = 100G
    /// / line_rate_bps`, every rate is the 100G value divided by k (Rai,
    /// Rhai, and the minimum rate: 1 Gb/s at 100G is 1 % of the line rate),
    /// every timer the 100G value multiplied by k (alpha 1 us, decrease
    /// 4 us, increase 300 us, CNP interval 1 us). At 20 Mb/s: 5 ms, 20 ms,
    /// 1.5 s, 5 ms; Rai 4 kb/s, Rhai 40 kb/s, min rate 200 kb/s.
    pub const fn mlx_scaled(line_rate_bps: u64) -> Self {
        let l = if line_rate_bps == 0 { 1 } else { line_rate_bps };
        let mut p = dilated(
            DcqcnParams::mlx(l),
            &DcqcnParams::mlx(REFERENCE_LINE_RATE_BPS),
            l,
        );
        p.min_rate_bps = at_least_one(l / (REFERENCE_LINE_RATE_BPS / MLX_MIN_RATE_BPS));
        p
    }
}

/// One elapsed alpha period.
#[inline(always)]
fn alpha_event(st: &mut RpState, p: &DcqcnParams) {
    st.alpha = if st.cnp_alpha != 0 {
        alpha_on_cnp(st.alpha, p.g)
    } else {
        alpha_decay(st.alpha, p.g)
    };
    st.cnp_alpha = 0;
}

/// One rate-decrease check at `at_ns`.
#[inline(always)]
fn decrease_event(st: &mut RpState, p: &DcqcnParams, at_ns: u64) {
    if st.cnp_decrease == 0 {
        return;
    }
    // HPCC's CheckRateDecreaseMlx with ClampTargetRate off (run.py:
    // CLAMP_TARGET_RATE 0): `if (!m_EcnClampTgtRate){ if
    // (q->mlx.m_rpTimeStage == 0) clamp = false; } if (clamp)
    // q->mlx.m_targetRate = q->m_rate;` -- RT = RC unless no increase event
    // (m_rpTimeStage, our timer_events) happened since the last cut. (The
    // issue's "clamped only when no increase event happened" is the
    // reverse of this code.)
    if st.timer_events != 0 {
        st.rt_bps = st.rc_bps;
    }
    let cut = st.rc_bps - rate_cut(st.rc_bps, st.alpha);
    let min = p.min_rate();
    st.rc_bps = if cut < min { min } else { cut };
    if st.rt_bps < st.rc_bps {
        st.rt_bps = st.rc_bps;
    }
    st.timer_events = 0;
    st.stage = STAGE_NONE;
    st.cnp_decrease = 0;
    st.increase_due_ns = if p.rate_increase_period_ns == 0 {
        u64::MAX
    } else {
        at_ns.saturating_add(p.rate_increase_period_ns)
    };
}

/// One rate-increase timer event.
#[inline(always)]
fn increase_event(st: &mut RpState, p: &DcqcnParams) {
    let line = p.line_rate_bps;
    let f = p.fast_recovery_events;
    let t = st.timer_events;
    let stage = if t < f {
        STAGE_FAST_RECOVERY
    } else if t == f {
        STAGE_ADDITIVE
    } else {
        STAGE_HYPER
    };
    let step = match stage {
        STAGE_ADDITIVE => p.rai_bps,
        STAGE_HYPER => p.rhai_bps,
        _ => 0,
    };
    let rt = st.rt_bps.saturating_add(step);
    st.rt_bps = if rt > line { line } else { rt };
    st.rc_bps = toward(st.rc_bps, st.rt_bps);
    st.stage = stage;
    st.timer_events = t.saturating_add(1);
}

/// The three timers up to `now_ns`; returns RC.
#[inline(always)]
pub(super) fn tick(st: &mut RpState, p: &DcqcnParams, now_ns: u64) -> u64 {
    clamp_rates(st, p);
    if st.limited == 0 {
        return st.rc_bps;
    }
    let (k, d, t) = (
        p.alpha_update_period_ns,
        p.rate_decrease_period_ns,
        p.rate_increase_period_ns,
    );
    let (mut na, mut nd, mut ni) = (0u32, 0u32, 0u32);
    loop {
        let a_due = if k != 0 && na < MAX_CATCHUP && now_ns >= st.alpha_due_ns {
            st.alpha_due_ns
        } else {
            u64::MAX
        };
        let d_due = if d != 0 && nd < MAX_CATCHUP && now_ns >= st.decrease_due_ns {
            st.decrease_due_ns
        } else {
            u64::MAX
        };
        let i_due = if t != 0 && ni < MAX_CATCHUP && now_ns >= st.increase_due_ns {
            st.increase_due_ns
        } else {
            u64::MAX
        };
        if a_due == u64::MAX && d_due == u64::MAX && i_due == u64::MAX {
            break;
        }
        if a_due <= d_due && a_due <= i_due {
            alpha_event(st, p);
            st.alpha_due_ns = st.alpha_due_ns.saturating_add(k);
            na += 1;
        } else if d_due <= i_due {
            let at = st.decrease_due_ns;
            st.decrease_due_ns = at.saturating_add(d);
            decrease_event(st, p, at);
            nd += 1;
        } else {
            st.increase_due_ns = st.increase_due_ns.saturating_add(t);
            increase_event(st, p);
            ni += 1;
        }
    }
    if k != 0 && now_ns >= st.alpha_due_ns {
        st.alpha_due_ns = skip_to_after(st.alpha_due_ns, now_ns, k);
    }
    if d != 0 && now_ns >= st.decrease_due_ns {
        st.decrease_due_ns = skip_to_after(st.decrease_due_ns, now_ns, d);
    }
    if t != 0 && st.increase_due_ns != u64::MAX && now_ns >= st.increase_due_ns {
        st.increase_due_ns = skip_to_after(st.increase_due_ns, now_ns, t);
    }
    st.rc_bps
}

/// A CNP at `now_ns`; returns RC (a CNP never cuts at once: the next
/// decrease check does).
#[inline(always)]
pub(super) fn on_cnp(st: &mut RpState, p: &DcqcnParams, now_ns: u64) -> u64 {
    tick(st, p, now_ns);
    st.cnps = st.cnps.wrapping_add(1);
    if st.limited == 0 {
        st.limited = 1;
        st.alpha = p.start_alpha();
        st.rt_bps = st.rc_bps;
        st.cnp_alpha = 0;
        st.cnp_decrease = 1;
        st.timer_events = 0;
        st.alpha_due_ns = now_ns.saturating_add(p.alpha_update_period_ns);
        st.decrease_due_ns = now_ns.saturating_add(p.rate_decrease_period_ns);
        // the increase timer starts at the first cut
        st.increase_due_ns = u64::MAX;
        return st.rc_bps;
    }
    st.cnp_alpha = 1;
    st.cnp_decrease = 1;
    st.rc_bps
}
