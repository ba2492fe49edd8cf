//! `dataplane install-service`: the unit it writes is the golden file, a
//! second run changes nothing, a wrong --instance is refused, and
//! `systemd-analyze verify` accepts the unit with its drop-in, without a
//! single warning (skipped, saying so, where systemd-analyze is missing).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_dataplane");

fn install(root: &Path, cfg: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(BIN)
        .args(["install-service", "--root"])
        .arg(root)
        .arg("--exec")
        .arg(BIN)
        .arg("--config")
        .arg(cfg)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn install_service_writes_the_golden_unit_once_and_systemd_accepts_it() {
    let dir = std::env::temp_dir().join(format!("depsvc{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("spine7.toml");
    std::fs::write(
        &cfg,
        "[switch]\nname = \"spine7\"\n\n[[port]]\nname = \"swp1\"\n\n[[port]]\nname = \"enp1s0-p2\"\n",
    )
    .unwrap();
    let root = dir.join("root");

    let first = install(&root, &cfg, &[]);
    assert!(first.status.success(), "{first:?}");
    let said = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(
        said.contains("created ") && !said.contains("unchanged"),
        "{said}"
    );
    let unit_dir = root.join("etc/systemd/system");
    let unit = std::fs::read_to_string(unit_dir.join("dataplane@.service")).unwrap();
    let golden =
        include_str!("fixtures/dataplane@.service").replace("/usr/local/sbin/dataplane", BIN);
    assert_eq!(unit, golden);
    let dropin = unit_dir.join("dataplane@spine7.service.d/10-dataplane.conf");
    let d = std::fs::read_to_string(&dropin).unwrap();
    let abs = std::fs::canonicalize(&cfg).unwrap();
    assert!(
        d.contains(&format!("Environment=DATAPLANE_CONFIG={}\n", abs.display())),
        "{d}"
    );
    assert!(
        d.contains("sys-subsystem-net-devices-enp1s0\\x2dp2.device"),
        "{d}"
    );

    let again = install(&root, &cfg, &[]);
    assert!(again.status.success());
    let said = String::from_utf8_lossy(&again.stdout).into_owned();
    assert_eq!(said.matches("unchanged ").count(), 2, "{said}");

    let wrong = install(&root, &cfg, &["--instance", "leaf9"]);
    assert!(!wrong.status.success());
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("spine7"));

    match Command::new("systemd-analyze").arg("--version").output() {
        Ok(o) if o.status.success() => {
            // an instance of the template; systemd-analyze finds the
            // template and the drop-in in the unit's directory
            let v = Command::new("systemd-analyze")
                .arg("verify")
                .arg(unit_dir.join("dataplane@spine7.service"))
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&v.stderr);
            // it exits 0 on unknown keys and values, warning on stderr
            assert!(
                v.status.success() && err.trim().is_empty(),
                "systemd-analyze verify: {err}"
            );
        }
        _ => eprintln!("skipped systemd-analyze verify: systemd-analyze is not installed here"),
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
