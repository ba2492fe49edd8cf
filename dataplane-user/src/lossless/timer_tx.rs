//! The timer path's sender: what the buffer model's tick queued
//! (`PFC_QUEUE`), sent by the timer thread through its own emitter.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};

use anyhow::{anyhow, bail, Result};
use aya::Ebpf;
use dataplane_common::buffer::PfcEvent;
use dataplane_common::names;
use dataplane_config::Plan;

use crate::lossless::emitter::Emitter;
use crate::ports::Resolved;

/// The timer path's sender, owned by the timer thread: after a tick that
/// queued decisions it pops every one (`PFC_QUEUE`) and sends its frame
/// through its own [`Emitter`] (AF_PACKET, the same bytes, the same event
/// log and latency record), before the thread sleeps again.
pub struct TimerTx {
    queue: OwnedFd,
    /// Its sender, latency record and counts.
    pub emitter: Emitter,
}

impl TimerTx {
    pub fn open(bpf: &Ebpf, plan: &Plan, ports: &[Resolved]) -> Result<TimerTx> {
        let queue = match bpf
            .map(names::map::PFC_QUEUE)
            .ok_or_else(|| anyhow!("map {} missing", names::map::PFC_QUEUE))?
        {
            aya::maps::Map::Queue(d) => d.fd().as_fd().try_clone_to_owned()?,
            _ => bail!("map {} is not a queue", names::map::PFC_QUEUE),
        };
        Ok(TimerTx {
            queue,
            emitter: Emitter::open(plan, ports)?,
        })
    }

    /// Pops and sends every queued decision; returns how many.
    pub fn send_all(&mut self) -> usize {
        let mut n = 0;
        while let Some(v) = crate::sys::queue_pop(self.queue.as_raw_fd()) {
            // SAFETY: the data plane queues PfcEvent records; read unaligned.
            let ev: PfcEvent = unsafe { std::ptr::read_unaligned(v.as_ptr() as *const PfcEvent) };
            if let Err(e) = self.emitter.handle(&ev) {
                crate::log::error(&format!("pfc: timer path: {e:#}"));
            }
            n += 1;
        }
        n
    }
}
