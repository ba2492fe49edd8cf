//! Buffer watermarks (SONiC / SAI): the high-water marks, in bytes, of an
//! egress queue's shared occupancy, of an ingress priority group's
//! shared and headroom occupancy, and of the shared pool's occupancy.
//!
//! The data plane raises them on every admitted packet ([`note_queue`],
//! [`note_pg`], [`note_pool`]: a compare, and a store when higher, per mark, on entries
//! whose locks the caller already holds); the controller reads and resets them at its watermark interval
//! and folds what it read into its periodic, persistent and user
//! ("since the last clear") marks, as SONiC's watermark orchestration does
//! with the SAI read-and-clear statistics.

use super::*;

/// The watermarks of one (port, TC) entry: of the port's egress queue for
/// the TC, of the port's ingress PG for the TC, and of the shared pool as
/// that PG's admissions left it, since the controller last reset them. A
/// map value (index port * 8 + tc).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Watermark {
    /// SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES.
    pub queue_shared: u32,
    /// SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES.
    pub pg_shared: u32,
    /// SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES.
    pub pg_headroom: u32,
    /// SAI_BUFFER_POOL_STAT_WATERMARK_BYTES, one share of it: the shared
    /// pool's `used` right after an admission of this entry's PG changed
    /// it ([`note_pool`]). The pool's peak is the maximum over every
    /// entry. (This field was padding, always 0, before; a data plane of
    /// such a build leaves it 0.)
    pub pool_shared: u32,
}

impl Watermark {
    pub const ZERO: Watermark = Watermark {
        queue_shared: 0,
        pg_shared: 0,
        pg_headroom: 0,
        pool_shared: 0,
    };
}

/// What an ingress PG's bytes count as: (shared, headroom). The reserve
/// (the PG's guaranteed minimum, BUFFER_PROFILE `size`) is neither, as in
/// SAI, where the shared watermark counts what the PG holds of the shared
/// pool and the headroom watermark what it holds of its XOFF room.
#[inline(always)]
pub fn pg_occupancy(pg: &PgState) -> (u32, u32) {
    (pg.shared_used, pg.headroom_used)
}

/// What an egress queue's bytes count as shared: all of them (the model
/// keeps no egress reserve; headroom is an ingress PG's, so a queue has no
/// headroom mark).
#[inline(always)]
pub fn queue_occupancy<const N: usize>(q: &EgressQueueN<N>) -> u32 {
    q.bytes
}

/// Raises a mark to `v` (a compare and, when higher, a store).
#[inline(always)]
pub fn raise(mark: &mut u32, v: u32) {
    if v > *mark {
        *mark = v;
    }
}

/// After an arrival's admission, the egress queue's mark, in the entry
/// of (egress port, TC); call with the queue's lock held.
#[inline(always)]
pub fn note_queue<const N: usize>(wm: &mut Watermark, q: &EgressQueueN<N>) {
    raise(&mut wm.queue_shared, queue_occupancy(q));
}

/// After an arrival's admission, the ingress PG's marks, in the entry of
/// (ingress port, TC); call with the PG's lock held.
#[inline(always)]
pub fn note_pg(wm: &mut Watermark, pg: &PgState) {
    let (shared, headroom) = pg_occupancy(pg);
    raise(&mut wm.pg_shared, shared);
    raise(&mut wm.pg_headroom, headroom);
}

/// After an arrival's admission changed the shared pool's `used` to
/// `used` (the value its atomic add left, so exact whatever other CPUs
/// did), the pool's mark in the entry of (ingress port, TC); call with the
/// PG's lock held. The pool only grows by admissions, so its peak is
/// always one of these values: the maximum of `pool_shared` over every
/// entry is the pool's peak.
#[inline(always)]
pub fn note_pool(wm: &mut Watermark, used: u32) {
    raise(&mut wm.pool_shared, used);
}
