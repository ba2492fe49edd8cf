//! Renderers: one output format per module, each from the same [`Op`]s
//! (bmv2 CLI, P4Runtime JSON, Tofino bfrt_python, p4c STF entries).
//!
//! [`Op`]: crate::ops::Op

pub mod bfrt;
pub mod cli;
pub mod p4runtime;
pub mod stf;

use std::fmt::Write as _;

use crate::ops::Val;

/// A value in decimal when below 65536, else in hex; a port as `port`
/// spells it (the bfrt and STF spelling).
pub(crate) fn small_or_hex(v: &Val, port: impl Fn(usize) -> String) -> String {
    let mut s = String::new();
    push_small_or_hex(&mut s, v, |s, i| s.push_str(&port(i)));
    s
}

/// [`small_or_hex`], written to `out`.
pub(crate) fn push_small_or_hex(out: &mut String, v: &Val, port: impl Fn(&mut String, usize)) {
    match v {
        Val::Int(n) if *n < 65536 => push_num(out, *n),
        Val::Port(i) => port(out, *i),
        other => {
            let _ = write!(out, "0x{:x}", other.number());
        }
    }
}

/// `n` in decimal, written to `out` (the renderers write many small
/// numbers: without the formatting machinery or a `String` each).
pub(crate) fn push_num(out: &mut String, n: impl Into<u128>) {
    let n: u128 = n.into();
    if n < 10 {
        out.push(char::from(b'0' + n as u8));
        return;
    }
    match u64::try_from(n) {
        Ok(n) => push_u64(out, n),
        Err(_) => {
            let _ = write!(out, "{n}");
        }
    }
}

fn push_u64(out: &mut String, mut n: u64) {
    let mut text = [0u8; 20];
    let mut i = text.len();
    loop {
        i -= 1;
        text[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.push_str(std::str::from_utf8(&text[i..]).expect("digits are ASCII"));
}
