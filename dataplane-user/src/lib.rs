//! The `dataplane` controller as a library: configuration model and
//! validation, loading and attaching the eBPF programs, writing tables,
//! reading counters.

pub mod bench;
pub mod config;
pub mod dataplane;
pub mod stats;
pub mod sys;
pub mod tables;
pub mod groups;
pub mod pfc;
pub mod testrun;

use anyhow::Result;

/// Reads every configured port's counters from a running instance.
pub fn snapshot(instance: &str) -> Result<stats::Snapshot> {
    let pinned = dataplane::Pinned::open(instance)?;
    let mut ports = Vec::new();
    for item in pinned.port_config.iter() {
        let (ifindex, cfg) = item?;
        let c = dataplane::read_port_counters(&pinned.port_counters, cfg.port_id)?;
        let f = dataplane::read_fwd_counters(&pinned.fwd_counters, cfg.port_id)?;
        let name = sys::ifname(ifindex).unwrap_or_else(|| format!("ifindex{ifindex}"));
        ports.push((name, ifindex, cfg.port_id, c, f));
    }
    ports.sort_by_key(|p| p.2);
    let g = dataplane::read_global_counters(&pinned.global_counters)?;
    Ok(stats::Snapshot::new(instance, ports, g))
}
