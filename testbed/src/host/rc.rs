//! The RoCEv2 host emulator: one per fabric host, in that host's namespace,
//! reacting the way an RDMA NIC does.
//!
//! * **Sender (requester)**: reliable-connected queue pairs sending RDMA
//!   WRITE messages (FIRST with RETH, MIDDLE, LAST, or ONLY), PSNs
//!   increasing per QP, a valid ICRC, DSCP [`ROCE_DSCP`], ECT(0), paced
//!   at the host's line rate and at each QP's DCQCN rate. Go-back-N: a NAK
//!   (PSN sequence error) or a retransmission timeout rewinds to the first
//!   unacknowledged PSN, as RoCE NICs do, so every lost frame costs a
//!   window of retransmissions.
//! * **Receiver (responder / notification point)**: accepts only the
//!   expected PSN; an ACK (AETH syndrome 0x1f) every [`HostCfg::ack_every`]
//!   packets and at each message's end; one NAK per gap (syndrome 0x60,
//!   PSN sequence error) and counts the gap; a CNP to the sender's QP for
//!   CE-marked frames, at most one per QP per `cnp_interval_ns`
//!   ([`dataplane_common::dcqcn::np_on_packet`]).
//! * **Reaction point**: DCQCN per QP from the pure functions of
//!   [`dataplane_common::dcqcn`] (cut on CNP with alpha, fast recovery,
//!   additive and hyper increase), with parameters
//!   [`DcqcnParams::scaled`] to the host's line rate (or
//!   [`DcqcnParams::mlx_scaled`], the Mlx profile, set in
//!   [`HostCfg::params`]).
//! * **Its link**: received frames are handed to the receiver at the
//!   host's line rate (serialisation delay, FIFO): the switches' buffer
//!   model queues and marks but XDP forwards at once, so without this a
//!   receiver would get more than its line rate whenever the model admits
//!   more. MAC control frames (PFC) are acted on at once.
//! * **PFC**: an 802.1Qbb frame for priority [`ROCE_TC`] stops data for
//!   `quanta x 512` bit times at the line rate (reloaded by each frame) or
//!   until a time of 0; a PAUSE stops it too. ACKs, NAKs and CNPs are not
//!   held (they are a few bytes; a NIC sends them on their own queue).
//!
//! Both ends of a connection use the same QP number (a scenario gives each
//! connection its own), so a CNP, ACK or NAK names the sender's QP.
//! Messages can be gated: message `k` of a send QP starts only once `k`
//! messages have arrived on another QP (a ring all-reduce step sends what
//! the previous step received).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use dataplane_common::build::{self, Ip, Reth, L2};
use dataplane_common::dcqcn::{
    np_on_packet, rp_on_cnp, rp_on_sent, rp_rate, rp_tick, DcqcnParams, NpState, Pacer, RpState,
};
use dataplane_common::wire::bth::{self, Bth};

use super::frames::{
    mac_ctl, open_nic_socket, parse, LineRx, NicCfg, AETH_ACK, AETH_NAK_SEQ, ORIGINAL_FILL,
    PSN_MASK, RETX_FILL,
};
use super::pause::PauseGate;
#[cfg(test)]
use super::qp::PktPos;
use super::qp::{RecvQp, RxAction, SendQp};
use crate::topo::{CNP_DSCP, ROCE_DSCP, ROCE_TC};

/// How one host behaves.
#[derive(Clone, Debug)]
pub struct HostCfg {
    pub nic: NicCfg,
    pub honour_pfc: bool,
    /// DCQCN reaction point on; off, CNPs are counted and ignored.
    pub dcqcn: bool,
    pub params: DcqcnParams,
    pub ack_every: u32,
    /// Packets a QP may have unacknowledged.
    pub window: u32,
    /// Retransmission timeout (no ACK progress with packets outstanding).
    /// Default 300 ms: longer than a full switch buffer takes to drain at
    /// the fabric's scaled-down speeds (a 256 KB pool at 20 Mb/s is 105 ms),
    /// as a NIC's local ACK timeout is longer than its fabric's queueing.
    pub rto_ns: u64,
    /// The responder ACKs what it holds unacknowledged after this idle time.
    pub ack_delay_ns: u64,
}

