//! Idempotent set-up of everything the build and the tests need.
//!
//! | what                         | why                                  |
//! |------------------------------|--------------------------------------|
//! | llvm-22-dev, libpolly-22-dev | bpf-linker links against LLVM 22     |
//! | iproute2, ethtool            | namespaces and veth for the tests    |
//! | tshark                       | independent decoder of captures      |
//! | frr (zebra, bgpd)            | the BGP fabric of the routing tests  |
//! | lldpad (lldptool)            | a Linux host's DCBX peer (dcbx_wire) |
//! | python3 + scapy (PyPI)       | independent RoCEv2/PFC decoder       |
//! | python3-tabulate             | sonic-utilities' table drawing, to check `show`'s |
//! | rust-src for `nightly`       | build-std=core for bpfel-unknown-none|
//! | bpf-linker 0.13 (LLVM 22)    | links the eBPF object                |
//! | mdbook (crates.io)           | builds the user guide (docs/)        |
//! | libopenmpi-dev, openmpi-bin, libclang-dev | the simulator's `mpi` feature (rsmpi; its bindgen needs libclang) and its tests' mpirun |
//! | a P4 toolchain, if any       | the bmv2 steps (`p4tools.rs`): p4c/bmv2 on PATH, or `../shared/p4-toolchain` unpacked with its Debian libraries, gcc, zstd and ply, ptf, thrift (PyPI) |
//!
//! Each step checks first and only installs what is missing. nightly's LLVM
//! major and bpf-linker's must match: that is checked at the end.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::machine::{install_debs, install_pip, is_debian, output, step, which};

const LLVM_MAJOR: &str = "22";
const BPF_LINKER_VERSION: &str = "0.13.0";
const APT_PACKAGES: &[&str] = &[
    "llvm-22-dev",
    "libpolly-22-dev",
    "iproute2",
    "ethtool",
    "tshark",
    "frr",
    "python3-tabulate",
    "lldpad",
];
/// The simulator's partitions on MPI ranks (`dataplane-sim --features
/// mpi`): Open MPI, and libclang for the `mpi` crate's bindgen.
const MPI_PACKAGES: &[&str] = &["libopenmpi-dev", "openmpi-bin", "libclang-dev"];
const SCAPY: &str = "scapy==2.8.0";
const MDBOOK_VERSION: &str = "0.5.4";

fn cargo_bin() -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cargo")
        });
    home.join("bin")
}

fn non_debian_help() -> String {
    format!(
        "this is not a Debian system, so `cargo xtask setup` will not install packages itself.\n\
         Install these, then run it again:\n\
         \x20 - LLVM {LLVM_MAJOR} development files (libLLVM {LLVM_MAJOR} and Polly), e.g. llvm{LLVM_MAJOR}-devel / llvm@{LLVM_MAJOR}\n\
         \x20 - iproute2, ethtool, tshark (Wireshark's CLI), lldpad, python3 with pip\n\
         \x20 - rustup with a `nightly` toolchain whose `rustc -vV` says LLVM version {LLVM_MAJOR}.x\n\
         then: rustup component add rust-src --toolchain nightly\n\
         \x20     LLVM_PREFIX=<llvm {LLVM_MAJOR} prefix> cargo +nightly install bpf-linker --version {BPF_LINKER_VERSION} --no-default-features --features llvm-{LLVM_MAJOR}\n\
         \x20     python3 -m pip install {SCAPY}"
    )
}

