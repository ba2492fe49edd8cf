//! DCQCN, the RoCEv2 end-host congestion control (Zhu et al., SIGCOMM 2015),
//! as pure functions over plain state.
//!
//! The switch marks ECN (the congestion point, [`crate::lossless::wred`]);
//! this module is the two host halves, run by the userspace RoCEv2 host
//! emulator of the testbed:
//!
//! * **Notification point** (receiver), [`NpState`] per destination QP:
//!   [`np_on_packet`] decides whether a received packet makes the receiver
//!   send a CNP. A CE-marked packet does, unless a CNP already went to that
//!   QP less than `cnp_interval_ns` ago (at most one CNP per QP per
//!   interval, 50 us by default).
//! * **Reaction point** (sender), [`RpState`] per QP: the current rate RC,
//!   the target rate RT and the congestion estimate alpha.
//!   [`rp_on_cnp`] cuts the rate, [`rp_on_sent`] drives the byte counter,
//!   [`rp_tick`] drives the alpha and rate-increase timers, [`rp_rate`] is
//!   the rate to send at.
//! * **Pacing**: [`tx_time_ns`] (the inter-frame gap of a frame at a rate)
//!   and [`Pacer`] (next send time, with the fractional nanoseconds carried
//!   so that the long-run rate is exact).
//!
//! # The reaction point
//!
//! ```text
//! CNP:            RT = RC;  RC = max(RC (1 - alpha/2), min_rate);  alpha = (1-g) alpha + g
//!                 timer, byte counter and both event counters restart
//! alpha timer:    every K without a CNP: alpha = (1-g) alpha
//! increase event: every T (timer, counter t) and every B bytes sent (byte counter, counter b):
//!   fast recovery  max(t, b) <= F        RC = (RT + RC) / 2
//!   additive       min(t, b) <= F < max  RT += Rai;          RC = (RT + RC) / 2
//!   hyper          min(t, b) >  F        RT += i Rhai, i = min(t, b) - F;  RC = (RT + RC) / 2
//! ```
//!
//! So with one counter driving (a QP that sends little, or nothing, only
//! sees timer events) the first F events after a cut are fast recovery and
//! the rest additive; hyper increase needs both counters past F. RT never
//! exceeds the line rate, RC never exceeds RT (the averages round up, so RC
//! reaches RT exactly).
//!
//! A QP starts unthrottled at line rate with its timers idle. Its first CNP
//! attaches the rate limiter: alpha is set to `initial_alpha` (1.0, the
//! paper's initial value; NVIDIA's `initial_alpha_value` is 1023/1024) and
//! the cut above applies, so the first cut halves the rate. When increases
//! bring RC back to the line rate the limiter is released (timers idle
//! again, the next CNP is a first CNP), as NVIDIA NICs do.
//!
//! # Units
//!
//! Rates are bit/s (`u64`), byte counts bytes (`u64`), time `now_ns: u64`
//! passed in (monotonic). alpha and g are fixed point with 16 fraction
//! bits: [`ALPHA_ONE`] (65536) is 1.0. Finer than NVIDIA's 10-bit alpha so
//! that `(1-g) alpha` with g = 1/256 keeps decaying geometrically down to
//! alpha = 256/65536 instead of stalling; both updates round their step up
//! (away from the current value), so alpha reaches its fixed points 0
//! (no CNPs) and 1.0 (a CNP every time) exactly instead of stalling one
//! rounding step short. No floats anywhere, no 128-bit
//! products (`rc x alpha` is split, see [`rate_cut`]), no
//! `saturating_mul`/`checked_mul` (LLVM lowers their check to `__multi3`,
//! which BPF cannot call), no division by a value that can be zero, no
//! panic on any input: the module compiles for eBPF, although only the
//! host emulator uses it today.
//!
//! # Parameters ([`DcqcnParams::new`])
//!
//! | field                     | default at line rate L        | source |
//! |---------------------------|-------------------------------|--------|
//! | `cnp_interval_ns` N       | 50 us                         | DCQCN paper / simulator CNP interval (REFERENCE.md) |
//! | `alpha_update_period_ns` K| 55 us                         | DCQCN simulator alpha update (REFERENCE.md) |
//! | `rate_increase_period_ns` T| 55 us                        | DCQCN simulator rate-increase timer (REFERENCE.md) |
//! | `g`                       | 1/256 (256 / 65536)           | DCQCN paper; HPCC simulator EWMA_GAIN 0.00390625 |
//! | `fast_recovery_events` F  | 5                             | DCQCN paper (QCN's fast recovery) |
//! | `initial_alpha`           | 1.0                           | DCQCN paper; NVIDIA `initial_alpha_value` 1023 (/1024) |
//! | `rai_bps` Rai             | L / 1000 (40 Mb/s at 40G)     | DCQCN paper's R_AI 40 Mb/s at 40G, scaled linearly with L |
//! | `rhai_bps` Rhai           | 10 x Rai = L / 100            | the Rhai:Rai ratio of the HPCC simulator's DCQCN runs (ai 5, hai 50 Mb/s per 25G of link) and of NVIDIA NICs (`rpg_ai_rate` 5, `rpg_hai_rate` 50 Mb/s) |
//! | `byte_counter_bytes` B    | L / 4000 bytes (10 MB at 40G) | DCQCN paper's B = 10 MB at 40G, scaled with L so that at line rate it fires every 2 ms |
//! | `min_rate_bps`            | L / 100000 (1 Mb/s at 100G)   | NVIDIA `rpg_min_rate` 1 Mb/s (REFERENCE.md) at 100G, scaled with L |
//!
//! # Profiles
//!
//! The above is [`PROFILE_PAPER`] ([`DcqcnParams::new`]). [`PROFILE_MLX`]
//! ([`DcqcnParams::mlx`]) is the variant of the HPCC simulator's "Mlx"
//! mode and NVIDIA NICs: alpha updated by a 1 us timer from whether a CNP
//! arrived, CNPs coalesced into one cut per 4 us, no byte counter, F = 1,
//! a 300 us increase timer (see the `mlx` submodule). The same entry points
//! ([`rp_on_cnp`], [`rp_tick`], [`rp_on_sent`]) run either, per
//! `profile`.
//!
//! In the paper profile, not modelled: NVIDIA's `rate_reduce_monitor_period` (4 us: CNPs closer
//! than that are merged; with the NP's 50 us interval it never binds for
//! one QP), `rpg_min_dec_fac` (50 %: alpha <= 1 already caps a cut at 50 %),
//! `clamp_tgt_rate` (off by default: RT = RC on every CNP, as here) and
//! `rate_to_set_on_first_cnp` (0 by default: the first cut uses alpha).
//!
//! # Scaling a testbed ([`DcqcnParams::scaled`])
//!
//! The testbed's links run at, say, 100 Mb/s. [`DcqcnParams::scaled`] makes
//! such a link behave like a [`REFERENCE_LINE_RATE_BPS`] (100 Gb/s) NIC with
//! time slowed down by `k = 100 Gb/s / L` (1000 at 100 Mb/s): every rate is
//! the 100G value divided by k (the same fraction of the line rate), every
//! timer the 100G value multiplied by k (55 us -> 55 ms, the CNP interval
//! 50 us -> 50 ms), and every byte quantity unchanged (B stays 25 MB, and
//! the switch's marking thresholds should stay the 100G ones in bytes).
//! Then a queue fills, a CNP arrives and a rate recovers exactly as at
//! 100G, k times slower: bytes per timer period are the 100G bytes, so
//! frames, queues and thresholds keep their 100G proportions. Only the
//! real propagation and processing delays do not stretch, which makes the
//! testbed's feedback loop look shorter than a real network's, never
//! longer. (Keeping the timers at 55 us on a 100 Mb/s link instead would
//! make a timer period 690 bytes, less than one frame, and would need
//! marking thresholds below one frame: the dynamics would not be DCQCN's.)
//!
//! [`DcqcnParams::mlx_scaled`] does the same for [`PROFILE_MLX`]: at
//! 20 Mb/s (k = 5000) the alpha timer is 5 ms, the rate-decrease period
//! 20 ms, the increase timer 1.5 s, the CNP interval 5 ms, Rai 4 kb/s,
//! Rhai 40 kb/s and the minimum rate 200 kb/s (HPCC's 1 Gb/s at 100G).
//! [`DcqcnParams::scaled_profile`] picks either by profile.
//!
//! # Use
//!
//! ```text
//! receiver, per data packet of QP q:  if np_on_packet(&mut np[q], now, ce) { send CNP to q's sender }
//! sender, per QP:                     rp_tick(&mut rp, &p, now);          // any time, e.g. before each send
//!                                     if pacer.ready(now) { send; rp_on_sent(&mut rp, &p, now, len);
//!                                                           pacer.on_send(now, rp_rate(&rp), len); }
//!                                     on CNP: rp_on_cnp(&mut rp, &p, now);
//! ```
//!
//! Every function takes `&mut` state and is exact when calls on one state
//! are serialised (one QP is served by one thread). A `now_ns` older than
//! the state's deadlines is "no time elapsed", never a huge interval.

