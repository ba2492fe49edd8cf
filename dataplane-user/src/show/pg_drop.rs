//! `show priority-group drop counters` (pg-drop -c show): per port and
//! ingress priority group, the packets the buffer model dropped at that
//! PG, SAI's ingress PG DROPPED_PACKETS: a lossy PG past its shared
//! threshold with the shared buffer full (`drop_shared_full`, unless
//! trimmed) and a lossless PG past its headroom (`drop_headroom`). The
//! same drops count on the egress queue they were headed for (`show queue
//! counters` Drop/pkts); here on the port and TC they came in on
//! (`pg_drop[tc]`, the data plane's `PG_DROPS`). WRED and watchdog drops
//! are the queue's, not the PG's.
//!
//! A port outside the buffer model, or a data plane of an older build
//! (no `PG_DROPS`), prints `N/A`.

use anyhow::Result;
use serde_json::{json, Map, Value};

use super::baseline::{self, Baseline};
use super::table::simple;
use super::{Ctx, Output, Target};
use crate::telemetry::stats::Snapshot;

pub const TARGETS: &[Target] = &[Target {
    name: "priority-group drop counters",
    args: None,
    about: "packets dropped per ingress priority group (pg-drop)",
    show,
    clear: Some(clear),
}];

/// The baseline's name in the state directory.
const BASELINE: &str = "pg-drop";

/// One port's drops per PG (since the baseline); `None`: N/A.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgDropRow {
    pub port: String,
    pub drops: [Option<u64>; 8],
}

/// The rows of a snapshot since a baseline, in SONiC's port order.
pub fn rows(snap: &Snapshot, base: Option<&Baseline>) -> Vec<PgDropRow> {
    super::ports_sorted(snap)
        .into_iter()
        .map(|p| PgDropRow {
            port: p.name.clone(),
            drops: std::array::from_fn(|i| {
                let key = format!("pg_drop[{i}]");
                let now = *p.counters.get(&key)?;
                Some(baseline::since(base, &p.name, &key, now))
            }),
        })
        .collect()
}

/// pg-drop's table: its title line, then Port PG0..PG7 (plain numbers:
/// pg-drop prints them without separators). pg-drop prints no cached
/// time; ours neither. JSON (ours: pg-drop has none): per port and PGn,
/// the number (or "N/A").
pub fn render(rows: &[PgDropRow], _cached: Option<&str>) -> Output {
    let headers: Vec<String> = std::iter::once("Port".to_string())
        .chain((0..8).map(|i| format!("PG{i}")))
        .collect();
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    let cell = |v: Option<u64>| v.map_or("N/A".to_string(), |n| n.to_string());
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            std::iter::once(r.port.clone())
                .chain(r.drops.iter().map(|v| cell(*v)))
                .collect()
        })
        .collect();
    let text = format!("Ingress PG dropped packets:\n{}\n", simple(&h, &table));
    let json: Map<String, Value> = rows
        .iter()
        .map(|r| {
            let m: Map<String, Value> = r
                .drops
                .iter()
                .enumerate()
                .map(|(i, v)| (format!("PG{i}"), v.map_or(json!("N/A"), |n| json!(n))))
                .collect();
            (r.port.clone(), Value::Object(m))
        })
        .collect();
    Output::new(text, Value::Object(json))
}

fn show(ctx: &Ctx) -> Result<Output> {
    baseline::show_since(ctx, BASELINE, rows, render)
}

fn clear(ctx: &Ctx) -> Result<String> {
    if ctx.delete {
        return baseline::delete(ctx, BASELINE, "PG drop counters");
    }
    let snap = ctx.snapshot()?;
    baseline::save(ctx, BASELINE, &snap, |k| k.starts_with("pg_drop["))?;
    Ok("Cleared PG drop counter\n".into())
}
