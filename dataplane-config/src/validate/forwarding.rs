//! The forwarding sections: next hops, groups (members, modes, flowlet
//! timeouts) and routes.

use std::collections::{BTreeMap, BTreeSet};

use dataplane_common::route::{MAX_GROUPS, MAX_NEXTHOPS};

use crate::values::*;
use crate::*;

/// Index of each named next hop or group.
type Names<'a> = BTreeMap<&'a str, u16>;

impl Config {
    /// `[[nexthop]]`, `[[group]]` and `[[route]]`, in that order.
    pub(super) fn validate_forwarding(
        &self,
        ports: &[PortPlan],
        err: &mut impl FnMut(String, String),
    ) -> (Vec<NextHopPlan>, Vec<GroupPlan>, Vec<RoutePlan>) {
        check_count(
            "nexthop",
            "next hops",
            MAX_NEXTHOPS,
            self.nexthops.len(),
            err,
        );
        let mut nh_names = Names::new();
        let mut nexthops = Vec::new();
        for (i, n) in self.nexthops.iter().enumerate() {
            let base = format!("nexthop[{i}] ({})", n.name);
            check_unique(
                &mut nh_names,
                &n.name,
                nexthops.len(),
                &base,
                "next hop",
                err,
            );
            nexthops.push(validate_nexthop(&base, n, ports, err));
        }
        check_count("group", "groups", MAX_GROUPS, self.groups.len(), err);
        let mut group_names = Names::new();
        let mut groups = Vec::new();
        for (i, g) in self.groups.iter().enumerate() {
            let base = format!("group[{i}] ({})", g.name);
            check_unique(&mut group_names, &g.name, groups.len(), &base, "group", err);
            groups.push(validate_group(&base, g, &nh_names, err));
        }
        let routes = self.validate_routes(&nh_names, &group_names, err);
        (nexthops, groups, routes)
    }

    /// Every `[[route]]` with a valid prefix and target (others are
    /// reported and left out); each prefix once.
    fn validate_routes(
        &self,
        nh_names: &Names,
        group_names: &Names,
        err: &mut impl FnMut(String, String),
    ) -> Vec<RoutePlan> {
        let mut routes = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, r) in self.routes.iter().enumerate() {
            let base = format!("route[{i}] ({})", r.prefix);
            let Some((addr, len)) = parse_prefix(&r.prefix) else {
                err(format!("{base}.prefix"), format!("expected a prefix like \"198.18.1.0/24\" or \"2001:db8::/32\" with no host bits set, got {:?}", r.prefix));
                continue;
            };
            if !seen.insert((addr, len)) {
                err(
                    format!("{base}.prefix"),
                    format!("duplicate prefix {}; each prefix may appear once", r.prefix),
                );
            }
            if let Some(target) = route_target(&base, r, nh_names, group_names, err) {
                routes.push(RoutePlan { addr, len, target });
            }
        }
        routes
    }
}

/// A section holds at most `max` entries.
fn check_count(
    section: &str,
    what: &str,
    max: u32,
    n: usize,
    err: &mut impl FnMut(String, String),
) {
    if n > max as usize {
        err(
            section.into(),
            format!("expected at most {max} {what}, got {n}"),
        );
    }
}

/// Records `name` as entry `index`; a name given twice is an error.
fn check_unique<'a>(
    names: &mut Names<'a>,
    name: &'a str,
    index: usize,
    base: &str,
    what: &str,
    err: &mut impl FnMut(String, String),
) {
    if names.insert(name, index as u16).is_some() {
        err(
            format!("{base}.name"),
            format!("{what} {name:?} is defined twice"),
        );
    }
}

/// One `[[nexthop]]`: an existing port and a unicast MAC.
fn validate_nexthop(
    base: &str,
    n: &NextHopSection,
    ports: &[PortPlan],
    err: &mut impl FnMut(String, String),
) -> NextHopPlan {
    let port = match ports.iter().position(|p| p.name == n.port) {
        Some(p) => p,
        None => {
            err(
                format!("{base}.port"),
                format!("expected the name of a [[port]], got {:?}", n.port),
            );
            0
        }
    };
    let mac = match parse_mac(&n.mac) {
        Some(m) if m[0] & 1 == 0 && m != [0; 6] => m,
        _ => {
            err(
                format!("{base}.mac"),
                format!(
                    "expected a unicast MAC like \"02:00:00:00:00:01\", got {:?}",
                    n.mac
                ),
            );
            [0; 6]
        }
    };
    NextHopPlan {
        name: n.name.clone(),
        port,
        mac,
    }
}

