//! Place mode's far view ([`crate::config::Scenario::far_view`]), a
//! study of the simulator: what a leaf would gain from knowing the next
//! switch's queue toward a packet's destination. A leaf sees its own
//! uplinks only; flows of different leaves that meet on a spine's
//! downlink stay met while pinned, and the spines' PFC frames follow.
//!
//! Two views, both refused on a partitioned run (they read or write
//! every switch):
//! * `oracle:DELAY`: every switch's lossless queues, read every DELAY
//!   (at each choice with `0ns`): the most any feedback could tell.
//! * `notify`: what a data plane could send. A switch whose lossless
//!   queue toward a destination holds at least the ECN threshold `kmin`
//!   tells the upstream switch that sent the packet ("my port toward the
//!   destination's leaf needs this long to send its queue"), a link
//!   delay later: `dataplane_common::lb::far` decides when, and for how
//!   long it counts. Only the leaves that feed a queue learn of it, as
//!   with QCN's congestion notification messages; the notification
//!   frames' own bandwidth is not simulated.

use dataplane_common::lb::{drain_time_ns, far_drain_at, notify_due, MAX_MEMBERS, NOTIFY_TTL_NS};

use crate::config::FarMode;
use crate::switch::state::Switch;
use crate::topo::{Topology, GROUP_BIT};

/// The far view's state.
#[derive(Default)]
pub struct FarView {
    mode: Option<FarMode>,
    /// Oracle: when `drain_ns` was read.
    taken_ns: u64,
    /// Oracle: per switch, per port, the time its lossless queue takes
    /// to send at the port's speed.
    drain_ns: Vec<Vec<u64>>,
    /// Notify: per (switch, port, destination leaf), what was heard and
    /// from when it counts; `n`: switches.
    heard: Vec<(u64, u64)>,
    /// Notify: per (switch, ingress, egress), the last notification sent.
    sent: Vec<u64>,
    n: usize,
    ports: usize,
    /// Notify: notifications sent.
    notes: u64,
}

/// The time port `j` of `x` needs to send its lossless queue.
fn drain_ns(x: &Switch, j: usize) -> u64 {
    drain_time_ns(x.model.bytes(j, 1), x.ports[j].link.speed_mbps)
}

impl FarView {
    /// Whether switches send notifications.
    pub fn notifies(&self) -> bool {
        self.mode == Some(FarMode::Notify)
    }

    fn at(&self, s: usize, port: usize, leaf: usize) -> usize {
        (s * self.ports + port) * self.n + leaf
    }

    /// Reads every switch's queues at `now` (oracle).
    fn read(&mut self, now: u64, switches: &[Switch]) {
        self.taken_ns = now;
        self.drain_ns = switches
            .iter()
            .map(|x| (0..x.ports.len()).map(|j| drain_ns(x, j)).collect())
            .collect();
    }

    /// The far view of a run in `mode` over `switches`.
    pub fn new(mode: FarMode, switches: &[Switch]) -> FarView {
        if mode == FarMode::Off {
            return FarView::default();
        }
        let n = switches.len();
        let ports = switches.iter().map(|x| x.ports.len()).max().unwrap_or(0);
        let notify = mode == FarMode::Notify;
        FarView {
            mode: Some(mode),
            n,
            ports,
            heard: if notify {
                vec![(0, 0); n * ports * n]
            } else {
                Vec::new()
            },
            sent: if notify {
                vec![0; n * ports * ports]
            } else {
                Vec::new()
            },
            ..FarView::default()
        }
    }

    /// Notifications sent so far (`notify`).
    pub fn notes(&self) -> u64 {
        self.notes
    }

    /// What the far view says at `now` of each member of group `gid` at
    /// switch `s` for a packet to host `dst` behind leaf (switch index)
    /// `leaf`: the time the next switch's port toward `dst` needs to send
    /// its lossless queue (0: nothing known, a host, or a next switch
    /// that balances again).
    #[allow(clippy::too_many_arguments)]
    pub fn members(
        &mut self,
        now: u64,
        switches: &[Switch],
        topo: &Topology,
        first_switch: u32,
        s: usize,
        gid: u16,
        dst: u32,
        leaf: usize,
    ) -> [u64; MAX_MEMBERS] {
        let mut far = [0; MAX_MEMBERS];
        let Some(mode) = self.mode else {
            return far;
        };
        if let FarMode::Oracle { every_ns } = mode {
            if self.drain_ns.is_empty() || now >= self.taken_ns.saturating_add(every_ns) {
                self.read(now, switches);
            }
        }
        let g = &switches[s].groups[gid as usize];
        for (i, m) in g.members.iter().enumerate().take(g.n_members as usize) {
            far[i] = match mode {
                FarMode::Notify => {
                    let (d, heard) = self.heard[self.at(s, m.id as usize, leaf)];
                    far_drain_at(d, heard, NOTIFY_TTL_NS, now)
                }
                _ => {
                    let peer = switches[s].ports[m.id as usize].link.peer;
                    let Some(x) = peer.checked_sub(first_switch) else {
                        continue;
                    };
                    let route = topo.switches[x as usize].route[dst as usize];
                    if route & GROUP_BIT != 0 {
                        continue;
                    }
                    self.drain_ns[x as usize][route as usize]
                }
            };
        }
        far
    }

    /// A lossless packet to a host behind leaf (switch index) `leaf` came
    /// in on port `inp` of switch `s` and was queued on port `out`, whose
    /// queue now holds `queued` bytes: tells the switch upstream, when
    /// [`notify_due`] at the ECN threshold `kmin` (notify).
    #[allow(clippy::too_many_arguments)]
    pub fn notify(
        &mut self,
        now: u64,
        switches: &[Switch],
        first_switch: u32,
        s: usize,
        inp: u16,
        out: usize,
        leaf: usize,
        queued: u32,
        kmin: u32,
    ) {
        let link = switches[s].ports[inp as usize].link;
        let Some(up) = link.peer.checked_sub(first_switch) else {
            return;
        };
        let k = (s * self.ports + inp as usize) * self.ports + out;
        if !notify_due(queued, kmin, self.sent[k], now) {
            return;
        }
        self.sent[k] = now.max(1);
        let d = drain_ns(&switches[s], out);
        let i = self.at(up as usize, link.peer_port as usize, leaf);
        self.heard[i] = (d, now + link.delay_ns);
        self.notes += 1;
    }
}
