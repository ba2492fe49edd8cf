//! A minimal RoCEv2 host for namespace tests: a paced sender of RDMA WRITEs
//! that honours PFC the way a NIC does, a counting receiver, and a PFC storm
//! source (a stuck NIC that never stops pausing).
//!
//! Everything works in the calling thread's network namespace (enter one
//! with [`crate::netns::Netns::enter`] on a thread of your own) with raw
//! AF_PACKET sockets, so no host address or route is needed: the addresses
//! live in the frames only.
//!
//! # The sender
//!
//! [`run_sender`] sends pre-built WRITE messages (first with RETH, middles,
//! last; ECT(0), the DSCP the spec gives) out of one interface, paced at the
//! interface's line rate (`rate_mbps`, frame bytes as the data plane's
//! buffer model counts them: no preamble or FCS). Like a NIC it never sends
//! faster than its line rate: when the thread was held up it catches up by
//! at most [`CATCH_UP_FRAMES`] frames, and no credit builds up while paused.
//!
//! With `honour_pfc` it also reads the interface's MAC control frames
//! (EtherType 0x8808) and stops sending its priority for the pause time
//! (`quanta x 512` bit times at `rate_mbps`, reloaded by each new frame,
//! 802.1Qbb) or until a time of 0 (XON); a legacy PAUSE stops it as well.
//! It checks for pause frames before every frame it sends, so the frames it
//! sends after an XOFF reached its socket are only those of the check-to-send
//! window; [`SenderReport::late_frames`] counts them from the kernel's
//! receive time stamp of the XOFF. PSNs repeat per message (the switch does
//! not look at them); the ICRC of every frame is valid.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use dataplane_common::build::{self, Ip, Reth, L2};
use dataplane_common::wire::bth::{self, Bth};

use super::frames::{mac_ctl, realtime_ns, ETH_P_MAC_CONTROL};
use super::pause::{Heard, PauseGate};
use crate::raw::{RawSocket, Rx};

/// Most frames a held-up sender sends back to back to catch up.
pub const CATCH_UP_FRAMES: u64 = 2;

/// What to send and how.
#[derive(Clone, Debug)]
pub struct SenderSpec {
    /// Interface to send on (in the calling thread's namespace).
    pub ifname: String,
    pub src_mac: [u8; 6],
    /// The next hop: the switch port's MAC.
    pub dst_mac: [u8; 6],
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub dscp: u8,
    /// ECN codepoint of every frame (2 = ECT(0)).
    pub ecn: u8,
    /// The priority of this traffic (the one PFC must pause).
    pub prio: u8,
    /// Line rate of the host link, Mb/s.
    pub rate_mbps: u32,
    /// RDMA payload bytes per packet (the path MTU of the QP).
    pub payload: usize,
    /// Packets per WRITE message.
    pub message_pkts: usize,
    pub dest_qp: u32,
    pub udp_sport: u16,
    /// Read MAC control frames and stop for the pause time.
    pub honour_pfc: bool,
}

impl SenderSpec {
    /// The frames of one WRITE message (first with RETH, middles, last).
    pub fn message(&self) -> Vec<Vec<u8>> {
        let l2 = L2::new(self.dst_mac, self.src_mac);
        let ip = Ip::v4(self.src_ip, self.dst_ip)
            .dscp(self.dscp)
            .ecn(self.ecn);
        let n = self.message_pkts.max(2);
        let payload = vec![0x5a; self.payload];
        let reth = Reth {
            va: 0x7f00_0000_0000,
            rkey: 0x2a,
            len: (n * self.payload) as u32,
        };
        (0..n)
            .map(|i| {
                let opcode = match i {
                    0 => bth::OP_WRITE_FIRST,
                    i if i == n - 1 => bth::OP_WRITE_LAST,
                    _ => bth::OP_WRITE_MIDDLE,
                };
                let b = Bth {
                    opcode,
                    pkey: 0xffff,
                    dest_qp: self.dest_qp,
                    psn: i as u32,
                    ack_req: i == n - 1,
                    ..Bth::default()
                };
                build::rocev2_frame(
                    &l2,
                    &ip,
                    self.udp_sport,
                    &b,
                    (i == 0).then_some(reth),
                    &payload,
                )
            })
            .collect()
    }
}

/// What a sender did.
#[derive(Clone, Debug, Default)]
pub struct SenderReport {
    pub frames: u64,
    pub bytes: u64,
    /// Send calls the kernel refused (ENOBUFS / EAGAIN); retried, not counted
    /// in `frames`.
    pub send_errors: u64,
    /// PFC / PAUSE frames that paused our priority (nonzero time).
    pub xoff_rx: u64,
    /// PFC frames that resumed it (time 0).
    pub xon_rx: u64,
    /// MAC control frames that did not concern our priority.
    pub other_mac_ctl_rx: u64,
    /// Transitions from sending to paused.
    pub pause_episodes: u64,
    /// Time spent paused.
    pub paused: Duration,
    /// Longest single pause.
    pub longest_pause: Duration,
    /// Frames sent after an XOFF had reached our socket (kernel time stamp)
    /// and before we read it, summed over every XOFF, and the most for one.
    pub late_frames: u64,
    pub max_late_frames: u64,
    /// Longest time from the kernel receiving an XOFF to us reading it.
    pub max_reaction: Duration,
    /// Kernel receive time (CLOCK_REALTIME, ns) of every XOFF, in order.
    pub xoff_rx_ns: Vec<u64>,
    /// How long the sender ran.
    pub elapsed: Duration,
}

