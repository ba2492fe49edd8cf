//! The PFC emitter: 802.1Qbb frames out of a switch port, from userspace
//! (AF_PACKET), because XDP cannot create packets.
//!
//! Frame: destination 01:80:C2:00:00:01, source = the port's own MAC (a zero
//! source MAC is a known bug of shipped switch software: peers may not count
//! it), EtherType 0x8808, opcode 0x0101, class-enable vector, eight pause
//! times in quanta (512 bit times), padded to 60 bytes.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use dataplane_common::wire::macctl::pfc_frame_bytes;

/// A raw socket bound to one port, sending MAC control frames.
pub struct PfcPort {
    fd: OwnedFd,
    ifindex: i32,
    pub name: String,
    pub mac: [u8; 6],
}

impl PfcPort {
    /// Opens a sender on `ifname` (in the calling thread's namespace).
    pub fn open(ifname: &str, mac: [u8; 6]) -> Result<PfcPort> {
        if mac == [0; 6] || mac[0] & 1 != 0 {
            bail!("PFC source MAC of {ifname} must be the port's own unicast MAC, got {mac:02x?}");
        }
        let c = CString::new(ifname)?;
        // SAFETY: plain syscalls with checked results; the fd is owned below.
        unsafe {
            let ifindex = libc::if_nametoindex(c.as_ptr());
            if ifindex == 0 {
                bail!("no interface {ifname}");
            }
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                bail!(
                    "AF_PACKET socket for {ifname}: {}",
                    std::io::Error::last_os_error()
                );
            }
            Ok(PfcPort {
                fd: OwnedFd::from_raw_fd(fd),
                ifindex: ifindex as i32,
                name: ifname.into(),
                mac,
            })
        }
    }

    /// Sends one PFC frame; returns how long the send call took.
    pub fn send(&self, class_enable: u16, times: [u16; 8]) -> Result<Duration> {
        let frame = pfc_frame_bytes(self.mac, class_enable, times);
        let t = Instant::now();
        if let Err(e) = crate::sys::packet_send(self.fd.as_raw_fd(), self.ifindex, &frame) {
            bail!("sending PFC on {}: {e}", self.name);
        }
        Ok(t.elapsed())
    }

    /// Pauses the priorities in `mask` for `quanta`.
    pub fn xoff(&self, mask: u8, quanta: u16) -> Result<Duration> {
        let mut times = [0u16; 8];
        for (i, t) in times.iter_mut().enumerate() {
            if mask & (1 << i) != 0 {
                *t = quanta;
            }
        }
        self.send(u16::from(mask), times)
    }

    /// Resumes the priorities in `mask` (pause time 0).
    pub fn xon(&self, mask: u8) -> Result<Duration> {
        self.send(u16::from(mask), [0; 8])
    }
}
