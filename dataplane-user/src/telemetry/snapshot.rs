//! A running instance's counters, read from its pins, as one snapshot (the
//! `stats`, `watch` and metrics views all render this).

use anyhow::Result;
use dataplane_common::events::RateLimit;
use dataplane_common::lb::FarCounters;

use crate::sys;
use crate::telemetry::counters::Pinned;
use crate::telemetry::counters::{read_fwd_counters, read_global_counters, read_port_counters};
use crate::telemetry::stats;

/// Reads every configured port's counters from a running instance.
pub fn snapshot(instance: &str) -> Result<stats::Snapshot> {
    let pinned = Pinned::open(instance)?;
    let mut ports = Vec::new();
    for item in pinned.port_config.iter() {
        let (ifindex, cfg) = item?;
        let c = read_port_counters(&pinned.port_counters, cfg.port_id)?;
        let f = read_fwd_counters(&pinned.fwd_counters, cfg.port_id)?;
        let name = sys::ifname(ifindex).unwrap_or_else(|| format!("ifindex{ifindex}"));
        ports.push((name, ifindex, cfg.port_id, c, f));
    }
    ports.sort_by_key(|p| p.2);
    let g = read_global_counters(&pinned.global_counters)?;
    let mut snap = stats::Snapshot::new(instance, ports, g);
    let now = sys::monotonic_ns();
    let xmit = crate::telemetry::xmit::errors_by_ifindex(&sys::pin_dir(instance)).ok();
    // absent in a data plane of an older build
    let pause_runs: Option<aya::maps::Array<_, dataplane_common::buffer::PauseRuns>> =
        crate::telemetry::counters::open_pinned(instance, dataplane_common::names::map::PAUSE_RUNS)
            .ok()
            .and_then(|m| aya::maps::Array::try_from(m).ok());
    let wall_ns = sys::realtime_ns();
    // absent in a data plane of an older build
    let pg_drops: Option<aya::maps::PerCpuArray<_, [u64; 8]>> =
        crate::telemetry::counters::open_pinned(instance, dataplane_common::names::map::PG_DROPS)
            .ok()
            .and_then(|m| aya::maps::PerCpuArray::try_from(m).ok());
    // absent in a data plane of an older build
    let drop_bytes: Option<aya::maps::PerCpuArray<_, [u64; 8]>> =
        crate::telemetry::counters::open_pinned(instance, dataplane_common::names::map::DROP_BYTES)
            .ok()
            .and_then(|m| aya::maps::PerCpuArray::try_from(m).ok());
    for p in &mut snap.ports {
        let per_cpu = pinned.lossless.get(&u32::from(p.port_id), 0)?;
        let mut lc = dataplane_common::buffer::LosslessCounters::ZERO;
        for c in per_cpu.iter() {
            lc.accumulate(c);
        }
        p.counters.extend(stats::lossless_fields(&lc));
        if let Some(Ok(per_cpu)) = drop_bytes.as_ref().map(|m| m.get(&u32::from(p.port_id), 0)) {
            for tc in 0..8 {
                let sum = per_cpu.iter().map(|b| b[tc]).sum();
                p.counters.insert(format!("queue_drop_bytes[{tc}]"), sum);
            }
        }
        let slot = usize::from(p.port_id);
        if modelled(&pinned, slot) {
            if let Some(Ok(per_cpu)) = pg_drops.as_ref().map(|m| m.get(&u32::from(p.port_id), 0)) {
                for tc in 0..8 {
                    let sum = per_cpu.iter().map(|d| d[tc]).sum();
                    p.counters.insert(format!("pg_drop[{tc}]"), sum);
                }
            }
            for tc in 0..8usize {
                if let Ok(q) = pinned.queues.get(&((slot * 8 + tc) as u32), 0) {
                    p.counters
                        .insert(format!("queue_bytes[{tc}]"), u64::from(q.bytes));
                    p.counters
                        .insert(format!("queue_watermark[{tc}]"), u64::from(q.peak_bytes));
                    p.counters
                        .insert(format!("queue_paused[{tc}]"), u64::from(q.is_paused(now)));
                    p.counters
                        .insert(format!("queue_tx_bytes[{tc}]"), q.tx_bytes);
                    let runs = pause_runs
                        .as_ref()
                        .map(|m| m.get(&((slot * 8 + tc) as u32), 0));
                    if let Some(Ok(r)) = runs {
                        let until = q.paused_until_ns;
                        p.counters
                            .insert(format!("rx_pause_transitions[{tc}]"), r.ended(until, now));
                        if let Some(ns) = r.recent_ns(until, now) {
                            p.counters.insert(format!("rx_pause_recent_ns[{tc}]"), ns);
                            // the run's start on the wall clock, microseconds
                            let ago = now.saturating_sub(r.start_ns);
                            p.counters.insert(
                                format!("rx_pause_recent_at_us[{tc}]"),
                                wall_ns.saturating_sub(ago) / 1000,
                            );
                        }
                    }
                }
                if let Ok(st) = pinned.pause_stats.get(&((slot * 8 + tc) as u32), 0) {
                    p.counters
                        .insert(format!("rx_pause_ns[{tc}]"), st.total_at(now));
                }
                if let Ok(w) = pinned.wd_stats.get(&((slot * 8 + tc) as u32), 0) {
                    p.counters.insert(format!("pfcwd_watched[{tc}]"), w.watched);
                    let last = crate::lossless::watchdog::last_storm(&w, &lc, tc);
                    for (k, v) in ["tx_last_ok", "tx_last_drop", "rx_last_ok", "rx_last_drop"]
                        .iter()
                        .zip(last)
                    {
                        p.counters.insert(format!("pfcwd_{k}[{tc}]"), v);
                    }
                    p.counters
                        .insert(format!("pfcwd_storm_detected[{tc}]"), w.storm_detected);
                    p.counters
                        .insert(format!("pfcwd_storm_restored[{tc}]"), w.storm_restored);
                    p.counters
                        .insert(format!("pfcwd_in_storm[{tc}]"), w.in_storm);
                }
            }
        }
        // redirected frames the kernel failed to transmit
        if let Some(x) = &xmit {
            p.counters.insert(
                "tx_xdp_xmit_err".into(),
                x.get(&p.ifindex).copied().unwrap_or(0),
            );
        }
        if let Ok(r) = pinned.port_rate.get(&u32::from(p.port_id), 0) {
            p.speed_mbps = r.speed_mbps;
            let u = r.utilisation(now);
            p.tx_utilisation_pct =
                (u != dataplane_common::lb::UTIL_UNKNOWN).then(|| f64::from(u) / 10.0);
        }
    }
    for (id, grp) in pinned.groups.entries()? {
        let n = grp.n_members.min(dataplane_common::lb::MAX_MEMBERS as u8);
        let live = (0..n).filter(|&i| grp.eligible(i)).count();
        snap.groups.push(stats::GroupStats {
            id,
            mode: dataplane_config::MODES
                .get(grp.mode as usize)
                .unwrap_or(&"?")
                .to_string(),
            members: n as usize,
            live,
        });
    }
    snap.groups.sort_by_key(|g| g.id);
    add_watermarks(instance, &mut snap, &pinned);
    // absent in a data plane of an older build
    if let Ok(rate) =
        crate::telemetry::counters::open_pinned(instance, dataplane_common::names::map::DROP_RATE)
            .and_then(|m| Ok(aya::maps::PerCpuArray::<_, RateLimit>::try_from(m)?))
    {
        if let Ok(per_cpu) = rate.get(&0, 0) {
            snap.drop_events_posted = per_cpu.iter().map(|r| r.posted).sum();
            snap.drop_events_suppressed = per_cpu.iter().map(|r| r.suppressed).sum();
        }
    }
    // absent in a data plane of an older build
    if let Ok(far) = crate::telemetry::counters::open_pinned(
        instance,
        dataplane_common::names::map::FAR_COUNTERS,
    )
    .and_then(|m| Ok(aya::maps::PerCpuArray::<_, FarCounters>::try_from(m)?))
    {
        if let Ok(per_cpu) = far.get(&0, 0) {
            let c = per_cpu
                .iter()
                .fold(FarCounters::default(), |a, c| a.plus(c));
            snap.far_notes = stats::FarNotes {
                sent: c.sent,
                send_failed: c.send_failed,
                received: c.received,
                malformed: c.malformed,
                table_full: c.table_full,
            };
        }
    }
    if pinned.pfc_path.get(&0, 0).ok() == Some(dataplane_common::buffer::PFC_PATH_DATAPLANE) {
        snap.pfc_tx_path = "dataplane".into();
    }
    Ok(snap)
}

