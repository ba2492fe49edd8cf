//! `[routing]`: routes from the kernel FIB, the learned groups' policy and
//! the route table sizes.

use crate::values::parse_prefix;
use crate::*;

impl Config {
    /// `None` for no section or `source = "static"`.
    pub(super) fn validate_routing(
        &self,
        err: &mut impl FnMut(String, String),
    ) -> Option<RoutingPlan> {
        let r = self.routing.as_ref()?;
        match r.source.as_str() {
            "static" => return None,
            "kernel" => {}
            other => err(
                "routing.source".into(),
                format!("expected kernel or static, got {other:?}"),
            ),
        }
        let table = if (1..=i64::from(u32::MAX)).contains(&r.table) && r.table != 255 {
            r.table as u32
        } else {
            err(
                "routing.table".into(),
                format!("expected a kernel table id 1-4294967295 other than 255 (local), e.g. 254 (main), got {}", r.table),
            );
            254
        };
        let default_mode = mode_index("routing.default_mode", &r.default_mode, err);
        let flowlet_timeout_ns = if (1..=4_000_000).contains(&r.flowlet_timeout_us) {
            (r.flowlet_timeout_us * 1000) as u32
        } else {
            err(
                "routing.flowlet_timeout_us".into(),
                format!(
                    "expected 1-4000000 microseconds, got {}",
                    r.flowlet_timeout_us
                ),
            );
            0
        };
        let limit = |field: &str, v: i64, cap: u32, err: &mut dyn FnMut(String, String)| {
            if (1..=i64::from(cap)).contains(&v) {
                v as u32
            } else {
                err(
                    format!("routing.{field}"),
                    format!("expected 1-{cap} route table entries, got {v}"),
                );
                cap
            }
        };
        let max_routes_v4 = limit("max_routes_v4", r.max_routes_v4, ROUTES_V4_MAX, err);
        let max_routes_v6 = limit("max_routes_v6", r.max_routes_v6, ROUTES_V6_MAX, err);
        let mut policy = Vec::new();
        for (i, p) in r.policy.iter().enumerate() {
            let base = format!("routing.policy[{i}]");
            let mode = mode_index(&format!("{base}.mode"), &p.mode, err);
            match parse_prefix(&p.prefix) {
                Some((a, l)) if policy.iter().any(|&(b, m, _)| (b, m) == (a, l)) => err(
                    format!("{base}.prefix"),
                    format!("{} has a policy already", p.prefix),
                ),
                Some((a, l)) => policy.push((a, l, mode)),
                None => err(
                    format!("{base}.prefix"),
                    format!("expected an IPv4 or IPv6 prefix (e.g. \"198.18.0.0/15\") with no host bits, got {:?}", p.prefix),
                ),
            }
        }
        Some(RoutingPlan {
            table,
            default_mode,
            flowlet_timeout_ns,
            max_routes_v4,
            max_routes_v6,
            policy,
            uet_entropy: r.uet_entropy,
        })
    }
}

fn mode_index(field: &str, mode: &str, err: &mut impl FnMut(String, String)) -> u8 {
    match MODES.iter().position(|m| *m == mode) {
        Some(m) => m as u8,
        None => {
            err(
                field.into(),
                format!("expected one of {}, got {mode:?}", MODES.join(", ")),
            );
            0
        }
    }
}
