//! Next-hop groups as the data plane holds them, computed from the plan:
//! stable member slots and a resilient bucket table
//! (`dataplane_common::lb`). Pure: the controller writes the value, the P4
//! generator renders it, the lab predicts flow placement with it.

use anyhow::{anyhow, bail, Result};
use dataplane_common::lb::{build_buckets, Group, Member, MAX_MEMBERS};

use crate::{GroupPlan, Plan};

/// The data-plane value of a planned group. `port_up(port index)` says
/// whether a member's egress port is up; `prev` is the group as currently
/// loaded (its bucket table is kept where possible).
pub fn group_value(
    plan: &Plan,
    g: &GroupPlan,
    port_up: &dyn Fn(usize) -> bool,
    prev: Option<&Group>,
) -> Result<Group> {
    let mut v = Group::new(g.mode, g.flowlet_timeout_ns);
    if g.uet_entropy {
        v.flags |= dataplane_common::lb::GROUP_F_UET_ENTROPY;
    }
    if g.members.len() > MAX_MEMBERS {
        bail!(
            "group {}: {} members, at most {MAX_MEMBERS}",
            g.name,
            g.members.len()
        );
    }
    for (slot, &(nh, weight)) in g.members.iter().enumerate() {
        let port = plan.nexthops[nh as usize].port;
        v.members[slot] = Member {
            id: nh,
            weight,
            live: u8::from(port_up(port)),
        };
    }
    v.n_members = g.members.len() as u8;
    // keep the previous buckets only when the slots mean the same members
    let prev_buckets = prev
        .filter(|p| {
            p.n_members == v.n_members
                && (0..g.members.len()).all(|i| p.members[i].id == v.members[i].id)
        })
        .map(|p| &p.buckets);
    v.buckets = build_buckets(&v.members, v.n_members, prev_buckets)
        .map_err(|e| anyhow!("group {}: {e:?}", g.name))?;
    Ok(v)
}

/// The member (slot) hash mode gives each flow key, with the group the
/// controller builds from `plan`'s group `gi` (every port up): what a
/// testbed predicts before it sends.
pub fn hash_placement(
    plan: &Plan,
    gi: usize,
    keys: &[dataplane_common::lb::FlowKey],
) -> Result<Vec<u8>> {
    let g = plan
        .groups
        .get(gi)
        .ok_or_else(|| anyhow::anyhow!("no group {gi} in the plan"))?;
    let v = group_value(plan, g, &|_| true, None)?;
    keys.iter()
        .map(|k| {
            dataplane_common::lb::pick_hash(&v, dataplane_common::lb::flow_hash(k, plan.hash_seed))
                .map(|c| c.slot)
                .ok_or_else(|| anyhow::anyhow!("group {}: no eligible member", g.name))
        })
        .collect()
}
