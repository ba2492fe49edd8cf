//! Selection: the member a packet goes to, per mode (hash, flowlet,
//! bandwidth, spray).

use super::*;

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
/// * spray: `pick_least_loaded(bands(), rand)` for every packet;
/// * place: [`place_next`], a new flow placed by
///   `pick_least_loaded(bands(), flowlet_hash(hash, index))`, `bands()`
///   giving each member's port's [`PortRate::place_key`] (booked ahead,
///   then band); the caller then books
///   [`place_booking`] on the chosen port.
///
/// `flowlet` is the flow's entry (created as [`Flowlet::NEW`]) when
/// [`uses_flowlets`]`(g.mode)`; without one those modes fall back to
/// [`pick_hash`] rather than risk reordering. `bands()` returns each slot's
/// [`quality_band`] (in place mode its [`PortRate::place_key`]) and is called only
/// when a choice by load is made. An
/// unknown mode acts as hash. `None`: no eligible member (drop and count).
/// A packet that is not UET: [`select_packet`] with `uet` false.
#[inline(always)]
pub fn select<L: Level, B: FnOnce() -> [L; MAX_MEMBERS]>(
    g: &Group,
    hash: u32,
    flowlet: Option<&mut Flowlet>,
    now_ns: u64,
    rand: u32,
    bands: B,
) -> Option<Pick> {
    select_packet(g, hash, false, flowlet, now_ns, rand, bands)
}

/// Whether group `g` places a packet by its entropy value alone: a UET
/// packet (`uet`) in a group with [`GROUP_F_UET_ENTROPY`]. The caller then
/// needs no flowlet entry and no random number.
#[inline(always)]
pub const fn by_entropy(g: &Group, uet: bool) -> bool {
    uet && g.flags & GROUP_F_UET_ENTROPY != 0
}

/// [`select`] for a packet that may be UET (`uet`): when [`by_entropy`],
/// [`pick_hash`] of `hash` (the flow hash, over the UDP source port that
/// carries the entropy value), whatever the mode and without touching
/// `flowlet`; otherwise the group's mode as [`select`] describes.
#[inline(always)]
pub fn select_packet<L: Level, B: FnOnce() -> [L; MAX_MEMBERS]>(
    g: &Group,
    hash: u32,
    uet: bool,
    flowlet: Option<&mut Flowlet>,
    now_ns: u64,
    rand: u32,
    bands: B,
) -> Option<Pick> {
    select_packet_by(g, hash, uet, flowlet, now_ns, rand, |tie| {
        pick_least_loaded(g, &bands(), tie)
    })
}

/// [`select_packet`] with the choice by load given as `least(tie)`, which
/// must be [`pick_least_loaded`] of the members' levels with that tie (the
/// eBPF program steps [`LeastLoaded`] in a `bpf_loop` instead of unrolling
/// it); called at most once, only when a choice by load is made.
#[inline(always)]
pub fn select_packet_by<F: FnOnce(u32) -> Option<Choice>>(
    g: &Group,
    hash: u32,
    uet: bool,
    flowlet: Option<&mut Flowlet>,
    now_ns: u64,
    rand: u32,
    least: F,
) -> Option<Pick> {
    if by_entropy(g, uet) {
        let c = pick_hash(g, hash)?;
        return Some(Pick {
            slot: c.slot,
            id: c.id,
            flowlet: None,
        });
    }
    let (c, flowlet) = match (g.mode, flowlet) {
        (MODE_SPRAY, _) => (least(rand)?, None),
        (MODE_FLOWLET, Some(e)) => {
            let (c, ev) = flowlet_next(e, g, now_ns, |n| pick_hash(g, flowlet_hash(hash, n)))?;
            (c, Some(ev))
        }
        (MODE_PLACE, Some(e)) => {
            let (c, ev) = place_next(e, g, now_ns, |n| least(flowlet_hash(hash, n)))?;
            (c, Some(ev))
        }
        (MODE_BANDWIDTH, Some(e)) => {
            let (c, ev) = flowlet_next(e, g, now_ns, |n| least(flowlet_hash(hash, n)))?;
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
