//! `cargo xtask`: set-up, build, test, bench and demo in one command each.
//!
//! Every command first runs `setup`, which installs what is missing and is
//! quick when everything is present, so a fresh clone needs nothing else.

mod docs;
mod fuzz;
mod kernels;
mod machine;
mod p4;
mod p4tools;
mod package;
mod setup;
mod sim_mpi;
mod summary;
mod test;

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
    /// bpf-linker for LLVM 22, scapy) and check the toolchain; use a P4
    /// toolchain where there is one (p4c and bmv2 on PATH, or
    /// ../shared/p4-toolchain unpacked, with its packages).
    Setup,
    /// Build the eBPF programs and the controller (release).
    Build,
    /// Set up, then run every test: host unit tests, the eBPF fixture
    /// table (TestRun) with the scapy cross-check, the netns integration
    /// test, the P4 steps of `p4 test` (the corpus as STF on bmv2, ...)
    /// where a P4 toolchain is (a summary lists what P4 skipped and why),
    /// then the user guide (`mdbook build docs`) and its links. Needs
    /// root.
    Test {
        /// Instead: boot this kernel (`6.1`: Debian's image in /boot, or
        /// a path to a kernel image) under virtme-ng (TCG) and run the
        /// kernel-dependent tests inside it (`cargo xtask kernels` lists
        /// them); `host`: the same tests on the running kernel, no VM.
        #[arg(long)]
        kernel: Option<String>,
        /// With --kernel: only these test targets of the matrix (comma list).
        #[arg(long, value_delimiter = ',', requires = "kernel")]
        only: Vec<String>,
        /// With --kernel: run each test target this many times (counts
        /// passes, e.g. `--only fabric --repeat 30`).
        #[arg(long, default_value_t = 1, requires = "kernel")]
        repeat: u32,
    },
    /// The kernel images `test --kernel` can boot and the tests it runs.
    Kernels,
    /// Build the user guide (`mdbook build docs`) and check that every
    /// relative link in docs/src and the READMEs resolves.
    Docs,
    /// A Debian package of the controller (dpkg-deb): binary, systemd unit,
    /// man pages, completions, examples, in target/. `--check` (root)
    /// installs it, runs `dataplane --version`, `dataplane doctor` and
    /// `systemd-analyze verify` on the installed unit, and removes it.
    Package {
        #[arg(long)]
        check: bool,
    },
    /// Man pages and shell completions of `dataplane`, `dataplane-sim` and
    /// `dataplane-fabric`, generated from their clap definitions, into
    /// target/dist/man and target/dist/completions.
    Man,
    /// Set up, then run the benchmarks; figures go to
    /// target/bench/results.json.
    Bench {
        /// Repetitions per kernel call.
        #[arg(long, default_value_t = 200_000)]
        repeat: u32,
        /// Interleaved rounds (median reported).
        #[arg(long, default_value_t = 15)]
        rounds: usize,
        /// Only these benches (comma list of cost, pfc, fwd, lb, sim,
        /// sim_mpi, route, uet; default: all).
        #[arg(long, value_delimiter = ',')]
        only: Vec<String>,
    },
    /// Set up, then run the demo: a switch and two hosts in network
    /// namespaces, RoCEv2 and PFC traffic, the switch's counters.
    Demo,
    /// Run every fuzz target (libFuzzer, nightly) from the seed corpus;
    /// executions and crashes go to target/bench/results.json
    /// (`fuzz.<target>.execs`, `.crashes`). Fails when a target crashed.
    Fuzz {
        /// Seconds per target (default 60 unless --runs is given).
        #[arg(long)]
        seconds: Option<u64>,
        /// Executions per target (with --seconds: whichever comes first).
        #[arg(long)]
        runs: Option<u64>,
        /// Only this target.
        #[arg(long)]
        target: Option<String>,
        /// Worker processes per target (libFuzzer -fork).
        #[arg(long, default_value_t = 1)]
        jobs: usize,
    },
    /// Set up, then the soak: the demo's incast in a loop for N seconds,
    /// the controllers' RSS and open fds sampled (soak.rss_growth_kb,
    /// soak.fd_growth in target/bench/results.json). Needs root.
    Soak {
        #[arg(long, default_value_t = 600)]
        seconds: u64,
    },
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
    /// not); compile the TNA program when bf-p4c is installed (type-check
    /// it with p4test when TOFINO_P4INCLUDE names the TNA includes).
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

pub fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

/// The controller and the lab's binaries (benches, demo), release.
fn build_release_bins() -> Result<()> {
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "dataplane-user",
        "-p",
        "testbed",
        "--bins",
    ]))
}

