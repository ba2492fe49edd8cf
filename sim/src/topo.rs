//! Topologies (leaf-spine, 3-tier Clos, rail-optimised) and their routes:
//! every shortest path, one next-hop group per distinct set of equal-cost
//! egress ports.

use std::collections::HashMap;

use anyhow::{bail, Context, Result};
use dataplane_common::lb::MAX_MEMBERS;

/// Ingress slots of the simulated switches' buffer model: a switch has at
/// most this many ports.
pub const SLOTS: usize = 64;
/// A route entry naming a next-hop group rather than a port.
pub const GROUP_BIT: u16 = 0x8000;

/// One direction of a link, seen from the port that sends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Link {
    /// The node at the other end (hosts `0..hosts`, switches after them).
    pub peer: u32,
    pub peer_port: u16,
    pub speed_mbps: u32,
    pub delay_ns: u64,
}

#[derive(Clone, Debug)]
pub struct SwitchSpec {
    pub name: String,
    /// 1 leaf, 2 spine / aggregation, 3 core.
    pub tier: u8,
    pub ports: Vec<Link>,
    /// Per destination host: a port, or `GROUP_BIT | group`.
    pub route: Vec<u16>,
    /// Next-hop groups: their member ports.
    pub groups: Vec<Vec<u16>>,
}

#[derive(Clone, Debug)]
pub struct Topology {
    pub hosts: u32,
    /// Each host's NIC link (to its leaf).
    pub host_links: Vec<Link>,
    pub switches: Vec<SwitchSpec>,
}

/// Graph under construction: per node, its tier and ports.
struct Builder {
    tiers: Vec<u8>,
    names: Vec<String>,
    ports: Vec<Vec<Link>>,
    hosts: u32,
    speed: u32,
    host_speed: u32,
    delay: u64,
}

impl Builder {
    fn new(hosts: u32, speed: u32, host_speed: u32, delay: u64) -> Self {
        let mut b = Builder {
            tiers: Vec::new(),
            names: Vec::new(),
            ports: Vec::new(),
            hosts,
            speed,
            host_speed,
            delay,
        };
        for h in 0..hosts {
            b.node(0, format!("h{h}"));
        }
        b
    }

    fn node(&mut self, tier: u8, name: String) -> u32 {
        self.tiers.push(tier);
        self.names.push(name);
        self.ports.push(Vec::new());
        (self.tiers.len() - 1) as u32
    }

    fn connect(&mut self, a: u32, b: u32) {
        let (pa, pb) = (
            self.ports[a as usize].len() as u16,
            self.ports[b as usize].len() as u16,
        );
        let speed = if a < self.hosts || b < self.hosts {
            self.host_speed
        } else {
            self.speed
        };
        let l = |peer, peer_port| Link {
            peer,
            peer_port,
            speed_mbps: speed,
            delay_ns: self.delay,
        };
        let (la, lb) = (l(b, pb), l(a, pa));
        self.ports[a as usize].push(la);
        self.ports[b as usize].push(lb);
    }

    /// Routes by breadth-first search from every host: a switch's next hops
    /// towards host `h` are its ports to neighbours one hop closer.
    fn finish(self) -> Result<Topology> {
        let n = self.tiers.len();
        let hosts = self.hosts as usize;
        for (i, p) in self.ports.iter().enumerate().skip(hosts) {
            if p.len() > SLOTS {
                bail!(
                    "topology: switch {} has {} ports; the simulator's buffer model \
                     tracks at most {SLOTS} ingress ports per switch",
                    self.names[i],
                    p.len()
                );
            }
        }
        for (h, p) in self.ports.iter().enumerate().take(hosts) {
            if p.len() != 1 {
                bail!("topology: host {h} has {} links (expected 1)", p.len());
            }
        }
        let mut switches: Vec<SwitchSpec> = (hosts..n)
            .map(|i| SwitchSpec {
                name: self.names[i].clone(),
                tier: self.tiers[i],
                ports: self.ports[i].clone(),
                route: vec![0; hosts],
                groups: Vec::new(),
            })
            .collect();
        let mut group_ids: Vec<HashMap<Vec<u16>, u16>> = vec![HashMap::new(); n - hosts];
        let mut dist = vec![u32::MAX; n];
        let mut queue = Vec::with_capacity(n);
        for h in 0..hosts {
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            queue.clear();
            dist[h] = 0;
            queue.push(h as u32);
            let mut head = 0;
            while head < queue.len() {
                let u = queue[head] as usize;
                head += 1;
                // hosts do not forward
                if u >= hosts || u == h {
                    for l in &self.ports[u] {
                        let v = l.peer as usize;
                        if dist[v] == u32::MAX {
                            dist[v] = dist[u] + 1;
                            queue.push(v as u32);
                        }
                    }
                }
            }
            for s in hosts..n {
                if dist[s] == u32::MAX {
                    bail!("topology: host {h} unreachable from {}", self.names[s]);
                }
                let hops: Vec<u16> = self.ports[s]
                    .iter()
                    .enumerate()
                    .filter(|(_, l)| {
                        let v = l.peer as usize;
                        dist[v] + 1 == dist[s] && (v >= hosts || v == h)
                    })
                    .map(|(p, _)| p as u16)
                    .collect();
                let sw = &mut switches[s - hosts];
                sw.route[h] = if hops.len() == 1 {
                    hops[0]
                } else {
                    if hops.len() > MAX_MEMBERS {
                        bail!(
                            "topology: {} has {} equal-cost next hops; a next-hop group \
                             holds at most {MAX_MEMBERS}",
                            sw.name,
                            hops.len()
                        );
                    }
                    let ids = &mut group_ids[s - hosts];
                    let next = ids.len() as u16;
                    let g = *ids.entry(hops.clone()).or_insert_with(|| {
                        sw.groups.push(hops);
                        next
                    });
                    GROUP_BIT | g
                };
            }
        }
        let host_links = (0..hosts).map(|h| self.ports[h][0]).collect();
        Ok(Topology {
            hosts: self.hosts,
            host_links,
            switches,
        })
    }
}

