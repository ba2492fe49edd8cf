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
//! has seen the flow, which then breaks the ties ([`PortRate::place_key`]:
//! booking first, band second, compared whole by [`pick_least_loaded`]). The
//! bytes booked are the message's DMA length when the packet says it
//! (RoCEv2 RDMA WRITE first/only: the RETH), otherwise
//! [`PLACE_DEFAULT_BYTES`].
//!
//! Ports that are neither booked nor loaded (sparse flows: each message
//! shorter than the gaps between them, so bookings and estimators have
//! forgotten one flow before the next starts) tie on both; the third part
//! of the key, the data flows placed on the port lately
//! ([`PortRate::placements_at`], halved every 16.8 ms; ACK and CNP flows
//! are placed but not counted: [`place_counts`]), sends the new flow
//! where fewer flows were placed, as QP-aware placement balances queue
//! pairs per uplink. Without it the flow hash breaks such ties, and a
//! pinned flow stays where a polarised hash put it (the fan bench: 3/2/2/1
//! flows on 4 uplinks, 87.5 % of ideal).
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
/// A place key counts how far ahead a port is booked in units of 2^10 ns
/// (about 1 us): ports booked within the same microsecond tie, and their
/// load bands decide.
pub const PLACE_LEVEL_SHIFT: u32 = 10;
/// The longest one booking lasts: by then the port's rate estimator has
/// seen the flow (its time constant is 200 us), and a long flow booked
/// for longer would keep new flows off a port it may use only in part.
pub const PLACE_MAX_BOOK_NS: u64 = 100_000;
/// Bookings reach at most this far ahead of now (100 ms): an unknown
/// speed, or more placements than a port could ever send, stop there.
pub const PLACE_HORIZON_NS: u64 = 100_000_000;
/// A port's count of placements halves every 2^24 ns (16.8 ms): far longer
/// than a flowlet timeout or the gaps of sparse flows, so the flows that
/// start together (a job's QPs, a collective's step) are all remembered
/// while they are placed; short enough that a burst of short flows is
/// forgotten within a training step.
pub const PLACE_COUNT_SHIFT: u32 = 24;
/// One placement in a port's count: 4 bits of fraction, so 3 placements
/// still count more than 2 after 4 halvings.
pub const PLACE_COUNT_ONE: u32 = 16;
/// The count's part of a place key is at most this (255 placements).
pub const PLACE_COUNT_MAX: u32 = (1 << 12) - 1;
/// Bits of a place key: how far ahead the port is booked (17: at most
/// 2^17 - 1 units of 2^10 ns, 134 ms, beyond [`PLACE_HORIZON_NS`]), its
/// band (3), its count of placements (12).
const KEY_AHEAD_MAX: u64 = (1 << 17) - 1;
const KEY_BAND_SHIFT: u32 = 12;
const KEY_AHEAD_SHIFT: u32 = 15;
/// `PortRate::placed`: the count in its low 24 bits, the period it was
/// last written in (`now >> PLACE_COUNT_SHIFT`, modulo 256) above.
const PLACED_COUNT_MASK: u32 = (1 << 24) - 1;