// ---------------------------------------------------------------------------
// Fixed point and parameters
// ---------------------------------------------------------------------------

/// Fraction bits of alpha and g.
pub const ALPHA_SHIFT: u32 = 16;
/// alpha = 1.0.
pub const ALPHA_ONE: u32 = 1 << ALPHA_SHIFT;

/// The line rate [`DcqcnParams::scaled`] emulates (100 Gb/s).
pub const REFERENCE_LINE_RATE_BPS: u64 = 100_000_000_000;

/// Default CNP interval of the notification point (50 us).
pub const DEFAULT_CNP_INTERVAL_NS: u64 = 50_000;
/// Default alpha update period K (55 us).
pub const DEFAULT_ALPHA_UPDATE_PERIOD_NS: u64 = 55_000;
/// Default rate-increase timer T (55 us).
pub const DEFAULT_RATE_INCREASE_PERIOD_NS: u64 = 55_000;
/// Default g = 1/256, in 1/65536 units.
pub const DEFAULT_G: u32 = ALPHA_ONE / 256;
/// Default F: fast-recovery events after a cut.
pub const DEFAULT_FAST_RECOVERY_EVENTS: u32 = 5;
/// Rai = line rate / this (40 Mb/s at 40 Gb/s).
pub const RAI_DIVISOR: u64 = 1_000;
/// Rhai = line rate / this (10 x Rai).
pub const RHAI_DIVISOR: u64 = 100;
/// min rate = line rate / this (1 Mb/s at 100 Gb/s).
pub const MIN_RATE_DIVISOR: u64 = 100_000;
/// B = line rate (bit/s) / this, in bytes (10 MB at 40 Gb/s: the byte
/// counter fires every 2 ms at line rate).
pub const BYTE_COUNTER_DIVISOR: u64 = 4_000;

