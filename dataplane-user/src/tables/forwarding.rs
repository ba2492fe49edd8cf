//! Writing the forwarding tables: next hops, groups, routes, egress ports.
//!
//! Order matters so that no packet sees a dangling reference: egress ports
//! and next hops first, then groups, then routes; stale entries are removed
//! in the reverse order (routes, groups, next hops).

use super::slotted::Slotted;
use dataplane_common::names;
use std::collections::HashSet;
use std::net::IpAddr;

use anyhow::{anyhow, Context, Result};
use aya::maps::lpm_trie::{Key, LpmTrie};
use aya::maps::Array;
use aya::maps::{DevMap, HashMap, MapData};
use aya::programs::{ProgramFd, Xdp};
use aya::Ebpf;
use dataplane_common::buffer::PFC_PATH_DATAPLANE;
use dataplane_common::route::{
    is_host_route, NextHop, RouteEntry, HOST_ROUTES_V4, HOST_ROUTES_V6, ROUTE_GROUP, ROUTE_LOCAL,
    ROUTE_NEXTHOP,
};

use crate::ports::Resolved;
use dataplane_config::{Plan, Target};

fn map<'a>(bpf: &'a mut Ebpf, name: &str) -> Result<&'a mut aya::maps::Map> {
    bpf.map_mut(name)
        .ok_or_else(|| anyhow!("map {name} missing from the eBPF object"))
}

