//! The verdicts of `dataplane doctor`: each a pure function of what was
//! read from the machine (see `read`), so every rule is unit tested with
//! recorded inputs.

use dataplane_config::XdpAttach;

use super::{Check, Verdict};

/// What the eBPF programs use from the kernel, with the release that
/// brought it. The highest one is the minimum: below it the object does
/// not load. (No `bpf_spin_lock`: the buffer model's locks are BPF atomic
/// compare-and-exchange on plain array values, so the maps need no BTF
/// spin-lock fields.)
pub const KERNEL_NEEDS: [((u32, u32), &str); 6] = [
    ((5, 8), "devmap programs and BPF ring buffers"),
    (
        (5, 9),
        "XDP bpf_links (pinned: the data plane outlives the controller)",
    ),
    (
        (5, 12),
        "BPF atomics: compare-and-exchange, exchange (the buffer model's locks)",
    ),
    (
        (5, 14),
        "BPF_F_BROADCAST redirects (PFC frames sent by the data plane)",
    ),
    ((5, 17), "bpf_loop (the buffer model's tick)"),
    (
        (5, 18),
        "bpf_xdp_load_bytes (drop snapshots) and XDP live-frame test runs",
    ),
];

/// Not needed to run, but the XDP checks (here and `up`'s egress check)
/// read it.
pub const KERNEL_WANTS: ((u32, u32), &str) = (
    (6, 3),
    "XDP features over the netdev netlink family (native-XDP and XDP-transmit checks)",
);

/// NETDEV_XDP_ACT_* bits of a device's XDP features.
pub mod xdp_act {
    pub const BASIC: u64 = 1;
    pub const REDIRECT: u64 = 2;
    pub const NDO_XMIT: u64 = 4;
    pub const XSK_ZEROCOPY: u64 = 8;
    pub const HW_OFFLOAD: u64 = 16;
    pub const RX_SG: u64 = 32;
    pub const NDO_XMIT_SG: u64 = 64;
    pub const NAMES: [(u64, &str); 7] = [
        (BASIC, "basic"),
        (REDIRECT, "redirect"),
        (NDO_XMIT, "ndo-xmit"),
        (XSK_ZEROCOPY, "xsk-zerocopy"),
        (HW_OFFLOAD, "hw-offload"),
        (RX_SG, "rx-sg"),
        (NDO_XMIT_SG, "ndo-xmit-sg"),
    ];
}

/// The largest MTU at which a single-buffer XDP program (ours: not
/// `xdp.frags`) attaches natively to a veth on 4 KiB pages (measured on
/// 6.18: 3506 attaches, 3507 is refused with ERANGE): a page less the XDP
/// headroom (256) and `skb_shared_info` (320), less the Ethernet header
/// (14). NIC drivers have limits of the same kind.
pub const XDP_SINGLE_BUFFER_MTU: u32 = 3506;

/// A switch-wide check (no port).
pub(super) fn check(name: &str, verdict: Verdict, detail: String) -> Check {
    Check {
        name: name.into(),
        port: None,
        verdict,
        detail,
    }
}