const _: () = assert!((PLACE_HORIZON_NS >> PLACE_LEVEL_SHIFT) <= KEY_AHEAD_MAX);

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

    /// What place mode compares the port by at `now` (lower is better):
    /// how far ahead it is booked, in units of 2^[`PLACE_LEVEL_SHIFT`] ns,
    /// then its load band, then the flows placed on it lately:
    /// [`place_key`]. Booked work first, measured load second, flow count
    /// last.
    #[inline(always)]
    pub fn place_key(&self, now_ns: u64) -> u32 {
        self.place_key_far(now_ns, 0)
    }

    /// [`PortRate::place_key`] with the far side's work added to the
    /// port's booking: `far_ns`, how long the next switch's port toward
    /// the packet's destination needs to send what it holds. A leaf sees
    /// its own uplinks only; flows of different leaves that meet on a
    /// spine's downlink stay met while pinned (the web-search PFC frames
    /// are the spines'). Only the simulator knows `far_ns` today (its
    /// `far_view` oracle); a data plane would learn it from its
    /// neighbours.
    #[inline(always)]
    pub fn place_key_far(&self, now_ns: u64, far_ns: u64) -> u32 {
        place_key(
            self.booked_until_ns
                .saturating_sub(now_ns)
                .saturating_add(far_ns),
            self.band(now_ns),
            self.placements_at(now_ns),
        )
    }

    /// The flows placed on the port lately, seen at `now`, in units of
    /// 1/[`PLACE_COUNT_ONE`] placement: each placement counts one, halved
    /// for every 2^[`PLACE_COUNT_SHIFT`] ns period begun since. The period
    /// is kept modulo 256 (4.3 s): a count last written exactly a multiple
    /// of 4.3 s ago reads as recent (a stale tie-break, never more).
    #[inline(always)]
    pub fn placements_at(&self, now_ns: u64) -> u32 {
        let age = (count_period(now_ns).wrapping_sub(self.placed >> 24)) & 0xff;
        if age >= 24 {
            0
        } else {
            (self.placed & PLACED_COUNT_MASK) >> age
        }
    }

    /// Counts one placement on the port at `now`.
    #[inline(always)]
    pub fn count_placement(&mut self, now_ns: u64) {
        let c = self.placements_at(now_ns) + PLACE_COUNT_ONE;
        let c = if c > PLACED_COUNT_MASK {
            PLACED_COUNT_MASK
        } else {
            c
        };
        self.placed = count_period(now_ns) << 24 | c;
    }

    /// What a place-mode pick commits on the chosen port at `now`: `bytes`
    /// booked ([`place_booking`]; 0: none) and, when the flow was just
    /// `placed` there, one placement.
    #[inline(always)]
    pub fn commit_place(&mut self, now_ns: u64, bytes: u32, placed: bool) {
        if bytes > 0 {
            self.book(now_ns, bytes);
        }
        if placed {
            self.count_placement(now_ns);
        }
    }
}

/// The placement-count period of `now` (modulo 256).
#[inline(always)]
const fn count_period(now_ns: u64) -> u32 {
    (now_ns >> PLACE_COUNT_SHIFT) as u32 & 0xff
}

/// A place-mode key: `ahead_ns` (how far ahead a port is booked) in units
/// of 2^[`PLACE_LEVEL_SHIFT`] ns (17 bits, at most 134 ms), above `band`
/// (3 bits), above `placements` ([`PortRate::placements_at`], 12 bits, at
/// most [`PLACE_COUNT_MAX`]).
#[inline(always)]
pub const fn place_key(ahead_ns: u64, band: u8, placements: u32) -> u32 {
    let units = ahead_ns >> PLACE_LEVEL_SHIFT;
    let units = if units > KEY_AHEAD_MAX {
        KEY_AHEAD_MAX
    } else {
        units
    };
    let count = if placements > PLACE_COUNT_MAX {
        PLACE_COUNT_MAX
    } else {
        placements
    };
    (units as u32) << KEY_AHEAD_SHIFT | ((band & (NUM_BANDS - 1)) as u32) << KEY_BAND_SHIFT | count
}

/// Whether a pick just placed its flow (its first packet, or its member
/// went down).
#[inline(always)]
pub fn just_placed(pick: &Pick) -> bool {
    match pick.flowlet {
        Some(e) => e.is_new(),
        None => false,
    }
}

/// Whether a pick's placement counts on its port
/// ([`PortRate::commit_place`]'s `placed`): the flow was [`just_placed`]
/// and carries data. A RoCEv2 ACK (or NAK) or CNP flow carries none: its
/// packets are a few dozen bytes per message of its peer's, so counting
/// it as a flow would steer data flows away from a port that carries
/// only acknowledgements (the count breaks ties between ports that are
/// neither booked nor loaded; see [`PortRate::placements_at`]).
#[inline(always)]
pub fn place_counts(pick: &Pick, roce: bool, opcode: u8) -> bool {
    let ack = roce && (opcode == crate::wire::bth::OP_ACK || opcode == crate::wire::bth::OP_CNP);
    just_placed(pick) && !ack
}

