//! Loading the programs, writing the tables, attaching, pinning.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use aya::maps::{HashMap, MapData, PerCpuArray};
use aya::programs::{Xdp, XdpMode};
use aya::Ebpf;
use dataplane_common::route::FwdCounters;
use dataplane_common::maps::{
    GlobalCounters, PortConfig, PortCounters, MAP_GLOBAL_COUNTERS, MAP_PORT_CONFIG, MAP_PORT_COUNTERS, MAX_PORTS,
    PROG_XDP_CLASSIFY, PROG_XDP_FORWARD,
};

use crate::config::{Plan, XdpAttach};
use crate::sys;

/// The eBPF object built by build.rs.
pub static EBPF_OBJECT: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/dataplane-ebpf"));

/// Every map the controller pins, by name.
pub const PINNED_MAPS: [&str; 13] = [
    "DROP_EVENTS",
    "PAUSE_STATS",
    "WD_STATS",
    crate::lossless_ctl::MAP_QUEUES,
    crate::lossless_ctl::MAP_LOSSLESS_COUNTERS,
    crate::lossless_ctl::MAP_PORT_BUF,
    crate::lossless_ctl::MAP_TC_ROWS,
    MAP_PORT_CONFIG,
    MAP_PORT_COUNTERS,
    MAP_GLOBAL_COUNTERS,
    crate::tables::MAP_FWD_COUNTERS,
    crate::groups::MAP_PORT_RATE,
    crate::groups::MAP_GROUPS,
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
        p.load().with_context(|| format!("verifier rejected {name}"))?;
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
                    None => missing.push(format!("port[{i}].mac: cannot read the MAC of {:?}; give it in the config", p.name)),
                }
                out.push(Resolved { ifindex, config });
            }
            None => missing.push(format!("port[{i}].name: no interface {:?} in this network namespace", p.name)),
        }
    }
    if !missing.is_empty() {
        bail!("{} port(s) cannot be resolved, nothing applied:\n  {}", missing.len(), missing.join("\n  "));
    }
    Ok(out)
}

/// Writes the port table: every planned port (each update replaces one
/// whole entry atomically), then removes entries of ports no longer planned.
pub fn write_port_table(map: &mut HashMap<&mut MapData, u32, PortConfig>, plan: &Plan, ports: &[Resolved]) -> Result<()> {
    for (p, r) in plan.ports.iter().zip(ports) {
        map.insert(r.ifindex, r.config, 0).with_context(|| format!("writing PORT_CONFIG for {}", p.name))?;
    }
    let keep: HashSet<u32> = ports.iter().map(|r| r.ifindex).collect();
    let stale: Vec<u32> = map.keys().filter_map(|k| k.ok()).filter(|k| !keep.contains(k)).collect();
    for k in stale {
        map.remove(&k).with_context(|| format!("removing stale PORT_CONFIG entry {k}"))?;
    }
    Ok(())
}

/// Writes every table of a validated, resolved plan: ports, forwarding
/// (egress ports, next hops, groups, routes, the tail-call stages) and the
/// buffer model.
pub fn write_tables(bpf: &mut Ebpf, plan: &Plan, resolved: &[Resolved]) -> Result<()> {
    {
        let mut table: HashMap<_, u32, PortConfig> =
            HashMap::try_from(bpf.map_mut(MAP_PORT_CONFIG).ok_or_else(|| anyhow!("map {MAP_PORT_CONFIG} missing"))?)?;
        write_port_table(&mut table, plan, resolved)?;
    }
    crate::tables::write_forwarding(bpf, plan, resolved)?;
    crate::lossless_ctl::write_buffer(bpf, plan)
}

/// Parses, validates, resolves (in the calling thread's namespace) and
/// writes a configuration given as text: what `up` does to the tables, for
/// benchmarks and harnesses that drive the programs with BPF_PROG_RUN.
pub fn apply_config_text(bpf: &mut Ebpf, text: &str, source: &str) -> Result<(Plan, Vec<Resolved>)> {
    let plan = crate::config::Config::parse(text, source)?.validate(source)?;
    let resolved = resolve_ports(&plan)?;
    write_tables(bpf, &plan, &resolved)?;
    Ok((plan, resolved))
}

