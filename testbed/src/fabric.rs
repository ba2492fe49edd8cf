//! Builds a [`Topology`] on this machine: one namespace per switch, per
//! host and per sink, veth links, host addresses, one `dataplane` controller per switch
//! with the config [`Topology::switch_config`] generates; and samples the
//! switches' buffer model while scenarios run.
//!
//! Teardown: the controllers are [`Controller`] guards (SIGTERM, then
//! `dataplane down`) and the namespaces [`Netns`] guards, dropped in that
//! order on success, error and panic. Ctrl-C: the binaries install
//! [`install_interrupt_handler`], the runners check [`interrupted`] and
//! return an error, so the same destructors run; a run killed outright
//! leaves namespaces that the next [`Fabric::build`] removes (their
//! creator's pid is gone), and its controllers stop with it
//! (PR_SET_PDEATHSIG).

use dataplane_common::names;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use dataplane_common::buffer::TcRow;
use dataplane_common::lossless::EgressQueue;

use crate::controller::{stats_json, Controller};
use crate::netns::{cleanup_stale, veth, Netns};
use crate::topo::{ipv4_str, ipv6_str, mac_str, SwitchNode, Topology, ROCE_TC};
use aya::maps::{Array, MapData};
use dataplane_user::telemetry::counters::open_pinned;

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_interrupt(_: i32) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// SIGINT and SIGTERM set a flag instead of killing the process, so every
/// guard's destructor runs (runners poll [`interrupted`]).
pub fn install_interrupt_handler() {
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_interrupt as *const () as usize);
        libc::signal(libc::SIGTERM, on_interrupt as *const () as usize);
    }
}

/// A lab binary's `main`: installs [`install_interrupt_handler`], runs
/// `body`, and on an error prints it with its causes on one line and exits
/// with status 1 (the namespaces' guards have dropped by then).
pub fn run_main(body: impl FnOnce() -> Result<()>) {
    install_interrupt_handler();
    if let Err(e) = body() {
        eprintln!("error: {e:#}");
        std::process::exit(1);
    }
}

pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// The flag the handler sets, for runners that poll it themselves.
pub fn interrupt_flag() -> &'static AtomicBool {
    &INTERRUPTED
}

/// Fails once Ctrl-C (or SIGTERM) arrived.
pub fn check_interrupt() -> Result<()> {
    if interrupted() {
        bail!("interrupted: tearing down");
    }
    Ok(())
}

/// Fails unless running as root (namespaces, XDP).
pub fn require_root() -> Result<()> {
    // SAFETY: no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        bail!("not root: building a fabric creates network namespaces and loads eBPF programs; run as root (sudo)");
    }
    Ok(())
}

/// Removes the pinned data planes of fabric switches whose run is gone: an
/// instance named like this module names them (`<tag>leaf<i>-<pid>`,
/// `<tag>spine<i>-<pid>`, `<tag>sw-<pid>`) whose pid is not alive. (A
/// killed run's controllers stop without detaching, as `dataplane` does on
/// SIGTERM; their links went with the namespaces, their pins stay until
/// this.) Returns the instances removed.
pub fn cleanup_stale_pins() -> Vec<String> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir(dataplane_user::sys::PIN_ROOT) else {
        return out;
    };
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = fabric_instance_pid(&name) else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() && std::fs::remove_dir_all(e.path()).is_ok()
        {
            out.push(name);
        }
    }
    out
}

/// The pid in an instance name this module makes (`<tag>leaf<i>-<pid>`,
/// `<tag>spine<i>-<pid>`, `<tag>sw-<pid>`, a tag of 1 to 12 letters or
/// digits); `None` for any other name.
pub fn fabric_instance_pid(name: &str) -> Option<u32> {
    let (node, pid) = name.rsplit_once('-')?;
    let pid = pid.parse::<u32>().ok()?;
    let tag_len = if let Some(t) = node.strip_suffix("sw") {
        t.len()
    } else {
        let i = ["leaf", "spine"]
            .iter()
            .filter_map(|k| {
                node.rfind(k)
                    .filter(|&i| node[i + k.len()..].parse::<u32>().is_ok())
            })
            .next()?;
        i
    };
    ((1..=12).contains(&tag_len) && node[..tag_len].chars().all(|c| c.is_ascii_alphanumeric()))
        .then_some(pid)
}

#[cfg(test)]
mod tests {
    use super::fabric_instance_pid;

