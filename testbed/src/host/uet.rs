//! A UET-like transport for the host emulator: the decisions, as pure
//! functions shared by the sender, the receiver and the tests
//! ([`super::uet_host`] runs them on a raw socket).
//!
//! **Wire** (the data plane's own view, `dataplane_common::wire::uet`):
//! IPv4 / UDP (source port = the packet's **entropy value**, destination
//! 4793) / PDS header / payload. Data is a RUD request
//! ([`Pds::request`], 12 bytes: PSN, source and destination PDC ids; the
//! RETX flag on a retransmission, AR on a message's last packet), then the
//! lab's 12-byte message header ([`Ses`]: message id, packet index and
//! count, payload bytes; a stand-in for UET's SES header, which this lab
//! does not implement), then the payload. Feedback is a PDS ACK
//! ([`Pds::ack`]: cumulative ACK PSN and the offset of the PSN acknowledged)
//! or NACK ([`Pds::nack`], code [`uet::NACK_TRIMMED`]).
//!
//! **Entropy**: every packet gets its own value ([`entropy`]: a hash of
//! the PDC, the PSN and the attempt), so a sprayed fabric spreads one
//! message over its paths and a retransmission takes a fresh path.
//!
//! **Trimmed packets** are recognised exactly as the data plane marks
//! them (`dataplane_common::trim::rewrite`): the trim DSCP, and a UDP
//! length cut below what the message header declares ([`arrival`]).
//!
//! **Reliability** (RUD, the UET way): the receiver ACKs every data packet
//! it holds (selectively: cumulative PSN + offset), answers a trimmed one
//! at once with a NACK for its PSN, and the sender retransmits exactly
//! that packet ([`UetTx::on_nack`]); a packet really dropped is resent
//! alone after the retransmission timeout ([`UetTx::check_timeouts`]). No
//! go-back-N: packets may arrive in any order.

use std::collections::{HashMap, VecDeque};

use dataplane_common::build::{self, Ip, L2};
use dataplane_common::wire::uet::{self, Pds};

/// DSCP of UET data (AZURE map: TC 1, a lossy class).
pub const UET_DSCP: u8 = 10;
/// DSCP of UET feedback (ACK, NACK; AZURE map: TC 5).
pub const UET_FEEDBACK_DSCP: u8 = 46;
/// The lab's message header after the PDS request.
pub const SES_LEN: usize = 12;
/// Bytes before the payload of a data frame: Ethernet 14, IPv4 20, UDP 8,
/// PDS request 12, message header 12.
pub const DATA_HEADERS: usize = 14 + 20 + 8 + 12 + SES_LEN;
/// PSNs a receiver tracks per PDC (a bad PSN beyond is ignored).
pub const MAX_PSN: u32 = 1 << 20;

/// The lab's message header: which message a packet belongs to, where, and
/// how many payload bytes it carries (so a cut packet is recognised).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ses {
    pub msg: u32,
    pub index: u16,
    pub count: u16,
    pub len: u16,
}

impl Ses {
    pub fn encode(&self) -> [u8; SES_LEN] {
        let m = self.msg.to_be_bytes();
        let i = self.index.to_be_bytes();
        let c = self.count.to_be_bytes();
        let l = self.len.to_be_bytes();
        [
            m[0], m[1], m[2], m[3], i[0], i[1], c[0], c[1], l[0], l[1], 0, 0,
        ]
    }

    pub fn decode(b: &[u8]) -> Option<Ses> {
        let b = b.get(..SES_LEN)?;
        Some(Ses {
            msg: u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
            index: u16::from_be_bytes([b[4], b[5]]),
            count: u16::from_be_bytes([b[6], b[7]]),
            len: u16::from_be_bytes([b[8], b[9]]),
        })
    }
}

