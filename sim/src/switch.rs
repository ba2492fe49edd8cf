//! A switch: dataplane-common's buffer model (`buffer` steps, as the eBPF
//! lossless stage calls them) and load balancing (`lb::select`, as the
//! eBPF balance stage calls it), per packet; real FIFOs per egress port and
//! class drain at line rate, control strictly first, RoCE paused by PFC.

use dataplane_common::buffer::{Arrival, BufVerdict};
use dataplane_common::lb::{
    flow_hash, flow_set_index, flow_way, flowlet_entry, flowlet_index, flowlet_tag,
    place_announced, place_booking, place_counts, select, uses_flow_ways, uses_flowlets,
    uses_reservations, FlowletEvent, WayLookup, MAX_MEMBERS, NOT_ANNOUNCED, NO_SLOT, NUM_BANDS,
};
use dataplane_common::lossless::{DropReason, PfcAction, ECN_CE};
use dataplane_common::wire::bth::{OP_ACK, OP_CNP, OP_WRITE_FIRST, OP_WRITE_MIDDLE};

use crate::engine::Sim;
use crate::event::{ser_ns, Ev, CTRL_LEN, HDR, KIND_CNP, KIND_DATA, TC_DATA};
use crate::report::trace::{LbEvent, TraceKind};
use crate::topo::{GROUP_BIT, SLOTS};

pub mod far;
pub mod state;

pub use state::{flow_key, SwCounters, SwPort, Switch};

#[inline]
fn l_speed(p: &SwPort) -> u32 {
    p.link.speed_mbps
}

/// Class index of a TC: 0 control, 1 RoCE.
#[inline]
fn class(tc: u8) -> usize {
    usize::from(tc == TC_DATA)
}

impl Sim {
    /// A packet arrived on port `inp` of switch `s`.
    pub fn switch_arrive(&mut self, s: usize, inp: u16, pid: u32) {
        let now = self.now;
        let pkt = self.pkts[pid as usize];
        let sw = &mut self.switches[s];
        let r = sw.route[pkt.dst as usize];
        let out = if r & GROUP_BIT == 0 {
            r as usize
        } else {
            match self.choose(s, r & !GROUP_BIT, pid) {
                Some(out) => out,
                None => {
                    self.switches[s].c.no_route += 1;
                    self.drop_packet(s, pid);
                    return;
                }
            }
        };
        let sw = &mut self.switches[s];
        let cls = class(pkt.tc);
        let a = Arrival {
            ingress: inp as u8,
            tc: pkt.tc,
            lossless: cls == 1 && self.p.pfc,
            control: cls == 0,
            ecn: pkt.ecn,
            len: pkt.len,
        };
        let rand = sw.rng.next_u32();
        let (d, released) = sw.model.arrive(
            now,
            out,
            cls,
            sw.bufs.of(out),
            sw.bufs.of(inp as usize),
            &mut sw.pool,
            &a,
            rand,
        );
        if cls == 1 {
            self.after_release(s, released);
        }
        self.pfc_action(s, inp, d.pfc);
        let sw = &mut self.switches[s];
        match d.verdict {
            BufVerdict::Forward => {
                if d.mark_ce {
                    sw.c.ecn_marked += 1;
                    self.pkts[pid as usize].ecn = ECN_CE;
                }
                let qb = sw.model.bytes(out, 1);
                let paused = cls == 1 && sw.model.paused_until(out) > now;
                if cls == 1 && self.far.notifies() {
                    let leaf = (self.leaf_of(pkt.dst) - self.first_switch) as usize;
                    let kmin = self.p.kmin;
                    let first = self.first_switch;
                    let switches = self.switches.as_slice();
                    self.far
                        .notify(now, switches, first, s, inp, out, leaf, qb, kmin);
                }
                let sw = &mut self.switches[s];
                let port = &mut sw.ports[out];
                if sw.keeps_rates {
                    port.rate.update(now, pkt.len);
                }
                if cls == 1 && qb > port.peak_bytes {
                    port.peak_bytes = qb;
                }
                // an idle port with nothing before this frame sends it at
                // once: what queueing it and starting the FIFO's head would
                // do, without writing and reading the FIFO
                let first = port.fifo[0].is_empty() && (cls == 0 || port.fifo[1].is_empty());
                if port.uplink && !port.has_data {
                    port.has_data = true;
                    sw.up.set(now, true);
                }
                if !port.busy && first && !paused {
                    self.switch_send(s, out as u16, cls, pid, pkt.len);
                } else {
                    port.fifo[cls].push_back((pid, pkt.len));
                    self.switch_start(s, out as u16);
                }
            }
            BufVerdict::WredDrop => {
                sw.c.wred_drop += 1;
                self.drop_packet(s, pid);
            }
            BufVerdict::NoBuffer(r) => {
                match r {
                    DropReason::SharedFull => sw.c.drop_shared_full += 1,
                    DropReason::HeadroomExhausted => sw.c.drop_headroom += 1,
                }
                if a.lossless {
                    sw.c.lossless_drop += 1;
                }
                self.drop_packet(s, pid);
            }
        }
    }

