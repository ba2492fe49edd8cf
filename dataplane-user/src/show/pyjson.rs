//! JSON as Python's `json.dumps(value, indent=N)` prints it, keys in the
//! order given (not sorted): the layout of sonic-utilities commands that
//! do not go through `json_dump` (watermarkstat's `indent=4`).

/// A JSON value whose objects keep their keys' order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PyJson {
    Str(String),
    List(Vec<PyJson>),
    Obj(Vec<(String, PyJson)>),
}

impl PyJson {
    /// `json.dumps(self, indent=indent)` followed by print's newline.
    pub fn dumps(&self, indent: usize) -> String {
        let mut out = String::new();
        self.write(&mut out, indent, 0);
        out.push('\n');
        out
    }

    fn write(&self, out: &mut String, indent: usize, depth: usize) {
        let pad = |d: usize| " ".repeat(indent * d);
        match self {
            PyJson::Str(s) => out.push_str(&quote(s)),
            PyJson::List(v) if v.is_empty() => out.push_str("[]"),
            PyJson::Obj(v) if v.is_empty() => out.push_str("{}"),
            PyJson::List(v) => {
                out.push('[');
                for (i, x) in v.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&pad(depth + 1));
                    x.write(out, indent, depth + 1);
                }
                out.push('\n');
                out.push_str(&pad(depth));
                out.push(']');
            }
            PyJson::Obj(v) => {
                out.push('{');
                for (i, (k, x)) in v.iter().enumerate() {
                    out.push_str(if i == 0 { "\n" } else { ",\n" });
                    out.push_str(&pad(depth + 1));
                    out.push_str(&quote(k));
                    out.push_str(": ");
                    x.write(out, indent, depth + 1);
                }
                out.push('\n');
                out.push_str(&pad(depth));
                out.push('}');
            }
        }
    }
}

/// A string as Python's json quotes it (`ensure_ascii`: `\uXXXX` past
/// ASCII, UTF-16 surrogate pairs past the BMP).
fn quote(s: &str) -> String {
    let mut q = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            '\n' => q.push_str("\\n"),
            '\r' => q.push_str("\\r"),
            '\t' => q.push_str("\\t"),
            '\u{8}' => q.push_str("\\b"),
            '\u{c}' => q.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for u in c.encode_utf16(&mut buf) {
                    q.push_str(&format!("\\u{u:04x}"));
                }
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

#[cfg(test)]
mod tests {
    use super::PyJson::{List, Obj, Str};

    /// Expected: python3 -c 'import json; print(json.dumps(V, indent=4))'.
    #[test]
    fn as_python_prints() {
        assert_eq!(List(vec![]).dumps(4), "[]\n");
        let v = List(vec![
            Obj(vec![
                ("Port".into(), Str("E0".into())),
                ("UC0".into(), Str("1".into())),
            ]),
            Obj(vec![]),
        ]);
        assert_eq!(
            v.dumps(4),
            "[\n    {\n        \"Port\": \"E0\",\n        \"UC0\": \"1\"\n    },\n    {}\n]\n"
        );
        assert_eq!(
            Str("é\"\u{1F600}\x7f".into()).dumps(2),
            "\"\\u00e9\\\"\\ud83d\\ude00\\u007f\"\n"
        );
    }
}
