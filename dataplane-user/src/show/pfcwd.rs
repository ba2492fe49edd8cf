//! `show pfcwd config` and `show pfcwd stats` in sonic-utilities' layout
//! (`pfcwd/main.py`: the same headers, column order, cell texts, row order
//! and `tabulate(..., stralign='right', numalign='right',
//! tablefmt='simple')` formatting), plus JSON keyed by SONiC's own field
//! names (CONFIG_DB `PFC_WD`, COUNTERS_DB `PFC_WD_*`), so scripts written
//! against SONiC's databases read the same names.
//!
//! Port names: ours are the host's names of the interfaces the data plane
//! is attached to (`eth0`, `enp1s0f0`, a veth's name ...), not SONiC's
//! `EthernetN`. Without a port, SONiC lists only the COUNTERS_PORT_NAME_MAP
//! entries whose name starts with `Ethernet` (its front-panel ports); every
//! port of ours is such a port whatever its name, so all are listed, in
//! natural order. JSON: SONiC's `pfcwd show` has no `--json`; ours is this
//! project's own.
//!
//! Pure renderers: data in, text and JSON out. Reading a running instance
//! is `crate::lossless::watchdog::{config_view, stats_view}`.

use anyhow::Result;
use serde_json::{json, Map, Value};

use super::{Ctx, Output, Target};
pub use crate::lossless::watchdog::{ConfigView, PortWdConfig, QueueStatus, QueueWdStats};

pub const TARGETS: &[Target] = &[
    Target {
        name: "pfcwd config",
        args: Some("[PORT...]"),
        about: "PFC watchdog configuration per port (pfcwd show config)",
        show: show_config,
        clear: None,
    },
    Target {
        name: "pfcwd stats",
        args: Some("[PORT:QUEUE...]"),
        about: "PFC watchdog storms and packets per queue (pfcwd show stats; -e: zero rows too)",
        show: show_stats,
        clear: None,
    },
];

/// `show pfcwd config`: the running controller's watchdog configuration
/// (its state file).
fn show_config(ctx: &Ctx) -> Result<Output> {
    use crate::lossless::watchdog;
    let path = watchdog::config_path(&ctx.instance);
    let view: ConfigView = match std::fs::read(&path) {
        Ok(b) => serde_json::from_slice(&b).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
        Err(_) => anyhow::bail!(
            "no pfcwd configuration for instance {:?} ({}): is its controller running (`dataplane up`)?",
            ctx.instance,
            path.display()
        ),
    };
    Ok(Output::new(
        config_text(&view, &ctx.args),
        config_json(&view, &ctx.args),
    ))
}

/// `show pfcwd stats`: per-queue watchdog counters of the data plane.
fn show_stats(ctx: &Ctx) -> Result<Output> {
    let rows = crate::lossless::watchdog::stats_view(&ctx.snapshot()?);
    Ok(Output::new(
        stats_text(&rows, ctx.empty, &ctx.args),
        stats_json(&rows, ctx.empty, &ctx.args),
    ))
}

/// `show pfcwd config` headers (sonic-utilities CONFIG_HEADER).
pub const CONFIG_HEADER: [&str; 5] = [
    "PORT",
    "ACTION",
    "DETECTION TIME",
    "RESTORATION TIME",
    "HISTORY",
];

/// `show pfcwd stats` headers (sonic-utilities STATS_HEADER).
pub const STATS_HEADER: [&str; 7] = [
    "QUEUE",
    "STATUS",
    "STORM DETECTED/RESTORED",
    "TX OK/DROP",
    "RX OK/DROP",
    "TX LAST OK/DROP",
    "RX LAST OK/DROP",
];

/// COUNTERS_DB field names of the pairs, in STATS_DESCRIPTION order.
const STATS_FIELDS: [(&str, &str); 5] = [
    (
        "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED",
        "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED",
    ),
    (
        "PFC_WD_QUEUE_STATS_TX_PACKETS",
        "PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS",
    ),
    (
        "PFC_WD_QUEUE_STATS_RX_PACKETS",
        "PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS",
    ),
    (
        "PFC_WD_QUEUE_STATS_TX_PACKETS_LAST",
        "PFC_WD_QUEUE_STATS_TX_DROPPED_PACKETS_LAST",
    ),
    (
        "PFC_WD_QUEUE_STATS_RX_PACKETS_LAST",
        "PFC_WD_QUEUE_STATS_RX_DROPPED_PACKETS_LAST",
    ),
];