    /// The port of group `gid`'s member that packet `pid` leaves switch
    /// `s` by (`lb::select`, as the eBPF balance stage calls it); `None`:
    /// no eligible member. Keeps what the report reads of the choice.
    #[inline]
    fn choose(&mut self, s: usize, gid: u16, pid: u32) -> Option<usize> {
        let now = self.now;
        let pkt = self.pkts[pid as usize];
        let sw = &mut self.switches[s];
        // the flow's 5-tuple, only for a choice (a cache miss saved on
        // single-path hops)
        let f = &self.addrs[pkt.flow as usize];
        let (src, dst) = if pkt.kind == KIND_DATA {
            (f.src, f.dst)
        } else {
            (f.dst, f.src)
        };
        let hash = flow_hash(&flow_key(src, dst, f.sport, f.qp), sw.seed);
        let far = if uses_reservations(sw.groups[gid as usize].mode) {
            let leaf = (self.leaf_of(dst) - self.first_switch) as usize;
            self.far.members(
                now,
                self.switches.as_slice(),
                &self.topo,
                self.first_switch,
                s,
                gid,
                dst,
                leaf,
            )
        } else {
            [0; MAX_MEMBERS]
        };
        let sw = &mut self.switches[s];
        let Switch {
            groups,
            flowlets,
            ways,
            ports,
            rng,
            ..
        } = sw;
        let g = &groups[gid as usize];
        let rand = rng.next_u32();
        let tag = flowlet_tag(gid, hash);
        let flowlet = if uses_flow_ways(g.mode) {
            let set = &mut ways[flow_set_index(gid, hash) as usize];
            let (e, how) = flow_way(set, tag, now, u64::from(g.flowlet_timeout_ns));
            if how == WayLookup::Evicted {
                self.stats.lb_evictions += 1;
            }
            Some(e)
        } else if uses_flowlets(g.mode) {
            let i = flowlet_index(gid, hash) as usize;
            Some(flowlet_entry(&mut flowlets[i], tag))
        } else {
            None
        };
        let from = flowlet.as_ref().map_or(NO_SLOT, |e| e.slot);
        let mode = g.mode;
        // each member's band, or in place mode its place key
        let keys = || {
            let mut k = [u32::MAX; MAX_MEMBERS];
            for (i, m) in g.members.iter().enumerate().take(g.n_members as usize) {
                k[i] = ports[m.id as usize].rate.place_key_far(now, far[i]);
            }
            k
        };
        let bands = || {
            let mut b = [NUM_BANDS - 1; MAX_MEMBERS];
            for (i, m) in g.members.iter().enumerate().take(g.n_members as usize) {
                b[i] = ports[m.id as usize].rate.band(now);
            }
            b
        };
        let pick = if uses_reservations(mode) {
            select(g, hash, flowlet, now, rand, keys)?
        } else {
            select(g, hash, flowlet, now, rand, bands)?
        };
        let out = pick.id as usize;
        if uses_reservations(mode) {
            // what the packet announces: a WRITE's first packet carries
            // its message's length (RETH); an ACK, NAK or CNP books itself
            let (opcode, reth_len) = match (pkt.kind, pkt.psn) {
                (KIND_DATA, 0) => (OP_WRITE_FIRST, self.lens[pkt.flow as usize]),
                (KIND_DATA, _) => (OP_WRITE_MIDDLE, NOT_ANNOUNCED),
                (KIND_CNP, _) => (OP_CNP, NOT_ANNOUNCED),
                _ => (OP_ACK, NOT_ANNOUNCED),
            };
            let announced = place_announced(true, opcode, reth_len, pkt.len as u16);
            let bytes = place_booking(mode, &pick, announced);
            ports[out]
                .rate
                .commit_place(now, bytes, place_counts(&pick, true, opcode));
        }
        if let Some(ev) = pick.flowlet.filter(|e| e.is_new()) {
            if from != NO_SLOT {
                self.stats.lb_moves += 1;
            }
            if self.p.trace_lb {
                self.trace_pick(s, gid, pkt.flow, ev, from, pick.slot);
            }
        }
        if !self.p.workload.is_poisson() && pkt.kind == KIND_DATA && pkt.psn == 0 {
            let node = self.first_switch + s as u32;
            self.stats.first_hops.push((pkt.flow, node, out as u16));
        }
        Some(out)
    }

