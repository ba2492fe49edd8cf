//! A host's RDMA NIC at message level, with the testbed emulator's
//! semantics (testbed/src/host/rc.rs): reliable-connected QPs (one per
//! flow) sending a message as PSN-numbered packets, paced at line rate and
//! at the QP's DCQCN rate (`dcqcn` reaction point); the receiver accepts
//! only the expected PSN, ACKs every `ack_every` packets and at the
//! message's end, sends one NAK per gap and a CNP for CE-marked packets at
//! most once per QP per interval (`dcqcn::np_on_packet`); go-back-N on a
//! NAK or a retransmission timeout; PFC for the RoCE class stops data (not
//! ACKs, NAKs or CNPs) for the frame's pause time or until XON.

use dataplane_common::dcqcn::{
    np_on_packet, rp_on_cnp, rp_on_sent, rp_rate, rp_tick, DcqcnParams, RpState,
};
use dataplane_common::lossless::{ECN_CE, ECN_ECT0};
use dataplane_common::wire::macctl::quanta_to_nanos;

use crate::config::Cc;
use crate::engine::Sim;
use crate::event::{
    ser_ns, Ev, Pkt, CTRL_LEN, HDR, KIND_ACK, KIND_CNP, KIND_DATA, KIND_NAK, TC_CTRL, TC_DATA,
};
use crate::report::trace::LbEvent;

pub mod state;

pub use state::{Flow, FlowRx, Host, NONE};

impl Sim {
    /// DCQCN parameters of the hosts (all at the same line rate), as
    /// computed once when the simulation was built.
    #[inline]
    pub fn dcqcn(&self) -> DcqcnParams {
        self.dcqcn
    }

    /// DCQCN parameters of the hosts of `p`'s run.
    pub fn dcqcn_of(&self) -> DcqcnParams {
        let l = u64::from(self.p.host_speed_mbps) * 1_000_000;
        match self.p.cc {
            Cc::Mlx if self.p.dcqcn_scaled => DcqcnParams::mlx_scaled(l),
            Cc::Mlx => DcqcnParams::mlx(l),
            _ if self.p.dcqcn_scaled => DcqcnParams::scaled(l),
            _ => DcqcnParams::new(l),
        }
    }

    /// Flow `f` starts now.
    pub fn start_flow(&mut self, f: u32) {
        let params = self.dcqcn();
        let now = self.now;
        let fl = &mut self.flows[f as usize];
        fl.started = true;
        fl.start_ns = now;
        fl.rp = RpState::new(&params);
        fl.last_progress_ns = now;
        self.stats.flows_started += 1;
        if fl.size == 0 {
            // completes at its start: its receiver half is the sender's
            // (no packet reaches the receiver)
            self.rx[f as usize].finish_ns = now.max(1);
            self.flow_complete(f);
            return;
        }
        let h = fl.src;
        self.activate(f);
        self.host_send(h);
    }

    fn activate(&mut self, f: u32) {
        let slot = self.flows.slot(f as usize).expect("the sender's half here");
        let fl = self.flows.at_mut(slot);
        if !fl.in_active {
            fl.in_active = true;
            self.hosts[fl.src as usize].active.push((f, slot as u32));
        }
    }

