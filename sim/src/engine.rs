//! The discrete-event core: nanosecond time, a radix heap of small `Copy`
//! events, a slab of packets reused through a
//! free list (no allocation per packet once warm), and the dispatch loop.

use std::sync::Arc;
use std::time::Instant;

use dataplane_common::rand::SplitMix64;

use crate::cells::Shared;
use crate::config::Params;
use crate::event::{Crossing, Due, Ev, FlowAddr, Kind, Msg, Pkt, Queue};
use crate::host::state::{Flow, FlowRx, Host};
use crate::report::stats::Stats;
use crate::switch::state::Switch;
use crate::topo::Topology;

/// Starts loading `v[i]` into the cache (a hint: no effect on results).
#[inline(always)]
fn prefetch<T>(v: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(x) = v.get(i) {
        // SAFETY: a prefetch hint on a valid reference; it reads nothing
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(
                (x as *const T).cast(),
            )
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, i);
}

/// The simulation, or one partition of it ([`crate::partition`]): its
/// clock, event queue and packets are its own; the switches, hosts and
/// flows are arrays every partition shares, each entry written only by
/// the partition that owns it ([`crate::cells`]).
pub struct Sim {
    pub now: u64,
    pub q: Queue,
    pub pkts: Vec<Pkt>,
    pub(crate) free: Vec<u32>,
    pub p: Params,
    pub topo: Arc<Topology>,
    /// The node id of switch 0: ids below it are hosts (the topology's
    /// host count, kept here for the dispatch).
    pub first_switch: u32,
    pub(crate) switches: Shared<Switch>,
    pub(crate) hosts: Shared<Host>,
    /// Flows: what each is and its sender's half.
    pub(crate) flows: Shared<Flow>,
    /// `flows[i]`'s receiver half.
    pub(crate) rx: Shared<FlowRx>,
    /// `flows[i]`'s addresses, for the switches.
    pub(crate) addrs: Shared<FlowAddr>,
    /// `flows[i]`'s length as its first packet announces it (RETH: the
    /// size, at most `u32::MAX - 1`; 0 only for a flow of no bytes).
    pub(crate) lens: Shared<u32>,
    /// This process's rank and the run's ranks ([`crate::ranks`]): with
    /// more than one, `flows` and `rx` are sparse and hold the halves of
    /// this rank's partitions' hosts only ([`Sim::holds_node`]).
    pub(crate) rank: (u32, u32),
    /// The partitions a collective's dependencies cross ([`Deps`]).
    pub(crate) deps: Deps,
    /// What the report reads of every flow, when another process ran
    /// some of them (rank 0 of an MPI job gathers it at the end).
    pub(crate) ends: Option<crate::report::ends::FlowEnds>,
    /// Flows (of this partition's hosts) in start order whose start is
    /// scheduled one at a time.
    pub arrivals: Vec<u32>,
    pub next_arrival: usize,
    pub rng: SplitMix64,
    pub stats: Stats,
    pub events: u64,
    /// Stop here (the duration, or `max_time` when draining).
    pub stop_ns: u64,
    /// Print progress to stderr.
    pub progress: bool,
    /// The hosts' DCQCN parameters ([`Sim::dcqcn_of`] the run's options).
    pub dcqcn: dataplane_common::dcqcn::DcqcnParams,
    /// This partition's index, and the partition of every node (hosts,
    /// then switches); a run of one partition has it all zero.
    pub part: u32,
    pub owner: Arc<Vec<u32>>,
    /// Partitions of the run (1: serial).
    pub n_parts: usize,
    /// The run's mailboxes ([`crate::partition`]): per window parity, per
    /// sending and receiving partition, the frames sent in the window.
    pub(crate) mail: Shared<Vec<Msg>>,
    /// This window's row of `mail` (its parity's, this partition's).
    pub out_base: usize,
    /// The earliest message sent this window.
    pub out_min: u64,
    /// The partitions with a link to this one (ascending): whose boxes
    /// it empties.
    pub senders: Vec<u32>,
    /// The run's other partitions (partition 0 holds them); threads to run
    /// them on (0: every core).
    pub others: Vec<Sim>,
    pub threads: usize,
    /// The window of a partitioned run: the shortest delay of a link
    /// between two partitions (`u64::MAX`: one partition).
    pub window_ns: u64,
    /// Place mode's far view ([`crate::config::Scenario::far_view`]).
    pub(crate) far: crate::switch::far::FarView,
}

