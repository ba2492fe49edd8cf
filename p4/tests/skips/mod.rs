//! A test that cannot check something says so: on stderr, and as a line
//! in the file `DATAPLANE_SKIP_LOG` names (`cargo xtask test` and `cargo
//! xtask p4 test` set it and list those lines in their P4 summary), so a
//! skip is never a silent pass.

use std::io::Write;

/// Reports that `what` was not checked, and why.
pub fn skipped(what: &str, why: &str) {
    eprintln!("SKIPPED {what}: {why}");
    let Some(path) = std::env::var_os("DATAPLANE_SKIP_LOG") else {
        return;
    };
    // one short append per line: lines from parallel tests do not mix
    let line = format!("{what}: {why}\n");
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()));
    if let Err(e) = written {
        panic!("DATAPLANE_SKIP_LOG={}: {e}", path.to_string_lossy());
    }
}