/// The entropy value (UDP source port) of attempt `attempt` of packet
/// `psn` of PDC `pdc`: in the dynamic port range 0xc000-0xffff.
pub fn entropy(pdc: u16, psn: u32, attempt: u8) -> u16 {
    let mut h = u32::from(pdc).wrapping_mul(0x85eb_ca6b)
        ^ psn.wrapping_mul(0x9e37_79b1)
        ^ u32::from(attempt).wrapping_mul(0xc2b2_ae35);
    h ^= h >> 15;
    h = h.wrapping_mul(0x2c1b_3c6d);
    h ^= h >> 12;
    0xc000 | (h as u16 & 0x3fff)
}

/// What arrived, judged from the packet alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// All the payload its header declares is there (also a packet the
    /// switch marked but did not need to cut: its data is complete).
    Whole,
    /// Trimmed by a switch: the trim DSCP and a payload cut short.
    Trimmed,
    /// Cut short without the trim DSCP: not a switch's trim (ignored).
    Cut,
}

/// How a data packet with DSCP `dscp`, `carried` payload bytes (by its UDP
/// length) and `declared` bytes (by its message header) arrived, where the
/// fabric trims with DSCP `trim_dscp`.
pub fn arrival(dscp: u8, trim_dscp: u8, carried: usize, declared: usize) -> Arrival {
    if carried >= declared {
        Arrival::Whole
    } else if dscp == trim_dscp {
        Arrival::Trimmed
    } else {
        Arrival::Cut
    }
}

/// What the receiver answers a data packet with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// ACK: every PSN up to `cack_psn` arrived (`u32::MAX`: none yet), and
    /// PSN `cack_psn + offset` did.
    Ack {
        cack_psn: u32,
        offset: u16,
    },
    /// NACK (trimmed) for `psn`: send it again.
    Nack {
        psn: u32,
    },
    None,
}

impl Reply {
    /// The PSN an ACK is for.
    pub fn acked_psn(cack_psn: u32, offset: u16) -> u32 {
        cack_psn.wrapping_add(u32::from(offset))
    }
}

/// A receiving PDC: which PSNs arrived, which messages are complete.
#[derive(Clone, Debug, Default)]
pub struct UetRx {
    got: Vec<bool>,
    /// Every PSN below arrived.
    pub next_expected: u32,
    per_msg: HashMap<u32, u16>,
    /// Complete messages.
    pub messages: u64,
    /// Payload bytes received (each PSN once).
    pub bytes: u64,
    pub trimmed: u64,
    pub nacks: u64,
    pub duplicates: u64,
    pub cut: u64,
}

impl UetRx {
    /// Takes data packet `psn` of message `ses` that arrived as `a`.
    pub fn on_data(&mut self, psn: u32, ses: &Ses, a: Arrival) -> Reply {
        if psn >= MAX_PSN {
            return Reply::None;
        }
        let i = psn as usize;
        if self.got.len() <= i {
            self.got.resize(i + 1, false);
        }
        match a {
            Arrival::Cut => {
                self.cut += 1;
                return Reply::None;
            }
            Arrival::Trimmed => {
                self.trimmed += 1;
                if !self.got[i] {
                    self.nacks += 1;
                    return Reply::Nack { psn };
                }
            }
            Arrival::Whole if self.got[i] => self.duplicates += 1,
            Arrival::Whole => {
                self.got[i] = true;
                self.bytes += u64::from(ses.len);
                let n = self.per_msg.entry(ses.msg).or_default();
                *n += 1;
                if *n == ses.count {
                    self.messages += 1;
                    self.per_msg.remove(&ses.msg);
                }
                while self.got.get(self.next_expected as usize) == Some(&true) {
                    self.next_expected += 1;
                }
            }
        }
        let cack_psn = self.next_expected.wrapping_sub(1);
        let offset = psn.wrapping_sub(cack_psn);
        Reply::Ack {
            cack_psn,
            offset: if psn < self.next_expected {
                0
            } else {
                offset.min(u32::from(u16::MAX)) as u16
            },
        }
    }
}

