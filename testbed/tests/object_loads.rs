//! The data plane's object loads in the running kernel: every XDP program
//! passes its verifier, and each one's verified-instruction count is
//! printed (the figure that grows toward the verifier's limit of 1 000 000
//! processed instructions). First case of the kernel matrix: a kernel that
//! refuses a program fails here with the verifier's own last lines.

use dataplane_user::object::{load_object, EBPF_OBJECT};

#[test]
fn every_program_passes_this_kernels_verifier() {
    if EBPF_OBJECT.is_empty() {
        eprintln!("SKIPPED: built with AYA_BUILD_SKIP=1 (no eBPF object)");
        return;
    }
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let bpf = match load_object() {
        Ok(b) => b,
        Err(e) => {
            // the verifier's log ends with the reason and "processed N
            // insns" (the error chain without a backtrace, which `{:?}`
            // appends when RUST_BACKTRACE is set)
            let msg = format!("{e:#}");
            let lines: Vec<&str> = msg.lines().collect();
            let tail = lines[lines.len().saturating_sub(25)..].join("\n");
            panic!(
                "kernel {}: the object does not load:\n{tail}",
                kernel.trim()
            );
        }
    };
    let mut loaded = 0;
    for (name, prog) in bpf.programs() {
        let Ok(info) = prog.info() else { continue };
        loaded += 1;
        println!(
            "kernel {}: {name}: {} instructions verified",
            kernel.trim(),
            info.verified_instruction_count()
                .map_or("(not reported)".to_string(), |n| n.to_string())
        );
    }
    assert!(loaded > 0, "no program of the object was loaded");
}