    #[test]
    fn only_fabric_instance_names_are_taken_for_stale() {
        assert_eq!(fabric_instance_pid("fableaf0-123"), Some(123));
        assert_eq!(fabric_instance_pid("demospine1-77"), Some(77));
        assert_eq!(fabric_instance_pid("tstarsw-9"), Some(9));
        // names of any other shape are left alone
        for n in [
            "leaf0-123",
            "sw-1",
            "myswitch",
            "edge-leaf",
            "fableaf-12",
            "fab_leaf0-1",
            "fableaf0-x",
            "averyveryverylongtagleaf0-1",
        ] {
            assert_eq!(fabric_instance_pid(n), None, "{n}");
        }
    }
}

/// A running switch.
pub struct SwitchRun {
    pub node: SwitchNode,
    pub instance: String,
    /// (port name, port id) as the data plane numbers them.
    pub ports: Vec<(String, u16)>,
}

/// A fabric that exists while this value lives.
pub struct Fabric {
    pub topo: Topology,
    // Field order is drop order: controllers detach before their
    // namespaces go.
    controllers: Vec<Controller>,
    /// FRR of every switch (`Routing::Bgp`), in switch order.
    pub frr: Vec<crate::frr::Frr>,
    pub switches: Vec<SwitchRun>,
    switch_ns: Vec<Netns>,
    host_ns: Vec<Netns>,
    sink_ns: Vec<Netns>,
    bin: PathBuf,
    tag: String,
}

