//! The PFC emission path's self-test, end to end, before `up` trusts it.
//!
//! A path the kernel accepts may still send nothing (issue 30: on Debian
//! 12's 6.1 the devmap program was accepted and no PFC frame left), so the
//! data plane's path is only used after it sent a frame here: in a network
//! namespace of its own (a thread that unshares, so nothing of the host's
//! is touched and everything goes when the thread ends) with two veth
//! pairs, a second, private copy of the eBPF object is loaded, written for
//! a two-port switch with `pfc_tx = "dataplane"`, its ingress PG put in
//! headroom, and `xdp_forward` attached to the first port in the same mode
//! as the switch's ports. One RoCEv2 frame sent into that port must bring
//! back, on the port's peer, the exact 802.1Qbb XOFF frame, within
//! [`WAIT`]. Each step that fails names the kernel feature it needed.
//!
//! Needs `ip` (iproute2) and `ethtool` for the veth pairs (the peers need
//! GRO on to take redirected frames).

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use aya::maps::{Array, MapData, PerCpuArray};
use aya::programs::{Xdp, XdpMode};
use dataplane_common::buffer::{LosslessCounters, TcRow};
use dataplane_common::build::{self, Ip, L2};
use dataplane_common::names;
use dataplane_common::wire::bth::{Bth, OP_WRITE_MIDDLE};

/// How long the frame may take to come back.
pub const WAIT: Duration = Duration::from_secs(2);

const MAC0: [u8; 6] = [0x02, 0, 0, 0, 0x5e, 0x00];

const CONFIG: &str = r#"
[switch]
name = "pfcselftest"

[buffer]
pool_size = 16777216
pfc_tx = "dataplane"

[[port]]
name = "st0"
mac = "02:00:00:00:5e:00"
pfc_enable = "3"

[[port]]
name = "st1"
mac = "02:00:00:00:5e:01"
pfc_enable = "3"

[[nexthop]]
name = "n"
port = "st1"
mac = "02:00:00:00:5f:01"

[[route]]
prefix = "198.18.1.0/24"
nexthop = "n"
"#;

/// The outcome: which step passed last, or why it failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub passed: bool,
    /// one line: what was sent and seen, or the failed step and its error
    pub detail: String,
}

/// Runs the self-test with `xdp_forward` attached in `mode` (in a thread
/// of its own, in a namespace of its own).
pub fn pfc_dataplane(mode: XdpMode) -> Outcome {
    in_own_netns(move || run(mode))
}

/// [`pfc_dataplane`], but a pass is remembered for this boot of the kernel
/// and this build of the eBPF object (a file under the run directory,
/// keyed by `/proc/sys/kernel/random/boot_id`, a hash of the object and
/// the mode): the same kernel and programs give the same result, and each
/// `up` would otherwise load the object a second time. Failures are not
/// remembered: they are tested again.
pub fn pfc_dataplane_once_per_boot(mode: XdpMode) -> Outcome {
    let key = cache_key(mode);
    if let Some(path) = &key {
        if let Ok(detail) = std::fs::read_to_string(path) {
            return Outcome {
                passed: true,
                detail: format!("{} (earlier in this boot)", detail.trim()),
            };
        }
    }
    let o = pfc_dataplane(mode);
    if let (true, Some(path)) = (o.passed, &key) {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(path, &o.detail);
    }
    o
}

fn cache_key(mode: XdpMode) -> Option<std::path::PathBuf> {
    use std::hash::{Hash, Hasher};
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let mut h = std::collections::hash_map::DefaultHasher::new();
    crate::object::EBPF_OBJECT.hash(&mut h);
    let m = match mode {
        XdpMode::Skb => "generic",
        _ => "native",
    };
    Some(
        std::path::Path::new(crate::sys::RUN_DIR)
            .join(".pfc-selftest")
            .join(format!("{}-{:016x}-{m}", boot.trim(), h.finish())),
    )
}