impl HostCfg {
    /// The emulator of fabric host `h` (its link speed, addresses, gateway).
    pub fn of(h: &crate::topo::HostNode) -> HostCfg {
        HostCfg::with(NicCfg::of(h))
    }

    pub fn new(name: &str, mac: [u8; 6], gw_mac: [u8; 6], ip: [u8; 4], line_bps: u64) -> HostCfg {
        HostCfg::with(NicCfg::new(name, mac, gw_mac, ip, line_bps))
    }

    /// RoCEv2 on `nic`: PFC honoured, DCQCN scaled to its line rate, an
    /// ACK every 8 packets, window 64, RTO 300 ms, delayed ACK 1 ms.
    pub fn with(nic: NicCfg) -> HostCfg {
        let line_bps = nic.line_bps;
        HostCfg {
            nic,
            honour_pfc: true,
            dcqcn: true,
            params: DcqcnParams::scaled(line_bps),
            ack_every: 8,
            window: 64,
            rto_ns: 300_000_000,
            ack_delay_ns: 1_000_000,
        }
    }
}

/// A send queue pair: `messages` WRITEs of the given sizes to `dst_ip`.
#[derive(Clone, Debug)]
pub struct SendJob {
    pub qp: u32,
    pub dst_ip: [u8; 4],
    pub udp_sport: u16,
    pub messages: Vec<u64>,
    /// Message `k` starts only after `k` messages arrived on this QP.
    pub gate_qp: Option<u32>,
}

/// A receive queue pair expecting `messages` messages.
#[derive(Clone, Debug)]
pub struct RecvJob {
    pub qp: u32,
    pub messages: u64,
}

/// Everything a host does in a scenario.
#[derive(Clone, Debug, Default)]
pub struct HostPlan {
    pub sends: Vec<SendJob>,
    pub recvs: Vec<RecvJob>,
}

impl HostPlan {
    pub fn send_bytes(&self) -> u64 {
        self.sends.iter().flat_map(|s| s.messages.iter()).sum()
    }
}

// ---------------------------------------------------------------------------
// Transport state machines (pure; unit-tested below)
// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// The host process
// ---------------------------------------------------------------------------

/// Shared by the hosts of a run and the runner: a common clock, a stop
/// flag, and per-host progress for the live display.
pub struct RunShared {
    pub t0: Instant,
    pub stop: AtomicBool,
    /// Acknowledged payload bytes per host.
    pub acked: Vec<AtomicU64>,
    /// Hosts whose plan is complete.
    pub done: AtomicU64,
    /// Every host opens its socket before any sends: a frame arriving at
    /// a host not yet listening would be lost.
    pub ready: std::sync::Barrier,
}

impl RunShared {
    pub fn new(hosts: usize) -> RunShared {
        RunShared {
            t0: Instant::now(),
            stop: AtomicBool::new(false),
            acked: (0..hosts).map(|_| AtomicU64::new(0)).collect(),
            done: AtomicU64::new(0),
            ready: std::sync::Barrier::new(hosts),
        }
    }
    pub fn now_ns(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }
}

