//! Placement (`place` mode): each flow (RoCEv2: each QP, whose BTH
//! destination QP is in the flow hash) is placed once, on the member whose
//! port is free of the work booked on it soonest (ties: the least loaded
//! by its rate estimator), and stays there.
//!
//! Why not the rate estimator alone ([`MODE_BANDWIDTH`]): a collective
//! step starts a flow per rank at the same instant, and a rate estimator
//! sees none of them until they have sent for a while (CONGA's decays over
//! 200 us; a 400G ring step lasts 15 us), so the flows of a step tie and
//! land as a hash would put them. Here every placement is booked on the
//! member at once: the port's `booked_until_ns` ([`PortRate`]) moves on by
//! the time the flow's announced bytes take at the port's speed, so the
//! next flow of the same instant sees them and goes elsewhere; bookings
//! expire as the port could have sent them, by when the rate estimator
//! has seen the flow, which then breaks the ties ([`place_levels`]). The
//! bytes booked are the message's DMA length when the packet says it
//! (RoCEv2 RDMA WRITE first/only: the RETH), otherwise
//! [`PLACE_DEFAULT_BYTES`].
//!
//! A flow keeps its member until its member goes down or its entry is
//! reclaimed, never because of a gap ([`place_next`]); a packet
//! that opens a new message on the member (a RETH) books its length there.
//! Flow state lives in a set-associative table ([`FlowWays`]): two active
//! flows whose hashes meet in a set each keep a way, where a direct-mapped
//! slot would have them evict each other at every packet and re-place
//! (reorder) both.

use super::*;

/// Bytes booked for a placement whose packet carries no message length.
pub const PLACE_DEFAULT_BYTES: u32 = 64 * 1024;
/// The most one message books (16 MiB): a bigger one is booked as this.
pub const PLACE_MAX_BYTES: u32 = 16 << 20;
/// The booking part of a placement level is how much later a member's
/// port is free of its bookings than the earliest member's, in units of
/// 2^10 ns (about 1 us).
pub const PLACE_LEVEL_SHIFT: u32 = 10;
/// ... at most 31 units (32 us): beyond that a member is simply booked.
pub const PLACE_MAX_AHEAD: u8 = 31;
/// The longest one booking lasts: by then the port's rate estimator has
/// seen the flow (its time constant is 200 us), and a long flow booked
/// for longer would keep new flows off a port it may use only in part.
pub const PLACE_MAX_BOOK_NS: u64 = 100_000;
/// Bookings reach at most this far ahead of now (100 ms): an unknown
/// speed, or more placements than a port could ever send, stop there.
pub const PLACE_HORIZON_NS: u64 = 100_000_000;

/// Nanoseconds `bytes` take at `speed_mbps` (0 Mb/s, an unknown speed,
/// reads as [`PLACE_HORIZON_NS`]: a port of unknown speed looks booked).
#[inline(always)]
pub const fn wire_ns(bytes: u32, speed_mbps: u32) -> u64 {
    // at most 2^32 * 8000: no overflow
    match (bytes as u64 * 8000).checked_div(speed_mbps as u64) {
        Some(ns) => ns,
        None => PLACE_HORIZON_NS,
    }
}

impl PortRate {
    /// Books `bytes` placed on the port at `now`: it is free of its
    /// bookings that much later (from now if it was free), at most
    /// [`PLACE_HORIZON_NS`] ahead.
    #[inline(always)]
    pub fn book(&mut self, now_ns: u64, bytes: u32) {
        let from = self.booked_free_at(now_ns);
        let ns = wire_ns(bytes, self.speed_mbps);
        let ns = if ns > PLACE_MAX_BOOK_NS {
            PLACE_MAX_BOOK_NS
        } else {
            ns
        };
        let until = from + ns;
        let cap = now_ns + PLACE_HORIZON_NS;
        self.booked_until_ns = if until > cap { cap } else { until };
    }

    /// When the port is free of its bookings, seen at `now` (`now` when it
    /// already is).
    #[inline(always)]
    pub fn booked_free_at(&self, now_ns: u64) -> u64 {
        if self.booked_until_ns > now_ns {
            self.booked_until_ns
        } else {
            now_ns
        }
    }
}

/// Place mode's levels of group `g`'s members, from when each member's
/// port is free of its bookings (`free_at`, [`PortRate::booked_free_at`])
/// and its load band (`bands`, [`PortRate::band`]), by slot: booked work
/// first, measured load second. A level is `ahead << 3 | band`, `ahead`
/// being how much later the port is free than the earliest eligible one
/// (units of 2^[`PLACE_LEVEL_SHIFT`] ns, at most [`PLACE_MAX_AHEAD`]):
/// relative, so that a fabric booked far ahead (an all-to-all's thousand
/// flows at once) still tells its members apart by what one more flow
/// adds; and the band breaks the ties of members booked alike, as
/// bandwidth mode would. Slots not eligible read 255.
#[inline(always)]
pub fn place_levels(
    g: &Group,
    free_at: &[u64; MAX_MEMBERS],
    bands: &[u8; MAX_MEMBERS],
) -> [u8; MAX_MEMBERS] {
    const _: () = assert!(
        NUM_BANDS == 8 && PLACE_MAX_AHEAD < 32,
        "a level is 5 + 3 bits"
    );
    let mut base = u64::MAX;
    let mut i = 0;
    while i < MAX_MEMBERS {
        if g.eligible(i as u8) && free_at[i] < base {
            base = free_at[i];
        }
        i += 1;
    }
    let mut out = [u8::MAX; MAX_MEMBERS];
    i = 0;
    while i < MAX_MEMBERS {
        if g.eligible(i as u8) {
            let d = free_at[i].saturating_sub(base) >> PLACE_LEVEL_SHIFT;
            let ahead = if d > PLACE_MAX_AHEAD as u64 {
                PLACE_MAX_AHEAD
            } else {
                d as u8
            };
            out[i] = ahead << 3 | (bands[i] & (NUM_BANDS - 1));
        }
        i += 1;
    }
    out
}

