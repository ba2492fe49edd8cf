//! Node state shared by the partitions of a run ([`crate::partition`]):
//! one array of switches, hosts or flows, indexed by the global id, that
//! every partition holds a handle on and writes only the entries it owns.
//!
//! Ownership is by construction: a switch or host is touched only by the
//! events of its node, which only its partition runs; a flow's sender half
//! ([`crate::host::state::Flow`]) only by its source host's partition, its
//! receiver half ([`crate::host::state::FlowRx`]) only by its destination's.
//! Partitions on different threads therefore never reach the same entry
//! during a window, and between windows one thread holds every handle. A
//! run with one partition has a single handle: a `Vec` in all but name.
//!
//! A process that runs some of the partitions (an MPI rank,
//! [`crate::ranks`]) holds only the entries its partitions own: the array
//! is then sparse ([`Shared::sparse`]): a bit an index says whether its
//! entry is held here, and its place among those held is the count of
//! held entries before it (kept per 64 indices: 16 bytes per 64, a
//! lookup one load and a popcount); reaching an entry held elsewhere is a
//! bug that panics naming it.

use std::cell::UnsafeCell;
use std::ops::{Index, IndexMut};
use std::sync::Arc;

/// The entries held, and for a sparse array which indices they are.
struct Store<T>(UnsafeCell<Vec<T>>, UnsafeCell<Option<Map>>);

/// Which indices of a sparse array are held here: per 64 indices, a bit
/// each and the count held before them.
#[derive(Default)]
struct Map {
    words: Vec<Word>,
    /// Indices (held here or not).
    len: usize,
}

#[derive(Clone, Copy)]
struct Word {
    bits: u64,
    before: u32,
}

impl Map {
    fn push(&mut self, held: bool, held_before: usize) {
        if self.len.is_multiple_of(64) {
            self.words.push(Word {
                bits: 0,
                before: u32::try_from(held_before).expect("fewer than 2^32 entries"),
            });
        }
        if held {
            self.words.last_mut().expect("a word").bits |= 1 << (self.len % 64);
        }
        self.len += 1;
    }
}

// SAFETY: entries are reached only through `Shared` handles, whose users
// keep to the ownership rule above: no entry is written from two threads
// at once (read-only arrays, `addrs`, are read from all: hence `Sync`),
// and the vector itself grows only while one handle exists.
unsafe impl<T: Send + Sync> Sync for Store<T> {}

/// A handle on a shared array (see the module's ownership rule).
pub struct Shared<T> {
    ptr: *mut T,
    /// Entries held.
    len: usize,
    /// A sparse array's map's words (null: dense), and its indices (the
    /// global index's range).
    map: *const Word,
    map_len: usize,
    store: Arc<Store<T>>,
}

// SAFETY: as `Store`: a handle moves to the thread that runs its partition.
unsafe impl<T: Send + Sync> Send for Shared<T> {}

impl<T> Shared<T> {
    pub fn new(v: Vec<T>) -> Self {
        Self::of(v, None)
    }

    /// An empty array of which this process holds some entries
    /// ([`Shared::push`] one held here, [`Shared::skip`] one that is not).
    pub fn sparse() -> Self {
        Self::of(Vec::new(), Some(Map::default()))
    }

    fn of(v: Vec<T>, map: Option<Map>) -> Self {
        let mut s = Shared {
            ptr: std::ptr::null_mut(),
            len: 0,
            map: std::ptr::null(),
            map_len: 0,
            store: Arc::new(Store(UnsafeCell::new(v), UnsafeCell::new(map))),
        };
        s.refresh();
        s
    }

    /// The vector and the map themselves, while this is the only handle
    /// (building a run).
    fn vec_mut(&mut self) -> (&mut Vec<T>, &mut Option<Map>) {
        assert!(
            Arc::strong_count(&self.store) == 1,
            "a shared array changes size only before the run is partitioned"
        );
        // the caller may reallocate: refresh the cached pointers next time
        self.ptr = std::ptr::null_mut();
        self.len = 0;
        self.map = std::ptr::null();
        self.map_len = 0;
        // SAFETY: the only handle, borrowed mutably
        unsafe { (&mut *self.store.0.get(), &mut *self.store.1.get()) }
    }

    fn refresh(&mut self) {
        // SAFETY: reading the vectors' pointers and lengths; nobody resizes
        // them while handles are shared
        let (v, m) = unsafe { (&mut *self.store.0.get(), &*self.store.1.get()) };
        self.ptr = v.as_mut_ptr();
        self.len = v.len();
        (self.map, self.map_len) = match m {
            Some(m) => (m.words.as_ptr(), m.len),
            None => (std::ptr::null(), 0),
        };
    }

