//! The lab's one raw socket (AF_PACKET, bound to one interface): send,
//! receive with kernel time stamps, wait, drop statistics; and sending a
//! batch of frames from inside a namespace. Our own rather than pnet's
//! datalink: the senders need PACKET_QDISC_BYPASS, SO_TIMESTAMPNS and
//! PACKET_STATISTICS, which it does not expose.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use anyhow::{bail, Result};

use crate::netns::Netns;

/// Sends `frames` out of interface `ifname` in `ns`. Runs on its own thread
/// so the caller's namespace is untouched.
pub fn send_frames(ns: &Netns, ifname: &str, frames: &[Vec<u8>]) -> Result<usize> {
    let frames = frames.to_vec();
    let ifname = ifname.to_string();
    std::thread::scope(|s| {
        s.spawn(|| -> Result<usize> {
            let _in = ns.enter()?;
            send_here(&ifname, &frames)
        })
        .join()
        .map_err(|_| anyhow::anyhow!("sender thread panicked"))?
    })
}

fn send_here(ifname: &str, frames: &[Vec<u8>]) -> Result<usize> {
    let sock = RawSocket::open_sender(ifname, false)?;
    for f in frames {
        sock.send_or_error(f)
            .map_err(|e| anyhow::anyhow!("sendto {ifname}: {e}"))?;
    }
    Ok(frames.len())
}

/// A frame [`RawSocket::recv`] received.
pub struct Rx {
    pub len: usize,
    /// `PACKET_HOST`, `PACKET_OUTGOING`, ...
    pub pkttype: u8,
    /// Kernel receive time (CLOCK_REALTIME ns) when time stamps are on.
    pub ts: Option<u64>,
    /// The interface it was seen on.
    pub ifindex: i32,
}

/// A raw socket bound to one interface.
pub struct RawSocket {
    fd: OwnedFd,
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

impl RawSocket {
    /// `proto` 0: send only (receives nothing); otherwise the EtherType to
    /// receive (`libc::ETH_P_ALL` for every frame). An empty `ifname`
    /// receives from every interface of the namespace.
    pub fn open(ifname: &str, proto: u16, nonblocking: bool) -> Result<RawSocket> {
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
            Ok(RawSocket { fd })
        }
    }

    pub fn setsockopt_int(&self, level: i32, name: i32, v: i32) -> Result<()> {
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

    /// A socket for sending only (protocol 0: it receives nothing),
    /// optionally bypassing the qdisc (then packet taps on the interface
    /// do not see what it sends).
    pub fn open_sender(ifname: &str, bypass_qdisc: bool) -> Result<RawSocket> {
        let s = RawSocket::open(ifname, 0, false)?;
        if bypass_qdisc {
            s.setsockopt_int(libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, 1)?;
        }
        Ok(s)
    }

    /// Sends one frame; `Ok(false)` when the kernel had no room (ENOBUFS,
    /// EAGAIN): the frame was not sent.
    pub fn send(&self, frame: &[u8]) -> Result<bool> {
        match self.send_or_error(frame) {
            Ok(()) => Ok(true),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOBUFS) | Some(libc::EAGAIN)) => {
                Ok(false)
            }
            Err(e) => bail!("send: {e}"),
        }
    }

    /// Sends one frame, with the kernel's error when it fails.
    pub fn send_or_error(&self, frame: &[u8]) -> std::io::Result<()> {
        // SAFETY: send from a live buffer on our bound socket.
        let n = unsafe {
            libc::send(
                self.fd.as_raw_fd(),
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
            )
        };
        if n < 0 {
            Err(std::io::Error::last_os_error())
        } else if n as usize != frame.len() {
            Err(std::io::Error::other(format!(
                "sent {n} of {} bytes",
                frame.len()
            )))
        } else {
            Ok(())
        }
    }

    /// Receives one frame into `buf` without blocking; `None` when nothing
    /// is queued.
    pub fn recv(&self, buf: &mut [u8]) -> Result<Option<Rx>> {
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
    pub fn wait(&self, timeout: Duration) {
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
    pub fn stats(&self) -> (u32, u32) {
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
