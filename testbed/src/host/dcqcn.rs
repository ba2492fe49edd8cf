//! DCQCN end to end with the common crate's algorithms: a reaction-point
//! sender that slows down on CNPs, and a notification-point receiver that
//! sends them for CE-marked frames.

use super::paced::SenderSpec;
use crate::raw::RawSocket;
use anyhow::Result;
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::wire::bth::{self, Bth};
use std::time::{Duration, Instant};

/// What a DCQCN sender saw.
#[derive(Clone, Debug, Default)]
pub struct DcqcnSenderReport {
    pub sent_pkts: u64,
    pub sent_bytes: u64,
    /// CNPs received for its QP.
    pub cnps: u64,
    /// Time of the first CNP after the start, ms.
    pub first_cnp_ms: Option<f64>,
    /// Average send rate before the first CNP and after it, Mb/s.
    pub rate_before_mbps: f64,
    pub rate_after_mbps: f64,
    /// The reaction point's rate at the end, bit/s.
    pub final_rate_bps: u64,
}

/// Sends RDMA WRITE middles of `spec` for `duration`, paced at the rate the
/// DCQCN reaction point allows (starting at line rate), cutting on CNPs for
/// its QP (`spec.dest_qp`: the emulator names a flow by the QP it writes to,
/// and the receiver's CNP carries it back).
pub fn run_dcqcn_sender(
    spec: &SenderSpec,
    params: &dataplane_common::dcqcn::DcqcnParams,
    duration: Duration,
) -> Result<DcqcnSenderReport> {
    use dataplane_common::dcqcn::{rp_on_cnp, rp_on_sent, rp_rate, rp_tick, Pacer, RpState};
    let sock = RawSocket::open(&spec.ifname, libc::ETH_P_ALL as u16, true)?;
    let l2 = L2::new(spec.dst_mac, spec.src_mac);
    let ip = Ip::v4(spec.src_ip, spec.dst_ip)
        .dscp(spec.dscp)
        .ecn(spec.ecn);
    let frame = build::rocev2_frame(
        &l2,
        &ip,
        spec.udp_sport,
        &Bth {
            opcode: bth::OP_WRITE_MIDDLE,
            pkey: 0xffff,
            dest_qp: spec.dest_qp,
            ..Bth::default()
        },
        None,
        &vec![0u8; spec.payload],
    );
    let mut rp = RpState::new(params);
    let mut pacer = Pacer::NEW;
    let mut rep = DcqcnSenderReport::default();
    let mut buf = vec![0u8; 2048];
    let t0 = Instant::now();
    let (mut bytes_before, mut bytes_after) = (0u64, 0u64);
    loop {
        let now = t0.elapsed().as_nanos() as u64;
        if t0.elapsed() >= duration {
            break;
        }
        rp_tick(&mut rp, params, now);
        while let Some(rx) = sock.recv(&mut buf)? {
            if rx.pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            if let Some(crate::host::frames::Seen { op, qp, .. }) =
                crate::host::frames::parse(&buf[..rx.len])
            {
                if op == bth::OP_CNP && qp == spec.dest_qp {
                    rep.cnps += 1;
                    rep.first_cnp_ms.get_or_insert(now as f64 / 1e6);
                    rp_on_cnp(&mut rp, params, now);
                }
            }
        }
        if pacer.ready(now) {
            if sock.send(&frame)? {
                rep.sent_pkts += 1;
                rep.sent_bytes += frame.len() as u64;
                if rep.first_cnp_ms.is_some() {
                    bytes_after += frame.len() as u64;
                } else {
                    bytes_before += frame.len() as u64;
                }
                rp_on_sent(&mut rp, params, now, frame.len() as u64);
            }
            pacer.on_send(now, rp_rate(&rp), frame.len() as u64);
        } else {
            let wait = pacer.next_ns.saturating_sub(now).min(200_000);
            sock.wait(Duration::from_nanos(wait));
        }
    }
    let total_ms = duration.as_secs_f64() * 1e3;
    let first = rep.first_cnp_ms.unwrap_or(total_ms);
    rep.rate_before_mbps = bytes_before as f64 * 8.0 / (first * 1e3).max(1e-9);
    rep.rate_after_mbps = bytes_after as f64 * 8.0 / ((total_ms - first) * 1e3).max(1e-9);
    rep.final_rate_bps = rp_rate(&rp);
    Ok(rep)
}

/// What a DCQCN receiver saw.
#[derive(Clone, Debug, Default)]
pub struct NpReport {
    pub rx_pkts: u64,
    pub ce_pkts: u64,
    pub cnps_sent: u64,
    /// Times (ms since start) of the first CE frame and the first CNP.
    pub first_ce_ms: Option<f64>,
    pub first_cnp_ms: Option<f64>,
}

/// Receives RoCEv2 on `ifname` for `duration` and, as the notification
/// point, answers CE-marked frames with CNPs (BTH opcode 0x81, BECN, the
/// flow's QP, DSCP `cnp_dscp`) to their source through `gw_mac`, at most one
/// per QP per `interval_ns`.
pub fn run_np_receiver(
    ifname: &str,
    my_mac: [u8; 6],
    gw_mac: [u8; 6],
    my_ip: [u8; 4],
    cnp_dscp: u8,
    interval_ns: u64,
    duration: Duration,
) -> Result<NpReport> {
    use dataplane_common::dcqcn::{np_on_packet, NpState};
    let sock = RawSocket::open(ifname, libc::ETH_P_ALL as u16, true)?;
    let mut states: std::collections::HashMap<u32, NpState> = std::collections::HashMap::new();
    let mut rep = NpReport::default();
    let mut buf = vec![0u8; 4096];
    let t0 = Instant::now();
    while t0.elapsed() < duration {
        let Some(rx) = sock.recv(&mut buf)? else {
            sock.wait(Duration::from_millis(10));
            continue;
        };
        if rx.pkttype == libc::PACKET_OUTGOING {
            continue;
        }
        let Some(crate::host::frames::Seen {
            ecn, op, qp, src, ..
        }) = crate::host::frames::parse(&buf[..rx.len])
        else {
            continue;
        };
        if op == bth::OP_CNP {
            continue;
        }
        let now = t0.elapsed().as_nanos() as u64;
        rep.rx_pkts += 1;
        let ce = ecn == 3;
        if ce {
            rep.ce_pkts += 1;
            rep.first_ce_ms.get_or_insert(now as f64 / 1e6);
        }
        let st = states.entry(qp).or_insert(NpState::new(interval_ns));
        if np_on_packet(st, now, ce) {
            let cnp = build::cnp_frame(
                &L2::new(gw_mac, my_mac),
                &Ip::v4(my_ip, src).dscp(cnp_dscp),
                49152,
                qp,
            );
            if sock.send(&cnp)? {
                rep.cnps_sent += 1;
                rep.first_cnp_ms.get_or_insert(now as f64 / 1e6);
            }
        }
    }
    Ok(rep)
}
