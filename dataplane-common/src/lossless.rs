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
const SLOT_MASK: usize = MODEL_PORTS - 1;
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

// ---------------------------------------------------------------------------
// 1. Egress queue
// ---------------------------------------------------------------------------

/// The model of one egress queue (egress port, TC), a map value.
///
/// Invariant: `bytes` equals the sum of `ingress` (every function keeps it;
/// a drain that releases bytes resynchronises `bytes` to the sum if a
/// corrupted value broke it).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EgressQueue {
    /// Bytes held.
    pub bytes: u32,
    /// Sub-byte drain credit carried between updates, in millibits (< 8000),
    /// so frequent updates drain exactly as much as one long one.
    pub drain_frac: u32,
    /// Time of the last update.
    pub last_ns: u64,
    /// The queue is paused (a PFC frame for its priority was received on the
    /// egress port) until this time; `<= now` means not paused.
    pub paused_until_ns: u64,
    /// Bytes transmitted (drained) since creation, wrapping; the watchdog
    /// reads its delta with `wrapping_sub`.
    pub tx_bytes: u64,
    /// Bytes held per ingress slot (ingress port id `& (MODEL_PORTS-1)`).
    pub ingress: [u32; MODEL_PORTS],
    /// Peak of `bytes` (watermark); the controller clears it.
    pub peak_bytes: u32,
    /// Rotating start of the rounding-remainder pass (0..MODEL_PORTS).
    pub cursor: u32,
}

impl EgressQueue {
    pub const ZERO: EgressQueue = EgressQueue {
        bytes: 0,
        drain_frac: 0,
        last_ns: 0,
        paused_until_ns: 0,
        tx_bytes: 0,
        ingress: [0; MODEL_PORTS],
        peak_bytes: 0,
        cursor: 0,
    };

    /// The queue is paused at `now_ns`.
    #[inline(always)]
    pub fn is_paused(&self, now_ns: u64) -> bool {
        self.paused_until_ns > now_ns
    }

    /// Drains the queue up to `now_ns` at `speed_mbps` and returns the bytes
    /// drained; `released[i]` receives the bytes released from ingress slot
    /// `i` (overwritten; they sum exactly to the return value).
    ///
    /// Only the un-paused part of `(last_ns, now_ns]` drains: a pause that
    /// ended inside the interval (timer expiry) leaves `(paused_until_ns,
    /// now_ns]`. A pause or XON that starts inside the interval is an event
    /// the caller applies at its own time with [`EgressQueue::apply_pfc`],
    /// which drains up to that time first, so the interval before it drains
    /// at full rate. A port of speed 0 never drains. An empty queue forgets
    /// its sub-byte credit (an idle link earns none).
    #[inline(always)]
    pub fn drain(
        &mut self,
        now_ns: u64,
        speed_mbps: u32,
        released: &mut [u32; MODEL_PORTS],
    ) -> u32 {
        *released = [0; MODEL_PORTS];
        if now_ns <= self.last_ns {
            return 0;
        }
        let start = if self.paused_until_ns > self.last_ns {
            if self.paused_until_ns < now_ns {
                self.paused_until_ns
            } else {
                now_ns
            }
        } else {
            self.last_ns
        };
        self.last_ns = now_ns;
        if self.bytes == 0 {
            self.drain_frac = 0;
            return 0;
        }
        let (avail, frac) = bytes_in(now_ns - start, speed_mbps, self.drain_frac);
        let want = if avail < u64::from(self.bytes) {
            avail as u32
        } else {
            self.bytes
        };
        if want == 0 {
            // Paused, or less than a byte of credit: keep the fraction.
            self.drain_frac = frac;
            return 0;
        }
        let done = self.release_proportional(want, released);
        self.drain_frac = if self.bytes == 0 { 0 } else { frac };
        self.tx_bytes = self.tx_bytes.wrapping_add(u64::from(done));
        done
    }

