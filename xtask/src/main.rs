//! `cargo xtask`: set-up, build, test, bench and demo in one command each.
//!
//! Every command first runs `setup`, which installs what is missing and is
//! quick when everything is present, so a fresh clone needs nothing else.

mod setup;

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "cargo xtask")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Install what is missing (Debian packages, rust-src for nightly,
    /// bpf-linker for LLVM 22, scapy) and check the toolchain.
    Setup,
    /// Build the eBPF programs and the controller (release).
    Build,
    /// Set up, then run every test: host unit tests, the eBPF fixture
    /// table (TestRun) with the scapy cross-check, the netns integration
    /// test. Needs root.
    Test,
    /// Set up, then run the benchmarks; figures go to
    /// target/bench/results.json.
    Bench {
        /// Repetitions per kernel call.
        #[arg(long, default_value_t = 200_000)]
        repeat: u32,
        /// Interleaved rounds (median reported).
        #[arg(long, default_value_t = 9)]
        rounds: usize,
    },
    /// Set up, then run the demo: a switch and two hosts in network
    /// namespaces, RoCEv2 and PFC traffic, the switch's counters.
    Demo,
    /// The P4 targets.
    P4 {
        #[command(subcommand)]
        cmd: P4Cmd,
    },
}

#[derive(Subcommand)]
enum P4Cmd {
    /// Check everything that needs no P4 tools (generators, golden files,
    /// P4 sources against the generator, the conformance corpus on eBPF),
    /// write the corpus as STF tests, and run them on bmv2 when p4c and
    /// simple_switch are installed (skipped, saying what is missing, when
    /// not); compile the TNA program when bf-p4c is installed.
    Test,
}

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// Runs a command in the workspace root, failing with its name.
pub fn run(cmd: &mut Command) -> Result<()> {
    let shown = format!("{cmd:?}");
    let status = cmd
        .current_dir(root())
        .status()
        .with_context(|| format!("starting {shown}"))?;
    if !status.success() {
        bail!("{shown} failed ({status})");
    }
    Ok(())
}

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Setup => setup::setup(),
        Cmd::Build => {
            setup::setup()?;
            run(cargo().args(["build", "--release", "--workspace"]))
        }
        Cmd::Test => {
            setup::setup()?;
            setup::require_root("the tests load eBPF programs and create network namespaces")?;
            // one thread per test binary: the namespace tests move threads
            // between namespaces and share the bpffs pin root
            // the lab's tests run the controller binary (testbed::dataplane_bin)
            run(cargo().args(["build", "-p", "dataplane-user", "--bin", "dataplane"]))?;
            run(cargo().args(["test", "--workspace", "--", "--test-threads=1"]))?;
            println!("xtask test: all tests passed");
            Ok(())
        }
        Cmd::Bench { repeat, rounds } => {
            setup::setup()?;
            setup::require_root("the benchmarks run eBPF programs")?;
            run(cargo().args([
                "build",
                "--release",
                "-p",
                "dataplane-user",
                "-p",
                "testbed",
                "--bins",
            ]))?;
            let out = root()
                .join("target/bench/results.json")
                .display()
                .to_string();
            let dp = root()
                .join("target/release/dataplane")
                .display()
                .to_string();
            println!("== per-packet cost through BPF_PROG_TEST_RUN ==");
            run(
                Command::new(root().join("target/release/dataplane-bench")).args([
                    "--repeat",
                    &repeat.to_string(),
                    "--rounds",
                    &rounds.to_string(),
                    "--out",
                    &out,
                ]),
            )?;
            println!("\n== PFC decision-to-wire latency ==");
            run(
                Command::new(root().join("target/release/dataplane-pfcbench"))
                    .args(["--out", &out]),
            )?;
            println!("\n== forwarding throughput: pipeline vs Linux multipath ==");
            run(
                Command::new(root().join("target/release/dataplane-fwdbench")).args([
                    "--dataplane",
                    &dp,
                    "--out",
                    &out,
                ]),
            )?;
            println!("\n== load balancing quality and per-mode cost ==");
            run(
                Command::new(root().join("target/release/dataplane-lbbench")).args([
                    "--dataplane",
                    &dp,
                    "--out",
                    &out,
                ]),
            )?;
            println!("\nall figures: {out}");
            Ok(())
        }
        Cmd::P4 { cmd: P4Cmd::Test } => {
            setup::setup()?;
            setup::require_root(
                "the corpus runs through the eBPF programs in a network namespace",
            )?;
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
            // the compilers' own descriptions of the programs (p4info,
            // bfrt.json), against which the generated entries are checked
            let mut checks: Vec<(&str, PathBuf)> = Vec::new();
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
                println!(
                    "v1model: not compiled: p4c (https://github.com/p4lang/p4c) is not installed"
                );
            }
            let status = Command::new("sh")
                .arg(root().join("p4/run-stf.sh"))
                .arg(&stf)
                .arg(root().join("target/p4/stf-run"))
                .current_dir(root())
                .status()
                .context("running p4/run-stf.sh")?;
            match status.code() {
                Some(0) => println!("bmv2: the conformance corpus passed"),
                Some(77) => println!("bmv2: skipped (p4/run-stf.sh said what is missing above)"),
                _ => bail!("bmv2: the conformance corpus failed on simple_switch"),
            }
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
                let summary = std::fs::read_to_string(out.join("pipe/logs/table_summary.log"))
                    .unwrap_or_default();
                let count = |gress: &str| {
                    summary
                        .lines()
                        .rev()
                        .filter(|l| {
                            l.contains(&format!("Number of stages for {gress} table allocation:"))
                        })
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
                for (var, path) in &checks {
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
        Cmd::Demo => {
            setup::setup()?;
            setup::require_root("the demo creates network namespaces and loads eBPF programs")?;
            run(cargo().args([
                "build",
                "--release",
                "-p",
                "dataplane-user",
                "-p",
                "testbed",
                "--bins",
            ]))?;
            run(Command::new(root().join("target/release/dataplane-demo"))
                .arg("--dataplane")
                .arg(root().join("target/release/dataplane")))
        }
    }
}
