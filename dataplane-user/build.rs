//! Builds the eBPF programs (dataplane-ebpf) with the nightly toolchain and
//! bpf-linker, and puts the object in OUT_DIR for `include_bytes_aligned!`.
//! `AYA_BUILD_SKIP=1` skips it (for clippy or docs on machines without
//! bpf-linker); the binary then refuses to load programs.

fn main() -> anyhow::Result<()> {
    println!("cargo:rerun-if-changed=../dataplane-common/src");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR")?);
    let skip = std::env::var("AYA_BUILD_SKIP").map(|v| v == "1" || v.eq_ignore_ascii_case("true")).unwrap_or(false);
    if skip {
        // an empty object: `Dataplane::load` reports it clearly
        std::fs::write(out.join("dataplane-ebpf"), b"")?;
        println!("cargo:rerun-if-env-changed=AYA_BUILD_SKIP");
        return Ok(());
    }
    aya_build::build_ebpf(
        [aya_build::Package {
            name: "dataplane-ebpf",
            root_dir: concat!(env!("CARGO_MANIFEST_DIR"), "/../dataplane-ebpf"),
            ..Default::default()
        }],
        aya_build::Toolchain::default(),
    )
}
