//! A switch's state: its ports (link, FIFOs per class, pause, rate),
//! the buffer model's queues and PG rows, the shared pool, routes, groups
//! and flowlets, counters; and how a switch is built from the topology and
//! the run's parameters (profiles, headroom, groups).

use std::collections::VecDeque;

use anyhow::{bail, Result};
use dataplane_common::buffer::{PauseStat, PortBuffer, NUM_TC, STORM_NONE};
use dataplane_common::lb::{
    build_buckets, uses_flow_ways, uses_flowlets, uses_port_load, validate_group, FlowKey,
    FlowWays, FlowletSlot, Group, Member, PortRate, FLOWLET_SLOTS, FLOW_SETS, MAX_MEMBERS,
};
use dataplane_common::lossless::{
    headroom, validate_buffer_profile, validate_wred, BufferProfile, HeadroomInput, SharedPool,
    WredProfile, DEFAULT_XON_OFFSET, ECN_ALL, ECN_NONE, TH_DYNAMIC,
};
use dataplane_common::rand::XorShift32;

use crate::config::Params;
use crate::event::{HDR, TC_DATA};
use crate::model::Model;
use crate::topo::{Link, SwitchSpec};

/// Per-switch counters (the data plane's LosslessCounters, in the
/// simulator's two classes).
#[derive(Clone, Copy, Debug, Default)]
pub struct SwCounters {
    pub ecn_marked: u64,
    pub wred_drop: u64,
    pub drop_shared_full: u64,
    pub drop_headroom: u64,
    /// Drops of RoCE data packets while the class was lossless.
    pub lossless_drop: u64,
    pub dropped_payload: u64,
    pub pfc_xoff: u64,
    pub pfc_refresh: u64,
    pub pfc_xon: u64,
    pub no_route: u64,
}

/// Laid out by use: the FIFOs in the first cache line, what a frame's
/// start and end touch in the second, the rest after.
#[repr(C, align(64))]
pub struct SwPort {
    /// FIFOs of (packet id, frame bytes) per class (the length beside
    /// the id saves reading the packet's slab entry to start it).
    pub fifo: [VecDeque<(u32, u32)>; 2],
    pub link: Link,
    pub ser_frac: u64,
    pub tx_bytes: u64,
    /// Nanoseconds of frames on the wire (the serialisation times as the
    /// simulation rounds them: integer ns, the remainder carried).
    pub tx_ns: u64,
    /// Class of the frame on the wire.
    pub cur: usize,
    /// When the next queue tick is scheduled.
    pub qtick_at: u64,
    /// Peak of the RoCE FIFO (bytes).
    pub peak_bytes: u32,
    pub busy: bool,
    /// Goes to a switch of a higher tier.
    pub uplink: bool,
    /// Has a frame on the wire or queued (kept for uplinks only).
    pub has_data: bool,
    pub rate: PortRate,
    pub resume_at: u64,
    /// When the next PG refresh tick is scheduled.
    pub tick_at: u64,
    /// PFC frames leave one after another: the next may start then.
    pub pfc_free_at: u64,
    /// Pause received for the RoCE class.
    pub pause: PauseStat,
}

/// The buffer profiles of a switch's ports, each distinct one kept once
/// (most switches have one: every port the same speed and cable): an
/// arrival reads two, which stay in cache this way.
pub struct PortBuffers {
    distinct: Vec<PortBuffer>,
    /// Per port, its profile's index in `distinct` (at most 64 ports,
    /// `SLOTS`).
    index: Vec<u8>,
}

impl PortBuffers {
    fn new() -> Self {
        PortBuffers {
            distinct: Vec::new(),
            index: Vec::new(),
        }
    }

    /// Adds the next port's profile.
    fn push(&mut self, b: PortBuffer) {
        let i = self
            .distinct
            .iter()
            .position(|x| *x == b)
            .unwrap_or_else(|| {
                self.distinct.push(b);
                self.distinct.len() - 1
            });
        self.index.push(i as u8);
    }

    /// The profile of `port`.
    #[inline(always)]
    pub fn of(&self, port: usize) -> &PortBuffer {
        &self.distinct[self.index[port] as usize]
    }
}

pub struct Switch {
    pub name: String,
    pub tier: u8,
    pub ports: Vec<SwPort>,
    pub bufs: PortBuffers,
    /// The buffer model's queues (per port and class) and PG rows.
    pub model: Model,
    pub pool: SharedPool,
    pub route: Vec<u16>,
    pub groups: Vec<Group>,
    pub flowlets: Vec<FlowletSlot>,
    /// Place mode's set-associative flow table.
    pub ways: Vec<FlowWays>,
    pub seed: u32,
    pub rng: XorShift32,
    pub c: SwCounters,
    /// RoCE PGs in XOFF, one bit per ingress slot (none: nothing to check
    /// after a release).
    pub xoff_mask: u64,
    /// A group balances by port load: the ports' rates are kept (nothing
    /// else reads them).
    pub keeps_rates: bool,
    /// The time any of its uplinks had data to send.
    pub up: UplinkBusy,
}

