//! Next-hop groups: members, weights, liveness and the resilient bucket
//! table.

use super::*;

/// Members of a group.
pub const MAX_MEMBERS: usize = 16;
pub(super) const MEMBER_MASK: usize = MAX_MEMBERS - 1;
/// Buckets of a group's resilient table (a power of two): weights resolve
/// to 1/128 of the traffic.
pub const NBUCKETS: usize = 128;
const BUCKET_MASK: u32 = NBUCKETS as u32 - 1;

/// Per-flow hashing over the bucket table (plain ECMP / UCMP).
pub const MODE_HASH: u8 = 0;
/// Flowlets, each placed by the bucket table (LetFlow-like).
pub const MODE_FLOWLET: u8 = 1;
/// Flowlets, each sent to the least-loaded member (CONGA-like, local only).
pub const MODE_BANDWIDTH: u8 = 2;
/// Every packet to the least-loaded member (packet spraying; reorders).
pub const MODE_SPRAY: u8 = 3;
/// Each flow (QP) placed once on the member booked least far ahead,
/// booked at once, then kept while active ([`place_booking`]).
pub const MODE_PLACE: u8 = 4;
/// The highest mode.
pub const MODE_LAST: u8 = MODE_PLACE;
/// Every mode's name in configuration, by mode number.
pub const MODE_NAMES: [&str; MODE_LAST as usize + 1] =
    ["hash", "flowlet", "bandwidth", "spray", "place"];
/// Every mode, in order.
pub const ALL_MODES: [u8; MODE_LAST as usize + 1] = [
    MODE_HASH,
    MODE_FLOWLET,
    MODE_BANDWIDTH,
    MODE_SPRAY,
    MODE_PLACE,
];

/// [`Group::flags`]: UET packets (UDP 4793 with a PDS header) are placed
/// by the bucket of their flow hash, whose UDP source port is UET's entropy
/// value, whatever the mode: the same entropy value keeps its path, a new
/// one is hashed anew, and no flowlet or load state moves it (UET's
/// path-aware spraying relies on a stable entropy-to-path mapping). Other
/// traffic (RoCEv2 included) keeps the group's mode.
pub const GROUP_F_UET_ENTROPY: u8 = 1;
/// Every flag a group may carry.
pub const GROUP_FLAGS: u8 = GROUP_F_UET_ENTROPY;

/// CONGA and LetFlow use 100 us (Broadcom DLB's inactivity default is
/// 256 us); it must exceed the delay difference between paths.
pub const DEFAULT_FLOWLET_TIMEOUT_NS: u32 = 100_000;

/// Whether `mode` keeps per-flow [`Flowlet`] state (the caller looks up the
/// flowlet entry only then).
#[inline(always)]
pub const fn uses_flowlets(mode: u8) -> bool {
    mode == MODE_FLOWLET || mode == MODE_BANDWIDTH || mode == MODE_PLACE
}

/// Whether `mode` keeps its flows' entries in the set-associative table
/// ([`FlowWays`], [`flow_way`]) rather than the direct-mapped flowlet
/// table ([`FlowletSlot`], [`flowlet_entry`]).
#[inline(always)]
pub const fn uses_flow_ways(mode: u8) -> bool {
    mode == MODE_PLACE
}

/// Whether `mode` reads its members' port load ([`PortRate`] bands): a
/// caller that keeps the ports' rates for nothing else may keep them only
/// then ([`select`] calls its `bands` in these modes alone).
#[inline(always)]
pub const fn uses_port_load(mode: u8) -> bool {
    mode == MODE_BANDWIDTH || mode == MODE_SPRAY || mode == MODE_PLACE
}

/// Whether `mode` books placements on its members' ports
/// ([`PortRate::commit_place`], [`place_booking`]) and compares their
/// [`place_key`].
#[inline(always)]
pub const fn uses_reservations(mode: u8) -> bool {
    mode == MODE_PLACE
}

/// One next hop of a group.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Member {
    /// The caller's next-hop index (opaque here).
    pub id: u16,
    /// Share of the bucket table, 1..=255 (0 is invalid).
    pub weight: u8,
    /// 1 when the member may carry traffic, 0 when it is down.
    pub live: u8,
}

impl Member {
    /// A live member.
    pub const fn new(id: u16, weight: u8) -> Self {
        Member {
            id,
            weight,
            live: 1,
        }
    }
}

