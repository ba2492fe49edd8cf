//! AI-fabric traffic scenarios on a [`Fabric`], their measurement and
//! their report (table, JSON with stable names, SVG plots).
//!
//! | scenario      | traffic                                                        |
//! |---------------|----------------------------------------------------------------|
//! | `incast`      | N senders (default: every other host) write `bytes` each to one receiver |
//! | `all-reduce`  | ring all-reduce of `bytes` per host: 2(N-1) steps of `bytes/N`, each step sends what the previous one received; the ring alternates leaves, so every hop crosses the spines |
//! | `permutation` | host i writes `bytes` to host i+H (the same slot on the next leaf); NIC-like UDP source ports (one per QP) |
//! | `elephants`   | the same pairs, every flow with ONE UDP source port (the low-entropy case that defeats 5-tuple hashing) |
//!
//! Every write is split into messages of [`MESSAGE_BYTES`]. A scenario
//! ends when every host's plan is complete (sends acknowledged, receives
//! in): that time is `job_completion_ms`; or at the timeout, reported as
//! incomplete.

use std::fmt::Write as _;

use anyhow::{bail, Result};
use dataplane_common::lb::FlowKey;

use crate::host::{HostPlan, RecvJob, SendJob};
use crate::topo::Topology;

mod report;
mod run;

pub use report::*;
pub use run::*;

/// Points (x, y) of a plotted series.
pub type Series = Vec<(f64, f64)>;

/// Size of one RDMA WRITE message.
pub const MESSAGE_BYTES: u64 = 64 * 1024;
/// The UDP source port of every flow in `elephants`.
pub const ELEPHANT_SPORT: u16 = 49152;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Scenario {
    Incast {
        receiver: String,
        senders: Option<Vec<String>>,
        bytes: u64,
    },
    AllReduce {
        bytes: u64,
    },
    Permutation {
        bytes: u64,
    },
    Elephants {
        bytes: u64,
    },
}

/// NIC-like UDP source port of a QP (RoCEv2 NICs derive it from the QP).
pub fn qp_sport(qp: u32) -> u16 {
    let h = qp.wrapping_mul(0x9e37_79b1);
    0xc000 | ((h >> 18) as u16 & 0x3fff)
}

fn split(bytes: u64) -> Vec<u64> {
    let mut v = vec![MESSAGE_BYTES; (bytes / MESSAGE_BYTES) as usize];
    if !bytes.is_multiple_of(MESSAGE_BYTES) || v.is_empty() {
        v.push(bytes % MESSAGE_BYTES);
    }
    v.retain(|&m| m > 0);
    if v.is_empty() {
        v.push(1);
    }
    v
}

/// One write of `messages` from host `from` to host `to` (address
/// `to_ip`) on queue pair `qp`: the sender's job and the receiver's.
fn write(
    plans: &mut [HostPlan],
    (from, to): (usize, usize),
    to_ip: [u8; 4],
    qp: u32,
    udp_sport: u16,
    messages: Vec<u64>,
) {
    plans[to].recvs.push(RecvJob {
        qp,
        messages: messages.len() as u64,
    });
    plans[from].sends.push(SendJob {
        qp,
        dst_ip: to_ip,
        udp_sport,
        messages,
        gate_qp: None,
    });
}

