//! Frames the data plane redirected to a port that the kernel then failed
//! to transmit. A redirect is counted as sent by the program
//! (`tx_tc_pkts`) when it returns XDP_REDIRECT; the kernel carries it out
//! afterwards and a failure there frees the frame without any device
//! counter: `xdp_do_redirect` refusing it (-EOPNOTSUPP: a veth whose peer
//! has neither an XDP program nor GRO, a NIC without XDP transmit queues),
//! or the devmap's bulk flush losing it (`ndo_xdp_xmit` failed or took only
//! part). The kernel reports both on tracepoints, `xdp:xdp_redirect_err`
//! and `xdp_devmap_xmit`; the controller attaches `tp_xdp_redirect_err`
//! (a perf event per CPU) and `tp_xdp_devmap_xmit` (a BTF tracepoint),
//! which sum them per destination ifindex (`XMIT_ERRORS`), read here as
//! each port's `tx_xdp_xmit_err`.
//!
//! Only this instance's frames count: failed redirects through its own
//! devmap (its map id); flush drops, which carry no map id, on devices of
//! its own network namespace (the destination device's `struct net`
//! namespace inode, read through the BTF-typed `to_dev` at offsets taken
//! from the kernel's BTF, [`super::btf`]). Limit: counted while a
//! controller runs (the tracepoints are attached by the running
//! controller, not pinned).

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

use anyhow::{bail, Context, Result};
use aya::maps::{MapData, PerCpuHashMap};
use aya::programs::tp_btf::BtfTracePointLink;
use aya::programs::{BtfTracePoint, TracePoint};
use aya::Ebpf;
use dataplane_common::maps::{XmitDevFilter, XMIT_REDIRECT_ERR_TO_IFINDEX_OFF};
use dataplane_common::names;

use super::btf::Btf;

/// Where tracefs is (mounted there when it is not).
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// (field, offset) pairs a program reads from its tracepoint's record.
type Fields = &'static [(&'static str, usize)];

/// The perf tracepoints (name under events/xdp), their programs and the
/// fields each program reads.
const TRACEPOINTS: [(&str, &str, Fields); 1] = [(
    "xdp_redirect_err",
    names::prog::TP_XDP_REDIRECT_ERR,
    &[("to_ifindex", XMIT_REDIRECT_ERR_TO_IFINDEX_OFF)],
)];

/// The kernel fields `tp_xdp_devmap_xmit` reads (struct, member path), in
/// the order of [`XmitDevFilter`]'s offsets.
pub const BTF_FIELDS: [(&str, &[&str]); 3] = [
    ("net_device", &["ifindex"]),
    ("net_device", &["nd_net", "net"]),
    ("net", &["ns", "inum"]),
];

/// The filter for this thread's network namespace: its nsfs inode and the
/// offsets of [`BTF_FIELDS`] in the running kernel.
pub fn dev_filter(btf: &Btf) -> Result<XmitDevFilter> {
    use std::os::unix::fs::MetadataExt;
    let ns = std::fs::metadata("/proc/thread-self/ns/net")
        .context("reading /proc/thread-self/ns/net")?
        .ino();
    let mut off = [0u32; 3];
    for (o, (s, path)) in off.iter_mut().zip(BTF_FIELDS) {
        *o = btf.offset(s, path)?;
        if *o > 0xffff {
            bail!(
                "{s}.{} at offset {o}: beyond what the program reads",
                path.join(".")
            );
        }
    }
    Ok(XmitDevFilter {
        netns_inum: u32::try_from(ns).context("namespace inode beyond 32 bits")?,
        ifindex_off: off[0],
        nd_net_off: off[1],
        ns_inum_off: off[2],
    })
}

/// Checks a tracepoint's record layout (`format` file) against the
/// offsets its program reads.
pub fn check_format(format: &str, fields: &[(&str, usize)]) -> Result<()> {
    let offset = |field: &str| -> Option<usize> {
        let line = format.lines().find(|l| l.contains(&format!(" {field};")))?;
        let rest = line.split("offset:").nth(1)?;
        rest.split(';').next()?.trim().parse().ok()
    };
    for &(field, want) in fields {
        match offset(field) {
            Some(o) if o == want => {}
            got => bail!("field {field} is at {got:?}, the program reads offset {want}"),
        }
    }
    Ok(())
}

/// The programs attached: `tp_xdp_redirect_err` on every CPU (one perf
/// event each: aya's tracepoint attach opens one on CPU 0 only),
/// `tp_xdp_devmap_xmit` by its BTF tracepoint link; detached when dropped.
pub struct XmitTrace {
    _events: Vec<OwnedFd>,
    _link: BtfTracePointLink,
}