/// A next-hop group, the value of the group map.
///
/// Written whole by the controller, only read by the data plane. Keep it in
/// a hash map, whose update replaces the value at once (RCU): a packet sees
/// the old or the new group. Should a packet ever see a mix (an in-place
/// array update), every bucket and member is still checked before use, so
/// the cost is that packet's choice, never an out-of-range member.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    /// [`MODE_HASH`], [`MODE_FLOWLET`], [`MODE_BANDWIDTH`], [`MODE_SPRAY`]
    /// or [`MODE_PLACE`].
    pub mode: u8,
    /// Members in use, slots `0..n_members` (at most [`MAX_MEMBERS`]).
    pub n_members: u8,
    /// [`GROUP_F_UET_ENTROPY`] (was padding: 0 keeps the old meaning).
    pub flags: u8,
    /// Zero.
    pub _pad: u8,
    /// A gap strictly longer than this starts a new flowlet (flowlet and
    /// bandwidth modes).
    pub flowlet_timeout_ns: u32,
    /// Slots are stable: a member that goes down is marked, not removed, so
    /// flowlet entries (which store slots) stay meaningful.
    pub members: [Member; MAX_MEMBERS],
    /// Bucket -> member slot, from [`build_buckets`].
    pub buckets: [u8; NBUCKETS],
}

impl Group {
    /// A group with no members.
    pub const fn new(mode: u8, flowlet_timeout_ns: u32) -> Self {
        Group {
            mode,
            n_members: 0,
            flags: 0,
            _pad: 0,
            flowlet_timeout_ns,
            members: [Member {
                id: 0,
                weight: 0,
                live: 0,
            }; MAX_MEMBERS],
            buckets: [0; NBUCKETS],
        }
    }

    /// Whether `slot` may carry traffic: in use, live and weighted.
    #[inline(always)]
    pub fn eligible(&self, slot: u8) -> bool {
        let m = &self.members[slot as usize & MEMBER_MASK];
        (slot as usize) < MAX_MEMBERS && slot < self.n_members && m.live != 0 && m.weight != 0
    }
}

/// Why a group (or a member list) is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupError {
    /// The mode is none of the `MODE_*` constants.
    UnknownMode(u8),
    /// A group must have at least one member.
    NoMembers,
    /// More than [`MAX_MEMBERS`] members.
    TooManyMembers(u8),
    /// A member in use has weight 0.
    ZeroWeight { slot: u8 },
    /// `live` is neither 0 nor 1.
    BadLiveFlag { slot: u8, live: u8 },
    /// Flowlet and bandwidth modes need a flowlet timeout above 0.
    ZeroFlowletTimeout,
    /// A bucket names a slot at or beyond `n_members`.
    BucketOutOfRange { bucket: u8, slot: u8 },
    /// A bucket names a member that is down while others are live.
    BucketToDeadMember { bucket: u8, slot: u8 },
    /// Flag bits beyond [`GROUP_FLAGS`].
    UnknownFlags(u8),
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GroupError::UnknownMode(m) => {
                write!(
                    f,
                    "unknown load-balancing mode {m} (0 hash, 1 flowlet, 2 bandwidth, 3 spray, 4 place)"
                )
            }
            GroupError::NoMembers => write!(f, "group has no members"),
            GroupError::TooManyMembers(n) => {
                write!(f, "group has {n} members, at most {MAX_MEMBERS} allowed")
            }
            GroupError::ZeroWeight { slot } => {
                write!(f, "member {slot} has weight 0 (weights are 1..=255)")
            }
            GroupError::BadLiveFlag { slot, live } => {
                write!(f, "member {slot} has live flag {live} (must be 0 or 1)")
            }
            GroupError::ZeroFlowletTimeout => {
                write!(f, "flowlet timeout is 0 in a flowlet-based mode")
            }
            GroupError::BucketOutOfRange { bucket, slot } => {
                write!(
                    f,
                    "bucket {bucket} names member {slot}, beyond the group's members"
                )
            }
            GroupError::UnknownFlags(v) => {
                write!(
                    f,
                    "unknown group flags {v:#04x} (known: {GROUP_FLAGS:#04x})"
                )
            }
            GroupError::BucketToDeadMember { bucket, slot } => {
                write!(
                    f,
                    "bucket {bucket} names member {slot}, which is down while others are live"
                )
            }
        }
    }
}

