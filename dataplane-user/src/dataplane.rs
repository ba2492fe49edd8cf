//! Loading the programs, writing the tables, attaching, pinning.

use dataplane_common::names;
use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use aya::maps::{HashMap, MapData, PerCpuArray};
use aya::programs::{Xdp, XdpMode};
use aya::Ebpf;
use dataplane_common::maps::{GlobalCounters, PortConfig, PortCounters, MAX_PORTS};
use dataplane_common::route::FwdCounters;

use crate::sys;
use dataplane_config::{Plan, XdpAttach};

/// The eBPF object built by build.rs.
pub static EBPF_OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/dataplane-ebpf"));

/// Every map the controller pins, by name.
pub const PINNED_MAPS: [&str; 13] = [
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
];

/// Loads the object (all programs verified by the kernel, none attached).
pub fn load_object() -> Result<Ebpf> {
    if EBPF_OBJECT.is_empty() {
        bail!("this binary was built with AYA_BUILD_SKIP=1 and carries no eBPF programs; rebuild without it");
    }
    let mut bpf = Ebpf::load(EBPF_OBJECT).context("loading the eBPF object")?;
    let names: Vec<String> = bpf.programs().map(|(n, _)| n.to_string()).collect();
    for name in names {
        let p: &mut Xdp = bpf
            .program_mut(&name)
            .ok_or_else(|| anyhow!("program {name} vanished"))?
            .try_into()
            .with_context(|| format!("program {name} is not XDP"))?;
        p.load()
            .with_context(|| format!("verifier rejected {name}"))?;
    }
    Ok(bpf)
}

/// A planned port bound to its interface: ifindex and the complete map
/// value (MAC filled in from the interface when the config gave none).
#[derive(Debug, Clone, Copy)]
pub struct Resolved {
    pub ifindex: u32,
    pub config: PortConfig,
}

/// Resolves every planned port, or fails naming each missing interface.
/// Called before anything is written.
pub fn resolve_ports(plan: &Plan) -> Result<Vec<Resolved>> {
    let mut missing = Vec::new();
    let mut out = Vec::new();
    for (i, p) in plan.ports.iter().enumerate() {
        match sys::ifindex(&p.name) {
            Some(ifindex) => {
                let mut config = p.config;
                match p.mac.or_else(|| sys::ifmac(&p.name)) {
                    Some(mac) => config.mac = mac,
                    None => missing.push(format!(
                        "port[{i}].mac: cannot read the MAC of {:?}; give it in the config",
                        p.name
                    )),
                }
                out.push(Resolved { ifindex, config });
            }
            None => missing.push(format!(
                "port[{i}].name: no interface {:?} in this network namespace",
                p.name
            )),
        }
    }
    if !missing.is_empty() {
        bail!(
            "{} port(s) cannot be resolved, nothing applied:\n  {}",
            missing.len(),
            missing.join("\n  ")
        );
    }
    Ok(out)
}

/// Writes the port table: every planned port whose entry differs (each
/// update replaces one whole entry atomically), then removes entries of
/// ports no longer planned. Returns the entries changed.
pub fn write_port_table(
    map: &mut HashMap<&mut MapData, u32, PortConfig>,
    plan: &Plan,
    ports: &[Resolved],
) -> Result<usize> {
    let mut n = 0;
    for (p, r) in plan.ports.iter().zip(ports) {
        if map.get(&r.ifindex, 0).ok() != Some(r.config) {
            map.insert(r.ifindex, r.config, 0)
                .with_context(|| format!("writing PORT_CONFIG for {}", p.name))?;
            n += 1;
        }
    }
    let keep: HashSet<u32> = ports.iter().map(|r| r.ifindex).collect();
    let stale: Vec<u32> = map
        .keys()
        .filter_map(|k| k.ok())
        .filter(|k| !keep.contains(k))
        .collect();
    for k in stale {
        map.remove(&k)
            .with_context(|| format!("removing stale PORT_CONFIG entry {k}"))?;
        n += 1;
    }
    Ok(n)
}

/// Writes every table of a validated, resolved plan: ports, forwarding
/// (egress ports, next hops, groups, routes, the tail-call stages) and the
/// buffer model, against what is loaded: only entries that differ are
/// written, each whole. Returns the entries changed.
pub fn write_tables(bpf: &mut Ebpf, plan: &Plan, resolved: &[Resolved]) -> Result<usize> {
    let n = {
        let mut table: HashMap<_, u32, PortConfig> = HashMap::try_from(
            bpf.map_mut(names::map::PORT_CONFIG)
                .ok_or_else(|| anyhow!("map {} missing", names::map::PORT_CONFIG))?,
        )?;
        write_port_table(&mut table, plan, resolved)?
    };
    Ok(n + crate::tables::write_forwarding(bpf, plan, resolved)?
        + crate::lossless_ctl::write_buffer(bpf, plan)?)
}

