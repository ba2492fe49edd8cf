//! The next-hop table as the controller writes it: `NEXTHOPS`, two slots
//! per next hop, and `NH_GEN`, the generation that selects one
//! (`dataplane_common::route::NEXTHOP_SLOTS` says why). The config writer
//! and the route sync both go through [`NhTable`], so every update fills
//! the unused slot first and publishes the generation after it.

use std::borrow::{Borrow, BorrowMut};
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use aya::maps::{Array, Map, MapData};
use aya::Ebpf;
use dataplane_common::names;
use dataplane_common::route::{nexthop_slot, nexthop_write, NextHop, MAX_NEXTHOPS};

/// `NEXTHOPS` and `NH_GEN` of one instance.
pub struct NhTable<T> {
    slots: Array<T, NextHop>,
    gens: Array<T, u32>,
}

impl<'a> NhTable<&'a mut MapData> {
    /// The two maps of a loaded object.
    pub fn of(bpf: &'a mut Ebpf) -> Result<Self> {
        let (mut slots, mut gens) = (None, None);
        for (name, m) in bpf.maps_mut() {
            if name == names::map::NEXTHOPS {
                slots = Some(m);
            } else if name == names::map::NH_GEN {
                gens = Some(m);
            }
        }
        let missing = |n: &str| anyhow!("map {n} missing from the eBPF object");
        Ok(NhTable {
            slots: Array::try_from(slots.ok_or_else(|| missing(names::map::NEXTHOPS))?)?,
            gens: Array::try_from(gens.ok_or_else(|| missing(names::map::NH_GEN))?)?,
        })
    }
}

impl NhTable<MapData> {
    /// The two maps pinned in `pin_dir` (the running instance's).
    pub fn open(pin_dir: &Path) -> Result<Self> {
        let open = |name: &str| -> Result<Map> {
            let d = MapData::from_pin(pin_dir.join(name))
                .with_context(|| format!("opening pinned map {name}"))?;
            Ok(Map::Array(d))
        };
        Ok(NhTable {
            slots: Array::try_from(open(names::map::NEXTHOPS)?)?,
            gens: Array::try_from(open(names::map::NH_GEN)?)?,
        })
    }
}

impl<T: Borrow<MapData>> NhTable<T> {
    fn gen(&self, id: u32) -> Result<u32> {
        self.gens
            .get(&id, 0)
            .with_context(|| format!("NH_GEN[{id}]"))
    }

    /// Next hop `id` as packets read it (all zero: none).
    pub fn get(&self, id: u32) -> Result<NextHop> {
        let slot = nexthop_slot(id, self.gen(id)?);
        self.slots
            .get(&slot, 0)
            .with_context(|| format!("NEXTHOPS[{slot}] (next hop {id})"))
    }

    /// Every next hop written and not removed (not all zero).
    pub fn loaded(&self) -> Vec<(u16, NextHop)> {
        (0..MAX_NEXTHOPS)
            .filter_map(|id| Some((u16::try_from(id).ok()?, self.get(id).ok()?)))
            .filter(|(_, nh)| *nh != NextHop::default())
            .collect()
    }
}

impl<T: BorrowMut<MapData>> NhTable<T> {
    /// Makes next hop `id` `nh` (`None`: removes it, which packets see as
    /// an entry with `valid` 0, the verdict of a missing one). True when
    /// that changed the table.
    pub fn set(&mut self, id: u32, nh: Option<&NextHop>) -> Result<bool> {
        let new = nh.copied().unwrap_or_default();
        let gen = self.gen(id)?;
        let Some(w) = nexthop_write(id, gen, &self.get(id)?, &new) else {
            return Ok(false);
        };
        self.slots
            .set(w.slot, new, 0)
            .with_context(|| format!("NEXTHOPS[{}] (next hop {id})", w.slot))?;
        self.gens
            .set(id, w.gen, 0)
            .with_context(|| format!("NH_GEN[{id}]"))?;
        Ok(true)
    }
}