/// Attaches `tp_xdp_redirect_err` to `xdp:xdp_redirect_err` on every CPU
/// (mounting tracefs if needed) and `tp_xdp_devmap_xmit` to the BTF
/// tracepoint `xdp_devmap_xmit`.
pub fn attach(bpf: &mut Ebpf) -> Result<XmitTrace> {
    crate::sys::ensure_tracefs(TRACEFS)?;
    // failed redirects count only through this instance's devmap
    let id = match bpf.map(names::map::TX_PORTS) {
        Some(aya::maps::Map::DevMap(m)) => m.info()?.id(),
        _ => bail!("map {} missing or not a devmap", names::map::TX_PORTS),
    };
    let mut ids: aya::maps::Array<_, u32> = aya::maps::Array::try_from(
        bpf.map_mut(names::map::XMIT_MAP_ID)
            .context("map XMIT_MAP_ID missing")?,
    )?;
    ids.set(0, id, 0)?;
    // flush drops only on this namespace's devices
    let btf = Btf::kernel()?;
    let filter = dev_filter(&btf)?;
    let mut f: aya::maps::Array<_, XmitDevFilter> = aya::maps::Array::try_from(
        bpf.map_mut(names::map::XMIT_DEV_FILTER)
            .context("map XMIT_DEV_FILTER missing")?,
    )?;
    f.set(0, filter, 0)?;
    let kernel_btf = aya::Btf::from_sys_fs().context("reading the kernel's BTF")?;
    let prog: &mut BtfTracePoint = bpf
        .program_mut(names::prog::TP_XDP_DEVMAP_XMIT)
        .with_context(|| format!("program {} missing", names::prog::TP_XDP_DEVMAP_XMIT))?
        .try_into()?;
    prog.load("xdp_devmap_xmit", &kernel_btf)
        .context("loading tp_xdp_devmap_xmit")?;
    let link = prog.attach().context("attaching to xdp_devmap_xmit")?;
    let link = prog.take_link(link)?;
    // SAFETY: sysconf has no preconditions.
    let cpus = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as i32;
    let mut events = Vec::new();
    for (tp, prog_name, fields) in TRACEPOINTS {
        let dir = Path::new(TRACEFS).join("events/xdp").join(tp);
        let format = std::fs::read_to_string(dir.join("format"))
            .with_context(|| format!("reading {}/format", dir.display()))?;
        check_format(&format, fields).with_context(|| format!("xdp:{tp}"))?;
        let id: u64 = std::fs::read_to_string(dir.join("id"))?.trim().parse()?;
        let prog: &mut TracePoint = bpf
            .program_mut(prog_name)
            .with_context(|| format!("program {prog_name} missing"))?
            .try_into()?;
        prog.load()?;
        let prog_fd = prog.fd()?.as_fd().as_raw_fd();
        for cpu in 0..cpus {
            match perf_tracepoint(id, cpu, prog_fd) {
                Ok(fd) => events.push(fd),
                // an offline CPU runs nothing
                Err(e) if cpu > 0 => crate::log::debug(&format!("xdp:{tp} on CPU {cpu}: {e}")),
                Err(e) => return Err(e).with_context(|| format!("attaching to xdp:{tp}")),
            }
        }
    }
    Ok(XmitTrace {
        _events: events,
        _link: link,
    })
}

/// perf_event_open(2) of tracepoint `id` on `cpu` (every process), with
/// program `prog_fd` attached and the event enabled.
fn perf_tracepoint(id: u64, cpu: i32, prog_fd: i32) -> std::io::Result<OwnedFd> {
    // struct perf_event_attr (PERF_ATTR_SIZE_VER0 = 64): type 0,
    // size 4, config 8, sample_period 16, ..., wakeup_events 48
    let mut attr = [0u8; 64];
    attr[0..4].copy_from_slice(&2u32.to_ne_bytes()); // PERF_TYPE_TRACEPOINT
    attr[4..8].copy_from_slice(&64u32.to_ne_bytes());
    attr[8..16].copy_from_slice(&id.to_ne_bytes());
    attr[48..52].copy_from_slice(&1u32.to_ne_bytes());
    const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
    // SAFETY: perf_event_open with a zeroed attr of the version-0 size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr.as_ptr(),
            -1 as libc::c_int,
            cpu,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just returned by perf_event_open and is ours.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as i32) };
    const PERF_EVENT_IOC_SET_BPF: libc::c_ulong = 0x4004_2408;
    const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
    // SAFETY: ioctls on our perf event fd with a program fd / no argument.
    unsafe {
        if libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_SET_BPF, prog_fd) != 0
            || libc::ioctl(fd.as_raw_fd(), PERF_EVENT_IOC_ENABLE, 0) != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(fd)
}