/// `6.18.44-foo` -> (6, 18).
pub fn parse_release(release: &str) -> Option<(u32, u32)> {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// The kernel release against what the programs use.
pub fn kernel(release: &str) -> Check {
    let Some(v) = parse_release(release) else {
        return check(
            "kernel",
            Verdict::Warn,
            format!("cannot read a version from release {release:?}; the programs need 5.18+"),
        );
    };
    let missing: Vec<String> = KERNEL_NEEDS
        .iter()
        .filter(|(need, _)| v < *need)
        .map(|((a, b), what)| format!("{what} ({a}.{b})"))
        .collect();
    let min = KERNEL_NEEDS[KERNEL_NEEDS.len() - 1].0;
    if !missing.is_empty() {
        return check(
            "kernel",
            Verdict::Fail,
            format!(
                "{release}: the programs need {}.{}+; missing: {} (a distribution kernel may have them backported: `up` is the final word)",
                min.0,
                min.1,
                missing.join("; ")
            ),
        );
    }
    let ((a, b), what) = KERNEL_WANTS;
    if v < (a, b) {
        return check(
            "kernel",
            Verdict::Warn,
            format!("{release}: runs the programs (needs {}.{}+), but lacks {what} ({a}.{b}): native XDP and XDP transmit cannot be checked", min.0, min.1),
        );
    }
    check(
        "kernel",
        Verdict::Pass,
        format!(
            "{release}: has everything the programs use (needs {}.{}+: bpf_loop, bpf_xdp_load_bytes, BPF atomics, BPF_F_BROADCAST, devmap programs, XDP bpf_links; {a}.{b}+ for XDP features)",
            min.0, min.1
        ),
    )
}

/// Kernel BTF (/sys/kernel/btf/vmlinux).
pub fn btf(present: bool) -> Check {
    if present {
        check(
            "btf",
            Verdict::Pass,
            "/sys/kernel/btf/vmlinux present".into(),
        )
    } else {
        check(
            "btf",
            Verdict::Warn,
            "/sys/kernel/btf/vmlinux missing (CONFIG_DEBUG_INFO_BTF off): the loader cannot check the kernel's BPF types, bpftool cannot show typed maps; the programs use no CO-RE relocations".into(),
        )
    }
}

/// bpffs on /sys/fs/bpf.
pub fn bpffs(mounted: bool) -> Check {
    if mounted {
        check("bpffs", Verdict::Pass, "mounted on /sys/fs/bpf".into())
    } else {
        check(
            "bpffs",
            Verdict::Warn,
            "not mounted on /sys/fs/bpf: `up` mounts it, but mount it at boot (systemd does; fstab: `bpf /sys/fs/bpf bpf defaults 0 0`) so every tool sees the pins".into(),
        )
    }
}

/// Privileges of this process (the controller needs CAP_BPF,
/// CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_PERFMON, CAP_NET_RAW: root).
pub fn privileges(euid: u32) -> Check {
    if euid == 0 {
        check("privileges", Verdict::Pass, "running as root".into())
    } else {
        check(
            "privileges",
            Verdict::Warn,
            format!("running as uid {euid}: `up` needs root (BPF, network admin, perf events, raw sockets) and some checks here may read less"),
        )
    }
}

/// What is pinned for the instance and whether this build can adopt it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pinned {
    Nothing,
    /// Pinned; `controller`: the pid running it; `layout`: why this build
    /// cannot adopt it, if it cannot.
    DataPlane {
        controller: Option<i32>,
        layout: Result<(), String>,
    },
}

/// The instance's pinned data plane.
pub fn instance(name: &str, pinned: &Pinned) -> Check {
    let c = |v, d: String| check("instance", v, format!("{name}: {d}"));
    match pinned {
        Pinned::Nothing => c(Verdict::Pass, "no data plane pinned; `up` attaches a new one".into()),
        Pinned::DataPlane { layout: Err(e), .. } => c(
            Verdict::Fail,
            format!("a data plane is pinned that this build cannot adopt (a restart or `upgrade` would be refused): {e}"),
        ),
        Pinned::DataPlane { controller: Some(pid), .. } => c(
            Verdict::Pass,
            format!("pinned data plane run by controller {pid}; this build can adopt it (restart / `upgrade` is hitless)"),
        ),
        Pinned::DataPlane { controller: None, .. } => c(
            Verdict::Warn,
            "a pinned data plane forwards with no controller (no PFC timer, watchdog or route sync): start `up` (or the service) to adopt it".into(),
        ),
    }
}

/// What `doctor` wants of a port, from the config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortWant {
    pub name: String,
    pub xdp_mode: XdpAttach,
    /// Lossless priorities (bit i = priority i).
    pub pfc_enable: u8,
    /// `[buffer] mtu`, when the config has a `[buffer]`.
    pub mtu: Option<u32>,
}

