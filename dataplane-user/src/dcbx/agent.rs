//! The DCBX agent: one thread for every port of `[dcbx]`. It sends the
//! port's LLDPDU (fast start: `fast_tx_count` frames a second apart when
//! the agent starts, a link comes up or a new peer appears; then every
//! `tx_interval_s`), receives the peer's, keeps it until its TTL runs out,
//! and checks it against the port ([`dataplane_common::dcbx::mismatches`]):
//! changes go to the event log (`dataplane events --history`), the state
//! file (`dataplane show dcbx`, metrics) and the log.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use dataplane_common::dcbx::{mismatches, Field, Local, Mismatches};
use dataplane_common::wire::lldp::{self, Lldpdu};
use dataplane_config::{DcbxPlan, Plan};

use super::advert;
use super::socket::LldpSocket;
use super::state::{id_text, Counters, Peer, PortState, Side, State};
use crate::telemetry::events::EventLog;

/// Time between fast-start frames (802.1AB msgFastTx).
const FAST_TX: Duration = Duration::from_secs(1);

/// The DCBX state of one port.
pub struct PortAgent {
    pub name: String,
    mac: [u8; 6],
    sock: Option<LldpSocket>,
    /// What it advertises, and what the peer is checked against.
    du: Lldpdu,
    local: Local,
    fast_left: u32,
    next_tx: Option<Instant>,
    link_up: bool,
    peer: Option<(Lldpdu, Instant)>,
    pub mismatches: Mismatches,
    pub counters: Counters,
    /// Discard reasons already logged (each once per port).
    warned: BTreeSet<&'static str>,
}

impl PortAgent {
    /// A port's agent without a socket (tests feed it frames).
    pub fn new(name: &str, mac: [u8; 6], du: Lldpdu, local: Local) -> PortAgent {
        PortAgent {
            name: name.into(),
            mac,
            sock: None,
            du,
            local,
            fast_left: 0,
            next_tx: None,
            link_up: false,
            peer: None,
            mismatches: Mismatches::default(),
            counters: Counters::default(),
            warned: BTreeSet::new(),
        }
    }

    /// One received frame: counted; a valid LLDPDU becomes the peer (TTL 0
    /// removes it) and is checked. Returns true when something an operator
    /// sees changed.
    pub fn on_frame(&mut self, frame: &[u8], now: Instant, log: &mut Option<EventLog>) -> bool {
        self.counters.rx_frames += 1;
        let du = match lldp::decode(frame) {
            Ok(du) => du,
            Err(e) => {
                *self
                    .counters
                    .rx_discarded
                    .entry(e.name().into())
                    .or_default() += 1;
                self.warn_once(e.name(), "an LLDP frame was discarded");
                return true;
            }
        };
        for e in dataplane_common::wire::dcbx::TlvError::ALL {
            let n = du.tlv_errors[e as usize];
            if n > 0 {
                *self
                    .counters
                    .tlv_discarded
                    .entry(e.name().into())
                    .or_default() += u64::from(n);
                self.warn_once(e.name(), "a DCBX TLV was discarded");
            }
        }
        self.counters.tlv_unrecognized += u64::from(du.unrecognized);
        if du.ttl == 0 {
            if self.peer.take().is_some() {
                record(
                    log,
                    "dcbx_peer_gone",
                    &self.name,
                    0,
                    "the peer sent a shutdown LLDPDU (TTL 0)",
                );
            }
            self.set_mismatches(Mismatches::default(), log);
            return true;
        }
        let new_peer = self
            .peer
            .as_ref()
            .is_none_or(|(p, _)| p.chassis != du.chassis || p.port != du.port);
        if new_peer {
            record(
                log,
                "dcbx_peer",
                &self.name,
                0,
                &format!(
                    "new peer {} port {}",
                    id_text(du.chassis.subtype, du.chassis.as_bytes(), true),
                    id_text(du.port.subtype, du.port.as_bytes(), false)
                ),
            );
            // 802.1AB: a new neighbour gets the fast start
            self.fast_start(now);
        }
        let m = mismatches(&self.local, &du.dcbx);
        self.peer = Some((du, now));
        self.set_mismatches(m, log);
        true
    }

