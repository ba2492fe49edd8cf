//! Drop snapshots: for every drop the data plane posts (rate-limited) the
//! first bytes of the frame, the port, the reason and the time, so an
//! operator sees which RDMA packet was lost and why.

use crate::reason::{code_name, Reason};

/// Bytes of the frame kept in a snapshot.
pub const SNAP_LEN: usize = 128;

/// Stable name of an event's reason code (see [`crate::reason`]); a
/// headroom drop says it is a lossless drop.
pub fn reason_name(code: u8) -> &'static str {
    if code == Reason::HeadroomExhausted.code() {
        return "headroom_exhausted (lossless drop)";
    }
    code_name(code)
}

/// A drop snapshot (ring buffer record).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropEvent {
    /// bpf_ktime_get_ns (CLOCK_MONOTONIC).
    pub time_ns: u64,
    /// Ingress interface.
    pub ifindex: u32,
    pub port_id: u16,
    pub reason: u8,
    pub _pad: u8,
    /// Length of the frame on the wire.
    pub frame_len: u32,
    /// Bytes captured in `data` (at most SNAP_LEN).
    pub cap_len: u32,
    pub data: [u8; SNAP_LEN],
}

/// What the dropping program hands to the snapshot program (per-CPU
/// scratch).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropCtx {
    pub port_id: u16,
    pub reason: u8,
    pub _pad: u8,
}

/// A per-CPU token bucket so a storm of drops cannot flood the ring:
/// `rate` events per second, bursts of `burst`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    /// Tokens in thousandths.
    pub milli_tokens: u64,
    pub last_ns: u64,
    /// Events suppressed by the limit.
    pub suppressed: u64,
    pub posted: u64,
}

/// Default rate and burst per CPU.
pub const EVENTS_PER_SEC: u64 = 1000;
pub const EVENTS_BURST: u64 = 64;

impl RateLimit {
    pub const ZERO: RateLimit = RateLimit {
        milli_tokens: 0,
        last_ns: 0,
        suppressed: 0,
        posted: 0,
    };

    /// Takes a token at `now_ns` if there is one (refilled at `rate`/s up
    /// to `burst`); counts the outcome.
    #[inline(always)]
    pub fn allow(&mut self, now_ns: u64, rate: u64, burst: u64) -> bool {
        let cap = burst * 1000;
        if self.last_ns == 0 {
            self.milli_tokens = cap;
        } else if now_ns > self.last_ns {
            // rate tokens/s = rate milli-tokens/ms; cap the interval so the
            // product stays small
            let dt_us = ((now_ns - self.last_ns) / 1000).min(100_000_000);
            let add = dt_us * rate / 1000;
            self.milli_tokens = (self.milli_tokens + add).min(cap);
        }
        self.last_ns = now_ns;
        if self.milli_tokens >= 1000 {
            self.milli_tokens -= 1000;
            self.posted += 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }
}

const _: () = assert!(core::mem::size_of::<DropEvent>() == 24 + SNAP_LEN);
const _: () = assert!(core::mem::size_of::<DropCtx>() == 4);
const _: () = assert!(core::mem::size_of::<RateLimit>() == 32);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), integer fields and arrays of them, no padding
    // (asserted above).
    unsafe impl aya::Pod for super::DropEvent {}
    unsafe impl aya::Pod for super::DropCtx {}
    unsafe impl aya::Pod for super::RateLimit {}
}
