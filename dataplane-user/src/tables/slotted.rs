//! The controller's side of the two-slot tables (`dataplane_common::slots`:
//! next hops and groups): a write fills the spare slot, then flips the live
//! word, so a packet never reads a half-written entry. An all-zero entry is
//! no entry (what an unused id holds; a removal writes zeros).

use std::borrow::{Borrow, BorrowMut};
use std::path::Path;

use anyhow::{anyhow, Context, Result};
use aya::maps::{Array, MapData};
use aya::{Ebpf, Pod};
use dataplane_common::slots::{slot_index, spare};

/// A two-slot table: the entries' array and the live-slot words.
pub struct Slotted<D, T: Pod> {
    name: &'static str,
    data: Array<D, T>,
    live: Array<D, u32>,
}

fn is_zero<T: Pod>(v: &T) -> bool {
    // SAFETY: a Pod value is plain bytes without padding.
    let b = unsafe { std::slice::from_raw_parts(v as *const T as *const u8, size_of::<T>()) };
    b.iter().all(|&x| x == 0)
}

fn zero<T: Pod>() -> T {
    // SAFETY: every bit pattern, zeros among them, is a valid Pod value.
    unsafe { std::mem::zeroed() }
}

impl<'a, T: Pod> Slotted<&'a mut MapData, T> {
    /// Table `name` (live words in `slot`) of a loaded object.
    pub fn of(bpf: &'a mut Ebpf, name: &'static str, slot: &str) -> Result<Self> {
        let (mut data, mut live) = (None, None);
        for (n, m) in bpf.maps_mut() {
            if n == name {
                data = Some(m);
            } else if n == slot {
                live = Some(m);
            }
        }
        let missing = |n: &str| anyhow!("map {n} missing from the eBPF object");
        Ok(Slotted {
            name,
            data: Array::try_from(data.ok_or_else(|| missing(name))?)
                .with_context(|| format!("map {name}"))?,
            live: Array::try_from(live.ok_or_else(|| missing(slot))?)
                .with_context(|| format!("map {slot}"))?,
        })
    }
}

impl<T: Pod> Slotted<MapData, T> {
    /// Table `name` (live words in `slot`) pinned in `dir`.
    pub fn pinned(dir: &Path, name: &'static str, slot: &str) -> Result<Self> {
        let open = |n: &str| -> Result<aya::maps::Map> {
            let d = MapData::from_pin(dir.join(n))
                .with_context(|| format!("opening pinned map {n}"))?;
            Ok(aya::maps::Map::Array(d))
        };
        Ok(Slotted {
            name,
            data: Array::try_from(open(name)?).with_context(|| format!("map {name}"))?,
            live: Array::try_from(open(slot)?).with_context(|| format!("map {slot}"))?,
        })
    }
}

impl<D: Borrow<MapData>, T: Pod> Slotted<D, T> {
    /// How many ids the table has.
    pub fn ids(&self) -> u32 {
        self.live.len()
    }

    /// Entry `id` as packets read it; `None` when it holds none.
    pub fn get(&self, id: u32) -> Result<Option<T>> {
        let s = self
            .live
            .get(&id, 0)
            .with_context(|| format!("{}[{id}]: live slot", self.name))?;
        let v = self
            .data
            .get(&slot_index(id, s), 0)
            .with_context(|| format!("{}[{id}]", self.name))?;
        Ok((!is_zero(&v)).then_some(v))
    }

    /// Every entry held, by id.
    pub fn entries(&self) -> Result<Vec<(u32, T)>> {
        let mut v = Vec::new();
        for id in 0..self.ids() {
            if let Some(e) = self.get(id)? {
                v.push((id, e));
            }
        }
        Ok(v)
    }
}

impl<D: BorrowMut<MapData>, T: Pod> Slotted<D, T> {
    /// Writes entry `id` (`None`: removes it) into the spare slot, then
    /// makes that slot live.
    pub fn set(&mut self, id: u32, v: Option<&T>) -> Result<()> {
        let s = self
            .live
            .get(&id, 0)
            .with_context(|| format!("{}[{id}]: live slot", self.name))?;
        let v = v.copied().unwrap_or_else(zero);
        self.data
            .set(slot_index(id, spare(s)), v, 0)
            .with_context(|| format!("{}[{id}]", self.name))?;
        self.live
            .set(id, spare(s), 0)
            .with_context(|| format!("{}[{id}]: live slot", self.name))?;
        Ok(())
    }

    /// Removes every entry from id `first` on (what a plan of `first`
    /// entries no longer has); returns how many there were.
    pub fn remove_from(&mut self, first: u32) -> Result<usize> {
        let mut n = 0;
        for id in first..self.ids() {
            if self.get(id)?.is_some() {
                self.set(id, None)?;
                n += 1;
            }
        }
        Ok(n)
    }
}
