//! The egress queue of one (egress port, TC): bytes held, drained at the port
//! rate, frozen while paused.

use super::*;

/// The model of one egress queue (egress port, TC), a map value.
///
/// Invariant: `bytes` equals the sum of `ingress` (every function keeps it;
/// a drain that releases bytes resynchronises `bytes` to the sum if a
/// corrupted value broke it).
///
/// Generic over the ingress slots it tracks, `N` (a power of two, at most
/// 64): the data plane's maps hold [`EgressQueue`] (`N` =
/// [`MODEL_PORTS`]); a simulated switch with more ports uses a larger `N`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EgressQueueN<const N: usize> {
    /// Bytes held.
    pub bytes: u32,
    /// Sub-byte drain credit carried between updates, in millibits (< 8000),
    /// so frequent updates drain exactly as much as one long one.
    pub drain_frac: u32,
    /// Time of the last update.
    pub last_ns: u64,
    /// The queue is paused (a PFC frame for its priority was received on the
    /// egress port) until this time; `<= now` means not paused.
    pub paused_until_ns: u64,
    /// Bytes transmitted (drained) since creation, wrapping; the watchdog
    /// reads its delta with `wrapping_sub`.
    pub tx_bytes: u64,
    /// Bytes held per ingress slot (ingress port id `& (N-1)`).
    pub ingress: [u32; N],
    /// Peak of `bytes` (watermark); the controller clears it.
    pub peak_bytes: u32,
    /// Rotating start of the rounding-remainder pass (0..N).
    pub cursor: u32,
}

/// The data plane's egress queue: [`MODEL_PORTS`] ingress slots.
pub type EgressQueue = EgressQueueN<MODEL_PORTS>;

impl<const N: usize> EgressQueueN<N> {
    /// `N - 1`, the slot mask (`N` is a power of two, at most 64: the
    /// rounding pass keeps one bit per slot in a `u64`).
    const SLOT_MASK: usize = {
        assert!(N.is_power_of_two() && N <= 64);
        N - 1
    };

    pub const ZERO: EgressQueueN<N> = EgressQueueN {
        bytes: 0,
        drain_frac: 0,
        last_ns: 0,
        paused_until_ns: 0,
        tx_bytes: 0,
        ingress: [0; N],
        peak_bytes: 0,
        cursor: 0,
    };

    /// The queue is paused at `now_ns`.
    #[inline(always)]
    pub fn is_paused(&self, now_ns: u64) -> bool {
        self.paused_until_ns > now_ns
    }

    /// Drains the queue up to `now_ns` at `speed_mbps` and returns the bytes
    /// drained; `released[i]` receives the bytes released from ingress slot
    /// `i` (overwritten; they sum exactly to the return value).
    ///
    /// Only the un-paused part of `(last_ns, now_ns]` drains: a pause that
    /// ended inside the interval (timer expiry) leaves `(paused_until_ns,
    /// now_ns]`. A pause or XON that starts inside the interval is an event
    /// the caller applies at its own time with [`EgressQueue::apply_pfc`],
    /// which drains up to that time first, so the interval before it drains
    /// at full rate. A port of speed 0 never drains. An empty queue forgets
    /// its sub-byte credit (an idle link earns none).
    #[inline(always)]
    pub fn drain(&mut self, now_ns: u64, speed_mbps: u32, released: &mut [u32; N]) -> u32 {
        fill(released, 0);
        self.drain_by::<false>(now_ns, speed_mbps, released).0
    }

