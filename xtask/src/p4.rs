//! The P4 steps of `cargo xtask test` and `cargo xtask p4 test`: the
//! programs compiled by the compilers there are (p4c for v1model, bf-p4c
//! or p4test for TNA), whose descriptions (p4info, bfrt.json) the tests
//! check the generated entries against; the conformance corpus as STF
//! tests on bmv2 simple_switch and the generated CLI files loaded into it
//! (`p4/run-stf.sh`). Each step that lacks its tool says so in the
//! summary (`summary.rs`) instead of passing silently.

use std::ffi::OsString;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::summary::{mins, Summary};
use crate::{cargo, machine, p4tools, root, run, setup};

/// `cargo xtask p4 test`: the P4 crate's tests and the corpus on eBPF,
/// then the steps with the P4 tools.
pub fn test() -> Result<()> {
    setup::setup()?;
    machine::require_root("the corpus runs through the eBPF programs in a network namespace")?;
    let mut s = Summary::new()?;
    let r = p4_test_steps(&mut s);
    s.finish("cargo xtask p4 test", r)
}

fn p4_test_steps(s: &mut Summary) -> Result<()> {
    let env = s.timed(before_tests)?;
    // the generator's tests (golden files, names, entries against the
    // compilers' p4info, the STF files) and the bmv2 tests
    run(cargo()
        .args([
            "test",
            "-p",
            "dataplane-p4",
            "--test",
            "p4",
            "--test",
            "p4_bmv2",
        ])
        .args(["--", "--nocapture"])
        .envs(env.iter().cloned()))?;
    // the corpus through the eBPF programs
    run(cargo().args(["build", "-p", "dataplane-user", "--bin", "dataplane"]))?;
    run(cargo().args([
        "test",
        "-p",
        "testbed",
        "--test",
        "p4_corpus",
        "--",
        "--nocapture",
    ]))?;
    s.timed(|s| after_tests(s, &env))
}

/// Before the tests: the programs compiled where the compilers are; the
/// environment for the test run (the compilers' outputs, the skip log,
/// the STF folder the corpus test writes).
pub fn before_tests(s: &mut Summary) -> Result<Vec<(&'static str, OsString)>> {
    let stf = stf_dir();
    let _ = std::fs::remove_dir_all(&stf);
    let mut env: Vec<(&'static str, OsString)> = Vec::new();
    compile_v1model(s, &mut env)?;
    compile_tna(s, &mut env)?;
    let (var, log) = s.skip_log_env();
    env.push((var, log.into()));
    env.push(("P4_STF_OUT", stf.into()));
    Ok(env)
}

/// After the tests passed: what they checked against the compilers'
/// outputs, then the corpus on bmv2.
pub fn after_tests(s: &mut Summary, env: &[(&'static str, OsString)]) -> Result<()> {
    let has = |v: &str| env.iter().any(|(k, _)| *k == v);
    if has("P4INFO_BMV2") {
        s.passed("entries vs p4c's p4info: every configuration's generated P4Runtime entries (tables, fields, match kinds, widths, actions, parameters) checked by p4runtime_entries_match_the_compilers_p4info");
    } else {
        s.skipped("entries vs p4c's p4info: not checked (the v1model program was not compiled)");
    }
    run_stf_on_bmv2(s, &stf_dir())
}

/// Where the corpus test writes the STF files (P4_STF_OUT).
fn stf_dir() -> PathBuf {
    root().join("target/p4/stf")
}

/// The v1model program with p4c, where installed.
fn compile_v1model(s: &mut Summary, env: &mut Vec<(&'static str, OsString)>) -> Result<()> {
    if !machine::on_path("p4c") {
        s.skipped(format!(
            "v1model: not compiled: {}",
            p4tools::absent_reason()
        ));
        return Ok(());
    }
    let t = Instant::now();
    let build = root().join("target/p4/build");
    run(Command::new("p4c")
        .args(["--target", "bmv2", "--arch", "v1model", "-o"])
        .arg(&build)
        .arg("--p4runtime-files")
        .arg(build.join("p4info.json"))
        .args(["--p4runtime-format", "json"])
        .arg(root().join("p4/v1model/dataplane.p4")))?;
    env.push(("P4INFO_BMV2", build.join("p4info.json").into()));
    let version = Command::new("p4c")
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.lines().find(|l| !l.trim().is_empty()).map(str::to_string))
        .map(|v| v.split(" (").next().unwrap_or("p4c").trim().to_string())
        .unwrap_or_else(|| "p4c".into());
    s.passed(format!(
        "v1model: compiled by {} (target/p4/build/dataplane.json) [{}]",
        version.trim(),
        mins(t.elapsed())
    ));
    Ok(())
}

/// The corpus's STF tests on simple_switch and the golden CLI files
/// loaded into it (p4/run-stf.sh: exit 77 = tools missing), its output
/// shown and its count lines taken into the summary.
fn run_stf_on_bmv2(s: &mut Summary, stf: &Path) -> Result<()> {
    let written = std::fs::read_dir(stf)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().extension().is_some_and(|x| x == "stf"))
                .count()
        })
        .unwrap_or(0);
    if written == 0 {
        s.failed(format!(
            "bmv2: no STF tests in {} (the corpus test did not write them)",
            stf.display()
        ));
        return Ok(());
    }
    let t = Instant::now();
    let mut child = Command::new("sh")
        .arg(root().join("p4/run-stf.sh"))
        .arg(stf)
        .arg(root().join("target/p4/stf-run"))
        .current_dir(root())
        .stdout(Stdio::piped())
        .spawn()
        .context("starting p4/run-stf.sh")?;
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().context("run-stf.sh stdout")?).lines() {
        let line = line?;
        println!("{line}");
        lines.push(line);
    }
    let status = child.wait()?;
    let took = mins(t.elapsed());
    let line = |prefix: &str| lines.iter().find(|l| l.starts_with(prefix)).cloned();
    if status.code() == Some(77) {
        let why = line("p4/run-stf.sh: SKIPPED").unwrap_or_else(|| "p4/run-stf.sh: SKIPPED".into());
        s.skipped(format!(
            "bmv2: the corpus's {written} STF tests and the CLI files not run: {why}"
        ));
        return Ok(());
    }
    // "bmv2: P of N STF cases passed", "bmv2 CLI files: L of M loaded ..."
    // or "bmv2 CLI files: SKIPPED, ..."
    let mut failed = false;
    for (prefix, what, took) in [
        ("bmv2: ", "STF", format!(" [run-stf.sh: {took}]")),
        ("bmv2 CLI files: ", "CLI files", String::new()),
    ] {
        match line(prefix) {
            Some(l) if l.contains("SKIPPED") => s.skipped(l),
            Some(l) if all_of(&l) => s.passed(format!("{l}{took}")),
            Some(l) => {
                failed = true;
                s.failed(format!("{l} (logs in target/p4/stf-run)"))
            }
            None => {
                failed = true;
                s.failed(format!("bmv2 {what}: p4/run-stf.sh gave no count"))
            }
        }
    }
    if !status.success() && !failed {
        s.failed(format!("bmv2: p4/run-stf.sh failed ({status})"));
    }
    Ok(())
}

