//! The event queue: a timing wheel of one slot per nanosecond over the
//! next [`SPAN`] ns, each slot a stack of the events at that instant, and
//! a binary heap for the events further out. O(1) per event near the
//! clock: no event is moved between buckets, as a radix heap does.
//!
//! The stacks are linked lists through one pool of nodes, reused last
//! freed first: the node an event is pushed into is most likely the one
//! the last pop freed, still in cache (a `Vec` per slot spreads the events
//! over 4096 allocations, one of which each push or pop touches).
//!
//! The order is the radix heap's ([`crate::queue::RadixQueue`], which the
//! simulator used before, so a seed gives the same run): the earliest time
//! first and, among events at the same time, the last pushed first. A
//! slot's stack gives that directly. An event pushed [`SPAN`] ns or more
//! ahead waits in the heap (ordered by time, then push order) and joins its
//! slot's stack as soon as the clock is within [`SPAN`] of it, which is
//! before any event at its time can be pushed onto the stack directly, so
//! it stays below them; events at one time join in the order they were
//! pushed.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Nanoseconds the wheel covers (a power of two; 64 x 64 bits).
pub const SPAN: u64 = 4096;
const SLOT_MASK: u64 = SPAN - 1;
const WORDS: usize = (SPAN / 64) as usize;
const _: () = assert!(WORDS == 64);
/// An event further out than the wheel: by time, then push order.
struct Far<V> {
    t: u64,
    seq: u64,
    v: V,
}

impl<V> PartialEq for Far<V> {
    fn eq(&self, o: &Self) -> bool {
        (self.t, self.seq) == (o.t, o.seq)
    }
}
impl<V> Eq for Far<V> {}
impl<V> PartialOrd for Far<V> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<V> Ord for Far<V> {
    fn cmp(&self, o: &Self) -> Ordering {
        (self.t, self.seq).cmp(&(o.t, o.seq))
    }
}

/// No node (the end of a stack or of the free list).
const NIL: u32 = u32::MAX;

/// An event on the wheel and the node below it on its slot's stack (or the
/// next free node).
#[derive(Clone, Copy)]
struct Node<V> {
    v: V,
    next: u32,
}

pub struct WheelQueue<V: Copy> {
    /// The time of the last pop: nothing may be pushed before it, and the
    /// wheel holds exactly the events in `[now, now + SPAN)`.
    now: u64,
    len: usize,
    /// Per slot (time mod [`SPAN`]): the top node of its stack of events
    /// (the time is the slot's), or [`NIL`].
    heads: Vec<u32>,
    /// The nodes of every stack, and free ones.
    nodes: Vec<Node<V>>,
    /// The last freed node (its `next`: the one freed before), or [`NIL`].
    free: u32,
    /// A bit per non-empty slot.
    bits: [u64; WORDS],
    /// A bit per non-zero word of `bits`.
    summary: u64,
    far: BinaryHeap<Reverse<Far<V>>>,
    seq: u64,
    /// The earliest non-empty slot and its time, once looked up and while
    /// still true (a push before it or emptying it forgets it): the peek
    /// that prefetches and the pop after it look it up once.
    earliest: Option<(usize, u64)>,
}

impl<V: Copy> WheelQueue<V> {
    pub fn new() -> Self {
        WheelQueue {
            now: 0,
            len: 0,
            heads: vec![NIL; SPAN as usize],
            nodes: Vec::new(),
            free: NIL,
            bits: [0; WORDS],
            summary: 0,
            far: BinaryHeap::new(),
            seq: 0,
            earliest: None,
        }
    }

    /// Adds `v` at time `t` (not before the last popped time). The near
    /// case inlines where it is called; the heap's is a call.
    #[inline(always)]
    pub fn push(&mut self, t: u64, v: V) {
        assert!(
            t >= self.now,
            "event at {t} ns before the clock ({} ns)",
            self.now
        );
        if t - self.now < SPAN {
            self.push_near(t, v);
        } else {
            self.push_far(t, v);
        }
        self.len += 1;
    }

    /// An event [`SPAN`] ns or more ahead: into the heap.
    #[inline(never)]
    fn push_far(&mut self, t: u64, v: V) {
        self.far.push(Reverse(Far {
            t,
            seq: self.seq,
            v,
        }));
        self.seq += 1;
    }

    #[inline(always)]
    fn push_near(&mut self, t: u64, v: V) {
        let s = (t & SLOT_MASK) as usize;
        let next = self.heads[s];
        let i = if self.free != NIL {
            let i = self.free;
            self.free = self.nodes[i as usize].next;
            self.nodes[i as usize] = Node { v, next };
            i
        } else {
            assert!(self.nodes.len() < NIL as usize, "event queue full");
            self.nodes.push(Node { v, next });
            (self.nodes.len() - 1) as u32
        };
        self.heads[s] = i;
        self.bits[s >> 6] |= 1 << (s & 63);
        self.summary |= 1 << (s >> 6);
        if let Some((_, te)) = self.earliest {
            if t < te {
                self.earliest = Some((s, t));
            }
        }
    }

