//! A switch: dataplane-common's buffer model (`buffer` steps, as the eBPF
//! lossless stage calls them) and load balancing (`lb::select`, as the
//! eBPF balance stage calls it), per packet; real FIFOs per egress port and
//! class drain at line rate, control strictly first, RoCE paused by PFC.

use std::collections::VecDeque;

use anyhow::{bail, Result};
use dataplane_common::buffer::{Arrival, BufVerdict, PauseStat, PortBuffer, NUM_TC, STORM_NONE};
use dataplane_common::lb::{
    build_buckets, flow_hash, flowlet_entry, flowlet_index, flowlet_tag, select, uses_flowlets,
    validate_group, FlowKey, FlowletSlot, Group, Member, PortRate, FLOWLET_SLOTS, MAX_MEMBERS,
    NUM_BANDS,
};
use dataplane_common::lossless::{
    headroom, validate_buffer_profile, validate_wred, BufferProfile, DropReason, HeadroomInput,
    PfcAction, SharedPool, WredProfile, DEFAULT_XON_OFFSET, ECN_ALL, ECN_CE, ECN_NONE, TH_DYNAMIC,
};
use dataplane_common::rand::XorShift32;

use crate::config::Params;
use crate::engine::Sim;
use crate::event::{ser_ns, Ev, CTRL_LEN, HDR, KIND_DATA, TC_DATA};
use crate::model::{new_model, AnyModel, SwModel};
use crate::topo::{Link, SwitchSpec, GROUP_BIT, SLOTS};

#[inline]
fn l_speed(p: &SwPort) -> u32 {
    p.link.speed_mbps
}

/// Class index of a TC: 0 control, 1 RoCE.
#[inline]
fn class(tc: u8) -> usize {
    usize::from(tc == TC_DATA)
}

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

pub struct SwPort {
    pub link: Link,
    /// FIFOs of (packet id, frame bytes) per class (the length beside
    /// the id saves reading the packet's slab entry to start it).
    pub fifo: [VecDeque<(u32, u32)>; 2],
    /// Pause received for the RoCE class.
    pub pause: PauseStat,
    pub busy: bool,
    /// Class of the frame on the wire.
    pub cur: usize,
    pub resume_at: u64,
    pub ser_frac: u64,
    pub rate: PortRate,
    pub tx_bytes: u64,
    /// Goes to a switch of a higher tier.
    pub uplink: bool,
    /// Peak of the RoCE FIFO (bytes).
    pub peak_bytes: u32,
    /// When the next PG refresh tick is scheduled.
    pub tick_at: u64,
    /// PFC frames leave one after another: the next may start then.
    pub pfc_free_at: u64,
    /// When the next queue tick is scheduled.
    pub qtick_at: u64,
}

pub struct Switch {
    pub name: String,
    pub tier: u8,
    pub ports: Vec<SwPort>,
    pub bufs: Vec<PortBuffer>,
    /// The buffer model's queues (per port and class) and PG rows.
    pub model: AnyModel,
    pub pool: SharedPool,
    pub route: Vec<u16>,
    pub groups: Vec<Group>,
    pub flowlets: Vec<FlowletSlot>,
    pub seed: u32,
    pub rng: XorShift32,
    pub c: SwCounters,
    /// RoCE PGs in XOFF, one bit per ingress slot (none: nothing to check
    /// after a release).
    pub xoff_mask: u64,
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
        let mut bufs = Vec::with_capacity(spec.ports.len());
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
        for b in &bufs {
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
        let flowlets = if !groups.is_empty() && uses_flowlets(p.lb_mode) {
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
                uplink: false,
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
            model: new_model(
                spec.ports.len(),
                spec.ports.len().next_power_of_two().max(8),
            ),
            pool,
            route: spec.route.clone(),
            groups,
            flowlets,
            seed: seed ^ index.wrapping_mul(0x9e37_79b9),
            rng: XorShift32(seed | 1),
            c: SwCounters::default(),
            xoff_mask: 0,
        })
    }
}

