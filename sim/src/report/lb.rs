//! What the report says of load balancing: the workload's ideal job time
//! (what the fabric could do at best), uplink utilisation over the time
//! the uplinks had data, and how many flows each uplink got per collective
//! step (the balancer's trace is in [`super::trace`]).

use serde::Serialize;
use std::collections::HashMap;

use crate::engine::Sim;
use crate::event::HDR;
use crate::host::state::NONE;
use crate::report::Ends;
use crate::report::UtilSummary;

/// How many flows each uplink of a switch took in one collective step
/// (where the first packet of each left).
#[derive(Clone, Debug, Serialize, Default)]
pub struct StepFlows {
    /// (step, switch) pairs in which a switch placed flows on its uplinks.
    pub placements: usize,
    /// Uplinks (of those pairs) that got 0, 1, ..., 7, and 8 or more
    /// flows.
    pub per_uplink: [u64; 9],
    /// Mean over the pairs of the busiest uplink's flows less the fewest
    /// it could have (ceil(flows / uplinks)): 0 when every step is spread
    /// as evenly as it can be.
    pub excess_mean: f64,
    /// The largest such excess.
    pub excess_max: u64,
}

impl Sim {
    /// Uplink utilisation of each switch with uplinks over the time any
    /// of them had data to send (a frame on the wire, queued, or paused):
    /// the uplinks' time on the wire, weighted by their speeds, over their
    /// speeds times that time. Time on the wire as the simulation counts
    /// it (whole ns), so a port busy throughout reads exactly 1 (its bytes
    /// at line rate would read up to 1 ns a busy period more).
    pub fn busy_util(&self) -> UtilSummary {
        let mut v = Vec::new();
        for sw in &self.switches {
            let (mut used, mut cap) = (0f64, 0f64);
            for pt in sw.ports.iter().filter(|p| p.uplink) {
                let speed = f64::from(pt.link.speed_mbps);
                used += pt.tx_ns as f64 * speed;
                cap += speed;
            }
            let busy = sw.up.busy_ns(self.now);
            if cap > 0.0 && busy > 0 {
                v.push(used / (cap * busy as f64));
            }
        }
        UtilSummary::of(&v)
    }

    /// Flows per uplink per collective step, from where each flow's first
    /// packet left each switch.
    pub fn step_flows(&self, ends: Ends, first_hops: &[(u32, u32, u16)]) -> StepFlows {
        // (step, switch) -> port -> flows, each (flow, switch) once
        let mut seen = std::collections::HashSet::new();
        let mut by: HashMap<(u32, u32), HashMap<u16, u64>> = HashMap::new();
        for &(f, node, port) in first_hops {
            if !seen.insert((f, node)) {
                continue;
            }
            let step = ends.get(f as usize).step;
            *by.entry((step, node)).or_default().entry(port).or_default() += 1;
        }
        let mut out = StepFlows::default();
        let mut excess_sum = 0u64;
        for ((_, node), ports) in &by {
            let sw = &self.switches[(node - self.first_switch) as usize];
            let ups: Vec<u16> = (0..sw.ports.len() as u16)
                .filter(|&p| sw.ports[p as usize].uplink)
                .collect();
            let on_up: u64 = ups.iter().map(|p| ports.get(p).copied().unwrap_or(0)).sum();
            if ups.is_empty() || on_up == 0 {
                continue;
            }
            out.placements += 1;
            let mut max = 0;
            for p in &ups {
                let n = ports.get(p).copied().unwrap_or(0);
                out.per_uplink[n.min(8) as usize] += 1;
                max = max.max(n);
            }
            let excess = max - on_up.div_ceil(ups.len() as u64);
            excess_sum += excess;
            out.excess_max = out.excess_max.max(excess);
        }
        if out.placements > 0 {
            out.excess_mean = excess_sum as f64 / out.placements as f64;
        }
        out
    }

    /// The job's ideal completion time (ns; 0 without a job): the largest
    /// of three floors, each what the fabric needs with perfect balance
    /// and no queueing:
    ///
    /// * the dependency chain: every flow takes its unloaded FCT
    ///   ([`Sim::ideal_fct_ns`]: the first frame stored and forwarded at
    ///   every hop, the rest at line rate) and starts when the flows it
    ///   waits for ended (plus `dep_delay`); the longest chain;
    /// * the NICs: the most bytes (frames with headers) one host sends or
    ///   receives, at its line rate, plus one path's latency;
    /// * the leaves' uplinks: the most bytes that cross one leaf's uplinks
    ///   one way over their summed speed, plus one path's latency.
    pub fn ideal_jct_ns(&self, ends: Ends) -> u64 {
        let n = ends.len();
        let mtu = u64::from(self.p.mtu);
        let wire = |size: u64| size + size.div_ceil(mtu).max(1) * u64::from(HDR);
        let mut start = vec![0f64; n];
        let (mut chain, mut any) = (0f64, false);
        let hosts = self.topo.hosts as usize;
        let (mut tx, mut rx) = (vec![0u64; hosts], vec![0u64; hosts]);
        // per leaf: bytes up its uplinks, bytes down them
        let mut up: HashMap<(u32, bool), u64> = HashMap::new();
        let mut min_hops = u32::MAX;
        for f in 0..n {
            let (fl, a) = (ends.get(f), &self.addrs[f]);
            if fl.job == NONE {
                continue;
            }
            any = true;
            let hops = self.hops(a.src, a.dst);
            min_hops = min_hops.min(hops);
            let end = start[f] + self.ideal_fct_ns(fl.size, hops);
            chain = chain.max(end);
            let delay = self.p.dep_delay_ns as f64;
            ends.each_child(f as u32, |c| {
                let c = c as usize;
                start[c] = start[c].max(end + delay);
            });
            let w = wire(fl.size);
            tx[a.src as usize] += w;
            rx[a.dst as usize] += w;
            let (a, b) = (self.leaf_of(a.src), self.leaf_of(a.dst));
            if a != b {
                *up.entry((a, true)).or_default() += w;
                *up.entry((b, false)).or_default() += w;
            }
        }
        if !any {
            return 0;
        }
        let bps = f64::from(self.p.host_speed_mbps) * 1e6;
        let first = (mtu + u64::from(HDR)) as f64 * 8.0 / bps * 1e9;
        let latency = f64::from(min_hops.saturating_sub(1)) * first
            + f64::from(min_hops) * self.p.link_delay_ns as f64;
        let nic = tx.iter().chain(rx.iter()).max().copied().unwrap_or(0) as f64 * 8.0 / bps * 1e9;
        let leaf = up
            .iter()
            .map(|(&(node, _), &bytes)| {
                let sw = &self.switches[(node - self.first_switch) as usize];
                let cap: f64 = sw
                    .ports
                    .iter()
                    .filter(|p| p.uplink)
                    .map(|p| f64::from(p.link.speed_mbps) * 1e6)
                    .sum();
                if cap > 0.0 {
                    bytes as f64 * 8.0 / cap * 1e9
                } else {
                    0.0
                }
            })
            .fold(0.0, f64::max);
        chain.max(nic + latency).max(leaf + latency).ceil() as u64
    }

    /// The switch host `h` is attached to.
    pub(crate) fn leaf_of(&self, h: u32) -> u32 {
        self.topo.host_links[h as usize].peer
    }
}
