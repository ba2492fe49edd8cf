//! Watermarks as SONiC keeps them. The data plane raises one mark per
//! (port, TC) and kind in `WATERMARKS` (the shared pool's: a share per
//! entry, the pool's peak is their maximum; see
//! `dataplane_common::lossless::Watermark`); a *fold* takes each mark with
//! an atomic exchange against 0 (through a shared mapping of the map, so a
//! raise racing the exchange lands after it, never lost) and folds it into
//! three windows kept in the instance's state directory:
//!
//! * periodic: since the last watermark interval (SONiC's telemetry
//!   interval, 120 s by default; the controller folds and resets it);
//! * persistent: since the data plane started or the last
//!   `clear ... persistent-watermark`;
//! * user: since the last `clear ... watermark` (what `show ... watermark`
//!   prints, SONiC's USER_WATERMARKS).
//!
//! A window's value is the maximum of what was folded and what the data
//! plane holds now, so readers never wait for a fold. Folds and reads take
//! a file lock, so the controller's interval and a `clear` from another
//! process serialise.

use std::fs::File;
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{bail, Context, Result};
use aya::maps::MapData;
use dataplane_common::buffer::NUM_TC;
use dataplane_common::lossless::{Watermark, MODEL_PORTS};
use dataplane_common::names;
use serde::{Deserialize, Serialize};

use crate::sys;

/// SONiC's default watermark telemetry interval, seconds.
pub const DEFAULT_INTERVAL_S: u64 = 120;

/// Entries of `WATERMARKS`: index port * 8 + tc.
pub const ENTRIES: usize = MODEL_PORTS * NUM_TC;

/// What a mark measures (the order of `Watermark`'s fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An egress queue's shared occupancy.
    QueueShared = 0,
    /// An ingress PG's shared occupancy.
    PgShared = 1,
    /// An ingress PG's headroom (XOFF room) occupancy.
    PgHeadroom = 2,
    /// The shared pool's occupancy as the entry's PG left it (the pool's
    /// peak: the maximum over every entry, [`Folded::pool`]).
    PoolShared = 3,
}

/// Kinds per entry.
pub const KINDS: usize = 4;
const _: () = assert!(core::mem::size_of::<Watermark>() == 4 * KINDS);

impl Kind {
    pub const ALL: [Kind; KINDS] = [
        Kind::QueueShared,
        Kind::PgShared,
        Kind::PgHeadroom,
        Kind::PoolShared,
    ];
}

/// A window ([`Folded`]'s fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Window {
    Periodic,
    Persistent,
    User,
}

/// Marks of every entry, per kind.
pub type Marks = Vec<[u32; KINDS]>;

/// The folded windows, as stored in the state directory.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Folded {
    /// Id of the `WATERMARKS` map folded from: another id is another data
    /// plane, whose marks start over.
    pub map_id: u32,
    pub periodic: Marks,
    pub persistent: Marks,
    pub user: Marks,
}

impl Folded {
    fn new(map_id: u32) -> Folded {
        let z = vec![[0; KINDS]; ENTRIES];
        Folded {
            map_id,
            periodic: z.clone(),
            persistent: z.clone(),
            user: z,
        }
    }

    /// The shared pool's peak in window `w`: the maximum of every
    /// entry's share.
    pub fn pool(&self, w: Window) -> u32 {
        self.window(w)
            .iter()
            .map(|e| e[Kind::PoolShared as usize])
            .max()
            .unwrap_or(0)
    }

    pub fn window(&self, w: Window) -> &Marks {
        match w {
            Window::Periodic => &self.periodic,
            Window::Persistent => &self.persistent,
            Window::User => &self.user,
        }
    }

    fn window_mut(&mut self, w: Window) -> &mut Marks {
        match w {
            Window::Periodic => &mut self.periodic,
            Window::Persistent => &mut self.persistent,
            Window::User => &mut self.user,
        }
    }