impl Fabric {
    /// Checks everything that can be checked first (root, topology, the
    /// controller binary), then builds. `tag` keeps namespace names apart
    /// (`dpt-<tag><node>-<pid>`); it must be short.
    pub fn build(topo: Topology, bin: &Path, tag: &str) -> Result<Fabric> {
        topo.check()?;
        require_root()?;
        let bin = bin
            .canonicalize()
            .with_context(|| format!("the dataplane controller binary {}", bin.display()))?;
        if tag.is_empty() || tag.len() > 12 || !tag.chars().all(|c| c.is_ascii_alphanumeric()) {
            bail!("tag {tag:?}: expected 1 to 12 letters or digits");
        }
        let bgp = topo.routing == crate::topo::Routing::Bgp;
        if bgp {
            if let Some(why) = crate::frr::missing() {
                bail!("--routing bgp: {why}");
            }
        }
        cleanup_stale();
        cleanup_stale_pins();
        crate::frr::cleanup_stale();
        let switches = topo.switches();
        let hosts = topo.hosts();
        let mut switch_ns = Vec::new();
        for s in &switches {
            let ns = Netns::create(&format!("{tag}{}", s.name))?;
            if bgp {
                // a router: BGP unnumbered runs over IPv6 link-local
                ns.exec(&[
                    "sysctl",
                    "-qw",
                    "net.ipv4.ip_forward=1",
                    "net.ipv6.conf.all.forwarding=1",
                    "net.ipv4.conf.all.proxy_arp=1",
                    "net.ipv4.conf.default.proxy_arp=1",
                ])?;
            } else {
                // the switch's kernel stays quiet: no IPv6 autoconfiguration,
                // router solicitations or MLD reports on its ports
                ns.disable_ipv6()?;
            }
            switch_ns.push(ns);
        }
        let mut host_ns = Vec::new();
        for h in &hosts {
            let ns = Netns::create(&format!("{tag}{}", h.name))?;
            if topo.hosts_addressed() {
                ns.exec(&[
                    "sysctl",
                    "-qw",
                    "net.ipv6.conf.default.accept_ra=0",
                    "net.ipv6.conf.default.router_solicitations=0",
                ])?;
            } else {
                ns.disable_ipv6()?;
            }
            host_ns.push(ns);
        }
        let sinks = topo.sinks();
        let mut sink_ns = Vec::new();
        for k in &sinks {
            let ns = Netns::create(&format!("{tag}{}", k.name))?;
            ns.disable_ipv6()?;
            sink_ns.push(ns);
        }
        let ns_of = |node: &str| -> &Netns {
            if let Some(i) = switches.iter().position(|s| s.name == node) {
                &switch_ns[i]
            } else if let Some(i) = sinks.iter().position(|k| k.name == node) {
                &sink_ns[i]
            } else {
                &host_ns[hosts
                    .iter()
                    .position(|h| h.name == node)
                    .expect("a node of the topology")]
            }
        };
        for l in topo.links() {
            veth(
                ns_of(&l.a_node),
                &l.a_if,
                &mac_str(l.a_mac),
                ns_of(&l.b_node),
                &l.b_if,
                &mac_str(l.b_mac),
            )?;
        }
        for (k, ns) in sinks.iter().zip(&sink_ns) {
            for i in &k.ifs {
                // veth() asks for GRO best effort; a sink runs no XDP
                // program, and without GRO the frames the switch redirects
                // into its veth vanish: insist.
                ns.exec(&["ethtool", "-K", i, "gro", "on"])
                    .with_context(|| format!("GRO on {i} (XDP_REDIRECT into a veth needs it)"))?;
            }
        }
        for (h, ns) in hosts.iter().zip(&host_ns) {
            if !topo.hosts_addressed() {
                continue;
            }
            ns.ip(&[
                "addr",
                "add",
                &format!("{}/24", ipv4_str(h.ipv4)),
                "dev",
                "eth0",
            ])?;
            ns.ip(&[
                "-6",
                "addr",
                "add",
                &format!("{}/64", ipv6_str(h.ipv6)),
                "dev",
                "eth0",
                "nodad",
            ])?;
        }
        if bgp {
            crate::frr::address_fabric(&topo, &switch_ns, &host_ns)?;
        }
        let mut fabric = Fabric {
            topo: topo.clone(),
            controllers: Vec::new(),
            frr: Vec::new(),
            switches: Vec::new(),
            switch_ns,
            host_ns,
            sink_ns,
            bin: bin.clone(),
            tag: tag.into(),
        };
        if bgp {
            for (i, s) in switches.iter().enumerate() {
                check_interrupt()?;
                let dir = std::env::temp_dir();
                let text = crate::frr::config(
                    &topo,
                    s,
                    &dir.join(format!(
                        "dpt-frr-{}-{}",
                        fabric.switch_ns[i].name,
                        std::process::id()
                    )),
                );
                fabric.frr.push(crate::frr::Frr::start(
                    &fabric.switch_ns[i],
                    &s.name,
                    &text,
                )?);
            }
        }
        for (i, s) in switches.iter().enumerate() {
            check_interrupt()?;
            let instance = fabric.instance(s);
            let text = topo.switch_config(s, &instance);
            let ctl = Controller::start(&bin, &fabric.switch_ns[i], &instance, &text, &s.name)?;
            fabric.controllers.push(ctl);
            let st = stats_json(&bin, &fabric.switch_ns[i].name, &instance)?;
            let ports = st["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    (
                        p["name"].as_str().unwrap_or("").to_string(),
                        p["port_id"].as_u64().unwrap_or(0) as u16,
                    )
                })
                .collect();
            fabric.switches.push(SwitchRun {
                node: s.clone(),
                instance,
                ports,
            });
        }
        Ok(fabric)
    }

    fn instance(&self, s: &SwitchNode) -> String {
        format!("{}{}-{}", self.tag, s.name, std::process::id())
    }

    pub fn bin(&self) -> &Path {
        &self.bin
    }

    /// The namespace of host `i` (in [`Topology::hosts`] order).
    pub fn host_ns(&self, i: usize) -> &Netns {
        &self.host_ns[i]
    }

    pub fn switch_ns(&self, i: usize) -> &Netns {
        &self.switch_ns[i]
    }

    /// The namespace of sink `i` (in [`Topology::sinks`] order).
    pub fn sink_ns(&self, i: usize) -> &Netns {
        &self.sink_ns[i]
    }

    /// Prints what switch `i`'s controller logged since the last call
    /// (prefixed with `label`), and returns it.
    pub fn drain_log(&self, i: usize, label: &str) -> Vec<String> {
        self.controllers[i].drain(label)
    }

    /// `stats --json` of every switch, in [`Topology::switches`] order.
    pub fn stats(&self) -> Result<Vec<serde_json::Value>> {
        self.switches
            .iter()
            .zip(&self.switch_ns)
            .map(|(s, ns)| stats_json(&self.bin, &ns.name, &s.instance))
            .collect()
    }

    /// Per switch, then per host, per interface: frames the kernel dropped
    /// (`ip -s link` rx + tx dropped): on a veth, XDP_REDIRECT frames the
    /// peer's ring had no room for, which the data plane's counters cannot
    /// see.
    pub fn kernel_drops(&self) -> Result<Vec<Vec<(String, u64)>>> {
        let mut out = Vec::new();
        for ns in self.switch_ns.iter().chain(&self.host_ns) {
            let text = ns.exec(&["ip", "-s", "-j", "link"])?;
            let v: serde_json::Value =
                serde_json::from_str(&text).context("parsing ip -s -j link")?;
            out.push(
                v.as_array()
                    .into_iter()
                    .flatten()
                    .map(|l| {
                        (
                            format!("{}:{}", ns.name, l["ifname"].as_str().unwrap_or("")),
                            l["stats64"]["tx"]["dropped"].as_u64().unwrap_or(0)
                                + l["stats64"]["rx"]["dropped"].as_u64().unwrap_or(0),
                        )
                    })
                    .collect(),
            );
        }
        Ok(out)
    }

    /// Regenerates every switch's config from `self.topo` (after a change
    /// such as the LB mode or the flowlet timeout) and applies it with
    /// `dataplane reload`: only changed entries are written, no frame path
    /// is interrupted.
    pub fn reload(&mut self) -> Result<()> {
        self.topo.check()?;
        for (i, s) in self.switches.iter().enumerate() {
            let text = self.topo.switch_config(&s.node, &s.instance);
            let path = std::env::temp_dir().join(format!("{}-reload.toml", s.instance));
            std::fs::write(&path, &text)?;
            let out = std::process::Command::new(&self.bin)
                .args(["--netns", &self.switch_ns[i].name, "reload", "-c"])
                .arg(&path)
                .output()
                .context("running dataplane reload")?;
            if !out.status.success() {
                bail!(
                    "dataplane reload on {}: {}",
                    s.node.name,
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            let line =
                self.controllers[i].wait_for("reload:", Duration::from_secs(10), &s.node.name);
            let _ = std::fs::remove_file(&path);
            match line {
                Some(l) if l.contains("applied") => {}
                Some(l) => bail!("{}: {l}", s.node.name),
                None => bail!(
                    "{}: the controller did not answer the reload within 10 s",
                    s.node.name
                ),
            }
        }
        Ok(())
    }

    /// Starts sampling every switch port's RoCE queue, ingress PG and PFC
    /// state every `period`.
    pub fn sampler(&self, period: Duration) -> Result<Sampler> {
        let mut maps = Vec::new();
        for s in &self.switches {
            let q: Array<MapData, EgressQueue> =
                Array::try_from(open_pinned(&s.instance, names::map::QUEUES)?)?;
            let r: Array<MapData, TcRow> =
                Array::try_from(open_pinned(&s.instance, names::map::TC_ROWS)?)?;
            maps.push((q, r, s.ports.clone()));
        }
        let stop = Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        let t0 = Instant::now();
        let handle = std::thread::spawn(move || {
            let mut out = Vec::new();
            let model = dataplane_common::lossless::MODEL_PORTS as u16;
            while !st.load(Ordering::Relaxed) {
                let ms = t0.elapsed().as_secs_f64() * 1e3;
                let now = dataplane_user::sys::monotonic_ns();
                let mut ports = Vec::new();
                for (q, r, names) in &maps {
                    let row: Option<TcRow> = r.get(&u32::from(ROCE_TC), 0).ok();
                    let mut v = Vec::new();
                    for (_, id) in names {
                        let slot = id & (model - 1);
                        let qu: Option<EgressQueue> =
                            q.get(&(u32::from(slot) * 8 + u32::from(ROCE_TC)), 0).ok();
                        let (pg, xoff) = row
                            .map(|r| {
                                (
                                    r.pg[slot as usize].shared_used
                                        + r.pg[slot as usize].headroom_used,
                                    r.pfc[slot as usize].xoff != 0,
                                )
                            })
                            .unwrap_or((0, false));
                        v.push(PortSample {
                            queue: qu.map(|x| x.bytes).unwrap_or(0),
                            paused: qu.map(|x| x.paused_until_ns > now).unwrap_or(false),
                            pg,
                            xoff,
                        });
                    }
                    ports.push(v);
                }
                out.push((ms, ports));
                std::thread::sleep(period);
            }
            out
        });
        Ok(Sampler {
            stop,
            handle: Some(handle),
            t0,
        })
    }
}

/// One switch port's state at one sample.
#[derive(Clone, Copy, Debug, Default)]
pub struct PortSample {
    /// Bytes in its RoCE egress queue.
    pub queue: u32,
    /// The egress queue is paused by a PFC frame its peer sent.
    pub paused: bool,
    /// Bytes its RoCE ingress PG holds (shared + headroom).
    pub pg: u32,
    /// This switch is pausing the peer on this port (sent XOFF).
    pub xoff: bool,
}

/// (ms since the sampler started, per switch, per port).
pub type Samples = Vec<(f64, Vec<Vec<PortSample>>)>;

pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Samples>>,
    pub t0: Instant,
}

impl Sampler {
    pub fn finish(mut self) -> Samples {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
