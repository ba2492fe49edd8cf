//! The UET-like host: [`super::uet`]'s sender and receiver on a raw
//! socket, one thread per host in its namespace (as [`super::rc`] runs
//! RoCEv2). Data leaves paced at the host's line rate with at most
//! [`UetHostCfg::window`] packets in flight per PDC; received frames are
//! handed over at the line rate (the host's link, as in `rc`); every data
//! packet is answered at once (ACK, or NACK when trimmed).

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::{bail, Result};
use dataplane_common::build::L2;
use dataplane_common::dcqcn::Pacer;
use dataplane_common::wire::uet::NACK_TRIMMED;

use super::frames::{open_nic_socket, LineRx, NicCfg};
use super::rc::{line_turn, RunShared};
use super::uet::{arrival, data_frame, feedback_frame, read, Path, Seen, UetRx, UetTx};

/// How one UET host behaves.
#[derive(Clone, Debug)]
pub struct UetHostCfg {
    pub nic: NicCfg,
    /// Packets a PDC may have in flight.
    pub window: u32,
    /// Retransmission timeout of a packet not acknowledged (no NACK).
    pub rto_ns: u64,
    /// The fabric's trim DSCP (`[switch_trimming] dscp_value`).
    pub trim_dscp: u8,
}

impl UetHostCfg {
    /// Fabric host `h`: 1 KB packets, window 16, RTO 100 ms, trim DSCP
    /// `trim_dscp`.
    pub fn of(h: &crate::topo::HostNode, trim_dscp: u8) -> UetHostCfg {
        UetHostCfg {
            nic: NicCfg::of(h),
            window: 16,
            rto_ns: 100_000_000,
            trim_dscp,
        }
    }
}

/// A sending PDC: `messages` (bytes each) to `dst_ip`.
#[derive(Clone, Debug)]
pub struct UetSendJob {
    pub pdc: u16,
    pub dst_ip: [u8; 4],
    pub messages: Vec<u64>,
}

/// A receiving PDC expecting `messages` messages.
#[derive(Clone, Debug)]
pub struct UetRecvJob {
    pub pdc: u16,
    pub messages: u64,
}

#[derive(Clone, Debug, Default)]
pub struct UetPlan {
    pub sends: Vec<UetSendJob>,
    pub recvs: Vec<UetRecvJob>,
}

/// What one UET host did.
#[derive(Clone, Debug, Default)]
pub struct UetReport {
    pub name: String,
    pub tx_pkts: u64,
    pub tx_bytes: u64,
    /// Retransmissions (after a NACK or a timeout).
    pub retransmitted: u64,
    pub nacks_rx: u64,
    pub acks_rx: u64,
    /// Packets resent for a timeout.
    pub timeouts: u64,
    /// Data packets received (whole, trimmed or cut).
    pub rx_data: u64,
    /// Trimmed packets received, NACKs sent for them.
    pub trimmed_rx: u64,
    pub nacks_tx: u64,
    /// Cut without the trim DSCP (none expected).
    pub cut_rx: u64,
    pub duplicates_rx: u64,
    /// Messages completely received.
    pub messages_rx: u64,
    /// Completion time of each message sent (first packet out to last
    /// ACK), ms.
    pub mct_ms: Vec<f64>,
    /// When its plan was complete, ms since the run's start.
    pub finish_ms: Option<f64>,
    /// Frames its socket dropped (it fell behind).
    pub socket_drops: u64,
}

struct TxPdc {
    job: UetSendJob,
    st: UetTx,
    path: Path,
}

