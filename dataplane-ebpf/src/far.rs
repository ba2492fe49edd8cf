//! Far-side notifications (`dataplane_common::lb::far`, the frame of
//! `dataplane_common::wire::farnote`):
//!
//! * sending (`xdp_forward_egress`): a lossless packet from a port with
//!   `PORT_F_FAR_NOTIFY` whose egress queue has reached the ECN threshold
//!   makes one due ([`due`]), at most every `NOTIFY_EVERY_NS` per port
//!   pair; the packet is broadcast like a PFC decision and the ingress
//!   port's copy becomes the notification ([`write_note`], from
//!   `xdp_devmap_pfc`);
//! * receiving (`xdp_forward_far_rx`): [`rx`] records it in `FAR` by
//!   (ingress port, prefix);
//! * reading (place mode's member scan): [`far_ns`], what the record says
//!   now of a member's port toward a destination.

use aya_ebpf::{
    helpers::{bpf_ktime_get_ns, generated::bpf_xdp_adjust_tail},
    macros::map,
    maps::{lpm_trie::Key, Array, LpmTrie, PerCpuArray},
    programs::XdpContext,
};
use dataplane_common::{
    buffer::PfcMeta,
    lb::{drain_time_ns, notify_due, FarCounters, FarEntry, NOTIFY_TTL_NS},
    lossless::MODEL_PORTS,
    maps::PORT_F_FAR_NOTIFY,
    wire::{
        ethernet as eth,
        farnote::{FarNote, FAR_KEY_LEN, FAR_NOTE_FRAME, FAR_NOTE_LEN},
        ipv4, ipv6, Packet,
    },
};

use crate::packet::XdpPacket;
use crate::stages::EgressCtx;

/// Records a switch keeps: (uplink, destination prefix) pairs its peers
/// notified (an LPM trie takes no eviction; a full table is counted).
const FAR_CAPACITY: u32 = 16384;

/// Notifications heard, by (ingress port id, prefix).
#[map]
static FAR: LpmTrie<[u8; FAR_KEY_LEN], FarEntry> = LpmTrie::with_max_entries(FAR_CAPACITY, 0);
/// When each (ingress, egress) model-port pair last sent one (0: never).
#[map]
static FAR_SENT: Array<u64> = Array::with_max_entries((MODEL_PORTS * MODEL_PORTS) as u32, 0);
#[map]
static FAR_COUNTERS: PerCpuArray<FarCounters> = PerCpuArray::with_max_entries(1, 0);

#[inline(always)]
fn count(f: impl FnOnce(&mut FarCounters)) {
    if let Some(c) = FAR_COUNTERS.get_ptr_mut(0) {
        // SAFETY: per-CPU slot, only this program on this CPU touches it.
        f(unsafe { &mut *c })
    }
}

/// The drain time a notification for this packet carries, when one is
/// due (else 0): the packet is lossless, its route's prefix is known,
/// and its egress queue holds `queued` bytes at or over `kmin` (the ECN
/// threshold) with the pair's period over. Marks the pair as sent.
/// Whether the ingress port's peer listens is [`listens`]'s question.
#[inline(always)]
pub fn due(ec: &EgressCtx, queued: u32, kmin: u32, speed_mbps: u32) -> u64 {
    if ec.lossless == 0 || ec.plen == 0 || kmin == 0 || queued < kmin {
        return 0;
    }
    let pair = (ec.in_port as usize & (MODEL_PORTS - 1)) * MODEL_PORTS
        + (ec.out_port as usize & (MODEL_PORTS - 1));
    let Some(last) = FAR_SENT.get_ptr_mut(pair as u32) else {
        return 0;
    };
    // SAFETY: an array slot; a race between CPUs sends one more note.
    if !notify_due(queued, kmin, unsafe { *last }, ec.now) {
        return 0;
    }
    // SAFETY: as above.
    unsafe { *last = ec.now | 1 };
    drain_time_ns(queued, speed_mbps)
}

/// Whether the peer of the port `ctx`'s frame came in by takes
/// notifications (`PORT_F_FAR_NOTIFY`, config `far_notify`).
#[inline(always)]
pub fn listens(ctx: &XdpContext) -> bool {
    let ifindex = ctx.ingress_ifindex() as u32;
    match crate::port_config(ifindex) {
        Some(cfg) => cfg.flags & PORT_F_FAR_NOTIFY != 0,
        None => false,
    }
}

