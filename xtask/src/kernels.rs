//! The kernel matrix: the kernel-dependent tests inside another kernel.
//!
//! `cargo xtask test --kernel 6.1|PATH` builds the test binaries on the
//! host, boots the kernel image with virtme-ng (qemu, TCG: `--disable-kvm`,
//! the host's filesystem read-only with overlays inside) and runs each
//! binary inside the guest, one test thread, with the slow-machine factor
//! `DATAPLANE_TEST_SLOW` set (TCG is several times slower than the host:
//! timing-sensitive tests wait longer, they are not skipped). Each binary's
//! exit code and time come back through a directory the guest may write.
//!
//! `cargo xtask kernels` lists the kernel images this machine has, what
//! `6.1` resolves to, and the tests of the matrix.
//!
//! Set-up (idempotent, only what is missing): Debian `qemu-system-x86`,
//! `linux-image-amd64` (Debian 12's 6.1, the kernel SONiC 202311+ runs),
//! `busybox-static` (virtme-ng's initramfs); PyPI `virtme-ng`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};

const APT: &[&str] = &["qemu-system-x86", "linux-image-amd64", "busybox-static"];
const VIRTME_NG: &str = "virtme-ng==1.42";
/// TCG's slow-machine factor for the tests' waits (measured: a boot takes
/// 15-90 s where the host's takes none; the tests' own work runs 5-10x
/// slower).
const TCG_SLOW: &str = "10";

/// One test binary of the matrix and an optional name filter.
struct Case {
    /// the `[[test]]` target in `testbed`
    target: &'static str,
    /// a test-name filter (exact), or every test of the binary
    filter: Option<&'static str>,
    why: &'static str,
}

const CASES: &[Case] = &[
    Case {
        target: "object_loads",
        filter: None,
        why: "every program passes this kernel's verifier (instruction counts)",
    },
    Case {
        target: "kernel_probes",
        filter: None,
        why: "the feature probes (the table `up` prints), up's PFC choice, a forced path refused",
    },
    Case {
        target: "pfc_dataplane",
        filter: None,
        why: "PFC frames the data plane sends (devmap broadcast, XDP metadata)",
    },
    Case {
        target: "far_notes",
        filter: None,
        why: "far-side notifications the data plane sends (the PFC broadcast)",
    },
    Case {
        target: "fixtures",
        filter: None,
        why: "the fixture table (BPF_PROG_TEST_RUN, scapy cross-check)",
    },
    Case {
        target: "p4_corpus",
        filter: None,
        why: "the P4 conformance corpus on eBPF",
    },
    Case {
        target: "fabric",
        filter: Some("incast_is_lossless_with_pfc_and_drops_without"),
        why: "the PFC incast",
    },
    Case {
        target: "pfcwd",
        filter: Some("pfcwd_drop"),
        why: "the PFC watchdog",
    },
    Case {
        target: "hitless",
        filter: None,
        why: "the hitless restart",
    },
    Case {
        target: "routing_frr",
        filter: Some("frr_bgp_routes_reach_the_data_plane_and_follow_a_link_failure"),
        why: "one FRR routing test",
    },
];

fn installed(pkg: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", pkg])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
        .unwrap_or(false)
}

/// Installs what booting another kernel needs (only what is missing).
pub fn setup() -> Result<()> {
    let missing: Vec<&str> = APT.iter().copied().filter(|p| !installed(p)).collect();
    if missing.is_empty() {
        println!("setup: kernel matrix: Debian packages present");
    } else {
        println!("setup: kernel matrix: installing {}", missing.join(" "));
        crate::run(Command::new("apt-get").args(["update", "-q"]))?;
        crate::run(
            Command::new("apt-get")
                .env("DEBIAN_FRONTEND", "noninteractive")
                .args(["install", "-y", "-q", "--no-install-recommends"])
                .args(&missing),
        )?;
    }
    if crate::machine::on_path("vng") {
        println!("setup: kernel matrix: virtme-ng present");
    } else {
        println!("setup: kernel matrix: installing {VIRTME_NG} from PyPI");
        crate::run(
            Command::new("python3")
                .args(["-m", "pip", "install", "-q", VIRTME_NG])
                .env("PIP_ROOT_USER_ACTION", "ignore"),
        )?;
        if !crate::machine::on_path("vng") {
            bail!(
                "pip installed {VIRTME_NG} but `vng` is not on PATH ({:?})",
                std::env::var("PATH")
            );
        }
    }
    Ok(())
}