/// Runs `plan` on `cfg.ifname` in the calling thread's namespace until
/// `shared.stop` (a finished host still answers its peers).
pub fn run_uet_host(
    cfg: &UetHostCfg,
    plan: &UetPlan,
    shared: &RunShared,
    index: usize,
) -> Result<UetReport> {
    // SAFETY: prctl on the calling thread: fine-grained sleeps.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000u64) };
    let opened = open_nic_socket(&cfg.nic.ifname);
    // a UDP socket on 4793 so the host's kernel does not answer every
    // UET packet with an ICMP port unreachable (which would queue behind
    // the incast); what it receives is never read
    let quiet = std::net::UdpSocket::bind(("0.0.0.0", dataplane_common::wire::uet::UET_PORT));
    shared.ready.wait();
    let sock = opened?;
    let _quiet = quiet?;
    if cfg.nic.line_bps == 0 || cfg.window == 0 {
        bail!("{}: line rate and window must be positive", cfg.nic.name);
    }
    let l2 = L2::new(cfg.nic.gw_mac, cfg.nic.mac);
    let mut tx: Vec<TxPdc> = plan
        .sends
        .iter()
        .map(|j| TxPdc {
            st: UetTx::new(&j.messages, cfg.nic.mtu_payload),
            path: Path {
                l2: l2.clone(),
                src: cfg.nic.ip,
                dst: j.dst_ip,
                pdc: j.pdc,
            },
            job: j.clone(),
        })
        .collect();
    let by_pdc: HashMap<u16, usize> = tx.iter().enumerate().map(|(i, q)| (q.job.pdc, i)).collect();
    let mut rx: HashMap<u16, UetRx> = plan
        .recvs
        .iter()
        .map(|r| (r.pdc, UetRx::default()))
        .collect();
    let expect: HashMap<u16, u64> = plan.recvs.iter().map(|r| (r.pdc, r.messages)).collect();
    let mut rep = UetReport {
        name: cfg.nic.name.clone(),
        ..Default::default()
    };
    let mut line = Pacer::NEW;
    let mut link = LineRx::new(cfg.nic.line_bps);
    let mut buf = vec![0u8; 4096];
    let mut rr = 0usize;
    while !shared.stop.load(Ordering::Relaxed) {
        let now = shared.now_ns();
        for _ in 0..256 {
            let Some(r) = sock.recv(&mut buf)? else { break };
            link.push(now, &buf[..r.len]);
        }
        while let Some(f) = link.pop(now) {
            let Some((seen, pdc, src, sport)) = read(&f) else {
                continue;
            };
            match seen {
                Seen::Data {
                    psn,
                    ses,
                    carried,
                    dscp,
                    ..
                } => {
                    let Some(r) = rx.get_mut(&pdc) else { continue };
                    rep.rx_data += 1;
                    let a = arrival(dscp, cfg.trim_dscp, carried, usize::from(ses.len));
                    let reply = r.on_data(psn, &ses, a);
                    let back = Path {
                        l2: l2.clone(),
                        src: cfg.nic.ip,
                        dst: src,
                        pdc,
                    };
                    if let Some(fb) = feedback_frame(&back, sport, reply) {
                        let _ = sock.send(&fb)?;
                    }
                }
                Seen::Ack { cack_psn, offset } => {
                    if let Some(&i) = by_pdc.get(&pdc) {
                        rep.acks_rx += 1;
                        tx[i].st.on_ack(cack_psn, offset, now);
                    }
                }
                Seen::Nack { code, psn } => {
                    if let Some(&i) = by_pdc.get(&pdc) {
                        rep.nacks_rx += 1;
                        if code == NACK_TRIMMED {
                            tx[i].st.on_nack(psn);
                        }
                    }
                }
            }
        }
        let mut all_sent = true;
        for q in tx.iter_mut() {
            q.st.check_timeouts(now, cfg.rto_ns);
            all_sent &= q.st.done();
        }
        let acked: u64 = tx.iter().map(|q| q.st.acked_bytes()).sum();
        shared.acked[index].store(acked, Ordering::Relaxed);
        let received_all = rx.iter().all(|(pdc, r)| r.messages >= expect[pdc]);
        if rep.finish_ms.is_none() && all_sent && received_all {
            rep.finish_ms = Some(now as f64 / 1e6);
            shared.done.fetch_add(1, Ordering::SeqCst);
        }
        // one data frame when the line allows, PDCs in turn
        let mut wait_ns = 1_000_000u64;
        if let Some(t) = link.next_due() {
            wait_ns = wait_ns.min(t.saturating_sub(now).max(1));
        }
        let n = tx.len();
        let line_wait = line_turn(&mut line, cfg.nic.line_bps, now, || {
            for k in 0..n {
                let i = (rr + k) % n;
                let q = &mut tx[i];
                let Some((psn, attempt)) = q.st.next(cfg.window) else {
                    continue;
                };
                let frame = data_frame(&q.path, psn, attempt, &q.st.ses(psn));
                if !sock.send(&frame)? {
                    return Ok(None);
                }
                q.st.on_sent(psn, now);
                let len = frame.len() as u64;
                rep.tx_pkts += 1;
                rep.tx_bytes += len;
                rr = i + 1;
                return Ok(Some(len));
            }
            Ok(None)
        })?;
        wait_ns = wait_ns.min(line_wait);
        if wait_ns > 0 {
            sock.wait(Duration::from_nanos(wait_ns));
        }
    }
    rep.socket_drops = u64::from(sock.stats().1);
    for q in &tx {
        rep.retransmitted += q.st.retransmitted;
        rep.timeouts += q.st.timeouts;
        rep.mct_ms
            .extend(q.st.completion_ns().iter().map(|&n| n as f64 / 1e6));
    }
    for r in rx.values() {
        rep.trimmed_rx += r.trimmed;
        rep.nacks_tx += r.nacks;
        rep.cut_rx += r.cut;
        rep.duplicates_rx += r.duplicates;
        rep.messages_rx += r.messages;
    }
    Ok(rep)
}
