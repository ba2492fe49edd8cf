//! Reliable-connected queue-pair state, as an RDMA NIC keeps it: the
//! requester's go-back-N window and the responder's expected PSN.

use super::frames::PSN_MASK;

/// Requester side of one RC QP: which PSN to send next, go-back-N.
#[derive(Clone, Debug)]
pub struct SendQp {
    /// Packets per message (prefix sums give each message's first PSN).
    pub starts: Vec<u32>,
    pub total: u32,
    /// Next PSN to send.
    pub next: u32,
    /// Oldest unacknowledged PSN.
    pub una: u32,
    /// Time of the last ACK progress (or the first send).
    pub last_progress_ns: u64,
    pub retransmitted: u64,
    pub naks: u64,
    pub timeouts: u64,
}

/// Where a PSN sits in its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PktPos {
    pub msg: usize,
    pub first: bool,
    pub last: bool,
    /// Payload bytes of this packet.
    pub len: usize,
}

impl SendQp {
    pub fn new(messages: &[u64], mtu: usize) -> SendQp {
        let mut starts = Vec::with_capacity(messages.len() + 1);
        let mut psn = 0u32;
        for &m in messages {
            starts.push(psn);
            psn += m.div_ceil(mtu as u64).max(1) as u32;
        }
        starts.push(psn);
        SendQp {
            starts,
            total: psn,
            next: 0,
            una: 0,
            last_progress_ns: 0,
            retransmitted: 0,
            naks: 0,
            timeouts: 0,
        }
    }

    /// The message and position of `psn`.
    pub fn pos(&self, psn: u32, messages: &[u64], mtu: usize) -> PktPos {
        let msg = self.starts.partition_point(|&s| s <= psn) - 1;
        let first = psn == self.starts[msg];
        let last = psn + 1 == self.starts[msg + 1];
        let off = u64::from(psn - self.starts[msg]) * mtu as u64;
        let len = (messages[msg] - off.min(messages[msg])).min(mtu as u64) as usize;
        PktPos {
            msg,
            first,
            last,
            len,
        }
    }

    pub fn done(&self) -> bool {
        self.una >= self.total
    }

    /// May send `next` now: data left, inside the window, and its message's
    /// gate open (`gate_done` messages arrived on the gate QP).
    pub fn can_send(&self, window: u32, gate_done: Option<u64>) -> bool {
        if self.next >= self.total || self.next - self.una >= window {
            return false;
        }
        match gate_done {
            None => true,
            Some(done) => {
                let msg = self.starts.partition_point(|&s| s <= self.next) - 1;
                msg as u64 <= done
            }
        }
    }

    /// `next` was sent.
    pub fn on_sent(&mut self, now_ns: u64, highest_sent: &mut u32) {
        if self.next < *highest_sent {
            self.retransmitted += 1;
        }
        if self.una == self.next {
            self.last_progress_ns = now_ns;
        }
        self.next += 1;
        *highest_sent = (*highest_sent).max(self.next);
    }

    /// Cumulative ACK of everything up to and including `psn`.
    pub fn on_ack(&mut self, psn: u32, now_ns: u64) {
        if psn + 1 > self.una && psn < self.total {
            self.una = psn + 1;
            self.last_progress_ns = now_ns;
            if self.next < self.una {
                self.next = self.una;
            }
        }
    }

    /// NAK: everything before `psn` arrived, resend from `psn`.
    pub fn on_nak(&mut self, psn: u32, now_ns: u64) {
        self.naks += 1;
        if psn > 0 {
            self.on_ack(psn - 1, now_ns);
        }
        if psn >= self.una && psn <= self.total {
            self.next = psn;
        }
    }

    /// Rewinds to `una` when nothing was acknowledged for `rto_ns`.
    pub fn check_timeout(&mut self, now_ns: u64, rto_ns: u64) -> bool {
        if self.una < self.next && now_ns.saturating_sub(self.last_progress_ns) > rto_ns {
            self.timeouts += 1;
            self.next = self.una;
            self.last_progress_ns = now_ns;
            return true;
        }
        false
    }
}

/// Responder side of one RC QP.
#[derive(Clone, Debug, Default)]
pub struct RecvQp {
    pub expected: u32,
    pub messages: u64,
    pub bytes: u64,
    pub since_ack: u32,
    pub nak_pending: bool,
    /// Gaps seen (a later PSN than expected; each is one loss event).
    pub gaps: u64,
    pub duplicates: u64,
    /// When the last in-order packet arrived, and from where (source IP,
    /// UDP source port): the delayed ACK goes there.
    pub last_rx_ns: u64,
    pub peer: Option<([u8; 4], u16)>,
}

/// What the responder answers to a data packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxAction {
    /// In order; ACK this PSN when `Some`.
    Accept { ack: Option<u32> },
    /// Already received: re-ACK the last in-order PSN.
    Duplicate { ack: u32 },
    /// A gap: NAK the expected PSN (once per gap), drop the packet.
    OutOfOrder { nak: Option<u32> },
}

impl RecvQp {
    /// An ACK for the packets received since the last one, when none came
    /// for `delay_ns` (a responder's ACK coalescing timer): without it a
    /// requester paused mid-window would time out and resend what arrived.
    pub fn delayed_ack(&mut self, now_ns: u64, delay_ns: u64) -> Option<u32> {
        if self.since_ack > 0 && now_ns.saturating_sub(self.last_rx_ns) >= delay_ns {
            self.since_ack = 0;
            return Some(self.expected.wrapping_sub(1) & PSN_MASK);
        }
        None
    }

    pub fn on_data(&mut self, psn: u32, last: bool, payload: u64, ack_every: u32) -> RxAction {
        use std::cmp::Ordering::*;
        match psn.cmp(&self.expected) {
            Equal => {
                self.expected += 1;
                self.bytes += payload;
                self.nak_pending = false;
                self.since_ack += 1;
                if last {
                    self.messages += 1;
                }
                if last || self.since_ack >= ack_every {
                    self.since_ack = 0;
                    RxAction::Accept { ack: Some(psn) }
                } else {
                    RxAction::Accept { ack: None }
                }
            }
            Less => {
                self.duplicates += 1;
                RxAction::Duplicate {
                    ack: self.expected.wrapping_sub(1) & PSN_MASK,
                }
            }
            Greater => {
                if self.nak_pending {
                    RxAction::OutOfOrder { nak: None }
                } else {
                    self.nak_pending = true;
                    self.gaps += 1;
                    RxAction::OutOfOrder {
                        nak: Some(self.expected),
                    }
                }
            }
        }
    }
}