impl Sim {
    /// A packet slot (reused).
    #[inline]
    pub fn alloc(&mut self, p: Pkt) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.pkts[i as usize] = p;
                i
            }
            None => {
                self.pkts.push(p);
                (self.pkts.len() - 1) as u32
            }
        }
    }

    #[inline]
    pub fn release(&mut self, id: u32) {
        self.free.push(id);
    }

    /// Which slab entries hold a packet in flight.
    pub fn live_mask(&self) -> Vec<bool> {
        let mut live = vec![true; self.pkts.len()];
        for &f in &self.free {
            live[f as usize] = false;
        }
        live
    }

    /// Packets not yet delivered or dropped.
    pub fn in_flight(&self) -> usize {
        self.pkts.len() - self.free.len()
    }

    pub fn n_hosts(&self) -> u32 {
        self.topo.hosts
    }

    /// Runs to the stop time (or until nothing is left to do); returns the
    /// wall time in seconds. A partitioned run goes window by window
    /// ([`crate::partition`]).
    pub fn run(&mut self) -> f64 {
        if !self.others.is_empty() {
            return self.run_partitioned();
        }
        let t0 = Instant::now();
        let mut last = t0;
        let mut last_events = 0u64;
        let sample_every = self.sample_every();
        self.q.push(0, Ev::Sample);
        self.schedule_next_arrival();
        while let Some((t, ev)) = self.q.pop() {
            if t > self.stop_ns {
                self.now = self.stop_ns;
                break;
            }
            self.now = t;
            self.events += 1;
            if ev.kind == Kind::Sample {
                self.sample();
                // keep sampling while anything else is pending
                if !self.q.is_empty() && !self.all_done() {
                    self.q.push(self.now + sample_every, Ev::Sample);
                }
            } else {
                self.dispatch(ev);
            }
            if self.p.drain && self.stats.flows_done as usize == self.flows.len() {
                break;
            }
            if self.progress && self.events & 0xffff == 0 {
                let w = Instant::now();
                let dt = w.duration_since(last).as_secs_f64();
                if dt >= 1.0 {
                    let rate = (self.events - last_events) as f64 / dt;
                    self.print_progress(
                        self.now,
                        rate,
                        self.stats.flows_done,
                        w.duration_since(t0),
                    );
                    last = w;
                    last_events = self.events;
                }
            }
        }
        if self.progress {
            eprintln!();
        }
        t0.elapsed().as_secs_f64()
    }

    /// Time between queue samples.
    pub(crate) fn sample_every(&self) -> u64 {
        (self.p.duration_ns / u64::from(self.p.samples)).max(1)
    }

    /// The progress line at simulated time `t`: events/s, flows done,
    /// wall.
    pub(crate) fn print_progress(
        &self,
        t: u64,
        rate: f64,
        flows_done: u64,
        wall: std::time::Duration,
    ) {
        eprint!(
            "\r[{}] sim {:.3}/{:.3} ms  {:.2} Mev/s  flows {}/{}  wall {:.0}s   ",
            self.p.lb_name,
            t as f64 / 1e6,
            self.stop_ns.min(if self.p.drain {
                u64::MAX
            } else {
                self.p.duration_ns
            }) as f64
                / 1e6,
            rate / 1e6,
            flows_done,
            self.flows.len(),
            wall.as_secs_f64()
        );
    }

    /// Runs the events before `end` (a window of a partitioned run: none
    /// of them can be caused by another partition's events of the window).
    pub(crate) fn run_window(&mut self, end: u64) {
        while let Some((t, ev)) = self.q.pop_before(end) {
            self.now = t;
            self.events += 1;
            self.dispatch(ev);
        }
    }

    /// Handles one event (any but a queue sample).
    #[inline(always)]
    fn dispatch(&mut self, ev: Due) {
        // the next event's packet is most likely out of cache (written
        // when the packet was queued): start loading it now
        if let Some(p) = self.q.next_arrival_pkt() {
            prefetch(&self.pkts, p as usize);
        }
        let Due { node, port, x, .. } = ev;
        match ev.kind {
            Kind::Arrive => {
                if node < self.first_switch {
                    self.host_receive(node, x);
                } else {
                    self.switch_arrive((node - self.first_switch) as usize, port, x);
                }
            }
            Kind::TxDone => {
                if node < self.first_switch {
                    self.hosts[node as usize].busy = false;
                    self.host_send(node);
                } else {
                    self.switch_tx_done((node - self.first_switch) as usize, port);
                }
            }
            Kind::Pfc => {
                let quanta = x as u16;
                if node < self.first_switch {
                    self.host_pfc(node, quanta);
                } else {
                    self.switch_pfc((node - self.first_switch) as usize, port, quanta);
                }
            }
            Kind::Resume => {
                if node < self.first_switch {
                    self.host_send(node);
                } else {
                    self.switch_start((node - self.first_switch) as usize, port);
                }
            }
            Kind::QueueTick => {
                self.switch_queue_tick((node - self.first_switch) as usize, port);
            }
            Kind::PgTick => {
                self.switch_pg_tick((node - self.first_switch) as usize, port);
            }
            Kind::Wake => self.host_send(node),
            Kind::FlowStart => {
                self.start_flow(x);
                self.schedule_next_arrival();
            }
            Kind::DepStart => self.start_flow(x),
            Kind::DepDone => self.flow_dep_done(x),
            Kind::Rto => self.flow_rto(x),
            Kind::AckDelay => self.flow_ack_delay(x),
            Kind::Sample => {}
        }
    }

    /// A frame reaches `port` of `node` at `t`: an arrival there, or a
    /// message to the partition that owns `node`.
    #[inline]
    pub(crate) fn push_arrive(&mut self, t: u64, node: u32, port: u16, pid: u32) {
        let to = self.owner_of(node);
        if to == self.part {
            self.q.push(
                t,
                Ev::Arrive {
                    node,
                    port,
                    pkt: pid,
                },
            );
        } else {
            let pkt = self.pkts[pid as usize];
            self.release(pid);
            self.post(
                to,
                Msg {
                    t,
                    what: Crossing::Frame { node, port, pkt },
                },
            );
        }
    }

    /// A PFC frame reaches `port` of `node` at `t` (as [`Sim::push_arrive`]).
    #[inline]
    pub(crate) fn push_pfc(&mut self, t: u64, node: u32, port: u16, quanta: u16) {
        let to = self.owner_of(node);
        self.cross(to, t, Crossing::Pfc { node, port, quanta });
    }

    /// A flow that `flow` waits for completed: its sender's partition
    /// learns it at `t`.
    pub(crate) fn push_dep_done(&mut self, t: u64, flow: u32) {
        let to = self.owner_of(self.addrs[flow as usize].src);
        self.cross(to, t, Crossing::DepDone { flow });
    }

    /// `what` at `t`, for partition `to`: into this partition's queue, or
    /// its mailbox.
    #[inline]
    fn cross(&mut self, to: u32, t: u64, what: Crossing) {
        let m = Msg { t, what };
        if to == self.part {
            self.receive(m);
        } else {
            self.post(to, m);
        }
    }

    #[inline(always)]
    fn owner_of(&self, node: u32) -> u32 {
        if self.n_parts <= 1 {
            0
        } else {
            self.owner[node as usize]
        }
    }

    /// Sends `m` to partition `to` (delivered when its next window
    /// starts).
    fn post(&mut self, to: u32, m: Msg) {
        self.out_min = self.out_min.min(m.t);
        let i = self.out_base + to as usize;
        self.mail[i].push(m);
    }

    /// The run's flows (those of every partition and process).
    pub fn n_flows(&self) -> usize {
        self.addrs.len()
    }

    /// Whether this process holds the flows' halves of node `n`'s (a host
    /// of one of its ranks' partitions: every node with one rank).
    pub(crate) fn holds_node(&self, n: u32) -> bool {
        let (rank, ranks) = self.rank;
        ranks <= 1 || self.owner[n as usize] % ranks == rank
    }

    /// The host whose partition holds flow `f`'s receiver half: its
    /// destination's, or its source's for a flow of no bytes (which
    /// completes at its start).
    pub(crate) fn rx_node(&self, f: usize) -> u32 {
        let a = &self.addrs[f];
        if self.lens[f] == 0 {
            a.src
        } else {
            a.dst
        }
    }

    /// Every flow completed.
    pub fn all_done(&self) -> bool {
        self.stats.flows_done as usize == self.n_flows() && self.next_arrival >= self.arrivals.len()
    }

    pub(crate) fn schedule_next_arrival(&mut self) {
        if let Some(&f) = self.arrivals.get(self.next_arrival) {
            self.next_arrival += 1;
            let t = self.flows[f as usize].start_ns.max(self.now);
            self.q.push(t, Ev::FlowStart { flow: f });
        }
    }
}

/// The partitions a collective's dependencies cross, noted as the flows
/// are made ([`Sim::note_dep`], in [`crate::partition`]): so the processes that hold only their
/// own flows know them all.
#[derive(Clone, Debug, Default)]
pub struct Deps {
    /// (partition of the step's sender, partition that learns of the
    /// flow it waits for), each once.
    pub(crate) pairs: std::collections::BTreeSet<(u32, u32)>,
    /// The first dependency that would cross within a window.
    pub(crate) refused: Option<String>,
}
