use which::which;

/// Rebuild the eBPF object when bpf-linker changes (a new LLVM, say).
fn main() {
    match which("bpf-linker") {
        Ok(path) => println!("cargo:rerun-if-changed={}", path.display()),
        Err(e) => println!("cargo:warning=bpf-linker not found ({e}); run `cargo xtask setup`"),
    }
}
