//! `show queue counters` (queuestat): per port, per unicast queue UC0..UC7
//! (one per TC), the packets and bytes sent and the packets and bytes the
//! buffer model dropped (WRED, shared buffer full, headroom exhausted,
//! PFC watchdog).

use anyhow::{bail, Result};
use serde_json::{json, Map, Value};

use super::baseline::{self, Baseline};
use super::table::{commas, simple};
use super::{Ctx, Output, Target};
use crate::telemetry::stats::Snapshot;

pub const TARGETS: &[Target] = &[Target {
    name: "queue counters",
    args: Some("[PORT]"),
    about: "packets and bytes sent and dropped per unicast queue (queuestat)",
    show,
    clear: Some(clear),
}];

const BASELINE: &str = "queuestat";

/// queuestat's header.
const HEADER: [&str; 6] = [
    "Port",
    "TxQ",
    "Counter/pkts",
    "Counter/bytes",
    "Drop/pkts",
    "Drop/bytes",
];

/// The counters a queue's drops add up from.
const DROPS: [&str; 4] = ["wred_drop", "drop_shared_full", "drop_headroom", "wd_drop"];

/// One queue's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueRow {
    pub pkts: u64,
    pub bytes: u64,
    pub drop_pkts: u64,
    pub drop_bytes: u64,
}

/// A port's eight unicast queues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortQueues {
    pub port: String,
    pub queues: [QueueRow; 8],
}

/// The rows of a snapshot since a baseline, in SONiC's port order.
pub fn rows(snap: &Snapshot, base: Option<&Baseline>) -> Vec<PortQueues> {
    super::ports_sorted(snap)
        .into_iter()
        .map(|p| {
            let get = |k: String| baseline::counter(base, p, &k);
            let q = |tc: usize| QueueRow {
                pkts: get(format!("tx_tc_pkts[{tc}]")),
                bytes: get(format!("tx_tc_bytes[{tc}]")),
                drop_pkts: DROPS.iter().map(|d| get(format!("{d}[{tc}]"))).sum(),
                drop_bytes: get(format!("queue_drop_bytes[{tc}]")),
            };
            PortQueues {
                port: p.name.clone(),
                queues: std::array::from_fn(q),
            }
        })
        .collect()
}

/// queuestat's table per port; since a baseline (`cached`), each preceded
/// by "<port> Last cached time was ..." and with thousands separators, as
/// queuestat prints a difference.
pub fn render(ports: &[PortQueues], cached: Option<&str>) -> Output {
    let mut text = String::new();
    let mut json = Map::new();
    let num = |v: u64| {
        if cached.is_some() {
            commas(v)
        } else {
            v.to_string()
        }
    };
    for p in ports {
        let table: Vec<Vec<String>> = p
            .queues
            .iter()
            .enumerate()
            .map(|(i, q)| {
                vec![
                    p.port.clone(),
                    format!("UC{i}"),
                    num(q.pkts),
                    num(q.bytes),
                    num(q.drop_pkts),
                    num(q.drop_bytes),
                ]
            })
            .collect();
        if let Some(t) = cached {
            text.push_str(&format!("{} Last cached time was {t}\n", p.port));
        }
        text.push_str(&simple(&HEADER, &table));
        text.push_str("\n\n");
        let mut m: Map<String, Value> = p
            .queues
            .iter()
            .enumerate()
            .map(|(i, q)| {
                (
                    format!("UC{i}"),
                    json!({
                        "totalpacket": q.pkts,
                        "totalbytes": q.bytes,
                        "droppacket": q.drop_pkts,
                        "dropbytes": q.drop_bytes,
                    }),
                )
            })
            .collect();
        if let Some(t) = cached {
            m.insert("cached_time".into(), json!(t));
        }
        json.insert(p.port.clone(), Value::Object(m));
    }
    Output {
        text,
        json: Value::Object(json),
    }
}

fn show(ctx: &Ctx) -> Result<Output> {
    let base = baseline::load(ctx, BASELINE);
    let mut ports = rows(&ctx.snapshot()?, base.as_ref());
    match ctx.args.as_slice() {
        [] => {}
        // queuestat -p PORT
        [port] => {
            ports.retain(|p| p.port == *port);
            if ports.is_empty() {
                bail!("Port doesn't exist! {port}");
            }
        }
        more => bail!("show queue counters takes one port, got {more:?}"),
    }
    Ok(render(&ports, base.as_ref().map(|b| b.time.as_str())))
}

fn clear(ctx: &Ctx) -> Result<String> {
    let snap = ctx.snapshot()?;
    baseline::save(ctx, BASELINE, &snap, |k| {
        let base = k.split('[').next().unwrap_or(k);
        ["tx_tc_pkts", "tx_tc_bytes", "queue_drop_bytes"].contains(&base) || DROPS.contains(&base)
    })?;
    let mut out = String::new();
    for p in super::ports_sorted(&snap) {
        out.push_str(&format!("Clear and update saved counters for {}\n", p.name));
    }
    Ok(out)
}