/// One `[[group]]`: mode, flowlet timeout, members.
fn validate_group(
    base: &str,
    g: &GroupSection,
    nh_names: &Names,
    err: &mut impl FnMut(String, String),
) -> GroupPlan {
    let mode = match MODES.iter().position(|m| *m == g.mode) {
        Some(m) => m as u8,
        None => {
            err(
                format!("{base}.mode"),
                format!("expected one of {}, got {:?}", MODES.join(", "), g.mode),
            );
            0
        }
    };
    let flowlet_timeout_ns = if (1..=4_000_000).contains(&g.flowlet_timeout_us) {
        (g.flowlet_timeout_us * 1000) as u32
    } else {
        err(
            format!("{base}.flowlet_timeout_us"),
            format!(
                "expected 1-4000000 microseconds, got {}",
                g.flowlet_timeout_us
            ),
        );
        0
    };
    GroupPlan {
        name: g.name.clone(),
        mode,
        flowlet_timeout_ns,
        uet_entropy: g.uet_entropy,
        members: group_members(base, g, nh_names, err),
    }
}

/// A group's members: 1 to MAX_GROUP_MEMBERS distinct next hops, weights
/// 1-255 (invalid members are reported and left out).
fn group_members(
    base: &str,
    g: &GroupSection,
    nh_names: &Names,
    err: &mut impl FnMut(String, String),
) -> Vec<(u16, u8)> {
    if g.members.is_empty() {
        err(
            format!("{base}.members"),
            "expected at least one member".into(),
        );
    }
    if g.members.len() > MAX_GROUP_MEMBERS {
        err(
            format!("{base}.members"),
            format!(
                "expected at most {} members, got {}",
                MAX_GROUP_MEMBERS,
                g.members.len()
            ),
        );
    }
    let mut members = Vec::new();
    for (j, m) in g.members.iter().enumerate() {
        let f = format!("{base}.members[{j}]");
        let nh = match nh_names.get(m.nexthop.as_str()) {
            Some(&n) => n,
            None => {
                err(
                    format!("{f}.nexthop"),
                    format!("expected the name of a [[nexthop]], got {:?}", m.nexthop),
                );
                continue;
            }
        };
        if members.iter().any(|&(n, _)| n == nh) {
            err(
                format!("{f}.nexthop"),
                format!("{:?} is already a member of this group", m.nexthop),
            );
        }
        if !(1..=255).contains(&m.weight) {
            err(
                format!("{f}.weight"),
                format!("expected a weight 1-255, got {}", m.weight),
            );
            continue;
        }
        members.push((nh, m.weight as u8));
    }
    members
}

/// Where a route goes: exactly one of a next hop, a group, or local.
fn route_target(
    base: &str,
    r: &RouteSection,
    nh_names: &Names,
    group_names: &Names,
    err: &mut impl FnMut(String, String),
) -> Option<Target> {
    match (&r.nexthop, &r.group, r.local) {
        (Some(n), None, false) => match nh_names.get(n.as_str()) {
            Some(&id) => Some(Target::NextHop(id)),
            None => {
                err(
                    format!("{base}.nexthop"),
                    format!("expected the name of a [[nexthop]], got {n:?}"),
                );
                None
            }
        },
        (None, Some(g), false) => match group_names.get(g.as_str()) {
            Some(&id) => Some(Target::Group(id)),
            None => {
                err(
                    format!("{base}.group"),
                    format!("expected the name of a [[group]], got {g:?}"),
                );
                None
            }
        },
        (None, None, true) => Some(Target::Local),
        _ => {
            err(
                base.to_string(),
                "expected exactly one of nexthop = \"...\", group = \"...\" or local = true".into(),
            );
            None
        }
    }
}
