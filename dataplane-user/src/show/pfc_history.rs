//! `show pfc counters --history` (pfcstat -s ... --history): per port and
//! priority, pfcstat's RX Pause Transitions, Total RX Pause Time US,
//! Recent RX Pause Time US and Recent RX Pause Timestamp.
//!
//! The data plane keeps the total paused time per priority
//! (`rx_pause_ns[prio]`, ports in the buffer model); it does not count
//! pause transitions nor keep the most recent pause's length and time, so
//! those cells are `N/A`, as pfcstat prints a counter its switch does not
//! have. A port outside the buffer model has no pause time either: all
//! `N/A`.

use serde_json::{json, Map, Value};

use super::baseline::Baseline;
use super::table::{commas, simple};
use super::Output;
use crate::telemetry::stats::Snapshot;

/// pfcstat's history header.
const HEADER: [&str; 6] = [
    "Port",
    "Priority",
    "RX Pause Transitions",
    "Total RX Pause Time US",
    "Recent RX Pause Time US",
    "Recent RX Pause Timestamp",
];

/// One port's total paused time per priority, microseconds (since the
/// baseline when the port is in it); `None`: not in the buffer model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistRow {
    pub port: String,
    pub pause_us: Option<[u64; 8]>,
}

/// The rows of a snapshot since a baseline, in SONiC's port order.
pub fn rows(snap: &Snapshot, base: Option<&Baseline>) -> Vec<HistRow> {
    super::ports_sorted(snap)
        .into_iter()
        .map(|p| {
            let us = |i: usize| -> Option<u64> {
                let key = format!("rx_pause_ns[{i}]");
                let now = *p.counters.get(&key)? / 1000;
                let old = base
                    .and_then(|b| b.ports.get(&p.name))
                    .and_then(|c| c.get(&key))
                    .map_or(0, |v| v / 1000);
                Some(now.saturating_sub(old))
            };
            let all: Option<Vec<u64>> = (0..8).map(us).collect();
            HistRow {
                port: p.name.clone(),
                pause_us: all.map(|v| std::array::from_fn(|i| v[i])),
            }
        })
        .collect()
}

const NA: &str = "N/A";

/// pfcstat's history table: eight rows per port and an empty row after
/// each, "Last cached time was ..." first when a baseline was subtracted
/// (`cached`). JSON (ours: pfcstat has none): per port and PFCn, its
/// HistStats fields as strings.
pub fn render(rows: &[HistRow], cached: Option<&str>) -> Output {
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut json = Map::new();
    for r in rows {
        let mut per = Map::new();
        for i in 0..8 {
            let total = r.pause_us.map_or(NA.to_string(), |v| commas(v[i]));
            table.push(vec![
                r.port.clone(),
                format!("PFC{i}"),
                NA.into(),
                total.clone(),
                NA.into(),
                NA.into(),
            ]);
            per.insert(
                format!("PFC{i}"),
                json!({
                    "numTransitions": NA,
                    "totalPauseTime": total,
                    "recentPauseTime": NA,
                    "recentPauseTimestamp": NA,
                }),
            );
        }
        table.push(Vec::new());
        json.insert(r.port.clone(), Value::Object(per));
    }
    let mut text = String::new();
    if let Some(t) = cached {
        text.push_str(&format!("Last cached time was {t}\n"));
        json.insert("cached_time".into(), json!(t));
    }
    text.push_str(&simple(&HEADER, &table));
    text.push('\n');
    Output::new(text, Value::Object(json))
}
