//! The PFC watchdog (SONiC pfcwd semantics) in the controller: polls every
//! lossless queue of the buffer model and, on a storm, sets the queue's
//! storm action in the data plane (drop: its packets and those its peer
//! sends on the priority are dropped and its PFC ignored; forward: its PFC
//! is ignored; alert: only the event and the counters); restores when no
//! PFC frame arrived for the restoration time (alert: when the storm
//! condition ends).
//!
//! The decision is `dataplane_common::lossless::PfcWd::poll`. Its PFC
//! observation is the parser's raw receive counter of pausing frames
//! (`rx_pfc_xoff[prio]`), which counts every PFC frame even while the storm
//! action ignores them, so restoration never fires while the storm goes on
//! (the storm/restore loop SONiC shows when every lossless priority of a
//! port is stormed and the ASIC stops counting PFC, sonic-buildimage#29203),
//! and XON frames never keep a storm alive (sonic-swss#4581).
//!
//! Statistics as sonic-swss keeps them: storms detected / restored and
//! status in `WD_STATS`; the packets of a stormed queue sent / dropped and
//! those received on its priority passed / dropped are counted per CPU by
//! the data plane while the action is in force (`wd_tx_ok`, `wd_drop`,
//! `wd_rx_ok`, `wd_rx_drop`); the last storm's figures are those minus
//! their values at its detection (kept in `WD_STATS`).

use anyhow::{Context, Result};
use aya::maps::{Array, MapData, PerCpuArray};
use aya::Ebpf;
use dataplane_common::buffer::{
    LosslessCounters, PauseStat, PortBuffer, WdStat, NUM_TC, STORM_DROP, STORM_FORWARD, STORM_NONE,
};
use dataplane_common::lossless::{
    EgressQueue, PfcWd, PfcWdConfig, WdEvent, WdObservation, MODEL_PORTS, WD_ACTION_DROP,
    WD_ACTION_FORWARD,
};
use dataplane_common::maps::PortCounters;
use dataplane_common::names;

use crate::telemetry::stats::Snapshot;
use dataplane_config::Plan;
use serde::{Deserialize, Serialize};

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
    /// `WD_STATS` marks the watched queues (done at the first poll).
    marked: bool,
    pub detected: u64,
    pub restored: u64,
}

/// The action's name in SONiC's words.
pub fn action_name(action: u8) -> &'static str {
    ["drop", "forward", "alert"][usize::from(action.min(2))]
}

/// Where a running controller keeps its watchdog configuration for `show
/// pfcwd config` (written at `up`).
pub fn config_path(instance: &str) -> std::path::PathBuf {
    std::path::Path::new(crate::sys::RUN_DIR).join(format!("{instance}.pfcwd.json"))
}

// The views `show pfcwd` renders (crate::show::pfcwd).

/// One port's watchdog configuration (a CONFIG_DB `PFC_WD|<port>` entry).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortWdConfig {
    pub port: String,
    /// "drop", "forward" or "alert".
    pub action: String,
    pub detection_time_ms: u32,
    pub restoration_time_ms: u32,
}

/// What `show pfcwd config` shows: the global poll interval
/// (`PFC_WD|GLOBAL` POLL_INTERVAL) and the watched ports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigView {
    pub poll_interval_ms: Option<u64>,
    pub ports: Vec<PortWdConfig>,
}

/// A queue's watchdog status (COUNTERS_DB `PFC_WD_STATUS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum QueueStatus {
    Operational,
    Stormed,
    /// Not watched (SONiC prints "N/A").
    NotWatched,
}

impl QueueStatus {
    pub(crate) fn text(self) -> &'static str {
        match self {
            QueueStatus::Operational => "operational",
            QueueStatus::Stormed => "stormed",
            QueueStatus::NotWatched => "N/A",
        }
    }
}

