//! SONiC's CONFIG_DB as `config_db.json` holds it: tables of keys of
//! fields. Values are kept as SONiC writes them (strings); numbers and
//! booleans are accepted and turned into their text, lists are joined by
//! commas (SONiC's `field@` lists), anything deeper is an error.

use std::collections::BTreeMap;

use crate::FieldError;

/// One entry's fields.
pub type Fields = BTreeMap<String, String>;

/// The tables of a `config_db.json`.
#[derive(Debug, Clone, Default)]
pub struct Db {
    pub tables: BTreeMap<String, BTreeMap<String, Fields>>,
}

impl Db {
    /// Parses `config_db.json`; a syntax error names its line and column,
    /// a value of the wrong shape names its table, key and field.
    pub fn parse(text: &str) -> Result<Db, Vec<FieldError>> {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| {
            vec![FieldError {
                field: "(file)".into(),
                message: format!(
                    "malformed JSON at line {} column {}: {e}",
                    e.line(),
                    e.column()
                ),
            }]
        })?;
        let mut errs = Vec::new();
        let mut db = Db::default();
        let Some(top) = v.as_object() else {
            return Err(vec![FieldError {
                field: "(file)".into(),
                message: "expected a JSON object of tables (CONFIG_DB), got another value".into(),
            }]);
        };
        for (table, keys) in top {
            let Some(keys) = keys.as_object() else {
                errs.push(err(table, "expected an object of keys"));
                continue;
            };
            let mut out = BTreeMap::new();
            for (key, fields) in keys {
                let at = format!("{table}|{key}");
                let Some(fields) = fields.as_object() else {
                    errs.push(err(&at, "expected an object of fields"));
                    continue;
                };
                let mut f = Fields::new();
                for (name, val) in fields {
                    match text_of(val) {
                        Some(s) => {
                            f.insert(name.clone(), s);
                        }
                        None => errs.push(err(
                            &format!("{at}.{name}"),
                            "expected a string, number, boolean or list of strings",
                        )),
                    }
                }
                out.insert(key.clone(), f);
            }
            db.tables.insert(table.clone(), out);
        }
        if errs.is_empty() {
            Ok(db)
        } else {
            Err(errs)
        }
    }

    /// A table's entries (none if the table is absent).
    pub fn table(&self, name: &str) -> impl Iterator<Item = (&String, &Fields)> {
        self.tables.get(name).into_iter().flatten()
    }

    /// One entry.
    pub fn get(&self, table: &str, key: &str) -> Option<&Fields> {
        self.tables.get(table)?.get(key)
    }
}

fn err(field: &str, message: &str) -> FieldError {
    FieldError {
        field: field.into(),
        message: message.into(),
    }
}

/// A field's value as SONiC's text.
fn text_of(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Array(a) => {
            let parts: Option<Vec<String>> =
                a.iter().map(|x| x.as_str().map(str::to_string)).collect();
            Some(parts?.join(","))
        }
        _ => None,
    }
}

/// Splits a key `A|B|C` into its parts (SONiC's key separator).
pub fn key_parts(key: &str) -> Vec<&str> {
    key.split('|').collect()
}

/// Orders SONiC port names as SONiC lists them: `Ethernet4` before
/// `Ethernet12` (the number, not the text).
pub fn port_order(a: &str, b: &str) -> std::cmp::Ordering {
    let split = |s: &str| {
        let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        let (p, n) = s.split_at(s.len() - digits);
        (p.to_string(), n.parse::<u64>().unwrap_or(0))
    };
    split(a).cmp(&split(b)).then(a.cmp(b))
}
