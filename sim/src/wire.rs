//! What the processes of a run ([`crate::ranks`]) send each other, as
//! words (`u64`): the messages one partition posts to another, and at the
//! end what rank 0 needs of every other rank to make the report: each
//! partition's counters, events and packets in flight, and the report's
//! figures of the nodes and flows it owns. Plain words, so the same code
//! is tested without MPI (`tests` below) and the transport moves `u64`s.
//!
//! A decoder meets only what its own binary encoded: a malformed stream
//! is a bug, and panics naming what it expected.

use dataplane_common::buffer::PauseStat;
use dataplane_common::lb::MAX_MEMBERS;

use crate::engine::Sim;
use crate::event::{Crossing, Msg, Pkt, KIND_DATA};
use crate::host::state::{Flow, FlowRx};
use crate::report::ends::FlowEnds;
use crate::report::stats::Stats;
use crate::report::trace::{LbEvent, TraceKind};
use crate::switch::state::{SwCounters, UplinkBusy};

/// Words to read, in order.
pub struct Reader<'a> {
    w: &'a [u64],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(w: &'a [u64]) -> Self {
        Reader { w, at: 0 }
    }

    pub fn next(&mut self, what: &str) -> u64 {
        let v = *self.w.get(self.at).unwrap_or_else(|| {
            panic!(
                "wire: ended at word {} of {}, expecting {what}",
                self.at,
                self.w.len()
            )
        });
        self.at += 1;
        v
    }

    pub fn done(&self) -> bool {
        self.at == self.w.len()
    }
}

/// Appends `m`: 5 words for a frame, 3 for a PFC frame or a notice.
pub fn put_msg(out: &mut Vec<u64>, m: &Msg) {
    out.push(m.t);
    match m.what {
        Crossing::Frame { node, port, pkt } => {
            out.push(u64::from(port) << 8 | u64::from(node) << 32);
            out.push(u64::from(pkt.flow) | u64::from(pkt.psn) << 32);
            out.push(u64::from(pkt.len) | u64::from(pkt.dst) << 32);
            out.push(u64::from(pkt.kind) | u64::from(pkt.ecn) << 8 | u64::from(pkt.tc) << 16);
        }
        Crossing::Pfc { node, port, quanta } => {
            out.push(1 | u64::from(port) << 8 | u64::from(node) << 32);
            out.push(u64::from(quanta));
        }
        Crossing::DepDone { flow } => {
            out.push(2);
            out.push(u64::from(flow));
        }
    }
}

pub fn get_msg(r: &mut Reader) -> Msg {
    let t = r.next("a message's time");
    let h = r.next("a message's kind");
    let (node, port) = ((h >> 32) as u32, (h >> 8) as u16);
    let what = match h & 0xff {
        0 => {
            let a = r.next("a frame's flow and PSN");
            let b = r.next("a frame's length and destination");
            let c = r.next("a frame's kind, ECN and class");
            Crossing::Frame {
                node,
                port,
                pkt: Pkt {
                    flow: a as u32,
                    psn: (a >> 32) as u32,
                    len: b as u32,
                    dst: (b >> 32) as u32,
                    kind: c as u8,
                    ecn: (c >> 8) as u8,
                    tc: (c >> 16) as u8,
                },
            }
        }
        1 => Crossing::Pfc {
            node,
            port,
            quanta: r.next("a PFC frame's quanta") as u16,
        },
        2 => Crossing::DepDone {
            flow: r.next("a notice's flow") as u32,
        },
        k => panic!("wire: message kind {k}"),
    };
    Msg { t, what }
}

fn put_pause(out: &mut Vec<u64>, p: &PauseStat) {
    out.extend([p.start_ns, p.until_ns, p.total_ns, p.frames]);
}

fn get_pause(r: &mut Reader) -> PauseStat {
    PauseStat {
        start_ns: r.next("a pause's start"),
        until_ns: r.next("a pause's end"),
        total_ns: r.next("a pause's total"),
        frames: r.next("a pause's frames"),
    }
}

