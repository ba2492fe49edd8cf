//! The eBPF maps as the route sync's [`Writer`]: next hops, groups, the
//! two LPM tries and the two host-route tables (/32 and /128 routes live
//! there, never in a trie: [`is_host_route`]), opened from the instance's
//! pins, each entry replaced whole (hash-map and LPM updates are atomic per
//! entry, next hops and groups are two-slot tables whose live slot flips
//! after the write, and a prefix has one table, so the sync's
//! make-before-break order holds per prefix as before).

use std::net::IpAddr;
use std::path::Path;

use anyhow::{Context, Result};
use aya::maps::lpm_trie::{Key, LpmTrie};
use aya::maps::{Array, HashMap, MapData};
use dataplane_common::lb::Group;
use dataplane_common::names;
use dataplane_common::route::{is_host_route, NextHop, RouteEntry, HOST_ROUTES_V4, HOST_ROUTES_V6};

use super::kernel::Prefix;
use super::sync::Writer;
use crate::tables::slotted::Slotted;

pub struct MapWriter {
    nexthops: Slotted<MapData, NextHop>,
    groups: Slotted<MapData, Group>,
    v4: LpmTrie<MapData, [u8; 4], RouteEntry>,
    v6: LpmTrie<MapData, [u8; 16], RouteEntry>,
    hosts_v4: HashMap<MapData, [u8; 4], RouteEntry>,
    hosts_v6: HashMap<MapData, [u8; 16], RouteEntry>,
    /// Whether each host table may hold routes; set before the first host
    /// route this writer adds (`in_use` caches what it wrote).
    host_routes: Array<MapData, u32>,
    in_use: [bool; 2],
}

fn open(dir: &Path, name: &str) -> Result<aya::maps::Map> {
    let d =
        MapData::from_pin(dir.join(name)).with_context(|| format!("opening pinned map {name}"))?;
    Ok(aya::maps::Map::HashMap(d))
}

fn lpm(dir: &Path, name: &str) -> Result<aya::maps::Map> {
    let d =
        MapData::from_pin(dir.join(name)).with_context(|| format!("opening pinned map {name}"))?;
    Ok(aya::maps::Map::LpmTrie(d))
}

impl MapWriter {
    /// The maps pinned in `pin_dir` (the running instance's).
    pub fn open(pin_dir: &Path) -> Result<MapWriter> {
        let mut w = MapWriter {
            nexthops: Slotted::pinned(pin_dir, names::map::NEXTHOPS, names::map::NEXTHOP_SLOT)?,
            groups: Slotted::pinned(pin_dir, names::map::GROUPS, names::map::GROUP_SLOT)?,
            v4: LpmTrie::try_from(lpm(pin_dir, names::map::ROUTES_V4)?)?,
            v6: LpmTrie::try_from(lpm(pin_dir, names::map::ROUTES_V6)?)?,
            hosts_v4: HashMap::try_from(open(pin_dir, names::map::HOSTS_V4)?)?,
            hosts_v6: HashMap::try_from(open(pin_dir, names::map::HOSTS_V6)?)?,
            host_routes: Array::try_from(aya::maps::Map::Array(
                MapData::from_pin(pin_dir.join(names::map::HOST_ROUTES))
                    .context("opening pinned map HOST_ROUTES")?,
            ))?,
            in_use: [false; 2],
        };
        // host routes already there (an instance adopted after an upgrade
        // from a build without the words): packets must not skip them
        if w.hosts_v4.keys().next().is_some() {
            w.set_in_use(HOST_ROUTES_V4)?;
        }
        if w.hosts_v6.keys().next().is_some() {
            w.set_in_use(HOST_ROUTES_V6)?;
        }
        Ok(w)
    }

    /// Says host table `f` may hold routes (once per writer).
    fn set_in_use(&mut self, f: u32) -> Result<()> {
        if !self.in_use[f as usize] {
            self.host_routes.set(f, 1, 0).context("HOST_ROUTES")?;
            self.in_use[f as usize] = true;
        }
        Ok(())
    }