/// The bytes to book on the chosen member's port after a [`select`] in
/// group mode `mode` (0: none). In [`MODE_PLACE`]: `announced` when the
/// packet says how much its flow sends (a RETH's DMA length; a RoCEv2
/// ACK, NAK or CNP, which opens no message: its own length), else
/// [`PLACE_DEFAULT_BYTES`] when the flow was just placed; capped at
/// [`PLACE_MAX_BYTES`].
#[inline(always)]
pub fn place_booking(mode: u8, pick: &Pick, announced: Option<u32>) -> u32 {
    if mode != MODE_PLACE {
        return 0;
    }
    let placed = match pick.flowlet {
        Some(e) => e.is_new(),
        None => false,
    };
    let bytes = match announced {
        Some(n) => n,
        None if placed => PLACE_DEFAULT_BYTES,
        None => 0,
    };
    if bytes > PLACE_MAX_BYTES {
        PLACE_MAX_BYTES
    } else {
        bytes
    }
}

/// Advances a placed flow's entry `e` by a packet at `now_ns` in group
/// `g`: the flow keeps its member, whatever the gap since its last packet
/// (a gap is no proof that the old path has drained: under PFC a queue can
/// hold a flow's packets for milliseconds, and an RC receiver NAKs what
/// overtakes them), unless this is its first packet or its member is no
/// longer eligible; then `choose(index)` places it. As [`flowlet_next`]
/// otherwise (the same events; never [`FlowletEvent::Gap`]). The entry is
/// dropped only when the table reclaims it ([`flow_way`]: idle longer than
/// the group's timeout and its way needed).
#[inline(always)]
pub fn place_next<F: FnOnce(u32) -> Option<Choice>>(
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

/// Ways of a set of the placement table.
pub const FLOW_WAYS: usize = 4;
/// Sets of the placement table (a power of two): 65536 flows in all.
pub const FLOW_SETS: u32 = 16384;

/// A set of the placement table: [`FLOW_WAYS`] flow entries, a map value
/// of an array indexed by [`flow_set_index`].
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowWays {
    pub ways: [FlowletSlot; FLOW_WAYS],
}

impl FlowWays {
    /// A set never used.
    pub const EMPTY: FlowWays = FlowWays {
        ways: [FlowletSlot {
            tag: 0,
            entry: Flowlet::NEW,
        }; FLOW_WAYS],
    };
}

/// The set of flow `hash` in group `group_id`.
#[inline(always)]
pub const fn flow_set_index(group_id: u16, hash: u32) -> u32 {
    fmix32(hash ^ (group_id as u32).wrapping_mul(0x85eb_ca6b)) & (FLOW_SETS - 1)
}

/// How a flow found its way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WayLookup {
    /// Its own entry.
    Hit,
    /// A way never used, or whose flow had been idle longer than the
    /// timeout, taken with a fresh entry.
    Taken,
    /// Every way held a flow active within the timeout: the one seen
    /// least recently lost its entry (count these: a set too small for
    /// the active flows).
    Evicted,
}

/// The entry of the flow tagged `tag` (a [`flowlet_tag`]) in set `s` at
/// `now_ns`: its own way if one matches; else the first way unused or idle
/// for longer than `idle_ns`, taken over fresh; else the way seen least
/// recently, evicted and taken over fresh. Constant time (the ways are
/// unrolled).
#[inline(always)]
#[allow(unused_assignments)] // the last way's age goes unread
pub fn flow_way(
    s: &mut FlowWays,
    tag: u64,
    now_ns: u64,
    idle_ns: u64,
) -> (&mut Flowlet, WayLookup) {
    let mut hit = FLOW_WAYS;
    let mut free = FLOW_WAYS;
    let mut oldest = 0usize;
    let mut oldest_seen = u64::MAX;
    macro_rules! way {
        ($i:literal) => {{
            let w = &s.ways[$i];
            if w.tag == tag {
                hit = $i;
            }
            let seen = w.entry.last_seen_ns;
            if free == FLOW_WAYS && (w.tag == 0 || now_ns.saturating_sub(seen) > idle_ns) {
                free = $i;
            }
            if seen < oldest_seen {
                oldest = $i;
                oldest_seen = seen;
            }
        }};
    }
    way!(0);
    way!(1);
    way!(2);
    way!(3);
    const _: () = assert!(FLOW_WAYS == 4, "flow_way unrolls 4 ways");
    let (i, how) = if hit < FLOW_WAYS {
        (hit, WayLookup::Hit)
    } else if free < FLOW_WAYS {
        (free, WayLookup::Taken)
    } else {
        (oldest, WayLookup::Evicted)
    };
    let w = &mut s.ways[i & (FLOW_WAYS - 1)];
    if how != WayLookup::Hit {
        w.tag = tag;
        w.entry = Flowlet::NEW;
    }
    (&mut w.entry, how)
}