const KINDS: [TraceKind; 4] = [
    TraceKind::First,
    TraceKind::Gap,
    TraceKind::MemberDown,
    TraceKind::Nak,
];

/// Appends a partition's counters (every field: a new one fails to
/// compile here until it is sent).
pub fn put_stats(out: &mut Vec<u64>, s: &Stats) {
    let Stats {
        flows_started,
        flows_done,
        sent_payload,
        recv_payload,
        dropped_payload,
        dropped_pkts,
        dropped_ctrl,
        ooo_payload,
        dup_payload,
        retx_payload,
        naks,
        timeouts,
        ctrl_sent,
        cnp_sent,
        cnp_rx,
        pfc_rx,
        samples,
        uplink_samples,
        first_hops,
        lb_moves,
        lb_evictions,
        lb_trace,
    } = s;
    out.extend([
        *flows_started,
        *flows_done,
        *sent_payload,
        *recv_payload,
        *dropped_payload,
        *dropped_pkts,
        *dropped_ctrl,
        *ooo_payload,
        *dup_payload,
        *retx_payload,
        *naks,
        *timeouts,
        *ctrl_sent,
        *cnp_sent,
        *cnp_rx,
        *pfc_rx,
        *lb_moves,
        *lb_evictions,
    ]);
    out.push(samples.len() as u64);
    for &(t, max, sum) in samples {
        out.extend([t, u64::from(max), sum]);
    }
    out.push(uplink_samples.len() as u64);
    for (t, v) in uplink_samples {
        out.extend([*t, v.len() as u64]);
        out.extend_from_slice(v);
    }
    out.push(first_hops.len() as u64);
    for &(f, sw, port) in first_hops {
        out.extend([u64::from(f) | u64::from(sw) << 32, u64::from(port)]);
    }
    out.push(lb_trace.len() as u64);
    for e in lb_trace {
        let kind = KINDS.iter().position(|&k| k == e.what).expect("a kind") as u64;
        out.extend([
            e.t,
            u64::from(e.switch) | u64::from(e.flow) << 32,
            kind | u64::from(e.from) << 8 | u64::from(e.to) << 16 | u64::from(e.members) << 24,
        ]);
        for c in e.util.chunks(4) {
            out.push(
                c.iter()
                    .enumerate()
                    .map(|(i, &u)| u64::from(u) << (16 * i))
                    .sum(),
            );
        }
    }
}

pub fn get_stats(r: &mut Reader) -> Stats {
    let mut s = Stats::default();
    for f in [
        &mut s.flows_started,
        &mut s.flows_done,
        &mut s.sent_payload,
        &mut s.recv_payload,
        &mut s.dropped_payload,
        &mut s.dropped_pkts,
        &mut s.dropped_ctrl,
        &mut s.ooo_payload,
        &mut s.dup_payload,
        &mut s.retx_payload,
        &mut s.naks,
        &mut s.timeouts,
        &mut s.ctrl_sent,
        &mut s.cnp_sent,
        &mut s.cnp_rx,
        &mut s.pfc_rx,
        &mut s.lb_moves,
        &mut s.lb_evictions,
    ] {
        *f = r.next("a counter");
    }
    for _ in 0..r.next("samples") {
        let t = r.next("a sample's time");
        let max = r.next("a sample's largest queue") as u32;
        s.samples.push((t, max, r.next("a sample's sum")));
    }
    for _ in 0..r.next("uplink samples") {
        let t = r.next("an uplink sample's time");
        let n = r.next("an uplink sample's length");
        s.uplink_samples
            .push((t, (0..n).map(|_| r.next("an uplink's bytes")).collect()));
    }
    for _ in 0..r.next("first hops") {
        let a = r.next("a first hop");
        let port = r.next("a first hop's port") as u16;
        s.first_hops.push((a as u32, (a >> 32) as u32, port));
    }
    for _ in 0..r.next("trace lines") {
        let t = r.next("a trace line's time");
        let a = r.next("a trace line's switch and flow");
        let b = r.next("a trace line's kind and slots");
        let mut util = [0u16; MAX_MEMBERS];
        for c in util.chunks_mut(4) {
            let w = r.next("a trace line's utilisations");
            for (i, u) in c.iter_mut().enumerate() {
                *u = (w >> (16 * i)) as u16;
            }
        }
        s.lb_trace.push(LbEvent {
            t,
            switch: a as u32,
            flow: (a >> 32) as u32,
            what: KINDS[(b & 0xff) as usize],
            from: (b >> 8) as u8,
            to: (b >> 16) as u8,
            members: (b >> 24) as u8,
            util,
        });
    }
    s
}

