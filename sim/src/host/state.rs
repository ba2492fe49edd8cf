//! A host NIC's state: its flows (one RC QP each: sender and receiver
//! halves apart, DCQCN reaction and notification points) and its port (link,
//! pause, control queue, active flows).

use std::collections::VecDeque;

use dataplane_common::buffer::PauseStat;
use dataplane_common::dcqcn::{DcqcnParams, NpState, Pacer, RpState};

use crate::topo::Link;

/// No job / no parent.
pub const NONE: u32 = u32::MAX;

/// One message on its own QP: what it is, and its sender's half (the
/// source host's partition alone writes it).
#[derive(Clone, Debug)]
pub struct Flow {
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    pub start_ns: u64,
    pub sport: u16,
    pub qp: u32,
    /// Collective job it belongs to, or [`NONE`].
    pub job: u32,
    /// Its step in the collective (0 otherwise).
    pub step: u32,
    /// Flows that must complete before this one starts.
    pub deps_left: u32,
    pub started: bool,
    pub snd_nxt: u64,
    pub snd_una_psn: u32,
    pub last_progress_ns: u64,
    pub rp: RpState,
    pub pacer: Pacer,
    pub in_active: bool,
    pub acked: bool,
    pub rto_armed: bool,
}

impl Flow {
    pub fn new(src: u32, dst: u32, size: u64, start_ns: u64, sport: u16, qp: u32) -> Flow {
        Flow {
            src,
            dst,
            size,
            start_ns,
            sport,
            qp,
            job: NONE,
            step: 0,
            deps_left: 0,
            started: false,
            snd_nxt: 0,
            snd_una_psn: 0,
            last_progress_ns: 0,
            rp: RpState::new(&DcqcnParams::new(1)),
            pacer: Pacer::NEW,
            in_active: false,
            acked: false,
            rto_armed: false,
        }
    }
}

/// A flow's receiver half (the destination host's partition alone writes
/// it; the source's for a flow of no bytes, which completes at its start),
/// with the flow's ends and size copied.
#[derive(Clone, Debug)]
pub struct FlowRx {
    pub src: u32,
    pub dst: u32,
    pub size: u64,
    /// Flows waiting for this one.
    pub children: Vec<u32>,
    pub rcv_psn: u32,
    pub rcv_bytes: u64,
    pub np: NpState,
    pub nak_sent: bool,
    /// When the last byte arrived (0: not yet).
    pub finish_ns: u64,
    /// The PSN the receiver last ACKed (its next expected then).
    pub ack_psn: u32,
    /// Delayed-ACK timer armed.
    pub ack_armed: bool,
    /// When the receiver last got a data packet of this flow.
    pub last_rx_ns: u64,
    /// An out-of-order-placement receiver's PSNs placed so far (a bit
    /// each; empty until its first packet, and with go-back-N receivers).
    pub placed: Vec<u64>,
}

impl FlowRx {
    /// The receiver half of `f`, with DCQCN's notification point at
    /// `cnp_interval_ns`.
    pub fn of(f: &Flow, cnp_interval_ns: u64) -> FlowRx {
        FlowRx {
            src: f.src,
            dst: f.dst,
            size: f.size,
            children: Vec::new(),
            rcv_psn: 0,
            rcv_bytes: 0,
            np: NpState::new(cnp_interval_ns),
            nak_sent: false,
            finish_ns: 0,
            ack_psn: 0,
            ack_armed: false,
            last_rx_ns: 0,
            placed: Vec::new(),
        }
    }
}

pub struct Host {
    pub link: Link,
    pub busy: bool,
    /// RoCE data paused until.
    pub paused_until: u64,
    pub pause: PauseStat,
    /// ACKs, NAKs and CNPs to send (before data, never paused).
    pub ctrl: VecDeque<u32>,
    /// Flows with data to send, each with its sender half's place in
    /// `flows` ([`crate::cells::Shared::slot`]: no lookup as the host
    /// goes round them).
    pub active: Vec<(u32, u32)>,
    pub rr: usize,
    pub wake_at: u64,
    pub ser_frac: u64,
    pub tx_bytes: u64,
}

impl Host {
    pub fn new(link: Link) -> Host {
        Host {
            link,
            busy: false,
            paused_until: 0,
            pause: PauseStat::ZERO,
            ctrl: VecDeque::new(),
            active: Vec::new(),
            rr: 0,
            wake_at: u64::MAX,
            ser_frac: 0,
            tx_bytes: 0,
        }
    }
}
