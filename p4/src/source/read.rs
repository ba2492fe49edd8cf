//! Reading a P4 program: its controls, tables (keys, actions, constant
//! entries, size) and actions (parameters and their widths), with `@id`s.

use std::collections::BTreeMap;

use super::tokens::{p4_tokens, parse_int};
use super::{P4Action, P4Key, P4Symbols, P4Table};

/// The tables and actions of a P4 program (give it the program's text with
/// the text of the files it includes, for their typedefs).
pub fn table_names_in_p4(src: &str) -> P4Symbols {
    let t = p4_tokens(src);
    let widths = typedef_widths(&t);
    let mut sym = P4Symbols::default();
    let mut control: Option<(String, usize)> = None; // (name, index of the closing brace)
    let mut pending_id: Option<u32> = None;
    let mut i = 0;
    while i < t.len() {
        if control.as_ref().is_some_and(|(_, end)| i >= *end) {
            control = None;
        }
        let ctl = control.as_ref().map(|c| c.0.clone()).unwrap_or_default();
        match t[i].as_str() {
            "@" if i + 1 < t.len() => {
                i = annotation(&t, i, &mut pending_id);
                continue;
            }
            "control" if i + 1 < t.len() => {
                if let Some(open) = control_body(&t, i) {
                    control = Some((t[i + 1].clone(), close(&t, open, "{", "}")));
                    i = open + 1;
                    continue;
                }
            }
            "action" if i + 2 < t.len() && t[i + 2] == "(" => {
                let end = close(&t, i + 2, "(", ")");
                let a = P4Action {
                    control: ctl.clone(),
                    name: t[i + 1].clone(),
                    id: pending_id.take(),
                    params: action_params(&t[i + 3..end], &widths),
                };
                sym.actions.insert(qualify(&ctl, &a.name), a);
                i = end + 1;
                continue;
            }
            "table" if i + 2 < t.len() && t[i + 2] == "{" => {
                let end = close(&t, i + 2, "{", "}");
                let table = read_table(&t[i + 3..end], &ctl, &t[i + 1], pending_id.take());
                sym.tables.insert(qualify(&ctl, &table.name), table);
                i = end + 1;
                continue;
            }
            _ => {}
        }
        // an annotation applies to the next declaration only
        if matches!(t[i].as_str(), ";" | "}") {
            pending_id = None;
        }
        i += 1;
    }
    sym
}

/// `Control.name`, or `name` at the top level.
fn qualify(control: &str, name: &str) -> String {
    if control.is_empty() {
        name.to_string()
    } else {
        format!("{control}.{name}")
    }
}

/// Index of the token closing the bracket opened at `start` (`t.len()`
/// when it is not closed).
fn close(t: &[String], start: usize, open: &str, shut: &str) -> usize {
    let mut depth = 0;
    for (j, tok) in t.iter().enumerate().skip(start) {
        if tok == open {
            depth += 1;
        } else if tok == shut {
            depth -= 1;
            if depth == 0 {
                return j;
            }
        }
    }
    t.len()
}

/// Widths of `typedef bit<N> NAME;`, and of the architectures' port,
/// queue and mirror id types.
fn typedef_widths(t: &[String]) -> BTreeMap<String, u32> {
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
    widths
}

/// Skips the annotation at `i` (`@name` or `@name(...)`), noting an
/// `@id(N)` for the next declaration; returns the index after it.
fn annotation(t: &[String], i: usize, pending_id: &mut Option<u32>) -> usize {
    let mut j = i + 2;
    if t.get(j).map(String::as_str) == Some("(") {
        let end = close(t, j, "(", ")");
        if t[i + 1] == "id" {
            *pending_id = t.get(j + 1).and_then(|v| parse_int(v));
        }
        j = end + 1;
    }
    j
}

/// The `{` opening the body of the control declared at `i` (after its
/// parameter list), if it has a body.
fn control_body(t: &[String], i: usize) -> Option<usize> {
    let mut j = i + 2;
    if t.get(j).map(String::as_str) == Some("(") {
        j = close(t, j, "(", ")") + 1;
    }
    (t.get(j).map(String::as_str) == Some("{")).then_some(j)
}

/// An action's parameters (the tokens between its parentheses): name and
/// width (0 when the type is not a known bit<N>).
fn action_params(toks: &[String], widths: &BTreeMap<String, u32>) -> Vec<(String, u32)> {
    let mut params = Vec::new();
    let mut cur: Vec<&str> = Vec::new();
    let mut depth = 0;
    for tok in toks {
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
    params
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
        .collect()
}

/// A table from its body (the tokens between its braces).
fn read_table(body: &[String], control: &str, name: &str, id: Option<u32>) -> P4Table {
    let mut keys = Vec::new();
    let mut actions = Vec::new();
    let mut j = 0;
    while j < body.len() {
        let list = body[j].as_str();
        if !(matches!(list, "key" | "actions") && body.get(j + 1).map(String::as_str) == Some("="))
        {
            j += 1;
            continue;
        }
        // the { ... } after `=`
        let open = j + 2;
        let k = close(body, open, "{", "}");
        for item in body[open + 1..k].split(|s| s == ";") {
            if item.is_empty() {
                continue;
            }
            if list == "key" {
                keys.extend(key_item(item));
            } else {
                actions.extend(action_item(item));
            }
        }
        j = k + 1;
    }
    let has_const = |what: &str| body.windows(2).any(|w| w[0] == "const" && w[1] == what);
    let fixed = has_const("entries") || (keys.is_empty() && has_const("default_action"));
    let size = body
        .windows(3)
        .find(|w| w[0] == "size" && w[1] == "=")
        .and_then(|w| w[2].parse().ok());
    P4Table {
        control: control.to_string(),
        name: name.to_string(),
        id,
        keys,
        actions,
        fixed,
        size,
    }
}

/// One `expr : kind @name("...")` item of a key list.
fn key_item(item: &[String]) -> Option<P4Key> {
    let colon = item.iter().position(|s| s == ":")?;
    Some(P4Key {
        expr: item[..colon].concat(),
        kind: item.get(colon + 1).cloned().unwrap_or_default(),
        name: item
            .windows(4)
            .find(|w| w[0] == "@" && w[1] == "name" && w[2] == "(")
            .map(|w| w[3].trim_matches('"').to_string()),
    })
}

/// One item of an actions list, past its annotations (`@defaultonly`).
fn action_item(item: &[String]) -> Option<String> {
    let mut n = 0;
    while n < item.len() && item[n] == "@" {
        n += 2;
    }
    item.get(n).cloned()
}
