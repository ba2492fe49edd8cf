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

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use dataplane_common::build::{self, Ip, Reth, L2};
use dataplane_common::wire::bth::{self, Bth};
use dataplane_common::wire::macctl::{quanta_to_nanos, OPCODE_PAUSE, OPCODE_PFC};

/// EtherType of MAC control frames.
pub const ETH_P_MAC_CONTROL: u16 = 0x8808;
/// Most frames a held-up sender sends back to back to catch up.
pub const CATCH_UP_FRAMES: u64 = 2;
/// RoCEv2 UDP destination port.
const ROCEV2_PORT: u16 = 4791;

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

/// A frame [`RawSock::recv`] received.
pub(crate) struct Rx {
    pub(crate) len: usize,
    /// `PACKET_HOST`, `PACKET_OUTGOING`, ...
    pub(crate) pkttype: u8,
    /// Kernel receive time (CLOCK_REALTIME ns) when time stamps are on.
    ts: Option<u64>,
    /// The interface it was seen on.
    ifindex: i32,
}

/// A raw socket bound to one interface.
pub(crate) struct RawSock {
    fd: OwnedFd,
    ifindex: i32,
}

fn ifindex(ifname: &str) -> Result<i32> {
    let c = CString::new(ifname)?;
    // SAFETY: a C string we own.
    let ix = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if ix == 0 {
        bail!("no interface {ifname} in this namespace");
    }
    Ok(ix as i32)
}

impl RawSock {
    /// `proto` 0: send only (receives nothing); otherwise the EtherType to
    /// receive (`libc::ETH_P_ALL` for every frame). An empty `ifname`
    /// receives from every interface of the namespace.
    pub(crate) fn open(ifname: &str, proto: u16, nonblocking: bool) -> Result<RawSock> {
        let ifindex = if ifname.is_empty() {
            0
        } else {
            ifindex(ifname)?
        };
        let flags =
            libc::SOCK_RAW | libc::SOCK_CLOEXEC | if nonblocking { libc::SOCK_NONBLOCK } else { 0 };
        // SAFETY: plain syscalls with checked results; the fd is owned at once.
        unsafe {
            let fd = libc::socket(libc::AF_PACKET, flags, i32::from(proto.to_be()));
            if fd < 0 {
                bail!(
                    "AF_PACKET socket on {ifname}: {}",
                    std::io::Error::last_os_error()
                );
            }
            let fd = OwnedFd::from_raw_fd(fd);
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto.to_be();
            sll.sll_ifindex = ifindex;
            let rc = libc::bind(
                fd.as_raw_fd(),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            if rc != 0 {
                bail!(
                    "binding AF_PACKET socket to {ifname}: {}",
                    std::io::Error::last_os_error()
                );
            }
            Ok(RawSock { fd, ifindex })
        }
    }

    pub(crate) fn setsockopt_int(&self, level: i32, name: i32, v: i32) -> Result<()> {
        // SAFETY: setsockopt with an int value.
        let rc = unsafe {
            libc::setsockopt(
                self.fd.as_raw_fd(),
                level,
                name,
                &v as *const i32 as *const libc::c_void,
                std::mem::size_of::<i32>() as u32,
            )
        };
        if rc != 0 {
            bail!(
                "setsockopt({level}, {name}): {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(())
    }

    /// Sends one frame; `Ok(false)` when the kernel had no room (ENOBUFS,
    /// EAGAIN): the frame was not sent.
    pub(crate) fn send(&self, frame: &[u8]) -> Result<bool> {
        // SAFETY: zeroed sockaddr_ll filled in; sendto on our fd with a live buffer.
        let n = unsafe {
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_ifindex = self.ifindex;
            sll.sll_halen = 6;
            sll.sll_addr[..6].copy_from_slice(&frame[..6]);
            libc::sendto(
                self.fd.as_raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            )
        };
        if n >= 0 {
            return Ok(true);
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::ENOBUFS) | Some(libc::EAGAIN) => Ok(false),
            _ => bail!("sendto: {e}"),
        }
    }

    /// Receives one frame into `buf` without blocking; `None` when nothing
    /// is queued.
    pub(crate) fn recv(&self, buf: &mut [u8]) -> Result<Option<Rx>> {
        // SAFETY: recvmsg into buffers we own, sized in the msghdr.
        unsafe {
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            let mut iov = libc::iovec {
                iov_base: buf.as_mut_ptr() as *mut libc::c_void,
                iov_len: buf.len(),
            };
            let mut cbuf = [0u64; 16];
            let mut msg: libc::msghdr = std::mem::zeroed();
            msg.msg_name = &mut sll as *mut libc::sockaddr_ll as *mut libc::c_void;
            msg.msg_namelen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            msg.msg_iov = &mut iov;
            msg.msg_iovlen = 1;
            msg.msg_control = cbuf.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = std::mem::size_of_val(&cbuf);
            let n = libc::recvmsg(self.fd.as_raw_fd(), &mut msg, libc::MSG_DONTWAIT);
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EAGAIN) {
                    return Ok(None);
                }
                bail!("recvmsg: {e}");
            }
            let mut ts = None;
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let t: libc::timespec =
                        std::ptr::read_unaligned(libc::CMSG_DATA(c) as *const libc::timespec);
                    ts = Some(t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64);
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
            Ok(Some(Rx {
                len: n as usize,
                pkttype: sll.sll_pkttype,
                ts,
                ifindex: sll.sll_ifindex,
            }))
        }
    }

