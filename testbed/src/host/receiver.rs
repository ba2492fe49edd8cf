//! The counting receiver: counts the RoCEv2 frames it sees (live, while it
//! runs) and what the kernel dropped.

use super::frames::{ETH_P_MAC_CONTROL, ROCEV2_PORT};
use crate::raw::{RawSocket, Rx};
use anyhow::Result;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// What a receiver counted.
#[derive(Clone, Debug, Default)]
pub struct ReceiverReport {
    /// RoCEv2 (UDP 4791 over IPv4) frames received, and their bytes.
    pub frames: u64,
    pub bytes: u64,
    /// Of those, with CE set.
    pub ce: u64,
    /// Per IPv4 source address.
    pub per_source: std::collections::BTreeMap<[u8; 4], u64>,
    /// MAC control frames received (sent to us).
    pub mac_ctl_rx: u64,
    /// Other frames received.
    pub other: u64,
    /// Frames the socket dropped for lack of room (PACKET_STATISTICS): if
    /// nonzero, `frames` undercounts what the interface received.
    pub socket_drops: u64,
}

/// A receiver's live frame count, readable while it runs.
#[derive(Debug, Default)]
pub struct RxLive {
    pub frames: AtomicU64,
}

/// Counts frames arriving on `ifname` until `stop`, then until the
/// interface was quiet for `quiet`. Runs in the calling thread's namespace.
pub fn run_receiver(
    ifname: &str,
    stop: &AtomicBool,
    quiet: Duration,
    live: &RxLive,
) -> Result<ReceiverReport> {
    let s = RawSocket::open(ifname, libc::ETH_P_ALL as u16, true)?;
    // as root: a buffer far above what a test run can queue (SO_RCVBUFFORCE
    // ignores rmem_max)
    let _ = s.setsockopt_int(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 64 << 20);
    let _ = s.stats();
    let mut r = ReceiverReport::default();
    let mut buf = vec![0u8; 65536];
    let mut last = Instant::now();
    loop {
        match s.recv(&mut buf)? {
            Some(Rx {
                len: n, pkttype, ..
            }) => {
                if pkttype == libc::PACKET_OUTGOING {
                    continue;
                }
                last = Instant::now();
                let f = &buf[..n];
                let et = if n >= 14 {
                    u16::from_be_bytes([f[12], f[13]])
                } else {
                    0
                };
                if et == ETH_P_MAC_CONTROL {
                    r.mac_ctl_rx += 1;
                } else if et == 0x0800
                    && n >= 14 + 20 + 8
                    && f[14] >> 4 == 4
                    && f[23] == 17
                    && u16::from_be_bytes([
                        f[14 + ((f[14] & 15) as usize) * 4 + 2],
                        f[14 + ((f[14] & 15) as usize) * 4 + 3],
                    ]) == ROCEV2_PORT
                {
                    r.frames += 1;
                    r.bytes += n as u64;
                    if f[15] & 3 == 3 {
                        r.ce += 1;
                    }
                    let src = [f[26], f[27], f[28], f[29]];
                    *r.per_source.entry(src).or_default() += 1;
                    live.frames.fetch_add(1, Ordering::Relaxed);
                } else {
                    r.other += 1;
                }
            }
            None => {
                if stop.load(Ordering::Relaxed) && last.elapsed() >= quiet {
                    break;
                }
                s.wait(Duration::from_millis(10));
            }
        }
    }
    r.socket_drops = u64::from(s.stats().1);
    Ok(r)
}