fn nums(field: &str, s: &str, sep: char) -> Result<Vec<u32>> {
    s.split(sep)
        .map(|x| {
            x.trim()
                .parse::<u32>()
                .with_context(|| format!("topology: {field} {x:?} is not a number"))
        })
        .collect()
}

/// Builds `spec`: `leafspine:LxS[:H]` (L leaves, S spines, H hosts per
/// leaf, default S: H:S is the oversubscription), `clos3:K` (a K-ary
/// fat-tree: K pods of K/2 leaves and K/2 aggregation switches, (K/2)^2
/// cores, K/2 hosts per leaf), `rail:N[:S]` (N servers of 8 GPUs, one leaf
/// per rail, S spines, default 8).
/// Host links run at `host_mbps`, the others at `speed_mbps`.
pub fn build(spec: &str, speed_mbps: u32, host_mbps: u32, delay_ns: u64) -> Result<Topology> {
    let (kind, rest) = spec.split_once(':').unwrap_or((spec, ""));
    match kind {
        "leafspine" => {
            let mut parts = rest.split(':');
            let ls = parts.next().unwrap_or("");
            let v = nums("LxS", ls, 'x')?;
            if v.len() != 2 || v[0] == 0 || v[1] == 0 {
                bail!("topology: {spec:?}: expected leafspine:LxS[:H], e.g. leafspine:16x8:16");
            }
            let (l, s) = (v[0], v[1]);
            let h = match parts.next() {
                Some(x) => nums("H", x, ',')?[0],
                None => s,
            };
            if h == 0 {
                bail!("topology: {spec:?}: hosts per leaf must be above 0");
            }
            let mut b = Builder::new(l * h, speed_mbps, host_mbps, delay_ns);
            let leaves: Vec<u32> = (0..l).map(|i| b.node(1, format!("leaf{i}"))).collect();
            let spines: Vec<u32> = (0..s).map(|i| b.node(2, format!("spine{i}"))).collect();
            for (i, &lf) in leaves.iter().enumerate() {
                for k in 0..h {
                    b.connect(i as u32 * h + k, lf);
                }
            }
            for &lf in &leaves {
                for &sp in &spines {
                    b.connect(lf, sp);
                }
            }
            b.finish()
        }
        "clos3" => {
            let k = nums("K", rest, ',')?;
            let k = k[0];
            if k < 2 || k % 2 != 0 {
                bail!("topology: {spec:?}: expected clos3:K with K even and >= 2");
            }
            let half = k / 2;
            let mut b = Builder::new(k * half * half, speed_mbps, host_mbps, delay_ns);
            let cores: Vec<u32> = (0..half * half)
                .map(|i| b.node(3, format!("core{i}")))
                .collect();
            for p in 0..k {
                let leaves: Vec<u32> = (0..half)
                    .map(|i| b.node(1, format!("p{p}leaf{i}")))
                    .collect();
                let aggs: Vec<u32> = (0..half)
                    .map(|i| b.node(2, format!("p{p}agg{i}")))
                    .collect();
                for (i, &lf) in leaves.iter().enumerate() {
                    for hh in 0..half {
                        b.connect((p * half + i as u32) * half + hh, lf);
                    }
                    for &ag in &aggs {
                        b.connect(lf, ag);
                    }
                }
                for (j, &ag) in aggs.iter().enumerate() {
                    for c in 0..half {
                        b.connect(ag, cores[j * half as usize + c as usize]);
                    }
                }
            }
            b.finish()
        }
        "rail" => {
            let v = nums("N[:S]", rest, ':')?;
            let n = v.first().copied().unwrap_or(0);
            let s = v.get(1).copied().unwrap_or(8);
            if n == 0 || s == 0 {
                bail!("topology: {spec:?}: expected rail:N[:S] (N servers of 8 GPUs, S spines)");
            }
            let mut b = Builder::new(n * 8, speed_mbps, host_mbps, delay_ns);
            let rails: Vec<u32> = (0..8).map(|r| b.node(1, format!("rail{r}"))).collect();
            let spines: Vec<u32> = (0..s).map(|i| b.node(2, format!("spine{i}"))).collect();
            for srv in 0..n {
                for (g, &r) in rails.iter().enumerate() {
                    b.connect(srv * 8 + g as u32, r);
                }
            }
            for &r in &rails {
                for &sp in &spines {
                    b.connect(r, sp);
                }
            }
            b.finish()
        }
        _ => {
            bail!("topology: unknown {spec:?} (expected leafspine:LxS[:H], clos3:K or rail:N[:S])")
        }
    }
}
