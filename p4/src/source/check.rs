//! The P4-source check: the generator's schema against the tables and
//! actions the program declares.

use super::P4Symbols;
use crate::schema::{actions, tables};
use crate::target::{lpm_capacity, Target};

/// Compares the generator's schema for `target` with the P4 program's
/// tables and actions; returns every mismatch.
pub fn check_p4_source(target: Target, sym: &P4Symbols) -> Vec<String> {
    let mut problems = Vec::new();
    for ts in tables(target) {
        let q = ts.qualified();
        let found = sym.tables.get(&q).map(|t| (t, t.id));
        let Some(t) = declared(target, "table", &q, found, ts.id, &mut problems) else {
            continue;
        };
        if t.keys.len() != ts.keys.len() {
            problems.push(format!(
                "{target}: table {q} has {} key fields, the generator writes {}",
                t.keys.len(),
                ts.keys.len()
            ));
        }
        for (n, (pk, sk)) in t.keys.iter().zip(ts.keys).enumerate() {
            if pk.name.as_deref() != Some(sk.name) {
                problems.push(format!(
                    "{target}: table {q} key {n} is @name({:?}), the generator uses {:?}",
                    pk.name, sk.name
                ));
            }
            let leaf = pk.expr.rsplit('.').next().unwrap_or("");
            if leaf != sk.name {
                problems.push(format!(
                    "{target}: table {q} key {n} is the field {} whose last component is not {:?} (STF names keys by it)",
                    pk.expr, sk.name
                ));
            }
            if pk.kind != sk.kind.name() {
                problems.push(format!(
                    "{target}: table {q} key {} matches {}, the generator writes {}",
                    sk.name,
                    pk.kind,
                    sk.kind.name()
                ));
            }
        }
        for a in ts.actions {
            if !t.actions.iter().any(|x| x == a) {
                problems.push(format!("{target}: table {q} does not list action {a}"));
            }
        }
    }
    for asp in actions(target) {
        let q = asp.qualified();
        let found = sym.actions.get(&q).map(|a| (a, a.id));
        let Some(a) = declared(target, "action", &q, found, asp.id, &mut problems) else {
            continue;
        };
        let want: Vec<(String, u32)> = asp
            .params
            .iter()
            .map(|(n, w)| (n.to_string(), *w))
            .collect();
        if a.params != want {
            problems.push(format!(
                "{target}: action {q} has parameters {:?}, the generator writes {want:?}",
                a.params
            ));
        }
    }
    // the route capacity the refusals assume is the program's
    let (cap4, cap6) = lpm_capacity(target);
    for (tn, cap) in [("ipv4_lpm", cap4), ("ipv6_lpm", cap6)] {
        let size = sym
            .tables
            .values()
            .find(|t| t.name == tn)
            .and_then(|t| t.size);
        if size != Some(cap as u64) {
            problems.push(format!(
                "{target}: table {tn} has size {size:?}, the generator assumes {cap}"
            ));
        }
    }
    // every table of the program is the generator's (none left unfilled),
    // except those the program fills itself
    for (q, t) in &sym.tables {
        if t.fixed {
            if tables(target).iter().any(|ts| ts.qualified() == *q) {
                problems.push(format!(
                    "{target}: table {q} has constant entries, yet the generator writes it"
                ));
            }
            continue;
        }
        if !tables(target).iter().any(|ts| ts.qualified() == *q) {
            problems.push(format!(
                "{target}: table {q} (id {:?}) of the program is unknown to the generator",
                t.id
            ));
        }
    }
    problems
}

/// The program's declaration of the table or action `q` (`kind`) with its
/// `@id`, if declared; a problem when it is not, or when its `@id` is not
/// the generator's.
fn declared<'s, T>(
    target: Target,
    kind: &str,
    q: &str,
    found: Option<(&'s T, Option<u32>)>,
    want_id: u32,
    problems: &mut Vec<String>,
) -> Option<&'s T> {
    let Some((decl, id)) = found else {
        problems.push(format!(
            "{target}: {kind} {q} is not declared in {}",
            target.p4_program()
        ));
        return None;
    };
    if id != Some(want_id) {
        problems.push(format!(
            "{target}: {kind} {q} has @id {id:?}, the generator uses 0x{want_id:08x}"
        ));
    }
    Some(decl)
}
