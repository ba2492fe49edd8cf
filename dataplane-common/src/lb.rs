//! Load balancing: which member of a next-hop group a packet leaves by.
//!
//! Four pieces, each a pure function over plain state:
//!
//! * **Flow hash** ([`flow_hash`]): murmur3-style mixing of the 5-tuple and,
//!   for RoCEv2, the BTH destination QP (SAI `RDMA_BTH_DEST_QP`), seeded per
//!   switch so that tiers do not polarise. RoCE NICs often use one UDP source
//!   port for every QP, so without the QP all of a host pair's flows would
//!   share one path.
//! * **Next-hop groups** ([`Group`]): up to [`MAX_MEMBERS`] weighted members
//!   and a resilient table of [`NBUCKETS`] buckets built by the controller
//!   with [`build_buckets`], which moves only the buckets it must.
//! * **Flowlets** ([`Flowlet`], [`flowlet_next`]): a flow keeps its member
//!   until it pauses for longer than the group's flowlet timeout, or until
//!   its member goes down.
//! * **Port load** ([`PortRate`]): CONGA's discounting rate estimator,
//!   turned into a utilisation of the port's speed and into 8 quality bands
//!   ([`quality_band`]), which the `bandwidth` and `spray` modes compare.
//!
//! [`select`] puts them together for one packet, per the group's mode:
//!
//! | mode               | state        | choice                                                        |
//! |--------------------|--------------|---------------------------------------------------------------|
//! | [`MODE_HASH`]      | none         | bucket of the flow hash                                       |
//! | [`MODE_FLOWLET`]   | [`Flowlet`]  | new flowlet: bucket of the hash re-mixed with the flowlet's index |
//! | [`MODE_BANDWIDTH`] | [`Flowlet`]  | new flowlet: lowest band, ties by the hash among the tied     |
//! | [`MODE_SPRAY`]     | none         | every packet: lowest band, ties by the random number          |
//!
//! A sketch of the eBPF caller (maps: groups in a hash map, flowlets in an
//! LRU hash keyed by the flow hash, port rates by port):
//!
//! ```text
//! let hash = flow_hash(&key, SEED);
//! let e = FLOWLETS.get_ptr_mut(&hash) or insert Flowlet::NEW;   // only if uses_flowlets(g.mode)
//! let pick = select(g, hash, e, now, bpf_get_prandom_u32(), || bands_of(g, now))?;  // None: drop + count
//! PORT_RATE[port_of(pick.id)].update(now, frame_len);
//! ```
//!
//! The `bands` closure is only called when a choice by load is needed (each
//! new flowlet in `bandwidth` mode, each packet in `spray` mode), so the
//! per-member rate lookups stay off the common path.
//!
//! Arithmetic is integer only (no 128-bit products either), the data-plane
//! functions have no loops (the member scans are unrolled, the rate decay is
//! constant-time), every array index is masked or checked, and nothing
//! divides by a value that can be zero: they compile for eBPF and pass the
//! verifier (the controller-side builder and validators loop over at most
//! 128 buckets).

use core::fmt;

// ---------------------------------------------------------------------------
// Flow hashing
// ---------------------------------------------------------------------------

/// The fields a flow is hashed on.
///
/// Addresses are 16 bytes; an IPv4 address is stored IPv4-mapped
/// (`::ffff:a.b.c.d`, [`ipv4_mapped`]), so an IPv4 flow and the same flow
/// written as IPv4-mapped IPv6 hash alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowKey {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    pub sport: u16,
    pub dport: u16,
    /// IPv4 protocol / IPv6 next header.
    pub proto: u8,
    /// BTH destination QP (24 bits) of a RoCEv2 packet, 0 otherwise.
    pub dest_qp: u32,
}

impl FlowKey {
    /// A flow between two IPv4 addresses.
    #[inline(always)]
    pub fn ipv4(
        src: [u8; 4],
        dst: [u8; 4],
        proto: u8,
        sport: u16,
        dport: u16,
        dest_qp: u32,
    ) -> Self {
        FlowKey {
            src: ipv4_mapped(src),
            dst: ipv4_mapped(dst),
            sport,
            dport,
            proto,
            dest_qp,
        }
    }

    /// A flow between two IPv6 addresses.
    #[inline(always)]
    pub fn ipv6(
        src: [u8; 16],
        dst: [u8; 16],
        proto: u8,
        sport: u16,
        dport: u16,
        dest_qp: u32,
    ) -> Self {
        FlowKey {
            src,
            dst,
            sport,
            dport,
            proto,
            dest_qp,
        }
    }
}

