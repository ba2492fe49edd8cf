//! What the P4 checks did, printed at the end of `cargo xtask test` and
//! `cargo xtask p4 test`: each check passed (with its counts and time),
//! skipped (with the reason) or failed, and the skips the tests reported
//! themselves through the file `DATAPLANE_SKIP_LOG` names (a test that
//! cannot check something writes a line there), so that no P4 check
//! passes silently. A failed check fails the command after the summary.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

#[derive(Clone, Copy, PartialEq)]
enum Outcome {
    Passed,
    Skipped,
    Failed,
}

pub struct Summary {
    rows: Vec<(Outcome, String)>,
    skip_log: PathBuf,
    started: Instant,
    /// Time spent in the steps run through [`Summary::timed`].
    p4_time: Duration,
}

impl Summary {
    /// A new summary with an empty skip log (target/p4/skips.log).
    pub fn new() -> Result<Self> {
        let skip_log = crate::root().join("target/p4/skips.log");
        std::fs::create_dir_all(skip_log.parent().expect("target/p4"))?;
        std::fs::write(&skip_log, "")?;
        Ok(Summary {
            rows: Vec::new(),
            skip_log,
            started: Instant::now(),
            p4_time: Duration::ZERO,
        })
    }

    /// Runs P4 steps, adding their time to the P4 time the summary shows.
    pub fn timed<T>(&mut self, steps: impl FnOnce(&mut Self) -> T) -> T {
        let t = Instant::now();
        let r = steps(self);
        self.p4_time += t.elapsed();
        r
    }

    /// The environment variable and file the tests report their skips to.
    pub fn skip_log_env(&self) -> (&'static str, PathBuf) {
        ("DATAPLANE_SKIP_LOG", self.skip_log.clone())
    }

    pub fn passed(&mut self, what: impl Into<String>) {
        self.rows.push((Outcome::Passed, what.into()));
    }

    pub fn skipped(&mut self, what: impl Into<String>) {
        self.rows.push((Outcome::Skipped, what.into()));
    }

    pub fn failed(&mut self, what: impl Into<String>) {
        self.rows.push((Outcome::Failed, what.into()));
    }

    /// Prints the summary; fails when `result` is an error or a check
    /// failed.
    pub fn finish(self, title: &str, result: Result<()>) -> Result<()> {
        let tests: BTreeSet<String> = std::fs::read_to_string(&self.skip_log)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(str::to_string)
            .collect();
        let count = |o| self.rows.iter().filter(|(r, _)| *r == o).count();
        println!("\n== {title}: P4 summary ==");
        for (o, what) in &self.rows {
            let tag = match o {
                Outcome::Passed => "pass",
                Outcome::Skipped => "SKIP",
                Outcome::Failed => "FAIL",
            };
            println!("  {tag}  {what}");
        }
        for t in &tests {
            println!("  SKIP  (test) {t}");
        }
        println!(
            "P4: {} passed, {} skipped, {} failed; {} skips reported by the tests (listed above; {}); the P4 steps took {} of this command's {}",
            count(Outcome::Passed),
            count(Outcome::Skipped),
            count(Outcome::Failed),
            tests.len(),
            self.skip_log.display(),
            mins(self.p4_time),
            mins(self.started.elapsed())
        );
        result?;
        if count(Outcome::Failed) > 0 {
            bail!("{title}: a P4 check failed (see the summary above)");
        }
        Ok(())
    }
}

/// A duration as `1m 05s` / `12.3 s`.
pub fn mins(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s < 60.0 {
        format!("{s:.1} s")
    } else {
        format!("{}m {:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}
