//! Writing the forwarding tables: next hops, groups, routes, egress ports.
//!
//! Order matters so that no packet sees a dangling reference: egress ports
//! and next hops first, then groups, then routes; stale entries are removed
//! in the reverse order (routes, groups, next hops).

use std::collections::HashSet;
use std::net::IpAddr;

use anyhow::{anyhow, Context, Result};
use aya::maps::lpm_trie::{Key, LpmTrie};
use aya::maps::{DevMap, HashMap, MapData};
use aya::Ebpf;
use dataplane_common::route::{NextHop, RouteEntry, ROUTE_GROUP, ROUTE_LOCAL, ROUTE_NEXTHOP};

use crate::config::{Plan, Target};
use crate::dataplane::Resolved;

pub const MAP_ROUTES_V4: &str = "ROUTES_V4";
pub const MAP_ROUTES_V6: &str = "ROUTES_V6";
pub const MAP_NEXTHOPS: &str = "NEXTHOPS";
pub const MAP_GROUPS: &str = "GROUPS";
pub const MAP_TX_PORTS: &str = "TX_PORTS";
pub const MAP_FWD_COUNTERS: &str = "FWD_COUNTERS";

fn map<'a>(bpf: &'a mut Ebpf, name: &str) -> Result<&'a mut aya::maps::Map> {
    bpf.map_mut(name).ok_or_else(|| anyhow!("map {name} missing from the eBPF object"))
}

/// The next-hop entries of a plan (source MAC = the egress port's MAC).
pub fn nexthop_entries(plan: &Plan, ports: &[Resolved]) -> Vec<NextHop> {
    plan.nexthops
        .iter()
        .map(|n| {
            let port = &ports[n.port];
            NextHop {
                dst_mac: n.mac,
                src_mac: port.config.mac,
                ifindex: port.ifindex,
                port_id: port.config.port_id,
                valid: 1,
                _pad: 0,
            }
        })
        .collect()
}

/// Puts `xdp_forward_egress` and `xdp_forward_pfc_rx` in the EGRESS_STAGE
/// program array, where `xdp_forward` tail-calls them.
pub fn install_egress_stage(bpf: &mut Ebpf) -> Result<()> {
    for (i, name) in [(0u32, "xdp_forward_egress"), (1, "xdp_forward_pfc_rx"), (2, "xdp_drop_snapshot")] {
        let prog: &aya::programs::Xdp = bpf.program(name).ok_or_else(|| anyhow!("program {name} missing"))?.try_into()?;
        let fd = prog.fd()?.try_clone()?;
        let mut pa: aya::maps::ProgramArray<&mut MapData> = aya::maps::ProgramArray::try_from(map(bpf, "EGRESS_STAGE")?)?;
        pa.set(i, &fd, 0).with_context(|| format!("EGRESS_STAGE[{i}] = {name}"))?;
    }
    Ok(())
}

/// A route's LPM value.
pub fn route_entry(t: Target) -> RouteEntry {
    match t {
        Target::NextHop(id) => RouteEntry { kind: ROUTE_NEXTHOP, _pad: 0, id },
        Target::Group(id) => RouteEntry { kind: ROUTE_GROUP, _pad: 0, id },
        Target::Local => RouteEntry { kind: ROUTE_LOCAL, _pad: 0, id: 0 },
    }
}

/// Writes every forwarding table of `plan` and removes what it no longer
/// has. The plan and ports are already validated and resolved.
pub fn write_forwarding(bpf: &mut Ebpf, plan: &Plan, ports: &[Resolved]) -> Result<()> {
    install_egress_stage(bpf)?;
    {
        let mut tx: DevMap<&mut MapData> = DevMap::try_from(map(bpf, MAP_TX_PORTS)?)?;
        for r in ports {
            tx.set(u32::from(r.config.port_id), r.ifindex, None, 0)
                .with_context(|| format!("TX_PORTS[{}] = ifindex {}", r.config.port_id, r.ifindex))?;
        }
    }
    let nhs = nexthop_entries(plan, ports);
    {
        let mut m: HashMap<&mut MapData, u32, NextHop> = HashMap::try_from(map(bpf, MAP_NEXTHOPS)?)?;
        for (i, nh) in nhs.iter().enumerate() {
            m.insert(i as u32, *nh, 0).with_context(|| format!("NEXTHOPS[{i}] ({})", plan.nexthops[i].name))?;
        }
    }
    crate::groups::write_groups(bpf, plan, ports)?;
    {
        let mut v4: LpmTrie<&mut MapData, [u8; 4], RouteEntry> = LpmTrie::try_from(map(bpf, MAP_ROUTES_V4)?)?;
        let mut keep4 = HashSet::new();
        for r in &plan.routes {
            if let IpAddr::V4(a) = r.addr {
                v4.insert(&Key::new(u32::from(r.len), a.octets()), route_entry(r.target), 0)
                    .with_context(|| format!("route {a}/{}", r.len))?;
                keep4.insert((r.len, a.octets()));
            }
        }
        let stale: Vec<Key<[u8; 4]>> =
            v4.keys().filter_map(|k| k.ok()).filter(|k| !keep4.contains(&(k.prefix_len() as u8, k.data()))).collect();
        for k in stale {
            v4.remove(&k)?;
        }
    }
    {
        let mut v6: LpmTrie<&mut MapData, [u8; 16], RouteEntry> = LpmTrie::try_from(map(bpf, MAP_ROUTES_V6)?)?;
        let mut keep6 = HashSet::new();
        for r in &plan.routes {
            if let IpAddr::V6(a) = r.addr {
                v6.insert(&Key::new(u32::from(r.len), a.octets()), route_entry(r.target), 0)
                    .with_context(|| format!("route {a}/{}", r.len))?;
                keep6.insert((r.len, a.octets()));
            }
        }
        let stale: Vec<Key<[u8; 16]>> =
            v6.keys().filter_map(|k| k.ok()).filter(|k| !keep6.contains(&(k.prefix_len() as u8, k.data()))).collect();
        for k in stale {
            v6.remove(&k)?;
        }
    }
    crate::groups::remove_stale_groups(bpf, plan)?;
    {
        let mut m: HashMap<&mut MapData, u32, NextHop> = HashMap::try_from(map(bpf, MAP_NEXTHOPS)?)?;
        let stale: Vec<u32> = m.keys().filter_map(|k| k.ok()).filter(|k| *k as usize >= nhs.len()).collect();
        for k in stale {
            m.remove(&k)?;
        }
    }
    Ok(())
}
