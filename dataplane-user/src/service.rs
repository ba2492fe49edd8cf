//! The systemd unit of the controller (`dataplane@.service`, one instance
//! per `[switch] name`) and its per-instance drop-in, as text ([`unit`],
//! [`dropin`]: pure, golden-file tested), and [`install`], which writes
//! them only when they changed (re-running it is harmless).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Where the template goes (under the install root).
pub const UNIT_PATH: &str = "etc/systemd/system/dataplane@.service";
/// Where an instance's config is when no drop-in says otherwise.
pub const CONFIG_DIR: &str = "/etc/dataplane";

/// The template unit, running `exec up`.
pub fn unit(exec: &Path) -> String {
    format!(
        r#"# dataplane@.service: the controller of one data plane instance (%i = the
# config's [switch] name), `dataplane up`. Written by `dataplane
# install-service`, which rewrites it only when it changed.
#
# The data plane outlives its controller: the XDP programs are attached
# through pinned bpf_links and every map is pinned under
# /sys/fs/bpf/dataplane/%i, so frames keep being forwarded while this
# service is stopped, restarting or crashed, and the next `up` adopts the
# pinned data plane with all its state (hitless restart; after replacing
# the binary, `systemctl restart` is the upgrade).
#
# No ExecStop=dataplane down: stopping the service (systemctl stop or
# restart, a package upgrade, a crash) must never stop forwarding. Detaching the data plane is an explicit act:
#   systemctl stop dataplane@NAME && dataplane down --instance NAME
# (`down` is refused while a controller runs the instance.)

[Unit]
Description=Lossless RoCEv2 switch data plane (XDP), instance %i
# after udev and early network set-up (names, MTUs); the ports themselves
# are waited for by the instance's drop-in
After=network-pre.target
RequiresMountsFor=/sys/fs/bpf
# retry for ever: the data plane forwards without a controller meanwhile,
# but with no PFC timer, watchdog or route sync
StartLimitIntervalSec=0

[Service]
# READY=1 once the tables are written and the programs attached or adopted
Type=notify
NotifyAccess=main
# the config; `dataplane install-service --config PATH` sets it in a drop-in
Environment=DATAPLANE_CONFIG={CONFIG_DIR}/%i.toml
# more arguments of `up`, set with `systemctl edit`, quoted, e.g.
# Environment="DATAPLANE_ARGS=--metrics 127.0.0.1:9465 --log-json"
Environment=DATAPLANE_ARGS=
ExecStart={exec} up --config ${{DATAPLANE_CONFIG}} $DATAPLANE_ARGS
# validates the file first; a config that fails changes nothing
ExecReload=/bin/kill -HUP $MAINPID
# SIGTERM: the controller stops and the data plane stays
KillSignal=SIGTERM
TimeoutStopSec=15s
# a crash, a kill or a failed start: the controller comes back and adopts
# the running data plane; a clean stop (exit 0 on SIGTERM) is not restarted
Restart=on-failure
RestartSec=5s

[Install]
WantedBy=multi-user.target
"#,
        exec = exec.display(),
    )
}

