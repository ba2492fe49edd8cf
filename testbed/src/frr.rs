//! FRR (zebra + bgpd) in a switch namespace: the fabric's control plane
//! for `--routing bgp`. Each switch's daemons get their own path space (a
//! temporary directory with the config, pid files, the zserv socket and the
//! vty sockets; `-N` names them apart), run in the foreground as children of
//! this process (PR_SET_PDEATHSIG: they die with it) and are stopped when
//! the guard drops (SIGTERM, then SIGKILL), on success, error, panic and
//! Ctrl-C.
//!
//! The fabric (RFC 7938): eBGP, one ASN per leaf (65001 + i), one for the
//! spines (65000), BGP unnumbered on every leaf-spine link (IPv6 link-local
//! sessions carrying IPv4 and IPv6, RFC 5549 next hops), leaves advertising
//! their hosts' routes and own addresses.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::netns::Netns;
use crate::topo::{SwitchKind, SwitchNode, Topology};

pub const ZEBRA: &str = "/usr/lib/frr/zebra";
pub const BGPD: &str = "/usr/lib/frr/bgpd";
pub const VTYSH: &str = "/usr/bin/vtysh";

/// Why FRR cannot run here, or `None` when it can.
pub fn missing() -> Option<String> {
    for p in [ZEBRA, BGPD, VTYSH] {
        if !Path::new(p).exists() {
            return Some(format!(
                "FRR is not installed ({p} missing; `cargo xtask setup` installs the Debian package frr)"
            ));
        }
    }
    None
}

/// The ASN of a switch: spines share 65000, leaf i has 65001 + i.
pub fn asn(sw: &SwitchNode) -> u32 {
    match sw.kind {
        SwitchKind::Spine => 65000,
        SwitchKind::Leaf => 65001 + sw.index as u32,
    }
}

/// Does zebra install routes through kernel nexthop objects (its default)?
/// Off in the fabric (`DPT_FRR_NHG=1` turns it on): with FRR 8.4.4 on
/// Linux 6.18, after a leaf-spine link goes down and comes back, zebra's
/// RIB lists both spines again but the kernel's nexthop group keeps only
/// the surviving member (the data plane follows the kernel, so the member
/// never returns there either); routes with RTA_MULTIPATH converge.
pub fn nexthop_objects() -> bool {
    std::env::var("DPT_FRR_NHG").is_ok_and(|v| v == "1")
}

/// FRR's configuration of switch `sw` (frr.conf, both daemons).
pub fn config(topo: &Topology, sw: &SwitchNode, dir: &Path) -> String {
    let (s, l, _) = topo.dims();
    let ports: Vec<String> = match sw.kind {
        SwitchKind::Leaf => (0..s).map(|i| format!("s{i}")).collect(),
        SwitchKind::Spine => (0..l).map(|i| format!("l{i}")).collect(),
    };
    let rid = match sw.kind {
        SwitchKind::Spine => format!("198.18.255.{}", 1 + sw.index),
        SwitchKind::Leaf => format!("198.18.254.{}", 1 + sw.index),
    };
    let mut c = format!(
        "frr defaults datacenter\nhostname {}\nlog file {}/frr.log\nip forwarding\nipv6 forwarding\n{}!\n",
        sw.name,
        dir.display(),
        if nexthop_objects() { "" } else { "no zebra nexthop kernel enable\n" }
    );
    // router advertisements every second: an unnumbered session finds its
    // peer's link-local address again soon after a link comes back
    for p in &ports {
        c.push_str(&format!(
            "interface {p}\n ipv6 nd ra-interval 1\n no ipv6 nd suppress-ra\n!\n"
        ));
    }
    c.push_str(&format!(
        "router bgp {}\n bgp router-id {rid}\n no bgp ebgp-requires-policy\n bgp bestpath as-path multipath-relax\n timers bgp 1 3\n",
        asn(sw)
    ));
    for p in &ports {
        c.push_str(&format!(
            " neighbor {p} interface remote-as external\n neighbor {p} timers connect 1\n neighbor {p} advertisement-interval 0\n"
        ));
    }
    let redistribute = match sw.kind {
        SwitchKind::Leaf => "  redistribute connected\n  redistribute kernel\n",
        SwitchKind::Spine => "",
    };
    c.push_str(&format!(
        " address-family ipv4 unicast\n{redistribute}  maximum-paths 16\n exit-address-family\n address-family ipv6 unicast\n{redistribute}  maximum-paths 16\n"
    ));
    for p in &ports {
        c.push_str(&format!("  neighbor {p} activate\n"));
    }
    c.push_str(" exit-address-family\n!\n");
    c
}

/// zebra and bgpd of one switch.
pub struct Frr {
    pub name: String,
    pub dir: PathBuf,
    netns: String,
    children: Vec<Child>,
}