/// A sending PDC: `messages` split into packets of `mtu` payload bytes,
/// PSN = packet index; per packet acknowledged / in flight / queued for
/// retransmission; per message the first send and the last ACK.
#[derive(Clone, Debug)]
pub struct UetTx {
    /// First PSN of each message, then the total.
    pub starts: Vec<u32>,
    sizes: Vec<u64>,
    mtu: usize,
    acked: Vec<bool>,
    sent_at: Vec<Option<u64>>,
    attempts: Vec<u8>,
    queued: Vec<bool>,
    retx: VecDeque<u32>,
    /// Next PSN never sent.
    pub next_new: u32,
    /// Sent, not acknowledged, not queued again.
    pub outstanding: u32,
    /// Lowest PSN not acknowledged.
    pub una: u32,
    msg_acked: Vec<u32>,
    /// Per message: first packet sent, last packet acknowledged (ns).
    pub msg_first_ns: Vec<Option<u64>>,
    pub msg_done_ns: Vec<Option<u64>>,
    pub retransmitted: u64,
    pub nacks: u64,
    pub timeouts: u64,
    pub acks: u64,
    /// Congestion window, packets (AIMD, see [`UetTx::next`]).
    pub cwnd: f64,
    /// No further cut for losses of PSNs below (one cut per window).
    recover: u32,
    /// Window cuts (NACK: halved; timeout: to 1).
    pub cuts: u64,
}

impl UetTx {
    pub fn new(sizes: &[u64], mtu: usize) -> UetTx {
        let mut starts = vec![0u32];
        for s in sizes {
            let n = s.div_ceil(mtu as u64).max(1) as u32;
            starts.push(starts.last().copied().unwrap_or(0) + n);
        }
        let total = *starts.last().unwrap_or(&0) as usize;
        UetTx {
            starts,
            sizes: sizes.to_vec(),
            mtu,
            acked: vec![false; total],
            sent_at: vec![None; total],
            attempts: vec![0; total],
            queued: vec![false; total],
            retx: VecDeque::new(),
            next_new: 0,
            outstanding: 0,
            una: 0,
            msg_acked: vec![0; sizes.len()],
            msg_first_ns: vec![None; sizes.len()],
            msg_done_ns: vec![None; sizes.len()],
            retransmitted: 0,
            nacks: 0,
            timeouts: 0,
            acks: 0,
            cwnd: f64::MAX,
            recover: 0,
            cuts: 0,
        }
    }

    pub fn total(&self) -> u32 {
        self.acked.len() as u32
    }

    /// The message header of packet `psn`.
    pub fn ses(&self, psn: u32) -> Ses {
        let m = self.starts.partition_point(|&s| s <= psn) - 1;
        let (first, count) = (self.starts[m], self.starts[m + 1] - self.starts[m]);
        let index = psn - first;
        let before = u64::from(index) * self.mtu as u64;
        Ses {
            msg: m as u32,
            index: index as u16,
            count: count as u16,
            len: (self.sizes[m].saturating_sub(before)).min(self.mtu as u64) as u16,
        }
    }

    /// The packet to send next: a queued retransmission first (with at
    /// most `window` in flight: it replaces a packet no longer in the
    /// network, as TCP's fast retransmit ignores the congestion window),
    /// else a new packet within the congestion window. The window is AIMD
    /// on the signals each mode gives: +1/cwnd per packet acknowledged,
    /// halved by a NACK (a trim: known one hop after the queue overflowed),
    /// down to 1 by a timeout (a drop: known only after the RTO); at most
    /// one cut per window of packets; never above `window`. (PSN, attempt
    /// number).
    pub fn next(&mut self, window: u32) -> Option<(u32, u8)> {
        self.cwnd = self.cwnd.min(f64::from(window));
        if self.outstanding >= window {
            return None;
        }
        while let Some(&p) = self.retx.front() {
            if self.acked[p as usize] || !self.queued[p as usize] {
                self.retx.pop_front();
                continue;
            }
            return Some((p, self.attempts[p as usize]));
        }
        (self.next_new < self.total() && f64::from(self.outstanding) < self.cwnd.floor().max(1.0))
            .then_some((self.next_new, 0))
    }