    /// [`EgressQueueN::drain`] for a queue whose bytes are all in ingress
    /// slot `slot` (masked to `0..N`): the same drain (bytes, sub-byte
    /// credit, clock, rotating start, transmitted count) with no visit of
    /// the other slots. Returns the bytes released, all from `slot` (every
    /// other slot releases 0), or `None`, with the queue untouched, when
    /// `bytes` differs from the slot's count (other slots hold bytes: call
    /// [`EgressQueueN::drain`]).
    ///
    /// Relies on the queue's invariant (`bytes` is the sum of the slots),
    /// as [`EgressQueueN::drain_held`] does: with it, `bytes` equal to one
    /// slot's count means every other slot is empty, and the proportional
    /// release gives that slot exactly the bytes leaving, with no fraction
    /// and nothing to round. The eBPF fast path of an arrival (the common
    /// case of one ingress port feeding a queue), which saves the
    /// [`MODEL_PORTS`]-slot passes of the general drain.
    #[inline(always)]
    pub fn drain_one(&mut self, now_ns: u64, speed_mbps: u32, slot: usize) -> Option<u32> {
        let s = slot & Self::SLOT_MASK;
        if self.bytes != self.ingress[s] {
            return None;
        }
        let Some(elapsed) = self.drain_clock(now_ns) else {
            return Some(0);
        };
        // the clock step saw bytes, so `bytes` (= the slot's) > 0
        let total = self.ingress[s];
        let (d, frac) = if drains_all(elapsed, speed_mbps, self.drain_frac, total) {
            // everything leaves; the credit is dropped with the bytes
            // (`drain_done`), so it is not computed (no division)
            (total, 0)
        } else {
            let Some((want, frac)) = self.drain_want(elapsed, speed_mbps) else {
                return Some(0);
            };
            (if want < total { want } else { total }, frac)
        };
        self.ingress[s] = total - d;
        self.cursor = ((self.cursor as usize + 1) & Self::SLOT_MASK) as u32;
        self.bytes = total - d;
        self.drain_done(d, frac);
        Some(d)
    }

    /// [`EgressQueueN::drain`], returning also a set of ingress slots (bit
    /// `i`: slot `i`) that holds every slot with bytes released: exactly
    /// those off eBPF, all `N` slots in the eBPF build (which does not
    /// track them). The entries of `released` in that set are written;
    /// the others are not cleared (no clearing of `N` entries per drain:
    /// they keep what they held, or get 0), so a caller reads only those
    /// ([`crate::buffer::release_row_slots`]).
    #[inline(always)]
    pub fn drain_slots(
        &mut self,
        now_ns: u64,
        speed_mbps: u32,
        released: &mut [u32; N],
    ) -> (u32, u64) {
        self.drain_by::<false>(now_ns, speed_mbps, released)
    }

    /// [`EgressQueueN::drain`] in the form the eBPF build runs (every slot
    /// visited, no branch per slot), on the host: tests check that the
    /// host's form ([`EgressQueueN::drain_slots`]) gives the same bytes,
    /// slots and state.
    #[cfg(not(target_arch = "bpf"))]
    #[doc(hidden)]
    pub fn drain_as_ebpf(&mut self, now_ns: u64, speed_mbps: u32, released: &mut [u32; N]) -> u32 {
        fill(released, 0);
        self.drain_by::<true>(now_ns, speed_mbps, released).0
    }

    /// The drain of [`EgressQueueN::drain`], releasing with
    /// [`EgressQueueN::release_every_slot`] if `EVERY_SLOT`, else with
    /// [`EgressQueueN::release_proportional`]. Writes `released` for the
    /// slots of the set it returns (and may write 0 to others); the
    /// callers that promise every entry clear it first.
    #[inline(always)]
    fn drain_by<const EVERY_SLOT: bool>(
        &mut self,
        now_ns: u64,
        speed_mbps: u32,
        released: &mut [u32; N],
    ) -> (u32, u64) {
        let Some((want, frac)) = self.drain_due(now_ns, speed_mbps) else {
            return (0, 0);
        };
        let (done, slots) = if EVERY_SLOT {
            self.release_every_slot(want, released)
        } else {
            self.release_proportional(want, released)
        };
        self.drain_done(done, frac);
        (done, slots)
    }

