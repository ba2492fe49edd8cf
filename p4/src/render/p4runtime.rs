//! P4Runtime: a `WriteRequest` in the protobuf JSON mapping (table entries
//! and clone sessions), with its base64 canonical byte strings.

use std::fmt::Write as _;

use crate::ops::{KeyVal, Op};

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

fn p4rt_bytes(n: u128) -> serde_json::Value {
    serde_json::Value::String(base64(&canonical_bytes(n)))
}

/// A P4Runtime `WriteRequest` (protobuf JSON mapping) of the ops that
/// P4Runtime carries: table entries (a default entry as MODIFY with
/// `isDefaultAction`) and clone sessions. bmv2 queue rate/depth have no
/// P4Runtime form. The client adds `deviceId` and `electionId`.
pub fn render_p4runtime(ops: &[Op]) -> String {
    use serde_json::{json, Value};
    let mut updates = Vec::new();
    for op in ops {
        match op {
            Op::Entry(e) => {
                let params: Vec<Value> = e
                    .args
                    .iter()
                    .enumerate()
                    .map(|(i, v)| json!({ "paramId": i + 1, "value": p4rt_bytes(v.number()) }))
                    .collect();
                let mut te = serde_json::Map::new();
                te.insert("tableId".into(), json!(e.table.id));
                te.insert(
                    "action".into(),
                    json!({ "action": { "actionId": e.action.id, "params": params } }),
                );
                if e.is_default {
                    te.insert("isDefaultAction".into(), json!(true));
                } else {
                    // a don't-care match (prefix length 0, a range over every
                    // value) is written by leaving the field out
                    let m: Vec<Value> = e
                        .keys
                        .iter()
                        .zip(e.table.keys)
                        .enumerate()
                        .filter(|(_, (kv, ks))| match kv {
                            KeyVal::Lpm(_, 0) => false,
                            KeyVal::Range(0, hi) => *hi != u128::MAX >> (128 - ks.width.min(128)),
                            _ => true,
                        })
                        .map(|(i, (kv, _))| {
                            let id = i + 1;
                            match kv {
                                KeyVal::Exact(v) => json!({ "fieldId": id, "exact": { "value": p4rt_bytes(v.number()) } }),
                                KeyVal::Lpm(v, len) => {
                                    json!({ "fieldId": id, "lpm": { "value": p4rt_bytes(v.number()), "prefixLen": len } })
                                }
                                KeyVal::Range(lo, hi) => {
                                    json!({ "fieldId": id, "range": { "low": p4rt_bytes(*lo), "high": p4rt_bytes(*hi) } })
                                }
                            }
                        })
                        .collect();
                    te.insert("match".into(), Value::Array(m));
                    if let Some(p) = e.priority {
                        te.insert("priority".into(), json!(p));
                    }
                }
                let kind = if e.is_default { "MODIFY" } else { "INSERT" };
                updates
                    .push(json!({ "type": kind, "entity": { "tableEntry": Value::Object(te) } }));
            }
            Op::CloneSession { session, port } => updates.push(json!({
                "type": "INSERT",
                "entity": { "packetReplicationEngineEntry": { "cloneSessionEntry": {
                    "sessionId": session,
                    "replicas": [ { "egressPort": port, "instance": 1 } ]
                } } }
            })),
            Op::QueueRate { .. } | Op::QueueDepth { .. } => {}
        }
    }
    // one update per line: readable diffs, a fifth of the pretty size
    let mut s = String::from("{\n  \"updates\": [\n");
    for (i, u) in updates.iter().enumerate() {
        let sep = if i + 1 < updates.len() { "," } else { "" };
        let _ = writeln!(
            s,
            "    {}{sep}",
            serde_json::to_string(u).expect("JSON of plain values")
        );
    }
    s.push_str("  ]\n}\n");
    s
}