    fn warn_once(&mut self, reason: &'static str, what: &str) {
        if self.warned.insert(reason) {
            crate::log::warn(&format!(
                "dcbx {}: {what} ({reason}); counted, and said only once per reason",
                self.name
            ));
        }
    }

    /// Records raised and cleared fields.
    fn set_mismatches(&mut self, m: Mismatches, log: &mut Option<EventLog>) {
        let old = self.mismatches;
        for f in Field::ALL {
            let (was, is) = (old.contains(f), m.contains(f));
            if was == is {
                continue;
            }
            let prio = match f {
                Field::RocePriority => self.peer_roce().unwrap_or(0),
                _ => 0,
            };
            let (kind, detail) = if is {
                ("dcbx_mismatch", self.describe(f))
            } else {
                (
                    "dcbx_mismatch_cleared",
                    format!("{}: in agreement again", f.name()),
                )
            };
            crate::log::info(&format!("dcbx {}: {kind} {detail}", self.name));
            record(log, kind, &self.name, prio, &detail);
        }
        self.mismatches = m;
    }

    fn peer_roce(&self) -> Option<u8> {
        self.peer
            .as_ref()
            .and_then(|(p, _)| p.dcbx.app)
            .and_then(|a| a.udp_priority(dataplane_common::wire::udp::ROCEV2_PORT))
    }

    /// What a raised field means, with the values.
    fn describe(&self, f: Field) -> String {
        let peer = self.peer.as_ref().map(|(p, _)| Side::of(&p.dcbx));
        let pv = |s: &Option<Side>| {
            s.as_ref()
                .and_then(|s| s.pfc_enable.clone())
                .map(|v| format!("{v:?}"))
                .unwrap_or_else(|| "none".into())
        };
        let ours = Side::of(&self.du.dcbx);
        match f {
            Field::PfcEnable => format!(
                "pfc_enable: peer's PFC priorities {} differ from ours {}",
                pv(&peer),
                pv(&Some(ours))
            ),
            Field::RocePriority => format!(
                "roce_priority: the peer maps UDP 4791 to priority {}, which is not lossless here (lossless: {})",
                self.peer_roce().map(|p| p.to_string()).unwrap_or_default(),
                pv(&Some(ours))
            ),
            Field::Willing => "willing: neither side is willing and their PFC/ETS configurations differ".into(),
            Field::PfcAbsent => "pfc_absent: the peer sends LLDP without a PFC Configuration TLV".into(),
        }
    }

    /// Schedules the fast start from `now`.
    fn fast_start(&mut self, now: Instant) {
        self.next_tx = Some(now);
        self.fast_left = self.fast_left.max(1);
    }

    /// Checks the peer again (this port's configuration changed).
    fn recheck(&mut self, log: &mut Option<EventLog>) {
        if let Some(m) = self
            .peer
            .as_ref()
            .map(|(p, _)| mismatches(&self.local, &p.dcbx))
        {
            self.set_mismatches(m, log);
        }
    }

    /// Ages the peer out once its TTL has run; true when it did.
    pub fn age(&mut self, now: Instant, log: &mut Option<EventLog>) -> bool {
        let expired = self
            .peer
            .as_ref()
            .is_some_and(|(p, at)| now.duration_since(*at) > Duration::from_secs(u64::from(p.ttl)));
        if expired {
            self.peer = None;
            self.counters.ageouts += 1;
            record(
                log,
                "dcbx_peer_gone",
                &self.name,
                0,
                "the peer's TTL ran out",
            );
            self.set_mismatches(Mismatches::default(), log);
        }
        expired
    }