/// Appends what the report reads of partition `part` (in this rank's
/// copy of the run): its counters, events and the payload of its data
/// packets in flight, then the figures of the switches, hosts and flows
/// it owns, in index order.
pub fn put_partition(out: &mut Vec<u64>, part: &Sim) {
    let sim = part;
    let p = part.part;
    out.push(u64::from(p));
    put_stats(out, &part.stats);
    out.push(part.events);
    let live = part.live_mask();
    let lens: Vec<u64> = part
        .pkts
        .iter()
        .zip(live)
        .filter(|(pk, l)| *l && pk.kind == KIND_DATA)
        .map(|(pk, _)| u64::from(pk.len))
        .collect();
    out.push(lens.len() as u64);
    out.extend(lens);
    let hosts = sim.first_switch as usize;
    for (i, sw) in sim.switches.iter().enumerate() {
        if sim.owner[hosts + i] != p {
            continue;
        }
        let SwCounters {
            ecn_marked,
            wred_drop,
            drop_shared_full,
            drop_headroom,
            lossless_drop,
            dropped_payload,
            pfc_xoff,
            pfc_refresh,
            pfc_xon,
            no_route,
        } = sw.c;
        out.extend([
            ecn_marked,
            wred_drop,
            drop_shared_full,
            drop_headroom,
            lossless_drop,
            dropped_payload,
            pfc_xoff,
            pfc_refresh,
            pfc_xon,
            no_route,
        ]);
        out.extend([u64::from(sw.up.active), sw.up.since, sw.up.busy]);
        for pt in &sw.ports {
            out.extend([pt.tx_bytes, pt.tx_ns, u64::from(pt.peak_bytes)]);
            put_pause(out, &pt.pause);
        }
    }
    for (h, host) in sim.hosts.iter().enumerate() {
        if sim.owner[h] == p {
            put_pause(out, &host.pause);
            out.push(host.tx_bytes);
        }
    }
    for f in 0..sim.n_flows() {
        if sim.owner[sim.addrs[f].src as usize] == p {
            put_tx(out, &sim.flows[f]);
        }
        if sim.owner[sim.rx_node(f) as usize] == p {
            put_rx(out, &sim.rx[f]);
        }
    }
}

/// Reads what [`put_partition`] wrote into rank 0's copy of the run:
/// the partition's counters, events and packets (payload only: what the
/// report counts in flight) into its [`Sim`] (`lead` or one of its
/// `others`), the nodes' figures into the shared arrays, the flows' into
/// `ends`.
pub fn get_partition(r: &mut Reader, lead: &mut Sim, ends: &mut FlowEnds) {
    let p = r.next("a partition") as u32;
    assert!(
        p > 0 && (p as usize) <= lead.others.len(),
        "wire: partition {p} of {}",
        lead.others.len() + 1
    );
    let stats = get_stats(r);
    let events = r.next("a partition's events");
    {
        let part = &mut lead.others[p as usize - 1];
        part.stats = stats;
        part.events = events;
        for _ in 0..r.next("packets in flight") {
            let len = r.next("a packet's length") as u32;
            part.alloc(Pkt {
                len,
                kind: KIND_DATA,
                ..Pkt::default()
            });
        }
    }
    let hosts = lead.first_switch as usize;
    let owner = lead.owner.clone();
    for i in 0..lead.switches.len() {
        if owner[hosts + i] != p {
            continue;
        }
        let sw = &mut lead.switches[i];
        let mut c = || r.next("a switch counter");
        sw.c = SwCounters {
            ecn_marked: c(),
            wred_drop: c(),
            drop_shared_full: c(),
            drop_headroom: c(),
            lossless_drop: c(),
            dropped_payload: c(),
            pfc_xoff: c(),
            pfc_refresh: c(),
            pfc_xon: c(),
            no_route: c(),
        };
        sw.up = UplinkBusy {
            active: r.next("uplinks active") as u32,
            since: r.next("uplinks busy since"),
            busy: r.next("uplinks busy"),
        };
        for pt in sw.ports.iter_mut() {
            pt.tx_bytes = r.next("a port's bytes");
            pt.tx_ns = r.next("a port's time on the wire");
            pt.peak_bytes = r.next("a port's peak") as u32;
            pt.pause = get_pause(r);
        }
    }
    for h in 0..lead.hosts.len() {
        if owner[h] == p {
            let pause = get_pause(r);
            let host = &mut lead.hosts[h];
            host.pause = pause;
            host.tx_bytes = r.next("a host's bytes");
        }
    }
    for f in 0..lead.n_flows() {
        if owner[lead.addrs[f].src as usize] == p {
            get_tx(ends, f, r);
        }
        if owner[lead.rx_node(f) as usize] == p {
            get_rx(ends, f, r);
        }
    }
}