    /// Applies a received PFC time for this queue's priority at `now_ns`
    /// (802.1Qbb: a new time reloads the timer, even a shorter one; 0 is
    /// XON). Drains up to `now_ns` first (see [`EgressQueue::drain`]) and
    /// returns the bytes drained. The pause lasts `quanta x 512` bit times at
    /// `speed_mbps` ([`quanta_to_nanos`]).
    #[inline(always)]
    pub fn apply_pfc(
        &mut self,
        now_ns: u64,
        quanta: u16,
        speed_mbps: u32,
        released: &mut [u32; MODEL_PORTS],
    ) -> u32 {
        let done = self.drain(now_ns, speed_mbps, released);
        // `last_ns` is now `now_ns`, or later when `now_ns` was out of order:
        // the event then applies at the state's time, so a pause never
        // starts in the already-drained past.
        let at = self.last_ns;
        if quanta == 0 {
            if self.paused_until_ns > at {
                self.paused_until_ns = at;
            }
        } else {
            self.paused_until_ns =
                at.saturating_add(quanta_to_nanos(quanta, u64::from(speed_mbps)));
        }
        done
    }

    /// Adds `len` bytes from ingress slot `slot` (masked to
    /// `0..MODEL_PORTS`) and returns the bytes accepted: all of them unless
    /// the queue would exceed 4 GiB - 1 (the caller counts a shortfall as a
    /// drop). Call [`EgressQueue::drain`] up to now first, so the new bytes
    /// do not drain over the past.
    #[inline(always)]
    pub fn enqueue(&mut self, slot: usize, len: u32) -> u32 {
        let room = u32::MAX - self.bytes;
        let take = if len < room { len } else { room };
        let s = &mut self.ingress[slot & SLOT_MASK];
        // `*s <= bytes` by the invariant, so `*s + take` fits; saturate in
        // case a corrupted value broke it.
        let s_room = u32::MAX - *s;
        let take = if take < s_room { take } else { s_room };
        *s += take;
        self.bytes += take;
        if self.bytes > self.peak_bytes {
            self.peak_bytes = self.bytes;
        }
        take
    }

    /// Releases `want` bytes from the ingress slots in proportion to their
    /// shares and returns the bytes released.
    ///
    /// FIFO order is not modelled: each slot `i` holding `c_i` of the `Q`
    /// bytes gives back `floor(c_i * D / Q)`, which is exactly what a FIFO
    /// releases when the slots' arrivals are steadily interleaved in those
    /// proportions; after a burst from one port, FIFO would release that
    /// port first and this model spreads it (no slot is ever released more
    /// than it holds). The rounding remainder `r = D - sum(floor)` is fewer
    /// than the slots whose share had a fraction, and each of those holds at
    /// least one byte more than its floor, so one pass gives one byte to
    /// each such slot, starting at the rotating `cursor`, until `r` is 0:
    /// the released bytes sum exactly to `D`, deterministically, and no slot
    /// is favoured over time.
    #[inline(always)]
    fn release_proportional(&mut self, want: u32, released: &mut [u32; MODEL_PORTS]) -> u32 {
        let mut total: u64 = 0;
        let mut i = 0;
        while i < MODEL_PORTS {
            total += u64::from(self.ingress[i & SLOT_MASK]);
            i += 1;
        }
        if total == 0 {
            self.bytes = 0;
            return 0;
        }
        let d = if u64::from(want) < total {
            u64::from(want)
        } else {
            total
        };
        // c_i <= 2^32 - 1 and d <= want <= 2^32 - 1, so c_i * d < 2^64.
        // r <= c_i since d <= total (the clamp guards a corrupted value only).
        let mut given: u64 = 0;
        let mut frac_mask: u32 = 0;
        i = 0;
        while i < MODEL_PORTS {
            let c = u64::from(self.ingress[i & SLOT_MASK]);
            let p = c * d;
            let mut r = p / total;
            if r > c {
                r = c;
            }
            if p % total != 0 && r < c {
                frac_mask |= 1 << i;
            }
            released[i & SLOT_MASK] = r as u32;
            given += r;
            i += 1;
        }
        let mut rem = d.saturating_sub(given);
        let start = self.cursor as usize;
        i = 0;
        while i < MODEL_PORTS && rem > 0 {
            let j = (start + i) & SLOT_MASK;
            if frac_mask & (1 << j) != 0 {
                released[j] += 1;
                given += 1;
                rem -= 1;
            }
            i += 1;
        }
        self.cursor = ((start + 1) & SLOT_MASK) as u32;
        i = 0;
        while i < MODEL_PORTS {
            let j = i & SLOT_MASK;
            self.ingress[j] -= released[j];
            i += 1;
        }
        // given <= total; resynchronise `bytes` with the slots.
        self.bytes = (total - given) as u32;
        given as u32
    }
}