/// Transmit drops by destination ifindex, summed over CPUs, from the
/// instance's pinned map.
pub fn errors_by_ifindex(pin_dir: &Path) -> Result<BTreeMap<u32, u64>> {
    let data = MapData::from_pin(pin_dir.join(names::map::XMIT_ERRORS))?;
    let map: PerCpuHashMap<_, u32, u64> =
        PerCpuHashMap::try_from(aya::maps::Map::PerCpuHashMap(data))?;
    let mut out = BTreeMap::new();
    for item in map.iter() {
        let (k, per_cpu) = item?;
        out.insert(k, per_cpu.iter().sum::<u64>());
    }
    // the copies of a PFC broadcast `xdp_devmap_pfc` drops on purpose are
    // among the tracepoint's flush drops: not transmit errors
    if let Ok(data) = MapData::from_pin(pin_dir.join(names::map::PFC_COPY_DROPS)) {
        let own: PerCpuHashMap<_, u32, u64> =
            PerCpuHashMap::try_from(aya::maps::Map::PerCpuHashMap(data))?;
        for item in own.iter() {
            let (k, per_cpu) = item?;
            if let Some(v) = out.get_mut(&k) {
                *v = v.saturating_sub(per_cpu.iter().sum::<u64>());
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    const FORMAT: &str = "name: xdp_redirect_err\nID: 1234\nformat:\n\
        \tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
        \tfield:int prog_id;\toffset:8;\tsize:4;\tsigned:1;\n\
        \tfield:u32 act;\toffset:12;\tsize:4;\tsigned:0;\n\
        \tfield:int ifindex;\toffset:16;\tsize:4;\tsigned:1;\n\
        \tfield:int err;\toffset:20;\tsize:4;\tsigned:1;\n\
        \tfield:int to_ifindex;\toffset:24;\tsize:4;\tsigned:1;\n\
        \tfield:u32 map_id;\toffset:28;\tsize:4;\tsigned:0;\n";

    #[test]
    fn the_format_is_checked() {
        let fields = super::TRACEPOINTS[0].2;
        super::check_format(FORMAT, fields).unwrap();
        let moved = FORMAT.replace("offset:24;", "offset:28;");
        let e = super::check_format(&moved, fields).unwrap_err().to_string();
        assert!(e.contains("to_ifindex") && e.contains("Some(28)"), "{e}");
        assert!(super::check_format("nothing", fields).is_err());
    }

    #[test]
    fn the_device_filter_names_this_namespace() {
        use std::os::unix::fs::MetadataExt;
        let Ok(btf) = super::Btf::kernel() else {
            eprintln!("no kernel BTF here: skipped");
            return;
        };
        let f = super::dev_filter(&btf).unwrap();
        let ns = std::fs::metadata("/proc/thread-self/ns/net").unwrap().ino();
        assert_eq!(u64::from(f.netns_inum), ns);
        assert!(
            f.ifindex_off > 0 && f.nd_net_off > 0 && f.ns_inum_off > 0,
            "{f:?}"
        );
        assert_ne!(f.ifindex_off, f.nd_net_off);
    }
}

/// Whether the device `ifindex` (in this namespace) accepts frames
/// redirected to it: its XDP features include NDO_XMIT (the kernel's own
/// check, which refuses the redirect with -EOPNOTSUPP otherwise), read over
/// the `netdev` generic netlink family. `None` when the kernel cannot say.
pub fn takes_redirects(ifindex: u32) -> Option<bool> {
    const NETDEV_XDP_ACT_NDO_XMIT: u64 = 4;
    Some(xdp_features(ifindex)? & NETDEV_XDP_ACT_NDO_XMIT != 0)
}

/// The XDP features (NETDEV_XDP_ACT_* bits) of device `ifindex` in this
/// namespace, from the `netdev` generic netlink family (kernel 6.3+);
/// `None` when the kernel cannot say.
pub fn xdp_features(ifindex: u32) -> Option<u64> {
    let sock = Genl::open()?;
    let family = sock.family_id("netdev")?;
    // NETDEV_CMD_DEV_GET (1) with NETDEV_A_DEV_IFINDEX (1)
    let reply = sock.request(family, 1, &[(1, ifindex.to_ne_bytes().to_vec())])?;
    // NETDEV_A_DEV_XDP_FEATURES (3), u64
    let f = attr(&reply, 3)?;
    Some(u64::from_ne_bytes(f.get(..8)?.try_into().ok()?))
}

/// A generic netlink socket (NETLINK_GENERIC), one request at a time.
struct Genl(OwnedFd);

impl Genl {
    fn open() -> Option<Genl> {
        // SAFETY: socket(2); the fd is owned at once.
        let fd = unsafe {
            libc::socket(
                libc::AF_NETLINK,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::NETLINK_GENERIC,
            )
        };
        if fd < 0 {
            return None;
        }
        // SAFETY: fd was just returned by socket(2).
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let tv = libc::timeval {
            tv_sec: 1,
            tv_usec: 0,
        };
        // SAFETY: a receive timeout on our socket.
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            )
        };
        Some(Genl(fd))
    }

    /// The id of a generic netlink family (CTRL_CMD_GETFAMILY).
    fn family_id(&self, name: &str) -> Option<u16> {
        let mut n = name.as_bytes().to_vec();
        n.push(0);
        // GENL_ID_CTRL 0x10, CTRL_CMD_GETFAMILY 3, CTRL_ATTR_FAMILY_NAME 2
        let reply = self.request(0x10, 3, &[(2, n)])?;
        // CTRL_ATTR_FAMILY_ID 1, u16
        let id = attr(&reply, 1)?;
        Some(u16::from_ne_bytes(id.get(..2)?.try_into().ok()?))
    }

    /// Sends `cmd` to `family` with `attrs`; returns the reply's attributes
    /// (after the 16-byte netlink and 4-byte genetlink headers).
    fn request(&self, family: u16, cmd: u8, attrs: &[(u16, Vec<u8>)]) -> Option<Vec<u8>> {
        let mut msg = vec![0u8; 20];
        for (t, v) in attrs {
            let len = 4 + v.len();
            msg.extend_from_slice(&(len as u16).to_ne_bytes());
            msg.extend_from_slice(&t.to_ne_bytes());
            msg.extend_from_slice(v);
            msg.resize(msg.len().next_multiple_of(4), 0);
        }
        let total = msg.len() as u32;
        msg[0..4].copy_from_slice(&total.to_ne_bytes());
        msg[4..6].copy_from_slice(&family.to_ne_bytes());
        msg[6..8].copy_from_slice(&1u16.to_ne_bytes()); // NLM_F_REQUEST
        msg[8..12].copy_from_slice(&1u32.to_ne_bytes()); // seq
        msg[16] = cmd;
        msg[17] = 1; // version
                     // SAFETY: send/recv on our socket with buffers of the given sizes;
                     // a zeroed sockaddr_nl addresses the kernel.
        unsafe {
            let mut to: libc::sockaddr_nl = std::mem::zeroed();
            to.nl_family = libc::AF_NETLINK as u16;
            let sent = libc::sendto(
                self.0.as_raw_fd(),
                msg.as_ptr().cast(),
                msg.len(),
                0,
                (&to as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            );
            if sent < 0 {
                return None;
            }
            let mut buf = vec![0u8; 16384];
            let n = libc::recv(self.0.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0);
            if n < 20 {
                return None;
            }
            buf.truncate(n as usize);
            // NLMSG_ERROR (2): the kernel refused (no such family/device)
            if u16::from_ne_bytes([buf[4], buf[5]]) == 2 {
                return None;
            }
            let len = (u32::from_ne_bytes(buf[0..4].try_into().ok()?) as usize).min(buf.len());
            Some(buf[20..len].to_vec())
        }
    }
}

/// The payload of attribute `kind` in a netlink attribute list.
fn attr(mut attrs: &[u8], kind: u16) -> Option<&[u8]> {
    while attrs.len() >= 4 {
        let len = usize::from(u16::from_ne_bytes([attrs[0], attrs[1]]));
        let t = u16::from_ne_bytes([attrs[2], attrs[3]]) & 0x3fff;
        if len < 4 || len > attrs.len() {
            return None;
        }
        if t == kind {
            return Some(&attrs[4..len]);
        }
        attrs = &attrs[len.next_multiple_of(4).min(attrs.len())..];
    }
    None
}

#[cfg(test)]
mod genl_tests {
    #[test]
    fn loopback_takes_no_redirects_and_a_missing_device_is_unknown() {
        // lo has no ndo_xdp_xmit; ifindex 1 is lo in every namespace
        if let Some(v) = super::takes_redirects(1) {
            assert!(!v);
        }
        assert_eq!(super::takes_redirects(0x7fff_fff0), None);
    }

    #[test]
    fn attributes_are_walked() {
        let a = [8u8, 0, 1, 0, 7, 0, 0, 0, 6, 0, 3, 0, 9, 9, 0, 0];
        assert_eq!(super::attr(&a, 3), Some(&[9u8, 9][..]));
        assert_eq!(super::attr(&a, 1), Some(&[7u8, 0, 0, 0][..]));
        assert_eq!(super::attr(&a, 2), None);
        assert_eq!(super::attr(&[200, 0, 1, 0], 1), None);
    }
}