    /// Notifications the switches sent (`far_view = "notify"`).
    pub fn far_notifications(&self) -> u64 {
        self.far.notes()
    }

    /// Adds a placement to the trace: what each member's estimator read.
    #[cold]
    fn trace_pick(&mut self, s: usize, gid: u16, flow: u32, ev: FlowletEvent, from: u8, to: u8) {
        let sw = &self.switches[s];
        let g = &sw.groups[gid as usize];
        let mut util = [0u16; MAX_MEMBERS];
        for (i, m) in g.members.iter().enumerate().take(g.n_members as usize) {
            let u = sw.ports[m.id as usize].rate.utilisation(self.now);
            util[i] = u.min(u32::from(u16::MAX)) as u16;
        }
        self.stats.lb_trace.push(LbEvent {
            t: self.now,
            switch: self.first_switch + s as u32,
            flow,
            what: TraceKind::of(ev),
            from,
            to,
            members: g.n_members,
            util,
        });
    }

    fn drop_packet(&mut self, s: usize, pid: u32) {
        let pkt = self.pkts[pid as usize];
        if pkt.kind == KIND_DATA {
            let pl = u64::from(pkt.len - HDR);
            self.switches[s].c.dropped_payload += pl;
            self.stats.dropped_payload += pl;
            self.stats.dropped_pkts += 1;
        } else {
            self.stats.dropped_ctrl += 1;
        }
        self.release(pid);
    }

    /// PGs of the RoCE class that got bytes back and are paused: XON now if
    /// they emptied (the data plane's timer step, run at each release).
    #[inline(always)]
    fn after_release(&mut self, s: usize, released: u64) {
        let mask = self.switches[s].xoff_mask & released;
        if mask != 0 {
            self.tick_released(s, mask);
        }
    }

    /// [`Sim::after_release`]'s step on the paused PGs in `mask`.
    #[inline(never)]
    fn tick_released(&mut self, s: usize, mut mask: u64) {
        while mask != 0 {
            let slot = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let sw = &mut self.switches[s];
            let a = sw.model.tick_pg(self.now, slot, sw.bufs.of(slot), &sw.pool);
            self.pfc_action(s, slot as u16, a);
        }
    }