/// Parses, validates, resolves (in the calling thread's namespace) and
/// writes a configuration given as text: what `up` does to the tables, for
/// benchmarks and harnesses that drive the programs with BPF_PROG_RUN.
pub fn apply_config_text(
    bpf: &mut Ebpf,
    text: &str,
    source: &str,
) -> Result<(Plan, Vec<Resolved>)> {
    let plan = dataplane_config::Config::parse(text, source)?.validate(source)?;
    let resolved = resolve_ports(&plan)?;
    write_tables(bpf, &plan, &resolved)?;
    Ok((plan, resolved))
}

/// A map's layout: (name, type, key size, value size, max entries).
pub type MapLayout = (String, u32, u32, u32, u32);

/// Every map of the eBPF object with its layout, from the ELF.
pub fn object_maps() -> Result<Vec<MapLayout>> {
    if EBPF_OBJECT.is_empty() {
        bail!("this binary was built with AYA_BUILD_SKIP=1 and carries no eBPF programs; rebuild without it");
    }
    let obj = aya_obj::Object::parse(EBPF_OBJECT).context("parsing the eBPF object")?;
    // data sections (.rodata, .bss: the compiler's constants) hold no state
    // and are not pinned
    let mut v: Vec<_> = obj
        .maps
        .iter()
        .filter(|(n, _)| !n.starts_with('.'))
        .map(|(n, m)| {
            (
                n.clone(),
                m.map_type(),
                m.key_size(),
                m.value_size(),
                m.max_entries(),
            )
        })
        .collect();
    v.sort();
    Ok(v)
}

/// Refuses to adopt pinned maps whose layout differs from this build's: a
/// data plane of another version is running there, and reusing its maps
/// would corrupt them.
pub fn check_pinned_layouts(dir: &Path) -> Result<()> {
    let mut bad = Vec::new();
    for (name, ty, k, v, n) in object_maps()? {
        let path = dir.join(&name);
        if !path.exists() {
            continue;
        }
        let info = MapData::from_pin(&path)
            .with_context(|| format!("opening {}", path.display()))?
            .info()?;
        let got = (
            info.map_type().map(|t| t as u32).unwrap_or(u32::MAX),
            info.key_size(),
            info.value_size(),
            info.max_entries(),
        );
        if got != (ty, k, v, n) {
            bad.push(format!(
                "{name}: pinned type {} key {} value {} entries {}, this build expects type {ty} key {k} value {v} entries {n}",
                got.0, got.1, got.2, got.3
            ));
        }
    }
    if !bad.is_empty() {
        bail!(
            "the data plane pinned in {} has another layout than this build (another version runs there); nothing was changed:\n  {}\n\
             detach it with `dataplane down` (its state is lost) or use the binary that matches it",
            dir.display(),
            bad.join("\n  ")
        );
    }
    Ok(())
}

