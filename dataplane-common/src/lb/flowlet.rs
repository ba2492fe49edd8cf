//! Flowlets: when a flow may change path (the gap since its last packet
//! exceeds the timeout).

use super::*;

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

/// Slots of the flowlet table (a power of two).
pub const FLOWLET_SLOTS: u32 = 65536;

/// One slot of the flowlet table: an array indexed by [`flowlet_index`],
/// each slot holding the entry of the last flow that hashed there (a map
/// value). No LRU list and no lock: a flow whose slot another flow took
/// starts a new flowlet ([`FlowletEvent::First`]), as after an LRU
/// eviction.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowletSlot {
    /// [`flowlet_tag`] of the flow the entry belongs to; 0: never used.
    pub tag: u64,
    pub entry: Flowlet,
}

/// The tag of flow `hash` in group `group_id`: never 0.
#[inline(always)]
pub const fn flowlet_tag(group_id: u16, hash: u32) -> u64 {
    (1 << 63) | ((group_id as u64) << 32) | hash as u64
}

/// The slot of flow `hash` in group `group_id`: the groups' flows are
/// spread over the table independently.
#[inline(always)]
pub const fn flowlet_index(group_id: u16, hash: u32) -> u32 {
    crate::lb::fmix32(hash ^ (group_id as u32).wrapping_mul(0x9e37_79b9)) & (FLOWLET_SLOTS - 1)
}

/// The entry of the flow tagged `tag` in slot `s`: the slot's own if the
/// tag matches, else the slot is taken over with a fresh entry.
#[inline(always)]
pub fn flowlet_entry(s: &mut FlowletSlot, tag: u64) -> &mut Flowlet {
    if s.tag != tag {
        s.tag = tag;
        s.entry = Flowlet::NEW;
    }
    &mut s.entry
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
    advance(e, g, now_ns, true, choose)
}

/// [`flowlet_next`] and [`place_next`]: a gap longer than the group's
/// timeout starts a new flowlet only when `gaps` (a constant at each
/// caller).
#[inline(always)]
pub(super) fn advance<F: FnOnce(u32) -> Option<Choice>>(
    e: &mut Flowlet,
    g: &Group,
    now_ns: u64,
    gaps: bool,
    choose: F,
) -> Option<(Choice, FlowletEvent)> {
    let slot = e.slot;
    let event = if slot == NO_SLOT {
        FlowletEvent::First
    } else if !g.eligible(slot) {
        FlowletEvent::MemberDown
    } else if gaps && now_ns.saturating_sub(e.last_seen_ns) > g.flowlet_timeout_ns as u64 {
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