/// One queue's watchdog statistics (sonic-swss `PfcWdQueueStats`):
/// storms detected and restored, and the queue's packets transmitted and
/// dropped and its priority group's packets received and dropped while in
/// storm, in total and for the last storm.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueWdStats {
    pub port: String,
    pub queue: u8,
    pub status: QueueStatus,
    pub storm_detected: u64,
    pub storm_restored: u64,
    pub tx_ok: u64,
    pub tx_drop: u64,
    pub rx_ok: u64,
    pub rx_drop: u64,
    pub tx_last_ok: u64,
    pub tx_last_drop: u64,
    pub rx_last_ok: u64,
    pub rx_last_drop: u64,
}

impl QueueWdStats {
    /// The queue's name as SONiC writes it: `<port>:<index>`.
    pub fn name(&self) -> String {
        format!("{}:{}", self.port, self.queue)
    }

    /// The five "a/b" pairs, in STATS_DESCRIPTION order.
    pub(crate) fn pairs(&self) -> [(u64, u64); 5] {
        [
            (self.storm_detected, self.storm_restored),
            (self.tx_ok, self.tx_drop),
            (self.rx_ok, self.rx_drop),
            (self.tx_last_ok, self.tx_last_drop),
            (self.rx_last_ok, self.rx_last_drop),
        ]
    }
}

/// The watchdog configuration of `plan` as `show pfcwd config` shows it:
/// every model port with a lossless priority, when `[pfcwd]` is on.
pub fn config_view(plan: &Plan) -> ConfigView {
    let Some((cfg, poll)) = plan.pfcwd else {
        return ConfigView::default();
    };
    ConfigView {
        poll_interval_ms: Some(poll),
        ports: plan
            .ports
            .iter()
            .take(MODEL_PORTS)
            .filter(|p| p.config.pfc_enable != 0)
            .map(|p| PortWdConfig {
                port: p.name.clone(),
                action: action_name(cfg.action).into(),
                detection_time_ms: cfg.detection_time_ms,
                restoration_time_ms: cfg.restoration_time_ms,
            })
            .collect(),
    }
}

/// Writes `plan`'s [`config_view`] for `show pfcwd config`.
pub fn write_config(plan: &Plan) -> Result<()> {
    let path = config_path(&plan.instance);
    let _ = std::fs::create_dir_all(crate::sys::RUN_DIR);
    std::fs::write(&path, serde_json::to_vec_pretty(&config_view(plan))?)
        .with_context(|| format!("writing {}", path.display()))
}

/// The watchdog statistics of every queue of the model's ports in a
/// snapshot, as `show pfcwd stats` shows them.
pub fn stats_view(snap: &Snapshot) -> Vec<QueueWdStats> {
    let mut v = Vec::new();
    for p in &snap.ports {
        let get = |k: &str, tc: usize| p.counters.get(&format!("{k}[{tc}]")).copied();
        for tc in 0..NUM_TC {
            let Some(watched) = get("pfcwd_watched", tc) else {
                continue;
            };
            let g = |k: &str| get(k, tc).unwrap_or(0);
            v.push(QueueWdStats {
                port: p.name.clone(),
                queue: tc as u8,
                status: match (watched, g("pfcwd_in_storm")) {
                    (0, _) => QueueStatus::NotWatched,
                    (_, 0) => QueueStatus::Operational,
                    _ => QueueStatus::Stormed,
                },
                storm_detected: g("pfcwd_storm_detected"),
                storm_restored: g("pfcwd_storm_restored"),
                tx_ok: g("wd_tx_ok"),
                tx_drop: g("wd_drop"),
                rx_ok: g("wd_rx_ok"),
                rx_drop: g("wd_rx_drop"),
                tx_last_ok: g("pfcwd_tx_last_ok"),
                tx_last_drop: g("pfcwd_tx_last_drop"),
                rx_last_ok: g("pfcwd_rx_last_ok"),
                rx_last_drop: g("pfcwd_rx_last_drop"),
            });
        }
    }
    v
}