/// The controller's path (AF_PACKET, `lossless::pfc::PfcPort`): one XOFF
/// sent on a veth of its own must arrive on its peer, byte for byte.
pub fn pfc_controller() -> Outcome {
    in_own_netns(|| {
        veths(&["st0"])?;
        let tap = Tap::open("st0p")?;
        let port = crate::lossless::pfc::PfcPort::open("st0", MAC0)
            .context("opening the controller's PFC sender (AF_PACKET)")?;
        let t0 = Instant::now();
        port.xoff(1 << 3, 0xffff)
            .context("sending an XOFF (AF_PACKET)")?;
        let want = build::pfc_frame(MAC0, 1 << 3, [0, 0, 0, 0xffff, 0, 0, 0, 0]);
        match tap.wait_for(&want, WAIT)? {
            (true, _) => Ok(format!(
                "an XOFF sent with AF_PACKET on a veth arrived on its peer in {} us",
                t0.elapsed().as_micros()
            )),
            (false, others) => bail!(
                "the XOFF sent with AF_PACKET did not arrive on the veth's peer within {} ms (got {})",
                WAIT.as_millis(),
                if others.is_empty() { "nothing".into() } else { others.join(", ") }
            ),
        }
    })
}

/// Runs `f` in a thread that first moves into a new network namespace
/// (gone, with its veths, when the thread ends).
pub(crate) fn in_own_netns(f: impl FnOnce() -> Result<String> + Send + 'static) -> Outcome {
    let t = std::thread::Builder::new()
        .name("pfc-selftest".into())
        .spawn(move || {
            // SAFETY: unshare on this thread only; it ends with the thread.
            if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
                bail!(
                    "unshare(CLONE_NEWNET): {} (the self-test needs a namespace of its own)",
                    std::io::Error::last_os_error()
                );
            }
            f()
        });
    let r = match t {
        Ok(h) => h
            .join()
            .unwrap_or_else(|_| Err(anyhow!("the self-test thread panicked"))),
        Err(e) => Err(anyhow!("starting the self-test thread: {e}")),
    };
    match r {
        Ok(detail) => Outcome {
            passed: true,
            detail,
        },
        Err(e) => Outcome {
            passed: false,
            detail: format!("{e:#}"),
        },
    }
}