    /// The state an operator reads.
    pub fn state(&self, now: Instant) -> PortState {
        PortState {
            port: self.name.clone(),
            local: Side::of(&self.du.dcbx),
            peer: self.peer.as_ref().map(|(p, at)| Peer {
                chassis: id_text(p.chassis.subtype, p.chassis.as_bytes(), true),
                port_id: id_text(p.port.subtype, p.port.as_bytes(), false),
                system_name: String::from_utf8_lossy(p.system_name.as_bytes()).into_owned(),
                ttl_s: p.ttl,
                age_s: now.duration_since(*at).as_secs(),
                config: Side::of(&p.dcbx),
            }),
            mismatches: self
                .mismatches
                .iter()
                .map(|f| f.name().to_string())
                .collect(),
            counters: self.counters.clone(),
        }
    }

    /// Sends the LLDPDU when due; returns true when a frame went out.
    fn maybe_send(&mut self, now: Instant, interval: Duration) -> bool {
        if !self.link_up || self.next_tx.is_some_and(|t| t > now) {
            return false;
        }
        let mut buf = [0u8; lldp::MAX_FRAME];
        let sent = match (lldp::encode(&self.du, self.mac, &mut buf), &self.sock) {
            (Some(n), Some(s)) => s.send(&buf[..n]).is_ok(),
            _ => false,
        };
        if sent {
            self.counters.tx_frames += 1;
        } else {
            self.counters.tx_errors += 1;
        }
        if self.fast_left > 1 {
            self.fast_left -= 1;
            self.next_tx = Some(now + FAST_TX);
        } else {
            self.fast_left = 0;
            self.next_tx = Some(now + interval);
        }
        true
    }
}

fn record(log: &mut Option<EventLog>, kind: &str, port: &str, prio: u8, detail: &str) {
    if let Some(l) = log.as_mut() {
        l.record(kind, port, prio, detail);
    }
}

/// The system name advertised: the host name, else the instance.
fn system_name(instance: &str) -> String {
    let mut b = [0u8; 256];
    // SAFETY: gethostname into our buffer, NUL-terminated within it.
    let ok = unsafe { libc::gethostname(b.as_mut_ptr() as *mut libc::c_char, b.len() - 1) == 0 };
    let n = b.iter().position(|&c| c == 0).unwrap_or(0);
    if ok && n > 0 {
        String::from_utf8_lossy(&b[..n]).into_owned()
    } else {
        instance.to_string()
    }
}

/// The agents of every port, from a plan with `[dcbx]`.
fn port_agents(plan: &Plan, d: &DcbxPlan, macs: &[[u8; 6]], ttl: u16) -> Vec<PortAgent> {
    let chassis = macs.first().copied().unwrap_or_default();
    let name = system_name(&plan.instance);
    plan.ports
        .iter()
        .zip(macs)
        .map(|(p, &mac)| {
            let du = advert::lldpdu(d, p, chassis, &name, ttl);
            PortAgent::new(&p.name, mac, du, advert::local(d, p))
        })
        .collect()
}

