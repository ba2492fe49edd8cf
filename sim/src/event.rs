//! The simulator's vocabulary: traffic classes and frame sizes, the
//! packet slab entry, the events and their 64-bit packing, the event
//! queue, a frame for another partition, and serialisation time.

use crate::wheel::WheelQueue;

/// The RoCE traffic class (SONiC's AZURE map: lossless TC 3).
pub const TC_DATA: u8 = 3;
/// ACKs, NAKs and CNPs (TC 6, strict priority, never marked).
pub const TC_CTRL: u8 = 6;
/// Bytes a data frame adds to its RDMA payload: Ethernet 14, IPv4 20, UDP
/// 8, BTH 12, ICRC 4, FCS 4.
pub const HDR: u32 = 62;
/// An ACK / NAK (BTH + AETH) or CNP frame, and a PFC frame.
pub const CTRL_LEN: u32 = 64;

pub const KIND_DATA: u8 = 0;
pub const KIND_ACK: u8 = 1;
pub const KIND_NAK: u8 = 2;
pub const KIND_CNP: u8 = 3;

/// A packet in flight (slab entry).
#[derive(Clone, Copy, Debug, Default)]
pub struct Pkt {
    pub flow: u32,
    /// Data: its PSN; ACK / NAK: the next PSN expected.
    pub psn: u32,
    /// Frame bytes (what the buffer model and the link count).
    pub len: u32,
    /// Destination host.
    pub dst: u32,
    pub kind: u8,
    pub ecn: u8,
    pub tc: u8,
}

/// What a switch reads of a flow to balance it (a copy of [`Flow`](crate::host::state::Flow)'s
/// fields, packed apart from the flow's transport state: 16 bytes a flow,
/// so a switch's lookups stay in cache).
#[derive(Clone, Copy, Debug)]
pub struct FlowAddr {
    pub src: u32,
    pub dst: u32,
    pub qp: u32,
    pub sport: u16,
}

/// What happens at an instant. Node ids: hosts `0..hosts`, then switches.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A packet fully received on `port` of `node`.
    Arrive {
        node: u32,
        port: u16,
        pkt: u32,
    },
    /// `port` of `node` finished sending a frame.
    TxDone {
        node: u32,
        port: u16,
    },
    /// A PFC frame (RoCE priority) received on `port` of `node`.
    Pfc {
        node: u32,
        port: u16,
        quanta: u16,
    },
    /// A pause may have ended: try sending again.
    Resume {
        node: u32,
        port: u16,
    },
    /// The buffer model's timer step on `port`'s queues (the data plane's
    /// periodic drain): due when the model still holds bytes the FIFOs no
    /// longer do.
    QueueTick {
        node: u32,
        port: u16,
    },
    /// PFC refresh timer of the ingress PG of `port` (RoCE class).
    PgTick {
        node: u32,
        port: u16,
    },
    /// A host's pacer allows its next packet.
    Wake {
        node: u32,
    },
    /// A flow of the arrival list starts (the next one is scheduled).
    FlowStart {
        flow: u32,
    },
    /// A flow whose dependencies completed starts.
    DepStart {
        flow: u32,
    },
    /// A flow that `flow` waits for completed (`dep_delay` ago).
    DepDone {
        flow: u32,
    },
    Rto {
        flow: u32,
    },
    /// The receiver's delayed-ACK timer of a flow.
    AckDelay {
        flow: u32,
    },
    Sample,
}

/// What one partition causes in another, due at `t` (a window or more
/// after it was sent).
#[derive(Clone, Copy, Debug)]
pub struct Msg {
    pub t: u64,
    pub what: Crossing,
}

#[derive(Clone, Copy, Debug)]
pub enum Crossing {
    /// A frame fully received on `port` of `node`.
    Frame { node: u32, port: u16, pkt: Pkt },
    /// A PFC frame for the RoCE class received on `port` of `node`.
    Pfc { node: u32, port: u16, quanta: u16 },
    /// A flow that `flow` waits for completed (`dep_delay` before `t`).
    DepDone { flow: u32 },
}

/// Bits of a node id in a queued event: a topology has fewer nodes.
pub const NODE_BITS: u32 = 22;
/// Bits of a port in a queued event (a switch has at most
/// [`crate::topo::SLOTS`] = 64 ports).
const PORT_BITS: u32 = 6;
const _: () = assert!(1 << PORT_BITS == crate::topo::SLOTS);

/// The kind of a queued event (its low 4 bits), one per [`Ev`] variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Kind {
    Arrive = 0,
    TxDone = 1,
    Pfc = 2,
    Resume = 3,
    QueueTick = 4,
    PgTick = 5,
    Wake = 6,
    FlowStart = 7,
    DepStart = 8,
    Rto = 9,
    Sample = 10,
    AckDelay = 11,
    DepDone = 12,
}

