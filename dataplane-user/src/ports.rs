//! Planned ports bound to this namespace's interfaces, and the port table.

use crate::sys;
use anyhow::{bail, Context, Result};
use aya::maps::{Array, HashMap, MapData};
use aya::Ebpf;
use dataplane_common::maps::{port_index_word, PortConfig, PORT_INDEX_ENTRIES};
use dataplane_common::names;
use dataplane_config::Plan;
use std::collections::HashSet;

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

/// `PORT_INDEX` of a loaded object.
fn port_index(bpf: &mut Ebpf) -> Result<Array<&mut MapData, u32>> {
    let m = bpf
        .map_mut(names::map::PORT_INDEX)
        .with_context(|| format!("map {} missing", names::map::PORT_INDEX))?;
    Ok(Array::try_from(m)?)
}

/// Writes the packet path's port lookup: each planned port's configuration
/// by port id (`PORTS`, two slots: never read half-written) and, for
/// ifindexes below [`PORT_INDEX_ENTRIES`], its id by ifindex
/// (`PORT_INDEX`). Ids no longer planned leave `PORT_INDEX` first (an id
/// reused by another port is never reached through the old interface),
/// configurations are written before the ids that lead to them, and before
/// `PORT_CONFIG` ([`write_port_table`]), through which larger ifindexes
/// find them. Returns the entries changed.
pub fn write_port_index(bpf: &mut Ebpf, ports: &[Resolved]) -> Result<usize> {
    let want: std::collections::HashMap<u32, u32> = ports
        .iter()
        .filter(|r| r.ifindex < PORT_INDEX_ENTRIES)
        .map(|r| (r.ifindex, port_index_word(r.config.port_id)))
        .collect();
    let mut n = 0;
    let mut idx = port_index(bpf)?;
    for i in 0..PORT_INDEX_ENTRIES {
        let w = idx.get(&i, 0).with_context(|| format!("PORT_INDEX[{i}]"))?;
        if w != 0 && want.get(&i) != Some(&w) {
            idx.set(i, 0, 0)
                .with_context(|| format!("clearing PORT_INDEX[{i}]"))?;
            n += 1;
        }
    }
    let mut configs: crate::tables::slotted::Slotted<&mut MapData, PortConfig> =
        crate::tables::slotted::Slotted::of(bpf, names::map::PORTS, names::map::PORT_SLOT)?;
    for r in ports {
        let id = u32::from(r.config.port_id);
        if configs.get(id)? != Some(r.config) {
            configs.set(id, Some(&r.config))?;
            n += 1;
        }
    }
    let mut idx = port_index(bpf)?;
    for (&i, &w) in &want {
        if idx.get(&i, 0).with_context(|| format!("PORT_INDEX[{i}]"))? != w {
            idx.set(i, w, 0)
                .with_context(|| format!("writing PORT_INDEX[{i}]"))?;
            n += 1;
        }
    }
    Ok(n)
}
