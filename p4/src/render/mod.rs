//! Renderers: one output format per module, each from the same [`Op`]s
//! (bmv2 CLI, P4Runtime JSON, Tofino bfrt_python, p4c STF entries).
//!
//! [`Op`]: crate::ops::Op

pub mod bfrt;
pub mod cli;
pub mod p4runtime;
pub mod stf;

use crate::ops::Val;

/// A value in decimal when below 65536, else in hex; a port as `port`
/// spells it (the bfrt and STF spelling).
pub(crate) fn small_or_hex(v: &Val, port: impl Fn(usize) -> String) -> String {
    match v {
        Val::Int(n) if *n < 65536 => n.to_string(),
        Val::Port(i) => port(*i),
        other => format!("0x{:x}", other.number()),
    }
}
