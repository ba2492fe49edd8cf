//! `cargo xtask p4 test`: the P4 generator's tests, the conformance corpus
//! on eBPF and as STF tests on bmv2, and the compilers' own descriptions of
//! the programs, each where its tool is installed (skipped, saying so,
//! where not).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::{cargo, root, run, setup};

pub fn test() -> Result<()> {
    setup::setup()?;
    setup::require_root("the corpus runs through the eBPF programs in a network namespace")?;
    generator_and_corpus_tests()?;
    let stf = write_stf()?;
    // the compilers' own descriptions of the programs (p4info, bfrt.json),
    // against which the generated entries are checked
    let mut checks: Vec<(&str, PathBuf)> = Vec::new();
    compile_v1model(&mut checks)?;
    run_stf_on_bmv2(&stf)?;
    compile_tna(&mut checks)?;
    check_entries_against_compilers(&checks)
}

/// The generator's tests (golden files, name check) and the corpus through
/// the eBPF programs.
fn generator_and_corpus_tests() -> Result<()> {
    run(cargo().args([
        "test",
        "-p",
        "dataplane-p4",
        "--test",
        "p4",
        "--test",
        "p4_bmv2",
        "--",
        "--nocapture",
    ]))?;
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
    Ok(())
}

/// The corpus as STF tests, in target/p4/stf.
fn write_stf() -> Result<PathBuf> {
    let stf = root().join("target/p4/stf");
    run(cargo()
        .args([
            "test",
            "-p",
            "dataplane-p4",
            "--test",
            "p4",
            "corpus_loads_and_becomes_stf_tests",
        ])
        .env("P4_STF_OUT", &stf))?;
    println!("STF tests written to {}", stf.display());
    Ok(stf)
}

/// The v1model program with p4c, where installed.
fn compile_v1model(checks: &mut Vec<(&'static str, PathBuf)>) -> Result<()> {
    if setup::on_path("p4c") {
        let build = root().join("target/p4/build");
        run(Command::new("p4c")
            .args(["--target", "bmv2", "--arch", "v1model", "-o"])
            .arg(&build)
            .arg("--p4runtime-files")
            .arg(build.join("p4info.json"))
            .args(["--p4runtime-format", "json"])
            .arg(root().join("p4/v1model/dataplane.p4")))?;
        checks.push(("P4INFO_BMV2", build.join("p4info.json")));
        println!("v1model: compiled with p4c (target/p4/build/dataplane.json)");
    } else {
        println!("v1model: not compiled: p4c (https://github.com/p4lang/p4c) is not installed");
    }
    Ok(())
}

/// The STF tests on simple_switch (p4/run-stf.sh; exit 77 = skipped).
fn run_stf_on_bmv2(stf: &Path) -> Result<()> {
    let status = Command::new("sh")
        .arg(root().join("p4/run-stf.sh"))
        .arg(stf)
        .arg(root().join("target/p4/stf-run"))
        .current_dir(root())
        .status()
        .context("running p4/run-stf.sh")?;
    match status.code() {
        Some(0) => println!("bmv2: the conformance corpus passed"),
        Some(77) => println!("bmv2: skipped (p4/run-stf.sh said what is missing above)"),
        _ => bail!("bmv2: the conformance corpus failed on simple_switch"),
    }
    Ok(())
}

/// The TNA program with bf-p4c, or type-checked by p4test with the
/// open-source TNA includes, where installed.
fn compile_tna(checks: &mut Vec<(&'static str, PathBuf)>) -> Result<()> {
    let tofino_inc = std::env::var_os("TOFINO_P4INCLUDE").map(PathBuf::from);
    if setup::on_path("bf-p4c") {
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
        checks.push(("P4INFO_TOFINO", out.join("p4info.json")));
        checks.push(("BFRT_JSON_TOFINO", out.join("bfrt.json")));
        checks.push(("DYNHASH_TOFINO", out.join("pipe/dataplane.dynhash.json")));
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
        println!(
            "tna: compiled with bf-p4c (target/p4/tna/pipe/tofino.bin): {} ingress and {} egress stages of 12",
            count("ingress"),
            count("egress")
        );
    } else if let (true, Some(inc)) = (
        setup::on_path("p4test"),
        tofino_inc.filter(|d| d.join("tna.p4").exists()),
    ) {
        run(Command::new("p4test")
            .arg("-D__TARGET_TOFINO__=1")
            .arg("-I")
            .arg(&inc)
            .arg(root().join("p4/tna/dataplane.p4")))?;
        println!("tna: type-checked by p4test with the open-source TNA includes in {} (bf-p4c, which would compile it for Tofino, is not installed)", inc.display());
    } else {
        println!("tna: skipped: neither bf-p4c nor p4test with TOFINO_P4INCLUDE (a directory with tna.p4, e.g. p4c's backends/tofino/bf-p4c/p4include) is available");
    }
    Ok(())
}

/// The generated entries against the compilers' p4info / bfrt.json.
fn check_entries_against_compilers(checks: &[(&str, PathBuf)]) -> Result<()> {
    if checks.is_empty() {
        println!("entries vs compiler output: skipped (no p4c, no bf-p4c)");
    } else {
        let mut c = cargo();
        c.args([
            "test",
            "-p",
            "dataplane-p4",
            "--test",
            "p4",
            "--",
            "--nocapture",
            "p4runtime_entries_match_the_compilers_p4info",
            "bfrt_script_calls_match_the_bfrt_schemas",
            "tofino_flow_hash_is_bmv2_crc32_over_the_same_key",
        ]);
        for (var, path) in checks {
            c.env(var, path);
        }
        run(&mut c)?;
        // the SDE's fixed-function schemas, where the user points at them
        let sde: Vec<&str> = ["BFRT_TM_JSON", "BFRT_PORT_JSON"]
            .into_iter()
            .filter(|v| std::env::var_os(v).is_some())
            .collect();
        let names: Vec<&str> = checks.iter().map(|(v, _)| *v).chain(sde.clone()).collect();
        println!(
            "entries vs compiler output: checked against {}",
            names.join(", ")
        );
        if sde.is_empty() {
            println!("  (the bfrt script's tm/port calls were not checked: set BFRT_TM_JSON and BFRT_PORT_JSON to the SDE's bf_rt_tm_tf1.json and bf_rt_port_tf1.json)");
        }
    }
    Ok(())
}