/// Timer or byte-counter events one call applies at most. Further elapsed
/// periods are dropped (the deadline keeps its phase). With the default
/// parameters 2048 events reach the fixed point from any state (alpha decays
/// to 0 within about 1700 periods, and the rate climbs from the minimum to
/// the line rate within 1000 additive events plus 64 halvings of the last
/// gap), so dropping the rest changes nothing there.
pub const MAX_CATCHUP: u32 = 2048;

/// DCQCN parameters of a NIC (one set for every QP of a host, or per QP).
///
/// Every field may take any value without a panic: a period of 0 disables
/// its timer, `byte_counter_bytes` 0 disables the byte counter, `g` and
/// `initial_alpha` are capped at [`ALPHA_ONE`], a `min_rate_bps` above the
/// line rate acts as the line rate.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcqcnParams {
    /// Line rate (bit/s): the rate of an unthrottled QP and the cap of RT.
    pub line_rate_bps: u64,
    /// RC never goes below this (bit/s).
    pub min_rate_bps: u64,
    /// Additive increase step of RT (bit/s).
    pub rai_bps: u64,
    /// Hyper increase step of RT (bit/s), times the hyper event index.
    pub rhai_bps: u64,
    /// Byte counter B: an increase event every B bytes sent (bytes).
    pub byte_counter_bytes: u64,
    /// Rate-increase timer T (ns).
    pub rate_increase_period_ns: u64,
    /// Alpha update period K: alpha decays once per K without a CNP (ns).
    pub alpha_update_period_ns: u64,
    /// Notification point: at most one CNP per QP per this (ns).
    pub cnp_interval_ns: u64,
    /// EWMA gain g (1/65536 units).
    pub g: u32,
    /// alpha set by the first CNP of an unthrottled QP (1/65536 units).
    pub initial_alpha: u32,
    /// F: events after a cut that are fast recovery.
    pub fast_recovery_events: u32,
    /// [`PROFILE_PAPER`] or [`PROFILE_MLX`] (another value acts as the
    /// paper's).
    pub profile: u32,
    /// [`PROFILE_MLX`] only: CNPs are coalesced into one cut per this
    /// period (ns; 0: no cut).
    pub rate_decrease_period_ns: u64,
}

/// [`DcqcnParams::profile`]: the DCQCN paper's reaction point (alpha and a
/// cut at each CNP, byte counter, F = 5, hyper increase `i x Rhai`).
pub const PROFILE_PAPER: u32 = 0;
/// [`DcqcnParams::profile`]: the HPCC simulator's "Mlx" mode (NVIDIA's
/// variant), see [`DcqcnParams::mlx`] and the `mlx` section below.
pub const PROFILE_MLX: u32 = 1;