/// The kernel images in /boot, newest version last.
fn boot_images() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir("/boot")
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("vmlinuz-"))
                })
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// `6.1` (a version prefix: the /boot image whose release starts with it)
/// or a path to a kernel image.
pub fn resolve(spec: &str) -> Result<PathBuf> {
    let p = Path::new(spec);
    if p.is_file() {
        return Ok(p.to_path_buf());
    }
    if spec.contains('/') {
        bail!("--kernel {spec}: no such kernel image");
    }
    let prefix = format!("vmlinuz-{spec}.");
    boot_images()
        .into_iter()
        .rev()
        .find(|i| {
            i.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .with_context(|| {
            format!(
                "--kernel {spec}: no /boot/vmlinuz-{spec}.* (found: {:?}); \
                 `cargo xtask setup` installs Debian's linux-image-amd64 (6.1), \
                 or pass the path of a kernel image",
                boot_images()
            )
        })
}

/// `cargo xtask kernels`.
pub fn list() -> Result<()> {
    let host = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    println!("host kernel: {}", host.trim());
    let imgs = boot_images();
    if imgs.is_empty() {
        println!(
            "kernel images: none in /boot (cargo xtask test --kernel 6.1 installs Debian's 6.1)"
        );
    }
    for i in &imgs {
        println!("kernel image: {}", i.display());
    }
    match resolve("6.1") {
        Ok(p) => println!("--kernel 6.1 = {}", p.display()),
        Err(e) => println!("--kernel 6.1: {e:#}"),
    }
    println!("the matrix runs, inside the guest (TCG, DATAPLANE_TEST_SLOW={TCG_SLOW}):");
    for c in CASES {
        println!(
            "  testbed --test {}{}: {}",
            c.target,
            c.filter.map(|f| format!(" {f}")).unwrap_or_default(),
            c.why
        );
    }
    Ok(())
}

/// Builds the matrix's test binaries; returns (target, executable).
fn build_tests(cases: &[&Case]) -> Result<Vec<(String, PathBuf)>> {
    crate::run(crate::cargo().args(["build", "-p", "dataplane-user", "--bin", "dataplane"]))?;
    let mut cmd = crate::cargo();
    cmd.args(["test", "-p", "testbed", "--no-run", "--message-format=json"]);
    for c in cases {
        cmd.args(["--test", c.target]);
    }
    let out = cmd
        .current_dir(crate::root())
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cargo test --no-run")?;
    if !out.status.success() {
        bail!("building the matrix's tests failed ({})", out.status);
    }
    let mut bins = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if v["reason"] != "compiler-artifact" || v["target"]["kind"][0] != "test" {
            continue;
        }
        if let (Some(name), Some(exe)) = (v["target"]["name"].as_str(), v["executable"].as_str()) {
            bins.push((name.to_string(), PathBuf::from(exe)));
        }
    }
    for c in cases {
        if !bins.iter().any(|(n, _)| n == c.target) {
            bail!("cargo built no executable for testbed --test {}", c.target);
        }
    }
    Ok(bins)
}

/// The script the guest runs: every case, its exit code and seconds
/// appended to `results`.
fn guest_script(
    cases: &[&Case],
    bins: &[(String, PathBuf)],
    results: &Path,
    dataplane: &Path,
    repeat: u32,
    slow: &str,
) -> String {
    let path = std::env::var("PATH").unwrap_or_default();
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let mut s = format!(
        "#!/bin/sh\n\
         # written by cargo xtask test --kernel; runs inside the guest\n\
         export PATH='{path}' HOME='{home}' RUST_BACKTRACE=1\n\
         export DATAPLANE_BIN='{}' {}={slow}\n\
         mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf\n\
         for m in veth sch_htb sch_tbf sch_ingress 8021q; do modprobe -q $m; done\n\
         echo \"guest kernel: $(uname -r)\"\n\
         cd '{}'\n",
        dataplane.display(),
        "DATAPLANE_TEST_SLOW",
        crate::root().join("testbed").display()
    );
    for c in cases {
        let exe = &bins.iter().find(|(n, _)| n == c.target).expect("built").1;
        let args = match c.filter {
            Some(f) => format!("--exact {f} --test-threads=1"),
            None if c.target == "fixtures" => String::new(),
            // its instruction counts are the point: printed, not captured
            None if c.target == "object_loads" => "--nocapture".into(),
            // the probe table is the point too
            None if c.target == "kernel_probes" => "--nocapture --test-threads=1".into(),
            None => "--test-threads=1".into(),
        };
        // the output goes to the console and to <dir>/<target>.log (every
        // run appended); one results line per run
        let dir = results.parent().expect("results in a directory");
        s += &format!(
            "echo '== {t}: {why}'\n\
             rm -f '{dir}/{t}.log'\n\
             for run in $(seq 1 {repeat}); do\n\
             t0=$(date +%s)\n\
             {{ '{exe}' {args} 2>&1; echo $? > '{dir}/{t}.rc'; }} | tee -a '{dir}/{t}.log'\n\
             echo \"{t} $(cat '{dir}/{t}.rc') $(( $(date +%s) - t0 ))\" >> '{res}'\n\
             done\n",
            t = c.target,
            why = c.why.replace('\'', "'\\''"),
            exe = exe.display(),
            dir = dir.display(),
            res = results.display(),
        );
    }
    s
}

/// Runs `cmd` with its output passed on through pipes. qemu opens the
/// guest's console as `/proc/self/fd/1`, which truncates a file our
/// output is redirected to (`cargo xtask test > log` lost everything
/// before the boot); through a pipe nothing is lost.
fn forwarded(cmd: &mut Command) -> std::io::Result<std::process::ExitStatus> {
    use std::process::Stdio;
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let t_out = std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::stdout()));
    let t_err = std::thread::spawn(move || std::io::copy(&mut err, &mut std::io::stderr()));
    let status = child.wait()?;
    let _ = t_out.join();
    let _ = t_err.join();
    Ok(status)
}

