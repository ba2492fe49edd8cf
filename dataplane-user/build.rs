//! Builds the eBPF programs (the `dataplane-ebpf` crate) for
//! bpfel-unknown-none with the `nightly` toolchain and bpf-linker, and puts
//! the object in OUT_DIR for `include_bytes_aligned!`.
//!
//! Built here rather than with aya-build because the programs need
//! `-C target-cpu=v3` (BPF atomic compare-and-exchange for the buffer
//! model's lock) on top of the flags aya-build passes.
//! `AYA_BUILD_SKIP=1` skips it (clippy, docs): the binary then refuses to
//! load programs.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    let dst = out.join("dataplane-ebpf");
    println!("cargo:rerun-if-env-changed=AYA_BUILD_SKIP");
    let skip = std::env::var("AYA_BUILD_SKIP")
        .map(|v| v == "1" || v.eq_ignore_ascii_case("true"))
        .unwrap_or(false);
    if skip {
        std::fs::write(&dst, b"").expect("write empty object");
        return;
    }
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let ebpf_dir = manifest.join("../dataplane-ebpf");
    println!("cargo:rerun-if-changed={}", ebpf_dir.display());
    println!(
        "cargo:rerun-if-changed={}",
        manifest.join("../dataplane-common/src").display()
    );
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").expect("CARGO_CFG_TARGET_ARCH");
    let target_dir = out.join("ebpf-target");
    let flags = [
        format!("--cfg=bpf_target_arch=\"{arch}\""),
        "-Cdebuginfo=2".into(),
        "-Clink-arg=--btf".into(),
        "-Ctarget-cpu=v3".into(),
    ]
    .join("\x1f");
    let mut cmd = Command::new("rustup");
    cmd.args([
        "run",
        "nightly",
        "cargo",
        "build",
        "--package",
        "dataplane-ebpf",
        "--bin",
        "dataplane-ebpf",
    ])
    .args([
        "--release",
        "--target",
        "bpfel-unknown-none",
        "-Z",
        "build-std=core",
    ])
    .arg("--target-dir")
    .arg(&target_dir)
    .current_dir(&ebpf_dir)
    .env("CARGO_ENCODED_RUSTFLAGS", flags)
    .env_remove("RUSTC")
    .env_remove("RUSTC_WORKSPACE_WRAPPER")
    .env_remove("RUSTFLAGS");
    let o = cmd
        .output()
        .unwrap_or_else(|e| panic!("starting {cmd:?}: {e} (run `cargo xtask setup`)"));
    if !o.status.success() {
        let err = String::from_utf8_lossy(&o.stderr);
        for l in err.lines() {
            println!("cargo:warning={l}");
        }
        panic!("building the eBPF programs failed (see the warnings above; `cargo xtask setup` installs bpf-linker and rust-src)");
    }
    let built = target_dir.join("bpfel-unknown-none/release/dataplane-ebpf");
    std::fs::copy(&built, &dst).unwrap_or_else(|e| panic!("copying {}: {e}", built.display()));
}