// ---------------------------------------------------------------------------
// 2. ECN / WRED
// ---------------------------------------------------------------------------

/// ECN codepoints (RFC 3168), the two low bits of TOS / traffic class.
pub const ECN_NOT_ECT: u8 = 0b00;
pub const ECN_ECT1: u8 = 0b01;
pub const ECN_ECT0: u8 = 0b10;
pub const ECN_CE: u8 = 0b11;

/// SONiC WRED_PROFILE `ecn` values, as a bit set of the colours that mark
/// (bit 0 green, bit 1 yellow, bit 2 red). The model colours every packet
/// green, so marking is on iff bit 0 is set.
pub const ECN_NONE: u8 = 0;
pub const ECN_GREEN: u8 = 1;
pub const ECN_YELLOW: u8 = 2;
pub const ECN_GREEN_YELLOW: u8 = 3;
pub const ECN_RED: u8 = 4;
pub const ECN_GREEN_RED: u8 = 5;
pub const ECN_YELLOW_RED: u8 = 6;
pub const ECN_ALL: u8 = 7;

/// The code of a SONiC `ecn` value name (`"ecn_all"` ...).
#[inline(always)]
pub fn ecn_mode_from_name(name: &str) -> Option<u8> {
    Some(match name.as_bytes() {
        b"ecn_none" => ECN_NONE,
        b"ecn_green" => ECN_GREEN,
        b"ecn_yellow" => ECN_YELLOW,
        b"ecn_green_yellow" => ECN_GREEN_YELLOW,
        b"ecn_red" => ECN_RED,
        b"ecn_green_red" => ECN_GREEN_RED,
        b"ecn_yellow_red" => ECN_YELLOW_RED,
        b"ecn_all" => ECN_ALL,
        _ => return None,
    })
}

/// SONiC WRED_PROFILE (green colour only), a map value per (egress port, TC).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WredProfile {
    /// Queue bytes below which nothing is marked or dropped.
    pub green_min_threshold: u32,
    /// Queue bytes at or above which every eligible packet is marked/dropped.
    pub green_max_threshold: u32,
    /// Probability in percent (0..=100) just below the max threshold.
    pub green_drop_probability: u8,
    /// [`ECN_NONE`] .. [`ECN_ALL`]; marking is on iff the green bit is set.
    pub ecn: u8,
    /// SONiC `wred_green_enable`: drop non-ECT packets of lossy classes where
    /// an ECT packet would be marked (and every packet when marking is off).
    pub wred_green_enable: u8,
    pub _pad: u8,
}

impl WredProfile {
    /// SONiC's AZURE_LOSSLESS profile: 1 MiB / 2 MiB, 5 %, ecn_all, WRED on.
    pub const AZURE_LOSSLESS: WredProfile = WredProfile {
        green_min_threshold: 1_048_576,
        green_max_threshold: 2_097_152,
        green_drop_probability: 5,
        ecn: ECN_ALL,
        wred_green_enable: 1,
        _pad: 0,
    };

    /// Green packets are ECN-marked.
    #[inline(always)]
    pub fn marks(&self) -> bool {
        self.ecn & ECN_GREEN != 0
    }
}

/// What WRED does with a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcnAction {
    /// Leave it alone (below the curve, not eligible, or already CE).
    Forward,
    /// Set CE ([`ipv4_set_ce`] / [`ipv6_set_ce`]).
    MarkCe,
    /// WRED drop (lossy class, non-ECT or marking off, WRED enabled).
    Drop,
}

