//! `dataplane doctor` on veths in a network namespace of its own, with a
//! config that has one good port, one missing port and one whose MTU is
//! below the config's: the expected PASS/WARN/FAIL line of every check,
//! as text and as JSON, and a failing exit status.

use std::path::PathBuf;
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_dataplane");

/// The namespace, removed (with its veths) when dropped, also on failure,
/// and the test's directory.
struct Ns(String, PathBuf);

impl Drop for Ns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
        let _ = std::fs::remove_dir_all(&self.1);
    }
}

fn run(cmd: &mut Command) -> Output {
    let o = cmd.output().expect("spawning");
    assert!(
        o.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

fn ip(ns: &str, args: &str) {
    run(Command::new("ip")
        .args(["-n", ns])
        .args(args.split_whitespace()));
}

fn is_root() -> bool {
    extern "C" {
        fn geteuid() -> u32;
    }
    // SAFETY: geteuid has no preconditions.
    unsafe { geteuid() == 0 }
}

/// CPUs online, as doctor counts them.
fn cpus() -> u32 {
    // SAFETY: sysconf has no preconditions.
    unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as u32
}

/// Veth dpd1 (queues for every CPU, GRO on its peer so it takes
/// redirects, MTU 1500 as the config), dpd3 (one queue, a bare peer, MTU
/// 1280); dpd2 is never made.
fn fabric(name: &str) -> Ns {
    run(Command::new("ip").args(["netns", "add", name]));
    let ns = Ns(name.to_string(), std::env::temp_dir().join(name));
    let q = cpus();
    ip(
        name,
        &format!("link add dpd1 numrxqueues {q} numtxqueues {q} type veth peer name dpd1p numrxqueues {q} numtxqueues {q}"),
    );
    ip(name, "link add dpd3 type veth peer name dpd3p");
    ip(name, "link set dpd3 mtu 1280");
    ip(name, "link set dpd3p mtu 1280");
    for dev in ["dpd1", "dpd1p", "dpd3", "dpd3p"] {
        ip(name, &format!("link set {dev} up"));
    }
    run(Command::new("ip").args(["netns", "exec", name, "ethtool", "-K", "dpd1p", "gro", "on"]));
    ns
}

fn config(dir: &std::path::Path) -> PathBuf {
    let path = dir.join("doctor.toml");
    std::fs::write(
        &path,
        "[switch]\nname = \"depdoctor\"\n\n[buffer]\nmtu = 1500\n\n\
         [[port]]\nname = \"dpd1\"\npfc_enable = \"3\"\n\n\
         [[port]]\nname = \"dpd2\"\n\n\
         [[port]]\nname = \"dpd3\"\npfc_enable = \"3\"\n",
    )
    .unwrap();
    path
}

/// (verdict, what) of every port line expected.
fn expected() -> Vec<(&'static str, &'static str)> {
    let few_queues = if cpus() > 1 { "WARN" } else { "PASS" };
    vec![
        ("PASS", "port dpd1 exists"),
        ("PASS", "port dpd1 driver"),
        ("PASS", "port dpd1 xdp"),
        ("PASS", "port dpd1 mtu"),
        ("PASS", "port dpd1 link"),
        // veths have no DCB operations and pfc_enable is set
        ("WARN", "port dpd1 dcb"),
        ("PASS", "port dpd1 queues"),
        ("FAIL", "port dpd2 exists"),
        ("PASS", "port dpd3 exists"),
        ("PASS", "port dpd3 driver"),
        // its peer has neither GRO nor XDP: no XDP transmit
        ("WARN", "port dpd3 xdp"),
        ("FAIL", "port dpd3 mtu"),
        ("PASS", "port dpd3 link"),
        ("WARN", "port dpd3 dcb"),
        (few_queues, "port dpd3 queues"),
    ]
}

#[test]
fn doctor_reports_good_missing_and_small_mtu_ports() {
    if !is_root() {
        eprintln!("skipped: needs root (network namespaces)");
        return;
    }
    let name = format!("depdoc{}", std::process::id());
    let _ns = fabric(&name);
    let dir = std::env::temp_dir().join(&name);
    std::fs::create_dir_all(&dir).unwrap();
    let cfg = config(&dir);

    let out = Command::new(BIN)
        .args(["--netns", &name, "doctor", "-c"])
        .arg(&cfg)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{text}");
    assert!(
        !out.status.success(),
        "two FAILs must fail the run:\n{text}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("2 check(s) failed"),
        "{out:?}"
    );
    for machine in ["kernel", "btf", "bpffs", "privileges", "config", "instance"] {
        assert!(
            text.lines()
                .any(|l| l[6..].starts_with(&format!("{machine}: "))),
            "no {machine} line:\n{text}"
        );
    }
    let ports: Vec<(&str, &str)> = text
        .lines()
        .filter(|l| l.get(6..).is_some_and(|s| s.starts_with("port ")))
        .map(|l| (&l[..4], l[6..].split(':').next().unwrap()))
        .collect();
    assert_eq!(ports, expected(), "\n{text}");
    assert!(
        text.contains("mtu 1280 is below the config's [buffer] mtu 1500"),
        "{text}"
    );
    assert!(text.contains("dpd3 xdp: no XDP transmit now"), "{text}");
    assert!(text.contains("no DCB interface"), "{text}");

    let out = Command::new(BIN)
        .args(["--netns", &name, "doctor", "--json", "-c"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["fail"], 2, "{j}");
    let from_json: Vec<(String, String)> = j["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c.get("port").is_some())
        .map(|c| {
            (
                c["verdict"].as_str().unwrap().to_string(),
                format!(
                    "port {} {}",
                    c["port"].as_str().unwrap(),
                    c["check"].as_str().unwrap()
                ),
            )
        })
        .collect();
    let want: Vec<(String, String)> = expected()
        .into_iter()
        .map(|(v, w)| (v.to_string(), w.to_string()))
        .collect();
    assert_eq!(from_json, want);
    std::fs::remove_dir_all(&dir).unwrap();
}
