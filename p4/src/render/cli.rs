//! simple_switch_CLI commands (bmv2): `table_add`, `table_set_default`,
//! `mirroring_add` and the queue settings.

use std::fmt::Write as _;

use super::push_num;
use crate::ops::{KeyVal, Op, Val};

/// simple_switch_CLI spelling of a value, written to `out`.
fn push_cli_val(out: &mut String, v: &Val) {
    match v {
        Val::Int(n) => push_num(out, *n),
        Val::Port(i) => push_num(out, *i as u128),
        Val::Mac(m) => {
            for (i, b) in m.iter().enumerate() {
                if i > 0 {
                    out.push(':');
                }
                let _ = write!(out, "{b:02x}");
            }
        }
        Val::V4(a) => {
            let _ = write!(out, "{}", std::net::Ipv4Addr::from(*a));
        }
        Val::V6(a) => {
            let _ = write!(out, "{}", std::net::Ipv6Addr::from(*a));
        }
    }
}

/// `Control.name` of a table or action, written to `out`.
fn push_qualified(out: &mut String, control: &str, name: &str) {
    out.push_str(control);
    out.push('.');
    out.push_str(name);
}

/// simple_switch_CLI commands. No comments: simple_switch_CLI has no
/// comment syntax. Port numbers are configuration port indexes.
pub fn render_cli(ops: &[Op]) -> String {
    let mut s = String::with_capacity(64 * ops.len());
    for op in ops {
        match op {
            Op::Entry(e) => {
                if e.is_default {
                    s.push_str("table_set_default ");
                } else {
                    s.push_str("table_add ");
                }
                push_qualified(&mut s, e.table.control, e.table.name);
                s.push(' ');
                push_qualified(&mut s, e.action.control, e.action.name);
                if e.is_default {
                    // "table_set_default T A " and the arguments, each
                    // after one space (a trailing space without any)
                    s.push(' ');
                    for (i, a) in e.args.iter().enumerate() {
                        if i > 0 {
                            s.push(' ');
                        }
                        push_cli_val(&mut s, a);
                    }
                } else {
                    // "table_add T A K1 K2 => V1 V2 [priority]"
                    s.push(' ');
                    for (i, k) in e.keys.iter().enumerate() {
                        if i > 0 {
                            s.push(' ');
                        }
                        match k {
                            KeyVal::Exact(v) => push_cli_val(&mut s, v),
                            KeyVal::Lpm(v, len) => {
                                push_cli_val(&mut s, v);
                                s.push('/');
                                push_num(&mut s, *len);
                            }
                            KeyVal::Range(lo, hi) => {
                                push_num(&mut s, *lo);
                                s.push_str("->");
                                push_num(&mut s, *hi);
                            }
                        }
                    }
                    s.push_str(" =>");
                    for a in &e.args {
                        s.push(' ');
                        push_cli_val(&mut s, a);
                    }
                    if let Some(p) = e.priority {
                        s.push(' ');
                        push_num(&mut s, p);
                    }
                }
                s.push('\n');
            }
            Op::CloneSession { session, port } => {
                let _ = writeln!(s, "mirroring_add {session} {port}");
            }
            Op::QueueRate { port, pps } => {
                let _ = writeln!(s, "set_queue_rate {pps} {port}");
            }
            Op::QueueDepth { port, packets } => {
                let _ = writeln!(s, "set_queue_depth {packets} {port}");
            }
        }
    }
    s
}