/// `cargo xtask test --kernel SPEC [--only a,b] [--repeat N]`: `only`
/// names test targets of the matrix (every one when empty), each run
/// `repeat` times. SPEC `host` runs the same script on the running kernel
/// (no VM, no slow-machine factor): the 6.18 column of the matrix.
pub fn test(spec: &str, only: &[String], repeat: u32) -> Result<()> {
    let host = spec == "host";
    let kernel = if host {
        PathBuf::from("(host)")
    } else {
        resolve(spec)?
    };
    if let Some(o) = only
        .iter()
        .find(|o| !CASES.iter().any(|c| c.target == o.as_str()))
    {
        let known: Vec<&str> = CASES.iter().map(|c| c.target).collect();
        bail!("--only: {o:?} is not in the kernel matrix (expected some of {known:?})");
    }
    if repeat == 0 {
        bail!("--repeat: expected at least 1 run");
    }
    let cases: Vec<&Case> = CASES
        .iter()
        .filter(|c| only.is_empty() || only.iter().any(|o| o == c.target))
        .collect();
    let bins = build_tests(&cases)?;
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::root().join("target"));
    let dataplane = target.join("debug/dataplane");
    // one directory per kernel: two matrices may run at once
    let name: String = spec
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let dir = target.join("kernel-matrix").join(name);
    std::fs::create_dir_all(&dir)?;
    let results = dir.join("results");
    let _ = std::fs::remove_file(&results);
    std::fs::write(&results, "")?;
    let script = dir.join("run.sh");
    let slow = if host { "1" } else { TCG_SLOW };
    std::fs::write(
        &script,
        guest_script(&cases, &bins, &results, &dataplane, repeat, slow),
    )?;
    let t0 = Instant::now();
    let status = if host {
        println!("== kernel matrix on the running kernel (no VM)");
        Command::new("sh")
            .arg(&script)
            .current_dir(crate::root())
            .status()
            .context("running the matrix script")?
    } else {
        println!("== kernel matrix: {} (virtme-ng, TCG)", kernel.display());
        let mut vng = Command::new("vng");
        vng.arg("--run")
            .arg(&kernel)
            .args([
                "--disable-kvm",
                "--cpus",
                "2",
                "--memory",
                "3G",
                "--user",
                "root",
            ])
            .arg("--rwdir")
            .arg(&dir)
            .arg("--exec")
            .arg(format!("sh {}", script.display()))
            .current_dir(crate::root());
        forwarded(&mut vng).context("starting vng (virtme-ng)")?
    };
    let wall = t0.elapsed().as_secs();
    let got = std::fs::read_to_string(&results).unwrap_or_default();
    let mut failed = Vec::new();
    println!(
        "== kernel matrix on {} ({wall} s in all, boot included):",
        kernel.display()
    );
    for c in &cases {
        // one line per run: target, exit code, seconds
        let runs: Vec<(bool, u64)> = got
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|f| f.len() == 3 && f[0] == c.target)
            .map(|f| (f[1] == "0", f[2].parse().unwrap_or(0)))
            .collect();
        let passed = runs.iter().filter(|r| r.0).count();
        let secs: u64 = runs.iter().map(|r| r.1).sum();
        let state = match (runs.len(), passed) {
            (0, _) => "NOT RUN".to_string(),
            (n, p) if n == p && repeat == 1 => "pass".into(),
            (n, p) if n == p => format!("pass {p}/{n}"),
            (n, p) => format!("FAIL ({p}/{n} passed)"),
        };
        println!("  {:<14} {state} ({secs} s)", c.target);
        if runs.len() < repeat as usize {
            failed.push(format!(
                "{} ({} of {repeat} runs: the guest stopped first)",
                c.target,
                runs.len()
            ));
        } else if passed < runs.len() {
            failed.push(format!("{} ({passed}/{} passed)", c.target, runs.len()));
        }
    }
    if !status.success() && failed.is_empty() {
        bail!("the matrix exited with {status} after every case passed");
    }
    if !failed.is_empty() {
        bail!(
            "kernel {}: {} failed: {}",
            kernel.display(),
            failed.len(),
            failed.join(", ")
        );
    }
    println!("kernel matrix: every case passed on {}", kernel.display());
    Ok(())
}