/// A running data plane: programs loaded, tables written, ports attached,
/// maps pinned. Dropping it detaches and unpins.
pub struct Running {
    pub bpf: Ebpf,
    pub pin_dir: PathBuf,
    pub attached: Vec<(String, &'static str)>,
    /// The program attached to the ports.
    pub program: &'static str,
    /// The ports as resolved at start.
    pub ports: Vec<Resolved>,
}

impl Running {
    /// Applies a validated plan in the current namespace.
    pub fn start(plan: &Plan) -> Result<Running> {
        let resolved = resolve_ports(plan)?;
        sys::ensure_bpffs()?;
        let mut bpf = load_object()?;
        write_tables(&mut bpf, plan, &resolved)?;
        let pin_dir = sys::pin_dir(&plan.instance);
        clear_pins(&pin_dir)?;
        std::fs::create_dir_all(&pin_dir).with_context(|| format!("creating {}", pin_dir.display()))?;
        for name in PINNED_MAPS {
            let m = bpf.map(name).ok_or_else(|| anyhow!("map {name} missing"))?;
            m.pin(pin_dir.join(name)).with_context(|| format!("pinning {name} in {}", pin_dir.display()))?;
        }
        let mut running = Running { bpf, pin_dir, attached: Vec::new(), program: PROG_XDP_CLASSIFY, ports: resolved.clone() };
        let prog_name = if plan.forwarding() { PROG_XDP_FORWARD } else { PROG_XDP_CLASSIFY };
        running.program = prog_name;
        let prog: &mut Xdp =
            running.bpf.program_mut(prog_name).ok_or_else(|| anyhow!("program {prog_name} missing"))?.try_into()?;
        for (p, ix) in plan.ports.iter().zip(resolved.iter().map(|r| r.ifindex)) {
            let mode = match p.attach {
                XdpAttach::Native => prog.attach_to_if_index(ix, XdpMode::Driver).map(|_| "native"),
                XdpAttach::Generic => prog.attach_to_if_index(ix, XdpMode::Skb).map(|_| "generic"),
                XdpAttach::Auto => prog
                    .attach_to_if_index(ix, XdpMode::Driver)
                    .map(|_| "native")
                    .or_else(|_| prog.attach_to_if_index(ix, XdpMode::Skb).map(|_| "generic")),
            };
            // on error, `running` drops: already attached ports detach, pins go
            let mode = mode.with_context(|| format!("attaching {prog_name} to {}", p.name))?;
            running.attached.push((p.name.clone(), mode));
        }
        Ok(running)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = clear_pins(&self.pin_dir);
    }
}

/// Removes the pins of an instance (a stale set from a killed controller,
/// or ours on the way out).
pub fn clear_pins(dir: &Path) -> Result<()> {
    for name in PINNED_MAPS {
        let p = dir.join(name);
        if p.exists() {
            std::fs::remove_file(&p).with_context(|| format!("removing stale pin {}", p.display()))?;
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
                MAP_PORT_CONFIG | crate::groups::MAP_GROUPS => aya::maps::Map::HashMap(data),
                crate::groups::MAP_PORT_RATE
                | crate::lossless_ctl::MAP_QUEUES
                | crate::lossless_ctl::MAP_PORT_BUF
                | crate::lossless_ctl::MAP_TC_ROWS
                | "PAUSE_STATS"
                | "WD_STATS" => aya::maps::Map::Array(data),
                _ => aya::maps::Map::PerCpuArray(data),
            })
        };
        Ok(Pinned {
            port_config: HashMap::try_from(open(MAP_PORT_CONFIG)?)?,
            port_counters: PerCpuArray::try_from(open(MAP_PORT_COUNTERS)?)?,
            fwd_counters: PerCpuArray::try_from(open(crate::tables::MAP_FWD_COUNTERS)?)?,
            port_rate: aya::maps::Array::try_from(open(crate::groups::MAP_PORT_RATE)?)?,
            groups: HashMap::try_from(open(crate::groups::MAP_GROUPS)?)?,
            queues: aya::maps::Array::try_from(open(crate::lossless_ctl::MAP_QUEUES)?)?,
            lossless: PerCpuArray::try_from(open(crate::lossless_ctl::MAP_LOSSLESS_COUNTERS)?)?,
            port_buf: aya::maps::Array::try_from(open(crate::lossless_ctl::MAP_PORT_BUF)?)?,
            pause_stats: aya::maps::Array::try_from(open("PAUSE_STATS")?)?,
            wd_stats: aya::maps::Array::try_from(open("WD_STATS")?)?,
            global_counters: PerCpuArray::try_from(open(MAP_GLOBAL_COUNTERS)?)?,
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
pub fn read_fwd_counters<T: std::borrow::Borrow<MapData>>(map: &PerCpuArray<T, FwdCounters>, port_id: u16) -> Result<FwdCounters> {
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
pub fn read_global_counters<T: std::borrow::Borrow<MapData>>(map: &PerCpuArray<T, GlobalCounters>) -> Result<GlobalCounters> {
    let per_cpu = map.get(&0, 0)?;
    let mut sum = GlobalCounters { unknown_port: 0, bad_port_id: 0 };
    for c in per_cpu.iter() {
        sum.unknown_port += c.unknown_port;
        sum.bad_port_id += c.bad_port_id;
    }
    Ok(sum)
}
