//! A running instance's pinned maps, opened read-only, and the per-CPU
//! counter sums read from them.

use crate::sys;
use anyhow::{bail, Context, Result};
use aya::maps::{HashMap, MapData, PerCpuArray};
use dataplane_common::maps::{GlobalCounters, PortConfig, PortCounters, MAX_PORTS};
use dataplane_common::names;
use dataplane_common::route::FwdCounters;

/// A running instance's pinned map `name`, typed as the object declares
/// it.
pub fn open_pinned(instance: &str, name: &str) -> Result<aya::maps::Map> {
    let path = sys::pin_dir(instance).join(name);
    let data = MapData::from_pin(&path).with_context(|| {
        format!(
            "no running data plane {instance:?}: cannot open {} (is `dataplane up` running?)",
            path.display()
        )
    })?;
    Ok(match name {
        names::map::PORT_CONFIG => aya::maps::Map::HashMap(data),
        names::map::PORT_RATE
        | names::map::GROUPS
        | names::map::GROUP_SLOT
        | names::map::NEXTHOPS
        | names::map::NEXTHOP_SLOT
        | names::map::QUEUES
        | names::map::PORT_BUF
        | names::map::TC_ROWS
        | names::map::PAUSE_STATS
        | names::map::PAUSE_RUNS
        | names::map::WD_STATS
        | names::map::WATERMARKS
        | names::map::POOL
        | names::map::PFC_PATH => aya::maps::Map::Array(data),
        _ => aya::maps::Map::PerCpuArray(data),
    })
}

/// Read access to a running instance's maps through its pins.
pub struct Pinned {
    pub port_config: HashMap<MapData, u32, PortConfig>,
    pub port_counters: PerCpuArray<MapData, PortCounters>,
    pub fwd_counters: PerCpuArray<MapData, FwdCounters>,
    pub port_rate: aya::maps::Array<MapData, dataplane_common::lb::PortRate>,
    pub groups: crate::tables::slotted::Slotted<MapData, dataplane_common::lb::Group>,
    pub global_counters: PerCpuArray<MapData, GlobalCounters>,
    pub queues: aya::maps::Array<MapData, dataplane_common::lossless::EgressQueue>,
    pub lossless: PerCpuArray<MapData, dataplane_common::buffer::LosslessCounters>,
    pub port_buf: aya::maps::Array<MapData, dataplane_common::buffer::PortBuffer>,
    pub pause_stats: aya::maps::Array<MapData, dataplane_common::buffer::PauseStat>,
    pub wd_stats: aya::maps::Array<MapData, dataplane_common::buffer::WdStat>,
    /// Who sends PFC frames (`PFC_PATH_DATAPLANE` / `_USERSPACE`).
    pub pfc_path: aya::maps::Array<MapData, u32>,
}

impl Pinned {
    pub fn open(instance: &str) -> Result<Pinned> {
        let open = |name: &str| open_pinned(instance, name);
        Ok(Pinned {
            port_config: HashMap::try_from(open(names::map::PORT_CONFIG)?)?,
            port_counters: PerCpuArray::try_from(open(names::map::PORT_COUNTERS)?)?,
            fwd_counters: PerCpuArray::try_from(open(names::map::FWD_COUNTERS)?)?,
            port_rate: aya::maps::Array::try_from(open(names::map::PORT_RATE)?)?,
            groups: crate::tables::slotted::Slotted::pinned(
                &crate::sys::pin_dir(instance),
                names::map::GROUPS,
                names::map::GROUP_SLOT,
            )
            .with_context(|| {
                format!("no running data plane {instance:?} (is `dataplane up` running?)")
            })?,
            queues: aya::maps::Array::try_from(open(names::map::QUEUES)?)?,
            lossless: PerCpuArray::try_from(open(names::map::LOSSLESS_COUNTERS)?)?,
            port_buf: aya::maps::Array::try_from(open(names::map::PORT_BUF)?)?,
            pause_stats: aya::maps::Array::try_from(open(names::map::PAUSE_STATS)?)?,
            wd_stats: aya::maps::Array::try_from(open(names::map::WD_STATS)?)?,
            global_counters: PerCpuArray::try_from(open(names::map::GLOBAL_COUNTERS)?)?,
            pfc_path: aya::maps::Array::try_from(open(names::map::PFC_PATH)?)?,
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
        lb_evictions: 0,
    };
    for c in per_cpu.iter() {
        sum.unknown_port += c.unknown_port;
        sum.bad_port_id += c.bad_port_id;
        sum.lb_evictions += c.lb_evictions;
    }
    Ok(sum)
}