/// A link as RTM_GETLINK reports it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinkRead {
    pub ifindex: u32,
    pub mtu: u32,
    pub admin_up: bool,
    /// IFF_LOWER_UP: carrier.
    pub lower_up: bool,
    /// rtnetlink's link kind (veth, bond, ...); `None` for a plain NIC.
    pub kind: Option<String>,
    pub num_rx_queues: u32,
    pub num_tx_queues: u32,
    /// Id of an XDP program attached now, if any.
    pub xdp_prog: Option<u32>,
    /// The instance has a pinned XDP link for this port (the attached
    /// program is its own).
    pub ours: bool,
}

/// ETHTOOL_GDRVINFO.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DriverRead {
    pub driver: String,
    pub version: String,
    pub firmware: String,
    pub bus: String,
}

/// ETHTOOL_GCHANNELS: queues in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Channels {
    pub rx: u32,
    pub tx: u32,
    pub combined: u32,
    pub max_combined: u32,
}

/// The IEEE 802.1Qaz PFC object of a device (struct ieee_pfc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IeeePfc {
    /// Traffic classes that can be PFC-enabled at once.
    pub cap: u8,
    pub enable: u8,
    pub mbc: u8,
    /// Round-trip allowance, bits.
    pub delay: u16,
}

/// The device's receive buffers (struct dcbnl_buffer).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DcbBuffer {
    pub prio2buffer: [u8; 8],
    pub size: [u32; 8],
    pub total: u32,
}

/// What DCB netlink (RTM_GETDCB, DCB_CMD_IEEE_GET) answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DcbRead {
    /// EOPNOTSUPP: the device has no DCB operations (veth, most virtual
    /// devices, NICs whose driver lacks DCB).
    NoOps,
    Error(String),
    Ieee {
        pfc: Option<IeeePfc>,
        buffer: Option<DcbBuffer>,
        /// DCB_CAP_DCBX_* mode bits.
        dcbx: Option<u8>,
    },
}

/// Everything read about one configured port; `link: None`: it does not
/// exist here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortRead {
    pub link: Option<LinkRead>,
    pub driver: Result<DriverRead, String>,
    pub xdp_features: Option<u64>,
    pub channels: Option<Channels>,
    pub dcb: DcbRead,
    /// Link-level (802.3x) pause: (rx, tx); `None` when the driver has
    /// none to report.
    pub pause: Option<(bool, bool)>,
}

/// The checks of one port.
pub fn port(want: &PortWant, read: &PortRead, cpus: u32) -> Vec<Check> {
    let Some(link) = &read.link else {
        return vec![Check::port(
            "exists",
            &want.name,
            Verdict::Fail,
            "no such interface in this network namespace".into(),
        )];
    };
    let mut out = vec![Check::port(
        "exists",
        &want.name,
        Verdict::Pass,
        format!(
            "ifindex {}{}",
            link.ifindex,
            link.kind
                .as_ref()
                .map(|k| format!(", {k}"))
                .unwrap_or_default()
        ),
    )];
    let mut add = |name: &str, (v, d): (Verdict, String)| {
        out.push(Check::port(name, &want.name, v, d));
    };
    add("driver", driver(&read.driver));
    add("xdp", xdp(read.xdp_features, want.xdp_mode, link));
    add("mtu", mtu(&want.name, link.mtu, want.mtu));
    add("link", link_state(link));
    add(
        "dcb",
        with_pause(
            dcb(&want.name, want.pfc_enable, &read.dcb),
            want.pfc_enable,
            read.pause,
        ),
    );
    add("queues", queues(&want.name, read.channels, link, cpus));
    out
}