/// The 5-tuple and QP a packet of `flow` from host `src` to host `dst`
/// carries (RoCEv2: UDP to 4791, BTH destination QP).
#[inline]
pub fn flow_key(src: u32, dst: u32, sport: u16, qp: u32) -> FlowKey {
    let ip = |h: u32| [10, (h >> 16) as u8, (h >> 8) as u8, h as u8];
    FlowKey::ipv4(ip(src), ip(dst), 17, sport, 4791, qp & 0x00ff_ffff)
}

impl Sim {
    /// A packet arrived on port `inp` of switch `s`.
    pub fn switch_arrive(&mut self, s: usize, inp: u16, pid: u32) {
        let now = self.now;
        let pkt = self.pkts[pid as usize];
        let sw = &mut self.switches[s];
        let r = sw.route[pkt.dst as usize];
        let out = if r & GROUP_BIT == 0 {
            r as usize
        } else {
            let gid = r & !GROUP_BIT;
            // the flow's 5-tuple, only for a choice (a cache miss saved
            // on single-path hops)
            let f = &self.addrs[pkt.flow as usize];
            let (src, dst) = if pkt.kind == KIND_DATA {
                (f.src, f.dst)
            } else {
                (f.dst, f.src)
            };
            let (sport, qp) = (f.sport, f.qp);
            let hash = flow_hash(&flow_key(src, dst, sport, qp), sw.seed);
            let Switch {
                groups,
                flowlets,
                ports,
                rng,
                ..
            } = sw;
            let g = &groups[gid as usize];
            let rand = rng.next_u32();
            let flowlet = if uses_flowlets(g.mode) {
                let i = flowlet_index(gid, hash) as usize;
                Some(flowlet_entry(&mut flowlets[i], flowlet_tag(gid, hash)))
            } else {
                None
            };
            let bands = || {
                let mut b = [NUM_BANDS - 1; MAX_MEMBERS];
                for (i, m) in g.members.iter().enumerate().take(g.n_members as usize) {
                    b[i] = ports[m.id as usize].rate.band(now);
                }
                b
            };
            match select(g, hash, flowlet, now, rand, bands) {
                Some(pick) => pick.id as usize,
                None => {
                    sw.c.no_route += 1;
                    self.drop_packet(s, pid);
                    return;
                }
            }
        };
        let cls = class(pkt.tc);
        let a = Arrival {
            ingress: inp as u8,
            tc: pkt.tc,
            lossless: cls == 1 && self.p.pfc,
            control: cls == 0,
            ecn: pkt.ecn,
            len: pkt.len,
        };
        let rand = sw.rng.next_u32();
        let (d, released) = sw.model.arrive(
            now,
            out,
            cls,
            &sw.bufs[out],
            &sw.bufs[inp as usize],
            &mut sw.pool,
            &a,
            rand,
        );
        if cls == 1 {
            self.after_release(s, released);
        }
        self.pfc_action(s, inp, d.pfc);
        let sw = &mut self.switches[s];
        match d.verdict {
            BufVerdict::Forward => {
                if d.mark_ce {
                    sw.c.ecn_marked += 1;
                    self.pkts[pid as usize].ecn = ECN_CE;
                }
                let qb = sw.model.bytes(out, 1);
                let paused = cls == 1 && sw.model.paused_until(out) > now;
                let port = &mut sw.ports[out];
                port.rate.update(now, pkt.len);
                if cls == 1 && qb > port.peak_bytes {
                    port.peak_bytes = qb;
                }
                // an idle port with nothing before this frame sends it at
                // once: what queueing it and starting the FIFO's head would
                // do, without writing and reading the FIFO
                let first = port.fifo[0].is_empty() && (cls == 0 || port.fifo[1].is_empty());
                if !port.busy && first && !paused {
                    self.switch_send(s, out as u16, cls, pid, pkt.len);
                } else {
                    port.fifo[cls].push_back((pid, pkt.len));
                    self.switch_start(s, out as u16);
                }
            }
            BufVerdict::WredDrop => {
                sw.c.wred_drop += 1;
                self.drop_packet(s, pid);
            }
            BufVerdict::NoBuffer(r) => {
                match r {
                    DropReason::SharedFull => sw.c.drop_shared_full += 1,
                    DropReason::HeadroomExhausted => sw.c.drop_headroom += 1,
                }
                if a.lossless {
                    sw.c.lossless_drop += 1;
                }
                self.drop_packet(s, pid);
            }
        }
    }

