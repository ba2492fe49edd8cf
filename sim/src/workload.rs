//! Workloads: Poisson flows at a load from the web-search and Hadoop
//! flow-size CDFs (data/*.cdf), collectives as messages with dependencies
//! (ring all-reduce in NCCL's one-ring-per-rail form, halving-doubling,
//! all-to-all), incast and permutation.

use anyhow::{bail, Result};
use dataplane_common::rand::SplitMix64;

use crate::config::Workload;
use crate::engine::Sim;
use crate::host::state::Flow;

/// Web-search CDF (source in the file).
pub const WEBSEARCH_CDF: &str = include_str!("../data/websearch.cdf");
/// Hadoop CDF (source in the file).
pub const HADOOP_CDF: &str = include_str!("../data/hadoop.cdf");

/// A flow-size CDF: (bytes, cumulative percent) points, increasing.
#[derive(Clone, Debug)]
pub struct Cdf {
    pub points: Vec<(f64, f64)>,
}

impl Cdf {
    /// Parses `size percent` lines (`#` comments); refuses a CDF that is
    /// not increasing or does not end at 100.
    pub fn parse(name: &str, text: &str) -> Result<Cdf> {
        let mut points = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let l = line.split('#').next().unwrap_or("").trim();
            if l.is_empty() {
                continue;
            }
            let v: Vec<&str> = l.split_whitespace().collect();
            let parse = |s: &str| s.parse::<f64>().ok();
            match (
                v.len(),
                v.first().and_then(|s| parse(s)),
                v.get(1).and_then(|s| parse(s)),
            ) {
                (2, Some(x), Some(p)) => points.push((x, p)),
                _ => bail!(
                    "{name}: line {}: expected `bytes percent`, got {line:?}",
                    n + 1
                ),
            }
        }
        if points.len() < 2 {
            bail!("{name}: fewer than two points");
        }
        for w in points.windows(2) {
            if w[1].0 < w[0].0 || w[1].1 < w[0].1 {
                bail!("{name}: not increasing at {:?} -> {:?}", w[0], w[1]);
            }
        }
        if (points.last().unwrap().1 - 100.0).abs() > 1e-9 {
            bail!("{name}: last percent is not 100");
        }
        Ok(Cdf { points })
    }

    /// The size at uniform `u` in [0, 1), interpolated linearly.
    pub fn sample(&self, u: f64) -> f64 {
        let p = u * 100.0;
        for w in self.points.windows(2) {
            let ((x0, p0), (x1, p1)) = (w[0], w[1]);
            if p < p1 {
                if p1 <= p0 {
                    return x1;
                }
                return x0 + (x1 - x0) * (p - p0) / (p1 - p0);
            }
        }
        self.points.last().unwrap().0
    }

    /// Mean size of the interpolated distribution.
    pub fn mean(&self) -> f64 {
        self.points
            .windows(2)
            .map(|w| (w[0].0 + w[1].0) / 2.0 * (w[1].1 - w[0].1) / 100.0)
            .sum()
    }
}

fn add_flow(sim: &mut Sim, rng: &mut SplitMix64, src: u32, dst: u32, size: u64, t: u64) -> u32 {
    let id = sim.flows.len() as u32;
    let r = 49152 + (rng.next_u64() % 16384) as u16;
    let sport = if sim.p.single_sport != 0 {
        sim.p.single_sport
    } else {
        r
    };
    sim.push_flow(Flow::new(src, dst, size, t, sport, id + 1))
}

/// Flow `child` starts when `parent` completes (in the halves this
/// process holds).
fn depend(sim: &mut Sim, child: u32, parent: u32) {
    if let Some(rx) = sim.rx.get_mut(parent as usize) {
        rx.children.push(child);
    }
    if let Some(f) = sim.flows.get_mut(child as usize) {
        f.deps_left += 1;
    }
    sim.note_dep(child, parent);
}

/// Flow `id` belongs to the job, at `step` (in its sender half, if this
/// process holds it).
fn in_job(sim: &mut Sim, id: u32, step: u32) {
    if let Some(f) = sim.flows.get_mut(id as usize) {
        f.job = 0;
        f.step = step;
    }
}

/// The ranks of a collective: `p.ranks` first hosts (0: all).
fn ranks(sim: &Sim) -> Result<u32> {
    let n = sim.n_hosts();
    let r = if sim.p.ranks == 0 { n } else { sim.p.ranks };
    if r < 2 || r > n {
        bail!("ranks: {r} out of range (2..={n} hosts of the topology)");
    }
    Ok(r)
}

