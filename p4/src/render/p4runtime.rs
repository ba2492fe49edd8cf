//! P4Runtime: a `WriteRequest` in the protobuf JSON mapping (table entries
//! and clone sessions), with its base64 canonical byte strings.

use super::push_num;
use crate::ops::{Entry, KeyVal, Op};

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (the protobuf JSON mapping of `bytes`).
pub fn base64(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// P4Runtime's canonical binary string of a number: big-endian, no leading
/// zero bytes, at least one byte.
pub fn canonical_bytes(n: u128) -> Vec<u8> {
    let b = n.to_be_bytes();
    let first = b.iter().position(|&x| x != 0).unwrap_or(15);
    b[first..].to_vec()
}

/// Base64 of the canonical bytes of each value below 256 (one byte:
/// `xx==`), the most common values (ports, classes, ids).
const B64_BYTE: [[u8; 4]; 256] = {
    let mut t = [[0u8; 4]; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = [B64[b >> 2], B64[(b & 3) << 4], b'=', b'='];
        b += 1;
    }
    t
};

/// `n` as P4Runtime's canonical bytes in base64, written to `out`
/// (what `base64(&canonical_bytes(n))` returns, without allocating).
fn push_p4rt_bytes(out: &mut String, n: u128) {
    if n < 256 {
        out.push_str(std::str::from_utf8(&B64_BYTE[n as usize]).expect("base64 is ASCII"));
        return;
    }
    let b = n.to_be_bytes();
    let first = (n.leading_zeros() / 8) as usize;
    let mut text = [0u8; 24];
    let mut len = 0;
    for chunk in b[first..].chunks(3) {
        let v = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            text[len] = if i <= chunk.len() {
                B64[((v >> (18 - 6 * i)) & 63) as usize]
            } else {
                b'='
            };
            len += 1;
        }
    }
    out.push_str(std::str::from_utf8(&text[..len]).expect("base64 is ASCII"));
}

// The WriteRequest's messages are written straight to text, in the
// protobuf JSON mapping's field names and compact form, fields in
// alphabetical order (the output of the serde_json serializer of typed
// messages used before, byte for byte: the golden files; per message
// that serializer wrote a few dozen small pieces, each through a
// byte-escaping loop, most of the generator's time). Every string
// written is a fixed ASCII name or base64, which JSON needs no escape
// for. The text around the values of the first parameters and key
// fields is written in one piece.

/// `{"paramId":N,"value":"` for N = 1.. (then one at a time).
const PARAM_HEAD: [&str; 8] = [
    r#"{"paramId":1,"value":""#,
    r#"{"paramId":2,"value":""#,
    r#"{"paramId":3,"value":""#,
    r#"{"paramId":4,"value":""#,
    r#"{"paramId":5,"value":""#,
    r#"{"paramId":6,"value":""#,
    r#"{"paramId":7,"value":""#,
    r#"{"paramId":8,"value":""#,
];

/// `"},"fieldId":N` for N = 1.. (after an exact match's value).
const EXACT_TAIL: [&str; 4] = [
    r#""},"fieldId":1"#,
    r#""},"fieldId":2"#,
    r#""},"fieldId":3"#,
    r#""},"fieldId":4"#,
];

/// `"<key>":"<base64 of n>"`.
fn push_bytes_field(out: &mut String, key: &str, n: u128) {
    out.push('"');
    out.push_str(key);
    out.push_str("\":\"");
    push_p4rt_bytes(out, n);
    out.push('"');
}

