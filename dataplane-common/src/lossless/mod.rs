//! Lossless stage: buffer model, ECN/WRED, PFC generation, headroom and the
//! PFC watchdog, as pure functions over plain state.
//!
//! XDP sees no real queue: frames are forwarded at once. The data plane
//! therefore keeps its own model of the switch buffer, the way the HPCC
//! simulator's switch does, and the model decides marking, pausing and
//! dropping:
//!
//! * [`EgressQueue`] per (egress port, TC): bytes held, drained at the port
//!   rate from elapsed time, frozen while a received PFC pauses it, with the
//!   bytes each ingress port contributed (so draining can release the
//!   ingress accounting);
//! * [`wred`] per packet against the queue bytes, with SONiC WRED_PROFILE
//!   fields ([`WredProfile`]), and [`ipv4_set_ce`] / [`ipv6_set_ce`] to
//!   rewrite the packet;
//! * [`PgState`] per (ingress port, priority group) with SONiC
//!   BUFFER_PROFILE semantics ([`BufferProfile`]): reserve, then a shared
//!   pool ([`SharedPool`]) under a dynamic or static threshold, then
//!   headroom for lossless PGs;
//! * [`PfcTxState`] per (ingress port, lossless priority): when to send
//!   XOFF, refresh it, and XON, with hysteresis;
//! * [`headroom`]: SONiC's Mellanox headroom formula plus our measured
//!   emit latency, and `validate_*` helpers for configuration;
//! * [`PfcWd`] per (port, lossless priority): SONiC pfcwd storm detection and
//!   restoration.
//! * [`Watermark`] per (port, TC): the queue's shared and the PG's shared
//!   and headroom high-water marks ([`note_queue`], [`note_pg`]).
//!
//! # Units and ranges
//!
//! Time is `now_ns: u64` passed in (monotonic, e.g. `bpf_ktime_get_ns`);
//! randomness is a `u32` passed in (e.g. `bpf_get_prandom_u32`). Port speed
//! is in Mb/s (`u32`, 800G = 800_000). Byte quantities of the buffer model
//! are `u32`: a queue, a PG, a pool hold at most 4 GiB - 1, which is far
//! above any switch buffer. Intermediate products are bounded in the comment
//! next to them; nothing here divides by a value that may be zero, indexes
//! without a mask, or loops more than [`MODEL_PORTS`] times.
//!
//! # Concurrency
//!
//! Every function takes `&mut` state and is exact when calls on one state are
//! serialised. XDP runs on every CPU at once, so the eBPF caller either keeps
//! a port's state on the CPU that serves the port's RX queue, or holds a
//! `bpf_spin_lock` around the read-modify-write. [`SharedPool::used`] is
//! shared by every PG: [`PgState::admit`] and [`PgState::release`] return the
//! [`Charge`] split so the caller can apply `charge.shared` to the pool with
//! an atomic add on a copy instead of holding one lock for the whole switch.
//! Out-of-order timestamps (a CPU whose `now_ns` is older than the state's)
//! are treated as "no time elapsed", never as a huge interval.

use crate::wire::csum;
use crate::wire::macctl::quanta_to_nanos;

/// Ingress slots an egress queue tracks (ingress port id `& (MODEL_PORTS-1)`).
pub const MODEL_PORTS: usize = 16;
const _: () = assert!(MODEL_PORTS.is_power_of_two());

/// Bits per byte times 1000: `ns * Mb/s` is in millibits.
const MILLIBITS_PER_BYTE: u64 = 8_000;

/// Whole 8000-ns periods counted by [`bytes_in`] before it saturates:
/// 2^32 - 1 periods = 9.5 hours.
const MAX_PERIODS: u64 = u32::MAX as u64;

/// Bytes a port of `speed_mbps` sends in `elapsed_ns`, plus the carried
/// fraction `frac` (millibits, < 8000); returns the whole bytes and the new
/// fraction. Exact, `floor((elapsed * speed + frac) / 8000)`, for intervals
/// up to 9.5 hours, without a 128-bit product: `(elapsed / 8000) * speed`
/// with the first factor capped at `2^32 - 1` is below 2^64, and
/// `(elapsed % 8000) * speed + frac < 8000 * 2^32 + 8000 < 2^45`. A longer
/// interval yields at least `2^32 - 1` bytes per Mb/s of speed, more than any
/// queue holds. (No `u64::saturating_mul` / `checked_mul`: LLVM lowers their
/// overflow check to a 128-bit multiply, `__multi3`, which BPF cannot call.)
#[inline(always)]
fn bytes_in(elapsed_ns: u64, speed_mbps: u32, frac: u32) -> (u64, u32) {
    let speed = u64::from(speed_mbps);
    let periods = elapsed_ns / MILLIBITS_PER_BYTE;
    let periods = if periods > MAX_PERIODS {
        MAX_PERIODS
    } else {
        periods
    };
    let whole = periods * speed;
    let r = (elapsed_ns % MILLIBITS_PER_BYTE) * speed + u64::from(frac);
    (
        whole.saturating_add(r / MILLIBITS_PER_BYTE),
        (r % MILLIBITS_PER_BYTE) as u32,
    )
}

/// Bytes a port of `speed_mbps` sends in `ns`, rounded up (headroom sizing);
/// exact up to 9.5 hours (see [`bytes_in`]).
#[inline(always)]
pub fn bytes_for_nanos(ns: u64, speed_mbps: u32) -> u64 {
    let (b, frac) = bytes_in(ns, speed_mbps, 0);
    if frac != 0 {
        b.saturating_add(1)
    } else {
        b
    }
}

/// Sets every element of `a` to `v`. On eBPF an element at a time: LLVM
/// turns `*a = [v; N]` there into a call of compiler_builtins' `memset`, a
/// byte loop (64 iterations for the model's 16 slots, on every packet's
/// drain); volatile stores are never merged back into that call.
#[inline(always)]
pub fn fill<T: Copy, const N: usize>(a: &mut [T; N], v: T) {
    #[cfg(target_arch = "bpf")]
    {
        let mut i = 0;
        while i < N {
            // SAFETY: `i < N`, an element of `a`.
            unsafe { core::ptr::write_volatile(a.as_mut_ptr().add(i), v) };
            i += 1;
        }
    }
    #[cfg(not(target_arch = "bpf"))]
    {
        *a = [v; N];
    }
}

mod ecn;
mod headroom;
mod ingress;
mod layout;
mod pfc_tx;
mod queue;
mod watchdog;
mod watermark;

pub use ecn::*;
pub use headroom::*;
pub use ingress::*;
pub use pfc_tx::*;
pub use queue::*;
pub use watchdog::*;
pub use watermark::*;