/// The RED curve hit: `queue_bytes` below min never, at or above max always,
/// in between with probability `Pmax% * (q - min) / (max - min)`.
///
/// Integer-only: with `r = rand >> 8` (24 bits, the high bits of the
/// generator), hit iff `r * 100 * (max - min) < Pmax * (q - min) * 2^24`.
/// Both sides are below `2^24 * 100 * 2^32 < 2^63`; the probability is exact
/// to within `2^-24`. No division, so `min == max` is a plain step. A
/// probability above 100 is treated as 100.
#[inline(always)]
pub fn red_hit(p: &WredProfile, queue_bytes: u32, rand: u32) -> bool {
    if queue_bytes >= p.green_max_threshold {
        return true;
    }
    if queue_bytes < p.green_min_threshold {
        return false;
    }
    // min <= q < max here, so max - min > 0.
    let pmax = if p.green_drop_probability > 100 {
        100
    } else {
        p.green_drop_probability
    };
    let range = u64::from(p.green_max_threshold - p.green_min_threshold);
    let over = u64::from(queue_bytes - p.green_min_threshold);
    let r = u64::from(rand >> 8);
    r * 100 * range < (u64::from(pmax) * over) << 24
}

/// WRED / ECN decision for one packet entering a queue of `queue_bytes`.
///
/// `ecn` is the packet's codepoint; `lossless` its class is in pfc_enable;
/// `control` it is a CNP or another control class (never marked or
/// dropped). Only ECT(0)/ECT(1) get CE; CE stays CE; non-ECT is never
/// marked; lossless classes are never WRED-dropped.
#[inline(always)]
pub fn wred(
    p: &WredProfile,
    queue_bytes: u32,
    ecn: u8,
    lossless: bool,
    control: bool,
    rand: u32,
) -> EcnAction {
    if control || !red_hit(p, queue_bytes, rand) {
        return EcnAction::Forward;
    }
    let ecn = ecn & 3;
    if p.marks() {
        if ecn == ECN_ECT0 || ecn == ECN_ECT1 {
            return EcnAction::MarkCe;
        }
        if ecn == ECN_CE {
            return EcnAction::Forward;
        }
    }
    if !lossless && p.wred_green_enable != 0 {
        EcnAction::Drop
    } else {
        EcnAction::Forward
    }
}

/// Sets CE in an IPv4 header: from the first header byte (version/IHL), the
/// TOS byte and the header checksum, the new TOS and checksum (RFC 1624
/// incremental update of the 16-bit word holding version/IHL and TOS).
/// `None` when nothing changes: non-ECT is never marked, CE stays CE.
#[inline(always)]
pub fn ipv4_set_ce(ver_ihl: u8, tos: u8, check: u16) -> Option<(u8, u16)> {
    let ecn = tos & 3;
    if ecn != ECN_ECT0 && ecn != ECN_ECT1 {
        return None;
    }
    let new_tos = tos | ECN_CE;
    let old = u16::from_be_bytes([ver_ihl, tos]);
    let new = u16::from_be_bytes([ver_ihl, new_tos]);
    Some((new_tos, csum::update16(check, old, new)))
}

/// ECN codepoint of an IPv6 header from its second byte (the traffic class
/// spans bytes 0-1: its two low bits, the ECN field, are bits 5..4 of byte
/// 1).
#[inline(always)]
pub fn ipv6_ecn(b1: u8) -> u8 {
    (b1 >> 4) & 3
}

/// Sets CE in an IPv6 header: the new second byte (byte 0 holds only the
/// version and the DSCP's high bits, so it never changes; the flow label
/// nibble is kept). `None` when nothing changes (non-ECT or already CE).
#[inline(always)]
pub fn ipv6_set_ce(b1: u8) -> Option<u8> {
    let ecn = ipv6_ecn(b1);
    if ecn != ECN_ECT0 && ecn != ECN_ECT1 {
        return None;
    }
    Some(b1 | (ECN_CE << 4))
}