impl SenderReport {
    /// Average sending rate over the run, Mb/s.
    pub fn rate_mbps(&self) -> f64 {
        let s = self.elapsed.as_secs_f64();
        if s == 0.0 {
            0.0
        } else {
            self.bytes as f64 * 8.0 / s / 1e6
        }
    }
}

/// Sends until `deadline` or `stop`, honouring PFC when the spec says so.
/// Runs in the calling thread's namespace.
pub fn run_sender(spec: &SenderSpec, deadline: Instant, stop: &AtomicBool) -> Result<SenderReport> {
    if spec.rate_mbps == 0 {
        bail!("rate_mbps must be positive");
    }
    let frames = spec.message();
    let tx = RawSocket::open(&spec.ifname, 0, false)?;
    let ctl = if spec.honour_pfc {
        let s = RawSocket::open(&spec.ifname, ETH_P_MAC_CONTROL, true)?;
        s.setsockopt_int(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        // drop what queued before we were ready (nothing should have)
        let mut b = [0u8; 128];
        while s.recv(&mut b)?.is_some() {}
        Some(s)
    } else {
        None
    };
    // wake-ups to the microsecond: the pacing gap is ~90 us at 100 Mb/s
    // SAFETY: prctl on this thread.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
    let rate = u64::from(spec.rate_mbps);
    // bits / (Mb/s) = us: ns per frame = bytes * 8000 / rate
    let frame_time = |len: usize| Duration::from_nanos(len as u64 * 8_000 / rate);
    let mut r = SenderReport::default();
    let start = Instant::now();
    let mut next = start;
    let mut k = 0usize;
    // the gate's clock: ns since `start`
    let ns = |t: Instant| (t - start).as_nanos() as u64;
    let at = |ns: u64| start + Duration::from_nanos(ns);
    let mut gate = PauseGate::new(spec.prio, rate);
    // send time stamps (CLOCK_REALTIME) of the last frames, for late_frames
    let mut recent = [0u64; 64];
    let mut recent_i = 0usize;
    let mut buf = [0u8; 256];
    loop {
        let now = Instant::now();
        if now >= deadline || stop.load(Ordering::Relaxed) {
            gate.finish(ns(now));
            break;
        }
        if let Some(ctl) = &ctl {
            while let Some(Rx { len, ts, .. }) = ctl.recv(&mut buf)? {
                let Some(m) = mac_ctl(&buf[..len]) else {
                    continue;
                };
                if gate.on_frame(&m, ns(Instant::now())) != Heard::Xoff {
                    continue;
                }
                r.xoff_rx_ns.push(ts.unwrap_or_else(realtime_ns));
                if let Some(ts) = ts {
                    let late = recent.iter().filter(|&&s| s > ts).count() as u64;
                    r.late_frames += late;
                    r.max_late_frames = r.max_late_frames.max(late);
                    r.max_reaction = r
                        .max_reaction
                        .max(Duration::from_nanos(realtime_ns().saturating_sub(ts)));
                }
            }
        }
        let now = Instant::now();
        if gate.paused(ns(now)) {
            let wait = (at(gate.until()) - now)
                .min(Duration::from_millis(2))
                .min(deadline.saturating_duration_since(now));
            if let Some(ctl) = &ctl {
                ctl.wait(wait);
            }
            continue;
        }
        // after a pause (timer or XON) no credit has built up
        next = next.max(at(gate.until()));
        if now < next {
            let wait = next - now;
            match &ctl {
                Some(ctl) => ctl.wait(wait),
                None => std::thread::sleep(wait),
            }
            continue;
        }
        let f = &frames[k];
        if tx.send(f)? {
            recent[recent_i % recent.len()] = realtime_ns();
            recent_i += 1;
            r.frames += 1;
            r.bytes += f.len() as u64;
            k = (k + 1) % frames.len();
            next += frame_time(f.len());
            // never faster than line rate: a held-up sender catches up by at
            // most CATCH_UP_FRAMES frames
            let slack = frame_time(f.len()) * CATCH_UP_FRAMES as u32;
            if next + slack < now {
                next = now - slack;
            }
        } else {
            r.send_errors += 1;
            std::thread::sleep(Duration::from_micros(50));
        }
    }
    r.elapsed = start.elapsed();
    r.xoff_rx = gate.xoff_rx;
    r.xon_rx = gate.xon_rx;
    r.other_mac_ctl_rx = gate.other_rx;
    r.pause_episodes = gate.episodes;
    r.paused = Duration::from_nanos(gate.paused_ns);
    r.longest_pause = Duration::from_nanos(gate.longest_ns);
    Ok(r)
}
