//! `cargo xtask package`: a Debian package of the controller, built with
//! dpkg-deb from a staged tree: the release binary, the systemd unit
//! `dataplane@.service`, man pages, shell completions, example configs.
//! `--check` then installs it (dpkg -i, as root), runs `dataplane
//! --version`, `dataplane doctor` and `systemd-analyze verify` on an
//! instance of the installed unit, and removes it (dpkg -r).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::{cargo, root, run};

const PACKAGE: &str = "dataplane";

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target"))
}

fn copy(from: &Path, to: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(dir) = to.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::copy(from, to).with_context(|| format!("{} -> {}", from.display(), to.display()))?;
    std::fs::set_permissions(to, std::fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// Builds the package; returns its path.
pub fn package() -> Result<PathBuf> {
    if !crate::machine::on_path("dpkg-deb") {
        bail!("dpkg-deb not found: `cargo xtask package` builds Debian packages on Debian");
    }
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "dataplane-user",
        "--bin",
        "dataplane",
    ]))?;
    let bin = target_dir().join("release/dataplane");
    let work = target_dir().join("deb");
    let stage = work.join(PACKAGE);
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&stage)?;

    copy(&bin, &stage.join("usr/sbin/dataplane"), 0o755)?;

    // man pages and completions from the clap definition
    let gen = work.join("gen");
    run(Command::new(&bin)
        .arg("generate-docs")
        .arg("--out")
        .arg(&gen))?;
    let man1 = stage.join("usr/share/man/man1");
    std::fs::create_dir_all(&man1)?;
    for e in std::fs::read_dir(gen.join("man"))? {
        let p = e?.path();
        let to = man1.join(p.file_name().context("man page name")?);
        copy(&p, &to, 0o644)?;
        run(Command::new("gzip").args(["-9n"]).arg(&to))?;
    }
    let comp = gen.join("completions");
    copy(
        &comp.join("dataplane.bash"),
        &stage.join("usr/share/bash-completion/completions/dataplane"),
        0o644,
    )?;
    copy(
        &comp.join("_dataplane"),
        &stage.join("usr/share/zsh/vendor-completions/_dataplane"),
        0o644,
    )?;
    copy(
        &comp.join("dataplane.fish"),
        &stage.join("usr/share/fish/vendor_completions.d/dataplane.fish"),
        0o644,
    )?;

    // the unit, as `install-service` writes it, for /usr/sbin/dataplane
    let unit_root = work.join("unit");
    run(Command::new(&bin)
        .args(["install-service", "--exec", "/usr/sbin/dataplane", "--root"])
        .arg(&unit_root))?;
    copy(
        &unit_root.join("etc/systemd/system/dataplane@.service"),
        &stage.join("lib/systemd/system/dataplane@.service"),
        0o644,
    )?;

    // examples and copyright
    let doc = stage.join("usr/share/doc").join(PACKAGE);
    for e in std::fs::read_dir(root().join("examples"))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "toml") {
            copy(
                &p,
                &doc.join("examples").join(p.file_name().unwrap()),
                0o644,
            )?;
        }
    }
    std::fs::write(
        doc.join("copyright"),
        "dataplane: a lossless RoCEv2 switch data plane in eBPF\nLicense: MIT OR Apache-2.0\n",
    )?;

    let arch = String::from_utf8(
        Command::new("dpkg")
            .arg("--print-architecture")
            .output()?
            .stdout,
    )?
    .trim()
    .to_string();
    let version = env!("CARGO_PKG_VERSION");
    let depends = shlib_depends(&bin)?;
    std::fs::create_dir_all(stage.join("DEBIAN"))?;
    std::fs::write(
        stage.join("DEBIAN/control"),
        format!(
            "Package: {PACKAGE}\n\
             Version: {version}\n\
             Architecture: {arch}\n\
             Maintainer: dataplane contributors <dataplane@localhost>\n\
             Section: net\n\
             Priority: optional\n\
             Depends: {depends}\n\
             Recommends: iproute2, ethtool\n\
             Description: lossless RoCEv2 switch data plane (XDP) and its controller\n \
             Classifies RoCEv2 into lossless priorities, marks ECN, sends PFC and\n \
             balances low-entropy flows, in XDP programs the `dataplane` controller\n \
             loads and configures from a TOML file with SONiC's names. Includes the\n \
             systemd unit dataplane@.service, man pages and shell completions.\n"
        ),
    )?;
    let deb = target_dir().join(format!("{PACKAGE}_{version}_{arch}.deb"));
    run(Command::new("dpkg-deb")
        .args(["--build", "--root-owner-group"])
        .arg(&stage)
        .arg(&deb))?;
    println!("package: {}", deb.display());
    Ok(deb)
}

/// The shared libraries `bin` links, as Debian dependencies with their
/// minimum versions (`dpkg-shlibdeps`, which reads the libraries' symbols
/// files; it wants a `debian/control` in its working directory, so it runs
/// in an empty one).
fn shlib_depends(bin: &Path) -> Result<String> {
    let dir = target_dir().join("package-shlibdeps");
    std::fs::create_dir_all(dir.join("debian"))?;
    std::fs::write(dir.join("debian/control"), "")?;
    let out = Command::new("dpkg-shlibdeps")
        .arg("-O")
        .arg(bin)
        .current_dir(&dir)
        .output()
        .context("running dpkg-shlibdeps (Debian package dpkg-dev)")?;
    if !out.status.success() {
        bail!(
            "dpkg-shlibdeps {}: {}",
            bin.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let deps = text
        .lines()
        .find_map(|l| l.strip_prefix("shlibs:Depends="))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .with_context(|| {
            format!(
                "dpkg-shlibdeps printed no shlibs:Depends for {}",
                bin.display()
            )
        })?;
    Ok(deps.to_string())
}

/// Installs the package, checks the installed files, removes it.
pub fn check(deb: &Path) -> Result<()> {
    crate::machine::require_root("dpkg -i installs the package")?;
    let status = Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", PACKAGE])
        .output()?;
    if String::from_utf8_lossy(&status.stdout).contains("install ok installed") {
        bail!("package {PACKAGE} is already installed here: not touching it");
    }
    run(Command::new("dpkg").arg("-i").arg(deb))?;
    let result = (|| -> Result<()> {
        run(Command::new("/usr/sbin/dataplane").arg("--version"))?;
        // without a config, doctor checks the kernel, BTF, bpffs and
        // privileges: it fails only on a kernel below the minimum
        run(Command::new("/usr/sbin/dataplane").arg("doctor"))?;
        if crate::machine::on_path("systemd-analyze") {
            let dir = target_dir().join("deb/verify");
            std::fs::create_dir_all(&dir)?;
            let inst = dir.join("dataplane@pkgcheck.service");
            std::fs::copy("/lib/systemd/system/dataplane@.service", &inst)?;
            let out = Command::new("systemd-analyze")
                .arg("verify")
                .arg(&inst)
                .output()?;
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            if !out.status.success() || text.contains("dataplane@") {
                bail!("systemd-analyze verify of the installed unit:\n{text}");
            }
            println!("systemd-analyze verify: the installed unit passes");
        } else {
            println!("systemd-analyze not found: the unit check is skipped");
        }
        Ok(())
    })();
    run(Command::new("dpkg").args(["-r", PACKAGE]))?;
    result
}
