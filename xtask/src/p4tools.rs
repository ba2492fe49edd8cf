//! The P4 toolchain of the bmv2 steps, found or unpacked by `setup`:
//!
//! 1. the user's own: `p4c`, `simple_switch` and `simple_switch_CLI` on
//!    PATH (with `P4C_SRC` / `P4C_BUILD` for the STF runner, as
//!    p4/README.md says);
//! 2. else the prebuilt one in `../shared/p4-toolchain` beside the
//!    repository (CI checks the repository out there): its Debian runtime
//!    packages and Python modules installed like every other dependency,
//!    its archive unpacked once into a cache folder named by the archive's
//!    SHA-256, its `bin/` put first on PATH and `P4C_SRC` / `P4C_BUILD`
//!    pointed at its STF runner, for this process and the tests it starts;
//! 3. else nothing: the P4 steps skip and say so.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use sha2::{Digest, Sha256};

use crate::machine::{install_debs, install_pip, is_debian, on_path, step};

/// The tools that make a P4 toolchain for the bmv2 steps.
pub const TOOLS: &[&str] = &["p4c", "simple_switch", "simple_switch_CLI"];

/// What the shared toolchain's README lists: its libraries' packages, gcc
/// (the p4c driver preprocesses with `cc -E`) and zstd (to unpack it).
const SHARED_DEBS: &[&str] = &[
    "libgc1",
    "libboost-iostreams1.74.0",
    "libboost-program-options1.74.0",
    "libthrift-0.17.0",
    "libjsoncpp25",
    "libxxhash0",
    "libpcap0.8",
    "libgmp10",
    "libnanomsg5",
    "libssl3",
    "zlib1g",
    "gcc",
    "zstd",
];

/// p4c's STF runner (ply) and bmv2's CLIs (thrift); ptf for the runner's
/// packet checks. scapy is installed by `setup` already.
const SHARED_PIP: &[&str] = &["ply==3.11", "ptf==0.12.0", "thrift==0.25.0"];

/// `../shared/p4-toolchain` relative to the repository.
pub fn shared_dir() -> PathBuf {
    crate::root()
        .parent()
        .unwrap_or(Path::new("/"))
        .join("shared/p4-toolchain")
}

/// The tools of [`TOOLS`] that are not on PATH.
pub fn missing() -> Vec<&'static str> {
    TOOLS.iter().copied().filter(|t| !on_path(t)).collect()
}

/// Why there is no P4 toolchain, for the skip messages.
pub fn absent_reason() -> String {
    format!(
        "no P4 toolchain: {} not on PATH and no {} beside the repository",
        missing().join(", "),
        shared_dir().display()
    )
}

/// Finds or unpacks the toolchain (see the module's comment).
pub fn prepare() -> Result<()> {
    if missing().is_empty() {
        step("P4 toolchain: p4c and bmv2 found on PATH (your own install)");
        return Ok(());
    }
    let shared = shared_dir();
    let archive = shared.join("p4tools.tar.zst");
    if !archive.is_file() {
        step(&format!(
            "P4 toolchain: none ({}); the P4 steps on bmv2 will skip",
            absent_reason()
        ));
        return Ok(());
    }
    if !is_debian() {
        step(&format!(
            "P4 toolchain: {} is a Debian amd64 build and this is not Debian; the P4 steps on bmv2 will skip",
            shared.display()
        ));
        return Ok(());
    }
    install_debs("the P4 toolchain's Debian packages", SHARED_DEBS)?;
    install_pip(
        "the P4 STF runner's Python modules (ply, ptf, thrift)",
        "import ply, ptf, thrift",
        SHARED_PIP,
    )?;
    let dir = unpack(&archive)?;
    let build = stf_build(&shared, &dir)?;
    let bin = dir.join("p4tools/bin");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let paths = std::iter::once(bin.clone()).chain(std::env::split_paths(&path));
    let path = std::env::join_paths(paths).context("PATH")?;
    // for this process and every command it starts (the tests too)
    std::env::set_var("PATH", path);
    if std::env::var_os("P4C_SRC").is_none() {
        std::env::set_var("P4C_SRC", shared.join("p4c-stf"));
    }
    if std::env::var_os("P4C_BUILD").is_none() {
        std::env::set_var("P4C_BUILD", &build);
    }
    step(&format!(
        "P4 toolchain: {} (from {}) first on PATH",
        bin.display(),
        archive.display()
    ));
    Ok(())
}

/// The cache folder the archives are unpacked into.
fn cache_dir() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into())).join(".cache")
        })
        .join("dataplane")
}

/// SHA-256 of a file, hex.
fn sha256(path: &Path) -> Result<String> {
    let mut f = std::fs::File::open(path).with_context(|| format!("reading {}", path.display()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// Unpacks `archive` into the cache folder named by its SHA-256, unless
/// that folder is there already (it is renamed into place only when
/// complete); returns the folder.
fn unpack(archive: &Path) -> Result<PathBuf> {
    let hash = sha256(archive)?;
    let dir = cache_dir().join(format!("p4tools-{}", &hash[..16]));
    if dir.join("p4tools/bin/p4c").is_file() {
        step(&format!(
            "P4 toolchain unpacked ({}, sha256 {})",
            dir.display(),
            &hash[..16]
        ));
        return Ok(dir);
    }
    step(&format!(
        "unpacking {} into {}",
        archive.display(),
        dir.display()
    ));
    let tmp = dir.with_extension(format!("tmp{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    crate::run(
        Command::new("tar")
            .args(["-I", "zstd", "-xf"])
            .arg(archive)
            .arg("-C")
            .arg(&tmp),
    )?;
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => {}
        // another run unpacked the same archive meanwhile
        Err(_) if dir.join("p4tools/bin/p4c").is_file() => {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        Err(e) => {
            return Err(e)
                .with_context(|| format!("renaming {} to {}", tmp.display(), dir.display()))
        }
    }
    Ok(dir)
}

/// The `P4C_BUILD` folder p4c's STF runner wants: the shared config.h and
/// a link to p4c-bm2-ss.
fn stf_build(shared: &Path, dir: &Path) -> Result<PathBuf> {
    let build = dir.join("stf-build");
    std::fs::create_dir_all(&build)?;
    let config = std::fs::read(shared.join("stf-build/config.h"))
        .context("reading the shared stf-build/config.h")?;
    std::fs::write(build.join("config.h"), config)?;
    let link = build.join("p4c-bm2-ss");
    if !link.exists() {
        std::os::unix::fs::symlink(dir.join("p4tools/bin/p4c-bm2-ss"), &link)
            .with_context(|| format!("linking {}", link.display()))?;
    }
    Ok(build)
}
