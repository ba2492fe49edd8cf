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
    let c = CString::new(ifname)?;
    // SAFETY: plain syscalls with checked results.
    unsafe {
        let ix = libc::if_nametoindex(c.as_ptr());
        if ix == 0 {
            bail!("no interface {ifname}");
        }
        let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
        if fd < 0 {
            bail!("AF_PACKET socket: {}", std::io::Error::last_os_error());
        }
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex = ix as i32;
        sll.sll_halen = 6;
        let mut sent = 0;
        for f in frames {
            let n = libc::sendto(
                fd,
                f.as_ptr() as *const libc::c_void,
                f.len(),
                0,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            );
            if n < 0 {
                let e = std::io::Error::last_os_error();
                libc::close(fd);
                bail!("sendto {ifname}: {e}");
            }
            sent += 1;
        }
        libc::close(fd);
        Ok(sent)
    }
}