    /// [`EgressQueueN::drain_slots`] for a caller that keeps `held`, a set
    /// of slots (bit `i`: slot `i`) holding every slot with bytes, so the
    /// drain visits those instead of all `N` to find them: the same bytes
    /// to the same slots and the same state as `drain_slots`, and `held`
    /// becomes exactly the slots still holding bytes when bytes left (else
    /// it is kept). The caller adds a slot when it enqueues to it. Off eBPF
    /// only (the eBPF maps have no room for the set).
    ///
    /// The queue must keep its invariant (`bytes` is the sum of the slots:
    /// a queue only this code and [`EgressQueueN::enqueue`] change does):
    /// the drain takes `bytes` as that sum rather than adding the slots up
    /// (debug builds check it), where `drain_slots` resynchronises a
    /// corrupted `bytes`.
    ///
    /// `n`, a power of two from 1 to `N`, is the slot count the queue
    /// stands for: only slots below it may hold bytes, and the rounding
    /// pass's rotating start wraps at it, so the drain is exactly that of
    /// an `EgressQueueN<n>` holding the same bytes (`n = N`: the drain of
    /// `drain_slots`). A caller with queues of several sizes stores them
    /// all in one `N` and runs one copy of this code.
    #[cfg(not(target_arch = "bpf"))]
    #[inline(always)]
    pub fn drain_held(
        &mut self,
        now_ns: u64,
        speed_mbps: u32,
        released: &mut [u32; N],
        held: &mut u64,
        n: usize,
    ) -> (u32, u64) {
        let Some((want, frac)) = self.drain_due(now_ns, speed_mbps) else {
            return (0, 0);
        };
        debug_assert!(n.is_power_of_two() && n <= N && *held >> (n - 1) >> 1 == 0);
        debug_assert_eq!(
            self.ingress.iter().map(|&c| u64::from(c)).sum::<u64>(),
            u64::from(self.bytes),
            "bytes is the sum of the slots"
        );
        let held_in = *held & Self::ALL_SLOTS;
        let total = u64::from(self.bytes);
        let (done, slots, still) = self.release_held(want, released, total, held_in, n);
        *held = still;
        self.drain_done(done, frac);
        (done, slots)
    }

    /// A drain's first step: the clock moves to `now_ns` (see
    /// [`EgressQueueN::drain`]); the bytes that leave and the sub-byte
    /// credit after them, or `None` when none leave (the state then
    /// already updated).
    #[inline(always)]
    fn drain_due(&mut self, now_ns: u64, speed_mbps: u32) -> Option<(u32, u32)> {
        let elapsed = self.drain_clock(now_ns)?;
        self.drain_want(elapsed, speed_mbps)
    }

    /// The clock step of [`EgressQueueN::drain_due`]: `last_ns` moves to
    /// `now_ns`; the un-paused ns of the interval, or `None` when nothing
    /// can leave (out of order, or an empty queue, which forgets its
    /// credit).
    #[inline(always)]
    fn drain_clock(&mut self, now_ns: u64) -> Option<u64> {
        if now_ns <= self.last_ns {
            return None;
        }
        let start = if self.paused_until_ns > self.last_ns {
            if self.paused_until_ns < now_ns {
                self.paused_until_ns
            } else {
                now_ns
            }
        } else {
            self.last_ns
        };
        self.last_ns = now_ns;
        if self.bytes == 0 {
            self.drain_frac = 0;
            return None;
        }
        Some(now_ns - start)
    }

    /// The rest of [`EgressQueueN::drain_due`] after its clock step.
    #[inline(always)]
    fn drain_want(&mut self, elapsed: u64, speed_mbps: u32) -> Option<(u32, u32)> {
        let (avail, frac) = bytes_in(elapsed, speed_mbps, self.drain_frac);
        let want = if avail < u64::from(self.bytes) {
            avail as u32
        } else {
            self.bytes
        };
        if want == 0 {
            // Paused, or less than a byte of credit: keep the fraction.
            self.drain_frac = frac;
            return None;
        }
        Some((want, frac))
    }

    /// A drain's last step, after `done` bytes were released: the credit
    /// kept unless the queue emptied, and the transmitted count.
    #[inline(always)]
    fn drain_done(&mut self, done: u32, frac: u32) {
        self.drain_frac = if self.bytes == 0 { 0 } else { frac };
        self.tx_bytes = self.tx_bytes.wrapping_add(u64::from(done));
    }

    /// Applies a received PFC time for this queue's priority at `now_ns`
    /// (802.1Qbb: a new time reloads the timer, even a shorter one; 0 is
    /// XON). Drains up to `now_ns` first (see [`EgressQueue::drain`]) and
    /// returns the bytes drained. The pause lasts `quanta x 512` bit times at
    /// `speed_mbps` ([`quanta_to_nanos`]).
    #[inline(always)]
    pub fn apply_pfc(
        &mut self,
        now_ns: u64,
        quanta: u16,
        speed_mbps: u32,
        released: &mut [u32; N],
    ) -> u32 {
        let done = self.drain(now_ns, speed_mbps, released);
        // `last_ns` is now `now_ns`, or later when `now_ns` was out of order:
        // the event then applies at the state's time, so a pause never
        // starts in the already-drained past.
        let at = self.last_ns;
        if quanta == 0 {
            if self.paused_until_ns > at {
                self.paused_until_ns = at;
            }
        } else {
            self.paused_until_ns =
                at.saturating_add(quanta_to_nanos(quanta, u64::from(speed_mbps)));
        }
        done
    }

