//! Small system helpers: network namespaces, bpffs, interface indexes, the
//! instance lock.

use std::ffi::{CStr, CString};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Root of everything this project pins.
pub const PIN_ROOT: &str = "/sys/fs/bpf/dataplane";
/// Lock files, one per instance.
pub const RUN_DIR: &str = "/run/dataplane";
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;

/// Moves this process (its calling thread; call before spawning threads)
/// into the named network namespace (`ip netns` name). Unlike `ip netns
/// exec` this does not remount /sys, so the host's bpffs stays visible.
pub fn enter_netns(name: &str) -> Result<()> {
    let path = Path::new("/var/run/netns").join(name);
    let f = File::open(&path)
        .with_context(|| format!("--netns {name}: cannot open {}", path.display()))?;
    // SAFETY: plain syscall on an fd we own.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    if rc != 0 {
        bail!(
            "--netns {name}: setns failed: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Interface index of `name` in the current namespace.
pub fn ifindex(name: &str) -> Option<u32> {
    let c = CString::new(name).ok()?;
    // SAFETY: valid C string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    (i != 0).then_some(i)
}

/// MAC address of interface `name` in the current namespace (SIOCGIFHWADDR).
pub fn ifmac(name: &str) -> Option<[u8; 6]> {
    if name.len() >= libc::IF_NAMESIZE {
        return None;
    }
    // SAFETY: zeroed ifreq, name copied within IF_NAMESIZE, ioctl on our socket.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM, 0);
        if fd < 0 {
            return None;
        }
        let mut req: libc::ifreq = std::mem::zeroed();
        for (d, s) in req.ifr_name.iter_mut().zip(name.as_bytes()) {
            *d = *s as libc::c_char;
        }
        let rc = libc::ioctl(fd, libc::SIOCGIFHWADDR, &mut req);
        libc::close(fd);
        if rc != 0 {
            return None;
        }
        let sa = req.ifr_ifru.ifru_hwaddr.sa_data;
        Some([
            sa[0] as u8,
            sa[1] as u8,
            sa[2] as u8,
            sa[3] as u8,
            sa[4] as u8,
            sa[5] as u8,
        ])
    }
}

/// Sends one whole Ethernet frame out of interface `ifindex` on the
/// AF_PACKET socket `fd` (the PFC fallback sender and the LLDP agent).
pub fn packet_send(fd: std::os::fd::RawFd, ifindex: i32, frame: &[u8]) -> std::io::Result<()> {
    // SAFETY: zeroed sockaddr_ll filled in; sendto from a live buffer.
    let n = unsafe {
        let mut sll: libc::sockaddr_ll = std::mem::zeroed();
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_ifindex = ifindex;
        sll.sll_halen = 6;
        libc::sendto(
            fd,
            frame.as_ptr() as *const libc::c_void,
            frame.len(),
            0,
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as u32,
        )
    };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Interface name of `index` in the current namespace.
pub fn ifname(index: u32) -> Option<String> {
    let mut buf = [0 as libc::c_char; libc::IF_NAMESIZE];
    // SAFETY: buffer of IF_NAMESIZE bytes as the call requires.
    let p = unsafe { libc::if_indextoname(index, buf.as_mut_ptr()) };
    if p.is_null() {
        return None;
    }
    // SAFETY: if_indextoname wrote a NUL-terminated name.
    Some(
        unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// CLOCK_MONOTONIC in ns: the clock of bpf_ktime_get_ns.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in ns: the clock of the kernel's receive time stamps.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime into a local.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Is bpffs mounted on /sys/fs/bpf?
pub fn bpffs_mounted() -> bool {
    let target = CString::new("/sys/fs/bpf").unwrap();
    // SAFETY: statfs into a zeroed struct.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statfs(target.as_ptr(), &mut st) };
    rc == 0 && st.f_type as i64 == BPF_FS_MAGIC
}

/// Mounts bpffs on /sys/fs/bpf when it is not mounted (it is not at boot on
/// this machine kind).
pub fn ensure_bpffs() -> Result<()> {
    if bpffs_mounted() {
        return Ok(());
    }
    std::fs::create_dir_all("/sys/fs/bpf").ok();
    mount_fs("bpf", "/sys/fs/bpf").map_err(|e| {
        anyhow::anyhow!("bpffs is not mounted on /sys/fs/bpf and mounting it failed: {e}")
    })
}

/// Mounts a pseudo file system of type `fstype` (its source named alike)
/// on `dir`.
fn mount_fs(fstype: &str, dir: &str) -> std::io::Result<()> {
    let target = CString::new(dir)?;
    let fstype = CString::new(fstype)?;
    // SAFETY: plain mount syscall with valid C strings.
    let rc = unsafe {
        libc::mount(
            fstype.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Mounts tracefs on `dir` when its `events` are not there (tracepoints
/// are attached by their id under it).
pub fn ensure_tracefs(dir: &str) -> Result<()> {
    if Path::new(dir).join("events").exists() {
        return Ok(());
    }
    mount_fs("tracefs", dir)
        .map_err(|e| anyhow::anyhow!("tracefs is not mounted on {dir} and mounting it failed: {e}"))
}

/// Pin directory of an instance.
pub fn pin_dir(instance: &str) -> PathBuf {
    Path::new(PIN_ROOT).join(instance)
}

/// An instance's state directory (the baselines of `dataplane clear`,
/// the folded watermarks), as SONiC keeps its counter cache; created on
/// first use, removed by `down`.
pub fn state_dir(instance: &str) -> PathBuf {
    Path::new(RUN_DIR).join(instance)
}

/// Where `dataplane reload` leaves the path of the file to apply.
pub fn reload_request(instance: &str) -> PathBuf {
    Path::new(RUN_DIR).join(format!("{instance}.reload"))
}

/// Opens (creating) a file to `flock`.
pub fn lock_file(path: &Path) -> Result<File> {
    File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

/// An exclusive lock on an instance, held while a controller runs it.
pub struct InstanceLock {
    _file: File,
    pub path: PathBuf,
}

impl InstanceLock {
    pub fn acquire(instance: &str) -> Result<InstanceLock> {
        std::fs::create_dir_all(RUN_DIR).with_context(|| format!("creating {RUN_DIR}"))?;
        let path = Path::new(RUN_DIR).join(format!("{instance}.lock"));
        let f = lock_file(&path)?;
        // SAFETY: flock on an fd we own.
        let rc = unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if rc == 0 {
            // the holder's pid, for `dataplane reload`
            use std::io::Write;
            let _ = f.set_len(0);
            let _ = (&f).write_all(format!("{}\n", std::process::id()).as_bytes());
        }
        if rc != 0 {
            bail!(
                "instance {instance:?} is already run by another controller (lock {} is held); \
                 stop it first or use another [switch] name",
                path.display()
            );
        }
        Ok(InstanceLock { _file: f, path })
    }

    /// The pid of the controller holding an instance, or an error when none
    /// runs it.
    pub fn holder(instance: &str) -> Result<i32> {
        let path = Path::new(RUN_DIR).join(format!("{instance}.lock"));
        let f = File::open(&path).with_context(|| {
            format!(
                "no controller runs instance {instance:?} ({} missing)",
                path.display()
            )
        })?;
        // SAFETY: flock on an fd we own; a free lock means no controller.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            bail!("no controller runs instance {instance:?}");
        }
        let pid: i32 = std::fs::read_to_string(&path)?
            .trim()
            .parse()
            .with_context(|| format!("reading the pid in {}", path.display()))?;
        Ok(pid)
    }
}

/// What one BPF_PROG_TEST_RUN call returned.
#[derive(Clone, Copy, Debug)]
pub struct TestRunOut {
    /// The program's return value (for XDP, the action).
    pub retval: u32,
    /// Mean time of one repetition, ns, as the kernel measured it.
    pub duration_ns: u32,
}

/// BPF_PROG_TEST_RUN flag: XDP live frames (the program runs as in the
/// receive path, bottom halves off, and its verdicts take effect).
pub const TEST_RUN_XDP_LIVE_FRAMES: u32 = 1 << 1;

/// The BPF_PROG_TEST_RUN syscall on program `fd`: `data` as the packet,
/// `ctx` as the context (e.g. an `xdp_md` naming the ingress interface),
/// `repeat` runs, `flags` (e.g. [`TEST_RUN_XDP_LIVE_FRAMES`]). A raw syscall
/// on a plain fd, so threads of their own (the model's timer, a multi-CPU
/// stress) can run a program they only hold the fd of.
pub fn prog_test_run(
    fd: i32,
    data: &[u8],
    ctx: Option<&[u8]>,
    repeat: u32,
    flags: u32,
) -> std::io::Result<TestRunOut> {
    // union bpf_attr, the `test` member: prog_fd 0, retval 4, data_size_in
    // 8, data_size_out 12, data_in 16, data_out 24, repeat 32, duration 36,
    // ctx_size_in 40, ctx_size_out 44, ctx_in 48, ctx_out 56, flags 64,
    // cpu 68, batch_size 72
    let mut attr = [0u8; 128];
    attr[0..4].copy_from_slice(&(fd as u32).to_ne_bytes());
    attr[8..12].copy_from_slice(&(data.len() as u32).to_ne_bytes());
    attr[16..24].copy_from_slice(&(data.as_ptr() as u64).to_ne_bytes());
    attr[32..36].copy_from_slice(&repeat.to_ne_bytes());
    attr[64..68].copy_from_slice(&flags.to_ne_bytes());
    if let Some(c) = ctx {
        attr[40..44].copy_from_slice(&(c.len() as u32).to_ne_bytes());
        attr[48..56].copy_from_slice(&(c.as_ptr() as u64).to_ne_bytes());
    }
    const BPF_PROG_TEST_RUN: libc::c_long = 10;
    // SAFETY: bpf(2) with a zeroed attr of the documented layout; the data
    // and context pointers outlive the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_TEST_RUN,
            attr.as_mut_ptr(),
            attr.len() as u32,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let u32_at = |o: usize| u32::from_ne_bytes([attr[o], attr[o + 1], attr[o + 2], attr[o + 3]]);
    Ok(TestRunOut {
        retval: u32_at(4),
        duration_ns: u32_at(36),
    })
}

/// Pops the next element of a BPF queue/stack map `fd`
/// (BPF_MAP_LOOKUP_AND_DELETE_ELEM with no key), if any.
pub fn queue_pop(fd: i32) -> Option<[u8; 64]> {
    let mut value = [0u8; 64];
    let mut attr = [0u8; 32];
    attr[0..4].copy_from_slice(&(fd as u32).to_ne_bytes());
    attr[16..24].copy_from_slice(&(value.as_mut_ptr() as u64).to_ne_bytes());
    const BPF_MAP_LOOKUP_AND_DELETE_ELEM: libc::c_long = 21;
    // SAFETY: bpf(2) with an attr of the documented layout; the value
    // buffer is larger than any queue element of ours and outlives the call.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_MAP_LOOKUP_AND_DELETE_ELEM,
            attr.as_mut_ptr(),
            attr.len() as u32,
        )
    };
    (rc == 0).then_some(value)
}

/// Tells systemd (a `Type=notify` service) `state`, e.g. "READY=1"; does
/// nothing when not run by systemd (no NOTIFY_SOCKET).
pub fn sd_notify(state: &str) {
    let Some(socket) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let socket = socket.to_string_lossy().into_owned();
    if let Err(e) = notify_to(&socket, state) {
        crate::log::warn(&format!("telling systemd {state} on {socket}: {e}"));
    }
}

/// Sends `state` to the notification socket `socket` (a path, or an
/// abstract name after `@`), as sd_notify(3) does.
pub fn notify_to(socket: &str, state: &str) -> std::io::Result<()> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixDatagram};
    let addr = match socket.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes())?,
        None => SocketAddr::from_pathname(socket)?,
    };
    UnixDatagram::unbound()?.send_to_addr(state.as_bytes(), &addr)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn notifications_reach_path_and_abstract_sockets() {
        use std::os::linux::net::SocketAddrExt;
        use std::os::unix::net::{SocketAddr, UnixDatagram};
        let path = std::env::temp_dir().join(format!("dp-notify-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let rx = UnixDatagram::bind(&path).unwrap();
        super::notify_to(path.to_str().unwrap(), "READY=1").unwrap();
        let mut buf = [0u8; 64];
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"READY=1");
        std::fs::remove_file(&path).unwrap();
        let name = format!("dp-notify-{}", std::process::id());
        let rx = UnixDatagram::bind_addr(&SocketAddr::from_abstract_name(name.as_bytes()).unwrap())
            .unwrap();
        super::notify_to(&format!("@{name}"), "STOPPING=1").unwrap();
        let n = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"STOPPING=1");
        assert!(super::notify_to("/nonexistent/socket", "READY=1").is_err());
    }
}
