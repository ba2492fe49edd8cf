//! `dataplane doctor` and `dataplane install-service`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use dataplane_user::doctor::{self, Verdict};
use dataplane_user::service::{self, InstanceUnit};

/// Checks this machine (against `config`); fails when any check fails.
pub fn doctor(config: Option<&Path>, json: bool) -> Result<()> {
    let checks = doctor::run(config);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&doctor::render_json(&checks))?
        );
    } else {
        print!("{}", doctor::render(&checks));
        if config.is_none() {
            println!("(give the config with -c to check its ports)");
        }
    }
    let failed = checks.iter().filter(|c| c.verdict == Verdict::Fail).count();
    if failed > 0 {
        bail!("{failed} check(s) failed");
    }
    Ok(())
}

/// Writes the unit (and the instance's drop-in), then reloads systemd when
/// it runs here.
pub fn install_service(
    config: Option<&Path>,
    instance: Option<String>,
    exec: Option<PathBuf>,
    root: &Path,
) -> Result<()> {
    let exec = match exec {
        Some(e) => e,
        None => std::env::current_exe()
            .and_then(std::fs::canonicalize)
            .context("finding this binary (give --exec)")?,
    };
    let unit = match config {
        Some(path) => {
            let plan = super::args::plan_of(path)?;
            if let Some(i) = &instance {
                if *i != plan.instance {
                    bail!(
                        "--instance {i}: the instance is the config's [switch] name, {:?} in {}",
                        plan.instance,
                        path.display()
                    );
                }
            }
            Some(InstanceUnit {
                name: plan.instance.clone(),
                config: std::fs::canonicalize(path)
                    .with_context(|| format!("{}", path.display()))?,
                ports: plan.ports.iter().map(|p| p.name.clone()).collect(),
            })
        }
        None => {
            if let Some(i) = &instance {
                dataplane_config::check_instance_name(i)
                    .map_err(|m| anyhow::anyhow!("--instance: {m}"))?;
            }
            None
        }
    };
    let written = service::install(root, &exec, unit.as_ref())?;
    for w in &written {
        println!("{w}");
    }
    let name = unit
        .as_ref()
        .map(|u| u.name.clone())
        .or(instance.clone())
        .unwrap_or_else(|| "NAME".into());
    if unit.is_none() {
        println!(
            "instance {name} runs {}/{name}.toml (or give --config)",
            service::CONFIG_DIR
        );
    }
    let systemd = root == Path::new("/") && Path::new("/run/systemd/system").exists();
    if written.iter().any(|w| w.changed()) && systemd {
        let ok = std::process::Command::new("systemctl")
            .arg("daemon-reload")
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        println!(
            "systemctl daemon-reload: {}",
            if ok { "done" } else { "FAILED" }
        );
    } else if !systemd {
        println!(
            "systemd does not run here (or --root): run `systemctl daemon-reload` where it does"
        );
    }
    println!("check the machine: dataplane doctor -c <config>; then: systemctl enable --now dataplane@{name}");
    Ok(())
}