impl DcqcnParams {
    /// The defaults for a NIC of `line_rate_bps` (at least 1), in real time:
    /// the timers as published (55 us, 55 us, 50 us), the rate steps, the
    /// minimum rate and the byte counter proportional to the line rate (see
    /// the module's table).
    pub const fn new(line_rate_bps: u64) -> Self {
        let l = if line_rate_bps == 0 { 1 } else { line_rate_bps };
        DcqcnParams {
            line_rate_bps: l,
            min_rate_bps: at_least_one(l / MIN_RATE_DIVISOR),
            rai_bps: at_least_one(l / RAI_DIVISOR),
            rhai_bps: at_least_one(l / RHAI_DIVISOR),
            byte_counter_bytes: at_least_one(l / BYTE_COUNTER_DIVISOR),
            rate_increase_period_ns: DEFAULT_RATE_INCREASE_PERIOD_NS,
            alpha_update_period_ns: DEFAULT_ALPHA_UPDATE_PERIOD_NS,
            cnp_interval_ns: DEFAULT_CNP_INTERVAL_NS,
            g: DEFAULT_G,
            initial_alpha: ALPHA_ONE,
            fast_recovery_events: DEFAULT_FAST_RECOVERY_EVENTS,
            profile: PROFILE_PAPER,
            rate_decrease_period_ns: 0,
        }
    }

    /// A [`REFERENCE_LINE_RATE_BPS`] (100 Gb/s) NIC slowed down to
    /// `line_rate_bps` (at least 1): with `k = 100G / line_rate_bps`, the
    /// rates of `new(100G)` divided by k (the same as `new(line_rate_bps)`'s
    /// up to rounding), its timers multiplied by k (in whole kb/s of line
    /// rate, rounded down, at least 1 ns), its byte counter unchanged
    /// (25 MB). At 100 Mb/s: T = K = 55 ms,
    /// N = 50 ms, Rai = 100 kb/s, Rhai = 1 Mb/s, min rate 1 kb/s,
    /// B = 25 MB. See the module documentation.
    pub const fn scaled(line_rate_bps: u64) -> Self {
        let l = if line_rate_bps == 0 { 1 } else { line_rate_bps };
        dilated(
            DcqcnParams::new(l),
            &DcqcnParams::new(REFERENCE_LINE_RATE_BPS),
            l,
        )
    }

    /// [`DcqcnParams::scaled`] for [`PROFILE_PAPER`],
    /// [`DcqcnParams::mlx_scaled`] for [`PROFILE_MLX`] (another value acts
    /// as the paper's): the profile of a time-dilated 100 Gb/s NIC.
    pub const fn scaled_profile(profile: u32, line_rate_bps: u64) -> Self {
        if profile == PROFILE_MLX {
            DcqcnParams::mlx_scaled(line_rate_bps)
        } else {
            DcqcnParams::scaled(line_rate_bps)
        }
    }

    /// `initial_alpha`, at most [`ALPHA_ONE`]: alpha when a QP's limiter
    /// attaches.
    #[inline(always)]
    pub const fn start_alpha(&self) -> u32 {
        if self.initial_alpha > ALPHA_ONE {
            ALPHA_ONE
        } else {
            self.initial_alpha
        }
    }

    /// `min_rate_bps`, at most the line rate.
    #[inline(always)]
    pub const fn min_rate(&self) -> u64 {
        if self.min_rate_bps > self.line_rate_bps {
            self.line_rate_bps
        } else {
            self.min_rate_bps
        }
    }
}

#[inline(always)]
const fn at_least_one(v: u64) -> u64 {
    if v == 0 {
        1
    } else {
        v
    }
}

/// Longest timer [`DcqcnParams::scaled`] dilates exactly (184 s): above it
/// the timer counts as this long.
const MAX_DILATED_NS: u64 = u64::MAX / (REFERENCE_LINE_RATE_BPS / 1_000);

/// `p` (the parameters of a NIC of line rate `l`, whose rates are
/// proportional to `l`) with the timers and byte quantities of `r` (the same
/// profile at [`REFERENCE_LINE_RATE_BPS`]) slowed down to `l`: timers
/// multiplied by `REFERENCE / l`, bytes unchanged.
const fn dilated(mut p: DcqcnParams, r: &DcqcnParams, l: u64) -> DcqcnParams {
    p.byte_counter_bytes = r.byte_counter_bytes;
    p.rate_increase_period_ns = dilate(r.rate_increase_period_ns, l);
    p.alpha_update_period_ns = dilate(r.alpha_update_period_ns, l);
    p.rate_decrease_period_ns = dilate(r.rate_decrease_period_ns, l);
    p.cnp_interval_ns = dilate(r.cnp_interval_ns, l);
    p
}

