//! `show ecn` (ecnconfig -l): the WRED/ECN profiles in force on the
//! egress queues, read from the data plane's tables, with SONiC's
//! WRED_PROFILE field names (green only: the model colours every packet
//! green). A profile equal to SONiC's AZURE_LOSSLESS is named so; others
//! take their `[wred_profile.NAME]` from the configuration when `-c` gives
//! it, else `WRED_PROFILE` (`_<n>` when several). Profiles and fields in
//! byte order, as CONFIG_DB returns them through swss-common.

use anyhow::Result;
use dataplane_common::lossless::{ecn_mode_from_name, WredProfile};

use super::buffer::{distinct, render_blocks, tables, BufferTables};
use super::{Ctx, Output, Target};

pub const TARGETS: &[Target] = &[Target {
    name: "ecn",
    args: None,
    about: "WRED/ECN profiles in force on the queues (ecnconfig -l)",
    show,
    clear: None,
}];

/// SONiC's `ecn` values by code (bit 0 green, 1 yellow, 2 red).
const ECN_NAMES: [&str; 8] = [
    "ecn_none",
    "ecn_green",
    "ecn_yellow",
    "ecn_green_yellow",
    "ecn_red",
    "ecn_green_red",
    "ecn_yellow_red",
    "ecn_all",
];

/// A queue without a WRED profile (thresholds never reached, nothing on).
fn is_off(w: &WredProfile) -> bool {
    w.green_min_threshold == u32::MAX && w.ecn == 0 && w.wred_green_enable == 0
}

/// A profile's fields as SONiC names them.
fn fields(w: &WredProfile) -> Vec<(String, String)> {
    vec![
        (
            "ecn".into(),
            ECN_NAMES[usize::from(w.ecn & 7)].to_string(),
        ),
        ("green_min_threshold".into(), w.green_min_threshold.to_string()),
        ("green_max_threshold".into(), w.green_max_threshold.to_string()),
        (
            "green_drop_probability".into(),
            w.green_drop_probability.to_string(),
        ),
        (
            "wred_green_enable".into(),
            if w.wred_green_enable != 0 { "true" } else { "false" }.to_string(),
        ),
    ]
}

/// ecnconfig -l of the profiles in force; `named` gives the configured
/// name of a profile's values, if known.
pub fn render(t: &BufferTables, named: &dyn Fn(&WredProfile) -> Option<String>) -> Output {
    let profiles = distinct(
        t,
        |pb, tc| Some(pb.wred[tc]).filter(|w| !is_off(w)),
        |_, w| {
            if *w == WredProfile::AZURE_LOSSLESS {
                "AZURE_LOSSLESS".to_string()
            } else {
                named(w).unwrap_or_else(|| "WRED_PROFILE".to_string())
            }
        },
    );
    let mut profiles = profiles;
    // CONFIG_DB's WRED_PROFILE table comes back sorted by name
    profiles.sort_by(|a, b| a.0.cmp(&b.0));
    let blocks: Vec<_> = profiles
        .iter()
        .map(|(name, w)| (format!("Profile: {name}"), fields(w)))
        .collect();
    render_blocks(&blocks)
}

/// The `[wred_profile.NAME]` of the configuration whose values are `w`.
fn config_name(cfg: &dataplane_config::Config, w: &WredProfile) -> Option<String> {
    cfg.wred_profile.iter().find_map(|(name, s)| {
        let same = i64::from(w.green_min_threshold) == s.green_min_threshold
            && i64::from(w.green_max_threshold) == s.green_max_threshold
            && i64::from(w.green_drop_probability) == s.green_drop_probability
            && ecn_mode_from_name(&s.ecn) == Some(w.ecn)
            && (w.wred_green_enable != 0) == s.wred_green_enable;
        same.then(|| name.clone())
    })
}

fn show(ctx: &Ctx) -> Result<Output> {
    let t = tables(ctx)?;
    let cfg = match &ctx.config {
        Some(p) => Some(dataplane_config::Config::load(p)?),
        None => None,
    };
    Ok(render(&t, &|w| cfg.as_ref().and_then(|c| config_name(c, w))))
}