/// A popped event: its kind and the fields [`Ev`]'s variant of that kind
/// has (`x`: the packet, flow or PFC quanta), decoded from the 64 bits
/// with no branch on the kind, so the dispatch branches on it once.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Due {
    pub kind: Kind,
    pub node: u32,
    pub port: u16,
    pub x: u32,
}

/// An event as the queue holds it, in 64 bits (an [`Ev`] takes 12 bytes;
/// the wheel keeps the time in the slot, so an event costs it 8): bits 0-3
/// the kind, 4-9 the port, 10-31 the node, 32-63 the packet, flow or PFC
/// quanta.
#[inline(always)]
fn pack(ev: Ev) -> u64 {
    let at = |kind: Kind, node: u32, port: u16, x: u32| {
        debug_assert!(node < 1 << NODE_BITS && u32::from(port) < 1 << PORT_BITS);
        kind as u64 | u64::from(port) << 4 | u64::from(node) << (4 + PORT_BITS) | u64::from(x) << 32
    };
    match ev {
        Ev::Arrive { node, port, pkt } => at(Kind::Arrive, node, port, pkt),
        Ev::TxDone { node, port } => at(Kind::TxDone, node, port, 0),
        Ev::Pfc { node, port, quanta } => at(Kind::Pfc, node, port, u32::from(quanta)),
        Ev::Resume { node, port } => at(Kind::Resume, node, port, 0),
        Ev::QueueTick { node, port } => at(Kind::QueueTick, node, port, 0),
        Ev::PgTick { node, port } => at(Kind::PgTick, node, port, 0),
        Ev::Wake { node } => at(Kind::Wake, node, 0, 0),
        Ev::FlowStart { flow } => at(Kind::FlowStart, 0, 0, flow),
        Ev::DepStart { flow } => at(Kind::DepStart, 0, 0, flow),
        Ev::Rto { flow } => at(Kind::Rto, 0, 0, flow),
        Ev::Sample => Kind::Sample as u64,
        Ev::AckDelay { flow } => at(Kind::AckDelay, 0, 0, flow),
        Ev::DepDone { flow } => at(Kind::DepDone, 0, 0, flow),
    }
}

/// The event [`pack`] packed, as a [`Due`].
#[inline(always)]
fn unpack(x: u64) -> Due {
    let kind = match x & 15 {
        0 => Kind::Arrive,
        1 => Kind::TxDone,
        2 => Kind::Pfc,
        3 => Kind::Resume,
        4 => Kind::QueueTick,
        5 => Kind::PgTick,
        6 => Kind::Wake,
        7 => Kind::FlowStart,
        8 => Kind::DepStart,
        9 => Kind::Rto,
        11 => Kind::AckDelay,
        12 => Kind::DepDone,
        _ => Kind::Sample,
    };
    Due {
        kind,
        port: ((x >> 4) & ((1 << PORT_BITS) - 1)) as u16,
        node: ((x >> (4 + PORT_BITS)) & ((1 << NODE_BITS) - 1)) as u32,
        x: (x >> 32) as u32,
    }
}

/// The event queue ([`WheelQueue`]) of packed events: events at the same
/// nanosecond come out in an order fixed by the sequence of pushes (the
/// last pushed first), so a run is reproducible.
pub struct Queue {
    heap: WheelQueue<u64>,
}

impl Queue {
    pub fn new() -> Self {
        Queue {
            heap: WheelQueue::new(),
        }
    }
    #[inline]
    pub fn push(&mut self, t: u64, ev: Ev) {
        self.heap.push(t, pack(ev));
    }
    #[inline]
    pub(crate) fn pop(&mut self) -> Option<(u64, Due)> {
        self.heap.pop().map(|(t, x)| (t, unpack(x)))
    }
    /// The earliest event if it is before `end`.
    #[inline]
    pub(crate) fn pop_before(&mut self, end: u64) -> Option<(u64, Due)> {
        self.heap.pop_before(end).map(|(t, x)| (t, unpack(x)))
    }
    /// The time of the next event, if any.
    pub fn peek_time(&self) -> Option<u64> {
        self.heap.peek_time()
    }
    /// The packet of the next event, if it is an arrival on the wheel.
    #[inline]
    pub(crate) fn next_arrival_pkt(&mut self) -> Option<u32> {
        match self.heap.peek_near().map(unpack) {
            Some(Due {
                kind: Kind::Arrive,
                x,
                ..
            }) => Some(x),
            _ => None,
        }
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

impl Default for Queue {
    fn default() -> Self {
        Self::new()
    }
}

/// Nanoseconds `len` bytes take at `speed_mbps`, with the sub-nanosecond
/// remainder carried in `frac` (millibit-ns units below the speed), so a
/// port's long-run rate is exact, as the buffer model's drain is.
#[inline]
pub fn ser_ns(len: u32, speed_mbps: u32, frac: &mut u64) -> u64 {
    let num = u64::from(len) * 8_000 + *frac;
    let s = u64::from(speed_mbps.max(1));
    *frac = num % s;
    num / s
}
