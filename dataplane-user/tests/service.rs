//! `dataplane install-service`: the unit it writes is the golden file, a
//! second run changes nothing, a wrong --instance is refused, and
//! `systemd-analyze verify` accepts the unit with its drop-in, without a
//! single warning (skipped, saying so, where systemd-analyze is missing).

use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_dataplane");

/// Removes a directory when dropped (also when the test fails).
struct RemoveDir(std::path::PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

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
    let _gone = RemoveDir(dir.clone());
    std::fs::create_dir_all(&dir).unwrap();
    // a name with a space and a specifier character, quoted in the drop-in
    let cfg = dir.join("spine7 %i.toml");
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
    let want = format!("Environment=\"DATAPLANE_CONFIG={}\"\n", abs.display()).replace('%', "%%");
    assert!(d.contains(&want), "{d}");
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

/// Removes the test's data plane, namespace and files, also on failure.
struct Cleanup {
    ns: String,
    instance: String,
    dir: std::path::PathBuf,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = Command::new(BIN)
            .args(["down", "--instance", &self.instance])
            .output();
        let _ = std::fs::remove_file(format!("/run/dataplane/{}.lock", self.instance));
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}

/// What the unit relies on: `up` sends READY=1 to NOTIFY_SOCKET once it
/// runs (Type=notify), exits 0 on SIGTERM (Restart=on-failure does not
/// restart a stop) and leaves the data plane attached (no ExecStop).
#[test]
fn up_notifies_ready_and_a_stop_keeps_the_data_plane() {
    extern "C" {
        fn geteuid() -> u32;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { geteuid() } != 0 {
        eprintln!("skipped: needs root (network namespace, eBPF)");
        return;
    }
    use std::os::unix::net::UnixDatagram;
    let id = std::process::id();
    let guard = Cleanup {
        ns: format!("depsvc{id}"),
        instance: format!("depsvc{id}"),
        dir: std::env::temp_dir().join(format!("depsvc-up{id}")),
    };
    let ns = guard.ns.as_str();
    let ok = |c: &mut Command| assert!(c.status().unwrap().success(), "{c:?}");
    ok(Command::new("ip").args(["netns", "add", ns]));
    ok(Command::new("ip").args([
        "-n", ns, "link", "add", "dps1", "type", "veth", "peer", "name", "dps1p",
    ]));
    for dev in ["dps1", "dps1p"] {
        ok(Command::new("ip").args(["-n", ns, "link", "set", dev, "up"]));
    }
    let dir = guard.dir.clone();
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = dir.join("up.toml");
    std::fs::write(
        &cfg,
        format!(
            "[switch]\nname = \"{}\"\n\n[[port]]\nname = \"dps1\"\n",
            guard.instance
        ),
    )
    .unwrap();
    let sock_path = dir.join("notify");
    let sock = UnixDatagram::bind(&sock_path).unwrap();
    sock.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();

    let mut up = Command::new(BIN)
        .args(["--netns", ns, "up", "--metrics", "off", "-c"])
        .arg(&cfg)
        .env("NOTIFY_SOCKET", &sock_path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut buf = [0u8; 256];
    let got = sock.recv(&mut buf);
    let pinned_links = std::path::Path::new("/sys/fs/bpf/dataplane")
        .join(&guard.instance)
        .join("links");
    let attached_at_ready = std::fs::read_dir(&pinned_links)
        .map(|d| d.count())
        .unwrap_or(0);
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(up.id() as i32, libc::SIGTERM) };
    let status = up.wait().unwrap();
    let n = got.expect("no READY=1 within 30 s");
    assert_eq!(&buf[..n], b"READY=1");
    assert_eq!(
        attached_at_ready, 1,
        "the port's link is pinned when READY=1 is sent"
    );
    assert!(status.success(), "SIGTERM must be a clean stop: {status:?}");
    let kept = std::fs::read_dir(&pinned_links)
        .map(|d| d.count())
        .unwrap_or(0);
    assert_eq!(
        kept, 1,
        "the stopped controller left its data plane attached"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
