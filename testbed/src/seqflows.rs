//! Sequence-numbered UDP flows between two host namespaces, through the
//! hosts' own IP stacks: one socket (one UDP source port, so one 5-tuple
//! the switches hash) per flow, one receiving socket. A run counts, per
//! flow, the datagrams sent and those that arrived, so a loss is pinned to
//! the flows (and through them the paths) it happened on.
//!
//! Datagram payload: run id (u32), flow (u32), sequence number (u64), big
//! endian. Datagrams of another run (probes, late stragglers) are ignored.

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::netns::Netns;

/// What one flow of a run sent and received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowCount {
    pub sent: u64,
    /// Distinct sequence numbers that arrived.
    pub received: u64,
    /// Arrivals of a sequence number already seen.
    pub duplicates: u64,
}

impl FlowCount {
    pub fn lost(&self) -> u64 {
        self.sent.saturating_sub(self.received)
    }
}

/// `n` flows from one namespace to an address in another.
pub struct Flows {
    tx: Vec<UdpSocket>,
    rx: UdpSocket,
    dst: SocketAddr,
    run: u32,
}

fn datagram(run: u32, flow: u32, seq: u64) -> [u8; 16] {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&run.to_be_bytes());
    b[4..8].copy_from_slice(&flow.to_be_bytes());
    b[8..].copy_from_slice(&seq.to_be_bytes());
    b
}

impl Flows {
    /// Opens `n` sending sockets in `from` (ephemeral source ports) and a
    /// receiving socket on `to_addr`:`port` in `to`.
    pub fn open(from: &Netns, to: &Netns, to_addr: IpAddr, port: u16, n: usize) -> Result<Flows> {
        let any: IpAddr = if to_addr.is_ipv4() {
            "0.0.0.0".parse()?
        } else {
            "::".parse()?
        };
        let rx = {
            let _in = to.enter()?;
            UdpSocket::bind(SocketAddr::new(any, port)).context("flow receiver")?
        };
        rx.set_read_timeout(Some(Duration::from_millis(50)))?;
        let tx = {
            let _in = from.enter()?;
            (0..n)
                .map(|_| UdpSocket::bind(SocketAddr::new(any, 0)).context("flow sender"))
                .collect::<Result<Vec<_>>>()?
        };
        Ok(Flows {
            tx,
            rx,
            dst: SocketAddr::new(to_addr, port),
            run: 0,
        })
    }

    pub fn len(&self) -> usize {
        self.tx.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tx.is_empty()
    }

    /// Flow `f`'s UDP source port.
    pub fn source_port(&self, f: usize) -> Result<u16> {
        Ok(self.tx[f].local_addr()?.port())
    }

    /// Sends `count` datagrams of flow `f` outside any run (e.g. to see
    /// which path the switches give it); returns how many the host's stack
    /// took.
    pub fn probe(&self, f: usize, count: usize, gap: Duration) -> usize {
        let mut ok = 0;
        for i in 0..count {
            if self.tx[f]
                .send_to(&datagram(u32::MAX, f as u32, i as u64), self.dst)
                .is_ok()
            {
                ok += 1;
            }
            std::thread::sleep(gap);
        }
        ok
    }

    /// Sends round-robin over the flows, one datagram every `gap`, for
    /// `duration`, while `during` runs in the calling thread; then waits
    /// until nothing arrived for `idle`. Returns `during`'s result and the
    /// per-flow counts. A send the host's stack refuses is not counted as
    /// sent.
    pub fn run<T>(
        &mut self,
        duration: Duration,
        gap: Duration,
        idle: Duration,
        during: impl FnOnce() -> T,
    ) -> (T, Vec<FlowCount>) {
        self.run += 1;
        let run = self.run;
        let n = self.tx.len();
        let stop = AtomicBool::new(false);
        let (tx, rx, dst) = (&self.tx, &self.rx, self.dst);
        std::thread::scope(|s| {
            let receiver = s.spawn(|| {
                let mut seen: Vec<Vec<bool>> = vec![Vec::new(); n];
                let mut dup = vec![0u64; n];
                let mut last = Instant::now();
                let mut buf = [0u8; 64];
                while !(stop.load(Ordering::Relaxed) && last.elapsed() >= idle) {
                    let Ok(len) = rx.recv(&mut buf) else {
                        continue;
                    };
                    if len != 16 || buf[..4] != run.to_be_bytes() {
                        continue;
                    }
                    let f = u32::from_be_bytes(buf[4..8].try_into().unwrap()) as usize;
                    let seq = u64::from_be_bytes(buf[8..16].try_into().unwrap()) as usize;
                    let Some(v) = seen.get_mut(f) else { continue };
                    if v.len() <= seq {
                        v.resize(seq + 1, false);
                    }
                    if v[seq] {
                        dup[f] += 1;
                    }
                    v[seq] = true;
                    last = Instant::now();
                }
                (seen, dup)
            });
            let sender = s.spawn(|| {
                let mut sent = vec![0u64; n];
                let mut seq = vec![0u64; n];
                let t0 = Instant::now();
                let mut next = t0;
                let mut f = 0;
                while t0.elapsed() < duration {
                    if tx[f].send_to(&datagram(run, f as u32, seq[f]), dst).is_ok() {
                        sent[f] += 1;
                    }
                    seq[f] += 1;
                    f = (f + 1) % n;
                    next += gap;
                    if let Some(w) = next.checked_duration_since(Instant::now()) {
                        std::thread::sleep(w);
                    }
                }
                // the receiver stops after `idle` without arrivals (also
                // when `during` panicked)
                stop.store(true, Ordering::Relaxed);
                (sent, seq)
            });
            let out = during();
            let (sent, seqs) = sender.join().expect("flow sender panicked");
            let (seen, dup) = receiver.join().expect("flow receiver panicked");
            let counts = (0..n)
                .map(|f| FlowCount {
                    sent: sent[f],
                    // only sequence numbers a successful send used count:
                    // a refused send leaves a gap no receiver can fill
                    received: seen[f]
                        .iter()
                        .take(seqs[f] as usize)
                        .filter(|x| **x)
                        .count() as u64,
                    duplicates: dup[f],
                })
                .collect();
            (out, counts)
        })
    }
}
