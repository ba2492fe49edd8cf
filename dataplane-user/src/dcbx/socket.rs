//! An LLDP socket on one port: AF_PACKET bound to the interface and to
//! EtherType 0x88CC, joined to the nearest-bridge group address.
//!
//! Why a socket and not the XDP program: LLDP is a few frames a minute
//! per port, and the data plane hands every non-IP frame, LLDP included,
//! to the kernel (`Reason::NotIp`, XDP_PASS; tested in
//! dataplane-common/tests/lldp.rs), where a packet socket receives it. A
//! socket per port needs no new map, ring or program, works the same with
//! `xdp_classify` and `xdp_forward`, and sends the way the PFC fallback
//! sender (lossless::pfc) already does. The cost is nothing on the fast
//! path: the XDP program does not look at LLDP at all.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use anyhow::{bail, Result};
use dataplane_common::wire::lldp::{DST_MAC, ETHERTYPE};

pub struct LldpSocket {
    fd: OwnedFd,
    ifindex: i32,
    pub name: String,
}

/// A received frame: its length and whether it is one this host sent.
pub struct Received {
    pub len: usize,
    pub outgoing: bool,
}

impl LldpSocket {
    /// Opens the socket of `ifname` (in the calling thread's namespace).
    pub fn open(ifname: &str) -> Result<LldpSocket> {
        let c = CString::new(ifname)?;
        let proto = ETHERTYPE.to_be();
        // SAFETY: plain syscalls with checked results; the fd is owned at
        // once.
        unsafe {
            let ifindex = libc::if_nametoindex(c.as_ptr());
            if ifindex == 0 {
                bail!("no interface {ifname}");
            }
            let fd = libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                i32::from(proto),
            );
            if fd < 0 {
                bail!(
                    "LLDP socket on {ifname}: {}",
                    std::io::Error::last_os_error()
                );
            }
            let s = LldpSocket {
                fd: OwnedFd::from_raw_fd(fd),
                ifindex: ifindex as i32,
                name: ifname.into(),
            };
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = s.ifindex;
            if libc::bind(
                fd,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            ) != 0
            {
                bail!(
                    "binding the LLDP socket to {ifname}: {}",
                    std::io::Error::last_os_error()
                );
            }
            // a NIC filters multicast it was not asked for
            let mut mr: libc::packet_mreq = std::mem::zeroed();
            mr.mr_ifindex = s.ifindex;
            mr.mr_type = libc::PACKET_MR_MULTICAST as u16;
            mr.mr_alen = 6;
            mr.mr_address[..6].copy_from_slice(&DST_MAC);
            if libc::setsockopt(
                fd,
                libc::SOL_PACKET,
                libc::PACKET_ADD_MEMBERSHIP,
                &mr as *const libc::packet_mreq as *const libc::c_void,
                std::mem::size_of::<libc::packet_mreq>() as u32,
            ) != 0
            {
                bail!(
                    "joining 01:80:c2:00:00:0e on {ifname}: {}",
                    std::io::Error::last_os_error()
                );
            }
            Ok(s)
        }
    }

    /// Sends one frame.
    pub fn send(&self, frame: &[u8]) -> Result<()> {
        crate::sys::packet_send(self.fd.as_raw_fd(), self.ifindex, frame)
            .map_err(|e| anyhow::anyhow!("sending LLDP on {}: {e}", self.name))
    }

    /// The next waiting frame into `buf` (truncated to it), or `None`.
    pub fn recv(&self, buf: &mut [u8]) -> Option<Received> {
        // SAFETY: recvfrom into our buffer and a zeroed sockaddr_ll.
        unsafe {
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            let mut alen = std::mem::size_of::<libc::sockaddr_ll>() as u32;
            let n = libc::recvfrom(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                0,
                &mut sll as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                &mut alen,
            );
            (n >= 0).then_some(Received {
                len: n as usize,
                outgoing: sll.sll_pkttype == libc::PACKET_OUTGOING,
            })
        }
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
