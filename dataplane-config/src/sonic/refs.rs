//! References between CONFIG_DB entries, in both of SONiC's formats: the
//! old `[BUFFER_PROFILE|name]` (the table named in the value, before
//! 202012) and the plain `name` (the table implied by the field, since
//! 202012). Resolution checks that the table is the one the field expects
//! and that the key exists; [`check_cycles`] refuses a file whose
//! references loop, before anything is resolved.

use std::collections::{BTreeMap, BTreeSet};

use super::db::Db;
use crate::FieldError;

/// The table a plain-name reference field points into.
pub fn target_table(table: &str, field: &str) -> Option<&'static str> {
    Some(match (table, field) {
        ("BUFFER_PROFILE", "pool") => "BUFFER_POOL",
        ("BUFFER_PG" | "BUFFER_QUEUE", "profile") => "BUFFER_PROFILE",
        (
            "BUFFER_PORT_INGRESS_PROFILE_LIST" | "BUFFER_PORT_EGRESS_PROFILE_LIST",
            "profile_list",
        ) => "BUFFER_PROFILE",
        ("PORT_QOS_MAP", "dscp_to_tc_map") => "DSCP_TO_TC_MAP",
        ("PORT_QOS_MAP", "dot1p_to_tc_map") => "DOT1P_TO_TC_MAP",
        ("PORT_QOS_MAP", "tc_to_pg_map") => "TC_TO_PRIORITY_GROUP_MAP",
        ("PORT_QOS_MAP", "tc_to_queue_map") => "TC_TO_QUEUE_MAP",
        ("PORT_QOS_MAP", "pfc_to_queue_map") => "MAP_PFC_PRIORITY_TO_QUEUE",
        ("PORT_QOS_MAP", "pfc_to_pg_map") => "PFC_PRIORITY_TO_PRIORITY_GROUP_MAP",
        ("PORT_QOS_MAP", "tc_to_dscp_map") => "TC_TO_DSCP_MAP",
        ("QUEUE", "wred_profile") => "WRED_PROFILE",
        ("QUEUE", "scheduler") => "SCHEDULER",
        _ => return None,
    })
}

/// `[TABLE|key]` to (TABLE, key); `None` for a plain name.
fn old_format(v: &str) -> Option<(&str, &str)> {
    let inner = v.trim().strip_prefix('[')?.strip_suffix(']')?;
    inner.split_once('|')
}

/// The references of one value: a single reference or a comma list
/// (profile lists). Each is (table, key); a plain name takes `implied`.
fn refs_of<'a>(v: &'a str, implied: Option<&'a str>) -> Vec<(&'a str, &'a str)> {
    v.split(',')
        .filter_map(|part| {
            let part = part.trim();
            match old_format(part) {
                Some(r) => Some(r),
                None => implied.map(|t| (t, part)).filter(|_| !part.is_empty()),
            }
        })
        .collect()
}

/// Resolves one reference of field `at` to its key in `expected`: a
/// wrong table or a missing key is an error naming `at`.
pub fn resolve(db: &Db, expected: &str, value: &str, at: &str) -> Result<String, FieldError> {
    let (table, key) = match old_format(value) {
        Some((t, k)) => (t, k),
        None => (expected, value.trim()),
    };
    if table != expected {
        return Err(FieldError {
            field: at.into(),
            message: format!("expected a reference to {expected}, got {value:?}"),
        });
    }
    if db.get(table, key).is_none() {
        return Err(FieldError {
            field: at.into(),
            message: format!("unknown reference {value:?}: {table} has no key {key:?}"),
        });
    }
    Ok(key.to_string())
}

/// Refuses references that loop (`A -> B -> A`), naming every entry and
/// field on the loop. Old-format references may name any table, so a
/// file can chain them; plain names are followed where the implied key
/// exists.
pub fn check_cycles(db: &Db) -> Result<(), Vec<FieldError>> {
    // node -> [(field, node)]
    let mut edges: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (table, keys) in &db.tables {
        for (key, fields) in keys {
            let node = format!("{table}|{key}");
            for (field, v) in fields {
                for (t, k) in refs_of(v, target_table(table, field)) {
                    if db.get(t, k).is_some() {
                        edges
                            .entry(node.clone())
                            .or_default()
                            .push((field.clone(), format!("{t}|{k}")));
                    }
                }
            }
        }
    }
    let mut done = BTreeSet::new();
    let mut errs = Vec::new();
    for start in edges.keys() {
        let mut path = Vec::new();
        if let Some(cycle) = walk(start, &edges, &mut path, &mut done) {
            errs.push(FieldError {
                field: cycle[0].clone(),
                message: format!("reference cycle: {}", cycle.join(" -> ")),
            });
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

/// Depth-first walk from `node`; returns the loop (as `TABLE|key.field`
/// steps ending where it started) if one is reachable and not yet seen.
fn walk(
    node: &str,
    edges: &BTreeMap<String, Vec<(String, String)>>,
    path: &mut Vec<(String, String)>,
    done: &mut BTreeSet<String>,
) -> Option<Vec<String>> {
    if let Some(i) = path.iter().position(|(n, _)| n == node) {
        let mut out: Vec<String> = path[i..].iter().map(|(n, f)| format!("{n}.{f}")).collect();
        out.push(node.to_string());
        return Some(out);
    }
    if done.contains(node) {
        return None;
    }
    for (field, next) in edges.get(node).into_iter().flatten() {
        path.push((node.to_string(), field.clone()));
        let found = walk(next, edges, path, done);
        path.pop();
        if found.is_some() {
            done.insert(node.to_string());
            return found;
        }
    }
    done.insert(node.to_string());
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db(json: &str) -> Db {
        Db::parse(json).expect("valid json")
    }

    #[test]
    fn both_formats_resolve_and_wrong_table_is_refused() {
        let d = db(r#"{"BUFFER_POOL":{"p":{"size":"1"}},"BUFFER_PROFILE":{"x":{"pool":"p"}}}"#);
        assert_eq!(resolve(&d, "BUFFER_POOL", "p", "f").unwrap(), "p");
        assert_eq!(
            resolve(&d, "BUFFER_POOL", "[BUFFER_POOL|p]", "f").unwrap(),
            "p"
        );
        let e = resolve(&d, "BUFFER_POOL", "[BUFFER_PROFILE|x]", "f").unwrap_err();
        assert!(
            e.message.contains("expected a reference to BUFFER_POOL"),
            "{e}"
        );
        let e = resolve(&d, "BUFFER_POOL", "q", "BUFFER_PROFILE|x.pool").unwrap_err();
        assert_eq!(e.field, "BUFFER_PROFILE|x.pool");
        assert!(e.message.contains("no key \"q\""), "{e}");
    }

    #[test]
    fn a_loop_is_named_and_a_chain_is_not_a_loop() {
        let d = db(
            r#"{"BUFFER_PROFILE":{"a":{"pool":"[BUFFER_PROFILE|b]"},"b":{"pool":"[BUFFER_PROFILE|a]"}}}"#,
        );
        let e = check_cycles(&d).unwrap_err();
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].message,
            "reference cycle: BUFFER_PROFILE|a.pool -> BUFFER_PROFILE|b.pool -> BUFFER_PROFILE|a"
        );
        let d = db(
            r#"{"BUFFER_POOL":{"p":{}},"BUFFER_PROFILE":{"a":{"pool":"p"}},"BUFFER_PG":{"E|3":{"profile":"a"}}}"#,
        );
        assert!(check_cycles(&d).is_ok());
    }
}
