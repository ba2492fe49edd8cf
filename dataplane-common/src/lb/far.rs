//! Far-side notifications: a switch whose lossless queue toward a
//! destination has reached the ECN threshold tells the switch upstream
//! that fed it how long that queue needs to drain, and place mode at the
//! upstream switch adds it to the member's key
//! ([`super::PortRate::place_key_far`]). A leaf sees only its own uplinks;
//! flows of different leaves that meet on a spine's downlink stay met
//! while pinned, and the spines' PFC frames follow. The eBPF data plane
//! sends them (port option `far_notify`, the frame of
//! [`crate::wire::farnote`]) and reads them in place mode; the simulator
//! models them (`dataplane-sim --far-view notify`). These are the
//! decisions both share.

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
/// at `now_ns`: `drain_ns` from its arrival for `valid_ns` (the sender's
/// [`NOTIFY_TTL_NS`]), else 0.
#[inline(always)]
pub const fn far_drain_at(drain_ns: u64, heard_ns: u64, valid_ns: u64, now_ns: u64) -> u64 {
    // one comparison (the eBPF verifier walks every branch of place mode's
    // member scan): heard after now wraps to an age no validity reaches
    if now_ns.wrapping_sub(heard_ns) < valid_ns {
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

/// A receiver's record of one notification (value of the eBPF `FAR`
/// table, keyed by (ingress port, prefix)).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FarEntry {
    pub drain_ns: u32,
    pub valid_ns: u32,
    /// When it arrived (the receiver's clock).
    pub heard_ns: u64,
}

impl FarEntry {
    /// [`far_drain_at`] of this record.
    #[inline(always)]
    pub const fn at(&self, now_ns: u64) -> u64 {
        far_drain_at(
            self.drain_ns as u64,
            self.heard_ns,
            self.valid_ns as u64,
            now_ns,
        )
    }
}

/// The data plane's counters of notifications (per CPU, summed by the
/// controller).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FarCounters {
    /// Notifications sent.
    pub sent: u64,
    /// Due but not sent: the frame could not be resized or broadcast,
    /// or the PFC frames' data-plane path is not in use.
    pub send_failed: u64,
    /// Received and recorded.
    pub received: u64,
    /// Received and refused ([`crate::wire::farnote::FarNoteError`]).
    pub malformed: u64,
    /// Received, valid, not recorded: the table is full.
    pub table_full: u64,
}

impl FarCounters {
    /// Field by field sum (of the per-CPU values).
    pub const fn plus(self, o: &FarCounters) -> FarCounters {
        FarCounters {
            sent: self.sent + o.sent,
            send_failed: self.send_failed + o.send_failed,
            received: self.received + o.received,
            malformed: self.malformed + o.malformed,
            table_full: self.table_full + o.table_full,
        }
    }
}

const _: () = assert!(core::mem::size_of::<FarEntry>() == 16);
const _: () = assert!(core::mem::size_of::<FarCounters>() == 40);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), integer fields, no padding (asserted above).
    unsafe impl aya::Pod for super::FarEntry {}
    // SAFETY: as above.
    unsafe impl aya::Pod for super::FarCounters {}
}