/// Whether a "P of N" line says all N.
fn all_of(line: &str) -> bool {
    let w: Vec<&str> = line.split_whitespace().collect();
    w.windows(3)
        .find(|x| x[1] == "of")
        .is_some_and(|x| x[0] == x[2] && x[0].parse::<u32>().is_ok_and(|n| n > 0))
}

/// The TNA program with bf-p4c, or type-checked by p4test with the
/// open-source TNA includes, where installed.
fn compile_tna(s: &mut Summary, env: &mut Vec<(&'static str, OsString)>) -> Result<()> {
    let tofino_inc = std::env::var_os("TOFINO_P4INCLUDE").map(PathBuf::from);
    let t = Instant::now();
    if machine::on_path("bf-p4c") {
        let out = root().join("target/p4/tna");
        run(Command::new("bf-p4c")
            .args([
                "--target",
                "tofino",
                "--arch",
                "tna",
                "--verbose",
                "1",
                "-g",
                "-o",
            ])
            .arg(&out)
            .arg("--p4runtime-files")
            .arg(out.join("p4info.json"))
            .args(["--p4runtime-format", "json"])
            .arg(root().join("p4/tna/dataplane.p4")))?;
        env.push(("P4INFO_TOFINO", out.join("p4info.json").into()));
        env.push(("BFRT_JSON_TOFINO", out.join("bfrt.json").into()));
        env.push((
            "DYNHASH_TOFINO",
            out.join("pipe/dataplane.dynhash.json").into(),
        ));
        // the stages the program takes (12 on Tofino 1): the last
        // allocation's ingress and egress lines of bf-p4c's summary
        let summary =
            std::fs::read_to_string(out.join("pipe/logs/table_summary.log")).unwrap_or_default();
        let count = |gress: &str| {
            summary
                .lines()
                .rev()
                .filter(|l| l.contains(&format!("Number of stages for {gress} table allocation:")))
                .find_map(|l| l.rsplit(':').next()?.trim().parse::<u32>().ok())
                .map_or("?".to_string(), |n| n.to_string())
        };
        s.passed(format!(
            "tna: compiled with bf-p4c (target/p4/tna/pipe/tofino.bin): {} ingress and {} egress stages of 12 [{}]",
            count("ingress"),
            count("egress"),
            mins(t.elapsed())
        ));
        return Ok(());
    }
    let inc = tofino_inc.filter(|d| d.join("tna.p4").exists());
    match (machine::on_path("p4test"), inc) {
        (true, Some(inc)) => {
            run(Command::new("p4test")
                .arg("-D__TARGET_TOFINO__=1")
                .arg("-I")
                .arg(&inc)
                .arg(root().join("p4/tna/dataplane.p4")))?;
            s.passed(format!("tna: type-checked by p4test with the open-source TNA includes in {} [{}] (bf-p4c, which would compile it for Tofino, is not installed)", inc.display(), mins(t.elapsed())));
        }
        (true, None) => s.skipped("tna: not type-checked: p4test is installed but no TNA includes are (set TOFINO_P4INCLUDE to a folder with tna.p4, e.g. p4c's backends/tofino/bf-p4c/p4include; the shared toolchain has none), and bf-p4c is not installed"),
        (false, _) => s.skipped(format!("tna: not type-checked: neither bf-p4c nor p4test is installed ({})", p4tools::absent_reason())),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::all_of;

    #[test]
    fn a_count_line_passes_only_when_all_of_a_nonzero_count() {
        assert!(all_of("bmv2: 52 of 52 STF cases passed"));
        assert!(!all_of("bmv2: 51 of 52 STF cases passed"));
        assert!(!all_of("bmv2: 0 of 0 STF cases passed"));
        assert!(!all_of("bmv2 CLI files: SKIPPED, p4c is not on PATH"));
    }
}
