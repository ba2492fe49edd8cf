//! Far-side notifications (simulated only, `dataplane-sim --far-view
//! notify`; no data plane sends them yet): a switch whose lossless queue
//! toward a destination has reached the ECN threshold tells the switch
//! upstream that fed it how long that queue needs to drain, and place
//! mode at the upstream switch adds it to the member's key
//! ([`super::PortRate::place_key_far`]). A leaf sees only its own uplinks; flows
//! of different leaves that meet on a spine's downlink stay met while
//! pinned, and the spines' PFC frames follow. These are the decisions a
//! data plane would share with the simulator.

/// At most one notification per (ingress, egress) port pair of a switch
/// in this time (10 us: at 100G, a 64-byte frame every 10 us is 0.05 % of
/// the link).
pub const NOTIFY_EVERY_NS: u64 = 10_000;
/// A notification counts this long after it arrives: two periods, so a
/// queue that stays above the threshold while it is fed is never
/// forgotten between notifications, and one that drained is forgotten
/// soon.
pub const NOTIFY_TTL_NS: u64 = 2 * NOTIFY_EVERY_NS;

/// Whether a switch that has just queued a lossless packet, leaving
/// `queued` bytes on its egress queue, notifies the packet's upstream
/// switch: the queue has reached `threshold` (the ECN Kmin) and the last
/// notification for this (ingress, egress) pair was sent at `last_ns`
/// (0: never) at least [`NOTIFY_EVERY_NS`] before `now_ns`.
#[inline(always)]
pub const fn notify_due(queued: u32, threshold: u32, last_ns: u64, now_ns: u64) -> bool {
    queued >= threshold && (last_ns == 0 || now_ns >= last_ns + NOTIFY_EVERY_NS)
}

/// What a notification heard at `heard_ns`, saying `drain_ns`, is worth
/// at `now_ns`: `drain_ns` from its arrival for [`NOTIFY_TTL_NS`], else 0.
#[inline(always)]
pub const fn far_drain_at(drain_ns: u64, heard_ns: u64, now_ns: u64) -> u64 {
    if heard_ns <= now_ns && now_ns < heard_ns + NOTIFY_TTL_NS {
        drain_ns
    } else {
        0
    }
}

/// The time `bytes` take to send at `speed_mbps` (what a notification
/// says of a queue); 0 Mb/s counts as 1.
#[inline(always)]
pub const fn drain_time_ns(bytes: u32, speed_mbps: u32) -> u64 {
    let mbps = if speed_mbps == 0 {
        1
    } else {
        speed_mbps as u64
    };
    bytes as u64 * 8000 / mbps
}
