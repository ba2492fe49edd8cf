//! Sending raw Ethernet frames from inside a namespace (AF_PACKET).

use std::ffi::CString;

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
    let sock = RawSocket::open(ifname, false)?;
    for f in frames {
        sock.send_or_error(f)
            .map_err(|e| anyhow::anyhow!("sendto {ifname}: {e}"))?;
    }
    Ok(frames.len())
}

/// An AF_PACKET socket bound to one interface for sending (it receives
/// nothing), optionally bypassing the qdisc (then packet taps on the
/// interface do not see what it sends). Closed on drop.
pub struct RawSocket {
    fd: libc::c_int,
}

impl RawSocket {
    pub fn open(ifname: &str, bypass_qdisc: bool) -> Result<RawSocket> {
        let c = CString::new(ifname)?;
        // SAFETY: plain syscalls with checked results; the fd is closed on drop.
        unsafe {
            let ix = libc::if_nametoindex(c.as_ptr());
            if ix == 0 {
                bail!("no interface {ifname}");
            }
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            if fd < 0 {
                bail!("AF_PACKET socket: {}", std::io::Error::last_os_error());
            }
            let s = RawSocket { fd };
            if bypass_qdisc {
                let one: libc::c_int = 1;
                libc::setsockopt(
                    fd,
                    libc::SOL_PACKET,
                    libc::PACKET_QDISC_BYPASS,
                    &one as *const libc::c_int as *const libc::c_void,
                    std::mem::size_of::<libc::c_int>() as u32,
                );
            }
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_ifindex = ix as i32;
            // protocol 0: bound for sending only, receives nothing
            if libc::bind(
                fd,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            ) != 0
            {
                bail!(
                    "bind AF_PACKET to {ifname}: {}",
                    std::io::Error::last_os_error()
                );
            }
            Ok(s)
        }
    }

    /// Sends one frame; false when the kernel did not take all of it.
    pub fn send(&self, frame: &[u8]) -> bool {
        self.send_or_error(frame).is_ok()
    }

    /// Sends one frame, with the kernel's error when it fails.
    pub fn send_or_error(&self, frame: &[u8]) -> std::io::Result<()> {
        // SAFETY: send from a live buffer on our socket.
        let n = unsafe {
            libc::send(
                self.fd,
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
}

impl Drop for RawSocket {
    fn drop(&mut self) {
        // SAFETY: closing our own fd once.
        unsafe { libc::close(self.fd) };
    }
}