fn driver(d: &Result<DriverRead, String>) -> (Verdict, String) {
    match d {
        Ok(d) => {
            let mut s = format!("{} {}", d.driver, d.version);
            for (k, v) in [("firmware", &d.firmware), ("bus", &d.bus)] {
                if !v.is_empty() && v != "N/A" {
                    s.push_str(&format!(", {k} {v}"));
                }
            }
            (Verdict::Pass, s.trim().to_string())
        }
        Err(e) => (
            Verdict::Warn,
            format!("driver unknown (ETHTOOL_GDRVINFO: {e})"),
        ),
    }
}

/// Names of the set NETDEV_XDP_ACT_* bits.
pub fn xdp_feature_names(f: u64) -> String {
    let v: Vec<&str> = xdp_act::NAMES
        .iter()
        .filter(|(b, _)| f & b != 0)
        .map(|(_, n)| *n)
        .collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(",")
    }
}

/// Native XDP: the device's XDP features against the attach mode, and the
/// MTU a single-buffer program can attach at.
pub fn xdp(features: Option<u64>, mode: XdpAttach, link: &LinkRead) -> (Verdict, String) {
    let attached = match (link.xdp_prog, link.ours) {
        (Some(id), true) => format!("; XDP program {id} attached now, through this instance's pinned link"),
        (Some(id), false) => {
            return (
                Verdict::Fail,
                format!("XDP program {id} is attached and is not this instance's (another instance or tool): `up` cannot attach (bpf_link_create: EEXIST, measured); detach it (`dataplane down --instance OTHER`, or `ip link set dev DEV xdp off`)"),
            )
        }
        (None, _) => String::new(),
    };
    let Some(f) = features else {
        return (
            Verdict::Warn,
            format!("the kernel does not report XDP features (netdev netlink family, 6.3+): `up` says which mode it attached in{attached}"),
        );
    };
    let names = xdp_feature_names(f);
    if mode == XdpAttach::Generic {
        return (
            Verdict::Pass,
            format!("xdp_mode = generic: native support not needed (features: {names}){attached}"),
        );
    }
    let native = f & xdp_act::BASIC != 0 && f & xdp_act::REDIRECT != 0;
    // in native mode this fails `up`; in auto mode it falls back to generic
    let refused = if mode == XdpAttach::Native {
        (Verdict::Fail, "xdp_mode = native cannot attach")
    } else {
        (Verdict::Warn, "xdp_mode = auto falls back to generic (skb) XDP, which runs after the kernel built an skb for each frame")
    };
    if !native {
        return (
            refused.0,
            format!(
                "no native XDP with redirect (features: {names}): {}{attached}",
                refused.1
            ),
        );
    }
    let mut problems = Vec::new();
    if link.mtu > XDP_SINGLE_BUFFER_MTU {
        problems.push((
            refused.0,
            format!("mtu {} is above {XDP_SINGLE_BUFFER_MTU}: the programs are single-buffer XDP (not xdp.frags) and drivers refuse those natively at such MTUs (veth: bpf_link_create fails with ERANGE above {XDP_SINGLE_BUFFER_MTU}, measured): {}", link.mtu, refused.1),
        ));
    }
    if f & xdp_act::NDO_XMIT == 0 {
        let fix = if link.kind.as_deref() == Some("veth") {
            "the veth's peer needs an XDP program or GRO (ethtool -K PEER gro on)"
        } else {
            "the driver needs XDP transmit queues (some enable them only while an XDP program is attached)"
        };
        problems.push((
            Verdict::Warn,
            format!("no XDP transmit now (ndo_xdp_xmit): frames redirected to this port and the data plane's PFC frames are lost and counted in tx_xdp_xmit_err; {fix}"),
        ));
    }
    match problems.iter().map(|p| p.0).max() {
        None => (
            Verdict::Pass,
            format!("native XDP with redirect and XDP transmit (features: {names}){attached}"),
        ),
        Some(v) => {
            let d: Vec<String> = problems.into_iter().map(|p| p.1).collect();
            (v, format!("{} (features: {names}){attached}", d.join("; ")))
        }
    }
}

