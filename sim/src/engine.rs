//! The discrete-event core: nanosecond time, a radix heap of small `Copy`
//! events, a slab of packets reused through a
//! free list (no allocation per packet once warm), and the dispatch loop.

use std::time::Instant;

use dataplane_common::rand::SplitMix64;

use crate::config::Params;
use crate::host::{Flow, Host};
use crate::report::Stats;
use crate::switch::Switch;
use crate::topo::Topology;
use crate::wheel::WheelQueue;

/// The RoCE traffic class (SONiC's AZURE map: lossless TC 3).
pub const TC_DATA: u8 = 3;
/// ACKs, NAKs and CNPs (TC 6, strict priority, never marked).
pub const TC_CTRL: u8 = 6;
/// Bytes a data frame adds to its RDMA payload: Ethernet 14, IPv4 20, UDP
/// 8, BTH 12, ICRC 4, FCS 4.
pub const HDR: u32 = 62;
/// An ACK / NAK (BTH + AETH) or CNP frame, and a PFC frame.
pub const CTRL_LEN: u32 = 64;

pub const KIND_DATA: u8 = 0;
pub const KIND_ACK: u8 = 1;
pub const KIND_NAK: u8 = 2;
pub const KIND_CNP: u8 = 3;

/// A packet in flight (slab entry).
#[derive(Clone, Copy, Debug, Default)]
pub struct Pkt {
    pub flow: u32,
    /// Data: its PSN; ACK / NAK: the next PSN expected.
    pub psn: u32,
    /// Frame bytes (what the buffer model and the link count).
    pub len: u32,
    /// Destination host.
    pub dst: u32,
    pub kind: u8,
    pub ecn: u8,
    pub tc: u8,
}

/// What a switch reads of a flow to balance it (a copy of [`Flow`]'s
/// fields, packed apart from the flow's transport state: 16 bytes a flow,
/// so a switch's lookups stay in cache).
#[derive(Clone, Copy, Debug)]
pub struct FlowAddr {
    pub src: u32,
    pub dst: u32,
    pub qp: u32,
    pub sport: u16,
}

/// What happens at an instant. Node ids: hosts `0..hosts`, then switches.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A packet fully received on `port` of `node`.
    Arrive {
        node: u32,
        port: u16,
        pkt: u32,
    },
    /// `port` of `node` finished sending a frame.
    TxDone {
        node: u32,
        port: u16,
    },
    /// A PFC frame (RoCE priority) received on `port` of `node`.
    Pfc {
        node: u32,
        port: u16,
        quanta: u16,
    },
    /// A pause may have ended: try sending again.
    Resume {
        node: u32,
        port: u16,
    },
    /// The buffer model's timer step on `port`'s queues (the data plane's
    /// periodic drain): due when the model still holds bytes the FIFOs no
    /// longer do.
    QueueTick {
        node: u32,
        port: u16,
    },
    /// PFC refresh timer of the ingress PG of `port` (RoCE class).
    PgTick {
        node: u32,
        port: u16,
    },
    /// A host's pacer allows its next packet.
    Wake {
        node: u32,
    },
    /// A flow of the arrival list starts (the next one is scheduled).
    FlowStart {
        flow: u32,
    },
    /// A flow whose dependencies completed starts.
    DepStart {
        flow: u32,
    },
    Rto {
        flow: u32,
    },
    /// The receiver's delayed-ACK timer of a flow.
    AckDelay {
        flow: u32,
    },
    Sample,
}

/// Bits of a node id in a queued event: a topology has fewer nodes.
pub const NODE_BITS: u32 = 22;
/// Bits of a port in a queued event (a switch has at most
/// [`crate::topo::SLOTS`] = 64 ports).
const PORT_BITS: u32 = 6;
const _: () = assert!(1 << PORT_BITS == crate::topo::SLOTS);

/// An event as the queue holds it, in 64 bits (an [`Ev`] takes 12 bytes;
/// the wheel keeps the time in the slot, so an event costs it 8): bits 0-3
/// the kind, 4-9 the port, 10-31 the node, 32-63 the packet, flow or PFC
/// quanta.
#[inline(always)]
fn pack(ev: Ev) -> u64 {
    let at = |kind: u64, node: u32, port: u16, x: u32| {
        debug_assert!(node < 1 << NODE_BITS && u32::from(port) < 1 << PORT_BITS);
        kind | u64::from(port) << 4 | u64::from(node) << (4 + PORT_BITS) | u64::from(x) << 32
    };
    match ev {
        Ev::Arrive { node, port, pkt } => at(0, node, port, pkt),
        Ev::TxDone { node, port } => at(1, node, port, 0),
        Ev::Pfc { node, port, quanta } => at(2, node, port, u32::from(quanta)),
        Ev::Resume { node, port } => at(3, node, port, 0),
        Ev::QueueTick { node, port } => at(4, node, port, 0),
        Ev::PgTick { node, port } => at(5, node, port, 0),
        Ev::Wake { node } => at(6, node, 0, 0),
        Ev::FlowStart { flow } => at(7, 0, 0, flow),
        Ev::DepStart { flow } => at(8, 0, 0, flow),
        Ev::Rto { flow } => at(9, 0, 0, flow),
        Ev::Sample => 10,
        Ev::AckDelay { flow } => at(11, 0, 0, flow),
    }
}