/// Fills `sim.flows` and `sim.arrivals`.
pub fn generate(sim: &mut Sim) -> Result<()> {
    let mut rng = SplitMix64(sim.p.seed ^ 0x5eed_f10e);
    let n = sim.n_hosts();
    let m = sim.p.size_bytes;
    let mut start_now = Vec::new();
    match sim.p.workload {
        Workload::WebSearch | Workload::Hadoop => {
            let cdf = if sim.p.workload == Workload::WebSearch {
                Cdf::parse("websearch.cdf", WEBSEARCH_CDF)?
            } else {
                Cdf::parse("hadoop.cdf", HADOOP_CDF)?
            };
            let bytes_per_s = f64::from(sim.p.host_speed_mbps) * 1e6 / 8.0 * sim.p.load;
            let gap_mean_ns = cdf.mean() / bytes_per_s * 1e9;
            let mut all: Vec<(u64, u32, u32, u64)> = Vec::new();
            for src in 0..n {
                let mut t = 0.0f64;
                loop {
                    t += -gap_mean_ns * (1.0 - rng.unit()).ln();
                    if t >= sim.p.duration_ns as f64 {
                        break;
                    }
                    let mut dst = rng.below(n as usize - 1) as u32;
                    if dst >= src {
                        dst += 1;
                    }
                    let size = cdf.sample(rng.unit()).round().max(1.0) as u64;
                    all.push((t as u64, src, dst, size));
                }
            }
            all.sort_by_key(|&(t, s, _, _)| (t, s));
            for (t, s, d, size) in all {
                let id = add_flow(sim, &mut rng, s, d, size, t);
                sim.arrivals.push(id);
            }
        }
        Workload::Incast => {
            let fanin = sim.p.fanin;
            if fanin == 0 || fanin >= n {
                bail!("fanin: {fanin} out of range (1..{n})");
            }
            // the senders furthest from host 0 (the last hosts)
            for k in 0..fanin {
                let id = add_flow(sim, &mut rng, n - 1 - k, 0, m, 0);
                in_job(sim, id, 0);
                start_now.push(id);
            }
        }
        Workload::Permutation => {
            let mut perm: Vec<u32> = (0..n).collect();
            // a derangement: shuffle until no host sends to itself
            loop {
                for i in (1..n as usize).rev() {
                    let j = rng.below(i + 1);
                    perm.swap(i, j);
                }
                if perm.iter().enumerate().all(|(i, &d)| i as u32 != d) {
                    break;
                }
            }
            for (s, &d) in perm.iter().enumerate() {
                let id = add_flow(sim, &mut rng, s as u32, d, m, 0);
                in_job(sim, id, 0);
                start_now.push(id);
            }
        }
        Workload::Pairs => {
            // host i to the same slot on the next leaf (hosts of a leaf
            // are numbered together)
            let leaf_of = |h: u32| sim.topo.host_links[h as usize].peer;
            let per_leaf = (0..n).take_while(|&h| leaf_of(h) == leaf_of(0)).count() as u32;
            if per_leaf == n {
                bail!("workload: pairs needs at least two leaves");
            }
            for s in 0..n {
                let id = add_flow(sim, &mut rng, s, (s + per_leaf) % n, m, 0);
                in_job(sim, id, 0);
                start_now.push(id);
            }
        }
        Workload::AllToAll => {
            let r = ranks(sim)?;
            let each = (m / u64::from(r)).max(1);
            for s in 0..r {
                for k in 1..r {
                    let d = (s + k) % r;
                    let id = add_flow(sim, &mut rng, s, d, each, 0);
                    in_job(sim, id, 0);
                    start_now.push(id);
                }
            }
        }
        Workload::AllReduce => {
            let r = ranks(sim)?;
            // NCCL on servers of 8 GPUs: one ring per rail (GPU index),
            // across the servers; otherwise one ring over every rank
            let (channels, members) = if r % 8 == 0 && r > 8 {
                (8, r / 8)
            } else {
                (1, r)
            };
            let chunk = (m / u64::from(channels) / u64::from(members)).max(1);
            let steps = 2 * (members - 1);
            for c in 0..channels {
                let host = |i: u32| if channels == 8 { i * 8 + c } else { i };
                let mut prev: Vec<u32> = Vec::new();
                for step in 0..steps {
                    let mut cur = Vec::with_capacity(members as usize);
                    for i in 0..members {
                        let id =
                            add_flow(sim, &mut rng, host(i), host((i + 1) % members), chunk, 0);
                        in_job(sim, id, step);
                        cur.push(id);
                    }
                    for i in 0..members as usize {
                        if prev.is_empty() {
                            start_now.push(cur[i]);
                        } else {
                            // what rank i received in the last step, and
                            // its own last send
                            let from = (i + members as usize - 1) % members as usize;
                            depend(sim, cur[i], prev[from]);
                            depend(sim, cur[i], prev[i]);
                        }
                    }
                    prev = cur;
                }
            }
        }
        Workload::HalvingDoubling => {
            let r = ranks(sim)?;
            if !r.is_power_of_two() {
                bail!("ranks: halving-doubling needs a power of two, got {r}");
            }
            let lg = r.trailing_zeros();
            // reduce-scatter by halving distances, then all-gather back
            let mut plan: Vec<(u32, u64)> = Vec::new();
            for k in 0..lg {
                plan.push((r >> (k + 1), m >> (k + 1)));
            }
            for k in (0..lg).rev() {
                plan.push((r >> (k + 1), m >> (k + 1)));
            }
            let mut prev: Vec<u32> = Vec::new();
            for (step, &(dist, size)) in plan.iter().enumerate() {
                let mut cur = vec![0u32; r as usize];
                for i in 0..r {
                    let id = add_flow(sim, &mut rng, i, i ^ dist, size.max(1), 0);
                    in_job(sim, id, step as u32);
                    cur[i as usize] = id;
                }
                for i in 0..r as usize {
                    if prev.is_empty() {
                        start_now.push(cur[i]);
                    } else {
                        // partner of the previous step sent to i
                        let pd = sim.addrs[prev[i] as usize].dst as usize;
                        depend(sim, cur[i], prev[pd]);
                        depend(sim, cur[i], prev[i]);
                    }
                }
                prev = cur;
            }
        }
    }
    sim.arrivals.extend(start_now);
    // another process's flows start there
    let flows = &sim.flows;
    sim.arrivals.retain(|&f| flows.holds(f as usize));
    Ok(())
}