    /// Waits until a frame is queued or `timeout` passes.
    pub(crate) fn wait(&self, timeout: Duration) {
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: ppoll on one pollfd we own.
        unsafe { libc::ppoll(&mut p, 1, &ts, std::ptr::null()) };
    }

    /// (frames received, frames dropped) since the last call
    /// (PACKET_STATISTICS).
    pub(crate) fn stats(&self) -> (u32, u32) {
        let mut st = libc::tpacket_stats {
            tp_packets: 0,
            tp_drops: 0,
        };
        let mut len = std::mem::size_of::<libc::tpacket_stats>() as u32;
        // SAFETY: getsockopt into a struct of the size given.
        unsafe {
            libc::getsockopt(
                self.fd.as_raw_fd(),
                libc::SOL_PACKET,
                libc::PACKET_STATISTICS,
                &mut st as *mut libc::tpacket_stats as *mut libc::c_void,
                &mut len,
            )
        };
        (st.tp_packets, st.tp_drops)
    }
}

/// CLOCK_REALTIME in ns (the clock of the kernel's receive time stamps).
pub fn realtime_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime into a local.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// A decoded MAC control frame: (opcode, class-enable vector, times).
pub(crate) fn mac_control(f: &[u8]) -> Option<(u16, u16, [u16; 8])> {
    if f.len() < 14 + 4 || u16::from_be_bytes([f[12], f[13]]) != ETH_P_MAC_CONTROL {
        return None;
    }
    let be = |o: usize| u16::from_be_bytes([f[o], f[o + 1]]);
    let opcode = be(14);
    let mut times = [0u16; 8];
    match opcode {
        OPCODE_PFC if f.len() >= 14 + 20 => {
            for (i, t) in times.iter_mut().enumerate() {
                *t = be(18 + 2 * i);
            }
            Some((opcode, be(16), times))
        }
        OPCODE_PAUSE => {
            times[0] = be(16);
            Some((opcode, 0, times))
        }
        _ => Some((opcode, 0, times)),
    }
}