/// Folds the queue samples another process took of its own switches
/// (into the first of its partitions, `others[..]`) into the lead's:
/// the largest queue and the sums over every switch (others' idle in
/// its copy); the bytes of its own switches' uplinks, which it alone
/// sampled, into their places among every switch's (switch by switch,
/// each switch's from the rank that runs it). Every process samples at
/// the same times.
pub fn merge_samples(lead: &mut Sim) {
    let ranks = lead.rank.1.max(1) as usize;
    let mut others = std::mem::take(&mut lead.others);
    // per rank, its uplink samples (rank 0's: the lead's)
    let mut ups = vec![std::mem::take(&mut lead.stats.uplink_samples)];
    for o in &mut others {
        let samples = std::mem::take(&mut o.stats.samples);
        let u = std::mem::take(&mut o.stats.uplink_samples);
        if samples.is_empty() && u.is_empty() {
            continue;
        }
        let s = &mut lead.stats;
        assert!(
            samples.len() == s.samples.len() && u.len() == ups[0].len(),
            "queue samples: partition {} took {} (uplinks {}), partition 0 {} ({})",
            o.part,
            samples.len(),
            u.len(),
            s.samples.len(),
            ups[0].len()
        );
        assert_eq!(
            o.part as usize,
            ups.len(),
            "a rank's first partition samples"
        );
        for (a, b) in s.samples.iter_mut().zip(samples) {
            assert_eq!(a.0, b.0, "queue samples at different times");
            a.1 = a.1.max(b.1);
            a.2 += b.2;
        }
        ups.push(u);
    }
    lead.others = others;
    assert!(
        ups.len() == 1 || ups.len() == ranks,
        "uplink samples of {} ranks of {ranks}",
        ups.len()
    );
    if ups.len() == 1 {
        lead.stats.uplink_samples = ups.pop().expect("rank 0's");
        return;
    }
    // which rank's samples hold each switch's uplinks
    let hosts = lead.first_switch as usize;
    let from: Vec<(usize, usize)> = lead
        .switches
        .iter()
        .enumerate()
        .map(|(i, sw)| {
            let q = lead.owner[hosts + i] as usize % ranks;
            (q, sw.ports.iter().filter(|p| p.uplink).count())
        })
        .collect();
    let n: usize = from.iter().map(|f| f.1).sum();
    let times = ups[0].len();
    let mut out = Vec::with_capacity(times);
    for k in 0..times {
        let t = ups[0][k].0;
        let mine: Vec<Vec<u64>> = ups
            .iter_mut()
            .map(|u| {
                assert_eq!(u[k].0, t, "uplink samples at different times");
                std::mem::take(&mut u[k].1)
            })
            .collect();
        let mut at = vec![0usize; ranks];
        let mut all = Vec::with_capacity(n);
        for &(q, count) in &from {
            all.extend_from_slice(&mine[q][at[q]..at[q] + count]);
            at[q] += count;
        }
        assert!(
            at.iter().zip(&mine).all(|(&a, m)| a == m.len()),
            "uplink samples: a rank sampled other uplinks than its switches'"
        );
        out.push((t, all));
    }
    lead.stats.uplink_samples = out;
}