    /// Folds one entry's live marks into every window.
    fn fold(&mut self, i: usize, live: [u32; KINDS]) {
        for w in [&mut self.periodic, &mut self.persistent, &mut self.user] {
            for (m, v) in w[i].iter_mut().zip(live) {
                *m = (*m).max(v);
            }
        }
    }

    /// Zeroes `kinds` of window `w`.
    pub fn reset(&mut self, w: Window, kinds: &[Kind]) {
        for e in self.window_mut(w).iter_mut() {
            for k in kinds {
                e[*k as usize] = 0;
            }
        }
    }
}

/// The data plane's marks through a shared mapping of the pinned map.
struct Live {
    ptr: *mut libc::c_void,
    len: usize,
    map_id: u32,
}

impl Live {
    fn open(instance: &str) -> Result<Live> {
        let path = sys::pin_dir(instance).join(names::map::WATERMARKS);
        let data = MapData::from_pin(&path).with_context(|| {
            format!(
                "no watermarks in instance {instance:?}: cannot open {} (is `dataplane up` running a build with watermarks?)",
                path.display()
            )
        })?;
        let info = data.info()?;
        if info.max_entries() as usize != ENTRIES
            || info.value_size() as usize != core::mem::size_of::<Watermark>()
        {
            bail!("{}: unexpected layout", path.display());
        }
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let len = (ENTRIES * core::mem::size_of::<Watermark>()).div_ceil(page) * page;
        // SAFETY: mmap of an mmap-able BPF array map's fd, shared, the
        // array's rounded size; checked for failure below.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                data.fd().as_fd().as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            bail!(
                "mapping {}: {} (the map must be created with BPF_F_MMAPABLE)",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(Live {
            ptr,
            len,
            map_id: info.id(),
        })
    }

    fn mark(&self, i: usize, k: Kind) -> &AtomicU32 {
        assert!(i < ENTRIES);
        // SAFETY: in bounds of the mapping (entry i of 16 bytes, field k of
        // 4), aligned; the kernel and the data plane only store u32s there.
        unsafe { &*(self.ptr as *const AtomicU32).add(i * KINDS + k as usize) }
    }

    fn load(&self, i: usize) -> [u32; KINDS] {
        Kind::ALL.map(|k| self.mark(i, k).load(Ordering::SeqCst))
    }