    /// A loss signal for `psn`: the window halves, once per window of
    /// packets (`to_one`, a timeout: drops to 1, always).
    fn cut(&mut self, psn: u32, to_one: bool) {
        if !to_one && psn < self.recover {
            return;
        }
        self.cwnd = if to_one {
            1.0
        } else {
            (self.cwnd / 2.0).max(1.0)
        };
        self.recover = self.next_new;
        self.cuts += 1;
    }

    /// Packet `psn` (what [`UetTx::next`] gave) left at `now`.
    pub fn on_sent(&mut self, psn: u32, now: u64) {
        let i = psn as usize;
        if self.queued[i] {
            self.queued[i] = false;
            if self.retx.front() == Some(&psn) {
                self.retx.pop_front();
            }
            self.retransmitted += 1;
        } else if psn == self.next_new {
            self.next_new += 1;
        } else {
            return;
        }
        self.outstanding += 1;
        self.sent_at[i] = Some(now);
        self.attempts[i] = self.attempts[i].saturating_add(1);
        let m = self.ses(psn).msg as usize;
        self.msg_first_ns[m].get_or_insert(now);
    }

    fn ack_one(&mut self, psn: u32, now: u64) {
        let i = psn as usize;
        if i >= self.acked.len() || self.acked[i] || self.sent_at[i].is_none() {
            return;
        }
        self.acked[i] = true;
        if self.cwnd < f64::MAX {
            self.cwnd += 1.0 / self.cwnd.max(1.0);
        }
        if self.queued[i] {
            self.queued[i] = false;
        } else {
            self.outstanding -= 1;
        }
        let m = self.ses(psn).msg as usize;
        self.msg_acked[m] += 1;
        if self.msg_acked[m] == self.starts[m + 1] - self.starts[m] {
            self.msg_done_ns[m] = Some(now);
        }
    }

    /// An ACK: every PSN up to `cack_psn` and PSN `cack_psn + offset`.
    pub fn on_ack(&mut self, cack_psn: u32, offset: u16, now: u64) {
        self.acks += 1;
        let upto = cack_psn.wrapping_add(1).min(self.next_new);
        for p in self.una..upto {
            self.ack_one(p, now);
        }
        self.ack_one(Reply::acked_psn(cack_psn, offset), now);
        while (self.una as usize) < self.acked.len() && self.acked[self.una as usize] {
            self.una += 1;
        }
    }

    /// A NACK (trimmed) for `psn`: queued for retransmission at once;
    /// false when there is nothing to resend (acknowledged, already
    /// queued, never sent).
    pub fn on_nack(&mut self, psn: u32) -> bool {
        self.nacks += 1;
        let q = self.requeue(psn);
        if q {
            self.cut(psn, false);
        }
        q
    }

    fn requeue(&mut self, psn: u32) -> bool {
        let i = psn as usize;
        if i >= self.acked.len() || self.acked[i] || self.queued[i] || self.sent_at[i].is_none() {
            return false;
        }
        self.queued[i] = true;
        self.outstanding -= 1;
        self.retx.push_back(psn);
        true
    }

    /// Queues every packet in flight for longer than `rto_ns` (each alone:
    /// selective, no go-back-N); returns how many.
    pub fn check_timeouts(&mut self, now: u64, rto_ns: u64) -> u32 {
        let mut n = 0;
        for p in self.una..self.next_new {
            let i = p as usize;
            if !self.acked[i]
                && !self.queued[i]
                && self.sent_at[i].is_some_and(|t| now.saturating_sub(t) >= rto_ns)
                && self.requeue(p)
            {
                n += 1;
            }
        }
        self.timeouts += u64::from(n);
        if n > 0 {
            self.cut(self.next_new, true);
        }
        n
    }

    pub fn done(&self) -> bool {
        self.una >= self.total()
    }

