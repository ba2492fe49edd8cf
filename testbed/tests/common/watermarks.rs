//! Reading `dataplane show --json` watermarks (watermarkstat's JSON:
//! string values).

use serde_json::Value;

/// `dataplane show --instance INSTANCE --json TARGET...` in `ns`, parsed.
pub fn show_json(ns: &str, instance: &str, target: &str) -> Value {
    let mut args = vec!["show", "--instance", instance, "--json"];
    args.extend(target.split(' '));
    serde_json::from_str(&super::dataplane_out(ns, &args)).expect("show --json")
}

/// `port`'s `col` in a watermarkstat JSON list (string values).
pub fn wm(v: &Value, port: &str, col: &str) -> u64 {
    v.as_array()
        .unwrap()
        .iter()
        .find(|r| r["Port"] == port)
        .and_then(|r| r[col].as_str()?.parse().ok())
        .unwrap_or_else(|| panic!("no {port} {col} in {v}"))
}

/// The shared pool's peak in a `show buffer_pool [persistent-]watermark
/// --json` (watermarkstat -j: `[{"ingress_lossless_pool": "N"}]`).
pub fn pool_wm(ns: &str, instance: &str, target: &str) -> u64 {
    let v = show_json(ns, instance, target);
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    v[0]["ingress_lossless_pool"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no pool peak in {v}"))
}