/// What one host did.
#[derive(Clone, Debug, Default)]
pub struct HostReport {
    pub name: String,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    pub retransmitted_pkts: u64,
    pub naks_rx: u64,
    pub timeouts: u64,
    pub cnps_rx: u64,
    pub cnps_tx: u64,
    pub ce_rx: u64,
    pub rx_pkts: u64,
    /// In-order payload bytes received.
    pub rx_payload_bytes: u64,
    /// Payload bytes the host's send QPs had acknowledged.
    pub acked_payload_bytes: u64,
    /// PSN gaps its receive QPs saw: a frame lost, or overtaken by a
    /// later one (a flow moved to a shorter path, as flowlet balancing does).
    pub psn_gaps: u64,
    /// Data frames its receive QPs got again (PSN below the next
    /// expected): go-back-N resent what had arrived, so a gap before it was
    /// an overtaking, not a loss, or a timeout fired early.
    pub duplicates_rx: u64,
    /// Original data frames (not retransmissions) that arrived after a
    /// later PSN of their QP: reordering, not loss.
    pub late_rx: u64,
    pub pfc_rx: u64,
    /// Frames the host's own socket dropped (it fell behind): a loss the
    /// fabric did not cause.
    pub socket_drops: u64,
    pub paused_ns: u64,
    /// Pause intervals (ms since the run's start).
    pub pauses: Vec<(f64, f64)>,
    /// When its plan was complete (sends acknowledged, receives in), ms.
    pub finish_ms: Option<f64>,
    /// Time of the first CNP received, ms.
    pub first_cnp_ms: Option<f64>,
    /// Bytes it had sent when that CNP arrived.
    pub tx_bytes_at_first_cnp: Option<u64>,
    /// Times of the first CE-marked frame received and the first CNP sent,
    /// ms.
    pub first_ce_ms: Option<f64>,
    pub first_cnp_tx_ms: Option<f64>,
    /// (ms, sending rate Mb/s over the last 10 ms, DCQCN rate Mb/s of its
    /// slowest active QP).
    pub rate_series: Vec<(f64, f64, f64)>,
    /// The DCQCN rate of its slowest unfinished QP at the end, bit/s (the
    /// line rate when none is left).
    pub dcqcn_rate_bps: u64,
}

struct TxQp {
    job: SendJob,
    st: SendQp,
    highest: u32,
    rp: RpState,
    pacer: Pacer,
}

/// An ACK or NAK frame (BTH opcode 0x11 + AETH).
#[allow(clippy::too_many_arguments)]
pub fn ack_frame(
    l2: &L2,
    src: [u8; 4],
    dst: [u8; 4],
    sport: u16,
    qp: u32,
    psn: u32,
    syndrome: u8,
    msn: u32,
) -> Vec<u8> {
    let b = Bth::request(bth::OP_ACK, qp, psn & PSN_MASK);
    let m = msn.to_be_bytes();
    build::rocev2_frame(
        l2,
        &Ip::v4(src, dst).dscp(ROCE_DSCP),
        sport,
        &b,
        None,
        &[syndrome, m[1], m[2], m[3]],
    )
}

/// One data frame of a send QP.
/// Data frame `psn` of `job`; `retx`: sent before (go-back-N), its
/// payload [`RETX_FILL`] instead of [`ORIGINAL_FILL`].
pub fn data_frame(cfg: &HostCfg, job: &SendJob, st: &SendQp, psn: u32, retx: bool) -> Vec<u8> {
    let pos = st.pos(psn, &job.messages, cfg.nic.mtu_payload);
    let opcode = match (pos.first, pos.last) {
        (true, true) => bth::OP_WRITE_ONLY,
        (true, false) => bth::OP_WRITE_FIRST,
        (false, false) => bth::OP_WRITE_MIDDLE,
        (false, true) => bth::OP_WRITE_LAST,
    };
    let reth = pos.first.then(|| Reth {
        va: 0x7f00_0000_0000 + ((pos.msg as u64) << 32),
        rkey: 0x1000 + job.qp,
        len: job.messages[pos.msg] as u32,
    });
    let b = Bth {
        opcode,
        pkey: 0xffff,
        dest_qp: job.qp,
        psn: psn & PSN_MASK,
        ack_req: pos.last,
        ..Bth::default()
    };
    let ip = Ip::v4(cfg.nic.ip, job.dst_ip).dscp(ROCE_DSCP).ecn(2);
    build::rocev2_frame(
        &L2::new(cfg.nic.gw_mac, cfg.nic.mac),
        &ip,
        job.udp_sport,
        &b,
        reth,
        &vec![if retx { RETX_FILL } else { ORIGINAL_FILL }; pos.len],
    )
}

