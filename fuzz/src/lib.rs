//! Fuzz targets of the project: what each one asserts on its input.
//!
//! Each module has `check(data)`, the whole of a target: the libFuzzer
//! binaries (`fuzz_targets/`, built by `cargo xtask fuzz` with nightly and
//! coverage instrumentation) call it, and so do the ordinary tests
//! (`tests/replay.rs`), which replay the seed corpus and every input a
//! fuzzer ever found (`regressions/<target>/`) on stable, without the
//! engine.
//!
//! | target | input | asserts |
//! |---|---|---|
//! | [`frame`] | port settings + arbitrary frame | parse, classify, verdict, accounting, pre-route, TTL/CE rewrites, flow hash: no panic, a defined verdict consistent with the parse, one counter per frame, valid checksums after rewrites |
//! | [`mac_control`] | MAC-control frames and arrivals at times | PFC/PAUSE parse and reception in the buffer model: no panic, the model's books balance after every step, pause time never shrinks |
//! | [`lldp`] | an LLDP frame from a peer (whole, or DCBX TLVs after valid mandatory ones) | decode: no panic; what decodes re-encodes and decodes the same with nothing discarded; the DCBX mismatch check agrees with the values it compares |
//! | [`config_text`] | arbitrary bytes as a config file | parse + validate: no panic; a refusal names a field for every error |
//! | [`config_struct`] | a generated config (any values) | the same on structurally valid TOML that reaches every section's checks |
//! | [`p4_entries`] | a generated config (values in range) | validate, then the P4 entries for both targets and group values: no panic, refusals name a field |

pub mod config_struct;
pub mod config_text;
pub mod frame;
pub mod gen;
pub mod lldp;
pub mod mac_control;
pub mod p4_entries;
pub mod seeds;

/// A target's check.
pub type Check = fn(&[u8]);

/// Every target by name, for the replay test and the seed writer.
pub const TARGETS: [(&str, Check); 6] = [
    ("frame", frame::check),
    ("mac_control", mac_control::check),
    ("config_text", config_text::check),
    ("config_struct", config_struct::check),
    ("p4_entries", p4_entries::check),
    ("lldp", lldp::check),
];