    /// Sends the host's next frame if its link is idle.
    pub fn host_send(&mut self, h: u32) {
        let now = self.now;
        if self.hosts[h as usize].busy {
            return;
        }
        if let Some(pid) = self.hosts[h as usize].ctrl.pop_front() {
            self.host_transmit(h, pid);
            return;
        }
        if now < self.hosts[h as usize].paused_until {
            let until = self.hosts[h as usize].paused_until;
            self.wake(h, until);
            return;
        }
        let mtu = u64::from(self.p.mtu);
        let cc = self.p.cc != Cc::None;
        let params = &self.dcqcn;
        let n = self.hosts[h as usize].active.len();
        let mut earliest = u64::MAX;
        let mut i = 0;
        while i < self.hosts[h as usize].active.len() && n > 0 {
            let host = &mut self.hosts[h as usize];
            if host.rr >= host.active.len() {
                host.rr = 0;
            }
            let k = host.rr;
            let (f, slot) = host.active[k];
            let fl = self.flows.at_mut(slot as usize);
            if fl.snd_nxt >= fl.size {
                // all sent: leave the list until a rewind
                fl.in_active = false;
                host.active.swap_remove(k);
                continue;
            }
            let window = self.p.window;
            if window > 0 && (fl.snd_nxt / mtu) as u32 >= fl.snd_una_psn + window {
                // window full: an ACK reopens it
                host.rr = k + 1;
                i += 1;
                continue;
            }
            if !fl.pacer.ready(now) {
                earliest = earliest.min(fl.pacer.next_ns);
                host.rr = k + 1;
                i += 1;
                continue;
            }
            host.rr = k + 1;
            let payload = (fl.size - fl.snd_nxt).min(mtu);
            let psn = (fl.snd_nxt / mtu) as u32;
            let len = payload as u32 + HDR;
            let rate = if cc {
                rp_tick(&mut fl.rp, params, now);
                rp_on_sent(&mut fl.rp, params, now, u64::from(len));
                rp_rate(&fl.rp)
            } else {
                params.line_rate_bps
            };
            fl.pacer.on_send(now, rate, u64::from(len));
            fl.snd_nxt += payload;
            let arm = !fl.rto_armed;
            fl.rto_armed = true;
            let dst = fl.dst;
            self.stats.sent_payload += payload;
            let pid = self.alloc(Pkt {
                flow: f,
                psn,
                len,
                dst,
                kind: KIND_DATA,
                ecn: ECN_ECT0,
                tc: TC_DATA,
            });
            if arm && self.p.rto_ns > 0 {
                self.q.push(now + self.p.rto_ns, Ev::Rto { flow: f });
            }
            self.host_transmit(h, pid);
            return;
        }
        if earliest != u64::MAX {
            self.wake(h, earliest);
        }
    }

    fn wake(&mut self, h: u32, t: u64) {
        let host = &mut self.hosts[h as usize];
        if host.wake_at <= self.now || host.wake_at > t {
            host.wake_at = t;
            self.q.push(t, Ev::Wake { node: h });
        }
    }

    fn host_transmit(&mut self, h: u32, pid: u32) {
        let now = self.now;
        let len = self.pkts[pid as usize].len;
        let host = &mut self.hosts[h as usize];
        let l = host.link;
        let ser = ser_ns(len, l.speed_mbps, &mut host.ser_frac);
        host.busy = true;
        host.tx_bytes += u64::from(len);
        self.q.push(now + ser, Ev::TxDone { node: h, port: 0 });
        self.push_arrive(now + ser + l.delay_ns, l.peer, l.peer_port, pid);
    }

    /// Queues a control frame from host `h`.
    fn send_ctrl(&mut self, h: u32, flow: u32, kind: u8, psn: u32, dst: u32) {
        if kind == KIND_ACK {
            let rx = &mut self.rx[flow as usize];
            rx.ack_psn = rx.ack_psn.max(psn);
        }
        let pid = self.alloc(Pkt {
            flow,
            psn,
            len: CTRL_LEN,
            dst,
            kind,
            ecn: 0,
            tc: TC_CTRL,
        });
        self.stats.ctrl_sent += 1;
        self.hosts[h as usize].ctrl.push_back(pid);
        self.host_send(h);
    }

