//! What a run measured: counters during the run, and the report (FCT
//! slowdown per size bucket, JCT, link utilisation, PFC, ECN, drops) with
//! stable names.

use serde::Serialize;

use crate::engine::Sim;
use crate::event::HDR;
use crate::host::state::NONE;

pub mod ends;
pub mod lb;
pub mod stats;
pub mod trace;

/// What the report reads of every flow: the halves of a process that
/// holds them all (one process's run), or the record rank 0 of an MPI
/// job gathered.
#[derive(Clone, Copy)]
pub enum Ends<'a> {
    Halves(&'a Sim),
    Record(&'a ends::FlowEnds),
}

impl Ends<'_> {
    pub fn len(&self) -> usize {
        match self {
            Ends::Halves(s) => s.n_flows(),
            Ends::Record(e) => e.flows.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Flow `f`'s figures.
    #[inline]
    pub fn get(&self, f: usize) -> ends::FlowEnd {
        match self {
            Ends::Halves(s) => {
                let (fl, r) = (&s.flows[f], &s.rx[f]);
                ends::FlowEnd {
                    size: fl.size,
                    start_ns: fl.start_ns,
                    finish_ns: r.finish_ns,
                    job: fl.job,
                    step: fl.step,
                }
            }
            Ends::Record(e) => e.flows[f],
        }
    }

    /// Calls `g` with each flow waiting for flow `f`.
    pub fn each_child(&self, f: u32, mut g: impl FnMut(u32)) {
        match self {
            Ends::Halves(s) => s.rx[f as usize].children.iter().for_each(|&c| g(c)),
            Ends::Record(e) => e.each_child(f, g),
        }
    }
}

impl Sim {
    /// The record of every flow's figures from the halves this process
    /// holds (rank 0 adds the other ranks' as they come).
    pub fn flow_record(&self) -> ends::FlowEnds {
        let mut e = ends::FlowEnds::new(self.n_flows());
        for f in 0..self.n_flows() {
            if let Some(fl) = self.flows.get(f) {
                e.tx(f, fl.size, fl.start_ns, fl.job, fl.step);
            }
            if let Some(r) = self.rx.get(f) {
                e.rx(f, r.finish_ns, &r.children);
            }
        }
        e
    }
}

pub use stats::Stats;

#[derive(Clone, Debug, Serialize, Default)]
pub struct Dist {
    pub count: usize,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

impl Dist {
    pub fn of(mut v: Vec<f64>) -> Dist {
        if v.is_empty() {
            return Dist::default();
        }
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let q = |p: f64| v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1];
        Dist {
            count: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: q(0.50),
            p99: q(0.99),
            p999: q(0.999),
            max: *v.last().unwrap(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Bucket {
    /// Flow sizes `lo_bytes <= size < hi_bytes`.
    pub lo_bytes: u64,
    pub hi_bytes: u64,
    pub slowdown: Dist,
}

#[derive(Clone, Debug, Serialize)]
pub struct LinkUtil {
    pub from: String,
    pub to: String,
    pub util: f64,
}

#[derive(Clone, Debug, Serialize, Default)]
pub struct UtilSummary {
    pub count: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
}

impl UtilSummary {
    /// Count, mean, least and most of `v` (all zero when empty).
    pub fn of(v: &[f64]) -> UtilSummary {
        if v.is_empty() {
            return UtilSummary::default();
        }
        UtilSummary {
            count: v.len(),
            mean: v.iter().sum::<f64>() / v.len() as f64,
            min: v.iter().cloned().fold(f64::MAX, f64::min),
            max: v.iter().cloned().fold(0.0, f64::max),
        }
    }
}

/// One run's report.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub lb: String,
    pub sim_time_ns: u64,
    pub wall_s: f64,
    pub events: u64,
    pub events_per_s: f64,
    pub flows_total: usize,
    pub flows_started: u64,
    pub flows_completed: u64,
    pub fct_slowdown: Dist,
    pub fct_slowdown_buckets: Vec<Bucket>,
    /// Collective: completion time of the whole job (ns), 0 if unfinished.
    pub jct_ns: u64,
    /// Collective: the job's ideal completion time ([`Sim::ideal_jct_ns`]).
    pub ideal_jct_ns: u64,
    /// `jct_ns / ideal_jct_ns` (0 without both).
    pub jct_vs_ideal: f64,
    /// Uplink utilisation per switch over the time any of its uplinks had
    /// data to send.
    pub uplink_busy_util: UtilSummary,
    /// Collectives: flows per uplink per step.
    pub step_flows: lb::StepFlows,
    /// Flows moved to another member while they had one.
    pub lb_moves: u64,
    /// Place mode: flows that lost their table entry to another active
    /// flow.
    pub lb_evictions: u64,
    /// The receivers: `rc` (go-back-N) or `ooo` (out-of-order placement).
    pub receiver: String,
    pub uplink_util: UtilSummary,
    pub host_link_util: UtilSummary,
    pub uplinks: Vec<LinkUtil>,
    pub pfc_xoff: u64,
    pub pfc_refresh: u64,
    pub pfc_xon: u64,
    /// PFC frames sent (XOFF + refresh + XON).
    pub pfc_frames: u64,
    /// Time queues (switch ports and host NICs) spent paused, summed (ns).
    pub pfc_paused_ns: u64,
    pub ecn_marked: u64,
    pub cnp_sent: u64,
    pub drops: u64,
    pub drops_lossless: u64,
    pub drops_wred: u64,
    pub drops_shared_full: u64,
    pub drops_headroom: u64,
    pub drops_ctrl: u64,
    pub dropped_payload: u64,
    pub sent_payload: u64,
    pub recv_payload: u64,
    pub retx_payload: u64,
    pub naks: u64,
    pub timeouts: u64,
    /// Payload bytes still in the network at the end.
    pub in_flight_payload: u64,
    pub max_queue_bytes: u32,
    pub queue_samples: Vec<(u64, u32, u64)>,
    /// Each uplink's utilisation per queue-sample interval (uplinks named
    /// in `uplinks`' order): the load-over-time plot.
    #[serde(skip)]
    pub uplink_series: Vec<(u64, Vec<f64>)>,
    #[serde(skip)]
    pub lb_trace: String,
}

impl Report {
    /// The balancer's trace as CSV (`trace_lb`; empty without).
    pub fn lb_trace_csv(&self) -> &str {
        &self.lb_trace
    }
}

/// Size buckets of the FCT report (bytes).
pub const BUCKETS: [u64; 6] = [0, 10_000, 100_000, 1_000_000, 10_000_000, u64::MAX];

impl Sim {
    /// Records the queue sample of now.
    pub fn sample(&mut self) {
        self.sample_at(self.now);
    }

    /// Records the queue sample of time `t` (a partitioned run's, between
    /// windows: every switch's queues).
    pub fn sample_at(&mut self, t: u64) {
        let mut max = 0u32;
        let mut sum = 0u64;
        for sw in &self.switches {
            // (another process's switches: none here)
            for i in 0..sw.model.ports() {
                let b = sw.model.bytes(i, 1);
                max = max.max(b);
                sum += u64::from(b);
            }
        }
        self.stats.samples.push((t, max, sum));
        // the uplinks of the switches this process runs (every one, but
        // on an MPI rank: rank 0 puts the ranks' together,
        // `crate::wire::merge_samples`)
        let tx = self
            .switches
            .iter()
            .filter(|sw| sw.model.ports() > 0)
            .flat_map(|sw| sw.ports.iter().filter(|p| p.uplink).map(|p| p.tx_bytes))
            .collect();
        self.stats.uplink_samples.push((t, tx));
    }

    /// Each uplink's utilisation between consecutive samples.
    fn uplink_series(&self) -> Vec<(u64, Vec<f64>)> {
        let ups = &self.stats.uplink_samples;
        let sorted;
        let v = if ups.is_sorted_by_key(|s| s.0) {
            ups
        } else {
            let mut c = ups.clone();
            c.sort_by_key(|s| s.0);
            sorted = c;
            &sorted
        };
        let speeds: Vec<f64> = self
            .switches
            .iter()
            .flat_map(|sw| sw.ports.iter().filter(|p| p.uplink))
            .map(|p| f64::from(p.link.speed_mbps) * 1e6)
            .collect();
        v.windows(2)
            .filter(|w| w[1].0 > w[0].0)
            .map(|w| {
                let dt = (w[1].0 - w[0].0) as f64 / 1e9;
                let u = w[1]
                    .1
                    .iter()
                    .zip(&w[0].1)
                    .zip(&speeds)
                    .map(|((b, a), bps)| (b - a) as f64 * 8.0 / (bps * dt))
                    .collect();
                (w[0].0, u)
            })
            .collect()
    }

    /// Unloaded completion time of a flow of `size` bytes from `src` to
    /// `dst`: the first frame's store-and-forward over the path plus the
    /// rest at line rate.
    pub fn ideal_fct_ns(&self, size: u64, hops: u32) -> f64 {
        let mtu = u64::from(self.p.mtu);
        let frames = size.div_ceil(mtu).max(1);
        let wire = size + frames * u64::from(HDR);
        let bps = f64::from(self.p.host_speed_mbps) * 1e6;
        let first = (size.min(mtu) + u64::from(HDR)) as f64 * 8.0 / bps * 1e9;
        let rest = (wire as f64 * 8.0 / bps * 1e9) - first;
        f64::from(hops) * (first + self.p.link_delay_ns as f64) + rest
    }

    /// Links between two hosts (2 under one leaf, 4 over a spine, ...).
    pub fn hops(&self, src: u32, dst: u32) -> u32 {
        // walk the routes: any member of a group has the same length
        let hosts = self.topo.hosts;
        let mut node = self.topo.host_links[src as usize].peer;
        let mut n = 1;
        while node >= hosts {
            let sw = &self.topo.switches[(node - hosts) as usize];
            let r = sw.route[dst as usize];
            let port = if r & crate::topo::GROUP_BIT == 0 {
                r
            } else {
                sw.groups[(r & !crate::topo::GROUP_BIT) as usize][0]
            };
            node = sw.ports[port as usize].peer;
            n += 1;
            if n > 16 {
                break;
            }
        }
        n
    }

    /// State of every queue, PG, host and unfinished flow (debugging).
    pub fn dump(&self) {
        for sw in &self.switches {
            // (another process's switches: no queues here)
            for (i, pt) in sw.ports.iter().enumerate().take(sw.model.ports()) {
                let (pg, pf) = sw.model.pg(i);
                eprintln!(
                    "{} port {i} -> {}: fifo {}/{} q {} paused_until {} busy {} | pg {:?} xoff {}",
                    sw.name,
                    pt.link.peer,
                    pt.fifo[0].len(),
                    pt.fifo[1].len(),
                    sw.model.bytes(i, 1),
                    sw.model.paused_until(i),
                    pt.busy,
                    pg,
                    pf.xoff
                );
            }
            eprintln!("{} pool {:?}", sw.name, sw.pool);
        }
        for (i, h) in self.hosts.iter().enumerate() {
            eprintln!(
                "h{i} paused_until {} busy {} active {:?} ctrl {}",
                h.paused_until,
                h.busy,
                h.active,
                h.ctrl.len()
            );
        }
        for i in 0..self.n_flows() {
            let (Some(f), Some(r)) = (self.flows.get(i), self.rx.get(i)) else {
                continue;
            };
            if r.finish_ns == 0 {
                eprintln!(
                    "flow {i} {}->{} snd_nxt {} una_psn {} rcv_psn {} size {} rate {} acked {}",
                    f.src, f.dst, f.snd_nxt, f.snd_una_psn, r.rcv_psn, f.size, f.rp.rc_bps, f.acked
                );
            }
        }
    }

    /// The run's report (its flows' figures from the record rank 0 of an
    /// MPI job gathered, else from the flows this process holds: all of
    /// them).
    pub fn report(&self, wall_s: f64) -> Report {
        let ends = match &self.ends {
            Some(e) => Ends::Record(e),
            None => Ends::Halves(self),
        };
        self.report_of(wall_s, ends)
    }

    fn report_of(&self, wall_s: f64, ends: Ends) -> Report {
        let t = self.now.max(1) as f64;
        let mut all = Vec::new();
        let mut buckets: Vec<Vec<f64>> = vec![Vec::new(); BUCKETS.len() - 1];
        let (mut job_start, mut job_end, mut job_flows, mut job_done) = (u64::MAX, 0u64, 0, 0);
        for (i, a) in self.addrs.iter().enumerate() {
            let f = ends.get(i);
            if f.job != NONE {
                job_flows += 1;
                job_start = job_start.min(f.start_ns);
            }
            if f.finish_ns == 0 {
                continue;
            }
            if f.job != NONE {
                job_done += 1;
                job_end = job_end.max(f.finish_ns);
            }
            let fct = (f.finish_ns - f.start_ns) as f64;
            let s = (fct / self.ideal_fct_ns(f.size, self.hops(a.src, a.dst))).max(1.0);
            all.push(s);
            let b = BUCKETS
                .windows(2)
                .position(|w| f.size >= w[0] && f.size < w[1]);
            if let Some(b) = b {
                buckets[b].push(s);
            }
        }
        let jct_ns = if job_flows > 0 && job_done == job_flows {
            job_end - job_start.min(job_end)
        } else {
            0
        };
        let util = UtilSummary::of;
        let hosts = self.topo.hosts;
        let name = |n: u32| {
            if n < hosts {
                format!("h{n}")
            } else {
                self.switches[(n - hosts) as usize].name.clone()
            }
        };
        let mut uplinks = Vec::new();
        let (mut xoff, mut refresh, mut xon, mut ecn) = (0, 0, 0, 0);
        let (mut wred, mut shared, mut headroom, mut lossless) = (0, 0, 0, 0);
        let mut paused = 0u64;
        let mut max_q = 0u32;
        for sw in &self.switches {
            xoff += sw.c.pfc_xoff;
            refresh += sw.c.pfc_refresh;
            xon += sw.c.pfc_xon;
            ecn += sw.c.ecn_marked;
            wred += sw.c.wred_drop;
            shared += sw.c.drop_shared_full;
            headroom += sw.c.drop_headroom;
            lossless += sw.c.lossless_drop;
            for pt in &sw.ports {
                paused += pt.pause.total_at(self.now);
                max_q = max_q.max(pt.peak_bytes);
                if pt.uplink {
                    let bps = f64::from(pt.link.speed_mbps) * 1e6;
                    uplinks.push(LinkUtil {
                        from: sw.name.clone(),
                        to: name(pt.link.peer),
                        util: pt.tx_bytes as f64 * 8.0 / (bps * t / 1e9),
                    });
                }
            }
        }
        let mut host_util = Vec::new();
        for h in &self.hosts {
            paused += h.pause.total_at(self.now);
            let bps = f64::from(h.link.speed_mbps) * 1e6;
            host_util.push(h.tx_bytes as f64 * 8.0 / (bps * t / 1e9));
        }
        let up: Vec<f64> = uplinks.iter().map(|l| l.util).collect();
        let in_flight: u64 = std::iter::once(self)
            .chain(self.others.iter())
            .map(|part| {
                let live = part.live_mask();
                part.pkts
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| live[*i])
                    .filter(|(_, p)| p.kind == crate::event::KIND_DATA)
                    .map(|(_, p)| u64::from(p.len - HDR))
                    .sum::<u64>()
            })
            .sum();
        let ideal_jct_ns = self.ideal_jct_ns(ends);
        let lb_trace = if self.p.trace_lb {
            trace::trace_csv(&self.stats.lb_trace, name)
        } else {
            String::new()
        };
        Report {
            lb: self.p.lb_name.clone(),
            sim_time_ns: self.now,
            wall_s,
            events: self.events,
            events_per_s: self.events as f64 / wall_s.max(1e-9),
            flows_total: ends.len(),
            flows_started: self.stats.flows_started,
            flows_completed: self.stats.flows_done,
            fct_slowdown: Dist::of(all),
            fct_slowdown_buckets: buckets
                .into_iter()
                .enumerate()
                .map(|(i, v)| Bucket {
                    lo_bytes: BUCKETS[i],
                    hi_bytes: BUCKETS[i + 1],
                    slowdown: Dist::of(v),
                })
                .collect(),
            jct_ns,
            ideal_jct_ns,
            jct_vs_ideal: if jct_ns > 0 && ideal_jct_ns > 0 {
                jct_ns as f64 / ideal_jct_ns as f64
            } else {
                0.0
            },
            uplink_busy_util: self.busy_util(),
            step_flows: self.step_flows(ends, &self.stats.first_hops),
            lb_moves: self.stats.lb_moves,
            lb_evictions: self.stats.lb_evictions,
            receiver: if self.p.ooo_receiver { "ooo" } else { "rc" }.into(),
            uplink_util: util(&up),
            host_link_util: util(&host_util),
            uplinks,
            pfc_xoff: xoff,
            pfc_refresh: refresh,
            pfc_xon: xon,
            pfc_frames: xoff + refresh + xon,
            pfc_paused_ns: paused,
            ecn_marked: ecn,
            cnp_sent: self.stats.cnp_sent,
            drops: wred + shared + headroom,
            drops_lossless: lossless,
            drops_wred: wred,
            drops_shared_full: shared,
            drops_headroom: headroom,
            drops_ctrl: self.stats.dropped_ctrl,
            dropped_payload: self.stats.dropped_payload,
            sent_payload: self.stats.sent_payload,
            recv_payload: self.stats.recv_payload,
            retx_payload: self.stats.retx_payload,
            naks: self.stats.naks,
            timeouts: self.stats.timeouts,
            in_flight_payload: in_flight,
            max_queue_bytes: max_q,
            queue_samples: self.stats.samples.clone(),
            uplink_series: self.uplink_series(),
            lb_trace,
        }
    }
}