/// The (port, priority) counters a storm's LAST figures start from.
fn storm_counts(lc: &LosslessCounters, prio: usize) -> [u64; 4] {
    [
        lc.wd_tx_ok[prio],
        lc.wd_drop[prio],
        lc.wd_rx_ok[prio],
        lc.wd_rx_drop[prio],
    ]
}

/// A queue's last-storm counts: the data plane's storm counters minus
/// those at the last detection, as (TX OK, TX DROP, RX OK, RX DROP).
pub fn last_storm(w: &WdStat, lc: &LosslessCounters, prio: usize) -> [u64; 4] {
    let now = storm_counts(lc, prio);
    let base = [w.base_tx_ok, w.base_tx_drop, w.base_rx_ok, w.base_rx_drop];
    [0, 1, 2, 3].map(|i| now[i].saturating_sub(base[i]))
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
            marked: false,
            detected: 0,
            restored: 0,
        })
    }

    /// Marks the watched queues in `WD_STATS` (and only them), and adopts
    /// the storms in force from an earlier controller of the data plane
    /// (a restart or upgrade keeps the maps): such a queue is in storm here
    /// too and is restored by this watchdog's rules. Returns a line per
    /// adopted storm.
    fn mark(&mut self, bpf: &mut Ebpf, plan: &Plan) -> Result<Vec<String>> {
        let pb: Array<&MapData, PortBuffer> = Array::try_from(
            bpf.map(names::map::PORT_BUF)
                .context(names::map::PORT_BUF)?,
        )?;
        let flags: Vec<[u8; NUM_TC]> = (0..MODEL_PORTS)
            .map(|p| pb.get(&(p as u32), 0).map(|b| b.storm))
            .collect::<Result<_, _>>()?;
        let mut st: Array<&mut MapData, WdStat> = Array::try_from(
            bpf.map_mut(names::map::WD_STATS)
                .context(names::map::WD_STATS)?,
        )?;
        let mut lines = Vec::new();
        for (port, port_flags) in flags.iter().enumerate() {
            for (prio, &flag) in port_flags.iter().enumerate() {
                let i = (port * NUM_TC + prio) as u32;
                let old = st.get(&i, 0)?;
                let mut v = old;
                match self
                    .watched
                    .iter_mut()
                    .find(|w| w.port == port && w.prio == prio)
                {
                    Some(w) => {
                        v.watched = 1;
                        if v.in_storm != 0 || flag != STORM_NONE {
                            w.wd.storm = 1;
                            v.in_storm = 1;
                            lines.push(format!(
                                "pfcwd: storm in force on {} priority {prio} adopted from the previous controller",
                                plan.ports[port].name
                            ));
                        }
                    }
                    None => {
                        v.watched = 0;
                        v.in_storm = 0;
                    }
                }
                if v != old {
                    st.set(i, v, 0)?;
                }
            }
        }
        self.marked = true;
        Ok(lines)
    }

    /// One poll at `now_ns`; returns the events as log lines.
    pub fn poll(&mut self, bpf: &mut Ebpf, plan: &Plan, now_ns: u64) -> Result<Vec<String>> {
        let mut lines = Vec::new();
        if !self.marked {
            lines = self.mark(bpf, plan)?;
        }
        // (port, prio, storm action, detected, storm counters now)
        let mut changes = Vec::new();
        {
            let queues: Array<&MapData, EgressQueue> =
                Array::try_from(bpf.map(names::map::QUEUES).context(names::map::QUEUES)?)?;
            let counters: PerCpuArray<&MapData, PortCounters> = PerCpuArray::try_from(
                bpf.map(names::map::PORT_COUNTERS)
                    .context(names::map::PORT_COUNTERS)?,
            )?;
            let pause: Array<&MapData, PauseStat> = Array::try_from(
                bpf.map(names::map::PAUSE_STATS)
                    .context(names::map::PAUSE_STATS)?,
            )?;
            let lossless: PerCpuArray<&MapData, LosslessCounters> = PerCpuArray::try_from(
                bpf.map(names::map::LOSSLESS_COUNTERS)
                    .context(names::map::LOSSLESS_COUNTERS)?,
            )?;
            for w in &mut self.watched {
                let i = (w.port * NUM_TC + w.prio) as u32;
                let q = queues.get(&i, 0)?;
                let port_id = u32::from(plan.ports[w.port].config.port_id);
                // the parser's raw count of pausing frames (before any
                // storm action: the action never hides its own storm)
                let rx_pfc: u64 = counters
                    .get(&port_id, 0)?
                    .iter()
                    .map(|c| c.rx_pfc_xoff[w.prio])
                    .sum();
                let obs = WdObservation {
                    paused: q.is_paused(now_ns),
                    has_bytes: q.bytes > 0,
                    tx_bytes_delta: q.tx_bytes.wrapping_sub(w.last_tx),
                    rx_pfc_delta: rx_pfc.wrapping_sub(w.last_rx_pfc),
                    // the latest frame the queue honoured
                    last_pfc_ns: pause.get(&i, 0)?.start_ns,
                };
                w.last_tx = q.tx_bytes;
                w.last_rx_pfc = rx_pfc;
                let ev = w.wd.poll(&self.cfg, now_ns, &obs);
                if ev == WdEvent::None {
                    continue;
                }
                let mut lc = LosslessCounters::ZERO;
                for c in lossless.get(&port_id, 0)?.iter() {
                    lc.accumulate(c);
                }
                let name = &plan.ports[w.port].name;
                if ev == WdEvent::StormDetected {
                    self.detected += 1;
                    let action = match self.cfg.action {
                        WD_ACTION_DROP => STORM_DROP,
                        WD_ACTION_FORWARD => STORM_FORWARD,
                        _ => STORM_NONE,
                    };
                    changes.push((w.port, w.prio, action, true, storm_counts(&lc, w.prio)));
                    let what = format!(
                        "paused, {} bytes queued, nothing sent and PFC arriving for {} ms",
                        q.bytes, self.cfg.detection_time_ms
                    );
                    self.log.record(
                        "pfcwd_storm_detected",
                        name,
                        w.prio as u8,
                        &format!("{what}; action {}", action_name(self.cfg.action)),
                    );
                    lines.push(format!(
                        "pfcwd: storm detected on {name} priority {} ({what}); action {}",
                        w.prio,
                        action_name(self.cfg.action)
                    ));
                } else {
                    self.restored += 1;
                    changes.push((w.port, w.prio, STORM_NONE, false, [0; 4]));
                    let why = if self.cfg.action == WD_ACTION_DROP
                        || self.cfg.action == WD_ACTION_FORWARD
                    {
                        format!("no PFC for {} ms", self.cfg.restoration_time_ms)
                    } else {
                        "the storm condition ended".to_string()
                    };
                    self.log
                        .record("pfcwd_storm_restored", name, w.prio as u8, &why);
                    lines.push(format!(
                        "pfcwd: storm restored on {name} priority {} ({why})",
                        w.prio
                    ));
                }
            }
        }
        if !changes.is_empty() {
            {
                let mut pb: Array<&mut MapData, PortBuffer> = Array::try_from(
                    bpf.map_mut(names::map::PORT_BUF)
                        .context(names::map::PORT_BUF)?,
                )?;
                for &(port, prio, action, _, _) in &changes {
                    let mut v = pb.get(&(port as u32), 0)?;
                    v.storm[prio] = action;
                    pb.set(port as u32, v, 0)?;
                }
            }
            let mut st: Array<&mut MapData, WdStat> = Array::try_from(
                bpf.map_mut(names::map::WD_STATS)
                    .context(names::map::WD_STATS)?,
            )?;
            for &(port, prio, _, detected, base) in &changes {
                let i = (port * NUM_TC + prio) as u32;
                let mut v = st.get(&i, 0)?;
                if detected {
                    v.storm_detected += 1;
                    v.in_storm = 1;
                    [v.base_tx_ok, v.base_tx_drop, v.base_rx_ok, v.base_rx_drop] = base;
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