    fn take(&self, i: usize) -> [u32; KINDS] {
        Kind::ALL.map(|k| self.mark(i, k).swap(0, Ordering::SeqCst))
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`.
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

fn store_path(instance: &str) -> PathBuf {
    sys::state_dir(instance).join("watermarks.json")
}

/// The store's lock, shared or exclusive.
fn lock(instance: &str, exclusive: bool) -> Result<File> {
    let dir = sys::state_dir(instance);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("watermarks.lock");
    let f = sys::lock_file(&path)?;
    let op = if exclusive {
        libc::LOCK_EX
    } else {
        libc::LOCK_SH
    };
    // SAFETY: flock on an fd we own (released when it closes).
    if unsafe { libc::flock(f.as_raw_fd(), op) } != 0 {
        bail!(
            "locking {}: {}",
            path.display(),
            std::io::Error::last_os_error()
        );
    }
    Ok(f)
}

/// The windows as an older controller stored them, with three kinds per
/// entry (no pool): read so that a new controller keeps them.
#[derive(Deserialize)]
struct Folded3 {
    map_id: u32,
    periodic: Vec<[u32; 3]>,
    persistent: Vec<[u32; 3]>,
    user: Vec<[u32; 3]>,
}

impl From<Folded3> for Folded {
    fn from(f: Folded3) -> Folded {
        let four = |m: Vec<[u32; 3]>| m.into_iter().map(|[a, b, c]| [a, b, c, 0]).collect();
        Folded {
            map_id: f.map_id,
            periodic: four(f.periodic),
            persistent: four(f.persistent),
            user: four(f.user),
        }
    }
}

/// A stored [`Folded`], in this build's layout or an older one's.
pub fn parse_store(text: &str) -> Option<Folded> {
    serde_json::from_str::<Folded>(text)
        .ok()
        .or_else(|| serde_json::from_str::<Folded3>(text).ok().map(Folded::from))
}

fn load_store(instance: &str, map_id: u32) -> Folded {
    std::fs::read_to_string(store_path(instance))
        .ok()
        .and_then(|t| parse_store(&t))
        .filter(|f| f.map_id == map_id && f.periodic.len() == ENTRIES)
        .filter(|f| f.persistent.len() == ENTRIES && f.user.len() == ENTRIES)
        .unwrap_or_else(|| Folded::new(map_id))
}

fn save_store(instance: &str, f: &Folded) -> Result<()> {
    let path = store_path(instance);
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec(f)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, &path).with_context(|| format!("writing {}", path.display()))
}

/// Every window of a running instance, each the maximum of what was folded
/// and what the data plane holds now.
pub fn read(instance: &str) -> Result<Folded> {
    let live = Live::open(instance)?;
    let _l = lock(instance, false)?;
    let mut f = load_store(instance, live.map_id);
    for i in 0..ENTRIES {
        f.fold(i, live.load(i));
    }
    Ok(f)
}

/// A reset a fold ends with.
#[derive(Clone, Copy, Debug)]
pub enum Reset<'a> {
    /// Only fold (nothing reset).
    None,
    /// The watermark interval ended: the periodic window starts over.
    Period,
    /// `clear ... watermark`: the user window of these kinds.
    User(&'a [Kind]),
    /// `clear ... persistent-watermark`.
    Persistent(&'a [Kind]),
}

/// Takes the data plane's marks (atomic exchange with 0), folds them into
/// every window, applies `reset` and stores the windows.
pub fn fold(instance: &str, reset: Reset) -> Result<()> {
    let live = Live::open(instance)?;
    let _l = lock(instance, true)?;
    let mut f = load_store(instance, live.map_id);
    for i in 0..ENTRIES {
        f.fold(i, live.take(i));
    }
    match reset {
        Reset::None => {}
        Reset::Period => f.reset(Window::Periodic, &Kind::ALL),
        Reset::User(k) => f.reset(Window::User, k),
        Reset::Persistent(k) => f.reset(Window::Persistent, k),
    }
    save_store(instance, &f)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store an older controller wrote (three kinds per entry) is kept,
    /// the pool's mark 0; this build's store reads back as written.
    #[test]
    fn older_stores_are_kept() {
        let old = serde_json::json!({
            "map_id": 7,
            "periodic": vec![[1, 2, 3]; ENTRIES],
            "persistent": vec![[4, 5, 6]; ENTRIES],
            "user": vec![[7, 8, 9]; ENTRIES],
        });
        let f = parse_store(&old.to_string()).expect("an older store");
        assert_eq!(f.map_id, 7);
        assert_eq!(f.persistent[ENTRIES - 1], [4, 5, 6, 0]);
        assert_eq!(f.user.len(), ENTRIES);
        let mut f2 = Folded::new(9);
        f2.user[5] = [1, 2, 3, 4];
        assert_eq!(parse_store(&serde_json::to_string(&f2).unwrap()), Some(f2));
    }

    /// The pool's peak is the maximum of every entry's share, per window;
    /// a reset of the pool kind leaves the other kinds alone.
    #[test]
    fn pool_is_the_maximum_share() {
        let mut f = Folded::new(1);
        f.fold(3, [10, 20, 30, 500]);
        f.fold(77, [0, 0, 0, 900]);
        f.fold(3, [0, 0, 0, 700]);
        assert_eq!(f.pool(Window::User), 900);
        assert_eq!(f.pool(Window::Persistent), 900);
        f.reset(Window::User, &[Kind::PoolShared]);
        assert_eq!(f.pool(Window::User), 0);
        assert_eq!(f.user[3], [10, 20, 30, 0]);
        assert_eq!(f.pool(Window::Persistent), 900);
        f.fold(5, [0, 0, 0, 40]);
        assert_eq!(f.pool(Window::User), 40);
    }
}
