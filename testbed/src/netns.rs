//! Namespace and veth guards.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;

use anyhow::{bail, Context, Result};

/// Prefix of every namespace this project creates.
pub const PREFIX: &str = "dpt-";

/// Runs `ip <args>` and fails with its stderr.
pub fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("running ip (iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Runs a command inside a namespace (`ip netns exec`).
pub fn exec(ns: &str, cmd: &[&str]) -> Result<String> {
    let out = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(cmd)
        .output()
        .context("ip netns exec")?;
    if !out.status.success() {
        bail!(
            "in {ns}: {}: {}",
            cmd.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn pid_alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Removes namespaces left by runs whose process is gone.
pub fn cleanup_stale() {
    let Ok(out) = Command::new("ip").args(["netns", "list"]).output() else {
        return;
    };
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let name = line.split_whitespace().next().unwrap_or("");
        if let Some(rest) = name.strip_prefix(PREFIX) {
            let pid = rest.rsplit('-').next().and_then(|p| p.parse::<u32>().ok());
            if let Some(pid) = pid {
                if !pid_alive(pid) {
                    let _ = ip(&["netns", "del", name]);
                }
            }
        }
    }
}

/// A network namespace that exists while this guard lives.
#[derive(Debug)]
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// Creates `dpt-<tag>-<pid>` (after removing stale ones) with lo up.
    pub fn create(tag: &str) -> Result<Netns> {
        cleanup_stale();
        let name = format!("{PREFIX}{tag}-{}", std::process::id());
        if name.len() > 60 {
            bail!("namespace name {name} too long");
        }
        let _ = ip(&["netns", "del", &name]);
        ip(&["netns", "add", &name])?;
        let ns = Netns { name };
        ip(&["-n", &ns.name, "link", "set", "lo", "up"])?;
        Ok(ns)
    }

    /// Runs `ip -n <ns> <args>`.
    pub fn ip(&self, args: &[&str]) -> Result<()> {
        let mut a = vec!["-n", self.name.as_str()];
        a.extend_from_slice(args);
        ip(&a)
    }

    /// Runs a command inside.
    pub fn exec(&self, cmd: &[&str]) -> Result<String> {
        exec(&self.name, cmd)
    }

    /// Turns IPv6 off inside (existing and new interfaces): no
    /// autoconfiguration, router solicitations or MLD reports on ports whose
    /// traffic is counted.
    pub fn disable_ipv6(&self) -> Result<()> {
        self.exec(&[
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
            "net.ipv6.conf.default.disable_ipv6=1",
        ])?;
        Ok(())
    }

    /// Adds veth pairs `<name>` / `<name>-peer` inside this namespace, all
    /// up: ports for programs driven by BPF_PROG_RUN, whose peers nothing
    /// uses.
    pub fn add_ports(&self, names: &[&str]) -> Result<()> {
        for p in names {
            let peer = format!("{p}-peer");
            self.ip(&["link", "add", p, "type", "veth", "peer", "name", &peer])?;
            self.ip(&["link", "set", p, "up"])?;
            self.ip(&["link", "set", &peer, "up"])?;
        }
        Ok(())
    }

    /// Moves the calling thread into this namespace until the returned
    /// guard drops.
    pub fn enter(&self) -> Result<Entered> {
        let orig = File::open("/proc/thread-self/ns/net").context("opening own netns")?;
        let target =
            File::open(format!("/var/run/netns/{}", self.name)).context("opening target netns")?;
        // SAFETY: setns on fds we own.
        if unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
            bail!("setns {}: {}", self.name, std::io::Error::last_os_error());
        }
        Ok(Entered { orig })
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// The calling thread is in another namespace until this drops.
pub struct Entered {
    orig: File,
}

impl Drop for Entered {
    fn drop(&mut self) {
        // SAFETY: setns back to the namespace we came from.
        unsafe { libc::setns(self.orig.as_raw_fd(), libc::CLONE_NEWNET) };
    }
}

/// Creates a veth pair `a` (in `ns_a`) — `b` (in `ns_b`), both up, with the
/// given MACs, one queue each way (no reordering). GRO on both ends so
/// XDP_REDIRECT into them delivers.
pub fn veth(ns_a: &Netns, a: &str, mac_a: &str, ns_b: &Netns, b: &str, mac_b: &str) -> Result<()> {
    // one queue each way: with one per CPU (the default), a sender's
    // frames are spread over the peer's receive queues by the kernel's tx
    // queue pick and processed by different CPUs, which reorders a flow
    ns_a.ip(&[
        "link",
        "add",
        a,
        "numtxqueues",
        "1",
        "numrxqueues",
        "1",
        "address",
        mac_a,
        "type",
        "veth",
        "peer",
        "name",
        b,
        "numtxqueues",
        "1",
        "numrxqueues",
        "1",
        "address",
        mac_b,
        "netns",
        &ns_b.name,
    ])?;
    ns_a.ip(&["link", "set", a, "up"])?;
    ns_b.ip(&["link", "set", b, "up"])?;
    // best effort: not every kernel needs it for what a test does
    let _ = ns_a.exec(&["ethtool", "-K", a, "gro", "on"]);
    let _ = ns_b.exec(&["ethtool", "-K", b, "gro", "on"]);
    Ok(())
}