/// The time any of a switch's uplinks had data to send: the denominator
/// of its busy utilisation.
#[derive(Clone, Copy, Debug, Default)]
pub struct UplinkBusy {
    /// Uplinks with data now.
    pub active: u32,
    /// When `active` last rose from 0.
    pub since: u64,
    /// Busy time before `since`.
    pub busy: u64,
}

impl UplinkBusy {
    /// An uplink got data (`on`) or sent its last frame, at `now`.
    #[inline]
    pub fn set(&mut self, now: u64, on: bool) {
        if on {
            if self.active == 0 {
                self.since = now;
            }
            self.active += 1;
        } else {
            self.active -= 1;
            if self.active == 0 {
                self.busy += now - self.since;
            }
        }
    }

    /// Busy time up to `now`. A partitioned run's `now` (a drained run's
    /// last completion) can be before the end of the window its
    /// partitions ran to, so a busy period may have begun after it: that
    /// period counts nothing.
    pub fn busy_ns(&self, now: u64) -> u64 {
        self.busy
            + if self.active > 0 {
                now.saturating_sub(self.since)
            } else {
                0
            }
    }
}

/// The PG profile of the RoCE class on `link` (headroom by SONiC's formula
/// for the link's speed and cable length unless set, shared threshold
/// `2^dynamic_th` of the free pool: -3, 1/8, as in the HPCC simulator), or
/// a lossy one.
fn roce_profile(p: &Params, link: &Link) -> BufferProfile {
    // 1.98e8 m/s: 0.198 m per ns
    let cable_m = (link.delay_ns as f64 * 0.198).ceil() as u32;
    let h = headroom(&HeadroomInput::new(
        link.speed_mbps,
        cable_m,
        p.mtu + HDR,
        0,
    ));
    let xoff = if p.headroom_bytes > 0 {
        p.headroom_bytes
    } else {
        h.xoff
    };
    BufferProfile {
        size: 0,
        xon: if p.pfc { h.xon.min(xoff) } else { 0 },
        xoff: if p.pfc { xoff } else { 0 },
        xon_offset: DEFAULT_XON_OFFSET,
        static_th: 0,
        dynamic_th: if p.pfc {
            p.dynamic_th
        } else {
            p.lossy_dynamic_th
        },
        mode: TH_DYNAMIC,
        lossless: u8::from(p.pfc),
        _pad: 0,
    }
}

const LOSSY: BufferProfile = BufferProfile {
    size: 0,
    xon: 0,
    xoff: 0,
    xon_offset: 0,
    static_th: 0,
    dynamic_th: 0,
    mode: TH_DYNAMIC,
    lossless: 0,
    _pad: 0,
};

const NO_WRED: WredProfile = WredProfile {
    green_min_threshold: u32::MAX,
    green_max_threshold: u32::MAX,
    green_drop_probability: 0,
    ecn: ECN_NONE,
    wred_green_enable: 0,
    _pad: 0,
};

