//! Port load: CONGA's discounting rate estimator and the quantised load
//! bands.

/// T_dre, the estimator's decay period (CONGA: 50 us).
pub const DRE_PERIOD_NS: u64 = 50_000;
/// alpha = 1 / 2^DRE_SHIFT = 1/4: the power of two nearest CONGA's 0.2. The
/// estimate follows a rate change with a time constant of T_dre / alpha =
/// 200 us (CONGA: 250 us), two flowlet timeouts. Fixed: [`dre_decay`]
/// multiplies by exact powers of 3/4.
pub const DRE_SHIFT: u32 = 2;
/// After this many idle periods (1.6 ms) the estimate is set to 0 instead of
/// to the at most (3/4)^32 = 1e-4 of its value that decay would leave.
pub const DRE_MAX_STEPS: u64 = 32;
/// Utilisation of a port whose speed is unknown (0): reads as saturated, so
/// load-aware modes do not pile onto it.
pub const UTIL_UNKNOWN: u32 = u32::MAX;
/// X saturates at 2^40 bytes (1 TiB; a 1.6 Tb/s port at full speed reads
/// about 4e7), which keeps every product in 64 bits: a checked or
/// saturating 64-bit multiply would need a 128-bit helper eBPF lacks.
pub const DRE_MAX_BYTES: u64 = 1 << 40;
/// Quality bands ([`quality_band`]).
pub const NUM_BANDS: u8 = 8;
/// Width of a band in per-mille of the port speed.
pub const BAND_PERMILLE: u32 = 1000 / NUM_BANDS as u32;

/// A port's discounting rate estimator (CONGA's DRE), the value of a map
/// indexed by port.
///
/// `X <- X * (1 - alpha)` at every multiple of [`DRE_PERIOD_NS`] (the grid is
/// the same for every port, so all ports decay in phase), `X += bytes` for
/// each packet sent. The decay is applied lazily, on the next update or
/// read, for all the periods elapsed at once.
///
/// Steady state: for a constant rate R bytes/s, i.e. B = R * T_dre bytes per
/// period, X converges to `R * T_dre / alpha` (= 4B) just before each
/// decay and to `R * T_dre * (1 - alpha) / alpha` (= 3B) just after. The
/// read ([`PortRate::bytes_at`]) also decays the fraction of the current
/// period already elapsed, which flattens that sawtooth to within
/// alpha^2 / (4 (1 - alpha)) = 2% above 3B; [`PortRate::utilisation`]
/// divides by the 3B of a full-speed port.
///
/// Race: updated by every CPU that sends on the port. A lost update loses
/// that packet's bytes (one MTU against X = 2.5 MB at 100 Gb/s full load,
/// 0.2%). If two CPUs straddle a period boundary, one decay step can be
/// skipped or applied twice: a one-off error of at most alpha * X that fades
/// with the 200 us time constant. `speed_mbps` is written only by the
/// controller.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRate {
    /// X, in bytes, decayed up to `epoch_ns` (at most [`DRE_MAX_BYTES`]).
    pub bytes: u64,
    /// The period boundary (a multiple of [`DRE_PERIOD_NS`]) `bytes` is
    /// decayed to.
    pub epoch_ns: u64,
    /// Configured port speed in Mb/s (0: unknown).
    pub speed_mbps: u32,
    /// Place mode: the flows placed on the port lately, a count that
    /// halves every 2^[`PLACE_COUNT_SHIFT`](super::PLACE_COUNT_SHIFT) ns
    /// ([`PortRate::placements_at`]).
    pub placed: u32,
    /// Place mode: when the port would have sent every byte booked on it
    /// by placements, at its speed ([`PortRate::book`]).
    pub booked_until_ns: u64,
}

/// `x` (capped at [`DRE_MAX_BYTES`]) after `steps` decays by alpha = 1/4,
/// in constant time: the binary digits of `steps` select exact factors
/// 3/4, 9/16, 81/256 and 6561/65536 (twice for 16 steps), each product
/// rounded down, so any x >= 1 strictly decreases and a small x reaches 0.
/// One step is exactly `floor(3x / 4)`; several steps at once may differ from
/// as many single steps by a few bytes of rounding. 0 from
/// [`DRE_MAX_STEPS`] steps on.
#[inline(always)]
pub fn dre_decay(x: u64, steps: u64) -> u64 {
    if steps >= DRE_MAX_STEPS {
        return 0;
    }
    // x <= 2^40, so every product below fits in 64 bits
    let mut x = if x > DRE_MAX_BYTES { DRE_MAX_BYTES } else { x };
    if steps & 1 != 0 {
        x = (x * 3) >> 2;
    }
    if steps & 2 != 0 {
        x = (x * 9) >> 4;
    }
    if steps & 4 != 0 {
        x = (x * 81) >> 8;
    }
    if steps & 8 != 0 {
        x = (x * 6561) >> 16;
    }
    if steps & 16 != 0 {
        x = (x * 6561) >> 16;
        x = (x * 6561) >> 16;
    }
    x
}