/// Loads the object with every map pinned under `dir`: maps already pinned
/// there are reused (state, counters, flowlets and the buffer model
/// survive), the others are created and pinned.
pub fn load_object_pinned(dir: &Path) -> Result<Ebpf> {
    let names: Vec<String> = object_maps()?.into_iter().map(|m| m.0).collect();
    let paths: Vec<PathBuf> = names.iter().map(|n| dir.join(n)).collect();
    let mut loader = aya::EbpfLoader::new();
    for (n, p) in names.iter().zip(&paths) {
        loader.map_pin_path(n.as_str(), p.as_path());
    }
    let mut bpf = loader
        .load(EBPF_OBJECT)
        .context("loading the eBPF object with pinned maps")?;
    let progs: Vec<String> = bpf.programs().map(|(n, _)| n.to_string()).collect();
    for name in progs {
        let p: &mut Xdp = bpf
            .program_mut(&name)
            .ok_or_else(|| anyhow!("program {name} vanished"))?
            .try_into()?;
        p.load()
            .with_context(|| format!("verifier rejected {name}"))?;
    }
    Ok(bpf)
}

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
        if pin_dir.exists() {
            check_pinned_layouts(&pin_dir)?;
        }
        std::fs::create_dir_all(&links_dir)
            .with_context(|| format!("creating {}", links_dir.display()))?;
        let fresh = !adopted;
        let started = (|| -> Result<Running> {
            let mut bpf = load_object_pinned(&pin_dir)?;
            write_tables(&mut bpf, plan, &resolved)?;
            let mut running = Running {
                bpf,
                pin_dir: pin_dir.clone(),
                attached: Vec::new(),
                program: names::prog::XDP_CLASSIFY,
                ports: resolved.clone(),
                adopted,
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
                            drop(owned); // the pin keeps it
                            running
                                .attached
                                .push((p.name.clone(), "kept, program swapped"));
                            continue;
                        }
                        Err(_) => {
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
                    XdpAttach::Auto => prog
                        .attach_to_if_index(ix, XdpMode::Driver)
                        .map(|id| (id, "native"))
                        .or_else(|_| {
                            prog.attach_to_if_index(ix, XdpMode::Skb)
                                .map(|id| (id, "generic"))
                        }),
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
                fd_link.pin(&pin).with_context(|| {
                    format!("pinning the XDP link of {} at {}", p.name, pin.display())
                })?;
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
    let _ = std::fs::remove_file(crate::events::log_path(instance));
    let _ = std::fs::remove_file(sys::reload_request(instance));
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

/// Read access to a running instance's maps through its pins.
pub struct Pinned {
    pub port_config: HashMap<MapData, u32, PortConfig>,
    pub port_counters: PerCpuArray<MapData, PortCounters>,
    pub fwd_counters: PerCpuArray<MapData, FwdCounters>,
    pub port_rate: aya::maps::Array<MapData, dataplane_common::lb::PortRate>,
    pub groups: HashMap<MapData, u32, dataplane_common::lb::Group>,
    pub global_counters: PerCpuArray<MapData, GlobalCounters>,
    pub queues: aya::maps::Array<MapData, dataplane_common::lossless::EgressQueue>,
    pub lossless: PerCpuArray<MapData, dataplane_common::buffer::LosslessCounters>,
    pub port_buf: aya::maps::Array<MapData, dataplane_common::buffer::PortBuffer>,
    pub pause_stats: aya::maps::Array<MapData, dataplane_common::buffer::PauseStat>,
    pub wd_stats: aya::maps::Array<MapData, dataplane_common::buffer::WdStat>,
}

impl Pinned {
    pub fn open(instance: &str) -> Result<Pinned> {
        let dir = sys::pin_dir(instance);
        let open = |name: &str| -> Result<aya::maps::Map> {
            let path = dir.join(name);
            let data = MapData::from_pin(&path).with_context(|| {
                format!("no running data plane {instance:?}: cannot open {} (is `dataplane up` running?)", path.display())
            })?;
            Ok(match name {
                names::map::PORT_CONFIG | names::map::GROUPS => aya::maps::Map::HashMap(data),
                names::map::PORT_RATE
                | names::map::QUEUES
                | names::map::PORT_BUF
                | names::map::TC_ROWS
                | names::map::PAUSE_STATS
                | names::map::WD_STATS => aya::maps::Map::Array(data),
                _ => aya::maps::Map::PerCpuArray(data),
            })
        };
        Ok(Pinned {
            port_config: HashMap::try_from(open(names::map::PORT_CONFIG)?)?,
            port_counters: PerCpuArray::try_from(open(names::map::PORT_COUNTERS)?)?,
            fwd_counters: PerCpuArray::try_from(open(names::map::FWD_COUNTERS)?)?,
            port_rate: aya::maps::Array::try_from(open(names::map::PORT_RATE)?)?,
            groups: HashMap::try_from(open(names::map::GROUPS)?)?,
            queues: aya::maps::Array::try_from(open(names::map::QUEUES)?)?,
            lossless: PerCpuArray::try_from(open(names::map::LOSSLESS_COUNTERS)?)?,
            port_buf: aya::maps::Array::try_from(open(names::map::PORT_BUF)?)?,
            pause_stats: aya::maps::Array::try_from(open(names::map::PAUSE_STATS)?)?,
            wd_stats: aya::maps::Array::try_from(open(names::map::WD_STATS)?)?,
            global_counters: PerCpuArray::try_from(open(names::map::GLOBAL_COUNTERS)?)?,
        })
    }
}

/// Sums a per-CPU port counter slot.
pub fn read_port_counters<T: std::borrow::Borrow<MapData>>(
    map: &PerCpuArray<T, PortCounters>,
    port_id: u16,
) -> Result<PortCounters> {
    if u32::from(port_id) >= MAX_PORTS {
        bail!("port_id {port_id} out of range");
    }
    let per_cpu = map.get(&u32::from(port_id), 0)?;
    let mut sum = PortCounters::ZERO;
    for c in per_cpu.iter() {
        sum.accumulate(c);
    }
    Ok(sum)
}

/// Sums a per-CPU forwarding counter slot.
pub fn read_fwd_counters<T: std::borrow::Borrow<MapData>>(
    map: &PerCpuArray<T, FwdCounters>,
    port_id: u16,
) -> Result<FwdCounters> {
    if u32::from(port_id) >= MAX_PORTS {
        bail!("port_id {port_id} out of range");
    }
    let per_cpu = map.get(&u32::from(port_id), 0)?;
    let mut sum = FwdCounters::ZERO;
    for c in per_cpu.iter() {
        sum.accumulate(c);
    }
    Ok(sum)
}

/// Sums the per-CPU global counters.
pub fn read_global_counters<T: std::borrow::Borrow<MapData>>(
    map: &PerCpuArray<T, GlobalCounters>,
) -> Result<GlobalCounters> {
    let per_cpu = map.get(&0, 0)?;
    let mut sum = GlobalCounters {
        unknown_port: 0,
        bad_port_id: 0,
    };
    for c in per_cpu.iter() {
        sum.unknown_port += c.unknown_port;
        sum.bad_port_id += c.bad_port_id;
    }
    Ok(sum)
}
