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