// ---------------------------------------------------------------------------
// 3. Ingress accounting
// ---------------------------------------------------------------------------

/// [`BufferProfile::mode`]: threshold = 2^dynamic_th x free shared buffer.
pub const TH_DYNAMIC: u8 = 0;
/// [`BufferProfile::mode`]: threshold = `static_th` bytes.
pub const TH_STATIC: u8 = 1;
pub const DYNAMIC_TH_MIN: i8 = -8;
pub const DYNAMIC_TH_MAX: i8 = 7;
/// HPCC's XON hysteresis (bytes).
pub const DEFAULT_XON_OFFSET: u32 = 3 * 1024;

/// SONiC BUFFER_PROFILE of a priority group, a map value per (ingress port,
/// PG).
///
/// `size` is the PG's reserve (guaranteed bytes) and `xoff` its private
/// headroom; note that SONiC's Mellanox lossless profiles use `size` for the
/// whole headroom (xon + xoff) instead. `xon` is kept so configurations map
/// 1:1 and are validated (`xon <= xoff`); the model's XON decision uses
/// `xon_offset` (hysteresis below the shared threshold).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferProfile {
    /// Reserved bytes, charged first.
    pub size: u32,
    /// SONiC `xon` (validated, informational).
    pub xon: u32,
    /// Headroom bytes (lossless PGs only), charged after the shared pool.
    pub xoff: u32,
    /// XON when shared use + xon_offset <= threshold (and no headroom use).
    pub xon_offset: u32,
    /// Shared threshold in bytes when `mode == TH_STATIC`.
    pub static_th: u32,
    /// -8..=7 when `mode == TH_DYNAMIC`.
    pub dynamic_th: i8,
    /// [`TH_DYNAMIC`] or [`TH_STATIC`].
    pub mode: u8,
    /// Nonzero for a lossless PG (headroom, PFC, never dropped by WRED).
    pub lossless: u8,
    pub _pad: u8,
}

/// A shared buffer pool (SONiC BUFFER_POOL). `size` is the shared part only
/// (reserves and headroom are outside it, as in SONiC's Mellanox pools);
/// `used` is the shared bytes charged by every PG of the pool.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SharedPool {
    pub size: u32,
    pub used: u32,
}

impl SharedPool {
    /// Free shared bytes.
    #[inline(always)]
    pub fn free(&self) -> u32 {
        self.size.saturating_sub(self.used)
    }
}

/// Buffer use of one (ingress port, PG), a map value.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgState {
    pub reserve_used: u32,
    pub shared_used: u32,
    pub headroom_used: u32,
    /// Peak of the three together (watermark); the controller clears it.
    pub peak: u32,
}

impl PgState {
    pub const ZERO: PgState = PgState {
        reserve_used: 0,
        shared_used: 0,
        headroom_used: 0,
        peak: 0,
    };

    /// Bytes held.
    #[inline(always)]
    pub fn total(&self) -> u64 {
        u64::from(self.reserve_used) + u64::from(self.shared_used) + u64::from(self.headroom_used)
    }
}

/// How bytes were charged (admit) or given back (release).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Charge {
    pub reserve: u32,
    pub shared: u32,
    pub headroom: u32,
}

/// Why a packet was not admitted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Lossy PG: reserve and shared (threshold or pool) are full.
    SharedFull,
    /// Lossless PG: reserve, shared and headroom are full (PFC came too
    /// late: headroom undersized or the peer ignores PAUSE).
    HeadroomExhausted,
}