impl Switch {
    pub fn new(spec: &SwitchSpec, p: &Params, index: u32, seed: u32) -> Result<Switch> {
        let mut bufs = PortBuffers::new();
        let mut headroom_total = 0u64;
        let wred = WredProfile {
            green_min_threshold: p.kmin,
            green_max_threshold: p.kmax,
            green_drop_probability: p.pmax,
            ecn: if p.ecn { ECN_ALL } else { ECN_NONE },
            wred_green_enable: 0,
            _pad: 0,
        };
        validate_wred(&wred).map_err(|e| anyhow::anyhow!("kmin/kmax/pmax: {e:?}"))?;
        for l in &spec.ports {
            let mut pg = [LOSSY; NUM_TC];
            let mut wr = [NO_WRED; NUM_TC];
            pg[TC_DATA as usize] = roce_profile(p, l);
            wr[TC_DATA as usize] = wred;
            headroom_total += u64::from(pg[TC_DATA as usize].xoff);
            bufs.push(PortBuffer {
                pg_profile: pg,
                wred: wr,
                speed_mbps: l.speed_mbps,
                enabled: 1,
                storm: [STORM_NONE; NUM_TC],
            });
        }
        if p.pool_bytes == 0 && headroom_total >= p.buffer_bytes {
            bail!(
                "buffer: {} bytes do not hold {}'s headroom ({} bytes for {} ports)",
                p.buffer_bytes,
                spec.name,
                headroom_total,
                spec.ports.len()
            );
        }
        let pool = SharedPool {
            size: if p.pool_bytes > 0 {
                p.pool_bytes
            } else {
                (p.buffer_bytes - headroom_total) as u32
            },
            used: 0,
        };
        for b in &bufs.distinct {
            validate_buffer_profile(&b.pg_profile[TC_DATA as usize], &pool)
                .map_err(|e| anyhow::anyhow!("buffer profile of {}: {e:?}", spec.name))?;
        }
        let mut groups = Vec::with_capacity(spec.groups.len());
        for ports in &spec.groups {
            let mut g = Group::new(p.lb_mode, p.flowlet_timeout_ns);
            let mut members = [Member::default(); MAX_MEMBERS];
            for (i, &port) in ports.iter().enumerate() {
                members[i] = Member::new(port, 1);
            }
            g.members = members;
            g.n_members = ports.len() as u8;
            g.buckets = build_buckets(&members, g.n_members, None)
                .map_err(|e| anyhow::anyhow!("group of {}: {e}", spec.name))?;
            validate_group(&g).map_err(|e| anyhow::anyhow!("group of {}: {e}", spec.name))?;
            groups.push(g);
        }
        let keeps_rates = groups.iter().any(|g| uses_port_load(g.mode));
        let ways = if !groups.is_empty() && uses_flow_ways(p.lb_mode) {
            vec![FlowWays::EMPTY; FLOW_SETS as usize]
        } else {
            Vec::new()
        };
        let flowlets =
            if !groups.is_empty() && uses_flowlets(p.lb_mode) && !uses_flow_ways(p.lb_mode) {
                vec![
                    FlowletSlot {
                        tag: 0,
                        entry: dataplane_common::lb::Flowlet::NEW,
                    };
                    FLOWLET_SLOTS as usize
                ]
            } else {
                Vec::new()
            };
        let ports = spec
            .ports
            .iter()
            .map(|l| SwPort {
                link: *l,
                fifo: [VecDeque::new(), VecDeque::new()],
                pause: PauseStat::ZERO,
                busy: false,
                cur: 0,
                resume_at: 0,
                ser_frac: 0,
                rate: PortRate::new(l.speed_mbps),
                tx_bytes: 0,
                tx_ns: 0,
                uplink: false,
                has_data: false,
                peak_bytes: 0,
                tick_at: 0,
                pfc_free_at: 0,
                qtick_at: 0,
            })
            .collect();
        Ok(Switch {
            name: spec.name.clone(),
            tier: spec.tier,
            ports,
            bufs,
            model: Model::new(
                spec.ports.len(),
                spec.ports.len().next_power_of_two().max(8),
            ),
            pool,
            route: spec.route.clone(),
            groups,
            flowlets,
            ways,
            seed: seed ^ index.wrapping_mul(0x9e37_79b9),
            rng: XorShift32(seed | 1),
            c: SwCounters::default(),
            xoff_mask: 0,
            keeps_rates,
            up: UplinkBusy::default(),
        })
    }
}

impl Switch {
    /// A switch another process runs (an MPI rank's,
    /// [`crate::ranks`]): its name, ports and counters stay (rank 0's
    /// report reads them, gathered), its queues' model, routes and
    /// balancing tables go.
    pub fn shed(&mut self) {
        self.model = Model::new(0, 8);
        self.route = Vec::new();
        self.flowlets = Vec::new();
        self.ways = Vec::new();
    }
}

/// The 5-tuple and QP a packet of `flow` from host `src` to host `dst`
/// carries (RoCEv2: UDP to 4791, BTH destination QP).
#[inline]
pub fn flow_key(src: u32, dst: u32, sport: u16, qp: u32) -> FlowKey {
    let ip = |h: u32| [10, (h >> 16) as u8, (h >> 8) as u8, h as u8];
    FlowKey::ipv4(ip(src), ip(dst), 17, sport, 4791, qp & 0x00ff_ffff)
}

#[cfg(test)]
mod tests {
    use super::UplinkBusy;

    /// A partitioned drained run reports at its last completion, which
    /// can be before a busy period its partitions went on to begin (the
    /// 128-GPU all-to-all with bandwidth balancing in 24 partitions
    /// overflowed here): that period counts nothing.
    #[test]
    fn a_busy_period_begun_after_the_report_time_counts_nothing() {
        let mut up = UplinkBusy::default();
        up.set(100, true);
        up.set(250, false);
        up.set(900, true);
        assert_eq!(up.busy_ns(1000), 150 + 100);
        assert_eq!(up.busy_ns(800), 150);
    }
}
