//! `show pfc counters` (pfcstat): PFC frames received per priority (Port
//! Rx PFC0..PFC7), then sent (Port Tx). Sent: the PFC frames the data
//! plane decided (XOFF, refresh, XON), whoever put them on the wire.

use anyhow::Result;
use serde_json::{json, Map, Value};

use super::baseline::{self, Baseline};
use super::table::{commas, simple};
use super::{Ctx, Output, Target};
use crate::telemetry::stats::Snapshot;

pub const TARGETS: &[Target] = &[Target {
    name: "pfc counters",
    args: None,
    about: "PFC frames received and sent per priority (pfcstat; --history: paused time)",
    show,
    clear: Some(clear),
}];

/// The baseline's name in the state directory.
const BASELINE: &str = "pfcstat";

/// One port's PFC frames per priority.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PfcRow {
    pub port: String,
    pub rx: [u64; 8],
    pub tx: [u64; 8],
}

/// The rows of a snapshot since a baseline, in SONiC's port order.
pub fn rows(snap: &Snapshot, base: Option<&Baseline>) -> Vec<PfcRow> {
    super::ports_sorted(snap)
        .into_iter()
        .map(|p| {
            let get = |k: String| baseline::counter(base, p, &k);
            PfcRow {
                port: p.name.clone(),
                rx: std::array::from_fn(|i| get(format!("rx_pfc[{i}]"))),
                tx: std::array::from_fn(|i| get(format!("tx_pfc[{i}]"))),
            }
        })
        .collect()
}

/// pfcstat's two tables (each preceded by "Last cached time was ..." when
/// a baseline was subtracted, `cached`).
pub fn render(rows: &[PfcRow], cached: Option<&str>) -> Output {
    let mut text = String::new();
    let mut json = Map::new();
    for (i, (title, pick)) in [("Port Rx", true), ("Port Tx", false)].iter().enumerate() {
        let vals = |r: &PfcRow| if *pick { r.rx } else { r.tx };
        let headers: Vec<String> = std::iter::once(title.to_string())
            .chain((0..8).map(|p| format!("PFC{p}")))
            .collect();
        let h: Vec<&str> = headers.iter().map(String::as_str).collect();
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                std::iter::once(r.port.clone())
                    .chain(vals(r).iter().map(|v| commas(*v)))
                    .collect()
            })
            .collect();
        if i > 0 {
            text.push('\n');
        }
        if let Some(t) = cached {
            text.push_str(&format!("Last cached time was {t}\n"));
        }
        text.push_str(&simple(&h, &table));
        text.push('\n');
        let per_port: Map<String, Value> = rows
            .iter()
            .map(|r| {
                let m: Map<String, Value> = vals(r)
                    .iter()
                    .enumerate()
                    .map(|(p, v)| (format!("PFC{p}"), json!(v)))
                    .collect();
                (r.port.clone(), Value::Object(m))
            })
            .collect();
        json.insert(title.to_string(), Value::Object(per_port));
    }
    if let Some(t) = cached {
        json.insert("cached_time".into(), json!(t));
    }
    Output::new(text, Value::Object(json))
}

fn show(ctx: &Ctx) -> Result<Output> {
    if ctx.history {
        let h = super::pfc_history::render;
        return baseline::show_since(ctx, BASELINE, super::pfc_history::rows, h);
    }
    baseline::show_since(ctx, BASELINE, rows, render)
}

fn clear(ctx: &Ctx) -> Result<String> {
    if ctx.delete {
        return baseline::delete(ctx, BASELINE, "PFC counters");
    }
    let snap = ctx.snapshot()?;
    baseline::save(ctx, BASELINE, &snap, |k| {
        ["rx_pfc[", "tx_pfc[", "rx_pause_ns[", "rx_pause_transitions["]
            .iter()
            .any(|p| k.starts_with(p))
    })?;
    Ok("Clear saved PFC counters and history\n".into())
}