/// The event [`pack`] packed.
#[inline(always)]
fn unpack(x: u64) -> Ev {
    let port = ((x >> 4) & ((1 << PORT_BITS) - 1)) as u16;
    let node = ((x >> (4 + PORT_BITS)) & ((1 << NODE_BITS) - 1)) as u32;
    let v = (x >> 32) as u32;
    match x & 15 {
        0 => Ev::Arrive { node, port, pkt: v },
        1 => Ev::TxDone { node, port },
        2 => Ev::Pfc {
            node,
            port,
            quanta: v as u16,
        },
        3 => Ev::Resume { node, port },
        4 => Ev::QueueTick { node, port },
        5 => Ev::PgTick { node, port },
        6 => Ev::Wake { node },
        7 => Ev::FlowStart { flow: v },
        8 => Ev::DepStart { flow: v },
        9 => Ev::Rto { flow: v },
        11 => Ev::AckDelay { flow: v },
        _ => Ev::Sample,
    }
}

/// The event queue ([`WheelQueue`]) of packed events: events at the same
/// nanosecond come out in an order fixed by the sequence of pushes (the
/// last pushed first), so a run is reproducible.
pub struct Queue {
    heap: WheelQueue<u64>,
}

impl Queue {
    pub fn new() -> Self {
        Queue {
            heap: WheelQueue::new(),
        }
    }
    #[inline]
    pub fn push(&mut self, t: u64, ev: Ev) {
        self.heap.push(t, pack(ev));
    }
    #[inline]
    fn pop(&mut self) -> Option<(u64, Ev)> {
        self.heap.pop().map(|(t, x)| (t, unpack(x)))
    }
    /// The packet of the next event, if it is an arrival on the wheel.
    #[inline]
    fn next_arrival_pkt(&self) -> Option<u32> {
        match self.heap.peek_near().map(unpack) {
            Some(Ev::Arrive { pkt, .. }) => Some(pkt),
            _ => None,
        }
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

impl Default for Queue {
    fn default() -> Self {
        Self::new()
    }
}

/// Nanoseconds `len` bytes take at `speed_mbps`, with the sub-nanosecond
/// remainder carried in `frac` (millibit-ns units below the speed), so a
/// port's long-run rate is exact, as the buffer model's drain is.
#[inline]
pub fn ser_ns(len: u32, speed_mbps: u32, frac: &mut u64) -> u64 {
    let num = u64::from(len) * 8_000 + *frac;
    let s = u64::from(speed_mbps.max(1));
    *frac = num % s;
    num / s
}

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

/// The simulation.
pub struct Sim {
    pub now: u64,
    pub q: Queue,
    pub pkts: Vec<Pkt>,
    free: Vec<u32>,
    pub p: Params,
    pub topo: Topology,
    pub switches: Vec<Switch>,
    pub hosts: Vec<Host>,
    pub flows: Vec<Flow>,
    /// `flows[i]`'s addresses, for the switches.
    pub addrs: Vec<FlowAddr>,
    /// Flows in start order whose start is scheduled one at a time.
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

    /// Builds the simulation of `p` (topology, switches, hosts, workload).
    pub fn new(p: Params) -> anyhow::Result<Sim> {
        let topo = crate::topo::build(
            &p.topology,
            p.speed_mbps,
            p.host_speed_mbps,
            p.link_delay_ns,
        )?;
        let nodes = u64::from(topo.hosts) + topo.switches.len() as u64;
        if nodes >= 1 << NODE_BITS {
            anyhow::bail!(
                "topology: {nodes} nodes; the simulator addresses fewer than {}",
                1u64 << NODE_BITS
            );
        }
        let mut rng = SplitMix64(p.seed);
        let switches = topo
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| Switch::new(s, &p, i as u32, rng.next_u64() as u32))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let hosts = topo.host_links.iter().map(|l| Host::new(*l)).collect();
        let stop_ns = if p.drain {
            p.max_time_ns
        } else {
            p.duration_ns
        };
        let mut sim = Sim {
            now: 0,
            q: Queue::new(),
            pkts: Vec::with_capacity(1 << 16),
            free: Vec::with_capacity(1 << 16),
            p,
            topo,
            switches,
            hosts,
            flows: Vec::new(),
            addrs: Vec::new(),
            arrivals: Vec::new(),
            next_arrival: 0,
            rng,
            stats: Stats::default(),
            events: 0,
            stop_ns,
            progress: false,
            dcqcn: dataplane_common::dcqcn::DcqcnParams::new(1),
        };
        sim.dcqcn = sim.dcqcn_of();
        crate::workload::generate(&mut sim)?;
        Ok(sim)
    }

    /// Runs to the stop time (or until nothing is left to do); returns the
    /// wall time in seconds.
    pub fn run(&mut self) -> f64 {
        let t0 = Instant::now();
        let mut last = t0;
        let mut last_events = 0u64;
        let sample_every = (self.p.duration_ns / u64::from(self.p.samples)).max(1);
        self.q.push(0, Ev::Sample);
        self.schedule_next_arrival();
        while let Some((t, ev)) = self.q.pop() {
            if t > self.stop_ns {
                self.now = self.stop_ns;
                break;
            }
            self.now = t;
            self.events += 1;
            // the next event's packet is most likely out of cache (written
            // when the packet was queued): start loading it now
            if let Some(p) = self.q.next_arrival_pkt() {
                prefetch(&self.pkts, p as usize);
            }
            match ev {
                Ev::Arrive { node, port, pkt } => {
                    if node < self.topo.hosts {
                        self.host_receive(node, pkt);
                    } else {
                        self.switch_arrive((node - self.topo.hosts) as usize, port, pkt);
                    }
                }
                Ev::TxDone { node, port } => {
                    if node < self.topo.hosts {
                        self.hosts[node as usize].busy = false;
                        self.host_send(node);
                    } else {
                        self.switch_tx_done((node - self.topo.hosts) as usize, port);
                    }
                }
                Ev::Pfc { node, port, quanta } => {
                    if node < self.topo.hosts {
                        self.host_pfc(node, quanta);
                    } else {
                        self.switch_pfc((node - self.topo.hosts) as usize, port, quanta);
                    }
                }
                Ev::Resume { node, port } => {
                    if node < self.topo.hosts {
                        self.host_send(node);
                    } else {
                        self.switch_start((node - self.topo.hosts) as usize, port);
                    }
                }
                Ev::QueueTick { node, port } => {
                    self.switch_queue_tick((node - self.topo.hosts) as usize, port);
                }
                Ev::PgTick { node, port } => {
                    self.switch_pg_tick((node - self.topo.hosts) as usize, port);
                }
                Ev::Wake { node } => self.host_send(node),
                Ev::FlowStart { flow } => {
                    self.start_flow(flow);
                    self.schedule_next_arrival();
                }
                Ev::DepStart { flow } => self.start_flow(flow),
                Ev::Rto { flow } => self.flow_rto(flow),
                Ev::AckDelay { flow } => self.flow_ack_delay(flow),
                Ev::Sample => {
                    self.sample();
                    // keep sampling while anything else is pending
                    if !self.q.is_empty() && !self.all_done() {
                        self.q.push(self.now + sample_every, Ev::Sample);
                    }
                }
            }
            if self.p.drain && self.stats.flows_done as usize == self.flows.len() {
                break;
            }
            if self.progress && self.events & 0xffff == 0 {
                let w = Instant::now();
                let dt = w.duration_since(last).as_secs_f64();
                if dt >= 1.0 {
                    let rate = (self.events - last_events) as f64 / dt;
                    eprint!(
                        "\r[{}] sim {:.3}/{:.3} ms  {:.2} Mev/s  flows {}/{}  wall {:.0}s   ",
                        self.p.lb_name,
                        self.now as f64 / 1e6,
                        self.stop_ns.min(if self.p.drain {
                            u64::MAX
                        } else {
                            self.p.duration_ns
                        }) as f64
                            / 1e6,
                        rate / 1e6,
                        self.stats.flows_done,
                        self.flows.len(),
                        w.duration_since(t0).as_secs_f64()
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

    /// Every flow completed.
    pub fn all_done(&self) -> bool {
        self.stats.flows_done as usize == self.flows.len()
            && self.next_arrival >= self.arrivals.len()
    }

    fn schedule_next_arrival(&mut self) {
        if let Some(&f) = self.arrivals.get(self.next_arrival) {
            self.next_arrival += 1;
            let t = self.flows[f as usize].start_ns.max(self.now);
            self.q.push(t, Ev::FlowStart { flow: f });
        }
    }
}
