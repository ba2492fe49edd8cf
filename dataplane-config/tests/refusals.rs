//! Every refusal of the configuration, table-driven
//! (`common/refusal_cases.rs`, shared with the reload test against a
//! running instance): the file is refused, and an error names the case's
//! field and says what was expected.

#[path = "common/refusal_cases.rs"]
mod refusal_cases;

use dataplane_config::Config;
use refusal_cases::{cases, field, render};

/// Loads a file the way the controller does (bytes from disk).
fn load(bytes: &[u8], tag: &str) -> Result<dataplane_config::Plan, dataplane_config::ConfigError> {
    let dir = std::env::temp_dir().join(format!("dataplane-refusals-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{tag}.toml"));
    std::fs::write(&path, bytes).unwrap();
    let r = Config::load(&path).and_then(|c| c.validate(&path.display().to_string()));
    let _ = std::fs::remove_file(&path);
    r
}

#[test]
fn the_base_is_valid() {
    let text = refusal_cases::base("rf", "eth1", "eth2");
    let plan = load(text.as_bytes(), "base").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(plan.ports.len(), 2);
    assert!(plan.buffer.is_some() && plan.pfcwd.is_some());
}

#[test]
fn every_refusal_names_its_field() {
    let mut failed = Vec::new();
    let all = cases();
    for (i, c) in all.iter().enumerate() {
        let bytes = render(c, "rf", "eth1", "eth2");
        let want = field(c, "eth1", "eth2");
        match load(&bytes, &format!("case{i}")) {
            Ok(_) => failed.push(format!("{}: accepted", c.name)),
            Err(e) => {
                let hit = e
                    .errors
                    .iter()
                    .any(|f| f.field == want && f.message.contains(c.says));
                if !hit {
                    failed.push(format!(
                        "{}: no error on {want:?} saying {:?}; got:\n{e}",
                        c.name, c.says
                    ));
                }
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases failed:\n{}",
        failed.len(),
        all.len(),
        failed.join("\n")
    );
    // every case's name is distinct (the reload test reports by name)
    let mut names: Vec<_> = all.iter().map(|c| c.name).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all.len());
}