pub fn setup() -> Result<()> {
    // 1. system packages
    if is_debian() {
        install_debs("Debian packages", APT_PACKAGES)?;
        install_debs("Open MPI (the simulator's mpi feature)", MPI_PACKAGES)?;
    } else {
        let have_llvm = Path::new(&format!("/usr/lib/llvm-{LLVM_MAJOR}")).exists();
        if !have_llvm || which("ip").is_none() || which("tshark").is_none() {
            bail!("{}", non_debian_help());
        }
    }

    // 2. nightly toolchain and rust-src
    let rustup = which("rustup").context("rustup not found: install it from https://rustup.rs (the eBPF crate needs the `nightly` toolchain)")?;
    let nightly = output(Command::new(&rustup).args(["run", "nightly", "rustc", "-vV"])).with_context(|| {
        "the `nightly` toolchain is missing: `rustup toolchain install nightly` (on this machine kind it is preinstalled and no other can be fetched)"
    })?;
    let nightly_llvm = nightly
        .lines()
        .find_map(|l| l.strip_prefix("LLVM version: "))
        .map(|v| v.split('.').next().unwrap_or("").to_string())
        .unwrap_or_default();
    let installed = output(Command::new(&rustup).args([
        "component",
        "list",
        "--toolchain",
        "nightly",
        "--installed",
    ]))
    .unwrap_or_default();
    if installed.lines().any(|l| l.starts_with("rust-src")) {
        step("rust-src for nightly present");
    } else {
        step("adding rust-src to nightly");
        crate::run(Command::new(&rustup).args([
            "component",
            "add",
            "rust-src",
            "--toolchain",
            "nightly",
        ]))?;
    }

    // 3. bpf-linker built against LLVM 22
    let linker = cargo_bin().join("bpf-linker");
    let linker_version = output(Command::new(&linker).arg("--version")).unwrap_or_default();
    let linker_llvm = linker_llvm_major(&linker);
    if linker_version.contains(BPF_LINKER_VERSION) && linker_llvm.as_deref() == Some(LLVM_MAJOR) {
        step(&format!(
            "bpf-linker {BPF_LINKER_VERSION} (LLVM {LLVM_MAJOR}) present"
        ));
    } else {
        step(&format!(
            "building bpf-linker {BPF_LINKER_VERSION} for LLVM {LLVM_MAJOR} (about 1.5 minutes; found: {}, LLVM {})",
            if linker_version.is_empty() { "none".into() } else { linker_version.trim().to_string() },
            linker_llvm.clone().unwrap_or_else(|| "?".into())
        ));
        crate::run(
            Command::new(&rustup)
                .args([
                    "run",
                    "nightly",
                    "cargo",
                    "install",
                    "bpf-linker",
                    "--force",
                ])
                .args([
                    "--version",
                    BPF_LINKER_VERSION,
                    "--no-default-features",
                    "--features",
                ])
                .arg(format!("llvm-{LLVM_MAJOR}"))
                .env("LLVM_PREFIX", format!("/usr/lib/llvm-{LLVM_MAJOR}")),
        )?;
    }
    let linker_llvm = linker_llvm_major(&linker).unwrap_or_else(|| "unknown".into());
    if nightly_llvm != linker_llvm {
        bail!(
            "LLVM mismatch: the nightly toolchain uses LLVM {nightly_llvm} but bpf-linker is built for LLVM {linker_llvm}; \
             the eBPF object would not link. Rebuild bpf-linker with --features llvm-{nightly_llvm} \
             (LLVM_PREFIX=/usr/lib/llvm-{nightly_llvm}) or use a nightly with LLVM {linker_llvm}."
        );
    }
    step(&format!(
        "nightly LLVM {nightly_llvm} matches bpf-linker's LLVM {linker_llvm}"
    ));

    // 4. scapy, the independent decoder
    install_pip("scapy", "import scapy.contrib.roce", &[SCAPY])?;

    // 5. a P4 toolchain for the bmv2 steps, where there is one
    crate::p4tools::prepare()?;

    // 6. mdbook, for the user guide
    let mdbook = which("mdbook").unwrap_or_else(|| cargo_bin().join("mdbook"));
    if output(Command::new(&mdbook).arg("--version")).is_some() {
        step("mdbook present");
    } else {
        step(&format!(
            "installing mdbook {MDBOOK_VERSION} (cargo install, a few minutes)"
        ));
        crate::run(Command::new("cargo").args([
            "install",
            "mdbook",
            "--locked",
            "--version",
            MDBOOK_VERSION,
        ]))?;
    }
    Ok(())
}

/// LLVM major version bpf-linker is linked against (from its libLLVM).
fn linker_llvm_major(linker: &Path) -> Option<String> {
    let ldd = output(Command::new("ldd").arg(linker))?;
    ldd.lines().find_map(|l| {
        let l = l.trim();
        let rest = l
            .strip_prefix("libLLVM.so.")
            .or_else(|| l.strip_prefix("libLLVM-"))?;
        Some(
            rest.split(|c: char| !c.is_ascii_digit())
                .next()?
                .to_string(),
        )
    })
}
