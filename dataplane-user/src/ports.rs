//! Planned ports bound to this namespace's interfaces, and the port table.

use crate::sys;
use anyhow::{bail, Context, Result};
use aya::maps::{HashMap, MapData};
use dataplane_common::maps::PortConfig;
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