    /// Adds `len` bytes from ingress slot `slot` (masked to
    /// `0..N`) and returns the bytes accepted: all of them unless
    /// the queue would exceed 4 GiB - 1 (the caller counts a shortfall as a
    /// drop). Call [`EgressQueue::drain`] up to now first, so the new bytes
    /// do not drain over the past.
    #[inline(always)]
    pub fn enqueue(&mut self, slot: usize, len: u32) -> u32 {
        let room = u32::MAX - self.bytes;
        let take = if len < room { len } else { room };
        let s = &mut self.ingress[slot & Self::SLOT_MASK];
        // `*s <= bytes` by the invariant, so `*s + take` fits; saturate in
        // case a corrupted value broke it.
        let s_room = u32::MAX - *s;
        let take = if take < s_room { take } else { s_room };
        *s += take;
        self.bytes += take;
        if self.bytes > self.peak_bytes {
            self.peak_bytes = self.bytes;
        }
        take
    }

    /// Releases `want` bytes from the ingress slots in proportion to their
    /// shares and returns the bytes released.
    ///
    /// FIFO order is not modelled: each slot `i` holding `c_i` of the `Q`
    /// bytes gives back `floor(c_i * D / Q)`, which is exactly what a FIFO
    /// releases when the slots' arrivals are steadily interleaved in those
    /// proportions; after a burst from one port, FIFO would release that
    /// port first and this model spreads it (no slot is ever released more
    /// than it holds). The rounding remainder `r = D - sum(floor)` is fewer
    /// than the slots whose share had a fraction, and each of those holds at
    /// least one byte more than its floor, so one pass gives one byte to
    /// each such slot, starting at the rotating `cursor`, until `r` is 0:
    /// the released bytes sum exactly to `D`, deterministically, and no slot
    /// is favoured over time.
    ///
    /// Returns the bytes released and a set of slots holding every slot
    /// released (see [`EgressQueueN::drain_slots`]). Off eBPF the slots
    /// holding bytes are found in the first pass and only they are visited
    /// after it ([`EgressQueueN::release_occupied`]); the eBPF build visits
    /// every slot ([`EgressQueueN::release_every_slot`]). Both give the
    /// same bytes to the same slots.
    #[inline(always)]
    fn release_proportional(&mut self, want: u32, released: &mut [u32; N]) -> (u32, u64) {
        #[cfg(not(target_arch = "bpf"))]
        return self.release_occupied(want, released);
        #[cfg(target_arch = "bpf")]
        return self.release_every_slot(want, released);
    }

    /// All `N` slots (bit `i`: slot `i`).
    const ALL_SLOTS: u64 = u64::MAX >> (64 - N);

    /// [`EgressQueueN::release_proportional`] visiting every slot in every
    /// pass, with no branch per slot (a branch per slot multiplies the
    /// paths the eBPF verifier walks past its limit). Returns all slots as
    /// the set released.
    #[inline(always)]
    fn release_every_slot(&mut self, want: u32, released: &mut [u32; N]) -> (u32, u64) {
        let mut total: u64 = 0;
        let mut i = 0;
        while i < N {
            total += u64::from(self.ingress[i & Self::SLOT_MASK]);
            i += 1;
        }
        if total == 0 {
            self.bytes = 0;
            return (0, 0);
        }
        let d = leaving(want, total);
        if d == total {
            // everything leaves: each slot gives back all it holds, which is
            // what the shares below come to (no fraction, no remainder),
            // without their 2 x N divisions
            i = 0;
            while i < N {
                let j = i & Self::SLOT_MASK;
                released[j] = self.ingress[j];
                self.ingress[j] = 0;
                i += 1;
            }
            self.cursor = ((self.cursor as usize + 1) & Self::SLOT_MASK) as u32;
            self.bytes = 0;
            return (total as u32, Self::ALL_SLOTS);
        }
        // c_i <= 2^32 - 1 and d <= want <= 2^32 - 1, so c_i * d < 2^64.
        // r <= c_i since d <= total (the clamp guards a corrupted value only).
        let mut given: u64 = 0;
        let mut frac_mask: u64 = 0;
        i = 0;
        while i < N {
            let (r, frac) = share(u64::from(self.ingress[i & Self::SLOT_MASK]), d, total);
            frac_mask |= u64::from(frac) << i;
            released[i & Self::SLOT_MASK] = r as u32;
            given += r;
            i += 1;
        }
        let mut rem = d.saturating_sub(given);
        let start = self.cursor as usize;
        i = 0;
        while i < N && rem > 0 {
            let j = (start + i) & Self::SLOT_MASK;
            if frac_mask & (1u64 << j) != 0 {
                released[j] += 1;
                given += 1;
                rem -= 1;
            }
            i += 1;
        }
        self.cursor = ((start + 1) & Self::SLOT_MASK) as u32;
        i = 0;
        while i < N {
            let j = i & Self::SLOT_MASK;
            self.ingress[j] -= released[j];
            i += 1;
        }
        // given <= total; resynchronise `bytes` with the slots.
        self.bytes = (total - given) as u32;
        (given as u32, Self::ALL_SLOTS)
    }