/// The next-hop table of a loaded object.
pub fn nexthops(bpf: &mut Ebpf) -> Result<Slotted<&mut MapData, NextHop>> {
    Slotted::of(bpf, names::map::NEXTHOPS, names::map::NEXTHOP_SLOT)
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

/// Puts `xdp_forward_egress`, `xdp_forward_pfc_rx`, `xdp_drop_snapshot`
/// and `xdp_forward_trim` in the EGRESS_STAGE program array and
/// `xdp_forward_far_rx` in FAR_STAGE, where the forwarding programs
/// tail-call them.
pub fn install_egress_stage(bpf: &mut Ebpf) -> Result<()> {
    for (table, i, name) in [
        (
            names::map::EGRESS_STAGE,
            0u32,
            names::prog::XDP_FORWARD_EGRESS,
        ),
        (names::map::EGRESS_STAGE, 1, names::prog::XDP_FORWARD_PFC_RX),
        (names::map::EGRESS_STAGE, 2, names::prog::XDP_DROP_SNAPSHOT),
        (names::map::EGRESS_STAGE, 3, names::prog::XDP_FORWARD_TRIM),
        (names::map::FAR_STAGE, 0, names::prog::XDP_FORWARD_FAR_RX),
    ] {
        let prog: &aya::programs::Xdp = bpf
            .program(name)
            .ok_or_else(|| anyhow!("program {name} missing"))?
            .try_into()?;
        let fd = prog.fd()?.try_clone()?;
        let mut pa: aya::maps::ProgramArray<&mut MapData> =
            aya::maps::ProgramArray::try_from(map(bpf, table)?)?;
        pa.set(i, &fd, 0)
            .with_context(|| format!("{table}[{i}] = {name}"))?;
    }
    Ok(())
}

/// The LPM value of a route of `len` bits to `t`.
pub fn route_entry(t: Target, len: u8) -> RouteEntry {
    let plen = dataplane_common::route::route_plen(len);
    match t {
        Target::NextHop(id) => RouteEntry {
            kind: ROUTE_NEXTHOP,
            plen,
            id,
        },
        Target::Group(id) => RouteEntry {
            kind: ROUTE_GROUP,
            plen,
            id,
        },
        Target::Local => RouteEntry {
            kind: ROUTE_LOCAL,
            plen,
            id: 0,
        },
    }
}

/// `xdp_devmap_pfc`'s descriptor and kernel id.
pub fn devmap_pfc(bpf: &Ebpf) -> Result<(ProgramFd, u32)> {
    let prog: &Xdp = bpf
        .program(names::prog::XDP_DEVMAP_PFC)
        .ok_or_else(|| anyhow!("program {} missing", names::prog::XDP_DEVMAP_PFC))?
        .try_into()?;
    let fd = prog
        .fd()
        .map_err(|e| anyhow!("{} not loaded: {e}", names::prog::XDP_DEVMAP_PFC))?
        .try_clone()?;
    let id = prog
        .info()
        .with_context(|| format!("{}'s id", names::prog::XDP_DEVMAP_PFC))?
        .id();
    Ok((fd, id))
}

/// The egress program `TX_PORTS` entries need: `xdp_devmap_pfc` when the
/// data plane sends PFC frames (`lossless::pfc_path`), else none.
///
/// The kernel keeps one bulk queue per device and CPU, and runs on a whole
/// flush the devmap program of the first frame queued since the last flush
/// (`bq_enqueue`). A port that gets both plain redirects (`TX_PORTS`) and
/// broadcast copies (`PFC_BCAST`, with `xdp_devmap_pfc`) in one NAPI poll
/// would otherwise have its plain frames judged as broadcast copies (and
/// dropped: no metadata), or the broadcast copies sent unjudged. With the
/// same program on both maps every frame meets it; frames without the
/// broadcast's metadata pass unchanged.
pub fn tx_ports_prog(bpf: &Ebpf) -> Result<Option<(ProgramFd, u32)>> {
    let path: Array<&MapData, u32> = Array::try_from(
        bpf.map(names::map::PFC_PATH)
            .context(names::map::PFC_PATH)?,
    )?;
    if path.get(&0, 0).ok() != Some(PFC_PATH_DATAPLANE) {
        return Ok(None);
    }
    devmap_pfc(bpf).map(Some)
}

/// `TX_PORTS[port id]` = the port's ifindex, with `prog` as its devmap
/// egress program (see [`tx_ports_prog`]); only entries that
/// differ are written. Returns how many were.
pub fn write_tx_ports(
    bpf: &mut Ebpf,
    ports: &[Resolved],
    prog: Option<(&ProgramFd, u32)>,
) -> Result<usize> {
    let want_id = prog.map(|p| p.1);
    let mut tx: DevMap<&mut MapData> = DevMap::try_from(map(bpf, names::map::TX_PORTS)?)?;
    let mut n = 0;
    for r in ports {
        let id = u32::from(r.config.port_id);
        let now = tx
            .get(id, 0)
            .ok()
            .map(|v| (v.if_index, v.prog_id.map(|p| p.get())));
        if now != Some((r.ifindex, want_id)) {
            tx.set(id, r.ifindex, prog.map(|p| p.0), 0)
                .with_context(|| format!("TX_PORTS[{id}] = ifindex {}", r.ifindex))?;
            n += 1;
        }
    }
    Ok(n)
}

/// Writes every forwarding table of `plan` and removes what it no longer
/// has. The plan and ports are already validated and resolved.
pub fn write_forwarding(bpf: &mut Ebpf, plan: &Plan, ports: &[Resolved]) -> Result<usize> {
    install_egress_stage(bpf)?;
    let prog = tx_ports_prog(bpf)?;
    let mut n = write_tx_ports(bpf, ports, prog.as_ref().map(|(fd, id)| (fd, *id)))?;
    let nhs = nexthop_entries(plan, ports);
    {
        let mut m = nexthops(bpf)?;
        for (i, nh) in nhs.iter().enumerate() {
            if m.get(i as u32)? != Some(*nh) {
                m.set(i as u32, Some(nh))
                    .with_context(|| format!("next hop {}", plan.nexthops[i].name))?;
                n += 1;
            }
        }
    }
    n += crate::tables::groups::write_groups(bpf, plan, ports)?;
    n += write_routes::<4>(bpf, names::map::ROUTES_V4, names::map::HOSTS_V4, plan)?;
    n += write_routes::<16>(bpf, names::map::ROUTES_V6, names::map::HOSTS_V6, plan)?;
    // with [routing] the learned entries (routes not in the config, next
    // hops and groups above the config's ids) are the route sync's
    if plan.routing.is_some() {
        return Ok(n);
    }
    n += crate::tables::groups::remove_stale_groups(bpf, plan)?;
    n += nexthops(bpf)?.remove_from(nhs.len() as u32)?;
    Ok(n)
}

/// The routes of one family (`N` = 4 or 16 address bytes) in its two
/// tables, the LPM trie `trie` and the exact-match host table `hosts`
/// ([`is_host_route`] picks the table): only prefixes whose entry differs
/// are written; prefixes no longer planned go, after every write.
fn write_routes<const N: usize>(
    bpf: &mut Ebpf,
    trie: &str,
    hosts: &str,
    plan: &Plan,
) -> Result<usize>
where
    [u8; N]: aya::Pod,
{
    // (host table?, prefix length, address) -> entry
    let mut loaded: std::collections::HashMap<(bool, u32, [u8; N]), RouteEntry> = {
        let t: LpmTrie<&mut MapData, [u8; N], RouteEntry> = LpmTrie::try_from(map(bpf, trie)?)?;
        t.iter()
            .filter_map(|r| r.ok())
            .map(|(k, v)| ((false, k.prefix_len(), k.data()), v))
            .collect()
    };
    {
        let h: HashMap<&mut MapData, [u8; N], RouteEntry> = HashMap::try_from(map(bpf, hosts)?)?;
        loaded.extend(
            h.iter()
                .filter_map(|r| r.ok())
                .map(|(k, v)| ((true, (N * 8) as u32, k), v)),
        );
    }
    let fam = if N == 4 {
        HOST_ROUTES_V4
    } else {
        HOST_ROUTES_V6
    };
    let any_host = plan.routes.iter().any(|r| {
        let n = match r.addr {
            IpAddr::V4(_) => 4,
            IpAddr::V6(_) => 16,
        };
        n == N && is_host_route(r.len, N)
    });
    // the word first: a packet never skips a host route that is there
    // (planned, or already in the table: learned, or adopted from a build
    // without the words)
    if any_host || loaded.keys().any(|k| k.0) {
        set_hosts_in_use(bpf, fam, true)?;
    }
    let mut keep = HashSet::new();
    let mut n = 0;
    for r in &plan.routes {
        let octets: Option<[u8; N]> = match r.addr {
            IpAddr::V4(a) => a.octets().to_vec().try_into().ok(),
            IpAddr::V6(a) => a.octets().to_vec().try_into().ok(),
        };
        let Some(o) = octets else { continue };
        let k = (is_host_route(r.len, N), u32::from(r.len), o);
        let v = route_entry(r.target, r.len);
        if loaded.get(&k) != Some(&v) {
            write_route(bpf, if k.0 { hosts } else { trie }, &k, Some(v))
                .with_context(|| format!("route {}/{}", r.addr, r.len))?;
            n += 1;
        }
        keep.insert(k);
    }
    if plan.routing.is_some() {
        return Ok(n);
    }
    for k in loaded.keys().filter(|k| !keep.contains(*k)) {
        write_route(bpf, if k.0 { hosts } else { trie }, k, None)?;
        n += 1;
    }
    // the table is empty now: packets may skip it
    if !any_host {
        set_hosts_in_use(bpf, fam, false)?;
    }
    Ok(n)
}

/// Says whether host table `fam` (`HOST_ROUTES_V4`, `_V6`) may hold routes.
fn set_hosts_in_use(bpf: &mut Ebpf, fam: u32, on: bool) -> Result<()> {
    let mut a: Array<&mut MapData, u32> = Array::try_from(map(bpf, names::map::HOST_ROUTES)?)?;
    if a.get(&fam, 0)? != u32::from(on) {
        a.set(fam, u32::from(on), 0)
            .with_context(|| format!("HOST_ROUTES[{fam}]"))?;
    }
    Ok(())
}

/// Writes (`Some`) or removes one route in its table `name`.
fn write_route<const N: usize>(
    bpf: &mut Ebpf,
    name: &str,
    &(host, len, addr): &(bool, u32, [u8; N]),
    v: Option<RouteEntry>,
) -> Result<()>
where
    [u8; N]: aya::Pod,
{
    if host {
        let mut h: HashMap<&mut MapData, [u8; N], RouteEntry> = HashMap::try_from(map(bpf, name)?)?;
        match v {
            Some(v) => h.insert(addr, v, 0)?,
            None => h.remove(&addr)?,
        }
    } else {
        let mut t: LpmTrie<&mut MapData, [u8; N], RouteEntry> = LpmTrie::try_from(map(bpf, name)?)?;
        match v {
            Some(v) => t.insert(&Key::new(len, addr), v, 0)?,
            None => t.remove(&Key::new(len, addr))?,
        }
    }
    Ok(())
}
