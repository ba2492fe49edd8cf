//! The P4-source name check: a small P4 tokenizer, the symbols it finds, and
//! the comparison with the schema.

use std::collections::BTreeMap;

use crate::{schema::*, target::*};

/// A key field as written in a P4 table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Key {
    /// The field expression (`hdr.ipv4.dst_addr`).
    pub expr: String,
    pub kind: String,
    /// `@name("...")`, if any.
    pub name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Table {
    pub control: String,
    pub name: String,
    pub id: Option<u32>,
    pub keys: Vec<P4Key>,
    pub actions: Vec<String>,
    /// The program fills it itself: `const entries`, or no key and a
    /// `const default_action` (a step of the pipeline written as a table).
    pub fixed: bool,
    /// `size = N`.
    pub size: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct P4Action {
    pub control: String,
    pub name: String,
    pub id: Option<u32>,
    /// (name, width; 0 when the type is not a known bit<N>)
    pub params: Vec<(String, u32)>,
}

/// The tables and actions declared in a P4 source, by qualified name
/// (`Control.name`; top-level actions unqualified).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct P4Symbols {
    pub tables: BTreeMap<String, P4Table>,
    pub actions: BTreeMap<String, P4Action>,
}

pub(crate) fn p4_tokens(src: &str) -> Vec<String> {
    // comments and preprocessor lines (with their continuations) go
    let mut text = String::with_capacity(src.len());
    let mut in_directive = false;
    for line in src.lines() {
        let t = line.trim_start();
        if in_directive || t.starts_with('#') {
            in_directive = t.ends_with('\\');
            text.push('\n');
            continue;
        }
        text.push_str(line);
        text.push('\n');
    }
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c == '/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            i += 1;
            out.push(text[start..i.min(b.len())].to_string());
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(text[start..i].to_string());
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

pub(crate) fn parse_int(s: &str) -> Option<u32> {
    let s = s.replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}

/// The tables and actions of a P4 program (give it the program's text with
/// the text of the files it includes, for their typedefs).
pub fn table_names_in_p4(src: &str) -> P4Symbols {
    let t = p4_tokens(src);
    let mut sym = P4Symbols::default();
    // typedef bit<N> NAME;
    let mut widths: BTreeMap<String, u32> = [("PortId_t", 9), ("QueueId_t", 5), ("MirrorId_t", 10)]
        .iter()
        .map(|(n, w)| (n.to_string(), *w))
        .collect();
    for w in t.windows(6) {
        if w[0] == "typedef" && w[1] == "bit" && w[2] == "<" && w[4] == ">" {
            if let Some(n) = parse_int(&w[3]) {
                widths.insert(w[5].clone(), n);
            }
        }
    }
    let close = |start: usize, open: &str, shut: &str| -> usize {
        // index of the token closing the bracket opened at `start`
        let mut depth = 0;
        let mut j = start;
        while j < t.len() {
            if t[j] == open {
                depth += 1;
            } else if t[j] == shut {
                depth -= 1;
                if depth == 0 {
                    return j;
                }
            }
            j += 1;
        }
        t.len()
    };
    let mut control: Option<(String, usize)> = None; // (name, index of the closing brace)
    let mut pending_id: Option<u32> = None;
    let mut i = 0;
    while i < t.len() {
        if let Some((_, end)) = &control {
            if i >= *end {
                control = None;
            }
        }
        let ctl = control.as_ref().map(|c| c.0.clone()).unwrap_or_default();
        let qualify = |n: &str| {
            if ctl.is_empty() {
                n.to_string()
            } else {
                format!("{ctl}.{n}")
            }
        };
        match t[i].as_str() {
            "@" if i + 1 < t.len() => {
                let ann = t[i + 1].clone();
                let mut j = i + 2;
                if t.get(j).map(String::as_str) == Some("(") {
                    let end = close(j, "(", ")");
                    if ann == "id" {
                        pending_id = t.get(j + 1).and_then(|v| parse_int(v));
                    }
                    j = end + 1;
                }
                i = j;
                continue;
            }
            "control" if i + 1 < t.len() => {
                let name = t[i + 1].clone();
                let mut j = i + 2;
                if t.get(j).map(String::as_str) == Some("(") {
                    j = close(j, "(", ")") + 1;
                }
                if t.get(j).map(String::as_str) == Some("{") {
                    control = Some((name, close(j, "{", "}")));
                    i = j + 1;
                    continue;
                }
            }
            "action" if i + 2 < t.len() && t[i + 2] == "(" => {
                let name = t[i + 1].clone();
                let end = close(i + 2, "(", ")");
                let mut params = Vec::new();
                let mut cur: Vec<&str> = Vec::new();
                let mut depth = 0;
                for tok in &t[i + 3..end] {
                    match tok.as_str() {
                        "<" | "(" => depth += 1,
                        ">" | ")" => depth -= 1,
                        _ => {}
                    }
                    if tok == "," && depth == 0 {
                        params.push(std::mem::take(&mut cur));
                    } else {
                        cur.push(tok);
                    }
                }
                if !cur.is_empty() {
                    params.push(cur);
                }
                let params = params
                    .into_iter()
                    .filter(|p| !p.is_empty())
                    .map(|p| {
                        let pname = p.last().map(|s| s.to_string()).unwrap_or_default();
                        let ty: Vec<&str> = p
                            .iter()
                            .copied()
                            .filter(|s| !matches!(*s, "in" | "out" | "inout"))
                            .collect();
                        let width = if ty.len() >= 4 && ty[0] == "bit" && ty[1] == "<" {
                            parse_int(ty[2]).unwrap_or(0)
                        } else {
                            ty.first()
                                .and_then(|n| widths.get(*n).copied())
                                .unwrap_or(0)
                        };
                        (pname, width)
                    })
                    .collect();
                let q = qualify(&name);
                sym.actions.insert(
                    q,
                    P4Action {
                        control: ctl.clone(),
                        name,
                        id: pending_id.take(),
                        params,
                    },
                );
                i = end + 1;
                continue;
            }
            "table" if i + 2 < t.len() && t[i + 2] == "{" => {
                let name = t[i + 1].clone();
                let end = close(i + 2, "{", "}");
                let body = &t[i + 3..end];
                let mut keys = Vec::new();
                let mut acts = Vec::new();
                let mut j = 0;
                while j < body.len() {
                    if (body[j] == "key" || body[j] == "actions")
                        && body.get(j + 1).map(String::as_str) == Some("=")
                    {
                        let is_key = body[j] == "key";
                        // the { ... } after `=`
                        let open = j + 2;
                        let mut depth = 0;
                        let mut k = open;
                        while k < body.len() {
                            if body[k] == "{" {
                                depth += 1;
                            } else if body[k] == "}" {
                                depth -= 1;
                                if depth == 0 {
                                    break;
                                }
                            }
                            k += 1;
                        }
                        let inner = &body[open + 1..k.min(body.len())];
                        for item in inner.split(|s| s == ";") {
                            if item.is_empty() {
                                continue;
                            }
                            if is_key {
                                let Some(colon) = item.iter().position(|s| s == ":") else {
                                    continue;
                                };
                                let expr = item[..colon].concat();
                                let kind = item.get(colon + 1).cloned().unwrap_or_default();
                                let name = item
                                    .windows(4)
                                    .find(|w| w[0] == "@" && w[1] == "name" && w[2] == "(")
                                    .map(|w| w[3].trim_matches('"').to_string());
                                keys.push(P4Key { expr, kind, name });
                            } else {
                                // skip annotations (`@defaultonly`)
                                let mut n = 0;
                                while n < item.len() && item[n] == "@" {
                                    n += 2;
                                }
                                if let Some(a) = item.get(n) {
                                    acts.push(a.clone());
                                }
                            }
                        }
                        j = k + 1;
                    } else {
                        j += 1;
                    }
                }
                let has_const =
                    |what: &str| body.windows(2).any(|w| w[0] == "const" && w[1] == what);
                let fixed =
                    has_const("entries") || (keys.is_empty() && has_const("default_action"));
                let size = body
                    .windows(3)
                    .find(|w| w[0] == "size" && w[1] == "=")
                    .and_then(|w| w[2].parse().ok());
                let q = qualify(&name);
                sym.tables.insert(
                    q,
                    P4Table {
                        control: ctl.clone(),
                        name,
                        id: pending_id.take(),
                        keys,
                        actions: acts,
                        fixed,
                        size,
                    },
                );
                i = end + 1;
                continue;
            }
            _ => {}
        }
        if t[i] != "@" {
            // an annotation applies to the next declaration only
            if matches!(t[i].as_str(), ";" | "}") {
                pending_id = None;
            }
        }
        i += 1;
    }
    sym
}

/// Compares the generator's schema for `target` with the P4 program's
/// tables and actions; returns every mismatch.
pub fn check_p4_source(target: Target, sym: &P4Symbols) -> Vec<String> {
    let mut problems = Vec::new();
    for ts in tables(target) {
        let q = ts.qualified();
        let Some(t) = sym.tables.get(&q) else {
            problems.push(format!(
                "{target}: table {q} is not declared in {}",
                target.p4_program()
            ));
            continue;
        };
        if t.id != Some(ts.id) {
            problems.push(format!(
                "{target}: table {q} has @id {:?}, the generator uses 0x{:08x}",
                t.id, ts.id
            ));
        }
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
        let Some(a) = sym.actions.get(&q) else {
            problems.push(format!(
                "{target}: action {q} is not declared in {}",
                target.p4_program()
            ));
            continue;
        };
        if a.id != Some(asp.id) {
            problems.push(format!(
                "{target}: action {q} has @id {:?}, the generator uses 0x{:08x}",
                a.id, asp.id
            ));
        }
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
