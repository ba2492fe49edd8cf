//! The controller's half of the lossless stage: writing the buffer model's
//! tables, running its timer, and sending the PFC frames the data plane asks
//! for (XDP cannot create packets).

use crate::lossless::emitter::realtime;
use crate::lossless::timer_tx::TimerTx;
use dataplane_common::names;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use aya::maps::{Array, MapData};
use aya::programs::Xdp;
use aya::Ebpf;
use dataplane_common::buffer::PortBuffer;
use dataplane_common::lossless::{SharedPool, MODEL_PORTS};

use dataplane_config::Plan;

/// Writes PORT_BUF (every model slot: configured ports enabled, the rest
/// disabled) and the pool size. Without a `[buffer]` section every slot is
/// disabled and the model is off.
pub fn write_buffer(bpf: &mut Ebpf, plan: &Plan) -> Result<usize> {
    let mut n = 0;
    let mut pb: Array<&mut MapData, PortBuffer> = Array::try_from(
        bpf.map_mut(names::map::PORT_BUF)
            .context(names::map::PORT_BUF)?,
    )?;
    for slot in 0..MODEL_PORTS {
        let cur = pb.get(&(slot as u32), 0)?;
        let v = plan
            .buffer
            .as_ref()
            .and_then(|b| b.ports.get(slot).copied())
            .unwrap_or(PortBuffer { enabled: 0, ..cur });
        // the watchdog's storm state belongs to the running controller (a
        // new one adopts it: `watchdog::Watchdog`); a queue no longer
        // watched (no [pfcwd], not lossless) leaves its storm
        let lossless = plan
            .ports
            .get(slot)
            .filter(|_| plan.pfcwd.is_some())
            .map_or(0, |p| p.config.pfc_enable);
        let mut storm = cur.storm;
        for (prio, s) in storm.iter_mut().enumerate() {
            if lossless & (1 << prio) == 0 {
                *s = dataplane_common::buffer::STORM_NONE;
            }
        }
        let v = PortBuffer { storm, ..v };
        if v != cur {
            pb.set(slot as u32, v, 0)?;
            n += 1;
        }
    }
    if let Some(b) = &plan.buffer {
        let mut pool: Array<&mut MapData, SharedPool> =
            Array::try_from(bpf.map_mut(names::map::POOL).context(names::map::POOL)?)?;
        let cur = pool.get(&0, 0)?;
        if cur.size != b.pool_size {
            pool.set(
                0,
                SharedPool {
                    size: b.pool_size,
                    used: cur.used,
                },
                0,
            )?;
            n += 1;
        }
    }
    Ok(n)
}

/// Runs `xdp_lossless_tick` every `period` on its own real-time thread,
/// with the BPF_PROG_TEST_RUN syscall on a clone of the program's fd; with
/// the data plane sending PFC (`tx`), a tick that queued frames (it returns
/// `XDP_TX`) is followed at once by their sending.
pub struct Ticker {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<Option<TimerTx>>>,
}

impl Ticker {
    pub fn start(bpf: &Ebpf, period: Duration, mut tx: Option<TimerTx>) -> Result<Ticker> {
        let prog: &Xdp = bpf
            .program(names::prog::XDP_LOSSLESS_TICK)
            .ok_or_else(|| anyhow!("program {} missing", names::prog::XDP_LOSSLESS_TICK))?
            .try_into()?;
        let fd: OwnedFd = prog.fd()?.try_clone()?.as_fd().try_clone_to_owned()?;
        let frame = [0u8; 64];
        crate::sys::prog_test_run(fd.as_raw_fd(), &frame, None, 1, 0)
            .context("running xdp_lossless_tick")?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name("lossless-tick".into())
            .spawn(move || {
                // refreshes and XON come from this timer: keep it punctual
                let _ = realtime(40);
                while !s.load(Ordering::Relaxed) {
                    match crate::sys::prog_test_run(fd.as_raw_fd(), &frame, None, 1, 0) {
                        Ok(out) if out.retval == XDP_TX => {
                            if let Some(tx) = tx.as_mut() {
                                tx.send_all();
                            }
                        }
                        Ok(_) => {}
                        Err(e) => {
                            crate::log::error(&format!("lossless tick: {e}"));
                            std::thread::sleep(Duration::from_secs(1));
                        }
                    }
                    std::thread::sleep(period);
                }
                tx
            })?;
        Ok(Ticker {
            stop,
            handle: Some(handle),
        })
    }

    /// Stops the thread; returns the timer path's sender with its figures.
    pub fn stop(mut self) -> Option<TimerTx> {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().and_then(|h| h.join().ok()).flatten()
    }
}

/// `xdp_lossless_tick`'s verdict when it queued PFC frames.
const XDP_TX: u32 = 3;

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}
