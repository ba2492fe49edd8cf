//! simple_switch_CLI commands (bmv2): `table_add`, `table_set_default`,
//! `mirroring_add` and the queue settings.

use std::fmt::Write as _;

use crate::ops::{KeyVal, Op, Val};

fn mac_str(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// simple_switch_CLI spelling of a value.
fn cli_val(v: &Val) -> String {
    match v {
        Val::Int(n) => n.to_string(),
        Val::Port(i) => i.to_string(),
        Val::Mac(m) => mac_str(m),
        Val::V4(a) => std::net::Ipv4Addr::from(*a).to_string(),
        Val::V6(a) => std::net::Ipv6Addr::from(*a).to_string(),
    }
}

/// simple_switch_CLI commands. No comments: simple_switch_CLI has no
/// comment syntax. Port numbers are configuration port indexes.
pub fn render_cli(ops: &[Op]) -> String {
    let mut s = String::new();
    for op in ops {
        match op {
            Op::Entry(e) => {
                let args: Vec<String> = e.args.iter().map(cli_val).collect();
                if e.is_default {
                    let _ = writeln!(
                        s,
                        "table_set_default {} {} {}",
                        e.table.qualified(),
                        e.action.qualified(),
                        args.join(" ")
                    );
                } else {
                    let keys: Vec<String> = e
                        .keys
                        .iter()
                        .map(|k| match k {
                            KeyVal::Exact(v) => cli_val(v),
                            KeyVal::Lpm(v, len) => format!("{}/{len}", cli_val(v)),
                            KeyVal::Range(lo, hi) => format!("{lo}->{hi}"),
                        })
                        .collect();
                    let mut line = format!(
                        "table_add {} {} {} =>",
                        e.table.qualified(),
                        e.action.qualified(),
                        keys.join(" ")
                    );
                    for a in &args {
                        line.push(' ');
                        line.push_str(a);
                    }
                    if let Some(p) = e.priority {
                        let _ = write!(line, " {p}");
                    }
                    s.push_str(line.trim_end());
                    s.push('\n');
                }
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