/// `::ffff:a.b.c.d` (RFC 4291 section 2.5.5.2).
#[inline(always)]
pub const fn ipv4_mapped(a: [u8; 4]) -> [u8; 16] {
    [
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, a[0], a[1], a[2], a[3],
    ]
}

const M_C1: u32 = 0xcc9e_2d51;
const M_C2: u32 = 0x1b87_3593;
/// 2^32 / golden ratio: spreads consecutive integers over the word.
const GOLDEN: u32 = 0x9e37_79b9;

/// Murmur3's finaliser: every input bit flips each output bit with
/// probability close to 1/2.
#[inline(always)]
pub const fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^= h >> 16;
    h
}

/// One murmur3 block step: mixes word `k` into state `h`.
#[inline(always)]
const fn mix_word(h: u32, k: u32) -> u32 {
    let k = k.wrapping_mul(M_C1).rotate_left(15).wrapping_mul(M_C2);
    (h ^ k)
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

#[inline(always)]
const fn word(a: &[u8; 16], i: usize) -> u32 {
    // i is 0, 4, 8 or 12 at every call site (constant, in bounds)
    u32::from_le_bytes([a[i], a[i + 1], a[i + 2], a[i + 3]])
}

/// Bytes hashed by [`flow_hash`] (11 words), mixed in like murmur3's length.
const FLOW_KEY_HASH_LEN: u32 = 44;

/// The flow hash: murmur3 (32-bit) block mixing over 11 words (source,
/// destination, ports, protocol, destination QP) started from `seed`, then
/// murmur3's finaliser.
///
/// Give every switch its own seed: with one seed, the flows a tier-1 switch
/// sends to one uplink would all hash alike at tier 2 as well (polarisation).
/// The bucket table uses the low bits, tie-breaks use the high bits.
#[inline(always)]
pub fn flow_hash(k: &FlowKey, seed: u32) -> u32 {
    let mut h = seed;
    h = mix_word(h, word(&k.src, 0));
    h = mix_word(h, word(&k.src, 4));
    h = mix_word(h, word(&k.src, 8));
    h = mix_word(h, word(&k.src, 12));
    h = mix_word(h, word(&k.dst, 0));
    h = mix_word(h, word(&k.dst, 4));
    h = mix_word(h, word(&k.dst, 8));
    h = mix_word(h, word(&k.dst, 12));
    h = mix_word(h, ((k.sport as u32) << 16) | k.dport as u32);
    h = mix_word(h, k.proto as u32);
    h = mix_word(h, k.dest_qp);
    fmix32(h ^ FLOW_KEY_HASH_LEN)
}

/// The hash that places flowlet number `index` of a flow: the flow hash
/// itself for the first flowlet (index 0, so `flowlet` mode starts where
/// `hash` mode would), a re-mix for the following ones, so that each new
/// flowlet lands on an independent bucket (as in LetFlow).
#[inline(always)]
pub const fn flowlet_hash(hash: u32, index: u32) -> u32 {
    if index == 0 {
        hash
    } else {
        fmix32(hash ^ index.wrapping_mul(GOLDEN))
    }
}

/// `x * n / 2^32`: maps a uniform `x` onto `0..n` with no division (uses the
/// high bits of `x`). Returns 0 when `n` is 0.
#[inline(always)]
const fn scale(x: u32, n: u32) -> u32 {
    ((x as u64).wrapping_mul(n as u64) >> 32) as u32
}

// ---------------------------------------------------------------------------
// Next-hop groups
// ---------------------------------------------------------------------------

/// Members of a group.
pub const MAX_MEMBERS: usize = 16;
const MEMBER_MASK: usize = MAX_MEMBERS - 1;
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

/// CONGA and LetFlow use 100 us (Broadcom DLB's inactivity default is
/// 256 us); it must exceed the delay difference between paths.
pub const DEFAULT_FLOWLET_TIMEOUT_NS: u32 = 100_000;

/// Whether `mode` keeps per-flow [`Flowlet`] state (the caller looks up the
/// flowlet entry only then).
#[inline(always)]
pub const fn uses_flowlets(mode: u8) -> bool {
    mode == MODE_FLOWLET || mode == MODE_BANDWIDTH
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
    /// [`MODE_HASH`], [`MODE_FLOWLET`], [`MODE_BANDWIDTH`] or [`MODE_SPRAY`].
    pub mode: u8,
    /// Members in use, slots `0..n_members` (at most [`MAX_MEMBERS`]).
    pub n_members: u8,
    /// Zero.
    pub _pad: u16,
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
}

impl fmt::Display for GroupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            GroupError::UnknownMode(m) => {
                write!(
                    f,
                    "unknown load-balancing mode {m} (0 hash, 1 flowlet, 2 bandwidth, 3 spray)"
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
    if g.mode > MODE_SPRAY {
        return Err(GroupError::UnknownMode(g.mode));
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

/// Runs `$body` with `$i: usize` bound to each member slot in turn.
macro_rules! each_member {
    ($i:ident => $body:block) => {
        each_member!(@ $i $body; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
    };
    (@ $i:ident $body:block; $($n:literal)*) => {
        $({
            let $i: usize = $n;
            $body
        })*
    };
}
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

/// The eligible member with the lowest band; ties are broken by `tie` (a
/// hash or a random number) among the tied members only, in proportion to
/// their weights. Weights play no other part: bands are already relative to
/// each port's speed, so unequal links compare fairly. `None` when no member
/// is eligible.
#[inline(always)]
#[allow(unused_assignments)] // the last slot's band and weight sum go unread
pub fn pick_least_loaded(g: &Group, bands: &[u8; MAX_MEMBERS], tie: u32) -> Option<Choice> {
    let mut slot = NO_SLOT;
    let mut id = 0u16;
    // a first member in band 255 takes the `b == best` branch with
    // wsum = w and replaces the nothing before it: same outcome
    let mut best = u8::MAX;
    let mut wsum = 0u32;
    each_member!(i => {
        if g.eligible(i as u8) {
            let m = &g.members[i];
            let b = bands[i];
            let w = m.weight as u32;
            if b < best {
                // a lower band: the candidates start over
                slot = i as u8;
                id = m.id;
                best = b;
                wsum = w;
            } else if b == best {
                wsum += w;
                if replaces(tie, i, w, wsum) {
                    slot = i as u8;
                    id = m.id;
                }
            }
        }
    });
    chosen(slot, id)
}

// ---------------------------------------------------------------------------
// Flowlets
// ---------------------------------------------------------------------------

/// `Flowlet::slot` before the first packet.
pub const NO_SLOT: u8 = u8::MAX;

/// Per-flow flowlet state, the value of an LRU hash keyed by the flow hash
/// (flows whose hashes collide share an entry, and so a path).
///
/// Race: the entry is read-modified-written by whichever CPU handles the
/// flow's packet. RSS normally keeps a flow on one CPU; if two CPUs race,
/// one write is lost: a flowlet that two CPUs both started may send a few
/// packets on each of two members (possible reordering of those packets), or
/// `last_seen_ns` is left a little older than the last packet, so the next
/// flowlet may start that much (nanoseconds to microseconds) early.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flowlet {
    /// Time of the flow's latest packet.
    pub last_seen_ns: u64,
    /// Flowlets started so far (wraps); the next one gets this index.
    pub flowlets: u32,
    /// Member slot of the current flowlet, [`NO_SLOT`] before the first.
    pub slot: u8,
    /// Zero.
    pub _pad: [u8; 3],
}

impl Flowlet {
    /// The entry a caller inserts for a flow it has not seen.
    pub const NEW: Flowlet = Flowlet {
        last_seen_ns: 0,
        flowlets: 0,
        slot: NO_SLOT,
        _pad: [0; 3],
    };
}

/// What happened to a flow's flowlet on a packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlowletEvent {
    /// Same flowlet, same member.
    Same,
    /// The flow's first packet (or first since its entry was evicted).
    First,
    /// The gap since the previous packet exceeded the timeout.
    Gap,
    /// The flowlet's member went down: moved at once, whatever the gap
    /// (the packets in flight on the old path may arrive after these).
    MemberDown,
}

impl FlowletEvent {
    /// A new flowlet (and so a new choice) started.
    #[inline(always)]
    pub const fn is_new(self) -> bool {
        !matches!(self, FlowletEvent::Same)
    }
}

/// Advances flowlet entry `e` by a packet at `now_ns` in group `g`.
///
/// The current member is kept unless this is the first packet, the member is
/// no longer eligible, or the gap since the previous packet is strictly
/// greater than `g.flowlet_timeout_ns`; then `choose(index)` picks the member
/// of the new flowlet, `index` counting the flow's flowlets from 0. A `now_ns`
/// older than `last_seen_ns` (another CPU's later packet) counts as no gap.
///
/// Returns the member and what happened, or `None` (entry untouched) when
/// `choose` finds no member.
#[inline(always)]
pub fn flowlet_next<F: FnOnce(u32) -> Option<Choice>>(
    e: &mut Flowlet,
    g: &Group,
    now_ns: u64,
    choose: F,
) -> Option<(Choice, FlowletEvent)> {
    let slot = e.slot;
    let event = if slot == NO_SLOT {
        FlowletEvent::First
    } else if !g.eligible(slot) {
        FlowletEvent::MemberDown
    } else if now_ns.saturating_sub(e.last_seen_ns) > g.flowlet_timeout_ns as u64 {
        FlowletEvent::Gap
    } else {
        if now_ns > e.last_seen_ns {
            e.last_seen_ns = now_ns;
        }
        let id = g.members[slot as usize & MEMBER_MASK].id;
        return Some((Choice { slot, id }, FlowletEvent::Same));
    };
    let c = choose(e.flowlets)?;
    e.slot = c.slot;
    e.flowlets = e.flowlets.wrapping_add(1);
    e.last_seen_ns = now_ns;
    Some((c, event))
}

// ---------------------------------------------------------------------------
// Port load: CONGA's discounting rate estimator
// ---------------------------------------------------------------------------

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
    /// Zero.
    pub _pad: u32,
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
            _pad: 0,
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

// ---------------------------------------------------------------------------
// Selection
// ---------------------------------------------------------------------------

/// The member a packet goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    /// Member slot in the group.
    pub slot: u8,
    /// That member's next-hop id.
    pub id: u16,
    /// What happened to the flowlet; `None` in hash and spray modes (no
    /// per-flow state), and when no flowlet entry was supplied.
    pub flowlet: Option<FlowletEvent>,
}

/// Chooses the member of group `g` for a packet of the flow hashed to
/// `hash`, at `now_ns`, per `g.mode`:
///
/// * hash: [`pick_hash`];
/// * flowlet: [`flowlet_next`], a new flowlet placed by
///   `pick_hash(flowlet_hash(hash, index))`;
/// * bandwidth: [`flowlet_next`], a new flowlet placed by
///   `pick_least_loaded(bands(), flowlet_hash(hash, index))`;
/// * spray: `pick_least_loaded(bands(), rand)` for every packet.
///
/// `flowlet` is the flow's entry (created as [`Flowlet::NEW`]) when
/// [`uses_flowlets`]`(g.mode)`; without one those modes fall back to
/// [`pick_hash`] rather than risk reordering. `bands()` returns each slot's
/// [`quality_band`] and is called only when a choice by load is made. An
/// unknown mode acts as hash. `None`: no eligible member (drop and count).
#[inline(always)]
pub fn select<B: FnOnce() -> [u8; MAX_MEMBERS]>(
    g: &Group,
    hash: u32,
    flowlet: Option<&mut Flowlet>,
    now_ns: u64,
    rand: u32,
    bands: B,
) -> Option<Pick> {
    let (c, flowlet) = match (g.mode, flowlet) {
        (MODE_SPRAY, _) => (pick_least_loaded(g, &bands(), rand)?, None),
        (MODE_FLOWLET, Some(e)) => {
            let (c, ev) = flowlet_next(e, g, now_ns, |n| pick_hash(g, flowlet_hash(hash, n)))?;
            (c, Some(ev))
        }
        (MODE_BANDWIDTH, Some(e)) => {
            let (c, ev) = flowlet_next(e, g, now_ns, |n| {
                pick_least_loaded(g, &bands(), flowlet_hash(hash, n))
            })?;
            (c, Some(ev))
        }
        _ => (pick_hash(g, hash)?, None),
    };
    Some(Pick {
        slot: c.slot,
        id: c.id,
        flowlet,
    })
}

const _: () = assert!(NBUCKETS.is_power_of_two() && NBUCKETS <= 256);
const _: () = assert!(
    DRE_SHIFT == 2 && DRE_MAX_STEPS == 32,
    "dre_decay's factors are powers of 3/4 up to 31 steps"
);
const _: () = assert!(MAX_MEMBERS.is_power_of_two() && MAX_MEMBERS <= 32);
const _: () = assert!(core::mem::size_of::<Member>() == 4);
const _: () = assert!(core::mem::size_of::<Group>() == 8 + 4 * MAX_MEMBERS + NBUCKETS);
const _: () = assert!(core::mem::size_of::<Flowlet>() == 16);
const _: () = assert!(core::mem::size_of::<PortRate>() == 24);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), only integer fields and arrays of integers, no padding
    // (asserted above), every bit pattern valid.
    unsafe impl aya::Pod for super::Member {}
    unsafe impl aya::Pod for super::Group {}
    unsafe impl aya::Pod for super::Flowlet {}
    unsafe impl aya::Pod for super::PortRate {}
}
