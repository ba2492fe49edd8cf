//! A radix heap (a monotone priority queue: nothing is ever scheduled
//! before the event being handled), O(1) amortised per event: the
//! simulator's event queue until the timing wheel ([`crate::wheel`]), kept
//! as the reference of the order the wheel reproduces (`tests/queue.rs`).
//!
//! The algorithm and its tie order are exactly those of the `radix-heap`
//! crate's `RadixHeapMap<Reverse<u64>, _>`: an event at time `t` goes to
//! bucket `64 - lz(t ^ top)`; a pop takes the last event of bucket 0,
//! and when that is empty the first non-empty bucket is redistributed
//! about its earliest time. Events at one time always share a bucket, in
//! push order, so the order is: the earliest time first and, at one time,
//! the last pushed first.

/// Buckets: distance 0 to 64.
const BUCKETS: usize = 65;

pub struct RadixQueue<V> {
    len: usize,
    /// The earliest time of the last redistribution; `None` until the
    /// first pop (events then wait in `initial`).
    top: Option<u64>,
    buckets: [Vec<(u64, V)>; BUCKETS],
    /// Bit `b` set: bucket `b` (1..=64) is not empty (bucket 0 is read
    /// directly).
    nonempty: u128,
    initial: Vec<(u64, V)>,
}

#[inline(always)]
fn distance(t: u64, top: u64) -> usize {
    (64 - (t ^ top).leading_zeros()) as usize
}

impl<V> RadixQueue<V> {
    pub fn new() -> Self {
        RadixQueue {
            len: 0,
            top: None,
            buckets: std::array::from_fn(|_| Vec::new()),
            nonempty: 0,
            initial: Vec::new(),
        }
    }

    /// Adds `v` at time `t` (not before the last popped time).
    #[inline]
    pub fn push(&mut self, t: u64, v: V) {
        match self.top {
            Some(top) => {
                assert!(t >= top, "event at {t} ns before the clock ({top} ns)");
                let b = distance(t, top);
                self.buckets[b].push((t, v));
                self.nonempty |= 1u128 << b;
            }
            None => self.initial.push((t, v)),
        }
        self.len += 1;
    }

    /// The earliest event (of those at the same time, the order the
    /// crate's heap gives).
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, V)> {
        if let Some(e) = self.buckets[0].pop() {
            self.len -= 1;
            return Some(e);
        }
        self.constrain();
        let e = self.buckets[0].pop();
        if e.is_some() {
            self.len -= 1;
        }
        e
    }

    /// Redistributes the first non-empty bucket (or the initial events)
    /// about its earliest time.
    fn constrain(&mut self) {
        let src = if self.top.is_some() {
            let m = self.nonempty & !1;
            if m == 0 {
                return;
            }
            let i = m.trailing_zeros() as usize;
            self.nonempty &= !(1u128 << i);
            Some(i)
        } else if !self.initial.is_empty() {
            None
        } else {
            return;
        };
        let mut from = match src {
            Some(i) => std::mem::take(&mut self.buckets[i]),
            None => std::mem::take(&mut self.initial),
        };
        let top = from.iter().map(|e| e.0).min().expect("non-empty bucket");
        self.top = Some(top);
        // the events all share the bits above bucket `i`'s with `top`:
        // they land in lower buckets, in their order
        for (t, v) in from.drain(..) {
            let b = distance(t, top);
            self.buckets[b].push((t, v));
            self.nonempty |= 1u128 << b;
        }
        // keep the emptied bucket's allocation for the next round
        match src {
            Some(i) => self.buckets[i] = from,
            None => self.initial = from,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<V> Default for RadixQueue<V> {
    fn default() -> Self {
        Self::new()
    }
}
