//! Building a simulation from the run's parameters: the topology, a
//! switch per spec, a host per host link, the workload's flows, and the
//! partitions it runs in.

use std::sync::Arc;

use dataplane_common::rand::SplitMix64;

use crate::cells::Shared;
use crate::config::Params;
use crate::engine::Sim;
use crate::event::{FlowAddr, Queue, NODE_BITS};
use crate::host::state::{Flow, FlowRx, Host};
use crate::report::stats::Stats;
use crate::switch::state::Switch;

impl Sim {
    /// Builds the simulation of `p` (topology, switches, hosts, workload).
    pub fn new(p: Params) -> anyhow::Result<Sim> {
        Sim::new_rank(p, 0, 1)
    }

    /// Builds the simulation of `p` as rank `rank` of `ranks` processes
    /// ([`crate::ranks`]) holds it: with more than one, the flows' sender
    /// halves of its partitions' hosts only, and their receiver halves
    /// (every process builds the whole workload, the seed making it the
    /// same, and keeps its own).
    pub fn new_rank(p: Params, rank: u32, ranks: u32) -> anyhow::Result<Sim> {
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
        crate::memory::stage("topology built");
        let mut rng = SplitMix64(p.seed);
        // a rank of several keeps the queues and tables of its
        // partitions' switches only
        let owner = (ranks > 1).then(|| crate::partition::assign(&topo, p.partitions));
        let hosts = topo.hosts as usize;
        let switches = topo
            .switches
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut sw = Switch::new(s, &p, i as u32, rng.next_u64() as u32)?;
                if owner.as_ref().is_some_and(|o| o[hosts + i] % ranks != rank) {
                    sw.shed();
                }
                Ok(sw)
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        crate::memory::stage("switches built");
        let hosts = topo.host_links.iter().map(|l| Host::new(*l)).collect();
        let parts = p.partitions;
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
            first_switch: topo.hosts,
            topo: Arc::new(topo),
            switches: Shared::new(switches),
            hosts: Shared::new(hosts),
            flows: if ranks > 1 {
                Shared::sparse()
            } else {
                Shared::new(Vec::new())
            },
            rx: if ranks > 1 {
                Shared::sparse()
            } else {
                Shared::new(Vec::new())
            },
            addrs: Shared::new(Vec::new()),
            lens: Shared::new(Vec::new()),
            rank: (rank, ranks),
            deps: Default::default(),
            ends: None,
            arrivals: Vec::new(),
            next_arrival: 0,
            rng,
            stats: Stats::default(),
            events: 0,
            stop_ns,
            progress: false,
            dcqcn: dataplane_common::dcqcn::DcqcnParams::new(1),
            part: 0,
            owner: Arc::new(Vec::new()),
            n_parts: 1,
            mail: Shared::new(Vec::new()),
            out_base: 0,
            out_min: u64::MAX,
            senders: Vec::new(),
            others: Vec::new(),
            threads: 0,
            window_ns: u64::MAX,
            far: Default::default(),
        };
        sim.dcqcn = sim.dcqcn_of();
        sim.far = crate::switch::far::FarView::new(sim.p.far_view, sim.switches.as_slice());
        crate::memory::stage("hosts built");
        if parts > 1 {
            // which partition each node is in, before the flows: a process
            // keeps its own partitions' flows, and a collective's
            // dependencies between partitions are checked as they come
            crate::partition::plan(&mut sim, parts);
        } else {
            assert!(ranks <= 1, "a run of one partition is one process's");
        }
        crate::workload::generate(&mut sim)?;
        sim.print_footprint("workload generated");
        if parts > 1 {
            crate::partition::split(&mut sim, parts)?;
        }
        crate::memory::stage("partitioned");
        Ok(sim)
    }

    /// Adds flow `f` (both halves, each if this process holds it, and its
    /// addresses); returns its index.
    pub fn push_flow(&mut self, f: Flow) -> u32 {
        let id = self.flows.len() as u32;
        // a flow of no bytes completes at its sender: its receiver half
        // is the sender's
        let rx_node = if f.size == 0 { f.src } else { f.dst };
        if self.holds_node(rx_node) {
            self.rx.push(FlowRx::of(&f, self.dcqcn.cnp_interval_ns));
        } else {
            self.rx.skip();
        }
        self.addrs.push(FlowAddr {
            src: f.src,
            dst: f.dst,
            sport: f.sport,
            qp: f.qp,
        });
        self.lens.push(f.size.min(u64::from(u32::MAX - 1)) as u32);
        if self.holds_node(f.src) {
            self.flows.push(f);
        } else {
            self.flows.skip();
        }
        id
    }

    /// Removes every flow (a test's own flows then replace the workload's;
    /// not after the run is partitioned).
    pub fn clear_flows(&mut self) {
        self.flows.clear();
        self.rx.clear();
        self.addrs.clear();
        self.lens.clear();
        self.arrivals.clear();
        self.next_arrival = 0;
    }
}
