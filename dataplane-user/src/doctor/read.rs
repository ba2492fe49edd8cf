//! Reading what `doctor` checks, in the current network namespace: the
//! kernel release, a port's link (RTM_GETLINK through
//! `netlink-packet-route`), its driver and channels (the ethtool ioctl:
//! the ethtool netlink family has no driver-info message, and `ethtool -i`
//! uses this ioctl too), its XDP features (the netdev family, shared with
//! `up`'s egress check) and its DCB settings (`dcb`).

use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use netlink_packet_route::link::{InfoKind, LinkAttribute, LinkFlags, LinkInfo, LinkXdp};

use super::checks::{Channels, DriverRead, LinkRead, Pinned, PortRead};

/// `uname -r`.
pub fn kernel_release() -> String {
    // SAFETY: uname into a zeroed struct.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    if unsafe { libc::uname(&mut u) } != 0 {
        return String::new();
    }
    // SAFETY: uname wrote NUL-terminated strings.
    unsafe { CStr::from_ptr(u.release.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

/// CPUs online (each runs XDP for the queues whose interrupts it takes).
pub fn cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32
}

/// What is pinned for the plan's instance, who runs it, and whether this
/// build can adopt it with this plan (the check `up` makes).
pub fn pinned(plan: &dataplane_config::Plan) -> Pinned {
    let dir = crate::sys::pin_dir(&plan.instance);
    if !dir.exists() {
        return Pinned::Nothing;
    }
    let sizes = crate::object::route_table_sizes(plan);
    Pinned::DataPlane {
        controller: crate::sys::InstanceLock::holder(&plan.instance).ok(),
        layout: crate::object::check_pinned_layouts_sized(&dir, &sizes)
            .map_err(|e| format!("{e:#}")),
    }
}

/// Everything about port `name` of `instance`.
pub fn port(instance: &str, name: &str) -> PortRead {
    let link = crate::sys::ifindex(name).and_then(link).map(|mut l| {
        l.ours = crate::attach::link_pin(&crate::sys::pin_dir(instance), name).exists();
        l
    });
    let xdp_features = link
        .as_ref()
        .and_then(|l| crate::telemetry::xmit::xdp_features(l.ifindex));
    PortRead {
        driver: if link.is_some() {
            driver(name)
        } else {
            Err("no such interface".into())
        },
        channels: link.as_ref().and_then(|_| channels(name)),
        pause: link.as_ref().and_then(|_| pause(name)),
        dcb: if link.is_some() {
            super::dcb::read(name)
        } else {
            super::checks::DcbRead::Error("no such interface".into())
        },
        xdp_features,
        link,
    }
}

/// RTM_GETLINK for `ifindex`.
pub fn link(ifindex: u32) -> Option<LinkRead> {
    parse_link(&crate::telemetry::netdev::getlink(ifindex)?)
}

/// The first RTM_NEWLINK of a reply.
pub fn parse_link(reply: &[u8]) -> Option<LinkRead> {
    let m = crate::telemetry::netdev::newlink(reply)?;
    let mut l = LinkRead {
        ifindex: m.header.index,
        admin_up: m.header.flags.contains(LinkFlags::Up),
        lower_up: m.header.flags.contains(LinkFlags::LowerUp),
        ..LinkRead::default()
    };
    for a in &m.attributes {
        match a {
            LinkAttribute::Mtu(v) => l.mtu = *v,
            LinkAttribute::NumRxQueues(v) => l.num_rx_queues = *v,
            LinkAttribute::NumTxQueues(v) => l.num_tx_queues = *v,
            LinkAttribute::LinkInfo(infos) => {
                for i in infos {
                    if let LinkInfo::Kind(k) = i {
                        l.kind = Some(match k {
                            InfoKind::Veth => "veth".to_string(),
                            k => k.to_string(),
                        });
                    }
                }
            }
            LinkAttribute::Xdp(x) => {
                for i in x {
                    if let LinkXdp::ProgId(id) = i {
                        l.xdp_prog = (*id != 0).then_some(*id);
                    }
                }
            }
            _ => {}
        }
    }
    Some(l)
}

const SIOCETHTOOL: libc::c_ulong = 0x8946;
const ETHTOOL_GDRVINFO: u32 = 3;
const ETHTOOL_GCHANNELS: u32 = 0x3c;
const ETHTOOL_GPAUSEPARAM: u32 = 0x12;

/// SIOCETHTOOL on `name` with `data` (an ethtool command struct whose
/// first u32 is the command).
fn ethtool(name: &str, data: &mut [u8]) -> std::io::Result<()> {
    if name.len() >= libc::IF_NAMESIZE {
        return Err(std::io::Error::from_raw_os_error(libc::ENODEV));
    }
    // SAFETY: socket(2); the fd is owned at once.
    let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by socket(2).
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: a zeroed ifreq with the name copied in and ifr_data pointing
    // at `data`, which outlives the call and is as large as the command's
    // struct.
    let rc = unsafe {
        let mut req: libc::ifreq = std::mem::zeroed();
        for (d, s) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
            *d = *s as libc::c_char;
        }
        req.ifr_ifru.ifru_data = data.as_mut_ptr().cast();
        libc::ioctl(fd.as_raw_fd(), SIOCETHTOOL, &mut req)
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// ETHTOOL_GDRVINFO (struct ethtool_drvinfo: driver at 4, version at 36,
/// fw_version at 68, bus_info at 100, each 32 bytes; 196 in all).
pub fn driver(name: &str) -> Result<DriverRead, String> {
    let mut d = [0u8; 196];
    d[0..4].copy_from_slice(&ETHTOOL_GDRVINFO.to_ne_bytes());
    ethtool(name, &mut d).map_err(|e| e.to_string())?;
    let s = |o: usize| {
        let f = &d[o..o + 32];
        let end = f.iter().position(|b| *b == 0).unwrap_or(32);
        String::from_utf8_lossy(&f[..end]).into_owned()
    };
    Ok(DriverRead {
        driver: s(4),
        version: s(36),
        firmware: s(68),
        bus: s(100),
    })
}

/// ETHTOOL_GCHANNELS (struct ethtool_channels: cmd, max rx/tx/other/
/// combined, then rx/tx/other/combined counts); `None` when the driver
/// does not report channels.
pub fn channels(name: &str) -> Option<Channels> {
    let mut d = [0u8; 36];
    d[0..4].copy_from_slice(&ETHTOOL_GCHANNELS.to_ne_bytes());
    ethtool(name, &mut d).ok()?;
    let u = |i: usize| u32::from_ne_bytes(d[i * 4..i * 4 + 4].try_into().unwrap_or([0; 4]));
    Some(Channels {
        max_combined: u(4),
        rx: u(5),
        tx: u(6),
        combined: u(8),
    })
}

/// ETHTOOL_GPAUSEPARAM (struct ethtool_pauseparam: cmd, autoneg,
/// rx_pause, tx_pause): (rx, tx); `None` when the driver has no pause.
pub fn pause(name: &str) -> Option<(bool, bool)> {
    let mut d = [0u8; 16];
    d[0..4].copy_from_slice(&ETHTOOL_GPAUSEPARAM.to_ne_bytes());
    ethtool(name, &mut d).ok()?;
    let u = |i: usize| u32::from_ne_bytes(d[i * 4..i * 4 + 4].try_into().unwrap_or([0; 4]));
    Some((u(2) != 0, u(3) != 0))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_recorded_newlink_of_a_veth_is_read() {
        let l = super::parse_link(include_bytes!(
            "../../tests/fixtures/doctor/newlink-veth.bin"
        ))
        .expect("an RTM_NEWLINK");
        assert_eq!(l.ifindex, 5);
        assert_eq!(l.mtu, 1280);
        assert!(l.admin_up && !l.lower_up, "{l:?}");
        assert_eq!(l.kind.as_deref(), Some("veth"));
        assert_eq!((l.num_rx_queues, l.num_tx_queues), (2, 2));
        assert_eq!(l.xdp_prog, None);
        assert!(super::parse_link(&[0u8; 8]).is_none());
    }
}