/// Checks the members `0..n_members`: count, weight 1..=255, live 0 or 1.
pub fn validate_members(members: &[Member; MAX_MEMBERS], n_members: u8) -> Result<(), GroupError> {
    if n_members == 0 {
        return Err(GroupError::NoMembers);
    }
    if n_members as usize > MAX_MEMBERS {
        return Err(GroupError::TooManyMembers(n_members));
    }
    let mut i = 0;
    while i < MAX_MEMBERS && i < n_members as usize {
        let m = &members[i];
        if m.weight == 0 {
            return Err(GroupError::ZeroWeight { slot: i as u8 });
        }
        if m.live > 1 {
            return Err(GroupError::BadLiveFlag {
                slot: i as u8,
                live: m.live,
            });
        }
        i += 1;
    }
    Ok(())
}

/// Checks a whole group before the controller writes it: mode, members,
/// flowlet timeout, and that every bucket names a member in use that is
/// live (unless none is).
pub fn validate_group(g: &Group) -> Result<(), GroupError> {
    if g.mode > MODE_LAST {
        return Err(GroupError::UnknownMode(g.mode));
    }
    if g.flags & !GROUP_FLAGS != 0 {
        return Err(GroupError::UnknownFlags(g.flags));
    }
    validate_members(&g.members, g.n_members)?;
    if uses_flowlets(g.mode) && g.flowlet_timeout_ns == 0 {
        return Err(GroupError::ZeroFlowletTimeout);
    }
    let mut any_live = false;
    let mut i = 0;
    while i < MAX_MEMBERS {
        any_live |= g.eligible(i as u8);
        i += 1;
    }
    let mut b = 0;
    while b < NBUCKETS {
        let slot = g.buckets[b];
        if slot >= g.n_members {
            return Err(GroupError::BucketOutOfRange {
                bucket: b as u8,
                slot,
            });
        }
        if any_live && !g.eligible(slot) {
            return Err(GroupError::BucketToDeadMember {
                bucket: b as u8,
                slot,
            });
        }
        b += 1;
    }
    Ok(())
}

/// A bucket with no owner yet (builder only).
const FREE: u8 = u8::MAX;

