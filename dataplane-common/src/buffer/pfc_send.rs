//! A PFC decision on its way out: the ring-buffer record the controller
//! sends from (or logs, when the data plane sent it), the XDP metadata the
//! data plane's own sender carries on the broadcast copies of a packet,
//! and where frames are sent from.

use crate::lossless::PfcAction;

/// Kinds of [`PfcEvent`].
pub const PFC_EV_XOFF: u8 = 1;
pub const PFC_EV_REFRESH: u8 = 2;
pub const PFC_EV_XON: u8 = 3;
/// [`PfcMeta::kind`] of a broadcast that carries a far-side notification
/// ([`crate::wire::farnote`]) instead of a PFC frame (never a
/// [`PfcEvent`]'s kind).
pub const META_FAR_NOTE: u8 = 0x10;

/// A PFC decision (ring buffer record): a frame the controller must send,
/// or, with [`PFC_EV_SENT`], one the data plane sent (for the event log
/// and the latency figures).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcEvent {
    /// When the data plane decided it (bpf_ktime_get_ns).
    pub time_ns: u64,
    /// [`PFC_EV_XOFF`], [`PFC_EV_REFRESH`] or [`PFC_EV_XON`].
    pub kind: u8,
    /// Port (model slot) out of which to send.
    pub port: u8,
    /// Priority to pause / resume.
    pub prio: u8,
    /// [`PFC_EV_SENT`] or 0.
    pub flags: u8,
    /// Pause time in quanta (0 for XON).
    pub quanta: u16,
    pub _pad2: u16,
    /// With [`PFC_EV_SENT`]: when the data plane handed the frame to the
    /// port (bpf_ktime_get_ns); else 0.
    pub sent_ns: u64,
}

/// `PfcEvent::flags`: the data plane sent this frame itself.
pub const PFC_EV_SENT: u8 = 1;

/// The event for a PFC action, if any.
#[inline(always)]
pub fn pfc_event(now_ns: u64, port: u8, prio: u8, a: PfcAction) -> Option<PfcEvent> {
    let (kind, quanta) = match a {
        PfcAction::None => return None,
        PfcAction::SendXoff { quanta } => (PFC_EV_XOFF, quanta),
        PfcAction::SendRefresh { quanta } => (PFC_EV_REFRESH, quanta),
        PfcAction::SendXon => (PFC_EV_XON, 0),
    };
    Some(PfcEvent {
        time_ns: now_ns,
        kind,
        port,
        prio,
        flags: 0,
        quanta,
        _pad2: 0,
        sent_ns: 0,
    })
}

/// How the data plane's packet path sends a PFC frame: the packet that
/// caused the decision is redirected with `BPF_F_BROADCAST` to a devmap of
/// every model port, carrying this record as XDP metadata; each copy's
/// devmap program asks [`pfc_copy_fate`] what to do with it. Metadata, not a
/// per-CPU scratch: devmap programs run at the flush, after later packets
/// of the same batch.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PfcMeta {
    /// When the model decided (for the latency record).
    pub time_ns: u64,
    /// [`PFC_META_MAGIC`]: a copy without it is not ours and is dropped.
    pub magic: u32,
    /// Port (id) out of which the PFC frame goes: the packet's ingress.
    pub pfc_port: u16,
    /// Port (id) the packet itself leaves by; [`PFC_NO_DATA`] when the
    /// packet is dropped and only the PFC frame goes out.
    pub data_port: u16,
    /// Priority paused / resumed.
    pub prio: u8,
    /// [`PFC_EV_XOFF`], [`PFC_EV_REFRESH`] or [`PFC_EV_XON`].
    pub kind: u8,
    /// Pause time in quanta (0 for XON).
    pub quanta: u16,
}

/// `PfcMeta::magic` ("PFC1").
pub const PFC_META_MAGIC: u32 = 0x5046_4331;
/// `PfcMeta::data_port` of a packet that is dropped.
pub const PFC_NO_DATA: u16 = 0xffff;

/// What a broadcast copy becomes on its egress port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyFate {
    /// The packet itself, on its way out.
    Data,
    /// Rewritten into the 802.1Qbb frame of the decision.
    Pfc,
    /// Rewritten into the far-side notification ([`PfcMeta::far_note`]).
    FarNote,
    /// Any other port's copy.
    Drop,
}

/// The fate of a broadcast copy leaving by port `egress` (id).
#[inline(always)]
pub fn pfc_copy_fate(m: &PfcMeta, egress: u16) -> CopyFate {
    if m.magic != PFC_META_MAGIC {
        CopyFate::Drop
    } else if egress == m.pfc_port {
        if m.kind == META_FAR_NOTE {
            CopyFate::FarNote
        } else {
            CopyFate::Pfc
        }
    } else if egress == m.data_port {
        CopyFate::Data
    } else {
        CopyFate::Drop
    }
}

impl PfcMeta {
    /// The decision it carries, as sent at `sent_ns` (the record the data
    /// plane leaves for the controller).
    #[inline(always)]
    pub fn sent_event(&self, sent_ns: u64) -> PfcEvent {
        PfcEvent {
            time_ns: self.time_ns,
            kind: self.kind,
            port: self.pfc_port as u8,
            prio: self.prio,
            flags: PFC_EV_SENT,
            quanta: self.quanta,
            _pad2: 0,
            sent_ns,
        }
    }

    /// The metadata of a far-side notification to the peer of `in_port`
    /// (the packet's ingress) for a packet leaving by `data_port`, whose
    /// queue of class `tc` needs `drain_ns` to drain; `route_plen`: the
    /// packet's route prefix length plus one. The fields carry, in order:
    /// `time_ns` the drain time, `prio` the class, `quanta` the prefix
    /// code.
    #[inline(always)]
    pub fn far_note(
        in_port: u16,
        data_port: u16,
        tc: u8,
        route_plen: u8,
        drain_ns: u64,
    ) -> PfcMeta {
        PfcMeta {
            time_ns: drain_ns,
            magic: PFC_META_MAGIC,
            pfc_port: in_port,
            data_port,
            prio: tc & 7,
            kind: META_FAR_NOTE,
            quanta: u16::from(route_plen),
        }
    }

    /// The metadata of an event, for a packet leaving by `data_port`.
    #[inline(always)]
    pub fn of(ev: &PfcEvent, data_port: u16) -> PfcMeta {
        PfcMeta {
            time_ns: ev.time_ns,
            magic: PFC_META_MAGIC,
            pfc_port: u16::from(ev.port),
            data_port,
            prio: ev.prio & 7,
            kind: ev.kind,
            quanta: ev.quanta,
        }
    }
}

/// Where a PFC decision is sent from (`PFC_PATH` entry 0, written by the
/// controller): the data plane itself, or the controller's AF_PACKET
/// sender through the ring buffer (the fallback, where the kernel lacks
/// devmap programs or live-frame test runs).
pub const PFC_PATH_USERSPACE: u32 = 0;
pub const PFC_PATH_DATAPLANE: u32 = 1;

const _: () = assert!(core::mem::size_of::<PfcEvent>() == 24);
const _: () = assert!(core::mem::size_of::<PfcMeta>() == 24);

#[cfg(feature = "user")]
mod pod {
    // SAFETY: repr(C), integer fields, no padding (asserted above).
    unsafe impl aya::Pod for super::PfcEvent {}
}