/// `t x REFERENCE / line`, computed as `t x (REFERENCE / 1000) / (line /
/// 1000)` (a line below 1 kb/s counts as 1 kb/s here), at least 1 when `t`
/// is not 0. `t` is capped at [`MAX_DILATED_NS`] so the product stays below
/// 2^64 (plain multiplication: no `checked_mul`, see the module notes).
const fn dilate(t_ns: u64, line: u64) -> u64 {
    if t_ns == 0 {
        return 0;
    }
    let t = if t_ns > MAX_DILATED_NS {
        MAX_DILATED_NS
    } else {
        t_ns
    };
    let line_k = if line < 1_000 { 1 } else { line / 1_000 };
    at_least_one(t * (REFERENCE_LINE_RATE_BPS / 1_000) / line_k)
}

mod mlx;
pub use mlx::{
    MLX_ALPHA_UPDATE_PERIOD_NS, MLX_CNP_INTERVAL_NS, MLX_FAST_RECOVERY_EVENTS, MLX_MIN_RATE_BPS,
    MLX_RAI_DIVISOR, MLX_RATE_DECREASE_PERIOD_NS, MLX_RATE_INCREASE_PERIOD_NS, MLX_RHAI_DIVISOR,
};

// ---------------------------------------------------------------------------
// Notification point
// ---------------------------------------------------------------------------

/// Notification-point state of one destination QP (receiver side), a map
/// value keyed by QP.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NpState {
    /// When the last CNP was sent (valid when `sent` is 1).
    pub last_cnp_ns: u64,
    /// At most one CNP per this (ns).
    pub interval_ns: u64,
    /// CNPs sent (wraps).
    pub cnps: u32,
    /// 1 once a CNP has been sent.
    pub sent: u8,
    pub _pad: [u8; 3],
}

impl NpState {
    /// A QP that has sent no CNP yet, with the default 50 us interval.
    pub const DEFAULT: NpState = NpState::new(DEFAULT_CNP_INTERVAL_NS);

    /// A QP that has sent no CNP yet (use `params.cnp_interval_ns`).
    pub const fn new(interval_ns: u64) -> Self {
        NpState {
            last_cnp_ns: 0,
            interval_ns,
            cnps: 0,
            sent: 0,
            _pad: [0; 3],
        }
    }
}

/// Whether the packet received at `now_ns` (CE-marked when `ce`) makes the
/// receiver send a CNP for its QP.
///
/// A CE packet does when no CNP was sent yet, or when at least `interval_ns`
/// has passed since the last one (a CE packet exactly one interval later
/// triggers one). Suppressed CE packets do not move the window; packets
/// without CE never trigger and change nothing. A `now_ns` before the last
/// CNP counts as no time elapsed.
#[inline(always)]
pub fn np_on_packet(st: &mut NpState, now_ns: u64, ce: bool) -> bool {
    if !ce {
        return false;
    }
    if st.sent != 0 && now_ns.saturating_sub(st.last_cnp_ns) < st.interval_ns {
        return false;
    }
    st.sent = 1;
    st.last_cnp_ns = now_ns;
    st.cnps = st.cnps.wrapping_add(1);
    true
}

// ---------------------------------------------------------------------------
// Reaction point
// ---------------------------------------------------------------------------

/// [`RpState::stage`]: no increase event since the last cut.
pub const STAGE_NONE: u8 = 0;
/// Fast recovery: RC halves its distance to RT.
pub const STAGE_FAST_RECOVERY: u8 = 1;
/// Additive increase: RT += Rai, then fast-recovery step.
pub const STAGE_ADDITIVE: u8 = 2;
/// Hyper increase: RT += i Rhai, then fast-recovery step.
pub const STAGE_HYPER: u8 = 3;