/// The simulator's figures: `sim.events_per_s` (a 64-host 400G web-search
/// run on one core; `sim.events_partitioned_*` the same fabric in 12
/// partitions on one thread) and `sim.websearch_1024_wall_s` (1024 hosts, 400G, 1:1
/// leaf-spine (64 leaves, 16 spines), web-search at 60% load, 10 ms
/// simulated, in 80 partitions (a switch each) on every core), each with
/// peak RSS; the same 1024-host run serial on one core beside it, and the
/// partitioned run's speed-up over it (`sim.websearch_1024_speedup`).
fn sim_bench(out: &str) -> Result<()> {
    run(cargo().args(["build", "--release", "-p", "dataplane-sim"]))?;
    let sim = root().join("target/release/dataplane-sim");
    // the 64-host runs take about a second: the median of 5
    for (name, topo, dur, parts, threads, repeat) in [
        ("events", "leafspine:8x4:8", "2ms", "1", "1", "5"),
        // the same fabric in a partition per switch on one thread: one
        // core still, each window's events run switch by switch
        (
            "events_partitioned",
            "leafspine:8x4:8",
            "2ms",
            "12",
            "1",
            "5",
        ),
        (
            "websearch_1024",
            "leafspine:64x16:16",
            "10ms",
            "80",
            "0",
            "1",
        ),
        (
            "websearch_1024_serial",
            "leafspine:64x16:16",
            "10ms",
            "1",
            "1",
            "1",
        ),
    ] {
        println!("-- {name}: {topo}, {dur}, {parts} partition(s)");
        run(Command::new(&sim).args([
            "--topology",
            topo,
            "--speed",
            "400G",
            "--workload",
            "websearch",
            "--load",
            "0.6",
            "--duration",
            dur,
            "--lb",
            "hash",
            "--seed",
            "1",
            "--partitions",
            parts,
            "--threads",
            threads,
            "--bench-name",
            name,
            "--bench-repeat",
            repeat,
            "--bench-out",
            out,
        ]))?;
    }
    speedup(out)
}

/// The simulator's load-balancing figures (`lb.sim.*`, seeds 1-5 of each
/// case; plots in target/bench/lb_sim/).
fn sim_lb_bench(out: &str) -> Result<()> {
    run(cargo().args(["build", "--release", "-p", "dataplane-sim"]))?;
    run(
        Command::new(root().join("target/release/dataplane-sim-lbbench")).args([
            "--out",
            out,
            "--plots",
            &root().join("target/bench/lb_sim").display().to_string(),
        ]),
    )
}