/// The running agent thread.
pub struct Agent {
    stop: Arc<AtomicBool>,
    update: Arc<Mutex<Option<Plan>>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Agent {
    /// Starts the agent when the plan has `[dcbx]`; `macs` are the ports'
    /// own MACs (the frames' sources; the first is the chassis ID).
    pub fn start(plan: &Plan, macs: &[[u8; 6]]) -> Result<Option<Agent>> {
        let Some(d) = plan.dcbx.clone() else {
            return Ok(None);
        };
        let mut ports = port_agents(plan, &d, macs, d.ttl_s);
        for p in &mut ports {
            p.sock = Some(LldpSocket::open(&p.name)?);
        }
        // the state is there from `ready:` on
        save(&plan.instance, &d, &ports)?;
        let stop = Arc::new(AtomicBool::new(false));
        let update = Arc::new(Mutex::new(None));
        let (s, u) = (stop.clone(), update.clone());
        let plan = plan.clone();
        let macs = macs.to_vec();
        let handle = std::thread::Builder::new()
            .name("dcbx".into())
            .spawn(move || run(plan, d, macs, ports, &s, &u))?;
        Ok(Some(Agent {
            stop,
            update,
            handle: Some(handle),
        }))
    }

    /// A reloaded plan: the advertisements follow it (sent at once).
    pub fn update(&self, plan: &Plan) {
        if let Ok(mut u) = self.update.lock() {
            *u = Some(plan.clone());
        }
    }

    /// Stops the thread. No shutdown LLDPDU (TTL 0) is sent: the data
    /// plane keeps forwarding after the controller stops, and a willing
    /// host that forgot the switch would fall back to its own PFC
    /// configuration; a restarted or upgraded controller advertises again
    /// well within the TTL.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Writes the state of every port.
fn save(instance: &str, d: &DcbxPlan, ports: &[PortAgent]) -> Result<()> {
    let now = Instant::now();
    State {
        instance: instance.into(),
        tx_interval_s: d.tx_interval_s,
        ports: ports.iter().map(|p| p.state(now)).collect(),
    }
    .save()
}

fn run(
    mut plan: Plan,
    mut d: DcbxPlan,
    macs: Vec<[u8; 6]>,
    mut ports: Vec<PortAgent>,
    stop: &AtomicBool,
    update: &Mutex<Option<Plan>>,
) {
    let mut log = Some(EventLog::open(&plan.instance));
    let mut buf = vec![0u8; 9216];
    let mut last_save: Option<Instant> = None;
    let mut changed = true;
    while !stop.load(Ordering::Relaxed) {
        let now = Instant::now();
        if let Some(new) = update.lock().ok().and_then(|mut u| u.take()) {
            if let Some(nd) = new.dcbx.clone() {
                let fresh = port_agents(&new, &nd, &macs, nd.ttl_s);
                for (p, f) in ports.iter_mut().zip(fresh) {
                    if p.du != f.du {
                        p.du = f.du;
                        p.local = f.local;
                        p.recheck(&mut log);
                        // 802.1AB somethingChangedLocal: send now
                        p.next_tx = Some(now);
                        changed = true;
                    }
                }
                d = nd;
                plan = new;
            }
        }
        for p in &mut ports {
            let up = crate::tables::groups::link_up(&p.name);
            if up && !p.link_up {
                p.fast_left = d.fast_tx_count;
                p.next_tx = Some(now);
            }
            p.link_up = up;
            changed |= p.age(now, &mut log);
            p.maybe_send(now, Duration::from_secs(u64::from(d.tx_interval_s)));
        }
        // wait for frames until the next transmission (at most 1 s: link
        // state, ageing and the state file's ages); a port whose link is
        // down has nothing due until it comes up
        let wait = ports
            .iter()
            .filter(|p| p.link_up)
            .filter_map(|p| p.next_tx)
            .map(|t| t.saturating_duration_since(Instant::now()))
            .min()
            .unwrap_or(FAST_TX)
            .min(FAST_TX);
        let mut fds: Vec<libc::pollfd> = ports
            .iter()
            .map(|p| libc::pollfd {
                fd: p.sock.as_ref().map(|s| s.raw_fd()).unwrap_or(-1),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        // SAFETY: poll on our own fds.
        let n = unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                wait.as_millis().max(1) as i32,
            )
        };
        if n > 0 {
            for (p, fd) in ports.iter_mut().zip(&fds) {
                // POLLERR too (a link going down): the read takes the
                // socket's error, so poll does not return for it again
                if fd.revents == 0 {
                    continue;
                }
                while let Some(r) = p.sock.as_ref().and_then(|s| s.recv(&mut buf)) {
                    let frame = &buf[..r.len.min(buf.len())];
                    // our own transmissions, seen by the tap
                    if r.outgoing || frame.get(6..12) == Some(&p.mac[..]) {
                        continue;
                    }
                    changed |= p.on_frame(frame, Instant::now(), &mut log);
                }
            }
        }
        let due = last_save.is_none_or(|t| t.elapsed() >= FAST_TX);
        if changed || due {
            if let Err(e) = save(&plan.instance, &d, &ports) {
                crate::log::warn(&format!("dcbx: writing the state: {e:#}"));
            }
            last_save = Some(Instant::now());
            changed = false;
        }
    }
    let _ = std::fs::remove_file(super::state::path(&plan.instance));
}
