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
    about: "packets and bytes sent and dropped per unicast queue (queuestat; -nz: nonzero only)",
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
pub const DROPS: [&str; 4] = ["wred_drop", "drop_shared_full", "drop_headroom", "wd_drop"];

/// One queue's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueRow {
    pub pkts: u64,
    pub bytes: u64,
    pub drop_pkts: u64,
    pub drop_bytes: u64,
}

impl QueueRow {
    fn values(&self) -> [u64; 4] {
        [self.pkts, self.bytes, self.drop_pkts, self.drop_bytes]
    }
}

/// A port's eight unicast queues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortQueues {
    pub port: String,
    pub queues: [QueueRow; 8],
    /// The counters are since the baseline (the port was in it): as
    /// queuestat with a cache file for the port.
    pub cached: bool,
}

/// The rows of a snapshot since a baseline, in SONiC's port order; a port
/// the baseline lacks is shown whole, as queuestat shows a port without a
/// cache file.
pub fn rows(snap: &Snapshot, base: Option<&Baseline>) -> Vec<PortQueues> {
    super::ports_sorted(snap)
        .into_iter()
        .map(|p| {
            let base = base.filter(|b| b.ports.contains_key(&p.name));
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
                cached: base.is_some(),
            }
        })
        .collect()
}

/// How queuestat is asked to print.
#[derive(Clone, Copy, Debug)]
pub struct View<'a> {
    /// Now, as the JSON's per-port "time" (`datetime.isoformat()`).
    pub now: &'a str,
    /// The baseline's time, when one is stored.
    pub cached: Option<&'a str>,
    /// `-p PORT`: one port asked for (an extra "Last cached time" line).
    pub one_port: bool,
    /// `-nz`: only queues with a counter other than 0.
    pub nonzero: bool,
}

/// queuestat's text and JSON (`json_dump`: sorted keys, string values).
/// A port without a baseline: "For namespace :" (sonic-utilities #3554,
/// printed on single-ASIC switches too, with the empty default namespace)
/// and plain numbers; since a baseline: "<port> Last cached time was ..."
/// and numbers with thousands separators (`ns_diff`). A port whose table
/// `-nz` empties prints nothing (JSON: only its "time").
pub fn render(ports: &[PortQueues], v: &View) -> Output {
    let mut text = String::new();
    let mut json = Map::new();
    if let (true, Some(t)) = (v.one_port, v.cached) {
        if ports.iter().any(|p| p.cached) {
            text.push_str(&format!("Last cached time was {t}\n"));
        }
    }
    for p in ports {
        let num = |n: u64| if p.cached { commas(n) } else { n.to_string() };
        let kept: Vec<(usize, &QueueRow)> = p
            .queues
            .iter()
            .enumerate()
            .filter(|(_, q)| !v.nonzero || q.values().iter().any(|n| *n != 0))
            .collect();
        let table: Vec<Vec<String>> = kept
            .iter()
            .map(|(i, q)| {
                [p.port.clone(), format!("UC{i}")]
                    .into_iter()
                    .chain(q.values().map(num))
                    .collect()
            })
            .collect();
        if !table.is_empty() {
            match (p.cached, v.cached) {
                (true, Some(t)) => text.push_str(&format!("{} Last cached time was {t}\n", p.port)),
                _ => text.push_str("For namespace :\n"),
            }
            text.push_str(&simple(&HEADER, &table));
            text.push_str("\n\n");
        }
        let mut m: Map<String, Value> = kept
            .iter()
            .map(|(i, q)| {
                let [a, b, c, d] = q.values().map(num);
                (
                    format!("UC{i}"),
                    json!({ "totalpacket": a, "totalbytes": b, "droppacket": c, "dropbytes": d }),
                )
            })
            .collect();
        m.insert("time".into(), json!(v.now));
        json.insert(p.port.clone(), Value::Object(m));
    }
    Output::new(text, Value::Object(json))
}

fn show(ctx: &Ctx) -> Result<Output> {
    let base = baseline::load(ctx, BASELINE);
    let mut ports = rows(&ctx.snapshot()?, base.as_ref());
    let one_port = match ctx.args.as_slice() {
        [] => false,
        // queuestat -p PORT
        [port] => {
            ports.retain(|p| p.port == *port);
            if ports.is_empty() {
                bail!("Port doesn't exist! {port}");
            }
            true
        }
        more => bail!("show queue counters takes one port, got {more:?}"),
    };
    let now = baseline::now_string();
    let view = View {
        now: &now,
        cached: base.as_ref().map(|b| b.time.as_str()),
        one_port,
        nonzero: ctx.nonzero,
    };
    Ok(render(&ports, &view))
}

fn clear(ctx: &Ctx) -> Result<String> {
    if ctx.delete {
        return baseline::delete(ctx, BASELINE, "queue counters");
    }
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