/// Runs `plan` on `cfg.ifname` in the calling thread's namespace until
/// `shared.stop`, answering its peers all along (a finished host still
/// ACKs retransmissions). `index` is its slot in `shared.acked`.
pub fn run_host(
    cfg: &HostCfg,
    plan: &HostPlan,
    shared: &RunShared,
    index: usize,
) -> Result<HostReport> {
    // SAFETY: prctl on the calling thread: fine-grained sleeps.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000u64) };
    let opened = open_nic_socket(&cfg.nic.ifname);
    // the others wait here too, also when this host failed (it then stops
    // the run)
    shared.ready.wait();
    let sock = opened?;
    if cfg.nic.line_bps == 0 {
        bail!("{}: line rate must be positive", cfg.nic.name);
    }
    let l2 = L2::new(cfg.nic.gw_mac, cfg.nic.mac);
    let p = &cfg.params;
    let mut tx: Vec<TxQp> = plan
        .sends
        .iter()
        .map(|j| TxQp {
            st: SendQp::new(&j.messages, cfg.nic.mtu_payload),
            job: j.clone(),
            highest: 0,
            rp: RpState::new(p),
            pacer: Pacer::NEW,
        })
        .collect();
    let tx_index: HashMap<u32, usize> = tx.iter().enumerate().map(|(i, q)| (q.job.qp, i)).collect();
    let mut rx: HashMap<u32, (RecvQp, NpState)> = plan
        .recvs
        .iter()
        .map(|r| (r.qp, (RecvQp::default(), NpState::new(p.cnp_interval_ns))))
        .collect();
    let expect: HashMap<u32, u64> = plan.recvs.iter().map(|r| (r.qp, r.messages)).collect();
    let mut rep = HostReport {
        name: cfg.nic.name.clone(),
        ..Default::default()
    };
    let mut line = Pacer::NEW;
    let mut was_paused = false;
    let mut gate = PauseGate::new(ROCE_TC, cfg.nic.line_bps / 1_000_000);
    let mut rr = 0usize;
    let mut buf = vec![0u8; 4096];
    let mut rx_link = LineRx::new(cfg.nic.line_bps);
    let mut next_sample = 0u64;
    let mut sampled_bytes = 0u64;
    let ms = |ns: u64| ns as f64 / 1e6;
    while !shared.stop.load(Ordering::Relaxed) {
        let now = shared.now_ns();
        // -- receive everything queued
        for _ in 0..256 {
            let Some(r) = sock.recv(&mut buf)? else { break };
            let f = &buf[..r.len];
            if let Some(m) = mac_ctl(f) {
                if cfg.honour_pfc {
                    gate.on_frame(&m, now);
                }
                continue;
            }
            rx_link.push(now, f);
        }
        while let Some(f) = rx_link.pop(now) {
            let Some(s) = parse(&f) else { continue };
            match s.op {
                bth::OP_CNP => {
                    rep.cnps_rx += 1;
                    rep.first_cnp_ms.get_or_insert(ms(now));
                    rep.tx_bytes_at_first_cnp.get_or_insert(rep.tx_bytes);
                    if let Some(&i) = tx_index.get(&s.qp) {
                        if cfg.dcqcn {
                            rp_on_cnp(&mut tx[i].rp, p, now);
                        }
                    }
                }
                bth::OP_ACK => {
                    if let Some(&i) = tx_index.get(&s.qp) {
                        let q = &mut tx[i];
                        if s.syndrome & 0x60 == AETH_NAK_SEQ {
                            rep.naks_rx += 1;
                            q.st.on_nak(s.psn, now);
                        } else if s.syndrome & 0xe0 == 0 {
                            q.st.on_ack(s.psn, now);
                        }
                    }
                }
                op if op <= bth::OP_WRITE_ONLY => {
                    let Some((rq, np)) = rx.get_mut(&s.qp) else {
                        continue;
                    };
                    rep.rx_pkts += 1;
                    let ce = s.ecn == 3;
                    if ce {
                        rep.ce_rx += 1;
                        rep.first_ce_ms.get_or_insert(ms(now));
                    }
                    if np_on_packet(np, now, ce) {
                        let cnp = build::cnp_frame(
                            &l2,
                            &Ip::v4(cfg.nic.ip, s.src).dscp(CNP_DSCP),
                            s.sport,
                            s.qp,
                        );
                        if sock.send(&cnp)? {
                            rep.cnps_tx += 1;
                            rep.first_cnp_tx_ms.get_or_insert(ms(now));
                        }
                    }
                    let last = op == bth::OP_WRITE_LAST
                        || op == bth::OP_WRITE_ONLY
                        || op == bth::OP_SEND_LAST
                        || op == bth::OP_SEND_ONLY;
                    rq.last_rx_ns = now;
                    rq.peer = Some((s.src, s.sport));
                    // an original arriving after a later PSN: overtaken
                    // (it fills the gap, or its retransmission did)
                    if !s.retx && (s.psn < rq.expected || (s.psn == rq.expected && rq.nak_pending))
                    {
                        rep.late_rx += 1;
                    }
                    let answer = match rq.on_data(s.psn, last, s.payload as u64, cfg.ack_every) {
                        RxAction::Accept { ack: Some(a) } | RxAction::Duplicate { ack: a } => {
                            Some((a, AETH_ACK))
                        }
                        RxAction::OutOfOrder { nak: Some(n) } => Some((n, AETH_NAK_SEQ)),
                        _ => None,
                    };
                    if let Some((psn, syn)) = answer {
                        let _ = sock.send(&ack_frame(
                            &l2,
                            cfg.nic.ip,
                            s.src,
                            s.sport,
                            s.qp,
                            psn,
                            syn,
                            rq.messages as u32,
                        ))?;
                    }
                }
                _ => {}
            }
        }
        let paused = gate.paused(now);
        if was_paused && !paused {
            // a paused line owes nothing: its schedule restarts when the
            // pause ended (XON or expiry), not when this thread noticed
            line.next_ns = line.next_ns.max(gate.until().min(now));
        }
        was_paused = paused;
        // -- timers
        for (qp, (rq, _)) in rx.iter_mut() {
            if let (Some(psn), Some((src, sport))) =
                (rq.delayed_ack(now, cfg.ack_delay_ns), rq.peer)
            {
                let _ = sock.send(&ack_frame(
                    &l2,
                    cfg.nic.ip,
                    src,
                    sport,
                    *qp,
                    psn,
                    AETH_ACK,
                    rq.messages as u32,
                ))?;
            }
        }
        let mut all_sent = true;
        for q in tx.iter_mut() {
            if cfg.dcqcn {
                rp_tick(&mut q.rp, p, now);
            }
            q.st.check_timeout(now, cfg.rto_ns);
            all_sent &= q.st.done();
        }
        let acked_bytes = tx
            .iter()
            .map(|q| acked_payload(&q.st, &q.job.messages, cfg.nic.mtu_payload))
            .sum::<u64>();
        shared.acked[index].store(acked_bytes, Ordering::Relaxed);
        let received_all = rx.iter().all(|(qp, (r, _))| r.messages >= expect[qp]);
        if rep.finish_ms.is_none() && all_sent && received_all {
            rep.finish_ms = Some(ms(now));
            shared.done.fetch_add(1, Ordering::SeqCst);
        }
        if now >= next_sample {
            let dt = 10_000_000u64;
            if next_sample > 0 {
                let mbps = (rep.tx_bytes - sampled_bytes) as f64 * 8.0 / (dt as f64 / 1e9) / 1e6;
                let dcqcn = tx
                    .iter()
                    .filter(|q| !q.st.done())
                    .map(|q| rp_rate(&q.rp))
                    .min()
                    .unwrap_or(cfg.nic.line_bps) as f64
                    / 1e6;
                rep.rate_series.push((ms(now), mbps, dcqcn));
            }
            sampled_bytes = rep.tx_bytes;
            next_sample = now + dt;
        }
        // -- send one data frame when the line, the QP and the pause allow
        let mut wait_ns = 1_000_000u64.min(next_sample.saturating_sub(now).max(1));
        if let Some(t) = rx_link.next_due() {
            wait_ns = wait_ns.min(t.saturating_sub(now).max(1));
        }
        if paused {
            wait_ns = wait_ns.min(gate.until() - now);
        } else {
            let n = tx.len();
            let mut qp_wait = u64::MAX;
            let line_wait = line_turn(&mut line, cfg.nic.line_bps, now, || {
                for k in 0..n {
                    let i = (rr + k) % n.max(1);
                    let gate = tx[i]
                        .job
                        .gate_qp
                        .map(|g| rx.get(&g).map(|(r, _)| r.messages).unwrap_or(0));
                    if !tx[i].st.can_send(cfg.window, gate) {
                        // nothing to send: no catch-up time either
                        tx[i].pacer.next_ns = tx[i].pacer.next_ns.max(now);
                        continue;
                    }
                    if !tx[i].pacer.ready(now) {
                        qp_wait = qp_wait.min(tx[i].pacer.next_ns - now);
                        continue;
                    }
                    let q = &mut tx[i];
                    let frame = data_frame(cfg, &q.job, &q.st, q.st.next, q.st.next < q.highest);
                    if !sock.send(&frame)? {
                        return Ok(None); // no room in the kernel: try again shortly
                    }
                    let len = frame.len() as u64;
                    q.st.on_sent(now, &mut q.highest);
                    if cfg.dcqcn {
                        rp_on_sent(&mut q.rp, p, now, len);
                        q.pacer
                            .on_send(catch_up(&q.pacer, now), rp_rate(&q.rp), len);
                    }
                    rep.tx_pkts += 1;
                    rep.tx_bytes += len;
                    rr = i + 1;
                    return Ok(Some(len));
                }
                Ok(None)
            })?;
            wait_ns = wait_ns.min(line_wait).min(qp_wait);
        }
        if wait_ns > 0 {
            sock.wait(Duration::from_nanos(wait_ns));
        }
    }
    gate.finish(shared.now_ns());
    rep.pfc_rx = gate.xoff_rx + gate.xon_rx;
    rep.paused_ns = gate.paused_ns;
    rep.pauses = gate
        .intervals
        .iter()
        .map(|&(a, b)| (ms(a), ms(b)))
        .collect();
    rep.socket_drops = u64::from(sock.stats().1);
    rep.dcqcn_rate_bps = tx
        .iter()
        .filter(|q| !q.st.done())
        .map(|q| rp_rate(&q.rp))
        .min()
        .unwrap_or(cfg.nic.line_bps);
    for q in &tx {
        rep.retransmitted_pkts += q.st.retransmitted;
        rep.timeouts += q.st.timeouts;
        rep.acked_payload_bytes += acked_payload(&q.st, &q.job.messages, cfg.nic.mtu_payload);
    }
    for (r, _) in rx.values() {
        rep.rx_payload_bytes += r.bytes;
        rep.psn_gaps += r.gaps;
        rep.duplicates_rx += r.duplicates;
    }
    Ok(rep)
}