/// The shared-buffer threshold of a PG in bytes.
///
/// Dynamic: `2^dynamic_th x free`, `dynamic_th` clamped to -8..=7 (the
/// formula as SONiC documents it; SAI on Mellanox reads -8 as 0 and 7 as
/// unlimited). At most `2^32 x 2^7 = 2^39`. Static: `static_th`.
#[inline(always)]
pub fn shared_threshold(prof: &BufferProfile, pool: &SharedPool) -> u64 {
    if prof.mode == TH_STATIC {
        return u64::from(prof.static_th);
    }
    let free = u64::from(pool.free());
    // Constant bounds: the compiler drops `clamp`'s min <= max assertion.
    let th = prof.dynamic_th.clamp(DYNAMIC_TH_MIN, DYNAMIC_TH_MAX);
    if th >= 0 {
        free << (th as u32 & 7)
    } else {
        free >> ((-th) as u32 & 15)
    }
}

#[inline(always)]
fn min_u64(a: u64, b: u64) -> u64 {
    if a < b {
        a
    } else {
        b
    }
}

impl PgState {
    /// Admits a packet of `len` bytes: reserve first, then shared up to the
    /// PG's threshold (evaluated before the packet) and the pool's free
    /// bytes, then headroom (lossless only); a packet is admitted whole or
    /// not at all, and a drop changes nothing. On success `pool.used` grows
    /// by `charge.shared`.
    #[inline(always)]
    pub fn admit(
        &mut self,
        pool: &mut SharedPool,
        prof: &BufferProfile,
        len: u32,
    ) -> Result<Charge, DropReason> {
        let reserve_room = prof.size.saturating_sub(self.reserve_used);
        let reserve = if len < reserve_room {
            len
        } else {
            reserve_room
        };
        let mut rest = len - reserve;
        let th = shared_threshold(prof, pool);
        let pg_room = th.saturating_sub(u64::from(self.shared_used));
        let room = min_u64(
            min_u64(pg_room, u64::from(pool.free())),
            u64::from(u32::MAX - self.shared_used),
        );
        let shared = min_u64(u64::from(rest), room) as u32;
        rest -= shared;
        let headroom = if rest == 0 {
            0
        } else if prof.lossless == 0 {
            return Err(DropReason::SharedFull);
        } else if rest <= prof.xoff.saturating_sub(self.headroom_used) {
            rest
        } else {
            return Err(DropReason::HeadroomExhausted);
        };
        self.reserve_used += reserve;
        self.shared_used += shared;
        self.headroom_used += headroom;
        pool.used = pool.used.saturating_add(shared);
        let t = self.total();
        if t > u64::from(self.peak) {
            self.peak = if t > u64::from(u32::MAX) {
                u32::MAX
            } else {
                t as u32
            };
        }
        Ok(Charge {
            reserve,
            shared,
            headroom,
        })
    }

    /// Releases `len` bytes (drained from an egress queue) in the reverse
    /// order: headroom, then shared (back to the pool), then reserve. Returns
    /// the split; releasing more than the PG holds releases what it holds.
    #[inline(always)]
    pub fn release(&mut self, pool: &mut SharedPool, len: u32) -> Charge {
        let headroom = if len < self.headroom_used {
            len
        } else {
            self.headroom_used
        };
        let mut rest = len - headroom;
        let shared = if rest < self.shared_used {
            rest
        } else {
            self.shared_used
        };
        rest -= shared;
        let reserve = if rest < self.reserve_used {
            rest
        } else {
            self.reserve_used
        };
        self.headroom_used -= headroom;
        self.shared_used -= shared;
        self.reserve_used -= reserve;
        pool.used = pool.used.saturating_sub(shared);
        Charge {
            reserve,
            shared,
            headroom,
        }
    }
}

// ---------------------------------------------------------------------------
// 4. PFC generation
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// 5. Headroom and validation
// ---------------------------------------------------------------------------

/// Bytes one pause quantum covers (512 bits).
pub const QUANTUM_BYTES: u64 = 64;
/// SONiC Mellanox ASIC_TABLE (Spectrum): mac_phy_delay 0.8 KB, rounded up.
pub const DEFAULT_MAC_PHY_DELAY_BYTES: u32 = 820;
/// SONiC Mellanox ASIC_TABLE (Spectrum): pipeline_latency 18 KB (the xon).
pub const DEFAULT_PIPELINE_LATENCY_BYTES: u32 = 18 * 1024;

