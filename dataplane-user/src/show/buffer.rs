//! `show buffer configuration` (mmuconfig -l): the lossless traffic
//! pattern, the shared pool and the buffer profiles of the priority groups
//! in force in the data plane (read from its tables), each as a headerless
//! field/value table, in byte order.
//!
//! The tables carry values, not SONiC's profile names: profiles are named
//! as SONiC's buffer manager names them, `pg_lossless_<speed>_profile`
//! (SONiC adds the cable length, which the tables do not keep) and
//! `ingress_lossy_profile`, with `_<n>` when several differ.

use anyhow::{Context, Result};
use dataplane_common::buffer::{PortBuffer, NUM_TC};
use dataplane_common::lossless::{BufferProfile, SharedPool, MODEL_PORTS, TH_STATIC};
use dataplane_common::names;
use serde_json::{json, Map, Value};

use super::table::{natural_cmp, plain};
use super::{Ctx, Output, Target};
use crate::telemetry::counters::{open_pinned, Pinned};

pub const TARGETS: &[Target] = &[Target {
    name: "buffer configuration",
    args: None,
    about: "buffer pool and PG buffer profiles in force (mmuconfig -l)",
    show,
    clear: None,
}];

/// The buffer model's tables of a running instance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferTables {
    /// Ports in the model (name, configuration), in SONiC's order.
    pub ports: Vec<(String, PortBuffer)>,
    pub pool: SharedPool,
}

/// Reads the buffer model's tables (an error when the instance has none).
pub fn tables(ctx: &Ctx) -> Result<BufferTables> {
    let pinned = Pinned::open(&ctx.instance)?;
    let mut ports = Vec::new();
    for item in pinned.port_config.iter() {
        let (ifindex, cfg) = item?;
        let slot = usize::from(cfg.port_id);
        if slot >= MODEL_PORTS {
            continue;
        }
        let pb = pinned.port_buf.get(&(slot as u32), 0)?;
        if pb.enabled != 0 {
            let name = crate::sys::ifname(ifindex).unwrap_or_else(|| format!("ifindex{ifindex}"));
            ports.push((name, pb));
        }
    }
    ports.sort_by(|a, b| natural_cmp(&a.0, &b.0));
    let pool: aya::maps::Array<_, SharedPool> =
        aya::maps::Array::try_from(open_pinned(&ctx.instance, names::map::POOL)?)?;
    let pool = pool.get(&0, 0).context("reading the shared pool")?;
    Ok(BufferTables { ports, pool })
}

/// Distinct values of `each` over every port and TC, in order of first
/// use, named `base` (or `base_<n>` past the first when several share
/// it); `base_of` gives a value's base name.
pub fn distinct<T: PartialEq + Copy>(
    t: &BufferTables,
    each: impl Fn(&PortBuffer, usize) -> Option<T>,
    base_of: impl Fn(&PortBuffer, &T) -> String,
) -> Vec<(String, T)> {
    let mut out: Vec<(String, T)> = Vec::new();
    let mut bases: Vec<String> = Vec::new();
    for (_, pb) in &t.ports {
        for tc in 0..NUM_TC {
            let Some(v) = each(pb, tc) else { continue };
            if out.iter().any(|(_, o)| *o == v) {
                continue;
            }
            let base = base_of(pb, &v);
            let n = bases.iter().filter(|b| **b == base).count();
            bases.push(base.clone());
            let name = if n == 0 { base } else { format!("{base}_{n}") };
            out.push((name, v));
        }
    }
    out
}

/// A BUFFER_PROFILE's fields as SONiC names them.
fn profile_fields(p: &BufferProfile) -> Vec<(String, String)> {
    let mut v = vec![
        ("pool".to_string(), "ingress_lossless_pool".to_string()),
        ("size".to_string(), p.size.to_string()),
    ];
    if p.lossless != 0 {
        v.push(("xon".into(), p.xon.to_string()));
        v.push(("xoff".into(), p.xoff.to_string()));
        v.push(("xon_offset".into(), p.xon_offset.to_string()));
    }
    if p.mode == TH_STATIC {
        v.push(("static_th".into(), p.static_th.to_string()));
    } else {
        v.push(("dynamic_th".into(), p.dynamic_th.to_string()));
    }
    v
}

/// The `default_dynamic_th` the lossless profiles were made with (SONiC's
/// DEFAULT_LOSSLESS_BUFFER_PARAMETER; ours `[buffer].dynamic_th`): their
/// dynamic_th when every lossless PG in dynamic mode has the same one.
fn default_dynamic_th(t: &BufferTables) -> Option<i8> {
    let mut ths = t.ports.iter().flat_map(|(_, pb)| {
        pb.pg_profile
            .iter()
            .filter(|p| p.lossless != 0 && p.mode != TH_STATIC)
            .map(|p| p.dynamic_th)
    });
    let first = ths.next()?;
    ths.all(|th| th == first).then_some(first)
}

/// mmuconfig -l: the lossless traffic pattern, the pool and the PG
/// profiles, names and fields in byte order as CONFIG_DB returns them (its
/// "No ... information available" lines when no port is in the buffer
/// model). The model has one pool, the ingress shared pool; queues draw
/// on it and have no egress pool or profile of their own, so none is
/// shown.
pub fn render(t: &BufferTables) -> Output {
    if t.ports.is_empty() {
        return Output::new(
            "No buffer pool information available\nNo buffer profile information available\n"
                .into(),
            json!({}),
        );
    }
    let mut blocks = Vec::new();
    if let Some(th) = default_dynamic_th(t) {
        blocks.push((
            "Lossless traffic pattern:".to_string(),
            vec![("default_dynamic_th".to_string(), th.to_string())],
        ));
    }
    let pool = vec![
        ("mode".to_string(), "dynamic".to_string()),
        ("size".to_string(), t.pool.size.to_string()),
        ("type".to_string(), "ingress".to_string()),
    ];
    blocks.push(("Pool: ingress_lossless_pool".to_string(), pool));
    let mut profiles = distinct(
        t,
        |pb, tc| Some(pb.pg_profile[tc]),
        |pb, p| {
            if p.lossless != 0 {
                format!("pg_lossless_{}_profile", pb.speed_mbps)
            } else {
                "ingress_lossy_profile".into()
            }
        },
    );
    profiles.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, p) in &profiles {
        blocks.push((format!("Profile: {name}"), profile_fields(p)));
    }
    render_blocks(&blocks)
}

/// `Title:` lines each followed by a headerless table of its fields in
/// byte order (a CONFIG_DB hash through swss-common) and a blank line, as
/// ecnconfig and mmuconfig print them; JSON: {name: {field: value}}.
pub fn render_blocks(blocks: &[(String, Vec<(String, String)>)]) -> Output {
    let mut text = String::new();
    let mut json = Map::new();
    for (title, fields) in blocks {
        let mut fields = fields.clone();
        fields.sort();
        let rows: Vec<Vec<String>> = fields
            .iter()
            .map(|(k, v)| vec![k.clone(), v.clone()])
            .collect();
        text.push_str(&format!("{title}\n{}\n\n", plain(&rows)));
        let name = match title.split_once(": ") {
            Some((_, name)) => name,
            None => title.trim_end_matches(':'),
        };
        let m: Map<String, Value> = fields.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
        json.insert(name.to_string(), Value::Object(m));
    }
    Output::new(text, Value::Object(json))
}

fn show(ctx: &Ctx) -> Result<Output> {
    Ok(render(&tables(ctx)?))
}