/// The metadata of a notification for this packet (see `pfc_tx`).
#[inline(always)]
pub fn meta(ec: &EgressCtx, drain_ns: u64) -> PfcMeta {
    PfcMeta::far_note(ec.in_port, ec.out_port, ec.tc, ec.plen, drain_ns)
}

/// Counts a notification that was due and not sent.
#[inline(always)]
pub fn send_failed() {
    count(|c| c.send_failed += 1);
}

/// Rewrites the broadcast copy in `ctx` (the routed packet, metadata
/// removed) into the notification `m` describes, sent from port
/// `m.pfc_port`'s MAC; false (counted) when it cannot.
#[inline(always)]
pub fn write_note(ctx: &XdpContext, m: &PfcMeta, src: [u8; 6]) -> bool {
    let Some(note) = note_of(&XdpPacket::new(ctx), m) else {
        send_failed();
        return false;
    };
    let len = (ctx.data_end() - ctx.data()) as i32;
    // SAFETY: the helper checks the bounds of the new tail.
    if len != FAR_NOTE_FRAME as i32
        && unsafe { bpf_xdp_adjust_tail(ctx.ctx, FAR_NOTE_FRAME as i32 - len) } != 0
    {
        send_failed();
        return false;
    }
    let (start, end) = (ctx.data(), ctx.data_end());
    if start + FAR_NOTE_FRAME > end {
        send_failed();
        return false;
    }
    // SAFETY: [start, start + 60) lies inside the frame, checked above.
    unsafe { core::ptr::write_unaligned(start as *mut [u8; FAR_NOTE_FRAME], note.frame(src)) };
    count(|c| c.sent += 1);
    true
}

/// The notification for the routed packet `pkt` (untagged or one tag).
#[inline(always)]
fn note_of(pkt: &XdpPacket, m: &PfcMeta) -> Option<FarNote> {
    let mut l3 = eth::HEADER_LEN;
    let mut et = pkt.be16_at(eth::ETHERTYPE_OFF)?;
    if eth::is_tpid(et) {
        et = pkt.be16_at(eth::ETHERTYPE_OFF + eth::TAG_LEN)?;
        l3 += eth::TAG_LEN;
    }
    let plen = (m.quanta as u8).checked_sub(1)?;
    let (family, dst) = match et {
        eth::ETHERTYPE_IPV4 => {
            let a = pkt.read::<4>(l3 + ipv4::DST_OFF)?;
            let mut d = [0u8; 16];
            d[..4].copy_from_slice(&a);
            (4, d)
        }
        eth::ETHERTYPE_IPV6 => (6, pkt.read::<16>(l3 + ipv6::DST_OFF)?),
        _ => return None,
    };
    Some(FarNote::for_route(
        family,
        dst,
        plen,
        m.prio,
        m.time_ns,
        NOTIFY_TTL_NS,
    ))
}

/// Records a notification received on port `port_id` at `l3_off` of
/// `pkt` (consumed by the caller): counted as received, malformed or not
/// kept (table full).
#[inline(always)]
pub fn rx(pkt: &XdpPacket, l3_off: usize, port_id: u16) {
    let note = match pkt
        .read::<FAR_NOTE_LEN>(l3_off)
        .map(|b| FarNote::decode(&b))
    {
        Some(Ok(n)) => n,
        _ => {
            count(|c| c.malformed += 1);
            return;
        }
    };
    let (bits, data) = note.key(port_id);
    let e = FarEntry {
        drain_ns: note.drain_ns,
        valid_ns: note.valid_ns,
        // SAFETY: helper without preconditions.
        heard_ns: unsafe { bpf_ktime_get_ns() },
    };
    match FAR.insert(&Key::new(bits, data), &e, 0) {
        Ok(()) => count(|c| c.received += 1),
        Err(_) => count(|c| c.table_full += 1),
    }
}

/// What the notifications say at `now` of port `port_id`'s next switch
/// toward the destination in `key` (`far_key`, its port id rewritten
/// here): its queue's drain time, 0 when nothing is known or what was
/// heard has lapsed.
#[inline(always)]
pub fn far_ns(key: &mut Key<[u8; FAR_KEY_LEN]>, port_id: u16, now: u64) -> u64 {
    key.data[2] = (port_id >> 8) as u8;
    key.data[3] = port_id as u8;
    FAR.get(&*key).map_or(0, |e| e.at(now))
}
