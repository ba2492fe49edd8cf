//! PFC on the host side: a storm source (a stuck NIC that never stops
//! pausing) and a tap that records every MAC control frame it sees.

use super::frames::{mac_ctl, realtime_ns};
use crate::raw::{RawSocket, Rx};
use anyhow::Result;
use dataplane_common::build::{self};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A stuck NIC: sends PFC frames pausing `prio` for `quanta` every
/// `interval` out of `ifname` (source `src_mac`) until `stop`; returns the
/// frames sent. Runs in the calling thread's namespace.
pub fn run_pfc_storm(
    ifname: &str,
    src_mac: [u8; 6],
    prio: u8,
    quanta: u16,
    interval: Duration,
    stop: &AtomicBool,
) -> Result<u64> {
    run_pfc_storm_on(ifname, src_mac, 1 << (prio & 7), quanta, interval, stop)
}

/// [`run_pfc_storm`] pausing every priority of `class_enable` at once
/// (one frame per interval with their bits and times set).
pub fn run_pfc_storm_on(
    ifname: &str,
    src_mac: [u8; 6],
    class_enable: u8,
    quanta: u16,
    interval: Duration,
    stop: &AtomicBool,
) -> Result<u64> {
    let s = RawSocket::open(ifname, 0, false)?;
    let mut times = [0u16; 8];
    for (p, t) in times.iter_mut().enumerate() {
        if class_enable & (1 << p) != 0 {
            *t = quanta;
        }
    }
    let frame = build::pfc_frame(src_mac, u16::from(class_enable), times);
    let mut sent = 0;
    let mut next = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if s.send(&frame)? {
            sent += 1;
        }
        next += interval;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now;
        }
    }
    Ok(sent)
}

/// A MAC control frame seen by [`run_mac_ctl_tap`].
#[derive(Clone, Debug)]
pub struct TapEvent {
    /// Kernel time stamp (CLOCK_REALTIME ns).
    pub ts_ns: u64,
    pub ifname: String,
    /// Sent out of the interface (else received on it).
    pub outgoing: bool,
    /// PFC class-enable vector (0 for PAUSE) and times.
    pub class_enable: u16,
    pub times: [u16; 8],
}

/// Records every MAC control frame sent or received on any interface of
/// the calling thread's namespace until `stop` (e.g. on a switch's ports:
/// when each PFC frame actually left). It sees what the kernel stack sees:
/// frames an XDP program consumed or redirected never reach it. Runs in the
/// calling thread's namespace.
pub fn run_mac_ctl_tap(stop: &AtomicBool) -> Result<Vec<TapEvent>> {
    // ETH_P_ALL: the kernel shows outgoing frames only to taps of every
    // protocol (dev_queue_xmit_nit)
    let s = RawSocket::open("", libc::ETH_P_ALL as u16, true)?;
    s.setsockopt_int(libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
    let _ = s.setsockopt_int(libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, 16 << 20);
    let mut names: std::collections::BTreeMap<i32, String> = Default::default();
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    while !stop.load(Ordering::Relaxed) {
        while let Some(Rx {
            len,
            pkttype,
            ts,
            ifindex: ix,
        }) = s.recv(&mut buf)?
        {
            let Some(m) = mac_ctl(&buf[..len.min(buf.len())]) else {
                continue;
            };
            let ifname = names
                .entry(ix)
                .or_insert_with(|| {
                    let mut b = [0 as libc::c_char; libc::IF_NAMESIZE];
                    // SAFETY: if_indextoname into a buffer of IF_NAMESIZE.
                    let p = unsafe { libc::if_indextoname(ix as u32, b.as_mut_ptr()) };
                    if p.is_null() {
                        format!("ifindex{ix}")
                    } else {
                        // SAFETY: if_indextoname wrote a NUL-terminated name.
                        unsafe { std::ffi::CStr::from_ptr(b.as_ptr()) }
                            .to_string_lossy()
                            .into_owned()
                    }
                })
                .clone();
            out.push(TapEvent {
                ts_ns: ts.unwrap_or_else(realtime_ns),
                ifname,
                outgoing: pkttype == libc::PACKET_OUTGOING,
                class_enable: m.class_enable,
                times: m.times,
            });
        }
        s.wait(Duration::from_millis(10));
    }
    Ok(out)
}