    /// Completion time of each complete message, ns (last ACK - first
    /// send).
    pub fn completion_ns(&self) -> Vec<u64> {
        self.msg_first_ns
            .iter()
            .zip(&self.msg_done_ns)
            .filter_map(|(a, b)| Some(b.as_ref()?.saturating_sub(*a.as_ref()?)))
            .collect()
    }

    /// Payload bytes of the acknowledged packets.
    pub fn acked_bytes(&self) -> u64 {
        (0..self.total())
            .filter(|&p| self.acked[p as usize])
            .map(|p| u64::from(self.ses(p).len))
            .sum()
    }
}

/// Addresses and PDC of one direction of a connection.
#[derive(Clone, Debug)]
pub struct Path {
    pub l2: L2,
    pub src: [u8; 4],
    pub dst: [u8; 4],
    /// Both ends use the same PDC id for a connection.
    pub pdc: u16,
}

/// A data frame: packet `psn`, attempt `attempt` (RETX from the second),
/// message header `ses`, `ses.len` payload bytes.
pub fn data_frame(path: &Path, psn: u32, attempt: u8, ses: &Ses) -> Vec<u8> {
    let mut flags = if attempt > 0 { uet::FLAG_RETX } else { 0 };
    if ses.index + 1 == ses.count {
        flags |= uet::FLAG_AR;
    }
    let mut body = Vec::with_capacity(12 + SES_LEN + usize::from(ses.len));
    body.extend_from_slice(&Pds::request(
        uet::TYPE_RUD_REQ,
        0,
        flags,
        psn,
        path.pdc,
        path.pdc,
    ));
    body.extend_from_slice(&ses.encode());
    body.resize(body.len() + usize::from(ses.len), 0x5a);
    build::udp_frame(
        &path.l2,
        &Ip::v4(path.src, path.dst).dscp(UET_DSCP),
        entropy(path.pdc, psn, attempt),
        uet::UET_PORT,
        &body,
    )
}

/// The feedback frame of `reply` (None for [`Reply::None`]), with the
/// entropy value of the packet it answers.
pub fn feedback_frame(path: &Path, entropy: u16, reply: Reply) -> Option<Vec<u8>> {
    let pds: Vec<u8> = match reply {
        Reply::Ack { cack_psn, offset } => Pds::ack(0, cack_psn, offset, path.pdc, path.pdc).into(),
        Reply::Nack { psn } => Pds::nack(0, uet::NACK_TRIMMED, psn, path.pdc, path.pdc).into(),
        Reply::None => return None,
    };
    Some(build::udp_frame(
        &path.l2,
        &Ip::v4(path.src, path.dst).dscp(UET_FEEDBACK_DSCP),
        entropy,
        uet::UET_PORT,
        &pds,
    ))
}

/// A UET frame as the emulator reads it (with the data plane's parser).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    Data {
        psn: u32,
        retx: bool,
        ses: Ses,
        /// Payload bytes by the UDP length.
        carried: usize,
        dscp: u8,
    },
    Ack {
        cack_psn: u32,
        offset: u16,
    },
    Nack {
        code: u8,
        psn: u32,
    },
}