    /// [`EgressQueueN::release_proportional`] off eBPF: the first pass
    /// sums the slots and notes which hold bytes; the others visit only
    /// those (an empty slot releases 0 with no fraction, so skipping it
    /// changes nothing), and the rounding pass visits the slots with a
    /// fraction in the same rotating order. Returns exactly the slots
    /// released.
    #[cfg(not(target_arch = "bpf"))]
    #[inline(always)]
    fn release_occupied(&mut self, want: u32, released: &mut [u32; N]) -> (u32, u64) {
        let mut total: u64 = 0;
        let mut held: u64 = 0;
        for (i, &c) in self.ingress.iter().enumerate() {
            total += u64::from(c);
            held |= u64::from(c != 0) << i;
        }
        let (given, out, _) = self.release_held(want, released, total, held, N);
        (given, out)
    }

    /// [`EgressQueueN::release_occupied`] once the slots' sum `total` and
    /// a set `held` holding every slot with bytes are known (extra slots,
    /// empty, change nothing: their share is 0 with no fraction), for a
    /// queue of `n` slots (see [`EgressQueueN::drain_held`]; `held` within
    /// them). Returns the bytes released, exactly the slots released, and
    /// exactly the slots still holding bytes; writes `released` for the
    /// slots of `held` only (0 for those that gave nothing).
    #[cfg(not(target_arch = "bpf"))]
    #[inline(always)]
    fn release_held(
        &mut self,
        want: u32,
        released: &mut [u32; N],
        total: u64,
        held: u64,
        n: usize,
    ) -> (u32, u64, u64) {
        // the rotating start wraps at `n`
        let wrap = (n - 1) & Self::SLOT_MASK;
        if total == 0 {
            self.bytes = 0;
            return (0, 0, 0);
        }
        let d = leaving(want, total);
        let mut out: u64 = 0;
        if d == total {
            // everything leaves (as in `release_every_slot`)
            let mut m = held;
            while m != 0 {
                let j = m.trailing_zeros() as usize & Self::SLOT_MASK;
                m &= m - 1;
                released[j] = self.ingress[j];
                out |= u64::from(self.ingress[j] != 0) << j;
                self.ingress[j] = 0;
            }
            self.cursor = ((self.cursor as usize + 1) & wrap) as u32;
            self.bytes = 0;
            return (total as u32, out, 0);
        }
        if held & (held - 1) == 0 {
            // one slot holds every byte: its share is all `d` with no
            // fraction (c = total), nothing to round, no division
            let j = held.trailing_zeros() as usize & Self::SLOT_MASK;
            released[j] = d as u32;
            self.ingress[j] -= d as u32;
            self.cursor = ((self.cursor as usize + 1) & wrap) as u32;
            self.bytes = (total - d) as u32;
            // d < total = the slot's bytes: some stay
            return (d as u32, held, held);
        }
        // each slot's share, taken off it at once (the rounding pass below
        // takes one byte more from some)
        let mut given: u64 = 0;
        let mut frac_mask: u64 = 0;
        let mut still: u64 = 0;
        let mut m = held;
        // one division for the slots' shares, not one each
        let inv = reciprocal(total);
        while m != 0 {
            let j = m.trailing_zeros() as usize & Self::SLOT_MASK;
            m &= m - 1;
            let c = self.ingress[j];
            let (r, frac) = share_inv(u64::from(c), d, total, inv);
            frac_mask |= u64::from(frac) << j;
            released[j] = r as u32;
            // r <= c
            self.ingress[j] = c - r as u32;
            out |= u64::from(r != 0) << j;
            still |= u64::from(c as u64 != r) << j;
            given += r;
        }
        let mut rem = d.saturating_sub(given);
        let start = self.cursor as usize & wrap;
        // the slots with a fraction from `start` on, wrapping at n: bit k
        // of `rot` is slot (start + k) mod n
        let rot = if start == 0 {
            frac_mask
        } else {
            ((frac_mask >> start) | (frac_mask << (n - start))) & (u64::MAX >> (63 - wrap))
        };
        let mut m = rot;
        while m != 0 && rem > 0 {
            let j = (start + m.trailing_zeros() as usize) & wrap;
            m &= m - 1;
            // a slot with a fraction holds a byte more than its share
            released[j] += 1;
            self.ingress[j] -= 1;
            out |= 1 << j;
            still &= !(u64::from(self.ingress[j] == 0) << j);
            given += 1;
            rem -= 1;
        }
        self.cursor = ((start + 1) & wrap) as u32;
        self.bytes = (total - given) as u32;
        (given as u32, out, still)
    }
}

