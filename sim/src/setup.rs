//! Building a simulation from the run's parameters: the topology, a
//! switch per spec, a host per host link, and the workload's flows.

use dataplane_common::rand::SplitMix64;

use crate::config::Params;
use crate::engine::Sim;
use crate::event::{Queue, NODE_BITS};
use crate::host::state::Host;
use crate::report::stats::Stats;
use crate::switch::state::Switch;

impl Sim {
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
}