/// Reaction-point state of one QP (sender side).
///
/// Invariants kept by every function (given `min_rate <= line`):
/// `min_rate <= rc_bps <= rt_bps <= line_rate` once limited,
/// `rc_bps == rt_bps == line_rate` and timers idle when not limited,
/// `alpha <= ALPHA_ONE`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RpState {
    /// Current rate RC (bit/s): the rate to send at.
    pub rc_bps: u64,
    /// Target rate RT (bit/s).
    pub rt_bps: u64,
    /// When alpha next decays (while limited).
    pub alpha_due_ns: u64,
    /// When the rate-increase timer next fires (while limited).
    pub increase_due_ns: u64,
    /// Bytes sent since the last byte-counter event (< B).
    pub byte_acc: u64,
    /// Congestion estimate alpha (1/65536 units, <= [`ALPHA_ONE`]).
    pub alpha: u32,
    /// t: rate-increase timer events since the last cut (saturating).
    pub timer_events: u32,
    /// b: byte-counter events since the last cut (saturating).
    pub byte_events: u32,
    /// CNPs received (wraps).
    pub cnps: u32,
    /// 1 while the rate limiter is attached (from the first CNP until RC is
    /// back at line rate).
    pub limited: u8,
    /// Stage of the last increase event ([`STAGE_NONE`] .. [`STAGE_HYPER`]).
    pub stage: u8,
    /// [`PROFILE_MLX`]: a CNP arrived since the last alpha update.
    pub cnp_alpha: u8,
    /// [`PROFILE_MLX`]: a CNP arrived since the last rate-decrease check.
    pub cnp_decrease: u8,
    pub _pad: [u8; 4],
    /// [`PROFILE_MLX`]: when the next rate-decrease check is due.
    pub decrease_due_ns: u64,
}

impl RpState {
    /// An unthrottled QP at the line rate of `p`.
    pub const fn new(p: &DcqcnParams) -> Self {
        RpState {
            rc_bps: p.line_rate_bps,
            rt_bps: p.line_rate_bps,
            alpha_due_ns: 0,
            increase_due_ns: 0,
            byte_acc: 0,
            alpha: p.start_alpha(),
            timer_events: 0,
            byte_events: 0,
            cnps: 0,
            limited: 0,
            stage: STAGE_NONE,
            cnp_alpha: 0,
            cnp_decrease: 0,
            _pad: [0; 4],
            decrease_due_ns: 0,
        }
    }
}

/// The stage of an increase event, from the event counters after the event
/// was counted: fast recovery while both are at most F, hyper increase once
/// both exceed F, additive increase in between.
#[inline(always)]
pub const fn increase_stage(timer_events: u32, byte_events: u32, f: u32) -> u8 {
    let (lo, hi) = if timer_events < byte_events {
        (timer_events, byte_events)
    } else {
        (byte_events, timer_events)
    };
    if hi <= f {
        STAGE_FAST_RECOVERY
    } else if lo <= f {
        STAGE_ADDITIVE
    } else {
        STAGE_HYPER
    }
}

#[inline(always)]
const fn cap_g(g: u32) -> u64 {
    if g > ALPHA_ONE {
        ALPHA_ONE as u64
    } else {
        g as u64
    }
}

/// `alpha (1 - g)`, the step rounded up so that alpha keeps decaying (to 0)
/// when `alpha g` is below one unit. `alpha g <= 2^32`.
#[inline(always)]
pub const fn alpha_decay(alpha: u32, g: u32) -> u32 {
    let a = if alpha > ALPHA_ONE { ALPHA_ONE } else { alpha } as u64;
    let step = (a * cap_g(g) + (ALPHA_ONE as u64 - 1)) >> ALPHA_SHIFT;
    // step <= a because g <= 1
    (a - step) as u32
}

/// `alpha (1 - g) + g` (a CNP), computed as `alpha + g (1 - alpha)` with
/// the step rounded up, so that alpha reaches 1.0 (its fixed point) instead
/// of stalling one rounding step below it.
#[inline(always)]
pub const fn alpha_on_cnp(alpha: u32, g: u32) -> u32 {
    let a = if alpha > ALPHA_ONE { ALPHA_ONE } else { alpha } as u64;
    let one = ALPHA_ONE as u64;
    // (one - a) * g <= 2^32; the step is at most one - a
    let step = ((one - a) * cap_g(g) + (one - 1)) >> ALPHA_SHIFT;
    (a + step) as u32
}

/// `floor(rate x alpha / 2)` with alpha in 1/65536 units, exact and without
/// a 128-bit product: `rate = hi 2^17 + lo`, `hi x alpha < 2^47 x 2^16`,
/// `lo x alpha < 2^33`.
#[inline(always)]
pub const fn rate_cut(rate_bps: u64, alpha: u32) -> u64 {
    let a = if alpha > ALPHA_ONE { ALPHA_ONE } else { alpha } as u64;
    let shift = ALPHA_SHIFT + 1;
    let hi = rate_bps >> shift;
    let lo = rate_bps & ((1u64 << shift) - 1);
    hi * a + ((lo * a) >> shift)
}