    /// Sends the PFC frame of `a` out of port `inp` (to the peer that
    /// feeds it), and keeps the PG's refresh timer.
    #[inline(always)]
    fn pfc_action(&mut self, s: usize, inp: u16, a: PfcAction) {
        if a != PfcAction::None {
            self.pfc_send(s, inp, a);
        }
    }

    /// [`Sim::pfc_action`] for an action other than none.
    #[inline(never)]
    fn pfc_send(&mut self, s: usize, inp: u16, a: PfcAction) {
        let quanta = match a {
            PfcAction::None => return,
            PfcAction::SendXoff { quanta } => {
                self.switches[s].c.pfc_xoff += 1;
                self.switches[s].xoff_mask |= 1u64 << (inp as usize & (SLOTS - 1));
                quanta
            }
            PfcAction::SendRefresh { quanta } => {
                self.switches[s].c.pfc_refresh += 1;
                quanta
            }
            PfcAction::SendXon => {
                self.switches[s].c.pfc_xon += 1;
                self.switches[s].xoff_mask &= !(1u64 << (inp as usize & (SLOTS - 1)));
                0
            }
        };
        let node = self.first_switch + s as u32;
        let sw = &mut self.switches[s];
        let port = &mut sw.ports[inp as usize];
        let l = port.link;
        // frames of one port are serialised, so they arrive in the order
        // they were decided (an XON never overtakes the XOFF before it)
        let mut frac = 0;
        let start = self.now.max(port.pfc_free_at);
        port.pfc_free_at = start + ser_ns(CTRL_LEN, l.speed_mbps, &mut frac).max(1);
        let t = port.pfc_free_at + l.delay_ns;
        self.push_pfc(t, l.peer, l.peer_port, quanta);
        if quanta != 0 {
            let sw = &mut self.switches[s];
            let due = sw.model.pg(inp as usize).1.refresh_due_ns;
            let port = &mut sw.ports[inp as usize];
            if port.tick_at != due {
                port.tick_at = due;
                self.q.push(due, Ev::PgTick { node, port: inp });
            }
        }
    }

    /// The refresh timer of the RoCE PG of `inp`.
    pub fn switch_pg_tick(&mut self, s: usize, inp: u16) {
        let sw = &mut self.switches[s];
        if sw.ports[inp as usize].tick_at != self.now || sw.model.pg(inp as usize).1.xoff == 0 {
            return;
        }
        let a = sw
            .model
            .tick_pg(self.now, inp as usize, sw.bufs.of(inp as usize), &sw.pool);
        self.pfc_action(s, inp, a);
    }

    /// A PFC frame for the RoCE class arrived on `port`: the egress queue
    /// pauses (or resumes) per the model.
    pub fn switch_pfc(&mut self, s: usize, port: u16, quanta: u16) {
        let now = self.now;
        let sw = &mut self.switches[s];
        let released = sw.model.pfc_rx(
            now,
            port as usize,
            sw.bufs.of(port as usize),
            &mut sw.pool,
            quanta,
            &mut sw.ports[port as usize].pause,
        );
        self.stats.pfc_rx += 1;
        self.after_release(s, released);
        self.switch_start(s, port);
    }