    /// Appends an entry held here.
    pub fn push(&mut self, x: T) {
        let (v, m) = self.vec_mut();
        if let Some(m) = m {
            m.push(true, v.len());
        }
        v.push(x);
        self.refresh();
    }

    /// Appends an index whose entry another process holds (a sparse
    /// array's).
    pub fn skip(&mut self) {
        let (v, m) = self.vec_mut();
        m.as_mut()
            .expect("only a sparse array skips an entry")
            .push(false, v.len());
        self.refresh();
    }

    pub fn clear(&mut self) {
        let (v, m) = self.vec_mut();
        v.clear();
        if let Some(m) = m {
            *m = Map::default();
        }
        self.refresh();
    }

    /// Where index `i`'s entry is among those held (`usize::MAX`: not
    /// held here, or out of range).
    #[inline(always)]
    fn pos(&self, i: usize) -> usize {
        if self.map.is_null() {
            return i;
        }
        if i >= self.map_len {
            return usize::MAX;
        }
        // SAFETY: in the map's bounds (a word per 64 indices)
        let w = unsafe { *self.map.add(i / 64) };
        let bit = 1u64 << (i % 64);
        if w.bits & bit == 0 {
            usize::MAX
        } else {
            w.before as usize + (w.bits & (bit - 1)).count_ones() as usize
        }
    }

    /// Whether index `i`'s entry is held here.
    pub fn holds(&self, i: usize) -> bool {
        self.pos(i) < self.len
    }

    /// Index `i`'s entry, if held here.
    pub fn get(&self, i: usize) -> Option<&T> {
        let j = self.pos(i);
        // SAFETY: in bounds; the entry is this partition's (module rule)
        (j < self.len).then(|| unsafe { &*self.ptr.add(j) })
    }

    /// Index `i`'s entry, mutably, if held here.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        let j = self.pos(i);
        // SAFETY: as `get`, and this handle is borrowed mutably
        (j < self.len).then(|| unsafe { &mut *self.ptr.add(j) })
    }

    /// Where index `i`'s entry is among those held, if held here: a place
    /// that [`Shared::at_mut`] reaches without looking it up again.
    #[inline]
    pub fn slot(&self, i: usize) -> Option<usize> {
        let j = self.pos(i);
        (j < self.len).then_some(j)
    }

    /// The entry at place `slot` among those held ([`Shared::slot`]).
    #[inline(always)]
    pub fn at_mut(&mut self, slot: usize) -> &mut T {
        assert!(slot < self.len, "place {slot} of {} held", self.len);
        // SAFETY: in bounds; the entry is this partition's (module rule)
        unsafe { &mut *self.ptr.add(slot) }
    }

    /// Entries held here (every index's, unless sparse).
    pub fn held(&self) -> usize {
        self.len
    }

    /// The bytes of a sparse array's map (0: dense).
    pub fn map_bytes(&self) -> usize {
        self.map_len.div_ceil(64) * std::mem::size_of::<Word>()
    }

    /// Another handle on the same entries (for another partition).
    ///
    /// # Safety
    /// The handles' users keep to the module's ownership rule: an entry is
    /// written through one handle at a time, and only between windows (one
    /// thread) are the whole arrays read ([`Shared::as_slice`]).
    pub unsafe fn share(&mut self) -> Self {
        self.refresh();
        Shared {
            ptr: self.ptr,
            len: self.len,
            map: self.map,
            map_len: self.map_len,
            store: Arc::clone(&self.store),
        }
    }

    /// The range of the (global) index: the entries held here, and for a
    /// sparse array those held elsewhere too.
    pub fn len(&self) -> usize {
        if self.map.is_null() {
            self.len
        } else {
            self.map_len
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every entry held here, in index order: only between windows (or
    /// with one partition), when no other thread runs.
    pub fn as_slice(&self) -> &[T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` entries from `ptr`; no other thread writes now
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    /// Every entry, mutably: as [`Shared::as_slice`].
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: as `as_slice`, and this handle is borrowed mutably
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }

    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.as_mut_slice().iter_mut()
    }
}

impl<T> Index<usize> for Shared<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        let j = self.pos(i);
        assert!(j < self.len, "index {i} of {}: not held here", self.len());
        // SAFETY: in bounds; the entry is this partition's (module rule)
        unsafe { &*self.ptr.add(j) }
    }
}

impl<T> IndexMut<usize> for Shared<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        let j = self.pos(i);
        assert!(j < self.len, "index {i} of {}: not held here", self.len());
        // SAFETY: in bounds; the entry is this partition's (module rule)
        unsafe { &mut *self.ptr.add(j) }
    }
}

impl<'a, T> IntoIterator for &'a Shared<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut Shared<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}