/// `rt - (rt - rc) / 2` (RC = (RT + RC) / 2 rounded up, so RC reaches RT);
/// `rc >= rt` gives `rt`.
#[inline(always)]
const fn toward(rc: u64, rt: u64) -> u64 {
    if rc >= rt {
        rt
    } else {
        rt - (rt - rc) / 2
    }
}

/// Keeps RC and RT within the (possibly changed) line rate and min rate.
#[inline(always)]
fn clamp_rates(st: &mut RpState, p: &DcqcnParams) {
    let line = p.line_rate_bps;
    if st.limited == 0 {
        st.rc_bps = line;
        st.rt_bps = line;
        return;
    }
    if st.rt_bps > line {
        st.rt_bps = line;
    }
    if st.rc_bps > st.rt_bps {
        st.rc_bps = st.rt_bps;
    }
    let min = p.min_rate();
    if st.rc_bps < min {
        st.rc_bps = min;
    }
    if st.rt_bps < st.rc_bps {
        st.rt_bps = st.rc_bps;
    }
}

/// Back to unthrottled at line rate: timers idle, counters cleared.
#[inline(always)]
fn release(st: &mut RpState, p: &DcqcnParams) {
    st.limited = 0;
    st.rc_bps = p.line_rate_bps;
    st.rt_bps = p.line_rate_bps;
    st.timer_events = 0;
    st.byte_events = 0;
    st.byte_acc = 0;
}

/// One rate-increase event (the counters already count it).
#[inline(always)]
fn increase(st: &mut RpState, p: &DcqcnParams) {
    let line = p.line_rate_bps;
    let f = p.fast_recovery_events;
    let stage = increase_stage(st.timer_events, st.byte_events, f);
    if stage == STAGE_ADDITIVE {
        let rt = st.rt_bps.saturating_add(p.rai_bps);
        st.rt_bps = if rt > line { line } else { rt };
    } else if stage == STAGE_HYPER {
        let lo = if st.timer_events < st.byte_events {
            st.timer_events
        } else {
            st.byte_events
        };
        // lo > f in this stage
        let i = u64::from(lo - f);
        let room = line.saturating_sub(st.rt_bps);
        // i * rhai only when it fits in room (so no overflow)
        let inc = if p.rhai_bps == 0 {
            0
        } else if i > room / p.rhai_bps {
            room
        } else {
            i * p.rhai_bps
        };
        st.rt_bps = st.rt_bps.saturating_add(inc);
        if st.rt_bps > line {
            st.rt_bps = line;
        }
    }
    st.rc_bps = toward(st.rc_bps, st.rt_bps);
    st.stage = stage;
    if st.rc_bps >= line {
        release(st, p);
    }
}

/// The next deadline after `now` on the grid `due + n period` (period > 0,
/// now >= due).
#[inline(always)]
const fn skip_to_after(due: u64, now: u64, period: u64) -> u64 {
    let e = now - due;
    due.saturating_add(e - e % period).saturating_add(period)
}

/// Runs the alpha and rate-increase timers up to `now_ns`: every elapsed
/// alpha period decays alpha once, every elapsed increase period is one
/// timer event, in time order (one call over a long gap does exactly what
/// many short calls would). Call it at any time, as often or as rarely as
/// convenient: it catches up on up to [`MAX_CATCHUP`] periods of each timer
/// (the rest are dropped, see there). Does nothing while the QP is
/// unthrottled (and stops when an increase releases it).
/// [`rp_on_cnp`] and [`rp_on_sent`] call it first. Returns RC.
#[inline(always)]
pub fn rp_tick(st: &mut RpState, p: &DcqcnParams, now_ns: u64) -> u64 {
    if p.profile == PROFILE_MLX {
        return mlx::tick(st, p, now_ns);
    }
    clamp_rates(st, p);
    if st.limited == 0 {
        return st.rc_bps;
    }
    let k = p.alpha_update_period_ns;
    let t = p.rate_increase_period_ns;
    // Both timers in time order (alpha first on a tie), so that one call
    // over a long gap does what many short calls would, including stopping
    // at the release.
    let (mut na, mut ni) = (0, 0);
    while st.limited != 0 {
        let a_ready = k != 0 && na < MAX_CATCHUP && now_ns >= st.alpha_due_ns;
        let i_ready = t != 0 && ni < MAX_CATCHUP && now_ns >= st.increase_due_ns;
        if a_ready && (!i_ready || st.alpha_due_ns <= st.increase_due_ns) {
            st.alpha = alpha_decay(st.alpha, p.g);
            st.alpha_due_ns = st.alpha_due_ns.saturating_add(k);
            na += 1;
        } else if i_ready {
            st.timer_events = st.timer_events.saturating_add(1);
            st.increase_due_ns = st.increase_due_ns.saturating_add(t);
            increase(st, p);
            ni += 1;
        } else {
            break;
        }
    }
    if st.limited != 0 {
        if k != 0 && now_ns >= st.alpha_due_ns {
            st.alpha_due_ns = skip_to_after(st.alpha_due_ns, now_ns, k);
        }
        if t != 0 && now_ns >= st.increase_due_ns {
            st.increase_due_ns = skip_to_after(st.increase_due_ns, now_ns, t);
        }
    }
    st.rc_bps
}