    /// Starts the next frame on `port` if it is idle: control first, then
    /// RoCE unless paused (then a retry when the pause ends).
    pub fn switch_start(&mut self, s: usize, port: u16) {
        let now = self.now;
        let node = self.first_switch + s as u32;
        let sw = &mut self.switches[s];
        let model = &sw.model;
        let pt = &mut sw.ports[port as usize];
        if pt.busy {
            return;
        }
        let cls = if !pt.fifo[0].is_empty() {
            0
        } else if !pt.fifo[1].is_empty() {
            let until = model.paused_until(port as usize);
            if until > now {
                if pt.resume_at != until {
                    pt.resume_at = until;
                    self.q.push(until, Ev::Resume { node, port });
                }
                return;
            }
            1
        } else {
            // Idle. The model may still hold bytes the FIFOs sent while it
            // was paused (a frame on the wire finishes; the model stops at
            // once): the data plane's timer drains them, here a tick when
            // the model would be empty.
            let mut due = 0u64;
            for c in 0..2 {
                let bytes = model.bytes(port as usize, c);
                if bytes > 0 {
                    let mut frac = 0;
                    // the control queue is never paused
                    let paused = if c == 1 {
                        model.paused_until(port as usize)
                    } else {
                        0
                    };
                    let from = paused.max(now);
                    due = due.max(from + ser_ns(bytes, l_speed(pt), &mut frac) + 1);
                }
            }
            if due > 0 && pt.qtick_at != due {
                pt.qtick_at = due;
                self.q.push(due, Ev::QueueTick { node, port });
            }
            return;
        };
        let (pid, len) = pt.fifo[cls].pop_front().expect("non-empty FIFO");
        self.switch_send(s, port, cls, pid, len);
    }

    /// Starts frame `pid` of `len` bytes and class `cls` on idle `port`:
    /// its end and its arrival at the peer.
    #[inline]
    fn switch_send(&mut self, s: usize, port: u16, cls: usize, pid: u32, len: u32) {
        let now = self.now;
        let node = self.first_switch + s as u32;
        let pt = &mut self.switches[s].ports[port as usize];
        debug_assert!(!pt.busy);
        let l = pt.link;
        let ser = ser_ns(len, l.speed_mbps, &mut pt.ser_frac);
        pt.busy = true;
        pt.cur = cls;
        pt.tx_bytes += u64::from(len);
        pt.tx_ns += ser;
        self.q.push(now + ser, Ev::TxDone { node, port });
        self.push_arrive(now + ser + l.delay_ns, l.peer, l.peer_port, pid);
    }

    /// A frame left `port`: the model's queue drains to now (what left goes
    /// back to the ingress PGs), then the next frame.
    pub fn switch_tx_done(&mut self, s: usize, port: u16) {
        let pt = &mut self.switches[s].ports[port as usize];
        pt.busy = false;
        let cls = pt.cur;
        self.drain_class(s, port, cls);
        self.switch_start(s, port);
        let sw = &mut self.switches[s];
        let pt = &mut sw.ports[port as usize];
        if pt.has_data && !pt.busy && pt.fifo[0].is_empty() && pt.fifo[1].is_empty() {
            pt.has_data = false;
            sw.up.set(self.now, false);
        }
    }

    /// Drains the model's queue (`port`, `cls`) to now; RoCE bytes given
    /// back may end a PG's XOFF.
    #[inline]
    fn drain_class(&mut self, s: usize, port: u16, cls: usize) {
        let sw = &mut self.switches[s];
        let released = sw.model.drain(
            self.now,
            port as usize,
            cls,
            sw.bufs.of(port as usize),
            &mut sw.pool,
        );
        if cls == 1 {
            self.after_release(s, released);
        }
    }

    /// The model's timer step on `port`: drain both queues to now, give
    /// the bytes back to their PGs (XON where they emptied), then send.
    pub fn switch_queue_tick(&mut self, s: usize, port: u16) {
        let now = self.now;
        if self.switches[s].ports[port as usize].qtick_at != now {
            return;
        }
        for cls in 0..2 {
            self.drain_class(s, port, cls);
        }
        self.switch_start(s, port);
    }

    /// Marks the ports that go up a tier (for uplink utilisation).
    pub fn mark_uplinks(&mut self) {
        let hosts = self.first_switch;
        let tiers: Vec<u8> = self.switches.iter().map(|s| s.tier).collect();
        for sw in &mut self.switches {
            for pt in &mut sw.ports {
                let peer = pt.link.peer;
                pt.uplink = peer >= hosts && tiers[(peer - hosts) as usize] > sw.tier;
            }
        }
    }
}