/// Appends what the report reads of sender half `fl`.
fn put_tx(out: &mut Vec<u64>, fl: &Flow) {
    out.extend([
        fl.size,
        fl.start_ns,
        u64::from(fl.job) | u64::from(fl.step) << 32,
    ]);
}

/// Appends what the report reads of receiver half `r`.
fn put_rx(out: &mut Vec<u64>, r: &FlowRx) {
    out.extend([r.finish_ns, r.children.len() as u64]);
    out.extend(r.children.iter().map(|&c| u64::from(c)));
}

/// Flow `f`'s sender half's figures, as [`put_tx`] wrote them, into `e`.
fn get_tx(e: &mut FlowEnds, f: usize, r: &mut Reader) {
    let size = r.next("a flow's size");
    let start = r.next("a flow's start");
    let js = r.next("a flow's job and step");
    e.tx(f, size, start, js as u32, (js >> 32) as u32);
}

/// Flow `f`'s receiver half's figures, as [`put_rx`] wrote them, into `e`.
fn get_rx(e: &mut FlowEnds, f: usize, r: &mut Reader) {
    let finish = r.next("a flow's finish");
    let n = r.next("a flow's children");
    let children: Vec<u32> = (0..n).map(|_| r.next("a child") as u32).collect();
    e.rx(f, finish, &children);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_and_counters_come_back_as_they_went() {
        let msgs = [
            Msg {
                t: 123_456_789_012,
                what: Crossing::Frame {
                    node: (1 << 22) - 1,
                    port: 63,
                    pkt: Pkt {
                        flow: u32::MAX,
                        psn: 0xdead_beef,
                        len: 4158,
                        dst: 8191,
                        kind: 3,
                        ecn: 1,
                        tc: 6,
                    },
                },
            },
            Msg {
                t: 7,
                what: Crossing::Pfc {
                    node: 9,
                    port: 2,
                    quanta: 0xffff,
                },
            },
            Msg {
                t: 8,
                what: Crossing::DepDone { flow: 77 },
            },
        ];
        let mut w = Vec::new();
        for m in &msgs {
            put_msg(&mut w, m);
        }
        let mut r = Reader::new(&w);
        for m in &msgs {
            assert_eq!(format!("{m:?}"), format!("{:?}", get_msg(&mut r)));
        }
        assert!(r.done());

        let mut s = Stats {
            flows_started: 1,
            flows_done: 2,
            timeouts: 3,
            lb_evictions: 4,
            samples: vec![(10, 20, 30), (11, 0, u64::MAX)],
            uplink_samples: vec![(10, vec![1, 2, 3]), (11, vec![])],
            first_hops: vec![(5, 6, 7)],
            ..Stats::default()
        };
        let mut util = [0u16; MAX_MEMBERS];
        for (i, u) in util.iter_mut().enumerate() {
            *u = 1000 - i as u16;
        }
        s.lb_trace.push(LbEvent {
            t: 99,
            switch: 3,
            flow: 4,
            what: TraceKind::MemberDown,
            from: 255,
            to: 1,
            members: 8,
            util,
        });
        s.lb_trace.push(LbEvent::nak(100, 2, 5, 0x1234_5678));
        let mut w = Vec::new();
        put_stats(&mut w, &s);
        let mut r = Reader::new(&w);
        let back = get_stats(&mut r);
        assert!(r.done());
        assert_eq!(format!("{s:?}"), format!("{back:?}"));
    }

    #[test]
    #[should_panic(expected = "expecting a frame's flow and PSN")]
    fn a_short_stream_names_what_it_lacked() {
        let mut r = Reader::new(&[1, 0]);
        get_msg(&mut r);
    }
}
