//! `show queue [persistent-]watermark unicast` and `show priority-group
//! [persistent-]watermark shared|headroom` (watermarkstat): per port, the
//! peak bytes of each unicast queue / priority group since the last clear
//! of that window. Ports outside the buffer model have no buffer: N/A.

use anyhow::Result;
use serde_json::Value;

use super::pyjson::PyJson;

use super::table::simple;
use super::{Ctx, Output, Target};
use crate::telemetry::stats::{KindMarks, PortWatermarks, Snapshot};
use crate::telemetry::watermarks::{self, Kind, Reset};

/// One watermarkstat type (`-t`) in one window (`-p`).
pub struct WmType {
    /// watermarkstat's title line.
    pub message: &'static str,
    /// Column prefix: UC (unicast queue) or PG.
    pub prefix: &'static str,
    pub kind: Kind,
    pub persistent: bool,
}

/// watermarkstat's titles.
const Q: &str = "Egress shared pool occupancy per unicast queue:";
const PGS: &str = "Ingress shared pool occupancy per PG:";
const PGH: &str = "Ingress headroom per PG:";

const fn k(message: &'static str, prefix: &'static str, kind: Kind, persistent: bool) -> WmType {
    WmType {
        message,
        prefix,
        kind,
        persistent,
    }
}

/// Every watermark target: its name, help and what it shows.
pub const WINDOWS: [(&str, &str, WmType); 6] = [
    ("queue watermark unicast", "peak shared bytes per unicast queue since the last clear (watermarkstat -t q_shared_uni)", k(Q, "UC", Kind::QueueShared, false)),
    ("queue persistent-watermark unicast", "the same since start or the last persistent clear", k(Q, "UC", Kind::QueueShared, true)),
    ("priority-group watermark shared", "peak shared bytes per ingress PG since the last clear (-t pg_shared)", k(PGS, "PG", Kind::PgShared, false)),
    ("priority-group watermark headroom", "peak headroom bytes per ingress PG since the last clear (-t pg_headroom)", k(PGH, "PG", Kind::PgHeadroom, false)),
    ("priority-group persistent-watermark shared", "the same since start or the last persistent clear", k(PGS, "PG", Kind::PgShared, true)),
    ("priority-group persistent-watermark headroom", "the same since start or the last persistent clear", k(PGH, "PG", Kind::PgHeadroom, true)),
];

/// The target of `WINDOWS[$i]`.
macro_rules! window {
    ($i:literal) => {
        Target {
            name: WINDOWS[$i].0,
            args: None,
            about: WINDOWS[$i].1,
            show: |ctx| show(ctx, &WINDOWS[$i].2),
            clear: Some(|ctx| clear(ctx, &WINDOWS[$i].2)),
        }
    };
}

pub const TARGETS: &[Target] = &[
    window!(0),
    window!(1),
    window!(2),
    window!(3),
    window!(4),
    window!(5),
    Target {
        name: "queue watermark multicast",
        args: None,
        about: "watermarkstat -t q_shared_multi: the data plane has no multicast queues",
        show: |_| Ok(no_multicast()),
        clear: None,
    },
    Target {
        name: "queue persistent-watermark multicast",
        args: None,
        about: "the same (no multicast queues)",
        show: |_| Ok(no_multicast()),
        clear: None,
    },
    Target {
        name: "queue watermark all",
        args: None,
        about: "watermarkstat -t q_shared_all: the data plane has no queues of type ALL",
        show: |_| no_all_queues(),
        clear: None,
    },
    Target {
        name: "queue persistent-watermark all",
        args: None,
        about: "the same (no queues of type ALL)",
        show: |_| no_all_queues(),
        clear: None,
    },
];

/// watermarkstat's line (and exit 0) when no multicast queue is
/// configured: the data plane's queues are the eight unicast ones.
pub fn no_multicast() -> Output {
    let line = "Object map from the COUNTERS_DB is empty because the multicast queues are not configured in the CONFIG_DB!\n";
    Output {
        text: line.into(),
        json: Value::String(line.trim_end().into()),
        json_text: Some(line.into()),
    }
}

/// watermarkstat's error (exit 1) when no queue is of SAI type ALL.
fn no_all_queues() -> Result<Output> {
    anyhow::bail!(
        "Object map is empty! (the data plane's queues are unicast only: show queue watermark unicast)"
    )
}

/// A port's marks of one kind per TC; `None`: not in the buffer model.
pub type WmRow = (String, Option<[u32; 8]>);

/// The rows of a snapshot for `k`, in SONiC's port order.
pub fn rows(snap: &Snapshot, k: &WmType) -> Vec<WmRow> {
    let pick = |w: &PortWatermarks| -> [u32; 8] {
        let m: &KindMarks = if k.persistent { &w.persistent } else { &w.user };
        match k.kind {
            Kind::QueueShared => m.queue_shared,
            Kind::PgShared => m.pg_shared,
            Kind::PgHeadroom => m.pg_headroom,
        }
    };
    super::ports_sorted(snap)
        .into_iter()
        .map(|p| (p.name.clone(), p.watermarks.as_ref().map(pick)))
        .collect()
}

/// watermarkstat's title and table; JSON: its list of `{Port, UC0..}`
/// with string values, printed as `json.dumps(indent=4)` in column order.
pub fn render(rows: &[WmRow], k: &WmType) -> Output {
    let headers: Vec<String> = std::iter::once("Port".to_string())
        .chain((0..8).map(|i| format!("{}{i}", k.prefix)))
        .collect();
    let h: Vec<&str> = headers.iter().map(String::as_str).collect();
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|(port, v)| {
            std::iter::once(port.clone())
                .chain((0..8).map(|i| match v {
                    Some(v) => v[i].to_string(),
                    None => "N/A".to_string(),
                }))
                .collect()
        })
        .collect();
    let objects = || {
        table.iter().map(|row| {
            headers
                .iter()
                .zip(row)
                .map(|(h, c)| (h.clone(), c.clone()))
                .collect::<Vec<_>>()
        })
    };
    let json = Value::Array(
        objects()
            .map(|o| Value::Object(o.into_iter().map(|(h, c)| (h, Value::String(c))).collect()))
            .collect(),
    );
    let py = PyJson::List(
        objects()
            .map(|o| PyJson::Obj(o.into_iter().map(|(h, c)| (h, PyJson::Str(c))).collect()))
            .collect(),
    );
    Output {
        text: format!("{}\n{}\n", k.message, simple(&h, &table)),
        json,
        json_text: Some(py.dumps(4)),
    }
}

fn show(ctx: &Ctx, k: &WmType) -> Result<Output> {
    let snap = ctx.snapshot()?;
    Ok(render(&rows(&snap, k), k))
}

fn clear(ctx: &Ctx, k: &WmType) -> Result<String> {
    if ctx.delete {
        anyhow::bail!("--delete: a watermark window has no saved baseline to delete (clear without --delete restarts it)");
    }
    let kinds = [k.kind];
    let reset = if k.persistent {
        Reset::Persistent(&kinds)
    } else {
        Reset::User(&kinds)
    };
    watermarks::fold(&ctx.instance, reset)?;
    Ok(String::new())
}