/// The watermarks of every port in the buffer model (none when the data
/// plane has no `WATERMARKS` map: an older build).
fn add_watermarks(instance: &str, snap: &mut stats::Snapshot, pinned: &Pinned) {
    use crate::telemetry::watermarks::{self, Kind, Window};
    let Ok(f) = watermarks::read(instance) else {
        return;
    };
    let marks = |w: Window, slot: usize| {
        let m = f.window(w);
        let of = |k: Kind| std::array::from_fn(|tc| m[slot * 8 + tc][k as usize]);
        stats::KindMarks {
            queue_shared: of(Kind::QueueShared),
            pg_shared: of(Kind::PgShared),
            pg_headroom: of(Kind::PgHeadroom),
        }
    };
    for p in &mut snap.ports {
        let slot = usize::from(p.port_id);
        if modelled(pinned, slot) {
            p.watermarks = Some(stats::PortWatermarks {
                periodic: marks(Window::Periodic, slot),
                persistent: marks(Window::Persistent, slot),
                user: marks(Window::User, slot),
            });
        }
    }
}

/// Whether port slot `slot` takes part in the buffer model.
fn modelled(pinned: &Pinned, slot: usize) -> bool {
    slot < dataplane_common::lossless::MODEL_PORTS
        && pinned
            .port_buf
            .get(&(slot as u32), 0)
            .map(|b| b.enabled != 0)
            .unwrap_or(false)
}
