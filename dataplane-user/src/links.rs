//! Link-state notifications from the kernel (NETLINK_ROUTE, RTMGRP_LINK):
//! a readable socket means "some link changed"; the controller then reads
//! the ports' state and rewrites the groups whose members changed.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use anyhow::{bail, Result};

pub struct LinkWatch {
    fd: OwnedFd,
}

impl LinkWatch {
    /// Subscribes to link notifications in the current namespace.
    pub fn open() -> Result<LinkWatch> {
        // SAFETY: plain syscalls with checked results; the fd is owned below.
        unsafe {
            let fd = libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE,
            );
            if fd < 0 {
                bail!("netlink socket: {}", std::io::Error::last_os_error());
            }
            let fd = OwnedFd::from_raw_fd(fd);
            let mut sa: libc::sockaddr_nl = std::mem::zeroed();
            sa.nl_family = libc::AF_NETLINK as u16;
            sa.nl_groups = libc::RTMGRP_LINK as u32;
            let rc = libc::bind(
                fd.as_raw_fd(),
                &sa as *const libc::sockaddr_nl as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            );
            if rc != 0 {
                bail!("netlink bind: {}", std::io::Error::last_os_error());
            }
            Ok(LinkWatch { fd })
        }
    }

    /// Reads and discards every pending notification.
    pub fn drain(&self) {
        let mut buf = [0u8; 8192];
        loop {
            // SAFETY: recv into our buffer on our non-blocking fd.
            let n = unsafe {
                libc::recv(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    0,
                )
            };
            if n <= 0 {
                break;
            }
        }
    }
}

impl AsRawFd for LinkWatch {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