/// How far behind its schedule a sender may catch up (2 ms: 4.6 full
/// frames at 20 Mb/s). The host threads sleep until their next frame is
/// due and the scheduler wakes them late (0.5 ms per frame and more on a
/// busy 2-core machine, with the fabric's controllers and the other hosts
/// runnable); a NIC's line does not stall meanwhile. So a late thread sends
/// the frames it owed back to back, from when they were due, while it was
/// busy; a sender that was idle, paused or window-limited owes nothing (its
/// pacer is moved up to the present). Without it a sender at 20 Mb/s
/// reached 8.6 Mb/s on a loaded machine.
pub const CATCH_UP_NS: u64 = 2_000_000;

/// The time to pace a frame sent at `now` from: when it was due if that is
/// at most [`CATCH_UP_NS`] ago, else `now - CATCH_UP_NS`.
pub fn catch_up(p: &Pacer, now: u64) -> u64 {
    now.min(p.next_ns.max(now.saturating_sub(CATCH_UP_NS)))
}

/// One turn of a host's transmit line at `now`: when `line` is free,
/// `send_one` may put one frame on the wire (its length; `None` when
/// nothing was ready or the kernel had no room), paced at `bps` with
/// [`catch_up`]; an idle line owes no catch-up time (its schedule moves up
/// to `now`). Returns how long the host may sleep as far as the line is
/// concerned: 0 after a frame, the time to the line's next slot when it
/// is busy, `u64::MAX` when it idles.
pub(crate) fn line_turn(
    line: &mut Pacer,
    bps: u64,
    now: u64,
    send_one: impl FnOnce() -> Result<Option<u64>>,
) -> Result<u64> {
    if !line.ready(now) {
        return Ok(line.next_ns - now);
    }
    match send_one()? {
        Some(len) => {
            line.on_send(catch_up(line, now), bps, len);
            Ok(0)
        }
        None => {
            line.next_ns = line.next_ns.max(now);
            Ok(u64::MAX)
        }
    }
}

