//! A switch's buffer-model state (`dataplane-common`'s egress queues and
//! ingress-PG rows): every step is the shared function, called in the eBPF
//! stage's order.
//!
//! Every switch stores its model in [`SLOTS`] (64) ingress slots and
//! stands for its own slot count `n`, the power of two from 8 up that
//! holds its ports: the drains ([`EgressQueueN::drain_held`]) wrap their
//! rounding start at `n`, so a 12-port leaf's queues drain exactly as
//! 16-slot queues do. One type for all switches means one copy of the
//! switch's code: with a type per slot count (the simulator had four), a
//! run whose leaves and spines differ in size ran two copies, each branch
//! of which the CPU learnt twice as slowly, and chose between them at
//! every step (0.93 the CPU time of the 64-host run, 0.97 of the
//! 1024-host one, with 0.5 MiB more memory there).

use dataplane_common::buffer::{
    arrival_admit, arrival_drain_held, arrival_wred, pfc_rx_queue, release_row_slots, tick_pg,
    Arrival, BufVerdict, Decision, PauseStat, PortBuffer, TcRowN,
};
use dataplane_common::lossless::{EgressQueueN, PfcAction, PfcTxState, PgState, SharedPool};

use crate::event::TC_DATA;
use crate::topo::SLOTS;

/// A switch's model: a queue per (port, class), a row of PGs per class.
pub struct Model {
    q: Vec<[EgressQueueN<SLOTS>; 2]>,
    rows: [TcRowN<SLOTS>; 2],
    /// What a drain gives back per ingress slot: written by each drain for
    /// the slots it reports, and only those read (never cleared: clearing
    /// the slots per drain cost more than the drain itself).
    released: [u32; SLOTS],
    /// Per queue, the ingress slots holding bytes (a drain visits those,
    /// not all of them): a slot joins when a packet is queued from it, the
    /// drains keep the rest exact.
    held: Vec<[u64; 2]>,
    /// The slot count the switch stands for (a power of two, at least its
    /// ports, at least 8).
    n: usize,
}

impl Model {
    /// The model of a switch of `ports` ports standing for `n` ingress
    /// slots (a power of two from 8 to 64, at least `ports`).
    pub fn new(ports: usize, n: usize) -> Self {
        assert!(
            n.is_power_of_two() && (8..=SLOTS).contains(&n) && ports <= n,
            "{ports} ports in {n} slots: expected 8, 16, 32 or 64 slots, at least the ports"
        );
        Model {
            q: vec![[EgressQueueN::ZERO; 2]; ports],
            rows: [TcRowN::ZERO; 2],
            released: [0; SLOTS],
            held: vec![[0; 2]; ports],
            n,
        }
    }

    /// Drains queue (`port`, `cls`) to now and gives what left back to the
    /// PGs of its class; returns the slots that got bytes back. One copy,
    /// not inlined: the arrival, the frame end, the queue tick and a
    /// received PFC frame share it (and the CPU's learning of its
    /// branches).
    #[inline(never)]
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
            self.n,
        );
        if drained == 0 {
            // nothing drained: nothing to give back
            return 0;
        }
        release_row_slots(&mut self.rows[cls], pool, &self.released, slots);
        slots
    }

    /// The arrival steps on egress queue (`out`, `cls`) for a packet from
    /// ingress slot `a.ingress`: drain and release, WRED/ECN, admission.
    /// Returns the decision and the slots that got bytes back.
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
        let released = self.drain(now, out, cls, egress, pool);
        let q = &mut self.q[out][cls];
        let d = match arrival_wred(q, egress, a, rand) {
            Ok(mark) => {
                let slot = a.ingress as usize & (SLOTS - 1);
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
                    self.held[out][cls] |= 1 << slot;
                }
                d
            }
            Err(d) => d,
        };
        (d, released)
    }

    /// A PFC frame for the RoCE class arrived on `port`: the queue drains
    /// to now (as [`Model::drain`]), then takes the pause (the shared step,
    /// which has nothing left to drain). Returns the slots that got bytes
    /// back.
    pub fn pfc_rx(
        &mut self,
        now: u64,
        port: usize,
        egress: &PortBuffer,
        pool: &mut SharedPool,
        quanta: u16,
        stat: &mut PauseStat,
    ) -> u64 {
        let slots = self.drain(now, port, 1, egress, pool);
        let rest = pfc_rx_queue(now, &mut self.q[port][1], egress, quanta, stat);
        debug_assert!(rest.iter().all(|&r| r == 0), "drained to now already");
        slots
    }

    /// The RoCE PG of `slot`'s timer step.
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

    /// Bytes the model holds in queue (`port`, `cls`).
    #[inline]
    /// The ports it models (none: a switch another process runs,
    /// [`crate::switch::state::Switch::shed`]).
    pub fn ports(&self) -> usize {
        self.q.len()
    }

    pub fn bytes(&self, port: usize, cls: usize) -> u32 {
        self.q[port][cls].bytes
    }

    /// Until when the RoCE queue of `port` is paused.
    #[inline]
    pub fn paused_until(&self, port: usize) -> u64 {
        self.q[port][1].paused_until_ns
    }

    /// The RoCE PG of `slot`.
    pub fn pg(&self, slot: usize) -> (PgState, PfcTxState) {
        (self.rows[1].pg[slot], self.rows[1].pfc[slot])
    }
}