fn sh(args: &[&str]) -> Result<()> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .with_context(|| {
            format!(
                "running {} (needed for the self-test's veth pairs)",
                args[0]
            )
        })?;
    if !out.status.success() {
        bail!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// veth pairs `p`/`p`p, up, the peers with GRO on (NAPI: they take
/// redirected frames).
pub(crate) fn veths(names: &[&str]) -> Result<()> {
    for p in names {
        let peer = format!("{p}p");
        sh(&[
            "ip", "link", "add", p, "type", "veth", "peer", "name", &peer,
        ])?;
        sh(&["ip", "link", "set", p, "up"])?;
        sh(&["ip", "link", "set", &peer, "up"])?;
        sh(&["ethtool", "-K", &peer, "gro", "on"])?;
    }
    Ok(())
}

fn run(mode: XdpMode) -> Result<String> {
    veths(&["st0", "st1"])?;
    let mut bpf =
        crate::object::load_object().context("loading a private copy of the eBPF object")?;
    let (_, ix) = crate::tables::apply_config_text(&mut bpf, CONFIG, "pfc-selftest")?;
    crate::lossless::dp_pfc::enable_untested(&mut bpf, &ix)
        .context("devmap egress programs (xdp_devmap_pfc in PFC_BCAST and TX_PORTS)")?;
    {
        let mut rows: Array<&mut MapData, TcRow> = Array::try_from(
            bpf.map_mut(names::map::TC_ROWS)
                .ok_or_else(|| anyhow!("map TC_ROWS missing"))?,
        )?;
        let mut row = TcRow::ZERO;
        row.pg[0].headroom_used = 1000;
        rows.set(3, row, 0).context("TC_ROWS[3]")?;
    }
    let how = match mode {
        XdpMode::Skb => "generic",
        _ => "native",
    };
    {
        let prog: &mut Xdp = bpf
            .program_mut(names::prog::XDP_FORWARD)
            .ok_or_else(|| anyhow!("program xdp_forward missing"))?
            .try_into()?;
        prog.attach("st0", mode)
            .with_context(|| format!("attaching xdp_forward to a veth ({how} XDP)"))?;
    }
    let tap = Tap::open("st0p")?;
    let frame = build::rocev2_frame(
        &L2::new(MAC0, [2, 0, 0, 0, 0, 1]),
        &Ip::v4([198, 18, 0, 1], [198, 18, 1, 1]).dscp(3).ecn(2),
        49152,
        &Bth::request(OP_WRITE_MIDDLE, 0x11, 7),
        None,
        &[0; 64],
    );
    let want = build::pfc_frame(MAC0, 1 << 3, [0, 0, 0, 0xffff, 0, 0, 0, 0]);
    let t0 = Instant::now();
    crate::sys::packet_send(tap.fd(), tap.ifindex, &frame).context("sending the test frame")?;
    let (got, others) = tap.wait_for(&want, WAIT)?;
    let sent = counter(&bpf, |c| c.pfc_sent_dp);
    let fail = counter(&bpf, |c| c.pfc_send_fail);
    if got {
        Ok(format!(
            "one RoCEv2 frame into a veth with xdp_forward ({how}) brought the XOFF frame back in {} us",
            t0.elapsed().as_micros()
        ))
    } else {
        bail!(
            "no PFC frame left the port within {} ms of the XOFF decision ({how} XDP, devmap broadcast + \
             xdp_devmap_pfc): the data plane counted {sent} sent, {fail} failed; the port's peer got {}",
            WAIT.as_millis(),
            if others.is_empty() {
                "nothing".to_string()
            } else {
                others.join(", ")
            }
        )
    }
}

fn counter(bpf: &aya::Ebpf, f: impl Fn(&LosslessCounters) -> u64) -> u64 {
    let Some(m) = bpf.map(names::map::LOSSLESS_COUNTERS) else {
        return 0;
    };
    let Ok(c) = PerCpuArray::<&MapData, LosslessCounters>::try_from(m) else {
        return 0;
    };
    c.get(&0, 0).map(|v| v.iter().map(&f).sum()).unwrap_or(0)
}

/// An AF_PACKET socket on one interface, every EtherType.
pub(crate) struct Tap {
    fd: std::os::fd::OwnedFd,
    pub(crate) ifindex: i32,
}

impl Tap {
    pub(crate) fn open(ifname: &str) -> Result<Tap> {
        use std::os::fd::FromRawFd;
        let ifindex =
            crate::sys::ifindex(ifname).ok_or_else(|| anyhow!("no interface {ifname}"))? as i32;
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain syscalls with checked results; the fd is owned at once.
        unsafe {
            let fd = libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC | libc::SOCK_NONBLOCK,
                i32::from(proto),
            );
            if fd < 0 {
                bail!("AF_PACKET socket: {}", std::io::Error::last_os_error());
            }
            let fd = std::os::fd::OwnedFd::from_raw_fd(fd);
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_protocol = proto;
            sll.sll_ifindex = ifindex;
            if libc::bind(
                std::os::fd::AsRawFd::as_raw_fd(&fd),
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                std::mem::size_of::<libc::sockaddr_ll>() as u32,
            ) != 0
            {
                bail!(
                    "binding AF_PACKET to {ifname}: {}",
                    std::io::Error::last_os_error()
                );
            }
            Ok(Tap { fd, ifindex })
        }
    }

    pub(crate) fn fd(&self) -> i32 {
        std::os::fd::AsRawFd::as_raw_fd(&self.fd)
    }

    /// Whether a received (not outgoing) frame equal to `want` arrives
    /// within `wait`, and what else arrived (length and EtherType).
    pub(crate) fn wait_for(&self, want: &[u8], wait: Duration) -> Result<(bool, Vec<String>)> {
        let mut others = Vec::new();
        let deadline = Instant::now() + wait;
        let mut buf = [0u8; 2048];
        while Instant::now() < deadline {
            // SAFETY: recvfrom into a live buffer and a zeroed sockaddr_ll.
            let (n, pkttype) = unsafe {
                let mut sll: libc::sockaddr_ll = std::mem::zeroed();
                let mut len = std::mem::size_of::<libc::sockaddr_ll>() as u32;
                let n = libc::recvfrom(
                    self.fd(),
                    buf.as_mut_ptr() as *mut libc::c_void,
                    buf.len(),
                    0,
                    &mut sll as *mut libc::sockaddr_ll as *mut libc::sockaddr,
                    &mut len,
                );
                (n, sll.sll_pkttype)
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() != std::io::ErrorKind::WouldBlock {
                    bail!("receiving on the self-test's veth: {e}");
                }
                let mut pfd = libc::pollfd {
                    fd: self.fd(),
                    events: libc::POLLIN,
                    revents: 0,
                };
                // SAFETY: one live pollfd.
                unsafe { libc::poll(&mut pfd, 1, 10) };
                continue;
            }
            let f = &buf[..n as usize];
            if pkttype == libc::PACKET_OUTGOING {
                continue;
            }
            if f == want {
                return Ok((true, others));
            }
            others.push(match f.get(12..14) {
                Some(et) => format!(
                    "a {}-byte frame of EtherType {:02x}{:02x}",
                    f.len(),
                    et[0],
                    et[1]
                ),
                None => format!("a {}-byte frame", f.len()),
            });
        }
        Ok((false, others))
    }
}