    /// A frame arrived at host `h`.
    pub fn host_receive(&mut self, h: u32, pid: u32) {
        let pkt = self.pkts[pid as usize];
        self.release(pid);
        let now = self.now;
        let f = pkt.flow;
        match pkt.kind {
            KIND_DATA => {
                let payload = u64::from(pkt.len - HDR);
                self.stats.recv_payload += payload;
                let fl = &mut self.rx[f as usize];
                let src = fl.src;
                if np_on_packet(&mut fl.np, now, pkt.ecn == ECN_CE) {
                    self.stats.cnp_sent += 1;
                    self.send_ctrl(h, f, KIND_CNP, 0, src);
                }
                let fl = &mut self.rx[f as usize];
                fl.last_rx_ns = now;
                let delay = self.p.ack_delay_ns;
                if delay > 0 && !fl.ack_armed {
                    fl.ack_armed = true;
                    self.q.push(now + delay, Ev::AckDelay { flow: f });
                }
                if self.p.ooo_receiver {
                    self.receive_placed(h, f, pkt.psn, payload);
                    return;
                }
                let fl = &mut self.rx[f as usize];
                if pkt.psn == fl.rcv_psn {
                    fl.rcv_psn += 1;
                    fl.rcv_bytes += payload;
                    fl.nak_sent = false;
                    if fl.rcv_bytes >= fl.size {
                        fl.finish_ns = now;
                        let psn = fl.rcv_psn;
                        self.send_ctrl(h, f, KIND_ACK, psn, src);
                        self.flow_complete(f);
                    } else if fl.rcv_psn.is_multiple_of(self.p.ack_every) {
                        let psn = fl.rcv_psn;
                        self.send_ctrl(h, f, KIND_ACK, psn, src);
                    }
                } else if pkt.psn > fl.rcv_psn {
                    self.stats.ooo_payload += payload;
                    if !fl.nak_sent {
                        fl.nak_sent = true;
                        let psn = fl.rcv_psn;
                        self.stats.naks += 1;
                        if self.p.trace_lb {
                            self.stats.lb_trace.push(LbEvent::nak(now, h, f, psn));
                        }
                        self.send_ctrl(h, f, KIND_NAK, psn, src);
                    }
                } else {
                    // duplicate of a retransmission
                    self.stats.dup_payload += payload;
                    if pkt.psn.is_multiple_of(self.p.ack_every) || fl.rcv_bytes >= fl.size {
                        let psn = fl.rcv_psn;
                        self.send_ctrl(h, f, KIND_ACK, psn, src);
                    }
                }
            }
            KIND_ACK | KIND_NAK => {
                let mtu = u64::from(self.p.mtu);
                let fl = &mut self.flows[f as usize];
                if pkt.psn > fl.snd_una_psn {
                    fl.snd_una_psn = pkt.psn;
                    fl.last_progress_ns = now;
                    if self.p.window > 0 {
                        // the window may have reopened
                        let s = fl.src;
                        self.host_send(s);
                    }
                }
                let fl = &mut self.flows[f as usize];
                if u64::from(fl.snd_una_psn) * mtu >= fl.size {
                    fl.acked = true;
                }
                if pkt.kind == KIND_NAK {
                    let back = u64::from(pkt.psn) * mtu;
                    if back < fl.snd_nxt {
                        self.stats.retx_payload += fl.snd_nxt - back;
                        fl.snd_nxt = back;
                        self.activate(f);
                        let s = self.flows[f as usize].src;
                        self.host_send(s);
                    }
                }
            }
            KIND_CNP => {
                self.stats.cnp_rx += 1;
                if self.p.cc != Cc::None {
                    let params = self.dcqcn();
                    rp_on_cnp(&mut self.flows[f as usize].rp, &params, now);
                }
            }
            _ => {}
        }
    }

    /// A data packet of flow `f` at an out-of-order-placement receiver
    /// (`receiver = "ooo"`: RoCE NICs with direct data placement, UET's
    /// PDS): a new PSN is placed where it belongs, whatever arrived before
    /// it; the cumulative ACK moves over what is now contiguous (every
    /// `ack_every` packets and at the end); a gap is never NAKed (a packet
    /// that is really lost comes back by the sender's timeout).
    fn receive_placed(&mut self, h: u32, f: u32, psn: u32, payload: u64) {
        let every = self.p.ack_every;
        let mtu = u64::from(self.p.mtu);
        let fl = &mut self.rx[f as usize];
        let src = fl.src;
        if fl.placed.is_empty() {
            let psns = fl.size.div_ceil(mtu).max(1) as usize;
            fl.placed = vec![0u64; psns.div_ceil(64)];
        }
        let word = psn as usize / 64;
        let bit = 1u64 << (psn % 64);
        let new = word < fl.placed.len() && fl.placed[word] & bit == 0;
        if !new {
            // a duplicate (a retransmission of what arrived)
            self.stats.dup_payload += payload;
            if psn.is_multiple_of(every) || fl.rcv_bytes >= fl.size {
                let ack = fl.rcv_psn;
                self.send_ctrl(h, f, KIND_ACK, ack, src);
            }
            return;
        }
        if psn > fl.rcv_psn {
            self.stats.ooo_payload += payload;
        }
        fl.placed[word] |= bit;
        fl.rcv_bytes += payload;
        let before = fl.rcv_psn;
        while (fl.rcv_psn as usize / 64) < fl.placed.len()
            && fl.placed[fl.rcv_psn as usize / 64] & (1u64 << (fl.rcv_psn % 64)) != 0
        {
            fl.rcv_psn += 1;
        }
        if fl.rcv_bytes >= fl.size {
            fl.finish_ns = self.now;
            let ack = fl.rcv_psn;
            self.send_ctrl(h, f, KIND_ACK, ack, src);
            self.flow_complete(f);
        } else if fl.rcv_psn / every != before / every {
            let ack = fl.rcv_psn;
            self.send_ctrl(h, f, KIND_ACK, ack, src);
        }
    }

