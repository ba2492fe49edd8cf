//! The configuration reader and validation on arbitrary bytes.

use dataplane_config::{group_value, Config, ConfigError, Plan};

pub fn check(data: &[u8]) {
    // Config::load refuses non-UTF-8 files before parsing (the refusal
    // table covers it); the lossy conversion lets every byte string reach
    // the TOML reader
    let text = String::from_utf8_lossy(data);
    let _ = validated(&text);
}

/// Parses and validates `text`: a refusal names a field for every error,
/// a plan holds what the data plane needs.
pub fn validated(text: &str) -> Option<Plan> {
    let cfg = match Config::parse(text, "fuzz.toml") {
        Ok(c) => c,
        Err(e) => {
            refusal(&e);
            return None;
        }
    };
    match cfg.validate("fuzz.toml") {
        Ok(plan) => {
            plan_holds(&plan);
            Some(plan)
        }
        Err(e) => {
            refusal(&e);
            None
        }
    }
}

/// Every refusal lists at least one error, each naming a field and saying
/// what was expected.
pub fn refusal(e: &ConfigError) {
    assert!(!e.errors.is_empty(), "a refusal without errors");
    for f in &e.errors {
        assert!(!f.field.is_empty(), "an error without its field: {f:?}");
        assert!(!f.message.is_empty(), "an error without a message: {f:?}");
    }
    let text = e.to_string();
    assert!(text.contains("nothing applied"));
}

/// A validated plan is consistent: references resolve, every group's
/// data-plane value can be built (all ports up, then all down).
pub fn plan_holds(plan: &Plan) {
    assert!(!plan.ports.is_empty());
    for n in &plan.nexthops {
        assert!(n.port < plan.ports.len());
    }
    for g in &plan.groups {
        assert!(!g.members.is_empty());
        for &(nh, w) in &g.members {
            assert!(usize::from(nh) < plan.nexthops.len());
            assert!(w > 0);
        }
        for up in [true, false] {
            if let Err(e) = group_value(plan, g, &|_| up, None) {
                panic!("validated group {} has no data-plane value: {e:#}", g.name);
            }
        }
    }
}