/// The bytes to book on the chosen member's port after a [`select`] in
/// group mode `mode` (0: none). In [`MODE_PLACE`]: `announced` when the
/// packet says how much its flow sends ([`place_announced`]), else
/// ([`NOT_ANNOUNCED`]) [`PLACE_DEFAULT_BYTES`] when the flow was just
/// placed; capped at [`PLACE_MAX_BYTES`].
#[inline(always)]
pub fn place_booking(mode: u8, pick: &Pick, announced: u32) -> u32 {
    if mode != MODE_PLACE {
        return 0;
    }
    let placed = just_placed(pick);
    let bytes = if announced != NOT_ANNOUNCED {
        announced
    } else if placed {
        PLACE_DEFAULT_BYTES
    } else {
        0
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
    super::flowlet::advance(e, g, now_ns, false, choose)
}

/// A packet that announces nothing of its flow's bytes (a plain `u32`,
/// not an `Option`: eBPF must not spill the undefined payload of a
/// `None`).
pub const NOT_ANNOUNCED: u32 = u32::MAX;

/// What a packet announces of its flow's bytes, for [`place_booking`]:
/// a RoCEv2 RDMA WRITE first or only packet its RETH's DMA length
/// (`reth_len`, [`NOT_ANNOUNCED`] when unknown: see
/// [`crate::wire::bth::carries_reth`] and
/// [`crate::wire::bth::RETH_DMA_LEN_OFF`]); an ACK or a CNP, which opens
/// no message, its own length (`frame_len`); anything else
/// [`NOT_ANNOUNCED`].
#[inline(always)]
pub const fn place_announced(roce: bool, opcode: u8, reth_len: u32, frame_len: u16) -> u32 {
    if !roce {
        return NOT_ANNOUNCED;
    }
    match opcode {
        crate::wire::bth::OP_WRITE_FIRST | crate::wire::bth::OP_WRITE_ONLY => reth_len,
        crate::wire::bth::OP_ACK | crate::wire::bth::OP_CNP => frame_len as u32,
        _ => NOT_ANNOUNCED,
    }
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
pub fn flow_way(
    s: &mut FlowWays,
    tag: u64,
    now_ns: u64,
    idle_ns: u64,
) -> (&mut Flowlet, WayLookup) {
    let (i, how) = way_of(s, tag, now_ns, idle_ns);
    let w = &mut s.ways[i & (FLOW_WAYS - 1)];
    if how != WayLookup::Hit {
        w.tag = tag;
        w.entry = Flowlet::NEW;
    }
    (&mut w.entry, how)
}

/// [`flow_way`]'s choice of way, in three passes that each end as soon as
/// they find it (few paths for the eBPF verifier to walk, where one pass
/// tracking the hit, the first free way and the oldest at once would have
/// it walk every combination).
#[inline(always)]
fn way_of(s: &FlowWays, tag: u64, now_ns: u64, idle_ns: u64) -> (usize, WayLookup) {
    const _: () = assert!(FLOW_WAYS == 4, "way_of unrolls 4 ways");
    macro_rules! each_way {
        ($i:ident => $body:block) => {{
            {
                let $i = 0usize;
                $body
            }
            {
                let $i = 1usize;
                $body
            }
            {
                let $i = 2usize;
                $body
            }
            {
                let $i = 3usize;
                $body
            }
        }};
    }
    each_way!(i => {
        if s.ways[i].tag == tag {
            return (i, WayLookup::Hit);
        }
    });
    each_way!(i => {
        let w = &s.ways[i];
        if w.tag == 0 || now_ns.saturating_sub(w.entry.last_seen_ns) > idle_ns {
            return (i, WayLookup::Taken);
        }
    });
    let mut oldest = 0usize;
    let mut seen = s.ways[0].entry.last_seen_ns;
    each_way!(i => {
        let t = s.ways[i].entry.last_seen_ns;
        if t < seen {
            oldest = i;
            seen = t;
        }
    });
    let _ = seen;
    (oldest, WayLookup::Evicted)
}