/// Sends until `deadline` or `stop`, honouring PFC when the spec says so.
/// Runs in the calling thread's namespace.
pub fn run_sender(spec: &SenderSpec, deadline: Instant, stop: &AtomicBool) -> Result<SenderReport> {
    if spec.rate_mbps == 0 {
        bail!("rate_mbps must be positive");
    }
    let frames = spec.message();
    let tx = RawSock::open(&spec.ifname, 0, false)?;
    let ctl = if spec.honour_pfc {
        let s = RawSock::open(&spec.ifname, ETH_P_MAC_CONTROL, true)?;
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
    let mut paused_until: Option<Instant> = None;
    let mut pause_start = start;
    // send time stamps (CLOCK_REALTIME) of the last frames, for late_frames
    let mut recent = [0u64; 64];
    let mut recent_i = 0usize;
    let mut buf = [0u8; 256];
    loop {
        let now = Instant::now();
        if now >= deadline || stop.load(Ordering::Relaxed) {
            if paused_until.is_some() {
                let d = now - pause_start;
                r.paused += d;
                r.longest_pause = r.longest_pause.max(d);
            }
            break;
        }
        if let Some(ctl) = &ctl {
            while let Some(Rx { len, ts, .. }) = ctl.recv(&mut buf)? {
                let Some((opcode, cev, times)) = mac_control(&buf[..len]) else {
                    continue;
                };
                let p = usize::from(spec.prio & 7);
                let quanta = match opcode {
                    OPCODE_PFC if cev & (1 << p) != 0 => times[p],
                    OPCODE_PAUSE => times[0],
                    _ => {
                        r.other_mac_ctl_rx += 1;
                        continue;
                    }
                };
                let t = Instant::now();
                if quanta == 0 {
                    r.xon_rx += 1;
                    if paused_until.is_some() {
                        paused_until = Some(t);
                    }
                    continue;
                }
                r.xoff_rx += 1;
                r.xoff_rx_ns.push(ts.unwrap_or_else(realtime_ns));
                if let Some(ts) = ts {
                    let late = recent.iter().filter(|&&s| s > ts).count() as u64;
                    r.late_frames += late;
                    r.max_late_frames = r.max_late_frames.max(late);
                    r.max_reaction = r
                        .max_reaction
                        .max(Duration::from_nanos(realtime_ns().saturating_sub(ts)));
                }
                if paused_until.is_none() {
                    r.pause_episodes += 1;
                    pause_start = t;
                }
                // 802.1Qbb: each frame reloads the timer
                paused_until = Some(t + Duration::from_nanos(quanta_to_nanos(quanta, rate)));
            }
        }
        let now = Instant::now();
        if let Some(until) = paused_until {
            if now < until {
                let wait = (until - now)
                    .min(Duration::from_millis(2))
                    .min(deadline.saturating_duration_since(now));
                if let Some(ctl) = &ctl {
                    ctl.wait(wait);
                }
                continue;
            }
            // the pause ended (timer or XON): no credit built up meanwhile
            let d = until - pause_start;
            r.paused += d;
            r.longest_pause = r.longest_pause.max(d);
            paused_until = None;
            next = next.max(until);
        }
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
    Ok(r)
}

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
    let s = RawSock::open(ifname, libc::ETH_P_ALL as u16, true)?;
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
    let s = RawSock::open(ifname, 0, false)?;
    let mut times = [0u16; 8];
    times[usize::from(prio & 7)] = quanta;
    let frame = build::pfc_frame(src_mac, 1 << (prio & 7), times);
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
    let s = RawSock::open("", libc::ETH_P_ALL as u16, true)?;
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
            let Some((_, cev, times)) = mac_control(&buf[..len.min(buf.len())]) else {
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
                class_enable: cev,
                times,
            });
        }
        s.wait(Duration::from_millis(10));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// DCQCN hosts: a reaction-point sender and a notification-point receiver,
// driven by the pure functions of `dataplane_common::dcqcn`.
// ---------------------------------------------------------------------------

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
    let sock = RawSock::open(&spec.ifname, libc::ETH_P_ALL as u16, true)?;
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
            if let Some(crate::host::Seen { op, qp, .. }) = crate::host::parse(&buf[..rx.len]) {
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
    let sock = RawSock::open(ifname, libc::ETH_P_ALL as u16, true)?;
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
        let Some(crate::host::Seen {
            ecn, op, qp, src, ..
        }) = crate::host::parse(&buf[..rx.len])
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
