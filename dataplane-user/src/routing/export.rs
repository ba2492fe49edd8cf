//! The routes a running controller learned, as plan entries: what
//! `dataplane p4 entries --learned` adds to the config's own, so bmv2 and
//! Tofino get the same routes as the eBPF data plane. Pure.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use dataplane_config::{GroupPlan, NextHopPlan, Plan, RoutePlan, Target, MODES};

use super::sync::Listing;
use super::want::Source;

/// `plan` with the learned routes of `listing` (next hops `k<id>`, groups
/// `kg<id>`; routes handed to the kernel become `local`: the CPU port).
pub fn with_learned(plan: &Plan, listing: &Listing) -> Result<Plan> {
    let mut p = plan.clone();
    let flowlet = plan
        .routing
        .as_ref()
        .map(|r| r.flowlet_timeout_ns)
        .unwrap_or(100_000);
    let mut nh_index: BTreeMap<u16, u16> = BTreeMap::new();
    let mut group_index: BTreeMap<String, u16> = BTreeMap::new();
    for r in &listing.routes {
        if r.source == Source::Static {
            continue;
        }
        let (addr, len) = dataplane_config::parse_prefix(&r.prefix)
            .with_context(|| format!("learned route {:?}: not a prefix", r.prefix))?;
        if p.routes.iter().any(|x| (x.addr, x.len) == (addr, len)) {
            continue;
        }
        let mut nh = |h: &super::sync::NexthopRow, p: &mut Plan| -> Result<u16> {
            if let Some(i) = nh_index.get(&h.id) {
                return Ok(*i);
            }
            if h.port >= p.ports.len() {
                bail!(
                    "learned next hop {} on port {}: the config has {} ports",
                    h.id,
                    h.port,
                    p.ports.len()
                );
            }
            let i = p.nexthops.len() as u16;
            p.nexthops.push(NextHopPlan {
                name: format!("k{}", h.id),
                port: h.port,
                mac: h.mac,
            });
            nh_index.insert(h.id, i);
            Ok(i)
        };
        let target = if r.target.starts_with("nexthop") {
            let h = r
                .nexthops
                .first()
                .with_context(|| format!("{}: next hop missing", r.prefix))?;
            Target::NextHop(nh(h, &mut p)?)
        } else if r.target.starts_with("group") {
            let key = format!("{}/{}", r.target, r.mode.clone().unwrap_or_default());
            match group_index.get(&key) {
                Some(g) => Target::Group(*g),
                None => {
                    let mut members = Vec::new();
                    for h in &r.nexthops {
                        members.push((nh(h, &mut p)?, h.weight.max(1)));
                    }
                    let mode = MODES
                        .iter()
                        .position(|m| Some(*m) == r.mode.as_deref())
                        .with_context(|| format!("{}: mode {:?}", r.prefix, r.mode))?
                        as u8;
                    let g = p.groups.len() as u16;
                    p.groups.push(GroupPlan {
                        name: format!("kg{}", r.target.trim_start_matches("group ")),
                        mode,
                        flowlet_timeout_ns: flowlet,
                        uet_entropy: plan.routing.as_ref().is_some_and(|r| r.uet_entropy),
                        members,
                    });
                    group_index.insert(key, g);
                    Target::Group(g)
                }
            }
        } else {
            Target::Local
        };
        p.routes.push(RoutePlan { addr, len, target });
    }
    Ok(p)
}
