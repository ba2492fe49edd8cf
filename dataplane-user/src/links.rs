//! Link-state notifications from the kernel (NETLINK_ROUTE, RTMGRP_LINK,
//! on `netlink-sys`'s socket): a readable socket means "some link changed";
//! the controller then reads the ports' state and rewrites the groups whose
//! members changed.

use std::os::fd::{AsRawFd, RawFd};

use anyhow::{Context, Result};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

pub struct LinkWatch {
    sock: Socket,
}

impl LinkWatch {
    /// Subscribes to link notifications in the current namespace.
    pub fn open() -> Result<LinkWatch> {
        let mut sock = Socket::new(NETLINK_ROUTE).context("netlink socket")?;
        sock.bind(&SocketAddr::new(0, libc::RTMGRP_LINK as u32))
            .context("netlink bind (RTMGRP_LINK)")?;
        sock.set_non_blocking(true)
            .context("netlink socket: non-blocking")?;
        Ok(LinkWatch { sock })
    }

    /// Reads and discards every pending notification.
    pub fn drain(&self) {
        let mut buf = Vec::with_capacity(8192);
        loop {
            buf.clear();
            match self.sock.recv(&mut buf, 0) {
                Ok(n) if n > 0 => continue,
                _ => break,
            }
        }
    }
}

impl AsRawFd for LinkWatch {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}