/// Pause quanta the peer may take to react at `speed_mbps` (SONiC's table,
/// after IEEE 802.3 31B.3.7): 400G/800G 905, 200G 453, 100G 394, 50G 147,
/// 40G 118, 25G 80, 10G 67. Another speed takes the entry of the next
/// listed speed above it (more quanta, the conservative side: below 10G ->
/// 67); above 800G, 905.
#[inline(always)]
pub fn peer_response_quanta(speed_mbps: u32) -> u32 {
    const TABLE: [(u32, u32); 8] = [
        (10_000, 67),
        (25_000, 80),
        (40_000, 118),
        (50_000, 147),
        (100_000, 394),
        (200_000, 453),
        (400_000, 905),
        (800_000, 905),
    ];
    let mut i = 0;
    while i < TABLE.len() {
        let (s, q) = TABLE[i];
        if speed_mbps <= s {
            return q;
        }
        i += 1;
    }
    905
}

/// Cable round-trip bytes: `2 x length x speed / 1.98e8 m/s / 8`, i.e.
/// `length_m x speed_mbps / 792`, rounded up.
#[inline(always)]
pub fn cable_bytes(length_m: u32, speed_mbps: u32) -> u64 {
    (u64::from(length_m) * u64::from(speed_mbps)).div_ceil(792)
}

/// Inputs of [`headroom`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadroomInput {
    pub speed_mbps: u32,
    pub cable_m: u32,
    /// Largest lossless frame (bytes).
    pub mtu: u32,
    /// Measured time from a PG crossing XOFF to our PFC frame leaving the
    /// port (controller emit latency); the peer keeps sending at line rate
    /// meanwhile.
    pub response_ns: u64,
    /// Bytes held in our egress pipeline and PHY once XOFF is generated.
    pub mac_phy_delay: u32,
    /// SONiC's pipeline latency, used as xon.
    pub pipeline_latency: u32,
}

impl HeadroomInput {
    /// With the Mellanox defaults for MAC/PHY delay and pipeline latency.
    #[inline(always)]
    pub fn new(speed_mbps: u32, cable_m: u32, mtu: u32, response_ns: u64) -> Self {
        HeadroomInput {
            speed_mbps,
            cable_m,
            mtu,
            response_ns,
            mac_phy_delay: DEFAULT_MAC_PHY_DELAY_BYTES,
            pipeline_latency: DEFAULT_PIPELINE_LATENCY_BYTES,
        }
    }
}

/// Headroom of a lossless PG (bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Headroom {
    pub xoff: u32,
    pub xon: u32,
    pub size: u32,
}

/// SONiC's Mellanox formula with one cell per byte (no small-packet cell
/// factor) and our own emit latency added to the propagation:
///
/// ```text
/// propagation = mtu + cable_bytes + mac_phy_delay + peer_quanta x 64
///             + bytes_for(response_ns)
/// xoff = mtu + propagation      xon = pipeline_latency      size = xoff + xon
/// ```
/// Every term is rounded up on its own (a few bytes above the exact sum);
/// results saturate at `u32::MAX`.
#[inline(always)]
pub fn headroom(inp: &HeadroomInput) -> Headroom {
    let mtu = u64::from(inp.mtu);
    let propagation = mtu
        .saturating_add(cable_bytes(inp.cable_m, inp.speed_mbps))
        .saturating_add(u64::from(inp.mac_phy_delay))
        .saturating_add(u64::from(peer_response_quanta(inp.speed_mbps)) * QUANTUM_BYTES)
        .saturating_add(bytes_for_nanos(inp.response_ns, inp.speed_mbps));
    let xoff = mtu.saturating_add(propagation);
    // xon (the pipeline latency) is capped at xoff: at low speeds the fixed
    // 18 KB would otherwise exceed the whole headroom
    let xon = u64::from(inp.pipeline_latency).min(xoff);
    let size = xoff.saturating_add(xon);
    let clamp = |v: u64| {
        if v > u64::from(u32::MAX) {
            u32::MAX
        } else {
            v as u32
        }
    };
    Headroom {
        xoff: clamp(xoff),
        xon: clamp(xon),
        size: clamp(size),
    }
}

