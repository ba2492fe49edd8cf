//! Loading the programs, writing the tables, attaching, pinning.

use crate::object::{check_pinned_layouts_sized, load_object_pinned_sized, object_maps};
use crate::ports::{resolve_ports, Resolved};
use crate::tables::write_tables;
use dataplane_common::names;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use aya::programs::{Xdp, XdpMode};
use aya::Ebpf;

use crate::sys;
use dataplane_config::{Plan, XdpAttach};

/// Every map the controller pins, by name.
pub const PINNED_MAPS: [&str; 14] = [
    names::map::DROP_EVENTS,
    names::map::PAUSE_STATS,
    names::map::WD_STATS,
    names::map::QUEUES,
    names::map::LOSSLESS_COUNTERS,
    names::map::PORT_BUF,
    names::map::TC_ROWS,
    names::map::PORT_CONFIG,
    names::map::PORT_COUNTERS,
    names::map::GLOBAL_COUNTERS,
    names::map::FWD_COUNTERS,
    names::map::PORT_RATE,
    names::map::GROUPS,
    names::map::GROUP_SLOT,
];

/// Where the XDP link of a port is pinned.
pub fn link_pin(dir: &Path, ifname: &str) -> PathBuf {
    dir.join("links").join(ifname)
}

/// A running data plane: programs loaded, tables written, ports attached
/// through bpf_links pinned under `/sys/fs/bpf/dataplane/<instance>/links`,
/// every map pinned beside them. The pins, not this process, keep it
/// running: dropping this (the controller stopping, even by SIGKILL)
/// leaves forwarding untouched; [`down`] detaches.
pub struct Running {
    pub bpf: Ebpf,
    pub pin_dir: PathBuf,
    pub attached: Vec<(String, &'static str)>,
    /// The program attached to the ports.
    pub program: &'static str,
    /// The ports as resolved at start.
    pub ports: Vec<Resolved>,
    /// A running data plane was adopted (not created).
    pub adopted: bool,
    /// Ports whose pinned link could not take the new program (e.g. the
    /// interface was recreated): detached and attached anew, not
    /// atomically (frames in between took the kernel's path); with the
    /// swap's error. Logged as a warning each.
    pub non_atomic: Vec<(String, String)>,
    /// A reference to each port's link, held while the controller runs:
    /// removing the pins under a running controller does not detach the
    /// programs, and [`Running::repin`] puts them back.
    pub links: Vec<(String, Option<aya::programs::links::FdLink>)>,
    /// Ports `xdp_mode = "auto"` attached in generic mode, with the
    /// kernel's refusal of the native attach.
    pub native_refused: Vec<(String, String)>,
}

impl Running {
    /// Applies a validated plan in the current namespace: adopts the data
    /// plane pinned for this instance if there is one (new programs swapped
    /// in atomically on its links, maps and their state kept, tables
    /// rewritten), otherwise creates it.
    pub fn start(plan: &Plan) -> Result<Running> {
        let resolved = resolve_ports(plan)?;
        sys::ensure_bpffs()?;
        let pin_dir = sys::pin_dir(&plan.instance);
        let links_dir = pin_dir.join("links");
        let adopted = links_dir.exists()
            && std::fs::read_dir(&links_dir)
                .map(|mut d| d.next().is_some())
                .unwrap_or(false);
        let sizes = crate::object::route_table_sizes(plan);
        if pin_dir.exists() {
            check_pinned_layouts_sized(&pin_dir, &sizes)?;
        }
        std::fs::create_dir_all(&links_dir)
            .with_context(|| format!("creating {}", links_dir.display()))?;
        let fresh = !adopted;
        let started = (|| -> Result<Running> {
            let mut bpf = load_object_pinned_sized(&pin_dir, &sizes)?;
            write_tables(&mut bpf, plan, &resolved)?;
            let mut running = Running {
                bpf,
                pin_dir: pin_dir.clone(),
                attached: Vec::new(),
                program: names::prog::XDP_CLASSIFY,
                ports: resolved.clone(),
                adopted,
                non_atomic: Vec::new(),
                links: Vec::new(),
                native_refused: Vec::new(),
            };
            let prog_name = if plan.forwarding() {
                names::prog::XDP_FORWARD
            } else {
                names::prog::XDP_CLASSIFY
            };
            running.program = prog_name;
            let prog: &mut Xdp = running
                .bpf
                .program_mut(prog_name)
                .ok_or_else(|| anyhow!("program {prog_name} missing"))?
                .try_into()?;
            for (p, ix) in plan.ports.iter().zip(resolved.iter().map(|r| r.ifindex)) {
                let pin = link_pin(&pin_dir, &p.name);
                // a pinned link: swap the program on it (atomic, no packet
                // sees no program); if the link is gone (interface
                // recreated), attach anew
                if pin.exists() {
                    let swapped = aya::programs::links::PinnedLink::from_pin(&pin)
                        .map_err(|e| anyhow!("{e}"))
                        .and_then(|pl| {
                            Ok(aya::programs::xdp::XdpLink::try_from(
                                aya::programs::links::FdLink::from(pl),
                            )?)
                        })
                        .and_then(|xl| Ok(prog.attach_to_link(xl)?))
                        .and_then(|id| Ok(prog.take_link(id)?));
                    match swapped {
                        Ok(owned) => {
                            // the pin keeps it; our reference too
                            let held = aya::programs::links::FdLink::try_from(owned).ok();
                            running.links.push((p.name.clone(), held));
                            running
                                .attached
                                .push((p.name.clone(), "kept, program swapped"));
                            continue;
                        }
                        Err(e) => {
                            crate::log::warn(&format!(
                                "{}: the program swap on its pinned link failed ({e:#}); detaching it and attaching anew, \
                                 not atomically: frames arriving in between take the kernel's path",
                                p.name
                            ));
                            running.non_atomic.push((p.name.clone(), format!("{e:#}")));
                            let _ = std::fs::remove_file(&pin);
                        }
                    }
                }
                let id = match p.attach {
                    XdpAttach::Native => prog
                        .attach_to_if_index(ix, XdpMode::Driver)
                        .map(|id| (id, "native")),
                    XdpAttach::Generic => prog
                        .attach_to_if_index(ix, XdpMode::Skb)
                        .map(|id| (id, "generic")),
                    XdpAttach::Auto => match prog.attach_to_if_index(ix, XdpMode::Driver) {
                        Ok(id) => Ok((id, "native")),
                        Err(native) => {
                            let why = format!("{:#}", anyhow::Error::from(native));
                            running.native_refused.push((p.name.clone(), why));
                            prog.attach_to_if_index(ix, XdpMode::Skb)
                                .map(|id| (id, "generic"))
                        }
                    },
                };
                let (id, mode) =
                    id.with_context(|| format!("attaching {prog_name} to {}", p.name))?;
                let link = prog.take_link(id)?;
                let fd_link = aya::programs::links::FdLink::try_from(link).map_err(|e| {
                    anyhow!(
                        "{}: XDP attached without a bpf_link, which cannot be pinned: {e}",
                        p.name
                    )
                })?;
                let pinned = fd_link.pin(&pin).with_context(|| {
                    format!("pinning the XDP link of {} at {}", p.name, pin.display())
                })?;
                running.links.push((
                    p.name.clone(),
                    Some(aya::programs::links::FdLink::from(pinned)),
                ));
                running.attached.push((p.name.clone(), mode));
            }
            // ports no longer in the config: their links go
            if let Ok(d) = std::fs::read_dir(&links_dir) {
                for e in d.flatten() {
                    let name = e.file_name().to_string_lossy().into_owned();
                    if !plan.ports.iter().any(|p| p.name == name) {
                        detach_pinned_link(&e.path());
                    }
                }
            }
            Ok(running)
        })();
        if started.is_err() && fresh {
            // nothing half-applied: a new data plane that failed goes away
            let _ = down_dir(&pin_dir);
        }
        started
    }
}

impl Running {
    /// Takes a data plane this process created down again (its links and
    /// pins): for an `up` refused after the attach, so nothing is left
    /// half-applied. Not for an adopted data plane (it ran before).
    pub fn abandon(self) {
        let dir = self.pin_dir.clone();
        drop(self);
        let _ = down_dir(&dir);
    }

