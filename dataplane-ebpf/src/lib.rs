#![no_std]
// The programs are in src/main.rs (the `dataplane-ebpf` binary built for
// bpfel-unknown-none). This empty library lets the host workspace build.