/// The update of a table entry (a default entry: MODIFY).
fn push_table_update(out: &mut String, e: &Entry) {
    out.push_str(r#"{"entity":{"tableEntry":{"action":{"action":{"actionId":"#);
    push_num(out, e.action.id);
    out.push_str(r#","params":["#);
    for (i, v) in e.args.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match PARAM_HEAD.get(i) {
            Some(head) => out.push_str(head),
            None => {
                out.push_str(r#"{"paramId":"#);
                push_num(out, i as u128 + 1);
                out.push_str(r#","value":""#);
            }
        }
        push_p4rt_bytes(out, v.number());
        out.push_str("\"}");
    }
    out.push_str("]}}");
    if e.is_default {
        out.push_str(r#","isDefaultAction":true"#);
    } else {
        // a don't-care match (prefix length 0, a range over every value)
        // is written by leaving the field out
        out.push_str(r#","match":["#);
        let mut any = false;
        for (i, (kv, ks)) in e.keys.iter().zip(e.table.keys).enumerate() {
            let care = match kv {
                KeyVal::Lpm(_, 0) => false,
                KeyVal::Range(0, hi) => *hi != u128::MAX >> (128 - ks.width.min(128)),
                _ => true,
            };
            if !care {
                continue;
            }
            if any {
                out.push(',');
            }
            any = true;
            if let KeyVal::Exact(v) = kv {
                out.push_str(r#"{"exact":{"value":""#);
                push_p4rt_bytes(out, v.number());
                match EXACT_TAIL.get(i) {
                    Some(tail) => out.push_str(tail),
                    None => {
                        out.push_str(r#""},"fieldId":"#);
                        push_num(out, i as u128 + 1);
                    }
                }
            } else {
                out.push_str(r#"{"fieldId":"#);
                push_num(out, i as u128 + 1);
            }
            match kv {
                KeyVal::Exact(_) => {}
                KeyVal::Lpm(v, len) => {
                    out.push_str(r#","lpm":{"prefixLen":"#);
                    push_num(out, *len);
                    out.push(',');
                    push_bytes_field(out, "value", v.number());
                    out.push('}');
                }
                KeyVal::Range(lo, hi) => {
                    out.push_str(r#","range":{"#);
                    push_bytes_field(out, "high", *hi);
                    out.push(',');
                    push_bytes_field(out, "low", *lo);
                    out.push('}');
                }
            }
            out.push('}');
        }
        out.push(']');
        if let Some(p) = e.priority {
            out.push_str(r#","priority":"#);
            push_num(out, p);
        }
    }
    out.push_str(r#","tableId":"#);
    push_num(out, e.table.id);
    out.push_str(r#"}},"type":""#);
    out.push_str(if e.is_default { "MODIFY" } else { "INSERT" });
    out.push_str("\"}");
}

/// The update of a clone session to `port`.
fn push_clone_session(out: &mut String, session: u32, port: usize) {
    out.push_str(
        r#"{"entity":{"packetReplicationEngineEntry":{"cloneSessionEntry":{"replicas":[{"egressPort":"#,
    );
    push_num(out, port as u128);
    out.push_str(r#","instance":1}],"sessionId":"#);
    push_num(out, session);
    out.push_str(r#"}}},"type":"INSERT"}"#);
}

/// A P4Runtime `WriteRequest` (protobuf JSON mapping) of the ops that
/// P4Runtime carries: table entries (a default entry as MODIFY with
/// `isDefaultAction`) and clone sessions. bmv2 queue rate/depth have no
/// P4Runtime form. The client adds `deviceId` and `electionId`.
pub fn render_p4runtime(ops: &[Op]) -> String {
    // one update per line: readable diffs, a fifth of the pretty size
    let mut s = String::with_capacity(64 + 160 * ops.len());
    s.push_str("{\n  \"updates\": [\n");
    let mut any = false;
    for op in ops {
        let sep = if any { ",\n    " } else { "    " };
        match op {
            Op::Entry(e) => {
                s.push_str(sep);
                push_table_update(&mut s, e);
            }
            Op::CloneSession { session, port } => {
                s.push_str(sep);
                push_clone_session(&mut s, *session, *port);
            }
            Op::QueueRate { .. } | Op::QueueDepth { .. } => continue,
        }
        any = true;
    }
    if any {
        s.push('\n');
    }
    s.push_str("  ]\n}\n");
    s
}

#[cfg(test)]
mod tests {
    use super::{base64, canonical_bytes, push_p4rt_bytes};
    use crate::render::push_num;

    /// The writers without allocation against the plain functions, over
    /// every byte length and the edges of each.
    #[test]
    fn pushed_values_are_the_plain_spellings() {
        let mut values: Vec<u128> = (0..70_000).collect();
        for bits in 1..=128u32 {
            let top = u128::MAX >> (128 - bits);
            values.extend([top, top - 1, top / 3, (top >> 1) + 1]);
        }
        for n in values {
            let mut s = String::from("x");
            push_p4rt_bytes(&mut s, n);
            assert_eq!(s[1..], base64(&canonical_bytes(n)), "{n}");
            let mut s = String::from("x");
            push_num(&mut s, n);
            assert_eq!(s[1..], n.to_string(), "{n}");
        }
    }
}
