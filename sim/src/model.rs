//! A switch's buffer-model state (`dataplane-common`'s egress queues and
//! ingress-PG rows) sized to the switch: the model's steps loop over their
//! `N` ingress slots, so a 12-port leaf runs them over 16 slots, not the 64
//! the largest switch needs. [`AnyModel`] hides `N` from the switch code;
//! every step is the shared function, called in the eBPF stage's order.

use dataplane_common::buffer::{
    arrival_admit, arrival_drain_held, arrival_wred, pfc_rx_queue, release_row, release_row_slots,
    tick_pg, Arrival, BufVerdict, Decision, PauseStat, PortBuffer, TcRowN,
};
use dataplane_common::lossless::{EgressQueueN, PfcAction, PfcTxState, PgState, SharedPool};

use crate::event::TC_DATA;

/// The model's state for `N` ingress slots: a queue per (port, class), a
/// row of PGs per class.
pub struct Model<const N: usize> {
    q: Vec<[EgressQueueN<N>; 2]>,
    rows: [TcRowN<N>; 2],
    /// What a drain gives back per ingress slot: written by each drain for
    /// the slots it reports, and only those read (never cleared: clearing
    /// `N` entries per drain cost more than the drain itself).
    released: [u32; N],
    /// Per queue, the ingress slots holding bytes (a drain visits those,
    /// not all `N`): a slot joins when a packet is queued from it, the
    /// drains keep the rest exact.
    held: Vec<[u64; 2]>,
}

/// The slots that got bytes back.
#[inline(always)]
fn mask<const N: usize>(released: &[u32; N]) -> u64 {
    let mut m = 0u64;
    for (i, &r) in released.iter().enumerate() {
        m |= u64::from(r != 0) << i;
    }
    m
}

impl<const N: usize> Model<N> {
    pub fn slots(&self) -> usize {
        N
    }

    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn arrive(
        &mut self,
        now: u64,
        out: usize,
        cls: usize,
        egress: &PortBuffer,
        ingress: &PortBuffer,
        pool: &mut SharedPool,
        a: &Arrival,
        rand: u32,
    ) -> (Decision, u64) {
        let q = &mut self.q[out][cls];
        let held = &mut self.held[out][cls];
        // nothing drained: nothing to give back (release_row would skip
        // every slot)
        let (drained, slots) = arrival_drain_held(now, q, egress, &mut self.released, held);
        if drained > 0 {
            release_row_slots(&mut self.rows[cls], pool, &self.released, slots);
        }
        let d = match arrival_wred(q, egress, a, rand) {
            Ok(mark) => {
                let slot = a.ingress as usize & (N - 1);
                let row = &mut self.rows[cls];
                let d = arrival_admit(
                    now,
                    q,
                    &mut row.pg[slot],
                    &mut row.pfc[slot],
                    ingress,
                    pool,
                    a,
                    mark,
                );
                if d.verdict == BufVerdict::Forward {
                    *held |= 1 << slot;
                }
                d
            }
            Err(d) => d,
        };
        (d, if drained > 0 { slots } else { 0 })
    }

    #[inline]
    pub fn drain(
        &mut self,
        now: u64,
        port: usize,
        cls: usize,
        egress: &PortBuffer,
        pool: &mut SharedPool,
    ) -> u64 {
        let (drained, slots) = arrival_drain_held(
            now,
            &mut self.q[port][cls],
            egress,
            &mut self.released,
            &mut self.held[port][cls],
        );
        if drained == 0 {
            return 0;
        }
        release_row_slots(&mut self.rows[cls], pool, &self.released, slots);
        slots
    }

    pub fn pfc_rx(
        &mut self,
        now: u64,
        port: usize,
        egress: &PortBuffer,
        pool: &mut SharedPool,
        quanta: u16,
        stat: &mut PauseStat,
    ) -> u64 {
        let released = pfc_rx_queue(now, &mut self.q[port][1], egress, quanta, stat);
        release_row(&mut self.rows[1], pool, &released);
        mask(&released)
    }

    pub fn tick_pg(
        &mut self,
        now: u64,
        slot: usize,
        ingress: &PortBuffer,
        pool: &SharedPool,
    ) -> PfcAction {
        tick_pg(
            now,
            &mut self.rows[1],
            slot,
            ingress,
            TC_DATA as usize,
            pool,
        )
    }

    #[inline]
    pub fn bytes(&self, port: usize, cls: usize) -> u32 {
        self.q[port][cls].bytes
    }

    #[inline]
    pub fn paused_until(&self, port: usize) -> u64 {
        self.q[port][1].paused_until_ns
    }