/// A UET-over-IPv4 frame: (what it is, its destination PDC, source
/// address, entropy value); `None` for anything else.
pub fn read(f: &[u8]) -> Option<(Seen, u16, [u8; 4], u16)> {
    use dataplane_common::parse::{parse, L3};
    let p = parse(f).ok()?;
    if !p.uet || p.l3 != L3::Ipv4 {
        return None;
    }
    let l3 = usize::from(p.l3_off);
    let l4 = usize::from(p.l4_off);
    let udp_len = usize::from(u16::from_be_bytes(f.get(l4 + 4..l4 + 6)?.try_into().ok()?));
    let pds = l4 + 8;
    let b = |o: usize| f.get(pds + o).copied();
    let dpdcid = u16::from_be_bytes([b(10)?, b(11)?]);
    let src: [u8; 4] = f.get(l3 + 12..l3 + 16)?.try_into().ok()?;
    let seen = match p.pds.ptype {
        uet::TYPE_RUD_REQ => {
            let ses = Ses::decode(f.get(pds + 12..)?)?;
            Seen::Data {
                psn: p.pds.psn,
                retx: p.pds.flags & uet::FLAG_RETX != 0,
                ses,
                carried: udp_len.saturating_sub(8 + 12 + SES_LEN),
                dscp: p.dscp,
            }
        }
        uet::TYPE_ACK => Seen::Ack {
            cack_psn: p.pds.psn,
            offset: u16::from_be_bytes([b(2)?, b(3)?]),
        },
        uet::TYPE_NACK => Seen::Nack {
            code: b(2)?,
            psn: p.pds.psn,
        },
        _ => return None,
    };
    Some((seen, dpdcid, src, p.sport))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> Path {
        Path {
            l2: L2::new([2, 0, 1, 0, 0, 1], [2, 0, 3, 0, 0, 1]),
            src: [198, 18, 1, 2],
            dst: [198, 18, 1, 1],
            pdc: 0x101,
        }
    }

    #[test]
    fn trimmed_means_the_trim_dscp_and_a_cut_payload() {
        assert_eq!(arrival(UET_DSCP, 48, 1024, 1024), Arrival::Whole);
        assert_eq!(arrival(48, 48, 54, 1024), Arrival::Trimmed);
        // marked, but short enough to go whole: its data is there
        assert_eq!(arrival(48, 48, 40, 40), Arrival::Whole);
        assert_eq!(arrival(UET_DSCP, 48, 54, 1024), Arrival::Cut);
    }

    #[test]
    fn frames_parse_back_with_the_data_planes_parser() {
        let p = path();
        let tx = UetTx::new(&[3000], 1024);
        let ses = tx.ses(2);
        assert_eq!(
            ses,
            Ses {
                msg: 0,
                index: 2,
                count: 3,
                len: 3000 - 2048
            }
        );
        let f = data_frame(&p, 2, 1, &ses);
        assert_eq!(f.len(), DATA_HEADERS + 952);
        let (s, pdc, src, sport) = read(&f).unwrap();
        assert_eq!((pdc, src, sport), (0x101, p.src, entropy(0x101, 2, 1)));
        assert_eq!(
            s,
            Seen::Data {
                psn: 2,
                retx: true,
                ses,
                carried: 952,
                dscp: UET_DSCP
            }
        );
        let a = feedback_frame(
            &p,
            7,
            Reply::Ack {
                cack_psn: 4,
                offset: 3,
            },
        )
        .unwrap();
        assert_eq!(
            read(&a).unwrap().0,
            Seen::Ack {
                cack_psn: 4,
                offset: 3
            }
        );
        let n = feedback_frame(&p, 7, Reply::Nack { psn: 9 }).unwrap();
        assert_eq!(
            read(&n).unwrap().0,
            Seen::Nack {
                code: uet::NACK_TRIMMED,
                psn: 9
            }
        );
        assert!(feedback_frame(&p, 7, Reply::None).is_none());
    }

    /// What `dataplane_common::trim` makes of a data frame, read back.
    #[test]
    fn a_frame_the_switch_trimmed_reads_as_trimmed() {
        use dataplane_common::parse::parse;
        let f = data_frame(&path(), 5, 0, &UetTx::new(&[4096], 1024).ses(1));
        let p = parse(&f[..]).unwrap();
        let mut cut = f[..128].to_vec();
        dataplane_common::trim::rewrite(&mut cut[..], &p, 48).unwrap();
        let Some((
            Seen::Data {
                psn,
                ses,
                carried,
                dscp,
                ..
            },
            ..,
        )) = read(&cut)
        else {
            panic!("not read back")
        };
        assert_eq!((psn, dscp, carried), (5, 48, 128 - DATA_HEADERS));
        assert_eq!(
            arrival(dscp, 48, carried, usize::from(ses.len)),
            Arrival::Trimmed
        );
    }

    #[test]
    fn entropy_differs_per_packet_and_attempt() {
        let e: std::collections::HashSet<u16> = (0..64).map(|p| entropy(1, p, 0)).collect();
        assert!(e.len() > 56, "{}", e.len());
        assert_ne!(entropy(1, 3, 0), entropy(1, 3, 1));
        assert!((0..64).all(|p| entropy(7, p, 2) >= 0xc000));
    }

    #[test]
    fn receiver_acks_selectively_and_nacks_a_trimmed_packet_once_per_arrival() {
        let tx = UetTx::new(&[4096], 1024);
        let mut r = UetRx::default();
        assert_eq!(
            r.on_data(0, &tx.ses(0), Arrival::Whole),
            Reply::Ack {
                cack_psn: 0,
                offset: 0
            }
        );
        assert_eq!(
            r.on_data(1, &tx.ses(1), Arrival::Trimmed),
            Reply::Nack { psn: 1 }
        );
        // 2 arrives before 1's retransmission: cumulative 0, offset 2
        assert_eq!(
            r.on_data(2, &tx.ses(2), Arrival::Whole),
            Reply::Ack {
                cack_psn: 0,
                offset: 2
            }
        );
        assert_eq!(r.on_data(2, &tx.ses(2), Arrival::Cut), Reply::None);
        assert_eq!(
            r.on_data(1, &tx.ses(1), Arrival::Whole),
            Reply::Ack {
                cack_psn: 2,
                offset: 0
            }
        );
        // a trimmed copy of what arrived already: ACK, not NACK
        assert_eq!(
            r.on_data(1, &tx.ses(1), Arrival::Trimmed),
            Reply::Ack {
                cack_psn: 2,
                offset: 0
            }
        );
        assert_eq!(r.messages, 0);
        r.on_data(3, &tx.ses(3), Arrival::Whole);
        assert_eq!(
            (r.messages, r.bytes, r.trimmed, r.nacks, r.cut),
            (1, 4096, 2, 1, 1)
        );
        assert_eq!(r.next_expected, 4);
    }

    #[test]
    fn sender_resends_only_the_nacked_packet_and_times_out_the_lost_one() {
        let mut t = UetTx::new(&[2048, 2048], 1024);
        for now in 0..4 {
            let (p, a) = t.next(8).unwrap();
            assert_eq!((p, a), (now as u32, 0));
            t.on_sent(p, now);
        }
        assert_eq!((t.outstanding, t.next(4)), (4, None), "window");
        assert_eq!(t.cwnd, 4.0);
        t.on_ack(0, 0, 10);
        assert_eq!(t.cwnd, 4.25, "additive increase");
        // 1 trimmed: NACK, resent at once (attempt 1) before anything new;
        // the window halves
        assert!(t.on_nack(1));
        assert!(!t.on_nack(1), "queued once");
        assert_eq!((t.cwnd, t.cuts), (2.125, 1));
        assert_eq!(t.next(8), Some((1, 1)));
        t.on_sent(1, 11);
        assert_eq!(t.retransmitted, 1);
        // 2 acknowledged selectively, 3 lost
        t.on_ack(0, 2, 12);
        t.on_ack(1, 0, 13);
        assert_eq!(t.msg_done_ns[0], Some(13));
        assert_eq!(t.completion_ns(), vec![13]);
        assert_eq!(t.una, 3);
        assert_eq!(t.check_timeouts(50, 100), 0);
        assert_eq!(t.check_timeouts(103, 100), 1, "only 3 timed out");
        assert_eq!((t.cwnd, t.cuts), (1.0, 2), "a timeout: window 1");
        assert_eq!(t.next(8), Some((3, 1)));
        t.on_sent(3, 104);
        t.on_ack(3, 0, 110);
        assert!(t.done());
        // message 1: PSN 2 first sent at 2, PSN 3 acknowledged at 110
        assert_eq!(t.completion_ns(), vec![13, 108]);
        assert_eq!((t.nacks, t.timeouts, t.retransmitted), (2, 1, 2));
        assert_eq!(t.outstanding, 0);
        assert_eq!(t.acked_bytes(), 4096);
    }
}
