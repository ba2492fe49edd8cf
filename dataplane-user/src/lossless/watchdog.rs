//! The PFC watchdog (SONiC pfcwd semantics) in the controller: polls every
//! lossless queue of the buffer model and, on a storm, sets the queue's
//! storm action in the data plane (drop: its packets are dropped and its
//! PFC ignored; forward: its PFC is ignored); restores when no PFC frame
//! arrived for the restoration time.
//!
//! The decision is `dataplane_common::lossless::PfcWd::poll`. Its PFC
//! observation is the parser's raw receive counter (`rx_pfc[prio]`), which
//! counts every PFC frame even while the storm action ignores them, so
//! restoration never fires while the storm goes on (the storm/restore loop
//! SONiC users report when restoration relies on a counter the action
//! hides).

use anyhow::{Context, Result};
use aya::maps::{Array, MapData, PerCpuArray};
use aya::Ebpf;
use dataplane_common::buffer::{PortBuffer, WdStat, NUM_TC, STORM_DROP, STORM_FORWARD, STORM_NONE};
use dataplane_common::lossless::{
    EgressQueue, PfcWd, PfcWdConfig, WdEvent, WdObservation, MODEL_PORTS, WD_ACTION_DROP,
    WD_ACTION_FORWARD,
};
use dataplane_common::maps::PortCounters;
use dataplane_common::names;

use dataplane_config::Plan;

struct Watched {
    port: usize,
    prio: usize,
    wd: PfcWd,
    last_tx: u64,
    last_rx_pfc: u64,
}

pub struct Watchdog {
    log: crate::telemetry::events::EventLog,
    cfg: PfcWdConfig,
    watched: Vec<Watched>,
    pub detected: u64,
    pub restored: u64,
}

impl Watchdog {
    /// Every (port, lossless priority) of the model.
    pub fn new(plan: &Plan) -> Option<Watchdog> {
        let (cfg, _) = plan.pfcwd?;
        let mut watched = Vec::new();
        for (i, p) in plan.ports.iter().enumerate().take(MODEL_PORTS) {
            for prio in 0..NUM_TC {
                if p.config.pfc_enable & (1 << prio) != 0 {
                    watched.push(Watched {
                        port: i,
                        prio,
                        wd: PfcWd::ZERO,
                        last_tx: 0,
                        last_rx_pfc: 0,
                    });
                }
            }
        }
        Some(Watchdog {
            log: crate::telemetry::events::EventLog::open(&plan.instance),
            cfg,
            watched,
            detected: 0,
            restored: 0,
        })
    }

    /// One poll at `now_ns`; returns the events as log lines.
    pub fn poll(&mut self, bpf: &mut Ebpf, plan: &Plan, now_ns: u64) -> Result<Vec<String>> {
        let mut lines = Vec::new();
        let mut changes = Vec::new();
        {
            let queues: Array<&MapData, EgressQueue> =
                Array::try_from(bpf.map(names::map::QUEUES).context(names::map::QUEUES)?)?;
            let counters: PerCpuArray<&MapData, PortCounters> = PerCpuArray::try_from(
                bpf.map(names::map::PORT_COUNTERS)
                    .context(names::map::PORT_COUNTERS)?,
            )?;
            for w in &mut self.watched {
                let q = queues.get(&((w.port * NUM_TC + w.prio) as u32), 0)?;
                let port_id = u32::from(plan.ports[w.port].config.port_id);
                let rx_pfc: u64 = counters
                    .get(&port_id, 0)?
                    .iter()
                    .map(|c| c.rx_pfc[w.prio])
                    .sum();
                let obs = WdObservation {
                    paused: q.is_paused(now_ns),
                    has_bytes: q.bytes > 0,
                    tx_bytes_delta: q.tx_bytes.wrapping_sub(w.last_tx),
                    rx_pfc_delta: rx_pfc.wrapping_sub(w.last_rx_pfc),
                };
                w.last_tx = q.tx_bytes;
                w.last_rx_pfc = rx_pfc;
                match w.wd.poll(&self.cfg, now_ns, &obs) {
                    WdEvent::None => {}
                    WdEvent::StormDetected => {
                        self.detected += 1;
                        let action = match self.cfg.action {
                            WD_ACTION_DROP => STORM_DROP,
                            WD_ACTION_FORWARD => STORM_FORWARD,
                            _ => STORM_NONE,
                        };
                        changes.push((w.port, w.prio, action, true));
                        self.log.record(
                            "pfcwd_storm_detected",
                            &plan.ports[w.port].name,
                            w.prio as u8,
                            &format!(
                                "{} bytes queued, paused, nothing sent for {} ms",
                                q.bytes, self.cfg.detection_time_ms
                            ),
                        );
                        lines.push(format!(
                            "pfcwd: storm detected on {} priority {} (paused, {} bytes queued, nothing sent for {} ms); action {}",
                            plan.ports[w.port].name,
                            w.prio,
                            q.bytes,
                            self.cfg.detection_time_ms,
                            ["drop", "forward", "alert"][usize::from(self.cfg.action.min(2))]
                        ));
                    }
                    WdEvent::StormRestored => {
                        self.restored += 1;
                        changes.push((w.port, w.prio, STORM_NONE, false));
                        self.log.record(
                            "pfcwd_storm_restored",
                            &plan.ports[w.port].name,
                            w.prio as u8,
                            &format!("no PFC for {} ms", self.cfg.restoration_time_ms),
                        );
                        lines.push(format!(
                            "pfcwd: storm restored on {} priority {} (no PFC for {} ms)",
                            plan.ports[w.port].name, w.prio, self.cfg.restoration_time_ms
                        ));
                    }
                }
            }
        }
        if !changes.is_empty() {
            {
                let mut pb: Array<&mut MapData, PortBuffer> = Array::try_from(
                    bpf.map_mut(names::map::PORT_BUF)
                        .context(names::map::PORT_BUF)?,
                )?;
                for &(port, prio, action, _) in &changes {
                    let mut v = pb.get(&(port as u32), 0)?;
                    v.storm[prio] = action;
                    pb.set(port as u32, v, 0)?;
                }
            }
            let mut st: Array<&mut MapData, WdStat> = Array::try_from(
                bpf.map_mut(names::map::WD_STATS)
                    .context(names::map::WD_STATS)?,
            )?;
            for &(port, prio, _, detected) in &changes {
                let i = (port * NUM_TC + prio) as u32;
                let mut v = st.get(&i, 0)?;
                if detected {
                    v.storm_detected += 1;
                    v.in_storm = 1;
                } else {
                    v.storm_restored += 1;
                    v.in_storm = 0;
                }
                st.set(i, v, 0)?;
            }
        }
        Ok(lines)
    }
}
