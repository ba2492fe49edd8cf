//! Pacing: the inter-frame gap of a frame at a rate, and a pacer that
//! carries fractional nanoseconds so the long-run rate is exact.

/// Frame lengths above this (2 GiB - 1) are counted as this, so that
/// `bits x 10^9` stays below 2^64.
pub const MAX_PACED_LEN: u64 = (1 << 31) - 1;

const NS_PER_S: u64 = 1_000_000_000;

/// Nanoseconds `len` bytes take at `rate_bps`, rounded up: the gap from one
/// frame's start to the next one's. `u64::MAX` (never) at rate 0. Count in
/// `len` whatever the rate is meant to cover (the wire adds 20 bytes of
/// preamble and inter-frame gap per Ethernet frame).
#[inline(always)]
pub const fn tx_time_ns(rate_bps: u64, len: u64) -> u64 {
    if rate_bps == 0 {
        return u64::MAX;
    }
    let len = if len > MAX_PACED_LEN {
        MAX_PACED_LEN
    } else {
        len
    };
    // len * 8 < 2^34, times 10^9 < 2^30: below 2^64
    (len * 8 * NS_PER_S).div_ceil(rate_bps)
}

/// When the next frame may start if one of `len` bytes started at
/// `sent_ns` at `rate_bps` (saturating; `u64::MAX` at rate 0).
#[inline(always)]
pub const fn next_send_ns(sent_ns: u64, rate_bps: u64, len: u64) -> u64 {
    sent_ns.saturating_add(tx_time_ns(rate_bps, len))
}

/// A pacer: the next time a frame may leave, frame by frame, at a rate that
/// may change between frames (DCQCN's RC).
///
/// Each frame advances `next_ns` by `len x 8 x 10^9 / rate` ns with the
/// remainder carried in `rem` (bit-nanoseconds, below the rate), so the
/// long-run rate is exact rather than rounded per frame. An idle sender
/// banks no credit: a frame after `next_ns` starts the schedule at its own
/// time (and drops the remainder). Lengths are capped at
/// [`MAX_PACED_LEN`]; the remainder saturates only for rates above 10^18
/// bit/s.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pacer {
    /// Earliest start of the next frame (ns).
    pub next_ns: u64,
    /// Carried remainder of `bits x 10^9` modulo the rate.
    pub rem: u64,
}

impl Pacer {
    /// A pacer that lets the first frame leave at once.
    pub const NEW: Pacer = Pacer { next_ns: 0, rem: 0 };

    /// Whether a frame may leave at `now_ns`.
    #[inline(always)]
    pub const fn ready(&self, now_ns: u64) -> bool {
        now_ns >= self.next_ns
    }

    /// Records a frame of `len` bytes starting at `now_ns`, or at `next_ns`
    /// if that is later (a frame handed over early is scheduled, not sent
    /// early), paced at `rate_bps`; returns the new `next_ns`, when the
    /// next frame may start (`u64::MAX` at rate 0).
    #[inline(always)]
    pub fn on_send(&mut self, now_ns: u64, rate_bps: u64, len: u64) -> u64 {
        if rate_bps == 0 {
            self.next_ns = u64::MAX;
            self.rem = 0;
            return self.next_ns;
        }
        let start = if now_ns > self.next_ns {
            self.rem = 0;
            now_ns
        } else {
            self.next_ns
        };
        let len = if len > MAX_PACED_LEN {
            MAX_PACED_LEN
        } else {
            len
        };
        let rem = if self.rem >= rate_bps {
            self.rem % rate_bps
        } else {
            self.rem
        };
        let num = (len * 8 * NS_PER_S).saturating_add(rem);
        self.rem = num % rate_bps;
        self.next_ns = start.saturating_add(num / rate_bps);
        self.next_ns
    }
}
