//! What the machine has and how to add to it: root, Debian, commands on
//! PATH, Debian and PyPI packages installed only when missing. Shared by
//! the set-up (`setup.rs`), the P4 tools (`p4tools.rs`), the kernel matrix
//! and the other steps.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Result};

/// `cmd`'s stdout when it ran and succeeded.
pub fn output(cmd: &mut Command) -> Option<String> {
    let o = cmd.output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

pub fn require_root(why: &str) -> Result<()> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc_geteuid() } != 0 {
        bail!("run as root: {why}");
    }
    Ok(())
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

pub fn is_debian() -> bool {
    Path::new("/etc/debian_version").exists()
        && which("apt-get").is_some()
        && which("dpkg-query").is_some()
}

/// True when `bin` is on PATH.
pub fn on_path(bin: &str) -> bool {
    which(bin).is_some()
}

pub fn which(bin: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|p| p.join(bin))
            .find(|p| p.is_file())
    })
}

fn missing_debs<'a>(packages: &[&'a str]) -> Vec<&'a str> {
    packages
        .iter()
        .copied()
        .filter(|p| {
            let s = output(Command::new("dpkg-query").args(["-W", "-f=${Status}", p]))
                .unwrap_or_default();
            !s.contains("install ok installed")
        })
        .collect()
}

/// Installs those of `packages` that are missing (Debian only), saying
/// which; `what` names them in the messages.
pub fn install_debs(what: &str, packages: &[&str]) -> Result<()> {
    let missing = missing_debs(packages);
    if missing.is_empty() {
        step(&format!("{what} present"));
        return Ok(());
    }
    step(&format!("installing {what}: {}", missing.join(" ")));
    // the package index may be stale on a fresh machine (llvm-22 is in
    // bookworm-security): refresh it first
    crate::run(Command::new("apt-get").args(["update", "-q"]))?;
    crate::run(
        Command::new("apt-get")
            .env("DEBIAN_FRONTEND", "noninteractive")
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(&missing),
    )
}

/// Installs the PyPI packages `specs` into the first python3 on PATH
/// unless `python3 -c check` already succeeds; `what` names them.
pub fn install_pip(what: &str, check: &str, specs: &[&str]) -> Result<()> {
    if output(Command::new("python3").args(["-c", check])).is_some() {
        step(&format!("{what} present"));
        return Ok(());
    }
    step(&format!("installing {} from PyPI", specs.join(" ")));
    let pip = |extra: &[&str]| {
        crate::run(
            Command::new("python3")
                .args(["-m", "pip", "install", "-q"])
                .args(extra)
                .args(specs)
                .env("PIP_ROOT_USER_ACTION", "ignore"),
        )
    };
    pip(&["--break-system-packages"]).or_else(|_| pip(&[]))
}

pub fn step(msg: &str) {
    println!("setup: {msg}");
}