    /// The earliest non-empty slot of the wheel (not empty) and its time.
    #[inline(always)]
    fn earliest_slot(&mut self) -> (usize, u64) {
        if let Some(e) = self.earliest {
            return e;
        }
        let e = self.first_slot();
        self.earliest = Some(e);
        e
    }

    /// The first non-empty slot from the clock on (the wheel is not
    /// empty) and its time.
    #[inline(always)]
    fn first_slot(&self) -> (usize, u64) {
        let s = self.next_slot((self.now & SLOT_MASK) as usize);
        (
            s,
            self.now + ((s as u64).wrapping_sub(self.now) & SLOT_MASK),
        )
    }

    /// The earliest event (of those at the same time, the last pushed).
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, V)> {
        if self.summary == 0 {
            // nothing within the span: the clock jumps to the heap's first
            let t = self.far.peek()?.0.t;
            self.now = t;
            self.earliest = None;
            self.pull_far();
        }
        let (s, t) = self.earliest_slot();
        Some(self.take(s, t))
    }

    /// Takes the top event of slot `s` (time `t`), the earliest.
    #[inline(always)]
    fn take(&mut self, s: usize, t: u64) -> (u64, V) {
        let i = self.heads[s];
        debug_assert!(i != NIL, "a non-empty slot");
        let Node { v, next } = self.nodes[i as usize];
        self.nodes[i as usize].next = self.free;
        self.free = i;
        self.heads[s] = next;
        if next == NIL {
            self.bits[s >> 6] &= !(1 << (s & 63));
            if self.bits[s >> 6] == 0 {
                self.summary &= !(1 << (s >> 6));
            }
            self.earliest = None;
        }
        self.len -= 1;
        if t > self.now {
            self.now = t;
            if self.far_due() {
                self.pull_far();
            }
        }
        (t, v)
    }

    /// The time of the next pop, if any.
    #[inline]
    pub fn peek_time(&self) -> Option<u64> {
        if self.summary == 0 {
            return self.far.peek().map(|f| f.0.t);
        }
        Some(self.earliest.unwrap_or_else(|| self.first_slot()).1)
    }

    /// The earliest event if it is before `end`.
    #[inline]
    pub fn pop_before(&mut self, end: u64) -> Option<(u64, V)> {
        if self.summary == 0 {
            return match self.far.peek() {
                Some(f) if f.0.t < end => self.pop(),
                _ => None,
            };
        }
        let (s, t) = self.earliest_slot();
        (t < end).then(|| self.take(s, t))
    }

    /// The event the next pop returns if it is on the wheel (and nothing
    /// is pushed before it), without taking it: to prefetch what it reads.
    #[inline]
    pub fn peek_near(&mut self) -> Option<V> {
        if self.summary == 0 {
            return None;
        }
        let (s, _) = self.earliest_slot();
        let i = self.heads[s];
        (i != NIL).then(|| self.nodes[i as usize].v)
    }

    /// The heap's first event is within the span.
    #[inline(always)]
    fn far_due(&self) -> bool {
        matches!(self.far.peek(), Some(Reverse(f)) if f.t - self.now < SPAN)
    }

    /// Moves the heap's events that are now within the span onto their
    /// slots' stacks, earliest first and in push order at one time.
    #[inline(never)]
    fn pull_far(&mut self) {
        while let Some(Reverse(f)) = self.far.peek() {
            if f.t - self.now >= SPAN {
                break;
            }
            let Reverse(f) = self.far.pop().expect("peeked");
            self.push_near(f.t, f.v);
        }
    }

    /// The first non-empty slot from `from` on, wrapping (the wheel is not
    /// empty): the earliest time, since the wheel spans `[now, now + SPAN)`.
    #[inline(always)]
    fn next_slot(&self, from: usize) -> usize {
        let w = from >> 6;
        let m = self.bits[w] & (u64::MAX << (from & 63));
        if m != 0 {
            return (w << 6) | m.trailing_zeros() as usize;
        }
        let later = self.summary & ((u64::MAX << w) << 1);
        let w = if later != 0 {
            later.trailing_zeros() as usize
        } else {
            self.summary.trailing_zeros() as usize
        };
        (w << 6) | self.bits[w].trailing_zeros() as usize
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl<V: Copy> Default for WheelQueue<V> {
    fn default() -> Self {
        Self::new()
    }
}