/// A configuration problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfigError {
    /// WRED green_min_threshold > green_max_threshold.
    WredMinAboveMax,
    /// WRED green_drop_probability > 100.
    WredProbabilityOver100,
    /// WRED ecn is not one of the SONiC values.
    UnknownEcnMode,
    /// BUFFER_PROFILE xon > xoff.
    XonAboveXoff,
    /// BUFFER_PROFILE headroom (xoff) larger than the pool.
    HeadroomExceedsPool,
    /// BUFFER_PROFILE dynamic_th outside -8..=7.
    DynamicThOutOfRange,
    /// BUFFER_PROFILE mode is neither dynamic nor static.
    UnknownThresholdMode,
}

/// Checks a WRED profile.
#[inline(always)]
pub fn validate_wred(p: &WredProfile) -> Result<(), ConfigError> {
    if p.green_min_threshold > p.green_max_threshold {
        return Err(ConfigError::WredMinAboveMax);
    }
    if p.green_drop_probability > 100 {
        return Err(ConfigError::WredProbabilityOver100);
    }
    if p.ecn > ECN_ALL {
        return Err(ConfigError::UnknownEcnMode);
    }
    Ok(())
}

/// Checks a buffer profile against the pool it draws from.
#[inline(always)]
pub fn validate_buffer_profile(p: &BufferProfile, pool: &SharedPool) -> Result<(), ConfigError> {
    if p.mode != TH_DYNAMIC && p.mode != TH_STATIC {
        return Err(ConfigError::UnknownThresholdMode);
    }
    if p.mode == TH_DYNAMIC && (p.dynamic_th < DYNAMIC_TH_MIN || p.dynamic_th > DYNAMIC_TH_MAX) {
        return Err(ConfigError::DynamicThOutOfRange);
    }
    if p.xon > p.xoff {
        return Err(ConfigError::XonAboveXoff);
    }
    if p.xoff > pool.size {
        return Err(ConfigError::HeadroomExceedsPool);
    }
    Ok(())
}

/// Checks a computed headroom against a pool.
#[inline(always)]
pub fn validate_headroom(h: &Headroom, pool: &SharedPool) -> Result<(), ConfigError> {
    if h.xon > h.xoff {
        return Err(ConfigError::XonAboveXoff);
    }
    if h.size > pool.size {
        return Err(ConfigError::HeadroomExceedsPool);
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// 6. PFC watchdog
// ---------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------
// Layout
// ---------------------------------------------------------------------------

const _: () =
    assert!(core::mem::size_of::<EgressQueue>() == 4 + 4 + 8 + 8 + 8 + 4 * MODEL_PORTS + 4 + 4);
const _: () = assert!(core::mem::size_of::<EgressQueue>() == 104);
const _: () = assert!(core::mem::size_of::<WredProfile>() == 12);
const _: () = assert!(core::mem::size_of::<BufferProfile>() == 24);
const _: () = assert!(core::mem::size_of::<SharedPool>() == 8);
const _: () = assert!(core::mem::size_of::<PgState>() == 16);
const _: () = assert!(core::mem::size_of::<PfcTxState>() == 24);
const _: () = assert!(core::mem::size_of::<PfcWdConfig>() == 12);
const _: () = assert!(core::mem::size_of::<PfcWd>() == 32);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), only integer fields and arrays of integers, no padding
    // (asserted above), every bit pattern valid.
    unsafe impl aya::Pod for super::EgressQueue {}
    unsafe impl aya::Pod for super::WredProfile {}
    unsafe impl aya::Pod for super::BufferProfile {}
    unsafe impl aya::Pod for super::SharedPool {}
    unsafe impl aya::Pod for super::PgState {}
    unsafe impl aya::Pod for super::PfcTxState {}
    unsafe impl aya::Pod for super::PfcWdConfig {}
    unsafe impl aya::Pod for super::PfcWd {}
}