    fn drop_packet(&mut self, s: usize, pid: u32) {
        let pkt = self.pkts[pid as usize];
        if pkt.kind == KIND_DATA {
            let pl = u64::from(pkt.len - HDR);
            self.switches[s].c.dropped_payload += pl;
            self.stats.dropped_payload += pl;
            self.stats.dropped_pkts += 1;
        } else {
            self.stats.dropped_ctrl += 1;
        }
        self.release(pid);
    }

    /// PGs of the RoCE class that got bytes back and are paused: XON now if
    /// they emptied (the data plane's timer step, run at each release).
    fn after_release(&mut self, s: usize, released: u64) {
        let mut mask = self.switches[s].xoff_mask & released;
        while mask != 0 {
            let slot = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let sw = &mut self.switches[s];
            let a = sw.model.tick_pg(self.now, slot, &sw.bufs[slot], &sw.pool);
            self.pfc_action(s, slot as u16, a);
        }
    }

    /// Sends the PFC frame of `a` out of port `inp` (to the peer that
    /// feeds it), and keeps the PG's refresh timer.
    fn pfc_action(&mut self, s: usize, inp: u16, a: PfcAction) {
        let quanta = match a {
            PfcAction::None => return,
            PfcAction::SendXoff { quanta } => {
                self.switches[s].c.pfc_xoff += 1;
                self.switches[s].xoff_mask |= 1u64 << (inp as usize & (SLOTS - 1));
                quanta
            }
            PfcAction::SendRefresh { quanta } => {
                self.switches[s].c.pfc_refresh += 1;
                quanta
            }
            PfcAction::SendXon => {
                self.switches[s].c.pfc_xon += 1;
                self.switches[s].xoff_mask &= !(1u64 << (inp as usize & (SLOTS - 1)));
                0
            }
        };
        let node = self.topo.hosts + s as u32;
        let sw = &mut self.switches[s];
        let port = &mut sw.ports[inp as usize];
        let l = port.link;
        // frames of one port are serialised, so they arrive in the order
        // they were decided (an XON never overtakes the XOFF before it)
        let mut frac = 0;
        let start = self.now.max(port.pfc_free_at);
        port.pfc_free_at = start + ser_ns(CTRL_LEN, l.speed_mbps, &mut frac).max(1);
        let t = port.pfc_free_at + l.delay_ns;
        self.q.push(
            t,
            Ev::Pfc {
                node: l.peer,
                port: l.peer_port,
                quanta,
            },
        );
        if quanta != 0 {
            let due = sw.model.pg(inp as usize).1.refresh_due_ns;
            if port.tick_at != due {
                port.tick_at = due;
                self.q.push(due, Ev::PgTick { node, port: inp });
            }
        }
    }

    /// The refresh timer of the RoCE PG of `inp`.
    pub fn switch_pg_tick(&mut self, s: usize, inp: u16) {
        let sw = &mut self.switches[s];
        if sw.ports[inp as usize].tick_at != self.now || sw.model.pg(inp as usize).1.xoff == 0 {
            return;
        }
        let a = sw
            .model
            .tick_pg(self.now, inp as usize, &sw.bufs[inp as usize], &sw.pool);
        self.pfc_action(s, inp, a);
    }

    /// A PFC frame for the RoCE class arrived on `port`: the egress queue
    /// pauses (or resumes) per the model.
    pub fn switch_pfc(&mut self, s: usize, port: u16, quanta: u16) {
        let now = self.now;
        let sw = &mut self.switches[s];
        let released = sw.model.pfc_rx(
            now,
            port as usize,
            &sw.bufs[port as usize],
            &mut sw.pool,
            quanta,
            &mut sw.ports[port as usize].pause,
        );
        self.stats.pfc_rx += 1;
        self.after_release(s, released);
        self.switch_start(s, port);
    }

