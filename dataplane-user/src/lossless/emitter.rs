//! PFC emission: the thread that turns the data plane's XOFF/XON requests
//! (ring buffer) into PFC frames on the wire, as fast as it can.

use crate::lossless::pfc::PfcPort;
use crate::ports::Resolved;
use anyhow::{bail, Result};
use aya::maps::{MapData, RingBuf};
use dataplane_common::buffer::{PfcEvent, PFC_EV_SENT, PFC_EV_XON};
use dataplane_config::Plan;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Sends the PFC frames the data plane decided, out of the ingress port
/// they protect, and measures decision-to-send latency.
pub struct Emitter {
    ports: Vec<Option<PfcPort>>,
    names: Vec<String>,
    /// Decision-to-sent latency of every frame, ns.
    pub latencies_ns: Vec<u64>,

    /// Frames this controller sent (the fallback path).
    pub sent: u64,
    /// Frames the data plane reported it sent.
    pub dp_sent: u64,
    pub failed: u64,
    /// Frames later than the headroom's response time.
    pub late: u64,
    /// XOFF/XON transitions go to the controller's event log.
    log: Option<crate::telemetry::events::EventLog>,
}

impl Emitter {
    /// Opens a sender on every configured port (in this namespace).
    pub fn open(plan: &Plan, ports: &[Resolved]) -> Result<Emitter> {
        let mut out = Vec::new();
        let mut names = Vec::new();
        for (p, r) in plan.ports.iter().zip(ports) {
            out.push(Some(PfcPort::open(&p.name, r.config.mac)?));
            names.push(p.name.clone());
        }
        Ok(Emitter {
            ports: out,
            names,
            latencies_ns: Vec::new(),

            sent: 0,
            dp_sent: 0,
            failed: 0,
            late: 0,
            log: Some(crate::telemetry::events::EventLog::open(&plan.instance)),
        })
    }

    /// One ring record: a frame to send (the fallback path), or a frame
    /// the data plane sent itself ([`PFC_EV_SENT`]), recorded alike.
    pub fn handle(&mut self, ev: &PfcEvent) -> Result<()> {
        if ev.flags & PFC_EV_SENT != 0 {
            self.dp_sent += 1;

            self.record(ev, ev.sent_ns, "the data plane");
            return Ok(());
        }
        let Some(Some(port)) = self.ports.get(ev.port as usize) else {
            bail!("PFC event for port slot {} which has no sender", ev.port);
        };
        let mask = 1u8 << (ev.prio & 7);
        let r = if ev.kind == PFC_EV_XON {
            port.xon(mask)
        } else {
            port.xoff(mask, ev.quanta)
        };
        match r {
            Ok(_) => {
                self.sent += 1;
                self.record(ev, crate::sys::monotonic_ns(), "the controller");
                Ok(())
            }
            Err(e) => {
                self.failed += 1;
                Err(e.context(format!("sending PFC on {}", self.names[ev.port as usize])))
            }
        }
    }

    /// Latency (decision to `sent_ns`), debug line and event log of a frame
    /// that went out.
    fn record(&mut self, ev: &PfcEvent, sent_ns: u64, by: &str) {
        let name = self
            .names
            .get(ev.port as usize)
            .cloned()
            .unwrap_or_else(|| format!("slot{}", ev.port));
        let lat = sent_ns.saturating_sub(ev.time_ns);
        self.latencies_ns.push(lat);
        crate::log::debug(&format!(
            "pfc: {by} sent {} on {name} priority {} ({} quanta), {} us after the decision",
            if ev.kind == PFC_EV_XON { "XON" } else { "XOFF" },
            ev.prio & 7,
            ev.quanta,
            lat / 1000
        ));
        // transitions only: refreshes repeat an XOFF in force
        if ev.kind != dataplane_common::buffer::PFC_EV_REFRESH {
            if let Some(l) = self.log.as_mut() {
                let (kind, detail) = if ev.kind == PFC_EV_XON {
                    ("pfc_xon_sent", format!("resume (time 0), sent by {by}"))
                } else {
                    (
                        "pfc_xoff_sent",
                        format!(
                            "pause {} quanta, {} us after the decision, sent by {by}",
                            ev.quanta,
                            lat / 1000
                        ),
                    )
                };
                l.record(kind, &name, ev.prio & 7, &detail);
            }
        }
        if self.latencies_ns.len() > 100_000 {
            self.latencies_ns.drain(..50_000);
        }
    }

    /// Drains the ring buffer, sending every frame it asks for.
    pub fn drain(&mut self, ring: &mut RingBuf<MapData>) -> usize {
        let mut n = 0;
        while let Some(item) = ring.next() {
            if item.len() >= std::mem::size_of::<PfcEvent>() {
                // SAFETY: the data plane writes PfcEvent records; read unaligned.
                let ev: PfcEvent =
                    unsafe { std::ptr::read_unaligned(item.as_ptr() as *const PfcEvent) };
                drop(item);
                if let Err(e) = self.handle(&ev) {
                    crate::log::error(&format!("pfc: {e:#}"));
                }
                n += 1;
            }
        }
        n
    }
}

/// Gives the calling thread real-time priority (SCHED_FIFO), so PFC frames
/// and the model's timer are not delayed by ordinary work on a busy host:
/// measured here, at normal priority the decision-to-wire time had
/// multi-millisecond outliers on a 2-vCPU machine, enough to exhaust the
/// headroom. Returns false when not permitted.
pub fn realtime(priority: i32) -> bool {
    let p = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sets the calling thread's own policy.
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

/// The emitter on its own real-time thread, blocked in poll(2) on the ring
/// buffer. Frames later than `late_ns` (the headroom's response time) are
/// counted and reported: they mean the headroom may not be enough.
pub struct EmitterThread {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Emitter>>,
}

impl EmitterThread {
    pub fn start(
        mut emitter: Emitter,
        mut ring: RingBuf<MapData>,
        late_ns: u64,
    ) -> Result<EmitterThread> {
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new().name("pfc-emitter".into()).spawn(move || {
            if !realtime(50) {
                crate::log::warn("pfc: cannot raise the emitter to SCHED_FIFO (not root?): PFC latency may have outliers");
            }
            let fd = ring.as_raw_fd();
            while !s.load(Ordering::Relaxed) {
                let mut pfd = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
                // SAFETY: poll on one valid fd.
                let n = unsafe { libc::poll(&mut pfd, 1, 100) };
                if n > 0 {
                    let before = emitter.latencies_ns.len();
                    emitter.drain(&mut ring);
                    for &l in &emitter.latencies_ns[before.min(emitter.latencies_ns.len())..] {
                        if late_ns > 0 && l > late_ns {
                            emitter.late += 1;
                            if emitter.late == 1 || emitter.late.is_multiple_of(1000) {
                                crate::log::warn(&format!(
                                    "pfc: a frame left {} us after the decision, beyond the {} us the headroom covers ({} such frames so far)",
                                    l / 1000,
                                    late_ns / 1000,
                                    emitter.late
                                ));
                            }
                        }
                    }
                }
            }
            emitter
        })?;
        Ok(EmitterThread {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the thread and returns the emitter with its statistics.
    pub fn stop(mut self) -> Option<Emitter> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().and_then(|h| h.join().ok())
    }
}

impl Drop for EmitterThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// p-th percentile (0..=100) of a sample, ns.
pub fn percentile(v: &[u64], p: f64) -> Option<u64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_unstable();
    let i = ((p / 100.0) * (s.len() - 1) as f64).round() as usize;
    Some(s[i.min(s.len() - 1)])
}