impl PortRate {
    /// An idle port of `speed_mbps`.
    pub const fn new(speed_mbps: u32) -> Self {
        PortRate {
            bytes: 0,
            epoch_ns: 0,
            speed_mbps,
            placed: 0,
            booked_until_ns: 0,
        }
    }

    /// X and its epoch decayed to the last period boundary at or before
    /// `now_ns` (no change when `now_ns` is before the epoch).
    #[inline(always)]
    fn decayed(&self, now_ns: u64) -> (u64, u64) {
        let x = if self.bytes > DRE_MAX_BYTES {
            DRE_MAX_BYTES
        } else {
            self.bytes
        };
        if now_ns <= self.epoch_ns {
            return (x, self.epoch_ns);
        }
        let elapsed = now_ns - self.epoch_ns;
        if elapsed < DRE_PERIOD_NS {
            // still in the epoch's period (most packets): what the division
            // below gives, without it
            return (x, self.epoch_ns);
        }
        let periods = elapsed / DRE_PERIOD_NS;
        let epoch = now_ns - elapsed % DRE_PERIOD_NS;
        (dre_decay(x, periods), epoch)
    }

    /// Accounts `bytes` sent at `now_ns`.
    #[inline(always)]
    pub fn update(&mut self, now_ns: u64, bytes: u32) {
        let (x, epoch) = self.decayed(now_ns);
        let x = x + bytes as u64; // x <= 2^40: no overflow
        self.bytes = if x > DRE_MAX_BYTES { DRE_MAX_BYTES } else { x };
        self.epoch_ns = epoch;
    }

    /// X as seen at `now_ns`: decayed by the whole periods elapsed, then by
    /// the elapsed fraction of the current one (no write).
    #[inline(always)]
    pub fn bytes_at(&self, now_ns: u64) -> u64 {
        let (x, epoch) = self.decayed(now_ns);
        // into < T_dre (2^16) and x <= 2^40: the product fits in 64 bits,
        // and the subtrahend is at most x / 4
        let into = now_ns.saturating_sub(epoch);
        let into = if into > DRE_PERIOD_NS {
            DRE_PERIOD_NS
        } else {
            into
        };
        x - (x >> DRE_SHIFT).wrapping_mul(into) / DRE_PERIOD_NS
    }

    /// Utilisation at `now_ns` in per-mille of the port speed (above 1000
    /// when the port is offered more than its speed); [`UTIL_UNKNOWN`] when
    /// the speed is 0.
    ///
    /// A full-speed port moves `speed_mbps * T_dre / 8000` bytes per
    /// period, B, and reads X = 3B (see the type's docs), so
    /// `util = 1000 * X / (3B) = 8e6 * X / (3 * speed_mbps * T_dre)`.
    #[inline(always)]
    pub fn utilisation(&self, now_ns: u64) -> u32 {
        // at most 3 * 2^32 * 5e4 and 2^40 * 8e6: both fit in 64 bits
        let full = ((1u64 << DRE_SHIFT) - 1)
            .wrapping_mul(self.speed_mbps as u64)
            .wrapping_mul(DRE_PERIOD_NS);
        let util = match self
            .bytes_at(now_ns)
            .wrapping_mul(8_000_000)
            .checked_div(full)
        {
            Some(u) => u,
            None => return UTIL_UNKNOWN,
        };
        if util > u32::MAX as u64 {
            u32::MAX
        } else {
            util as u32
        }
    }

    /// The port's quality band at `now_ns`.
    #[inline(always)]
    pub fn band(&self, now_ns: u64) -> u8 {
        quality_band(self.utilisation(now_ns))
    }
}

/// 3-bit quality band of a utilisation in per-mille, as CONGA's 3-bit
/// metric and Broadcom DLB's 8 bands: band `b` covers
/// `[125 b, 125 (b + 1))` per-mille, so 0 is below 12.5% (idle) and 7 is at
/// or above 87.5% (saturated).
#[inline(always)]
pub const fn quality_band(util_permille: u32) -> u8 {
    let b = util_permille / BAND_PERMILLE;
    if b >= NUM_BANDS as u32 {
        NUM_BANDS - 1
    } else {
        b as u8
    }
}
