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

use std::cell::UnsafeCell;
use std::ops::{Index, IndexMut};
use std::sync::Arc;

struct Store<T>(UnsafeCell<Vec<T>>);

// SAFETY: entries are reached only through `Shared` handles, whose users
// keep to the ownership rule above: no entry is written from two threads
// at once (read-only arrays, `addrs`, are read from all: hence `Sync`),
// and the vector itself grows only while one handle exists.
unsafe impl<T: Send + Sync> Sync for Store<T> {}

/// A handle on a shared array (see the module's ownership rule).
pub struct Shared<T> {
    ptr: *mut T,
    len: usize,
    store: Arc<Store<T>>,
}

// SAFETY: as `Store`: a handle moves to the thread that runs its partition.
unsafe impl<T: Send + Sync> Send for Shared<T> {}

impl<T> Shared<T> {
    pub fn new(v: Vec<T>) -> Self {
        let mut s = Shared {
            ptr: std::ptr::null_mut(),
            len: 0,
            store: Arc::new(Store(UnsafeCell::new(v))),
        };
        s.refresh();
        s
    }

    /// The vector itself, while this is the only handle (building a run).
    fn vec_mut(&mut self) -> &mut Vec<T> {
        assert!(
            Arc::strong_count(&self.store) == 1,
            "a shared array changes size only before the run is partitioned"
        );
        // SAFETY: the only handle, borrowed mutably
        let v = unsafe { &mut *self.store.0.get() };
        // the caller may reallocate: refresh the cached pointer next time
        self.ptr = std::ptr::null_mut();
        self.len = 0;
        v
    }

    fn refresh(&mut self) {
        // SAFETY: reading the vector's pointer and length; nobody resizes
        // it while handles are shared
        let v = unsafe { &mut *self.store.0.get() };
        self.ptr = v.as_mut_ptr();
        self.len = v.len();
    }

    pub fn push(&mut self, x: T) {
        self.vec_mut().push(x);
        self.refresh();
    }

    pub fn clear(&mut self) {
        self.vec_mut().clear();
        self.refresh();
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
            store: Arc::clone(&self.store),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every entry: only between windows (or with one partition), when no
    /// other thread runs.
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
        assert!(i < self.len, "index {i} out of {} entries", self.len);
        // SAFETY: in bounds; the entry is this partition's (module rule)
        unsafe { &*self.ptr.add(i) }
    }
}

impl<T> IndexMut<usize> for Shared<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        assert!(i < self.len, "index {i} out of {} entries", self.len);
        // SAFETY: in bounds; the entry is this partition's (module rule)
        unsafe { &mut *self.ptr.add(i) }
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