/// Builds the bucket table of members `0..n_members` (controller side).
///
/// Each live member gets `NBUCKETS * weight / total live weight` buckets,
/// rounded by largest remainder (so every count is the floor or the ceiling
/// of its exact share, and they sum to [`NBUCKETS`]); a remainder tie goes to
/// the member that held more buckets in `prev`, then to the lower slot.
///
/// With `prev`, a bucket keeps its member unless that member is down, gone,
/// or holds more buckets than its new count (it keeps its first ones in
/// bucket order): exactly `sum(max(0, old count - new count))` buckets move,
/// the least any table with the new counts allows. Freed buckets go, in
/// bucket order, to the member furthest below its count (ties: lower slot),
/// so a member coming back takes a fair share from every other member.
///
/// With no live member the table is returned unchanged (`prev`, or all
/// zeros), so members that come back find their old buckets; selection
/// returns `None` meanwhile.
pub fn build_buckets(
    members: &[Member; MAX_MEMBERS],
    n_members: u8,
    prev: Option<&[u8; NBUCKETS]>,
) -> Result<[u8; NBUCKETS], GroupError> {
    validate_members(members, n_members)?;
    let mut weight = [0u32; MAX_MEMBERS];
    let mut total = 0u32;
    let mut i = 0;
    while i < MAX_MEMBERS && i < n_members as usize {
        if members[i].live == 1 {
            weight[i] = members[i].weight as u32;
            total += weight[i];
        }
        i += 1;
    }
    let base = match prev {
        Some(p) => *p,
        None => [FREE; NBUCKETS],
    };
    if total == 0 {
        return Ok(match prev {
            Some(p) => *p,
            None => [0; NBUCKETS],
        });
    }

    // how many buckets each live member held before
    let mut held = [0u32; MAX_MEMBERS];
    let mut b = 0;
    while b < NBUCKETS {
        let s = base[b] as usize;
        if s < MAX_MEMBERS && weight[s & MEMBER_MASK] > 0 {
            held[s & MEMBER_MASK] += 1;
        }
        b += 1;
    }

    // target counts: floors, then the leftover buckets by largest remainder
    let mut target = [0u32; MAX_MEMBERS];
    let mut rem = [0u32; MAX_MEMBERS];
    let mut assigned = 0u32;
    i = 0;
    while i < MAX_MEMBERS {
        let share = NBUCKETS as u32 * weight[i];
        target[i] = share / total;
        rem[i] = share % total;
        assigned += target[i];
        i += 1;
    }
    // fewer leftovers than live members: each member gets at most one
    let mut leftover = NBUCKETS as u32 - assigned;
    let mut bumped = 0u32;
    while leftover > 0 {
        let mut best = MAX_MEMBERS;
        i = 0;
        while i < MAX_MEMBERS {
            if weight[i] > 0 && bumped & (1 << i) == 0 {
                let better = match best {
                    MAX_MEMBERS => true,
                    j => {
                        let j = j & MEMBER_MASK;
                        (rem[i], held[i]) > (rem[j], held[j])
                    }
                };
                if better {
                    best = i;
                }
            }
            i += 1;
        }
        if best == MAX_MEMBERS {
            break; // cannot happen: leftover < live members
        }
        target[best & MEMBER_MASK] += 1;
        bumped |= 1 << best;
        leftover -= 1;
    }

    // keep every bucket whose member is live and not above its count
    let mut out = [FREE; NBUCKETS];
    let mut count = [0u32; MAX_MEMBERS];
    b = 0;
    while b < NBUCKETS {
        let s = base[b] as usize;
        if s < MAX_MEMBERS
            && weight[s & MEMBER_MASK] > 0
            && count[s & MEMBER_MASK] < target[s & MEMBER_MASK]
        {
            out[b] = s as u8;
            count[s & MEMBER_MASK] += 1;
        }
        b += 1;
    }
    // hand the freed buckets to the members furthest below their count
    b = 0;
    while b < NBUCKETS {
        if out[b] == FREE {
            let mut best = 0usize;
            let mut best_deficit = 0u32;
            i = 0;
            while i < MAX_MEMBERS {
                let deficit = target[i].saturating_sub(count[i]);
                if deficit > best_deficit {
                    best = i;
                    best_deficit = deficit;
                }
                i += 1;
            }
            // the deficits sum to the free buckets left, so one is found
            out[b] = best as u8;
            count[best & MEMBER_MASK] += 1;
        }
        b += 1;
    }
    Ok(out)
}

/// A member chosen for a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Choice {
    /// Slot in the group.
    pub slot: u8,
    /// That member's next-hop id.
    pub id: u16,
}

// How the pickers below stay cheap for the verifier:
//
// * one pass, keeping a single candidate (weighted reservoir sampling),
//   instead of collecting candidates and walking to the chosen one: eBPF has
//   no conditional move, and the verifier would explore the second walk once
//   per combination of per-member flags (up to 2^16);
// * the pass is unrolled by hand ([`each_member!`]), so member offsets are
//   constants and no loop counter splits the verifier's states;
// * the candidate's id is carried along with its slot: reading
//   `members[slot]` with a slot that is a different constant on every path
//   would make the verifier keep those paths apart;
// * the candidate is a plain `u8` (NO_SLOT when none), not an `Option<u8>`,
//   whose payload is undefined while `None` (the verifier refuses a spill of
//   an uninitialised register).
//
// Measured on kernel 6.18: an XDP program calling `select` for all four
// modes (flowlet entry in an LRU hash, 16 members' bands from an array of
// `PortRate`) is 3.3k instructions long and verifies in about 50k steps;
// the two-pass and looped variants exceeded the 1M limit.

const _: () = assert!(MAX_MEMBERS == 16, "each_member! unrolls 16 slots");

/// A uniform number for member `i` drawn from `r`.
#[inline(always)]
const fn member_rand(r: u32, i: usize) -> u32 {
    fmix32(r.wrapping_add((i as u32 + 1).wrapping_mul(GOLDEN)))
}

/// Whether a candidate of weight `w` replaces the current one, `wsum`
/// being the weight of the candidates so far, itself included: true with
/// probability `w / wsum`, so that each candidate ends up chosen with
/// probability weight / total weight.
#[inline(always)]
const fn replaces(r: u32, i: usize, w: u32, wsum: u32) -> bool {
    scale(member_rand(r, i), wsum) < w
}