    /// Pins again whatever was removed from the instance's pin directory
    /// while the data plane runs (maps and links: the programs and this
    /// process still hold them); returns what was restored.
    pub fn repin(&mut self) -> Result<Vec<String>> {
        // the object's map names, parsed from the ELF once
        static MAPS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
        if MAPS.get().is_none() {
            let names = object_maps()?.into_iter().map(|m| m.0).collect();
            let _ = MAPS.set(names);
        }
        let maps = MAPS.get().expect("set above");
        let links_dir = self.pin_dir.join("links");
        if links_dir.exists()
            && self
                .links
                .iter()
                .all(|(n, _)| link_pin(&self.pin_dir, n).exists())
            && maps.iter().all(|m| self.pin_dir.join(m).exists())
        {
            return Ok(Vec::new());
        }
        sys::ensure_bpffs()?;
        std::fs::create_dir_all(&links_dir)
            .with_context(|| format!("creating {}", links_dir.display()))?;
        let mut restored = Vec::new();
        for (name, ..) in object_maps()? {
            let path = self.pin_dir.join(&name);
            if !path.exists() {
                if let Some(m) = self.bpf.map(&name) {
                    m.pin(&path)
                        .map_err(|e| anyhow!("pinning {}: {e}", path.display()))?;
                    restored.push(name);
                }
            }
        }
        for (name, link) in &mut self.links {
            let path = link_pin(&self.pin_dir, name);
            if path.exists() {
                continue;
            }
            if let Some(l) = link.take() {
                let pinned = l
                    .pin(&path)
                    .map_err(|e| anyhow!("pinning {}: {e}", path.display()))?;
                *link = Some(aya::programs::links::FdLink::from(pinned));
                restored.push(format!("links/{name}"));
            }
        }
        Ok(restored)
    }
}

fn detach_pinned_link(path: &Path) {
    if let Ok(pl) = aya::programs::links::PinnedLink::from_pin(path) {
        // unpin, then drop the last reference: the link (and XDP) go
        if let Ok(fd_link) = pl.unpin() {
            drop(fd_link);
        }
    }
    let _ = std::fs::remove_file(path);
}

/// Detaches an instance's data plane: its pinned links (so its programs
/// leave the ports) and its pinned maps. Refused while a controller runs it.
pub fn down(instance: &str) -> Result<usize> {
    let _lock = sys::InstanceLock::acquire(instance)?;
    let dir = sys::pin_dir(instance);
    if !dir.exists() {
        bail!("no data plane {instance:?} is pinned in {}", dir.display());
    }
    let _ = std::fs::remove_file(crate::telemetry::events::log_path(instance));
    let _ = std::fs::remove_file(crate::dcbx::state::path(instance));
    let _ = std::fs::remove_file(sys::reload_request(instance));
    let _ = std::fs::remove_file(crate::routing::listing_path(instance));
    let _ = std::fs::remove_file(crate::lossless::watchdog::config_path(instance));
    // the baselines and folded watermarks of a data plane that is gone
    let _ = std::fs::remove_dir_all(sys::state_dir(instance));
    down_dir(&dir)
}

fn down_dir(dir: &Path) -> Result<usize> {
    let mut n = 0;
    let links = dir.join("links");
    if let Ok(d) = std::fs::read_dir(&links) {
        for e in d.flatten() {
            detach_pinned_link(&e.path());
            n += 1;
        }
    }
    let _ = std::fs::remove_dir(&links);
    clear_pins(dir)?;
    Ok(n)
}

/// Removes the map pins of an instance.
pub fn clear_pins(dir: &Path) -> Result<()> {
    for (name, ..) in object_maps()? {
        let p = dir.join(&name);
        if p.exists() {
            std::fs::remove_file(&p).with_context(|| format!("removing pin {}", p.display()))?;
        }
    }
    if dir.exists() {
        let _ = std::fs::remove_dir(dir);
    }
    Ok(())
}