impl Scenario {
    pub fn name(&self) -> &'static str {
        match self {
            Scenario::Incast { .. } => "incast",
            Scenario::AllReduce { .. } => "all_reduce",
            Scenario::Permutation { .. } => "permutation",
            Scenario::Elephants { .. } => "elephants",
        }
    }

    /// Ring order for all-reduce: slot 0 of every leaf, slot 1 of every
    /// leaf, ... (indices into [`Topology::hosts`]).
    pub fn ring(topo: &Topology) -> Vec<usize> {
        let (_, l, h) = topo.dims();
        (0..h)
            .flat_map(|k| (0..l).map(move |leaf| leaf * h + k))
            .collect()
    }

    /// Every host's plan, or an error naming a host the fabric lacks (before
    /// anything runs).
    pub fn plans(&self, topo: &Topology) -> Result<Vec<HostPlan>> {
        let hosts = topo.hosts();
        let n = hosts.len();
        let mut plans = vec![HostPlan::default(); n];
        let idx = |name: &str| -> Result<usize> {
            topo.host(name)
                .map(|h| hosts.iter().position(|x| x.name == h.name).unwrap_or(0))
        };
        let (_, l, h) = topo.dims();
        match self {
            Scenario::Incast {
                receiver,
                senders,
                bytes,
            } => {
                let r = idx(receiver)?;
                let s: Vec<usize> = match senders {
                    Some(v) => v.iter().map(|x| idx(x)).collect::<Result<_>>()?,
                    None => (0..n).filter(|&i| i != r).collect(),
                };
                if s.is_empty() || s.contains(&r) {
                    bail!("incast: expected senders other than the receiver {receiver}");
                }
                for (k, &i) in s.iter().enumerate() {
                    let qp = 0x100 + k as u32;
                    write(
                        &mut plans,
                        (i, r),
                        hosts[r].ipv4,
                        qp,
                        qp_sport(qp),
                        split(*bytes),
                    );
                }
            }
            Scenario::AllReduce { bytes } => {
                if n < 2 {
                    bail!("all-reduce: expected at least 2 hosts");
                }
                let ring = Self::ring(topo);
                let chunk = (bytes / n as u64).max(1);
                let steps = 2 * (n - 1);
                for (pos, &i) in ring.iter().enumerate() {
                    let right = ring[(pos + 1) % n];
                    let qp = 0x200 + pos as u32;
                    let left_qp = 0x200 + ((pos + n - 1) % n) as u32;
                    plans[i].sends.push(SendJob {
                        qp,
                        dst_ip: hosts[right].ipv4,
                        udp_sport: qp_sport(qp),
                        messages: vec![chunk; steps],
                        gate_qp: Some(left_qp),
                    });
                    plans[i].recvs.push(RecvJob {
                        qp: left_qp,
                        messages: steps as u64,
                    });
                }
            }
            Scenario::Permutation { bytes } | Scenario::Elephants { bytes } => {
                if l < 2 {
                    bail!("{}: expected a leaf-spine with at least 2 leaves (its flows cross the spines)", self.name());
                }
                for i in 0..n {
                    let j = (i + h) % n;
                    let qp = 0x300 + i as u32;
                    let sport = if matches!(self, Scenario::Elephants { .. }) {
                        ELEPHANT_SPORT
                    } else {
                        qp_sport(qp)
                    };
                    write(&mut plans, (i, j), hosts[j].ipv4, qp, sport, split(*bytes));
                }
            }
        }
        Ok(plans)
    }

    /// The flows' keys as the leaves hash them: (leaf of the sender, key).
    pub fn flow_keys(&self, topo: &Topology) -> Result<Vec<(usize, FlowKey)>> {
        let hosts = topo.hosts();
        let mut out = Vec::new();
        for (i, p) in self.plans(topo)?.iter().enumerate() {
            for s in &p.sends {
                out.push((
                    hosts[i].leaf,
                    FlowKey::ipv4(hosts[i].ipv4, s.dst_ip, 17, s.udp_sport, 4791, s.qp),
                ));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topo::Shape;

    #[test]
    fn all_reduce_ring_alternates_leaves_and_gates_on_the_left() {
        let t = Topology::default();
        let ring = Scenario::ring(&t);
        assert_eq!(ring, vec![0, 4, 1, 5, 2, 6, 3, 7]);
        let plans = Scenario::AllReduce {
            bytes: 8 * 1024 * 1024,
        }
        .plans(&t)
        .unwrap();
        // h4 (ring position 1) sends to h1 and waits for h0 (position 0)
        let p = &plans[4];
        assert_eq!(p.sends[0].dst_ip, t.hosts()[1].ipv4);
        assert_eq!(p.sends[0].messages, vec![1024 * 1024; 14]);
        assert_eq!(p.sends[0].gate_qp, Some(0x200));
        assert_eq!(p.recvs[0].qp, 0x200);
    }

    #[test]
    fn incast_and_permutation_plans() {
        let t = Topology::default();
        let plans = Scenario::Incast {
            receiver: "h0".into(),
            senders: None,
            bytes: 100_000,
        }
        .plans(&t)
        .unwrap();
        assert_eq!(plans[0].recvs.len(), 7);
        assert!(plans[1..]
            .iter()
            .all(|p| p.sends.len() == 1 && p.sends[0].messages == vec![65536, 100_000 - 65536]));
        let e = Scenario::Incast {
            receiver: "h9".into(),
            senders: None,
            bytes: 1,
        }
        .plans(&t)
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown host \"h9\""), "{e}");
        let e = Scenario::Incast {
            receiver: "h0".into(),
            senders: Some(vec!["h0".into()]),
            bytes: 1,
        }
        .plans(&t)
        .unwrap_err()
        .to_string();
        assert!(e.contains("senders other than the receiver"), "{e}");
        let el = Scenario::Elephants { bytes: 1 }.flow_keys(&t).unwrap();
        assert_eq!(el.len(), 8);
        assert!(el.iter().all(|(_, k)| k.sport == ELEPHANT_SPORT));
        let pm = Scenario::Permutation { bytes: 1 }.plans(&t).unwrap();
        assert_eq!(pm[0].sends[0].dst_ip, t.hosts()[4].ipv4);
        let star = Topology {
            shape: Shape::Star { hosts: 4 },
            ..Topology::default()
        };
        assert!(Scenario::Elephants { bytes: 1 }.plans(&star).is_err());
    }
}
