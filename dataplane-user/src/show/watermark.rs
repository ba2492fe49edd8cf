//! `show queue [persistent-]watermark unicast` and `show priority-group
//! [persistent-]watermark shared|headroom` (watermarkstat): per port, the
//! peak bytes of each unicast queue / priority group since the last clear
//! of that window. Ports outside the buffer model have no buffer: N/A.
//!
//! `show buffer_pool [persistent-]watermark` and `show headroom-pool
//! [persistent-]watermark` (watermarkstat -t buffer_pool / headroom_pool):
//! per pool, its peak bytes. The buffer model has one pool, the ingress
//! shared pool (`ingress_lossless_pool`, as `show buffer configuration`
//! names it), and no shared headroom pool: headroom is per PG, so the
//! headroom pool prints `N/A`, as watermarkstat does for a pool whose
//! XOFF-room watermark the switch does not have.

use anyhow::Result;
use serde_json::Value;

use super::pyjson::PyJson;

use super::table::simple;
use super::{Ctx, Output, Target};
use crate::telemetry::stats::{KindMarks, PortWatermarks, Snapshot};
use crate::telemetry::watermarks::{self, Kind, Reset, Window};

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

/// The target of `POOLS[$i]`.
macro_rules! pool {
    ($i:literal) => {
        Target {
            name: POOLS[$i].0,
            args: None,
            about: POOLS[$i].1,
            show: |ctx| show_pool(ctx, &POOLS[$i].2),
            clear: Some(|ctx| clear_pool(ctx, &POOLS[$i].2)),
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
    pool!(0),
    pool!(1),
    pool!(2),
    pool!(3),
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
            Kind::PoolShared => unreachable!("the pool has no per-port table (POOLS)"),
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

/// One pool watermark type of watermarkstat (`-t buffer_pool` or
/// `headroom_pool`) in one window.
pub struct PoolType {
    /// watermarkstat's title line.
    pub message: &'static str,
    /// The headroom pool (SAI's XOFF-room watermark of the pool), which the
    /// buffer model does not have.
    pub headroom: bool,
    pub persistent: bool,
}

/// watermarkstat's titles of the pool types.
const BP: &str = "Shared pool maximum occupancy:";
const HP: &str = "Headroom pool maximum occupancy:";

const fn pt(message: &'static str, headroom: bool, persistent: bool) -> PoolType {
    PoolType {
        message,
        headroom,
        persistent,
    }
}

/// Every pool watermark target: its name, help and what it shows.
pub const POOLS: [(&str, &str, PoolType); 4] = [
    ("buffer_pool watermark", "peak bytes of the shared pool since the last clear (watermarkstat -t buffer_pool)", pt(BP, false, false)),
    ("buffer_pool persistent-watermark", "the same since start or the last persistent clear", pt(BP, false, true)),
    ("headroom-pool watermark", "watermarkstat -t headroom_pool: N/A, headroom is per PG (no shared headroom pool)", pt(HP, true, false)),
    ("headroom-pool persistent-watermark", "the same (no shared headroom pool)", pt(HP, true, true)),
];

/// The buffer model's pool, as `show buffer configuration` names it.
pub const POOL_NAME: &str = "ingress_lossless_pool";

/// A pool and its peak bytes (`None`: N/A).
pub type PoolRow = (String, Option<u64>);

/// watermarkstat's title and `Pool Bytes` table; JSON: its list of
/// one-key objects `{pool: "bytes"}` (string values, `"N/A"`), printed as
/// `json.dumps(indent=4)`.
pub fn render_pools(rows: &[PoolRow], t: &PoolType) -> Output {
    let cell = |v: &Option<u64>| match v {
        Some(v) => v.to_string(),
        None => "N/A".to_string(),
    };
    let table: Vec<Vec<String>> = rows.iter().map(|(p, v)| vec![p.clone(), cell(v)]).collect();
    let json = Value::Array(
        rows.iter()
            .map(|(p, v)| {
                let mut o = serde_json::Map::new();
                o.insert(p.clone(), Value::String(cell(v)));
                Value::Object(o)
            })
            .collect(),
    );
    let py = PyJson::List(
        rows.iter()
            .map(|(p, v)| PyJson::Obj(vec![(p.clone(), PyJson::Str(cell(v)))]))
            .collect(),
    );
    Output {
        text: format!("{}\n{}\n", t.message, simple(&["Pool", "Bytes"], &table)),
        json,
        json_text: Some(py.dumps(4)),
    }
}

/// The rows of a running instance: the one pool when ports are in the
/// buffer model (none otherwise, as a switch without buffer pools), its
/// peak in the window, `N/A` for the headroom pool and for a data plane
/// without watermarks (an older build).
fn pool_rows(ctx: &Ctx, t: &PoolType) -> Result<Vec<PoolRow>> {
    if super::buffer::tables(ctx)?.ports.is_empty() {
        return Ok(Vec::new());
    }
    let w = if t.persistent {
        Window::Persistent
    } else {
        Window::User
    };
    let v = match t.headroom {
        true => None,
        false => watermarks::read(&ctx.instance)
            .ok()
            .map(|f| u64::from(f.pool(w))),
    };
    Ok(vec![(POOL_NAME.to_string(), v)])
}

fn show_pool(ctx: &Ctx, t: &PoolType) -> Result<Output> {
    Ok(render_pools(&pool_rows(ctx, t)?, t))
}

/// `clear buffer_pool [persistent-]watermark` restarts the pool's window;
/// `clear headroom-pool ...` has nothing to restart and, as watermarkstat
/// -c on a switch without the counter, says nothing.
fn clear_pool(ctx: &Ctx, t: &PoolType) -> Result<String> {
    if ctx.delete {
        anyhow::bail!("--delete: a watermark window has no saved baseline to delete (clear without --delete restarts it)");
    }
    if t.headroom {
        return Ok(String::new());
    }
    let kinds = [Kind::PoolShared];
    let reset = if t.persistent {
        Reset::Persistent(&kinds)
    } else {
        Reset::User(&kinds)
    };
    watermarks::fold(&ctx.instance, reset)?;
    Ok(String::new())
}
