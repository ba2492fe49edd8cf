//! The entry point: a plan's entries for a target, rendered in every
//! format the target reads (refused whole, naming the field, when the plan
//! asks what the target cannot express).

use crate::ops::table_ops;
use crate::render::{bfrt::render_bfrt, cli::render_cli, p4runtime::render_p4runtime};
use crate::target::{Options, RefusedFeature, Target};
use dataplane_config::Plan;

/// Everything `dataplane p4 entries` writes for one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Entries {
    /// simple_switch_CLI commands (bmv2); empty for Tofino.
    pub cli: String,
    /// P4Runtime `WriteRequest` (protobuf JSON mapping) of the table
    /// entries (and, bmv2, clone sessions).
    pub p4runtime_json: String,
    /// bfrt_python script (Tofino): tables, ports, traffic manager.
    pub bfrt_py: Option<String>,
}

/// Entries for `target` with [`Options::default`].
pub fn entries(plan: &Plan, target: Target) -> Result<P4Entries, RefusedFeature> {
    entries_with(plan, target, &Options::default())
}

/// Entries for `target`.
pub fn entries_with(
    plan: &Plan,
    target: Target,
    opts: &Options,
) -> Result<P4Entries, RefusedFeature> {
    let ops = table_ops(plan, target, opts)?;
    Ok(match target {
        Target::Bmv2 => P4Entries {
            cli: render_cli(&ops),
            p4runtime_json: render_p4runtime(&ops),
            bfrt_py: None,
        },
        Target::Tofino => P4Entries {
            cli: String::new(),
            p4runtime_json: render_p4runtime(&ops),
            bfrt_py: Some(render_bfrt(plan, &ops, opts)),
        },
    })
}
