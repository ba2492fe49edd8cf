//! `dataplane config import-sonic` / `export-sonic` as a user runs them:
//! the output passes `config check`, findings go to standard error, and a
//! refused import (malformed JSON, --strict, the dynamic buffer model)
//! exits non-zero and leaves no file behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_dataplane")
}

fn input(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../dataplane-config/tests/sonic")
        .join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .output()
        .expect("run dataplane")
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("dp-sonic-cli-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The directory holds nothing: no output, no temporary file.
fn empty(d: &Path) -> bool {
    std::fs::read_dir(d).unwrap().next().is_none()
}

#[test]
fn import_writes_a_config_that_passes_check_and_exports_back() {
    let d = tmpdir("ok");
    let out = d.join("leaf.toml");
    let r = run(&[
        "config",
        "import-sonic",
        input("mellanox_static.json").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("not honoured: PORT|Ethernet0 lanes"), "{err}");
    let r = run(&["config", "check", "-c", out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    assert!(String::from_utf8_lossy(&r.stdout).contains("valid, instance \"leaf1\", 3 port(s)"));
    let r = run(&["config", "export-sonic", out.to_str().unwrap()]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let json = String::from_utf8_lossy(&r.stdout);
    assert!(json.contains("\"pg_lossless_100000_5m_profile\""), "{json}");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn refused_imports_write_nothing() {
    let d = tmpdir("refused");
    let out = d.join("out.toml");
    let bad = d.join("bad.json");
    std::fs::write(&bad, "{\"PORT\": {").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![bad.display().to_string()], "malformed JSON at line 1"),
        (
            vec![
                input("unsupported.json").display().to_string(),
                "--strict".into(),
            ],
            "BUFFER_POOL|ingress_lossless_pool.xoff",
        ),
        (
            vec![input("dynamic.json").display().to_string()],
            "DEVICE_METADATA|localhost.buffer_model",
        ),
    ];
    for (args, says) in cases {
        let mut a = vec!["config".to_string(), "import-sonic".into()];
        a.extend(args);
        a.extend(["-o".to_string(), out.display().to_string()]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let r = run(&a);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{a:?} succeeded");
        assert!(
            err.contains(says) && err.contains("nothing written"),
            "{a:?}: {err}"
        );
        assert!(!out.exists(), "{a:?} wrote {}", out.display());
    }
    std::fs::remove_file(&bad).unwrap();
    assert!(empty(&d), "files left in {}", d.display());
    let _ = std::fs::remove_dir_all(&d);
}
