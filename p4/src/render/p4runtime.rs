//! P4Runtime: a `WriteRequest` in the protobuf JSON mapping (table entries
//! and clone sessions), with its base64 canonical byte strings.

use serde::Serialize;

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

fn p4rt_bytes(n: u128) -> String {
    base64(&canonical_bytes(n))
}

// The WriteRequest's messages, serialized straight to text (fields in the
// protobuf JSON mapping's names, in alphabetical order as before: the
// output is unchanged from building `serde_json::Value` trees, which cost
// most of the generator's time).

#[derive(Serialize)]
struct Update {
    entity: Entity,
    #[serde(rename = "type")]
    kind: &'static str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
enum Entity {
    TableEntry(TableEntry),
    PacketReplicationEngineEntry(Replication),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct TableEntry {
    action: TableAction,
    #[serde(skip_serializing_if = "Option::is_none")]
    is_default_action: Option<bool>,
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    matches: Option<Vec<FieldMatch>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<u32>,
    table_id: u32,
}

#[derive(Serialize)]
struct TableAction {
    action: Action,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Action {
    action_id: u32,
    params: Vec<Param>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Param {
    param_id: usize,
    value: String,
}

/// One key field's match: exactly one of exact, lpm, range.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct FieldMatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    exact: Option<Exact>,
    field_id: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    lpm: Option<Lpm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    range: Option<Range>,
}

#[derive(Serialize)]
struct Exact {
    value: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Lpm {
    prefix_len: u32,
    value: String,
}

#[derive(Serialize)]
struct Range {
    high: String,
    low: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replication {
    clone_session_entry: CloneSession,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CloneSession {
    replicas: [Replica; 1],
    session_id: u32,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Replica {
    egress_port: usize,
    instance: u32,
}

/// The update of a table entry (a default entry: MODIFY).
fn table_update(e: &Entry) -> Update {
    let params = e
        .args
        .iter()
        .enumerate()
        .map(|(i, v)| Param {
            param_id: i + 1,
            value: p4rt_bytes(v.number()),
        })
        .collect();
    // a don't-care match (prefix length 0, a range over every value) is
    // written by leaving the field out
    let matches = (!e.is_default).then(|| {
        e.keys
            .iter()
            .zip(e.table.keys)
            .enumerate()
            .filter(|(_, (kv, ks))| match kv {
                KeyVal::Lpm(_, 0) => false,
                KeyVal::Range(0, hi) => *hi != u128::MAX >> (128 - ks.width.min(128)),
                _ => true,
            })
            .map(|(i, (kv, _))| {
                let mut m = FieldMatch {
                    exact: None,
                    field_id: i + 1,
                    lpm: None,
                    range: None,
                };
                match kv {
                    KeyVal::Exact(v) => {
                        m.exact = Some(Exact {
                            value: p4rt_bytes(v.number()),
                        })
                    }
                    KeyVal::Lpm(v, len) => {
                        m.lpm = Some(Lpm {
                            prefix_len: *len,
                            value: p4rt_bytes(v.number()),
                        })
                    }
                    KeyVal::Range(lo, hi) => {
                        m.range = Some(Range {
                            high: p4rt_bytes(*hi),
                            low: p4rt_bytes(*lo),
                        })
                    }
                }
                m
            })
            .collect()
    });
    Update {
        entity: Entity::TableEntry(TableEntry {
            action: TableAction {
                action: Action {
                    action_id: e.action.id,
                    params,
                },
            },
            is_default_action: e.is_default.then_some(true),
            matches,
            priority: e.priority.filter(|_| !e.is_default),
            table_id: e.table.id,
        }),
        kind: if e.is_default { "MODIFY" } else { "INSERT" },
    }
}

/// A P4Runtime `WriteRequest` (protobuf JSON mapping) of the ops that
/// P4Runtime carries: table entries (a default entry as MODIFY with
/// `isDefaultAction`) and clone sessions. bmv2 queue rate/depth have no
/// P4Runtime form. The client adds `deviceId` and `electionId`.
pub fn render_p4runtime(ops: &[Op]) -> String {
    let updates = ops.iter().filter_map(|op| match op {
        Op::Entry(e) => Some(table_update(e)),
        Op::CloneSession { session, port } => Some(Update {
            entity: Entity::PacketReplicationEngineEntry(Replication {
                clone_session_entry: CloneSession {
                    replicas: [Replica {
                        egress_port: *port,
                        instance: 1,
                    }],
                    session_id: *session,
                },
            }),
            kind: "INSERT",
        }),
        Op::QueueRate { .. } | Op::QueueDepth { .. } => None,
    });
    // one update per line: readable diffs, a fifth of the pretty size
    let mut s = Vec::from(&b"{\n  \"updates\": [\n"[..]);
    let mut any = false;
    for u in updates {
        s.extend_from_slice(if any { b",\n    " } else { b"    " });
        serde_json::to_writer(&mut s, &u).expect("JSON of plain values");
        any = true;
    }
    if any {
        s.push(b'\n');
    }
    s.extend_from_slice(b"  ]\n}\n");
    String::from_utf8(s).expect("serde_json writes UTF-8")
}