    pub fn pg(&self, slot: usize) -> (PgState, PfcTxState) {
        (self.rows[1].pg[slot], self.rows[1].pfc[slot])
    }
}

/// A switch's model of whichever slot count: an enum, so every step is a
/// direct call the compiler can inline into the switch's code (a trait
/// object made each step an indirect call). One per switch, so the larger
/// variants' size (the PG rows of 64 slots inline) costs a few KB a switch.
#[allow(clippy::large_enum_variant)]
pub enum AnyModel {
    S8(Model<8>),
    S16(Model<16>),
    S32(Model<32>),
    S64(Model<64>),
}

/// Runs `$e` with `$m` bound to the model inside `$x`.
macro_rules! each {
    ($x:expr, $m:ident => $e:expr) => {
        match $x {
            AnyModel::S8($m) => $e,
            AnyModel::S16($m) => $e,
            AnyModel::S32($m) => $e,
            AnyModel::S64($m) => $e,
        }
    };
}

/// The model's steps, whichever its slot count. Methods that drain return
/// the set of ingress slots that got bytes back (bit `i`: slot `i`), which
/// is all the switch needs to know to run the PGs' XON check.
impl AnyModel {
    /// Ingress slots (a power of two, at least the switch's ports).
    pub fn slots(&self) -> usize {
        each!(self, m => m.slots())
    }
    /// The arrival steps on egress queue (`out`, `cls`) for a packet from
    /// ingress slot `a.ingress`: drain and release, WRED/ECN, admission.
    #[inline]
    #[allow(clippy::too_many_arguments)]
    pub fn arrive(
        &mut self,
        now: u64,
        out: usize,
        cls: usize,
        egress: &PortBuffer,
        ingress: &PortBuffer,
        pool: &mut SharedPool,
        a: &Arrival,
        rand: u32,
    ) -> (Decision, u64) {
        each!(self, m => m.arrive(now, out, cls, egress, ingress, pool, a, rand))
    }
    /// Drains queue (`port`, `cls`) to now and gives what left back.
    #[inline]
    pub fn drain(
        &mut self,
        now: u64,
        port: usize,
        cls: usize,
        egress: &PortBuffer,
        pool: &mut SharedPool,
    ) -> u64 {
        each!(self, m => m.drain(now, port, cls, egress, pool))
    }
    /// A PFC frame for the RoCE class arrived on `port`.
    pub fn pfc_rx(
        &mut self,
        now: u64,
        port: usize,
        egress: &PortBuffer,
        pool: &mut SharedPool,
        quanta: u16,
        stat: &mut PauseStat,
    ) -> u64 {
        each!(self, m => m.pfc_rx(now, port, egress, pool, quanta, stat))
    }
    /// The RoCE PG of `slot`'s timer step.
    pub fn tick_pg(
        &mut self,
        now: u64,
        slot: usize,
        ingress: &PortBuffer,
        pool: &SharedPool,
    ) -> PfcAction {
        each!(self, m => m.tick_pg(now, slot, ingress, pool))
    }
    /// Bytes the model holds in queue (`port`, `cls`).
    #[inline]
    pub fn bytes(&self, port: usize, cls: usize) -> u32 {
        each!(self, m => m.bytes(port, cls))
    }
    /// Until when the RoCE queue of `port` is paused.
    #[inline]
    pub fn paused_until(&self, port: usize) -> u64 {
        each!(self, m => m.paused_until(port))
    }
    /// The RoCE PG of `slot`.
    pub fn pg(&self, slot: usize) -> (PgState, PfcTxState) {
        each!(self, m => m.pg(slot))
    }
}

impl<const N: usize> Model<N> {
    fn new(ports: usize) -> Self {
        Model::<N> {
            q: vec![[EgressQueueN::ZERO; 2]; ports],
            rows: [TcRowN::ZERO; 2],
            released: [0; N],
            held: vec![[0; 2]; ports],
        }
    }
}

/// The model of a switch of `ports` ports with `slots` ingress slots (a
/// power of two from 8 to 64, at least `ports`).
pub fn new_model(ports: usize, slots: usize) -> AnyModel {
    assert!(ports <= slots, "{ports} ports in {slots} slots");
    match slots {
        8 => AnyModel::S8(Model::new(ports)),
        16 => AnyModel::S16(Model::new(ports)),
        32 => AnyModel::S32(Model::new(ports)),
        64 => AnyModel::S64(Model::new(ports)),
        _ => panic!("slot count {slots}: expected 8, 16, 32 or 64"),
    }
}