    /// Starts the next frame on `port` if it is idle: control first, then
    /// RoCE unless paused (then a retry when the pause ends).
    pub fn switch_start(&mut self, s: usize, port: u16) {
        let now = self.now;
        let node = self.topo.hosts + s as u32;
        let sw = &mut self.switches[s];
        let model = &sw.model;
        let pt = &mut sw.ports[port as usize];
        if pt.busy {
            return;
        }
        let cls = if !pt.fifo[0].is_empty() {
            0
        } else if !pt.fifo[1].is_empty() {
            let until = model.paused_until(port as usize);
            if until > now {
                if pt.resume_at != until {
                    pt.resume_at = until;
                    self.q.push(until, Ev::Resume { node, port });
                }
                return;
            }
            1
        } else {
            // Idle. The model may still hold bytes the FIFOs sent while it
            // was paused (a frame on the wire finishes; the model stops at
            // once): the data plane's timer drains them, here a tick when
            // the model would be empty.
            let mut due = 0u64;
            for c in 0..2 {
                let bytes = model.bytes(port as usize, c);
                if bytes > 0 {
                    let mut frac = 0;
                    // the control queue is never paused
                    let paused = if c == 1 {
                        model.paused_until(port as usize)
                    } else {
                        0
                    };
                    let from = paused.max(now);
                    due = due.max(from + ser_ns(bytes, l_speed(pt), &mut frac) + 1);
                }
            }
            if due > 0 && pt.qtick_at != due {
                pt.qtick_at = due;
                self.q.push(due, Ev::QueueTick { node, port });
            }
            return;
        };
        let (pid, len) = pt.fifo[cls].pop_front().expect("non-empty FIFO");
        self.switch_send(s, port, cls, pid, len);
    }

    /// Starts frame `pid` of `len` bytes and class `cls` on idle `port`:
    /// its end and its arrival at the peer.
    #[inline]
    fn switch_send(&mut self, s: usize, port: u16, cls: usize, pid: u32, len: u32) {
        let now = self.now;
        let node = self.topo.hosts + s as u32;
        let pt = &mut self.switches[s].ports[port as usize];
        debug_assert!(!pt.busy);
        let l = pt.link;
        let ser = ser_ns(len, l.speed_mbps, &mut pt.ser_frac);
        pt.busy = true;
        pt.cur = cls;
        pt.tx_bytes += u64::from(len);
        self.q.push(now + ser, Ev::TxDone { node, port });
        self.q.push(
            now + ser + l.delay_ns,
            Ev::Arrive {
                node: l.peer,
                port: l.peer_port,
                pkt: pid,
            },
        );
    }

    /// A frame left `port`: the model's queue drains to now (what left goes
    /// back to the ingress PGs), then the next frame.
    pub fn switch_tx_done(&mut self, s: usize, port: u16) {
        let now = self.now;
        let sw = &mut self.switches[s];
        let pt = &mut sw.ports[port as usize];
        pt.busy = false;
        let cls = pt.cur;
        let released = sw.model.drain(
            now,
            port as usize,
            cls,
            &sw.bufs[port as usize],
            &mut sw.pool,
        );
        if cls == 1 {
            self.after_release(s, released);
        }
        self.switch_start(s, port);
    }

    /// The model's timer step on `port`: drain both queues to now, give
    /// the bytes back to their PGs (XON where they emptied), then send.
    pub fn switch_queue_tick(&mut self, s: usize, port: u16) {
        let now = self.now;
        if self.switches[s].ports[port as usize].qtick_at != now {
            return;
        }
        for cls in 0..2 {
            let sw = &mut self.switches[s];
            let released = sw.model.drain(
                now,
                port as usize,
                cls,
                &sw.bufs[port as usize],
                &mut sw.pool,
            );
            if cls == 1 {
                self.after_release(s, released);
            }
        }
        self.switch_start(s, port);
    }

    /// Marks the ports that go up a tier (for uplink utilisation).
    pub fn mark_uplinks(&mut self) {
        let hosts = self.topo.hosts;
        let tiers: Vec<u8> = self.switches.iter().map(|s| s.tier).collect();
        for sw in &mut self.switches {
            for pt in &mut sw.ports {
                let peer = pt.link.peer;
                pt.uplink = peer >= hosts && tiers[(peer - hosts) as usize] > sw.tier;
            }
        }
    }
}