/// `sim.websearch_1024_speedup`: the serial run's wall time over the
/// partitioned run's, both from this bench.
fn speedup(out: &str) -> Result<()> {
    let all = bench_results::read(std::path::Path::new(out))?;
    let find = |name: &str| all.iter().find(|v| v["figure"] == name);
    let wall = |name: &str| find(name).and_then(|v| v["value"].as_f64());
    let (Some(par), Some(ser)) = (
        wall("sim.websearch_1024_wall_s"),
        wall("sim.websearch_1024_serial_wall_s"),
    ) else {
        anyhow::bail!("{out}: the 1024-host wall times are missing");
    };
    let machine = find("sim.websearch_1024_wall_s")
        .and_then(|v| v["machine"].as_str())
        .unwrap_or_default();
    let rec = bench_results::Record::new(
        "sim.websearch_1024_speedup".into(),
        ser / par,
        "x",
        machine,
        format!(
            "serial wall s on one core ({ser:.1}) over the 1024-host run's in 80 partitions on every core ({par:.1}), one bench run"
        ),
    );
    bench_results::merge(std::path::Path::new(out), &[rec])
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Setup => setup::setup(),
        Cmd::Build => {
            setup::setup()?;
            // the default members: the eBPF crate is built by dataplane-user's build
            // script for its own target, never for the host
            run(cargo().args(["build", "--release"]).current_dir(root()))
        }
        Cmd::Kernels => kernels::list(),
        Cmd::Test {
            kernel: Some(k),
            only,
            repeat,
        } => {
            setup::setup()?;
            machine::require_root("the tests load eBPF programs and create network namespaces")?;
            // qemu, Debian's 6.1 and virtme-ng: only for a booted kernel
            if k != "host" {
                kernels::setup()?;
            }
            kernels::test(&k, &only, repeat)
        }
        Cmd::Test { kernel: None, .. } => test::test(),
        Cmd::Bench {
            repeat,
            rounds,
            only,
        } => {
            let known = ["cost", "pfc", "fwd", "lb", "sim", "sim_mpi", "route", "uet"];
            if let Some(o) = only.iter().find(|o| !known.contains(&o.as_str())) {
                anyhow::bail!("--only: {o:?} is not a bench (expected some of {known:?})");
            }
            let want = |b: &str| only.is_empty() || only.iter().any(|o| o == b);
            setup::setup()?;
            machine::require_root("the benchmarks run eBPF programs")?;
            build_release_bins()?;
            let out = root()
                .join("target/bench/results.json")
                .display()
                .to_string();
            let dp = root()
                .join("target/release/dataplane")
                .display()
                .to_string();
            // a lab bench that drives the `dataplane` binary
            let lab_bench = |bin: &str| {
                run(Command::new(root().join("target/release").join(bin)).args([
                    "--dataplane",
                    &dp,
                    "--out",
                    &out,
                ]))
            };
            if want("cost") {
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
            }
            if want("pfc") {
                println!("\n== PFC decision-to-wire latency ==");
                run(
                    Command::new(root().join("target/release/dataplane-pfcbench"))
                        .args(["--out", &out]),
                )?;
            }
            if want("fwd") {
                println!("\n== forwarding throughput: pipeline vs Linux multipath ==");
                lab_bench("dataplane-fwdbench")?;
            }
            if want("lb") {
                println!("\n== load balancing quality and per-mode cost ==");
                lab_bench("dataplane-lbbench")?;
                println!("\n== load balancing in the simulator: collectives and web-search against the ideal ==");
                sim_lb_bench(&out)?;
            }
            if want("sim") {
                println!("\n== fabric simulator (dataplane-sim: one core; the 1024-host run partitioned) ==");
                sim_bench(&out)?;
            }
            if want("sim_mpi") {
                println!(
                    "\n== fabric simulator over MPI ranks (1 and 2 ranks, the 1024-host run) =="
                );
                sim_mpi::bench(&out)?;
            }
            if want("route") {
                println!(
                    "\n== routes from the kernel: sync rate, memory, local repair, BGP convergence =="
                );
                lab_bench("dataplane-routebench")?;
            }
            if want("uet") {
                println!("\n== UET incast: packet trimming vs plain drops ==");
                lab_bench("dataplane-uetbench")?;
            }
            println!("\nall figures: {out}");
            Ok(())
        }
        Cmd::Docs => docs::check(),
        Cmd::Package { check } => {
            let deb = package::package()?;
            if check {
                package::check(&deb)?;
            }
            Ok(())
        }
        Cmd::Man => {
            let out = root().join("target/dist");
            run(cargo()
                .args(["run", "-p", "dataplane-user", "--bin", "dataplane", "--"])
                .args(["generate-docs", "--out"])
                .arg(&out))?;
            for (pkg, bin) in [
                ("dataplane-sim", "dataplane-sim"),
                ("testbed", "dataplane-fabric"),
            ] {
                run(cargo()
                    .args(["run", "-p", pkg, "--bin", bin, "--", "--generate-docs"])
                    .arg(&out))?;
            }
            Ok(())
        }
        Cmd::P4 { cmd: P4Cmd::Test } => p4::test(),
        Cmd::Soak { seconds } => {
            setup::setup()?;
            machine::require_root("the soak builds a namespace fabric and loads eBPF programs")?;
            build_release_bins()?;
            run(
                Command::new(root().join("target/release/dataplane-soak")).args([
                    "--dataplane",
                    &root()
                        .join("target/release/dataplane")
                        .display()
                        .to_string(),
                    "--out",
                    &root()
                        .join("target/bench/results.json")
                        .display()
                        .to_string(),
                    "--plots",
                    &root().join("target/bench").display().to_string(),
                    "--seconds",
                    &seconds.to_string(),
                ]),
            )
        }
        Cmd::Fuzz {
            seconds,
            runs,
            target,
            jobs,
        } => {
            let budget = fuzz::Budget {
                seconds: seconds.or(if runs.is_none() { Some(60) } else { None }),
                runs,
            };
            fuzz::fuzz(budget, target, jobs)
        }
        Cmd::Demo => {
            setup::setup()?;
            machine::require_root("the demo creates network namespaces and loads eBPF programs")?;
            build_release_bins()?;
            run(Command::new(root().join("target/release/dataplane-demo"))
                .arg("--dataplane")
                .arg(root().join("target/release/dataplane")))
        }
    }
}
