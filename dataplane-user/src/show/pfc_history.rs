//! `show pfc counters --history` (pfcstat -s ... --history): per port and
//! priority, pfcstat's RX Pause Transitions, Total RX Pause Time US,
//! Recent RX Pause Time US and Recent RX Pause Timestamp.
//!
//! From the data plane's received-PFC accounting of each egress queue in
//! the buffer model (`PAUSE_STATS`, `PAUSE_RUNS`): a pause run starts when
//! a received PFC time pauses a queue that was not paused and lasts while
//! later times keep it paused. RX Pause Transitions: the runs that ended
//! (paused to unpaused, SAI's ON2OFF); Total: the paused time
//! (`rx_pause_ns`); Recent: the latest run's length so far and its start
//! (the wall clock, local time, as pfcstat prints it), as SONiC's EST
//! counters define them. The total and the transitions are counted since
//! a `clear`; the recent run is shown as it is. A queue that never paused
//! has no recent run (`N/A`, as pfcstat prints a counter its switch
//! lacks), nor has a port outside the buffer model or a data plane of an
//! older build, which has no `PAUSE_RUNS`.

use serde_json::{json, Map, Value};

use super::baseline::{self, Baseline};
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

/// One priority's history; `None`: the data plane does not keep it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrioHist {
    /// Pause runs that ended (since the baseline).
    pub transitions: Option<u64>,
    /// Paused time, microseconds (since the baseline).
    pub pause_us: Option<u64>,
    /// The most recent run's length, microseconds.
    pub recent_us: Option<u64>,
    /// The most recent run's start, local time `[year, month, day, hour,
    /// minute, second]`.
    pub recent_at: Option<[i64; 6]>,
}

/// One port's history per priority.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistRow {
    pub port: String,
    pub prio: [PrioHist; 8],
}

/// The rows of a snapshot since a baseline, in SONiC's port order.
pub fn rows(snap: &Snapshot, base: Option<&Baseline>) -> Vec<HistRow> {
    super::ports_sorted(snap)
        .into_iter()
        .map(|p| {
            let now = |key: &str| p.counters.get(key).copied();
            let since = |key: &str| now(key).map(|v| baseline::since(base, &p.name, key, v));
            HistRow {
                port: p.name.clone(),
                prio: std::array::from_fn(|i| {
                    // microseconds, as pfcstat's counter: the baseline's
                    // ns are cut to microseconds before the difference
                    let us = |key: &str| {
                        let v = now(key)? / 1000;
                        let old = base
                            .and_then(|b| b.ports.get(&p.name))
                            .and_then(|c| c.get(key))
                            .map_or(0, |v| v / 1000);
                        Some(v.saturating_sub(old))
                    };
                    PrioHist {
                        transitions: since(&format!("rx_pause_transitions[{i}]")),
                        pause_us: us(&format!("rx_pause_ns[{i}]")),
                        recent_us: now(&format!("rx_pause_recent_ns[{i}]")).map(|ns| ns / 1000),
                        recent_at: now(&format!("rx_pause_recent_at_us[{i}]"))
                            .map(|us| baseline::local_civil((us / 1_000_000) as i64)),
                    }
                }),
            }
        })
        .collect()
}

const NA: &str = "N/A";

/// pfcstat's timestamp (`format_microseconds_as_datetime`:
/// `%m/%d/%Y, %H:%M:%S`).
pub fn stamp(c: &[i64; 6]) -> String {
    format!(
        "{:02}/{:02}/{:04}, {:02}:{:02}:{:02}",
        c[1], c[2], c[0], c[3], c[4], c[5]
    )
}

/// pfcstat's history table: eight rows per port and an empty row after
/// each, "Last cached time was ..." first when a baseline was subtracted
/// (`cached`). JSON (ours: pfcstat has none): per port and PFCn, its
/// HistStats fields as strings.
pub fn render(rows: &[HistRow], cached: Option<&str>) -> Output {
    let mut table: Vec<Vec<String>> = Vec::new();
    let mut json = Map::new();
    let num = |v: Option<u64>| v.map_or(NA.to_string(), commas);
    for r in rows {
        let mut per = Map::new();
        for (i, h) in r.prio.iter().enumerate() {
            let cells = [
                num(h.transitions),
                num(h.pause_us),
                num(h.recent_us),
                h.recent_at.as_ref().map_or(NA.to_string(), stamp),
            ];
            table.push(
                [r.port.clone(), format!("PFC{i}")]
                    .into_iter()
                    .chain(cells.iter().cloned())
                    .collect(),
            );
            per.insert(
                format!("PFC{i}"),
                json!({
                    "numTransitions": cells[0],
                    "totalPauseTime": cells[1],
                    "recentPauseTime": cells[2],
                    "recentPauseTimestamp": cells[3],
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