/// The link's MTU against `[buffer] mtu`.
pub fn mtu(dev: &str, link: u32, want: Option<u32>) -> (Verdict, String) {
    match want {
        None => (
            Verdict::Pass,
            format!("mtu {link} (no [buffer] in the config: nothing to compare)"),
        ),
        Some(w) if link < w => (
            Verdict::Fail,
            format!("mtu {link} is below the config's [buffer] mtu {w}: frames of the fabric's size are dropped here (ip link set dev {dev} mtu {w}), and the headroom is sized for frames this port never takes"),
        ),
        Some(w) if link > w => (
            Verdict::Warn,
            format!("mtu {link} is above the config's [buffer] mtu {w}: the PFC headroom is sized for {w}-byte frames; larger ones in flight can overrun it (set [buffer] mtu = {link} or lower the link's)"),
        ),
        Some(w) => (Verdict::Pass, format!("mtu {link} = [buffer] mtu {w}")),
    }
}

fn link_state(l: &LinkRead) -> (Verdict, String) {
    match (l.admin_up, l.lower_up) {
        (true, true) => (Verdict::Pass, "up, carrier".into()),
        (false, _) => (
            Verdict::Warn,
            "administratively down (ip link set dev DEV up)".into(),
        ),
        (true, false) => (
            Verdict::Warn,
            "up but no carrier (cable, peer, or the peer's side is down)".into(),
        ),
    }
}

/// Priorities of a bit vector: `0x18` -> "3,4"; 0 -> "none".
pub fn prios(v: u8) -> String {
    let p: Vec<String> = (0..8)
        .filter(|i| v & (1 << i) != 0)
        .map(|i| i.to_string())
        .collect();
    if p.is_empty() {
        "none".into()
    } else {
        p.join(",")
    }
}

/// The NIC's own PFC (IEEE 802.1Qaz) against the config's lossless
/// priorities.
pub fn dcb(dev: &str, want: u8, read: &DcbRead) -> (Verdict, String) {
    let want_s = prios(want);
    let (pfc, buffer, dcbx) = match read {
        DcbRead::NoOps if want == 0 => {
            return (
                Verdict::Pass,
                "the device has no DCB interface; the config has no lossless priority here".into(),
            )
        }
        DcbRead::NoOps => {
            return (
                Verdict::Warn,
                format!("the device has no DCB interface (veths and most virtual devices have none): the NIC itself neither pauses nor sends PFC; lossless priorities {want_s} rely on the data plane alone"),
            )
        }
        DcbRead::Error(e) => return (Verdict::Warn, format!("cannot read DCB: {e}")),
        DcbRead::Ieee { pfc, buffer, dcbx } => (pfc, buffer, dcbx),
    };
    let Some(p) = pfc else {
        return (
            Verdict::Warn,
            format!("the device has DCB but reports no IEEE PFC object (a CEE-only driver?): check its PFC by the vendor's tool against lossless priorities {want_s}"),
        );
    };
    let mut notes = vec![format!(
        "cap {}, mbc {}, delay {} bits{}",
        p.cap,
        p.mbc,
        p.delay,
        dcbx.map(|d| format!(", dcbx 0x{d:02x}"))
            .unwrap_or_default()
    )];
    if let Some(b) = buffer {
        notes.push(format!(
            "prio2buffer {:?}, buffers {:?} of {} bytes",
            b.prio2buffer, b.size, b.total
        ));
    }
    let mut problems = Vec::new();
    if p.enable != want {
        problems.push(format!(
            "the NIC has PFC on priorities {} but the config's lossless priorities are {want_s} (dcb pfc set dev {dev} prio-pfc all:off{}, or by lldptool / the vendor's tool)",
            prios(p.enable),
            (0..8)
                .filter(|i| want & (1 << i) != 0)
                .map(|i| format!(" {i}:on"))
                .collect::<String>()
        ));
    }
    if u32::from(p.cap) < want.count_ones() {
        problems.push(format!(
            "the NIC can enable PFC on {} classes at once, the config has {} lossless priorities",
            p.cap,
            want.count_ones()
        ));
    }
    if let Some(b) = buffer {
        problems.extend(shared_buffers(want, b));
    }
    if problems.is_empty() {
        (
            Verdict::Pass,
            format!(
                "NIC PFC on priorities {} = config ({})",
                prios(p.enable),
                notes.join("; ")
            ),
        )
    } else {
        (
            Verdict::Warn,
            format!("{} ({})", problems.join("; "), notes.join("; ")),
        )
    }
}

