//! The configuration reference (`dataplane_config::reference`) against the
//! schema and the committed guide page: a key in one and not the other, a
//! documented default that is not the schema's, or a stale
//! `docs/src/reference/config.md` fails.
//!
//! The schema's keys are read from the schema itself: every section denies
//! unknown fields, and serde's refusal of an unknown key lists every field
//! the section accepts.

use std::collections::BTreeSet;
use std::path::PathBuf;

use dataplane_config::reference::{markdown, top_level_keys, KEYS, SECTIONS};
use dataplane_config::Config;

const PROBE: &str = "zz_probe_key";

/// The fields a section accepts, from serde's unknown-field message for a
/// document whose section starts with the probe key.
fn accepted(doc: &str) -> BTreeSet<String> {
    let err = match toml::from_str::<Config>(doc) {
        Ok(_) => panic!("the probe was accepted in:\n{doc}"),
        Err(e) => e.to_string(),
    };
    let at = err
        .find(&format!("unknown field `{PROBE}`"))
        .unwrap_or_else(|| panic!("no unknown-field error for:\n{doc}\ngot: {err}"));
    let rest = &err[at..];
    let line = rest.lines().next().unwrap_or("");
    let expected = line
        .split_once("expected")
        .map(|(_, e)| e)
        .unwrap_or_else(|| panic!("no expected list in {line:?}"));
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// A document whose section `id` starts with the probe key (required
/// fields need not be there: the probe comes first).
fn probe_doc(id: &str) -> String {
    match id {
        "group.members" => format!("[[group]]\nmembers = [{{ {PROBE} = 1 }}]\n"),
        "routing.policy" => format!("[routing]\npolicy = [{{ {PROBE} = 1 }}]\n"),
        "port" | "nexthop" | "group" | "route" => format!("[[{id}]]\n{PROBE} = 1\n"),
        _ => format!("[{}]\n{PROBE} = 1\n", id.replace(".NAME", ".X")),
    }
}

#[test]
fn every_schema_key_is_documented_and_every_documented_key_exists() {
    let mut problems = Vec::new();
    // top level
    let schema: BTreeSet<String> = accepted(&format!("{PROBE} = 1\n"));
    let documented: BTreeSet<String> = top_level_keys().into_iter().map(str::to_string).collect();
    for k in schema.difference(&documented) {
        problems.push(format!(
            "top-level key `{k}` is in the schema but has no section in the reference"
        ));
    }
    for k in documented.difference(&schema) {
        problems.push(format!(
            "section `{k}` is in the reference but not in the schema"
        ));
    }
    for s in SECTIONS.iter().filter(|s| !s.free_form) {
        let schema = accepted(&probe_doc(s.id));
        let documented: BTreeSet<String> = KEYS
            .iter()
            .filter(|k| k.section == s.id)
            .map(|k| k.key.to_string())
            .collect();
        for k in schema.difference(&documented) {
            problems.push(format!(
                "{}: `{k}` is in the schema but not in the reference",
                s.header
            ));
        }
        for k in documented.difference(&schema) {
            problems.push(format!(
                "{}: `{k}` is in the reference but not in the schema",
                s.header
            ));
        }
    }
    for k in KEYS {
        if !SECTIONS.iter().any(|s| s.id == k.section && !s.free_form) {
            problems.push(format!(
                "key `{}` names an unknown section `{}`",
                k.key, k.section
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Minimal documents holding each section with its required keys only, so
/// every other key takes the schema's default.
fn minimal(id: &str) -> Option<String> {
    Some(match id {
        "switch" => "[switch]\n".into(),
        "port" => "[[port]]\nname = \"p\"\n".into(),
        "group" => "[[group]]\nname = \"g\"\nmembers = [{ nexthop = \"n\" }]\n".into(),
        "group.members" => "[[group]]\nname = \"g\"\nmembers = [{ nexthop = \"n\" }]\n".into(),
        "route" => "[[route]]\nprefix = \"198.18.0.0/15\"\n".into(),
        "routing" => "[routing]\n".into(),
        "buffer" => "[buffer]\n".into(),
        "wred_profile.NAME" => {
            "[wred_profile.X]\ngreen_min_threshold = 1\ngreen_max_threshold = 2\n".into()
        }
        "buffer_profile.NAME" => "[buffer_profile.X]\n".into(),
        "switch_trimming" => "[switch_trimming]\ndscp_value = 48\nqueue_index = 6\n".into(),
        "pfcwd" => "[pfcwd]\n".into(),
        "dcbx" => "[dcbx]\n".into(),
        _ => return None,
    })
}

#[test]
fn documented_defaults_are_the_schema_defaults() {
    let mut problems = Vec::new();
    for k in KEYS.iter().filter(|k| !k.default.starts_with('(')) {
        let Some(doc) = minimal(k.section) else {
            problems.push(format!(
                "{}.{}: no minimal document to check its default",
                k.section, k.key
            ));
            continue;
        };
        let cfg: Config = toml::from_str(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
        let debug = format!("{cfg:?}");
        let want = format!("{}: {}", k.key, k.default);
        if !debug.contains(&want) {
            problems.push(format!(
                "{}.{}: documented default {} not found in the parsed minimal section ({debug})",
                k.section, k.key, k.default
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_committed_page_is_the_generated_one() {
    let page = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/src/reference/config.md");
    let want = markdown();
    if std::env::var_os("UPDATE_REFERENCE").is_some() {
        std::fs::write(&page, &want).expect("write the page");
        return;
    }
    let have = std::fs::read_to_string(&page).unwrap_or_default();
    assert!(
        have == want,
        "{} differs from `dataplane config reference`: regenerate it with \
         `UPDATE_REFERENCE=1 cargo test -p dataplane-config --test reference` \
         (or `dataplane config reference > docs/src/reference/config.md`)",
        page.display()
    );
}
