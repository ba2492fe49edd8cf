//! Ingress accounting per (port, priority group): reserve, shared pool under
//! a dynamic or static threshold, headroom (SONiC BUFFER_PROFILE).

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