    /// Every IPv4 and IPv6 route loaded (prefix, entry).
    pub fn loaded_routes(&self) -> Vec<(Prefix, RouteEntry)> {
        let mut v: Vec<(Prefix, RouteEntry)> = self
            .v4
            .iter()
            .filter_map(|r| r.ok())
            .map(|(k, e)| (Prefix::new(IpAddr::from(k.data()), k.prefix_len() as u8), e))
            .collect();
        v.extend(
            self.v6
                .iter()
                .filter_map(|r| r.ok())
                .map(|(k, e)| (Prefix::new(IpAddr::from(k.data()), k.prefix_len() as u8), e)),
        );
        v.extend(
            self.hosts_v4
                .iter()
                .filter_map(|r| r.ok())
                .map(|(a, e)| (Prefix::new(IpAddr::from(a), 32), e)),
        );
        v.extend(
            self.hosts_v6
                .iter()
                .filter_map(|r| r.ok())
                .map(|(a, e)| (Prefix::new(IpAddr::from(a), 128), e)),
        );
        v
    }
}

/// A two-slot table's entries by 16-bit id (an entry that cannot be read is
/// left out, as the hash maps' iteration left it out).
fn loaded<T: aya::Pod>(t: &Slotted<MapData, T>) -> Vec<(u16, T)> {
    (0..t.ids())
        .filter_map(|k| Some((u16::try_from(k).ok()?, t.get(k).ok()??)))
        .collect()
}

impl MapWriter {
    pub fn loaded_nexthops(&self) -> Vec<(u16, NextHop)> {
        loaded(&self.nexthops)
    }

    /// Group `id` as loaded (one lookup), `None` when there is none.
    pub fn group(&self, id: u16) -> Option<Group> {
        self.groups.get(u32::from(id)).ok().flatten()
    }

    pub fn loaded_groups(&self) -> Vec<(u16, Group)> {
        loaded(&self.groups)
    }
}

impl Writer for MapWriter {
    fn nexthop(&mut self, id: u16, v: Option<&NextHop>) -> Result<()> {
        self.nexthops.set(u32::from(id), v)
    }

    fn group(&mut self, id: u16, v: Option<&Group>) -> Result<()> {
        self.groups.set(u32::from(id), v)
    }

    fn route(&mut self, p: &Prefix, v: Option<&RouteEntry>) -> Result<()> {
        let len = u32::from(p.len);
        // a host route: the table's word first, so no packet skips it
        match (p.addr, v) {
            (IpAddr::V4(a), Some(v)) if is_host_route(p.len, 4) => {
                self.set_in_use(HOST_ROUTES_V4)?;
                self.hosts_v4.insert(a.octets(), *v, 0)?
            }
            (IpAddr::V4(a), None) if is_host_route(p.len, 4) => {
                self.hosts_v4.remove(&a.octets())?
            }
            (IpAddr::V6(a), Some(v)) if is_host_route(p.len, 16) => {
                self.set_in_use(HOST_ROUTES_V6)?;
                self.hosts_v6.insert(a.octets(), *v, 0)?
            }
            (IpAddr::V6(a), None) if is_host_route(p.len, 16) => {
                self.hosts_v6.remove(&a.octets())?
            }
            (IpAddr::V4(a), Some(v)) => self.v4.insert(&Key::new(len, a.octets()), *v, 0)?,
            (IpAddr::V4(a), None) => self.v4.remove(&Key::new(len, a.octets()))?,
            (IpAddr::V6(a), Some(v)) => self.v6.insert(&Key::new(len, a.octets()), *v, 0)?,
            (IpAddr::V6(a), None) => self.v6.remove(&Key::new(len, a.octets()))?,
        }
        Ok(())
    }
}