/// Whether a port of `speed_mbps` sends at least `bytes` in `elapsed` ns
/// with the carried fraction `frac` (millibits), that is whether
/// [`bytes_in`] gives at least `bytes`, without its divisions:
/// `floor((elapsed * speed + frac) / 8000) >= bytes` exactly when
/// `elapsed * speed + frac >= 8000 * bytes`. Computed for intervals under
/// 2^31 ns (2.1 s), where the product stays below 2^63; false for longer
/// ones (the caller then asks [`bytes_in`]).
#[inline(always)]
fn drains_all(elapsed: u64, speed_mbps: u32, frac: u32, bytes: u32) -> bool {
    elapsed < (1 << 31)
        && elapsed * u64::from(speed_mbps) + u64::from(frac)
            >= MILLIBITS_PER_BYTE * u64::from(bytes)
}

/// The bytes leaving when `want` are asked of slots holding `total`: at
/// most all of them (a queue's `bytes` may be off the sum of its slots).
/// One select, no branch per slot: both release forms call it.
#[inline(always)]
fn leaving(want: u32, total: u64) -> u64 {
    if u64::from(want) < total {
        u64::from(want)
    } else {
        total
    }
}

/// The share of a slot holding `c` of a queue's `total` bytes when `d` of
/// them leave: `floor(c * d / total)` (at most `c`), and whether it had a
/// fraction the slot could still give a byte of. `c * d < 2^64` as both are
/// below 2^32; the result is at most `c` since `d <= total` (the clamp
/// guards a corrupted value only).
#[inline(always)]
#[allow(clippy::manual_is_multiple_of)] // `is_multiple_of` adds a zero check the eBPF code has no use for (`total > 0`)
fn share(c: u64, d: u64, total: u64) -> (u64, bool) {
    let p = c * d;
    let r = p / total;
    let r = if r > c { c } else { r };
    (r, p % total != 0 && r < c)
}

/// `floor((2^64 - 1) / total)`, for [`share_inv`] (`total > 0`).
#[cfg(not(target_arch = "bpf"))]
#[inline(always)]
fn reciprocal(total: u64) -> u64 {
    u64::MAX / total
}

/// [`share`] with its division replaced by a multiplication by `inv`
/// (`reciprocal(total)`): the estimate `floor(p * inv / 2^64)` is at most
/// `floor(p / total)` and less by at most one (`2^64 - total * inv <=
/// total`, so the two differ by less than `p / 2^64 < 1`), which the
/// remainder corrects. The same result as [`share`] (host form only: a
/// 128-bit product).
#[cfg(not(target_arch = "bpf"))]
#[inline(always)]
pub(crate) fn share_inv(c: u64, d: u64, total: u64, inv: u64) -> (u64, bool) {
    let p = c * d;
    let mut q = ((u128::from(p) * u128::from(inv)) >> 64) as u64;
    let mut rem = p - q * total;
    while rem >= total {
        q += 1;
        rem -= total;
    }
    let r = if q > c { c } else { q };
    (r, rem != 0 && r < c)
}

/// [`share`] and [`share_inv`], for the tests that hold them equal.
#[cfg(not(target_arch = "bpf"))]
#[doc(hidden)]
pub fn share_both(c: u64, d: u64, total: u64) -> ((u64, bool), (u64, bool)) {
    (
        share(c, d, total),
        share_inv(c, d, total, reciprocal(total)),
    )
}
