//! Network-namespace test fabrics.
//!
//! Every namespace is created by a guard and removed when the guard drops,
//! on success, failure and panic; a namespace left by a killed run (its
//! creator's pid is gone) is removed by the next run. Names are
//! `dpt-<tag>-<pid>` so they never collide with anything the host owns.
//! Addresses come from 198.18.0.0/15 and 2001:db8::/32 only.

// `RunResult::to_json` builds one nested `json!` of every field
#![recursion_limit = "256"]

pub mod bench;
pub mod controller;
pub mod convergence;
pub mod fabric;
pub mod fabricrun;
pub mod frr;
pub mod host;
pub mod lbfabric;
pub mod mapdump;
pub mod netns;
pub mod plot;
pub mod progstats;
pub mod raw;

pub mod config_text;
pub mod scenario;
pub mod scenes;
pub mod seqflows;
pub mod slow;
pub mod testrun;
pub mod topo;
pub mod uetincast;

/// The `dataplane` controller binary the lab runs: `$DATAPLANE_BIN` if
/// set, else `dataplane` beside the running executable's profile directory
/// (`target/<profile>/dataplane` for both `target/<profile>/deps/<test>`
/// and `target/<profile>/<bench or demo>`). `cargo xtask test` builds it
/// before the tests; a missing binary is a clear panic, not a skipped test.
pub fn dataplane_bin() -> String {
    if let Some(p) = std::env::var_os("DATAPLANE_BIN") {
        return p.to_string_lossy().into_owned();
    }
    let exe = std::env::current_exe().expect("current_exe");
    let mut dir = exe.parent().expect("executable directory").to_path_buf();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let bin = dir.join("dataplane");
    assert!(
        bin.exists(),
        "no controller binary at {} (cargo build -p dataplane-user --bin dataplane, \
         or `cargo xtask test`, or set DATAPLANE_BIN)",
        bin.display()
    );
    bin.to_string_lossy().into_owned()
}
