//! p4c STF entries (`add` / `setdefault`) of the table entries; the corpus
//! writes the rest of an STF test.

use super::small_or_hex;
use crate::ops::{Entry, KeyVal, Val};

/// An entry in p4c's STF syntax (`add` / `setdefault`); keys by their
/// field name, values in hex where wide, prefixes as binary digits with
/// `*` for the bits the prefix leaves out (how p4c's STF reader takes them). Range keys have no STF form:
/// `None` for those entries.
pub fn stf_entry(e: &Entry) -> Option<String> {
    let val = |v: &Val| small_or_hex(v, |i| i.to_string());
    let args: Vec<String> = e
        .action
        .params
        .iter()
        .zip(&e.args)
        .map(|((n, _), v)| format!("{n}:{}", val(v)))
        .collect();
    if e.is_default {
        return Some(format!(
            "setdefault {} {}({})",
            e.table.qualified(),
            e.action.qualified(),
            args.join(",")
        ));
    }
    let mut keys = Vec::new();
    for (ks, kv) in e.table.keys.iter().zip(&e.keys) {
        match kv {
            KeyVal::Exact(v) => keys.push(format!("{}:{}", ks.name, val(v))),
            // p4c's STF reader takes a prefix as don't-care digits:
            // binary, so that any length can be written
            KeyVal::Lpm(v, len) => {
                let (w, l) = (ks.width as usize, (*len as usize).min(ks.width as usize));
                let bits: String = (0..w)
                    .map(|i| {
                        if i < l {
                            if (v.number() >> (w - 1 - i)) & 1 == 1 {
                                '1'
                            } else {
                                '0'
                            }
                        } else {
                            '*'
                        }
                    })
                    .collect();
                keys.push(format!("{}:0b{bits}", ks.name))
            }
            KeyVal::Range(..) => return None,
        }
    }
    Some(format!(
        "add {} {} {}({})",
        e.table.qualified(),
        keys.join(" "),
        e.action.qualified(),
        args.join(",")
    ))
}
