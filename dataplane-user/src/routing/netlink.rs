//! The NETLINK_ROUTE sockets of the route sync (`netlink-sys`): one
//! subscribed to route, neighbour and nexthop events, one for dumps. The
//! events socket is subscribed before the dump, so nothing between the two
//! is missed (an event the dump already saw applies again, harmlessly).

use std::os::fd::{AsRawFd, RawFd};

use anyhow::{bail, Context, Result};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

use super::decode::{decode, RTM_GETNEIGH, RTM_GETNEXTHOP, RTM_GETROUTE};
use super::kernel::Event;

const RTNLGRP_NEIGH: u32 = 3;
const RTNLGRP_IPV4_ROUTE: u32 = 7;
const RTNLGRP_IPV6_ROUTE: u32 = 11;
const RTNLGRP_NEXTHOP: u32 = 32;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_DUMP: u16 = 0x300;
const RECV_BUF: usize = 1 << 16;

/// The event socket.
pub struct RouteEvents {
    sock: Socket,
    table: u32,
    buf: Vec<u8>,
}

impl RouteEvents {
    /// Subscribes to IPv4/IPv6 route, neighbour and nexthop events in the
    /// current namespace (with a large receive buffer: a full table change
    /// is a burst).
    pub fn open(table: u32) -> Result<RouteEvents> {
        let mut sock = Socket::new(NETLINK_ROUTE).context("netlink socket")?;
        sock.bind_auto().context("netlink bind")?;
        for g in [RTNLGRP_NEIGH, RTNLGRP_IPV4_ROUTE, RTNLGRP_IPV6_ROUTE] {
            sock.add_membership(g)
                .with_context(|| format!("netlink group {g}"))?;
        }
        // nexthop objects: kernels before 5.3 have none
        let _ = sock.add_membership(RTNLGRP_NEXTHOP);
        let _ = sock.set_rx_buf_sz(32 << 20);
        sock.set_non_blocking(true)?;
        Ok(RouteEvents {
            sock,
            table,
            buf: Vec::with_capacity(RECV_BUF),
        })
    }

    /// Every pending event; `Err` when the kernel dropped some (ENOBUFS):
    /// the caller then dumps everything again.
    pub fn read(&mut self) -> Result<Vec<Event>> {
        let mut out = Vec::new();
        loop {
            self.buf.clear();
            match self.sock.recv(&mut self.buf, 0) {
                Ok(0) => break,
                Ok(_) => out.extend(decode(&self.buf, self.table)),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    bail!("netlink events overflowed (ENOBUFS): resync needed")
                }
                Err(e) => return Err(e).context("netlink recv"),
            }
        }
        Ok(out)
    }
}

impl AsRawFd for RouteEvents {
    fn as_raw_fd(&self) -> RawFd {
        self.sock.as_raw_fd()
    }
}

/// Dumps nexthop objects, neighbours, then IPv4 and IPv6 routes of `table`
/// (in that order: routes refer to the others).
pub fn dump_all(table: u32) -> Result<Vec<Event>> {
    let mut sock = Socket::new(NETLINK_ROUTE).context("netlink socket")?;
    sock.bind_auto()?;
    sock.connect(&SocketAddr::new(0, 0))?;
    let mut out = Vec::new();
    // (type, family, header length); a kernel without nexthop objects
    // answers the first with an error, which is fine
    for (seq, (ty, family, hdr)) in [
        (RTM_GETNEXTHOP, 0u8, 8usize),
        (RTM_GETNEIGH, 0, 12),
        (RTM_GETROUTE, libc::AF_INET as u8, 12),
        (RTM_GETROUTE, libc::AF_INET6 as u8, 12),
    ]
    .into_iter()
    .enumerate()
    {
        let len = 16 + hdr;
        let mut req = vec![0u8; len];
        req[0..4].copy_from_slice(&(len as u32).to_ne_bytes());
        req[4..6].copy_from_slice(&ty.to_ne_bytes());
        req[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_DUMP).to_ne_bytes());
        req[8..12].copy_from_slice(&(seq as u32 + 1).to_ne_bytes());
        req[16] = family;
        sock.send(&req, 0).context("netlink dump request")?;
        let mut buf = Vec::with_capacity(RECV_BUF);
        'dump: loop {
            buf.clear();
            sock.recv(&mut buf, 0).context("netlink dump")?;
            for e in decode(&buf, table) {
                match e {
                    Event::Done => break 'dump,
                    Event::Error(errno) if errno != 0 => {
                        if ty != RTM_GETNEXTHOP {
                            bail!("netlink dump of type {ty}: errno {errno}");
                        }
                        break 'dump;
                    }
                    e => out.push(e),
                }
            }
        }
    }
    Ok(out)
}