/// systemd's escaping of a path component (`systemd-escape`): `-` and
/// every byte outside `[A-Za-z0-9:_.]` as `\xNN`, a leading `.` too.
pub fn escape(name: &str) -> String {
    let mut s = String::new();
    for (i, b) in name.bytes().enumerate() {
        let plain = b.is_ascii_alphanumeric() || b == b':' || b == b'_' || (b == b'.' && i > 0);
        if plain {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s
}

/// The drop-in of one instance: its config, and the ports it waits for
/// (their device units: a NIC renamed late by udev is not missed).
pub fn dropin(instance: &str, config: &Path, ports: &[String]) -> String {
    let devices: Vec<String> = ports
        .iter()
        .map(|p| format!("sys-subsystem-net-devices-{}.device", escape(p)))
        .collect();
    let mut s = format!(
        "# Written by `dataplane install-service --config {}`: the config of\n\
         # instance {instance} and the ports it waits for (a port that never\n\
         # appears delays the start by systemd's device timeout; `up` then says\n\
         # which one is missing).\n\n[Unit]\n",
        config.display()
    );
    if !devices.is_empty() {
        s.push_str(&format!("Wants={}\n", devices.join(" ")));
        s.push_str(&format!("After={}\n", devices.join(" ")));
    }
    s.push_str(&format!(
        "\n[Service]\nEnvironment={}\n",
        quote(&format!("DATAPLANE_CONFIG={}", config.display()))
    ));
    s
}

/// A unit-file value as one double-quoted word: `\` and `"` escaped, `%`
/// (a specifier) doubled.
pub fn quote(v: &str) -> String {
    let mut s = String::from("\"");
    for c in v.chars() {
        match c {
            '\\' | '"' => {
                s.push('\\');
                s.push(c);
            }
            '%' => s.push_str("%%"),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// Path of an instance's drop-in under the install root.
pub fn dropin_path(root: &Path, instance: &str) -> PathBuf {
    root.join(format!(
        "etc/systemd/system/dataplane@{instance}.service.d/10-dataplane.conf"
    ))
}

/// What [`install`] did to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    Created(PathBuf),
    Updated(PathBuf),
    Unchanged(PathBuf),
}

impl Written {
    pub fn changed(&self) -> bool {
        !matches!(self, Written::Unchanged(_))
    }
}

impl std::fmt::Display for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Written::Created(p) => write!(f, "created {}", p.display()),
            Written::Updated(p) => write!(f, "updated {}", p.display()),
            Written::Unchanged(p) => write!(f, "unchanged {}", p.display()),
        }
    }
}

/// Writes `text` to `path` unless it already holds exactly that (atomic:
/// a temporary file renamed over it).
pub fn write_if_changed(path: &Path, text: &str) -> Result<Written> {
    let old = std::fs::read_to_string(path).ok();
    if old.as_deref() == Some(text) {
        return Ok(Written::Unchanged(path.into()));
    }
    let dir = path.parent().context("a path with a parent")?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(match old {
        None => Written::Created(path.into()),
        Some(_) => Written::Updated(path.into()),
    })
}

/// One instance to install: its name, config (absolute) and ports.
pub struct InstanceUnit {
    pub name: String,
    pub config: PathBuf,
    pub ports: Vec<String>,
}

/// Writes the template (running `exec`) and, for `instance`, its drop-in,
/// under `root` (`/` on a real install).
pub fn install(root: &Path, exec: &Path, instance: Option<&InstanceUnit>) -> Result<Vec<Written>> {
    if !exec.is_absolute() {
        bail!("--exec {}: systemd needs an absolute path", exec.display());
    }
    let mut out = vec![write_if_changed(&root.join(UNIT_PATH), &unit(exec))?];
    if let Some(i) = instance {
        if !i.config.is_absolute() {
            bail!("--config {}: expected an absolute path", i.config.display());
        }
        out.push(write_if_changed(
            &dropin_path(root, &i.name),
            &dropin(&i.name, &i.config, &i.ports),
        )?);
    }
    Ok(out)
}

/// The systemd service a process runs in, from its /proc/PID/cgroup
/// text (`0::/system.slice/system-dataplane.slice/dataplane@leaf1.service`
/// -> `dataplane@leaf1.service`); `None` outside a service.
pub fn service_of_cgroup(cgroup: &str) -> Option<String> {
    cgroup.lines().find_map(|l| {
        let path = l.splitn(3, ':').nth(2)?;
        path.split('/')
            .rev()
            .find(|c| c.ends_with(".service"))
            .map(str::to_string)
    })
}

/// The systemd service process `pid` runs in, if any.
pub fn service_of_pid(pid: i32) -> Option<String> {
    service_of_cgroup(&std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_of_a_cgroup() {
        assert_eq!(
            service_of_cgroup("0::/system.slice/system-dataplane.slice/dataplane@leaf1.service\n"),
            Some("dataplane@leaf1.service".into())
        );
        assert_eq!(
            service_of_cgroup("12:pids:/user.slice\n0::/user.slice/user-0.slice/session-3.scope\n"),
            None
        );
        assert_eq!(service_of_cgroup(""), None);
    }

    #[test]
    fn the_unit_matches_its_golden_file() {
        let golden = include_str!("../tests/fixtures/dataplane@.service");
        assert_eq!(unit(Path::new("/usr/local/sbin/dataplane")), golden);
    }

    #[test]
    fn the_unit_never_detaches_and_reloads_by_sighup() {
        let u = unit(Path::new("/usr/local/sbin/dataplane"));
        assert!(!u.lines().any(|l| l.starts_with("ExecStop")), "{u}");
        assert!(u.contains("\nExecReload=/bin/kill -HUP $MAINPID\n"));
        assert!(u.contains("\nRestart=on-failure\n"));
        assert!(u.contains("\nExecStart=/usr/local/sbin/dataplane up --config ${DATAPLANE_CONFIG} $DATAPLANE_ARGS\n"));
    }

    #[test]
    fn values_are_quoted_for_unit_files() {
        assert_eq!(quote("A=/etc/x y.toml"), "\"A=/etc/x y.toml\"");
        assert_eq!(quote(r#"A=5%"q"\"#), r#""A=5%%\"q\"\\""#);
    }

    #[test]
    fn names_are_escaped_as_systemd_escape_does() {
        assert_eq!(escape("eth1"), "eth1");
        assert_eq!(escape("enp1s0f0-p1"), "enp1s0f0\\x2dp1");
        assert_eq!(escape("br.10"), "br.10");
        assert_eq!(escape(".x"), "\\x2ex");
        assert_eq!(escape("a b"), "a\\x20b");
    }

    #[test]
    fn install_is_idempotent() {
        let root = std::env::temp_dir().join(format!("dp-svc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let i = InstanceUnit {
            name: "leaf1".into(),
            config: "/etc/dataplane/leaf1.toml".into(),
            ports: vec!["eth1".into(), "eth-2".into()],
        };
        let exec = Path::new("/usr/local/sbin/dataplane");
        let first = install(&root, exec, Some(&i)).unwrap();
        assert!(
            first.iter().all(|w| matches!(w, Written::Created(_))),
            "{first:?}"
        );
        let again = install(&root, exec, Some(&i)).unwrap();
        assert!(again.iter().all(|w| !w.changed()), "{again:?}");
        let d = std::fs::read_to_string(dropin_path(&root, "leaf1")).unwrap();
        assert!(d.contains("Environment=\"DATAPLANE_CONFIG=/etc/dataplane/leaf1.toml\"\n"));
        assert!(d.contains("After=sys-subsystem-net-devices-eth1.device sys-subsystem-net-devices-eth\\x2d2.device\n"));
        let moved = install(&root, Path::new("/opt/dp/dataplane"), None).unwrap();
        assert!(matches!(moved[0], Written::Updated(_)), "{moved:?}");
        assert!(install(&root, Path::new("dataplane"), None).is_err());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