fn spawn(ns: &Netns, bin: &str, args: &[&str], log: &Path) -> Result<Child> {
    let out = std::fs::File::create(log)?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns.name, bin])
        .args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out);
    // SAFETY: prctl is async-signal-safe; the daemon dies with this process.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
            Ok(())
        })
    };
    cmd.spawn()
        .with_context(|| format!("starting {bin} in {}", ns.name))
}

impl Frr {
    /// Starts zebra, then bgpd, in `ns` with `config`.
    pub fn start(ns: &Netns, name: &str, config_text: &str) -> Result<Frr> {
        if let Some(why) = missing() {
            bail!("{why}");
        }
        let dir = std::env::temp_dir().join(format!("dpt-frr-{}-{}", ns.name, std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        // the daemons drop privileges to the frr user
        let _ = Command::new("chown")
            .args(["-R", "frr:frr"])
            .arg(&dir)
            .status();
        let conf = dir.join("frr.conf");
        std::fs::write(&conf, config_text)?;
        std::fs::write(dir.join("vtysh.conf"), "")?;
        let _ = Command::new("chown")
            .args(["-R", "frr:frr"])
            .arg(&dir)
            .status();
        let d = dir.display().to_string();
        let conf = conf.display().to_string();
        let zserv = format!("{d}/zserv.api");
        let mut frr = Frr {
            name: name.into(),
            dir: dir.clone(),
            netns: ns.name.clone(),
            children: Vec::new(),
        };
        let common = |pid: &str| -> Vec<String> {
            vec![
                "-N".into(),
                ns.name.clone(),
                "-f".into(),
                conf.clone(),
                "-i".into(),
                format!("{d}/{pid}.pid"),
                "-z".into(),
                zserv.clone(),
                "--vty_socket".into(),
                d.clone(),
            ]
        };
        let z = common("zebra");
        frr.children.push(spawn(
            ns,
            ZEBRA,
            &z.iter().map(String::as_str).collect::<Vec<_>>(),
            &dir.join("zebra.out"),
        )?);
        // bgpd connects to zebra's socket: wait for it
        let t0 = Instant::now();
        while !Path::new(&zserv).exists() {
            let limit = crate::slow::scaled(Duration::from_secs(10));
            if t0.elapsed() > limit {
                bail!(
                    "{name}: zebra did not open {zserv} within {limit:?}: {}",
                    std::fs::read_to_string(dir.join("zebra.out")).unwrap_or_default()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut b = common("bgpd");
        b.extend(["-p".into(), "179".into()]);
        frr.children.push(spawn(
            ns,
            BGPD,
            &b.iter().map(String::as_str).collect::<Vec<_>>(),
            &dir.join("bgpd.out"),
        )?);
        Ok(frr)
    }

    /// `vtysh -c <cmd>` against this switch's daemons.
    pub fn vtysh(&self, cmd: &str) -> Result<String> {
        let d = self.dir.display().to_string();
        let o = Command::new("ip")
            .args([
                "netns",
                "exec",
                &self.netns,
                VTYSH,
                "--vty_socket",
                &d,
                "--config_dir",
                &d,
                "-c",
                cmd,
            ])
            .output()
            .context("running vtysh")?;
        if !o.status.success() {
            bail!(
                "{}: vtysh -c {cmd:?}: {}",
                self.name,
                String::from_utf8_lossy(&o.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// BGP sessions in state Established (over all address families' peers).
    pub fn established(&self) -> Result<usize> {
        let v: serde_json::Value = serde_json::from_str(&self.vtysh("show bgp summary json")?)
            .context("show bgp summary json")?;
        let mut peers = std::collections::BTreeSet::new();
        for af in v.as_object().into_iter().flatten() {
            for (p, st) in af.1["peers"].as_object().into_iter().flatten() {
                if st["state"] == "Established" {
                    peers.insert(p.clone());
                }
            }
        }
        Ok(peers.len())
    }

    /// Are both daemons still running?
    pub fn alive(&mut self) -> bool {
        self.children
            .iter_mut()
            .all(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// Stops the daemons (SIGTERM, then SIGKILL after 2 s).
    pub fn stop(&mut self) {
        for c in self.children.iter().rev() {
            // SAFETY: signalling our own child.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
        }
        let t0 = Instant::now();
        for c in self.children.iter_mut().rev() {
            loop {
                match c.try_wait() {
                    Ok(Some(_)) | Err(_) => break,
                    Ok(None) if t0.elapsed() > crate::slow::scaled(Duration::from_secs(2)) => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break;
                    }
                    Ok(None) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        }
        self.children.clear();
    }
}

impl Drop for Frr {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Addresses and kernel routes of a BGP fabric: each leaf host port holds
/// the hosts' gateway (198.18.<leaf+1>.254/32, 2001:db8:0:<leaf+1>::ff/128)
/// and a route to its host; hosts have default routes to it.
pub fn address_fabric(topo: &Topology, switch_ns: &[Netns], host_ns: &[Netns]) -> Result<()> {
    let switches = topo.switches();
    for (hi, h) in topo.hosts().iter().enumerate() {
        let li = switches
            .iter()
            .position(|s| s.kind == SwitchKind::Leaf && s.index == h.leaf)
            .context("the host's leaf")?;
        let ns = &switch_ns[li];
        let port = format!("h{}", h.slot);
        let gw4 = format!("198.18.{}.254", h.leaf + 1);
        let gw6 = format!("2001:db8:0:{:x}::ff", h.leaf + 1);
        ns.ip(&["addr", "add", &format!("{gw4}/32"), "dev", &port])?;
        ns.ip(&[
            "-6",
            "addr",
            "add",
            &format!("{gw6}/128"),
            "dev",
            &port,
            "nodad",
        ])?;
        ns.ip(&[
            "route",
            "add",
            &format!("{}/32", crate::topo::ipv4_str(h.ipv4)),
            "dev",
            &port,
        ])?;
        ns.ip(&[
            "-6",
            "route",
            "add",
            &format!("{}/128", crate::topo::ipv6_str(h.ipv6)),
            "dev",
            &port,
        ])?;
        let hn = &host_ns[hi];
        // the host's kernel sends: checksums filled in by the kernel, not
        // left to a veth "offload" that an XDP redirect on the way loses
        hn.exec(&["ethtool", "-K", "eth0", "tx", "off"])?;
        hn.ip(&["route", "add", "default", "via", &gw4, "dev", "eth0"])?;
        hn.ip(&["-6", "route", "add", "default", "via", &gw6, "dev", "eth0"])?;
    }
    Ok(())
}

/// Stops the FRR daemons of runs that are gone (their directory's pid is
/// not alive): a run killed outright leaves them, as their privilege drop
/// clears the parent-death signal.
pub fn cleanup_stale() {
    let Ok(d) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for e in d.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("dpt-frr-") else {
            continue;
        };
        let Some(pid) = rest.rsplit('-').next().and_then(|p| p.parse::<i32>().ok()) else {
            continue;
        };
        // SAFETY: signal 0 only checks for existence.
        if unsafe { libc::kill(pid, 0) } == 0 {
            continue;
        }
        for daemon in ["bgpd", "zebra"] {
            if let Ok(p) = std::fs::read_to_string(e.path().join(format!("{daemon}.pid"))) {
                if let Ok(p) = p.trim().parse::<i32>() {
                    let comm =
                        std::fs::read_to_string(format!("/proc/{p}/comm")).unwrap_or_default();
                    if comm.trim() == daemon {
                        // SAFETY: a stale daemon of ours (pid file and name checked).
                        unsafe { libc::kill(p, libc::SIGKILL) };
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(e.path());
    }
}

/// Sends `n` UDP datagrams (one every `gap`) from host namespace `from`'s
/// kernel to `to_addr` port 9999, received by a socket in namespace `to`;
/// returns how many arrived. Traffic through the hosts' own IP stacks (ARP,
/// ND, default routes), as an application's would be.
pub fn udp_probe(
    from: &Netns,
    to: &Netns,
    to_addr: std::net::IpAddr,
    n: usize,
    gap: Duration,
) -> Result<usize> {
    use std::net::{SocketAddr, UdpSocket};
    let bind: SocketAddr = if to_addr.is_ipv4() {
        "0.0.0.0:9999"
    } else {
        "[::]:9999"
    }
    .parse()?;
    let rx = {
        let _in = to.enter()?;
        let s = UdpSocket::bind(bind).context("probe receiver")?;
        s.set_read_timeout(Some(Duration::from_millis(300)))?;
        s
    };
    let tx = {
        let _in = from.enter()?;
        UdpSocket::bind(if to_addr.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        })
        .context("probe sender")?
    };
    let dst = SocketAddr::new(to_addr, 9999);
    let counter = std::thread::spawn(move || {
        let mut got = 0;
        let mut buf = [0u8; 64];
        let mut idle = 0;
        while idle < 3 && got < n {
            match rx.recv(&mut buf) {
                Ok(_) => {
                    got += 1;
                    idle = 0;
                }
                Err(_) => idle += 1,
            }
        }
        got
    });
    for i in 0..n {
        // a send may fail while the neighbour resolves: that datagram is lost
        let _ = tx.send_to(format!("probe {i}").as_bytes(), dst);
        std::thread::sleep(gap);
    }
    counter
        .join()
        .map_err(|_| anyhow::anyhow!("probe receiver panicked"))
}
