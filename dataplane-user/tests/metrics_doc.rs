//! The metrics page (`docs/src/reference/metrics.md`) against the code that
//! names the metrics: every per-port family of `telemetry/metrics.rs`
//! (`help`'s match arms, `_total` for counters) and every literal
//! `dataplane_...` metric name there and in `show/dcbx.rs` must appear on
//! the page, and every metric the page names must exist in the code.

use std::collections::BTreeSet;

const METRICS_RS: &str = include_str!("../src/telemetry/metrics.rs");
const DCBX_RS: &str = include_str!("../src/show/dcbx.rs");
const PAGE: &str = include_str!("../../docs/src/reference/metrics.md");

/// Names in the code: `help`'s arms as Prometheus names, and literals.
fn code_names() -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let start = METRICS_RS.find("fn help(base").expect("fn help");
    let end = start + METRICS_RS[start..].find("_ =>").expect("default arm");
    let body = &METRICS_RS[start..end];
    // each arm: "a" | "b" => ( "help", "kind" ),
    for arm in body.split("),").filter(|a| a.contains("=>")) {
        let (pat, rest) = arm.split_once("=>").unwrap();
        let kind = if rest.contains("\"gauge\"") {
            "gauge"
        } else {
            "counter"
        };
        for base in pat.split('"').skip(1).step_by(2) {
            if base
                .chars()
                .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())
                && !base.is_empty()
            {
                names.insert(if kind == "counter" {
                    format!("dataplane_{base}_total")
                } else {
                    format!("dataplane_{base}")
                });
            }
        }
    }
    for src in [METRICS_RS, DCBX_RS] {
        for piece in src.split('"').skip(1) {
            if let Some(rest) = piece.strip_prefix("dataplane_") {
                let n: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || *c == '_' || c.is_ascii_digit())
                    .collect();
                if !n.is_empty() && !n.ends_with('_') {
                    names.insert(format!("dataplane_{n}"));
                }
            }
        }
    }
    names
}

fn page_names() -> BTreeSet<String> {
    PAGE.split('`')
        .skip(1)
        .step_by(2)
        .filter(|s| s.starts_with("dataplane_") && !s.contains('<') && !s.contains('*'))
        .map(str::to_string)
        .collect()
}

#[test]
fn every_metric_in_the_code_is_on_the_page_and_back() {
    let code = code_names();
    let page = page_names();
    assert!(
        code.len() > 30,
        "too few names read from the code: {code:?}"
    );
    let missing: Vec<_> = code.difference(&page).collect();
    let unknown: Vec<_> = page.difference(&code).collect();
    assert!(
        missing.is_empty() && unknown.is_empty(),
        "docs/src/reference/metrics.md is out of date:\n  in the code, not on the page: {missing:?}\n  on the page, not in the code: {unknown:?}"
    );
}