/// A CNP for this QP arrived at `now_ns`: timers are caught up first, then
///
/// ```text
/// (first CNP of an unthrottled QP: attach the limiter, alpha = initial_alpha)
/// RT = RC;  RC = max(RC - floor(RC alpha / 2), min_rate);  alpha = (1-g) alpha + g
/// ```
///
/// and the alpha timer, the increase timer, the byte counter and both event
/// counters restart from `now_ns`. Returns the new RC.
#[inline(always)]
pub fn rp_on_cnp(st: &mut RpState, p: &DcqcnParams, now_ns: u64) -> u64 {
    if p.profile == PROFILE_MLX {
        return mlx::on_cnp(st, p, now_ns);
    }
    rp_tick(st, p, now_ns);
    if st.limited == 0 {
        st.limited = 1;
        st.alpha = p.start_alpha();
    }
    st.rt_bps = st.rc_bps;
    let cut = st.rc_bps - rate_cut(st.rc_bps, st.alpha);
    let min = p.min_rate();
    st.rc_bps = if cut < min { min } else { cut };
    if st.rt_bps < st.rc_bps {
        st.rt_bps = st.rc_bps;
    }
    st.alpha = alpha_on_cnp(st.alpha, p.g);
    st.alpha_due_ns = now_ns.saturating_add(p.alpha_update_period_ns);
    st.increase_due_ns = now_ns.saturating_add(p.rate_increase_period_ns);
    st.byte_acc = 0;
    st.timer_events = 0;
    st.byte_events = 0;
    st.stage = STAGE_NONE;
    st.cnps = st.cnps.wrapping_add(1);
    st.rc_bps
}

/// `bytes` left on this QP at `now_ns`: timers are caught up first, then
/// the byte counter counts them; every B bytes is one byte-counter event
/// (at most [`MAX_CATCHUP`] per call, the rest of a huge count is dropped).
/// Nothing is counted while the QP is unthrottled. Returns RC.
#[inline(always)]
pub fn rp_on_sent(st: &mut RpState, p: &DcqcnParams, now_ns: u64, bytes: u64) -> u64 {
    rp_tick(st, p, now_ns);
    let b = p.byte_counter_bytes;
    if st.limited == 0 || b == 0 {
        return st.rc_bps;
    }
    st.byte_acc = st.byte_acc.saturating_add(bytes);
    let mut n = 0;
    while n < MAX_CATCHUP && st.limited != 0 && st.byte_acc >= b {
        st.byte_acc -= b;
        st.byte_events = st.byte_events.saturating_add(1);
        increase(st, p);
        n += 1;
    }
    if st.limited != 0 && st.byte_acc >= b {
        st.byte_acc %= b;
    }
    st.rc_bps
}

/// The rate to send at (RC, bit/s).
#[inline(always)]
pub const fn rp_rate(st: &RpState) -> u64 {
    st.rc_bps
}

mod pacing;
pub use pacing::*;

// ---------------------------------------------------------------------------
// Layout
// ---------------------------------------------------------------------------

const _: () = assert!(core::mem::size_of::<DcqcnParams>() == 9 * 8 + 4 * 4);
const _: () = assert!(core::mem::size_of::<DcqcnParams>() == 88);
const _: () = assert!(core::mem::size_of::<NpState>() == 8 + 8 + 4 + 1 + 3);
const _: () = assert!(core::mem::size_of::<NpState>() == 24);
const _: () = assert!(core::mem::size_of::<RpState>() == 6 * 8 + 4 * 4 + 4 + 4);
const _: () = assert!(core::mem::size_of::<RpState>() == 72);
const _: () = assert!(core::mem::size_of::<Pacer>() == 16);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), only integer fields and arrays of integers, no padding
    // (asserted above), every bit pattern valid.
    unsafe impl aya::Pod for super::DcqcnParams {}
    unsafe impl aya::Pod for super::NpState {}
    unsafe impl aya::Pod for super::RpState {}
    unsafe impl aya::Pod for super::Pacer {}
}