#[inline(always)]
const fn chosen(slot: u8, id: u16) -> Option<Choice> {
    if (slot as usize) < MAX_MEMBERS {
        Some(Choice { slot, id })
    } else {
        None
    }
}

/// Any eligible member, in proportion to weight, chosen by `r`.
#[inline(always)]
fn pick_any(g: &Group, r: u32) -> Option<Choice> {
    let mut slot = NO_SLOT;
    let mut id = 0u16;
    let mut wsum = 0u32;
    each_member!(i => {
        if g.eligible(i as u8) {
            let m = &g.members[i];
            let w = m.weight as u32;
            wsum += w;
            if replaces(r, i, w, wsum) {
                slot = i as u8;
                id = m.id;
            }
        }
    });
    chosen(slot, id)
}

/// Hash mode: the member of the hash's bucket (low bits of `hash`).
///
/// Should the bucket's member be down before the controller has rebuilt the
/// table, the flow goes to an eligible member chosen by the hash, in
/// proportion to weight. `None` when no member is eligible.
#[inline(always)]
pub fn pick_hash(g: &Group, hash: u32) -> Option<Choice> {
    let slot = g.buckets[(hash & BUCKET_MASK) as usize];
    if g.eligible(slot) {
        return Some(Choice {
            slot,
            id: g.members[slot as usize & MEMBER_MASK].id,
        });
    }
    pick_any(g, hash)
}

/// What members are compared by, lower first: a load band (`u8`) or a
/// place key (`u32`, [`PortRate::place_key`]).
pub trait Level: Copy + Ord {
    /// The worst level there is.
    const WORST: Self;
}

impl Level for u8 {
    const WORST: u8 = u8::MAX;
}

impl Level for u32 {
    const WORST: u32 = u32::MAX;
}

/// The eligible member with the lowest band; ties are broken by `tie` (a
/// hash or a random number) among the tied members only, in proportion to
/// their weights. Weights play no other part: bands are already relative to
/// each port's speed, so unequal links compare fairly. `None` when no member
/// is eligible. [`LeastLoaded::step`] over every slot in order.
#[inline(always)]
pub fn pick_least_loaded<L: Level>(
    g: &Group,
    bands: &[L; MAX_MEMBERS],
    tie: u32,
) -> Option<Choice> {
    let mut s = LeastLoaded::new();
    each_member!(i => {
        s.step(g, i, bands[i], tie);
    });
    s.choice()
}

/// [`pick_least_loaded`] one member slot at a time: what a loop that cannot
/// hold all the levels at once (an eBPF `bpf_loop` callback, one slot per
/// call) carries from slot to slot. Slots must be stepped in order 0, 1, ...
#[derive(Clone, Copy, Debug)]
pub struct LeastLoaded<L> {
    slot: u8,
    id: u16,
    best: L,
    wsum: u32,
}

impl<L: Level> Default for LeastLoaded<L> {
    fn default() -> Self {
        Self::new()
    }
}

impl<L: Level> LeastLoaded<L> {
    /// No member seen yet.
    #[inline(always)]
    pub const fn new() -> Self {
        Self {
            slot: NO_SLOT,
            id: 0,
            // a first member at the worst level takes the `b == best`
            // branch with wsum = w and replaces the nothing before it:
            // same outcome
            best: L::WORST,
            wsum: 0,
        }
    }

    /// Slot `i` at `level`, the tie broken by `tie` (see
    /// [`pick_least_loaded`]); an ineligible slot changes nothing.
    #[inline(always)]
    pub fn step(&mut self, g: &Group, i: usize, level: L, tie: u32) {
        if i >= MAX_MEMBERS || !g.eligible(i as u8) {
            return;
        }
        let m = &g.members[i];
        let w = m.weight as u32;
        if level < self.best {
            // a lower level: the candidates start over
            self.slot = i as u8;
            self.id = m.id;
            self.best = level;
            self.wsum = w;
        } else if level == self.best {
            self.wsum += w;
            if replaces(tie, i, w, self.wsum) {
                self.slot = i as u8;
                self.id = m.id;
            }
        }
    }

    /// The member chosen so far (`None`: no eligible slot yet).
    #[inline(always)]
    pub const fn choice(&self) -> Option<Choice> {
        chosen(self.slot, self.id)
    }
}