/// `show pfcwd config` as sonic-utilities prints it: the poll interval
/// line (only when a port is configured), then the table of ports in
/// natural order. `ports` keeps only the named ports (empty: all).
pub fn config_text(v: &ConfigView, ports: &[String]) -> String {
    let rows = config_rows(v, ports);
    let mut s = String::new();
    if !rows.is_empty() {
        if let Some(p) = v.poll_interval_ms {
            s.push_str(&format!("Changed polling interval to {p}ms\n"));
        }
    }
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|p| {
            vec![
                p.port.clone(),
                p.action.clone(),
                p.detection_time_ms.to_string(),
                p.restoration_time_ms.to_string(),
                // PFC statistics history is not kept: SONiC's default text
                "disable".to_string(),
            ]
        })
        .collect();
    s.push_str(&tabulate_simple(&CONFIG_HEADER, &table));
    s
}

/// `show pfcwd config --json`: `{"GLOBAL": {"POLL_INTERVAL": ..},
/// "<port>": {"action", "detection_time", "restoration_time",
/// "pfc_stat_history"}}`, CONFIG_DB's `PFC_WD` table.
pub fn config_json(v: &ConfigView, ports: &[String]) -> Value {
    let rows = config_rows(v, ports);
    let mut m = Map::new();
    if let Some(p) = v.poll_interval_ms {
        if !rows.is_empty() {
            m.insert("GLOBAL".into(), json!({ "POLL_INTERVAL": p }));
        }
    }
    for p in rows {
        m.insert(
            p.port.clone(),
            json!({
                "action": p.action,
                "detection_time": p.detection_time_ms,
                "restoration_time": p.restoration_time_ms,
                "pfc_stat_history": "disable",
            }),
        );
    }
    Value::Object(m)
}

fn config_rows<'a>(v: &'a ConfigView, ports: &[String]) -> Vec<&'a PortWdConfig> {
    let mut rows: Vec<&PortWdConfig> = v
        .ports
        .iter()
        .filter(|p| ports.is_empty() || ports.contains(&p.port))
        .collect();
    rows.sort_by(|a, b| natural_cmp(&a.port, &b.port));
    rows
}

/// `show pfcwd stats` as sonic-utilities prints it: one row per queue in
/// natural order of its name; a queue whose ten counters are all zero is
/// left out unless `empty` (`-e`). `queues` keeps only the named queues
/// (`Ethernet0:3`; empty: all).
pub fn stats_text(rows: &[QueueWdStats], empty: bool, queues: &[String]) -> String {
    let table: Vec<Vec<String>> = stats_rows(rows, empty, queues)
        .iter()
        .map(|q| {
            let mut r = vec![q.name(), q.status.text().to_string()];
            r.extend(q.pairs().iter().map(|(a, b)| format!("{a}/{b}")));
            r
        })
        .collect();
    tabulate_simple(&STATS_HEADER, &table)
}

/// `show pfcwd stats --json`: `{"<port>:<queue>": {"PFC_WD_STATUS": ..,
/// "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED": .., ...}}`, COUNTERS_DB's
/// fields of the queue.
pub fn stats_json(rows: &[QueueWdStats], empty: bool, queues: &[String]) -> Value {
    let mut m = Map::new();
    for q in stats_rows(rows, empty, queues) {
        let mut f = Map::new();
        f.insert("PFC_WD_STATUS".into(), json!(q.status.text()));
        for ((ka, kb), (a, b)) in STATS_FIELDS.iter().zip(q.pairs()) {
            f.insert((*ka).into(), json!(a));
            f.insert((*kb).into(), json!(b));
        }
        m.insert(q.name(), Value::Object(f));
    }
    Value::Object(m)
}

fn stats_rows<'a>(
    rows: &'a [QueueWdStats],
    empty: bool,
    queues: &[String],
) -> Vec<&'a QueueWdStats> {
    let mut v: Vec<&QueueWdStats> = rows
        .iter()
        .filter(|q| queues.is_empty() || queues.contains(&q.name()))
        .filter(|q| empty || q.pairs().iter().any(|&(a, b)| a != 0 || b != 0))
        .collect();
    v.sort_by(|a, b| natural_cmp(&a.name(), &b.name()));
    v
}

/// python-tabulate's "simple" format, every column right-aligned, with
/// the newline `print` adds.
fn tabulate_simple(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = super::table::simple(headers, rows);
    s.push('\n');
    s
}

pub use super::table::natural_cmp;
