//! Tables read on every packet whose entries are never seen half-written,
//! without a hash map: an array holds two slots an id, and a second array a
//! word an id naming the live slot. A writer fills the spare slot, then
//! flips the word (one aligned 4-byte store); a reader loads the word, then
//! the slot it names. A reader that loaded the word before the flip reads
//! the slot it was given, which stays whole until the *next* write of that
//! id: two writes of one id within one reader's two loads (nanoseconds;
//! each write is a system call) are the only way to see a mixed entry.
//!
//! Why: a hash-map hit costs a helper call and a hash (`cost.unit.lookup`,
//! about 30 ns on the benchmarks' machines), an array lookup the verifier
//! inlines costs a few; next hops and groups are looked up once a packet,
//! and once a member in a load-aware group's scan.

/// The index in the slots' array of `id`'s slot `live` (0 or 1).
#[inline(always)]
pub const fn slot_index(id: u32, live: u32) -> u32 {
    id.wrapping_mul(2).wrapping_add(live & 1)
}

/// The slot a writer fills while `live` is being read.
#[inline(always)]
pub const fn spare(live: u32) -> u32 {
    (live & 1) ^ 1
}
