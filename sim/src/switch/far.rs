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

use anyhow::{bail, Result};
use dataplane_common::lb::{drain_time_ns, far_drain_at, notify_due, MAX_MEMBERS};

use crate::engine::Sim;
use crate::switch::state::Switch;
use crate::topo::GROUP_BIT;

/// Which far view a run has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum FarMode {
    Off,
    /// Every switch's queues, read every this many ns.
    Oracle {
        every_ns: u64,
    },
    /// Notifications from the switch downstream.
    Notify,
}

impl FarMode {
    /// Parses `far_view` (`""`/`off`, `oracle:DELAY`, `notify`).
    pub fn parse(v: &str, partitions: u32) -> Result<FarMode> {
        let t = v.trim();
        let mode = match t {
            "" | "off" => return Ok(FarMode::Off),
            "notify" => FarMode::Notify,
            _ => match t.strip_prefix("oracle:") {
                Some(d) => FarMode::Oracle {
                    every_ns: crate::config::parse_time("far_view", d)?,
                },
                None => bail!(
                    "far_view: {t:?} (expected off, notify or oracle:DELAY, e.g. oracle:100us)"
                ),
            },
        };
        if partitions > 1 {
            bail!("far_view: needs partitions = 1 (it reads every switch; got {partitions})");
        }
        Ok(mode)
    }
}

/// The far view's state.
#[derive(Default)]
pub(crate) struct FarView {
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
}

/// The time port `j` of `x` needs to send its lossless queue.
fn drain_ns(x: &Switch, j: usize) -> u64 {
    drain_time_ns(x.model.bytes(j, 1), x.ports[j].link.speed_mbps)
}

impl Sim {
    /// Sets the far view up (after the switches are built).
    pub(crate) fn far_setup(&mut self) {
        let mode = self.p.far_view;
        if mode == FarMode::Off {
            return;
        }
        let n = self.switches.len();
        let ports = self
            .switches
            .iter()
            .map(|x| x.ports.len())
            .max()
            .unwrap_or(0);
        self.far.mode = Some(mode);
        self.far.n = n;
        self.far.ports = ports;
        if mode == FarMode::Notify {
            self.far.heard = vec![(0, 0); n * ports * n];
            self.far.sent = vec![0; n * ports * ports];
        }
    }

    /// The switch index of the leaf of host `h`.
    fn leaf_index(&self, h: u32) -> usize {
        (self.leaf_of(h) - self.first_switch) as usize
    }

    /// What the far view says of each member of group `gid` at switch `s`
    /// for a packet to host `dst`: the time the next switch's port toward
    /// `dst` needs to send its lossless queue (0: nothing known, a host,
    /// or a next switch that balances again).
    pub(crate) fn far_view(&mut self, s: usize, gid: u16, dst: u32) -> [u64; MAX_MEMBERS] {
        let mut far = [0; MAX_MEMBERS];
        let Some(mode) = self.far.mode else {
            return far;
        };
        if let FarMode::Oracle { every_ns } = mode {
            if self.far.drain_ns.is_empty()
                || self.now >= self.far.taken_ns.saturating_add(every_ns)
            {
                self.far.read(self.now, self.switches.as_slice());
            }
        }
        let leaf = self.leaf_index(dst);
        let g = &self.switches[s].groups[gid as usize];
        for (i, m) in g.members.iter().enumerate().take(g.n_members as usize) {
            far[i] = match mode {
                FarMode::Notify => {
                    let (d, heard) = self.far.heard[self.far.at(s, m.id as usize, leaf)];
                    far_drain_at(d, heard, self.now)
                }
                _ => {
                    let peer = self.switches[s].ports[m.id as usize].link.peer;
                    let Some(x) = peer.checked_sub(self.first_switch) else {
                        continue;
                    };
                    let route = self.topo.switches[x as usize].route[dst as usize];
                    if route & GROUP_BIT != 0 {
                        continue;
                    }
                    self.far.drain_ns[x as usize][route as usize]
                }
            };
        }
        far
    }

    /// A lossless packet to host `dst` from port `inp` of switch `s` was
    /// queued on port `out`, whose queue now holds `queued` bytes: tells
    /// the switch upstream when the queue has reached the ECN threshold
    /// (notify).
    pub(crate) fn far_notify(&mut self, s: usize, inp: u16, out: usize, dst: u32, queued: u32) {
        let link = self.switches[s].ports[inp as usize].link;
        let Some(up) = link.peer.checked_sub(self.first_switch) else {
            return;
        };
        let k = (s * self.far.ports + inp as usize) * self.far.ports + out;
        let now = self.now;
        if !notify_due(queued, self.p.kmin, self.far.sent[k], now) {
            return;
        }
        self.far.sent[k] = now.max(1);
        let d = drain_ns(&self.switches[s], out);
        let leaf = self.leaf_index(dst);
        let i = self.far.at(up as usize, link.peer_port as usize, leaf);
        self.far.heard[i] = (d, now + link.delay_ns);
        self.far.notes += 1;
    }

    /// Notifications the switches sent (`far_view = "notify"`).
    pub fn far_notifications(&self) -> u64 {
        self.far.notes
    }
}
