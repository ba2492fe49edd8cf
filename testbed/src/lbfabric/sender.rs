//! The LB fabric's paced sender: every flow's frames in bursts with
//! random gaps (flowlets), from one host over the lab's raw socket.

use super::*;
use crate::raw::RawSocket;
use anyhow::Result;
use dataplane_common::rand::SplitMix64;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

#[derive(Default)]
pub(crate) struct SenderStats {
    pub(crate) pkts: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) messages: AtomicU64,
    pub(crate) errors: AtomicU64,
}

/// Everything the sender thread needs (owned, sent to the thread).
pub(crate) struct SenderPlan {
    pub(crate) frames: Vec<Vec<Vec<u8>>>,
    pub(crate) burst: u32,
    /// Host link: time per frame, ns.
    pub(crate) tick_ns: f64,
    pub(crate) gap_min_ns: f64,
    pub(crate) gap_max_ns: f64,
    pub(crate) seed: u64,
}

impl SenderPlan {
    pub(crate) fn new(spec: &LbSpec) -> SenderPlan {
        let t = spec.flowlet_timeout_us as f64 * 1e3;
        SenderPlan {
            frames: (0..spec.flows).map(|i| spec.flow_frames(i)).collect(),
            burst: spec.burst_pkts,
            tick_ns: spec.frame_len as f64 * 8.0 * 1e9 / spec.host_bps(),
            gap_min_ns: spec.gap_min * t,
            gap_max_ns: spec.gap_max * t,
            seed: spec.traffic_seed,
        }
    }

    /// Sends on `ifname` (in the calling thread's namespace) for `dur` or
    /// until `stop`; returns the seconds it ran.
    pub(crate) fn run(
        &self,
        ifname: &str,
        dur: Duration,
        stop: &AtomicBool,
        stats: &SenderStats,
    ) -> Result<f64> {
        let sock = RawSocket::open_sender(ifname, true)?;
        // fine-grained sleeps: the default timer slack is 50 us
        // SAFETY: prctl on the calling thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
        let n = self.frames.len();
        let mut rng = SplitMix64(self.seed);
        let gap = |rng: &mut SplitMix64| {
            Duration::from_nanos(
                (self.gap_min_ns + (self.gap_max_ns - self.gap_min_ns) * rng.unit()) as u64,
            )
        };
        let start = Instant::now();
        let end = start + dur;
        // desynchronised starts: each flow begins within one mean gap
        let mut next_start: Vec<Instant> = (0..n)
            .map(|_| {
                start
                    + Duration::from_nanos(
                        ((self.gap_min_ns + self.gap_max_ns) / 2.0 * rng.unit()) as u64,
                    )
            })
            .collect();
        let mut left = vec![0u32; n];
        let mut pos = vec![0u32; n];
        let mut rr: VecDeque<usize> = VecDeque::with_capacity(n);
        let tick = Duration::from_nanos(self.tick_ns.max(1.0) as u64);
        let mut next_tx = start;
        let (mut pkts, mut bytes, mut msgs, mut errs) = (0u64, 0u64, 0u64, 0u64);
        let mut flushed = Instant::now();
        loop {
            let now = Instant::now();
            if now >= end || stop.load(Ordering::Relaxed) {
                break;
            }
            for f in 0..n {
                if left[f] == 0 && next_start[f] <= now {
                    left[f] = self.burst;
                    pos[f] = 0;
                    rr.push_back(f);
                }
            }
            let Some(&f) = rr.front() else {
                let t = next_start
                    .iter()
                    .min()
                    .copied()
                    .unwrap_or(end)
                    .min(end)
                    .min(now + Duration::from_millis(5));
                wait_until(t);
                continue;
            };
            if next_tx > now {
                wait_until(next_tx);
                continue;
            }
            rr.pop_front();
            let variant = match (self.burst, pos[f]) {
                (1, _) => 3,
                (_, 0) => 0,
                (b, p) if p + 1 == b => 2,
                _ => 1,
            };
            let frame = &self.frames[f][variant];
            if sock.send(frame).unwrap_or(false) {
                pkts += 1;
                bytes += frame.len() as u64;
            } else {
                errs += 1;
            }
            next_tx = next_tx.max(now) + tick;
            pos[f] += 1;
            left[f] -= 1;
            if left[f] == 0 {
                msgs += 1;
                next_start[f] = Instant::now() + gap(&mut rng);
            } else {
                rr.push_back(f);
            }
            if now.duration_since(flushed) > Duration::from_millis(20) {
                stats.pkts.store(pkts, Ordering::Relaxed);
                stats.bytes.store(bytes, Ordering::Relaxed);
                stats.messages.store(msgs, Ordering::Relaxed);
                stats.errors.store(errs, Ordering::Relaxed);
                flushed = now;
            }
        }
        stats.pkts.store(pkts, Ordering::SeqCst);
        stats.bytes.store(bytes, Ordering::SeqCst);
        stats.messages.store(msgs, Ordering::SeqCst);
        stats.errors.store(errs, Ordering::SeqCst);
        Ok(start.elapsed().as_secs_f64())
    }
}

/// Sleeps most of the way, spins the rest.
pub(crate) fn wait_until(t: Instant) {
    loop {
        let now = Instant::now();
        if now >= t {
            return;
        }
        let left = t - now;
        if left > Duration::from_micros(150) {
            std::thread::sleep(left - Duration::from_micros(100));
        } else {
            std::hint::spin_loop();
        }
    }
}