/// Link-level pause on a port with lossless priorities: a NIC does either
/// 802.3x pause or PFC, and pause stops every priority.
fn with_pause(
    (v, d): (Verdict, String),
    want: u8,
    pause: Option<(bool, bool)>,
) -> (Verdict, String) {
    match pause {
        Some((rx, tx)) if want != 0 && (rx || tx) => (
            v.max(Verdict::Warn),
            format!("link-level pause is on (rx {}, tx {}): it pauses every priority and NICs do not run it with PFC (ethtool -A DEV rx off tx off); {d}", onoff(rx), onoff(tx)),
        ),
        _ => (v, d),
    }
}

fn onoff(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// Lossless priorities sharing a NIC receive buffer with lossy ones: a
/// lossy burst can fill the buffer whose fill level triggers PFC.
fn shared_buffers(want: u8, b: &DcbBuffer) -> Option<String> {
    let mut out = Vec::new();
    for lossless in (0..8).filter(|i| want & (1 << i) != 0) {
        let buf = b.prio2buffer[lossless];
        let lossy: Vec<String> = (0..8)
            .filter(|i| want & (1 << i) == 0 && b.prio2buffer[*i] == buf)
            .map(|i| i.to_string())
            .collect();
        if !lossy.is_empty() {
            out.push(format!(
                "lossless priority {lossless} shares NIC buffer {buf} with lossy priorities {}",
                lossy.join(",")
            ));
        }
    }
    (!out.is_empty()).then(|| {
        format!(
            "{} (give lossless priorities a buffer of their own: dcb buffer set dev DEV prio-buffer ...)",
            out.join(", ")
        )
    })
}

/// Queues in use against the CPUs that run XDP.
pub fn queues(dev: &str, ch: Option<Channels>, link: &LinkRead, cpus: u32) -> (Verdict, String) {
    let fix = match ch {
        Some(c) if c.max_combined == 0 => format!("ethtool -L {dev} rx {cpus} tx {cpus}"),
        _ => format!("ethtool -L {dev} combined {cpus}"),
    };
    let (rx, tx, src) = match ch {
        Some(c) => (c.rx + c.combined, c.tx + c.combined, "ethtool channels"),
        None => (
            link.num_rx_queues,
            link.num_tx_queues,
            "rtnetlink: queues allocated, the driver reports no channels",
        ),
    };
    let mut problems = Vec::new();
    if rx < cpus {
        problems.push(format!(
            "{rx} receive queue(s) for {cpus} CPUs: XDP runs on at most {rx} of them ({fix})"
        ));
    }
    if tx < cpus {
        problems.push(format!(
            "{tx} transmit queue(s) for {cpus} CPUs: CPUs share XDP transmit queues (a lock per frame; some drivers refuse XDP)"
        ));
    }
    if problems.is_empty() {
        (
            Verdict::Pass,
            format!("rx {rx}, tx {tx} queues for {cpus} CPUs ({src})"),
        )
    } else {
        (Verdict::Warn, format!("{} ({src})", problems.join("; ")))
    }
}

/// A config that does not validate.
pub fn config(path: &str, result: Result<usize, String>) -> Check {
    match result {
        Ok(n) => check(
            "config",
            Verdict::Pass,
            format!("{path}: valid, {n} port(s)"),
        ),
        Err(e) => check("config", Verdict::Fail, e),
    }
}

#[cfg(test)]
#[path = "checks_tests.rs"]
mod tests;