/// Payload bytes of the packets before `una`.
fn acked_payload(st: &SendQp, messages: &[u64], mtu: usize) -> u64 {
    let una = st.una.min(st.total);
    if una == 0 {
        return 0;
    }
    let msg = st.starts.partition_point(|&s| s <= una) - 1;
    let whole: u64 = messages[..msg.min(messages.len())].iter().sum();
    let part = if msg < messages.len() {
        (u64::from(una - st.starts[msg]) * mtu as u64).min(messages[msg])
    } else {
        0
    };
    whole + part
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_positions_follow_the_messages() {
        let msgs = [2500u64, 100, 2048];
        let q = SendQp::new(&msgs, 1024);
        assert_eq!(q.starts, vec![0, 3, 4, 6]);
        assert_eq!(
            q.pos(0, &msgs, 1024),
            PktPos {
                msg: 0,
                first: true,
                last: false,
                len: 1024
            }
        );
        assert_eq!(
            q.pos(2, &msgs, 1024),
            PktPos {
                msg: 0,
                first: false,
                last: true,
                len: 452
            }
        );
        assert_eq!(
            q.pos(3, &msgs, 1024),
            PktPos {
                msg: 1,
                first: true,
                last: true,
                len: 100
            }
        );
        assert_eq!(
            q.pos(5, &msgs, 1024),
            PktPos {
                msg: 2,
                first: false,
                last: true,
                len: 1024
            }
        );
    }

    #[test]
    fn go_back_n_on_nak_and_timeout() {
        let msgs = [10 * 1024u64];
        let mut q = SendQp::new(&msgs, 1024);
        let mut hi = 0;
        for t in 0..6 {
            assert!(q.can_send(64, None));
            q.on_sent(t, &mut hi);
        }
        q.on_ack(1, 10);
        assert_eq!(q.una, 2);
        // the receiver lost PSN 2: NAK 2 rewinds
        q.on_nak(2, 11);
        assert_eq!((q.next, q.una, q.naks), (2, 2, 1));
        q.on_sent(12, &mut hi);
        assert_eq!(q.retransmitted, 1);
        // window
        assert!(!q.can_send(1, None));
        // a timeout rewinds to una
        q.next = 5;
        assert!(!q.check_timeout(20, 100));
        assert!(q.check_timeout(200, 100));
        assert_eq!(q.next, 2);
        q.on_ack(9, 300);
        assert!(q.done());
        assert_eq!(acked_payload(&q, &msgs, 1024), 10 * 1024);
    }

    #[test]
    fn a_late_sender_catches_up_a_bounded_lag() {
        // 20 Mb/s, 1086-byte frames: one due every 434.4 us
        let mut line = Pacer::NEW;
        let mut t = 0;
        line.on_send(catch_up(&line, t), 20_000_000, 1086);
        // woken 600 us late: paced from when the frame was due
        t = line.next_ns + 600_000;
        assert_eq!(catch_up(&line, t), line.next_ns);
        let due = line.next_ns;
        line.on_send(catch_up(&line, t), 20_000_000, 1086);
        assert_eq!(line.next_ns, due + 434_400, "no time lost");
        assert!(line.ready(t), "the next owed frame may leave at once");
        // idle for 10 ms: at most CATCH_UP_NS is owed
        t = line.next_ns + 10_000_000;
        assert_eq!(catch_up(&line, t), t - CATCH_UP_NS);
        // on time or early: now
        let early = line.next_ns.saturating_sub(5);
        assert_eq!(catch_up(&line, early), early);
    }

    #[test]
    fn gate_holds_later_messages() {
        let msgs = [1024u64, 1024, 1024];
        let mut q = SendQp::new(&msgs, 1024);
        let mut hi = 0;
        assert!(q.can_send(64, Some(0)));
        q.on_sent(0, &mut hi);
        assert!(!q.can_send(64, Some(0)), "message 1 waits for one arrival");
        assert!(q.can_send(64, Some(1)));
    }

    #[test]
    fn receiver_acks_naks_once_per_gap_and_counts() {
        let mut r = RecvQp::default();
        assert_eq!(r.on_data(0, false, 1024, 2), RxAction::Accept { ack: None });
        assert_eq!(
            r.on_data(1, false, 1024, 2),
            RxAction::Accept { ack: Some(1) }
        );
        assert_eq!(
            r.on_data(3, false, 1024, 2),
            RxAction::OutOfOrder { nak: Some(2) }
        );
        assert_eq!(
            r.on_data(4, true, 1024, 2),
            RxAction::OutOfOrder { nak: None }
        );
        assert_eq!(r.on_data(1, false, 1024, 2), RxAction::Duplicate { ack: 1 });
        assert_eq!(r.on_data(2, false, 1024, 2), RxAction::Accept { ack: None });
        assert_eq!(
            r.on_data(3, false, 1024, 2),
            RxAction::Accept { ack: Some(3) }
        );
        assert_eq!(
            r.on_data(4, true, 1024, 2),
            RxAction::Accept { ack: Some(4) }
        );
        assert_eq!((r.gaps, r.messages, r.bytes), (1, 1, 5 * 1024));
    }

    #[test]
    fn frames_parse_back() {
        let cfg = HostCfg::new(
            "h0",
            [2, 0, 3, 0, 0, 1],
            [2, 0, 1, 0, 0, 1],
            [198, 18, 1, 1],
            20_000_000,
        );
        let job = SendJob {
            qp: 0x101,
            dst_ip: [198, 18, 2, 1],
            udp_sport: 50000,
            messages: vec![3000],
            gate_qp: None,
        };
        let st = SendQp::new(&job.messages, 1024);
        let f = data_frame(&cfg, &job, &st, 0, false);
        let s = parse(&f).unwrap();
        assert_eq!(
            (s.op, s.qp, s.psn, s.ecn, s.payload, s.retx),
            (bth::OP_WRITE_FIRST, 0x101, 0, 2, 1024, false)
        );
        let f = data_frame(&cfg, &job, &st, 2, true);
        let s = parse(&f).unwrap();
        assert_eq!(
            (s.op, s.psn, s.payload, s.retx),
            (bth::OP_WRITE_LAST, 2, 3000 - 2048, true)
        );
        let a = ack_frame(
            &L2::new(cfg.nic.gw_mac, cfg.nic.mac),
            cfg.nic.ip,
            job.dst_ip,
            50000,
            0x101,
            7,
            AETH_NAK_SEQ,
            0,
        );
        let s = parse(&a).unwrap();
        assert_eq!(
            (s.op, s.psn, s.syndrome, s.payload),
            (bth::OP_ACK, 7, AETH_NAK_SEQ, 0)
        );
    }
}
