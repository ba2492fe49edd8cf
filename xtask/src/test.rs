//! `cargo xtask test` (the README's test command, and CI's): every test
//! of the workspace, then the P4 steps with the P4 tools (`p4.rs`), the
//! user guide and its links (`docs.rs`), the core of the kernel matrix on
//! Debian 12's 6.1 (`kernels.rs`), and a summary of what the P4 checks
//! did and skipped (`summary.rs`).

use std::time::Instant;

use anyhow::Result;

use crate::summary::Summary;
use crate::{cargo, machine, p4, run, setup};

pub fn test() -> Result<()> {
    setup::setup()?;
    machine::require_root("the tests load eBPF programs and create network namespaces")?;
    let mut s = Summary::new()?;
    let r = steps(&mut s);
    s.finish("cargo xtask test", r)?;
    println!("xtask test: all tests passed");
    Ok(())
}

fn steps(s: &mut Summary) -> Result<()> {
    // the programs compiled first: the tests check the generated entries
    // against the compilers' p4info, and write the corpus's STF files
    let env = s.timed(p4::before_tests)?;
    // the lab's tests run the controller binary (testbed::dataplane_bin)
    run(cargo().args(["build", "-p", "dataplane-user", "--bin", "dataplane"]))?;
    // one thread per test binary: the namespace tests move threads
    // between namespaces and share the bpffs pin root
    let tests = run(cargo()
        .args(["test", "--workspace", "--", "--test-threads=1"])
        .envs(env.iter().cloned()));
    // the simulator over MPI ranks (the feature needs Open MPI, which
    // setup installs): mpirun -np 2 against one process, a killed rank;
    // its time (mostly building the feature) is printed for CI's budget
    let tests = tests.and_then(|()| {
        let t = std::time::Instant::now();
        let r = run(cargo().args([
            "test",
            "-p",
            "dataplane-sim",
            "--features",
            "mpi",
            "--test",
            "mpi",
            "--",
            "--test-threads=1",
        ]));
        println!(
            "simulator MPI step: {:.0} s (build and tests)",
            t.elapsed().as_secs_f64()
        );
        r
    });
    // the bmv2 steps run even when a test failed, so that the summary
    // says what they found; the command fails either way
    if tests.is_err() {
        s.failed("workspace tests: a test failed (see above); P4 steps that depend on them may be incomplete");
    }
    s.timed(|s| p4::after_tests(s, &env))?;
    tests?;
    crate::docs::check()?;
    kernel_6_1()
}

/// The kernel-matrix cases CI runs on 6.1 (a VM under TCG: each one loads
/// the object, which takes 6.1's verifier ~40 s there): the object passes
/// the verifier, PFC frames and far-side notifications from the data
/// plane. The fixture table (160 s
/// there) and the rest are `cargo xtask test --kernel 6.1`: CI's budget
/// of 30 minutes does not hold them.
const CI_KERNEL_CASES: [&str; 3] = ["object_loads", "pfc_dataplane", "far_notes"];

/// [`CI_KERNEL_CASES`] on Debian 12's 6.1, installed when missing.
fn kernel_6_1() -> Result<()> {
    let t = Instant::now();
    crate::kernels::setup()?;
    let only: Vec<String> = CI_KERNEL_CASES.iter().map(|c| c.to_string()).collect();
    let r = crate::kernels::test("6.1", &only, 1);
    println!("kernel 6.1 step: {}", crate::summary::mins(t.elapsed()));
    r
}