    /// A PFC frame for the RoCE class reached host `h`.
    pub fn host_pfc(&mut self, h: u32, quanta: u16) {
        let now = self.now;
        let host = &mut self.hosts[h as usize];
        let until = if quanta == 0 {
            now
        } else {
            now + quanta_to_nanos(quanta, u64::from(host.link.speed_mbps))
        };
        host.paused_until = until;
        host.pause.apply(now, until);
        self.stats.pfc_rx += 1;
        self.host_send(h);
    }

    /// Retransmission timer of flow `f`.
    pub fn flow_rto(&mut self, f: u32) {
        let now = self.now;
        let mtu = u64::from(self.p.mtu);
        let rto = self.p.rto_ns;
        let fl = &mut self.flows[f as usize];
        if fl.acked {
            fl.rto_armed = false;
            return;
        }
        let una = u64::from(fl.snd_una_psn) * mtu;
        if fl.snd_nxt <= una {
            // nothing outstanding (paced, paused or window-limited): the
            // timer restarts
            fl.last_progress_ns = now;
        } else if now.saturating_sub(fl.last_progress_ns) >= rto {
            self.stats.timeouts += 1;
            self.stats.retx_payload += fl.snd_nxt - una;
            fl.snd_nxt = una;
            fl.last_progress_ns = now;
            let s = fl.src;
            self.activate(f);
            self.host_send(s);
        }
        let fl = &self.flows[f as usize];
        let next = (fl.last_progress_ns + rto).max(now + 1);
        self.q.push(next, Ev::Rto { flow: f });
    }

    /// The receiver's delayed-ACK timer of flow `f` (the testbed
    /// emulator's `RecvQp::delayed_ack`): after `ack_delay` without a data
    /// packet, what arrived in order since the last ACK is ACKed.
    pub fn flow_ack_delay(&mut self, f: u32) {
        let now = self.now;
        let delay = self.p.ack_delay_ns;
        let fl = &mut self.rx[f as usize];
        let idle_until = fl.last_rx_ns + delay;
        if now < idle_until {
            self.q.push(idle_until, Ev::AckDelay { flow: f });
            return;
        }
        fl.ack_armed = false;
        if fl.rcv_psn > fl.ack_psn {
            let (psn, src, dst) = (fl.rcv_psn, fl.src, fl.dst);
            self.send_ctrl(dst, f, KIND_ACK, psn, src);
        }
    }

    /// Flow `f` was received whole: statistics, and the flows waiting for
    /// it may start (their sender is in this partition: see
    /// [`crate::partition::split`]).
    pub fn flow_complete(&mut self, f: u32) {
        self.stats.flows_done += 1;
        let children = std::mem::take(&mut self.rx[f as usize].children);
        let delay = self.p.dep_delay_ns;
        for &c in &children {
            if delay > 0 {
                self.push_dep_done(self.now + delay, c);
                continue;
            }
            if self.one_dep_less(c) {
                self.q.push(self.now, Ev::DepStart { flow: c });
            }
        }
        self.rx[f as usize].children = children;
    }

    /// A flow that `f` waits for completed `dep_delay` ago: `f` starts when
    /// it was the last.
    pub fn flow_dep_done(&mut self, f: u32) {
        if self.one_dep_less(f) {
            self.start_flow(f);
        }
    }

    /// One of the flows `f` waits for completed: whether that was the
    /// last and `f` may start now (its start time is then now).
    fn one_dep_less(&mut self, f: u32) -> bool {
        let fl = &mut self.flows[f as usize];
        fl.deps_left = fl.deps_left.saturating_sub(1);
        let ready = fl.deps_left == 0 && !fl.started;
        if ready {
            fl.start_ns = self.now;
        }
        ready
    }
}
