//! SONiC's CONFIG_DB (`config_db.json`) to our configuration and back.
//!
//! [`import`] maps the QoS, buffer, watchdog and trimming tables to a
//! [`Config`] and its TOML text (a comment per section naming its source
//! keys); every field it cannot honour is a [`Finding`] naming table, key
//! and field, and [`ImportOptions::strict`] makes each one an error.
//! Malformed JSON, unknown or mistyped references, reference cycles and
//! values out of range are errors naming the key; on any error nothing is
//! returned, so nothing is written. [`export`] writes the same tables from
//! a configuration; export then import gives an equal configuration for
//! everything SONiC can express (the rest is reported by export).
//!
//! | module | concern |
//! |---|---|
//! | `db` | the JSON file as tables of keys of fields |
//! | `refs` | references (both formats), resolution, cycles |
//! | `import_ports` | PORT, the port map, PORT_QOS_MAP, the class maps |
//! | `import_buffers` | BUFFER_POOL / PROFILE / PG / QUEUE, CABLE_LENGTH, dynamic model |
//! | `import_queues` | WRED_PROFILE, QUEUE, SCHEDULER, PFC_WD, trimming |
//! | `write` | the configuration as commented TOML |
//! | `export` | our configuration as CONFIG_DB tables |

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::{Config, FieldError};

mod db;
mod export;
mod import_buffers;
mod import_ports;
mod import_queues;
mod refs;
mod write;

pub use db::Db;
pub use export::{export, Exported};

/// What `import-sonic` is told besides the file.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// SONiC port name -> interface (`--ports Ethernet0=eth1,...`); when
    /// empty, each port's `alias` names its interface.
    pub ports: BTreeMap<String, String>,
    /// Every [`Finding`] of kind [`Kind::Unsupported`] is an error.
    pub strict: bool,
}

/// Parses `--ports`: `Ethernet0=eth1,Ethernet4=eth2`.
pub fn parse_port_map(s: &str) -> Result<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let Some((sonic, ifname)) = part.split_once('=') else {
            return Err(format!(
                "expected SONIC_PORT=INTERFACE pairs separated by commas (e.g. \"Ethernet0=eth1\"), got {part:?}"
            ));
        };
        if out
            .insert(sonic.trim().to_string(), ifname.trim().to_string())
            .is_some()
        {
            return Err(format!("port {:?} is mapped twice", sonic.trim()));
        }
    }
    Ok(out)
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// SONiC would program something this data plane does not: an error
    /// with `--strict`.
    Unsupported,
    /// A difference of form, not of behaviour (a renamed map, a field
    /// SONiC itself reads only in another mode).
    Note,
}

/// A field of the input (or of our configuration, on export) that is not
/// carried over as it is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    pub kind: Kind,
    /// `TABLE|key` (import) or the TOML section (export).
    pub at: String,
    /// The field, or "" for a whole entry or table.
    pub field: String,
    pub message: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            Kind::Unsupported => "not honoured",
            Kind::Note => "note",
        };
        if self.field.is_empty() {
            write!(f, "{kind}: {}: {}", self.at, self.message)
        } else {
            write!(f, "{kind}: {} {}: {}", self.at, self.field, self.message)
        }
    }
}

/// A refused input: every error, each naming its key.
#[derive(Debug, Clone)]
pub struct SonicError {
    pub source: String,
    pub errors: Vec<FieldError>,
}

impl fmt::Display for SonicError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: {} error(s), nothing written:",
            self.source,
            self.errors.len()
        )?;
        for e in &self.errors {
            writeln!(f, "  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SonicError {}

/// A successful import.
#[derive(Debug, Clone)]
pub struct Imported {
    pub config: Config,
    /// The configuration as TOML, a comment per section naming its keys.
    pub toml: String,
    pub findings: Vec<Finding>,
}

/// Imports `config_db.json` text. `source` names the file in messages.
pub fn import(text: &str, source: &str, opts: &ImportOptions) -> Result<Imported, SonicError> {
    let fail = |errors| SonicError {
        source: source.into(),
        errors,
    };
    let db = Db::parse(text).map_err(fail)?;
    refs::check_cycles(&db).map_err(fail)?;
    let mut im = Importer::new(&db);
    let config = im.run(opts);
    let mut errors = std::mem::take(&mut im.errors);
    let mut findings = std::mem::take(&mut im.findings);
    findings.sort();
    findings.dedup();
    if opts.strict {
        errors.extend(
            findings
                .iter()
                .filter(|f| f.kind == Kind::Unsupported)
                .map(|f| FieldError {
                    field: if f.field.is_empty() {
                        f.at.clone()
                    } else {
                        format!("{}.{}", f.at, f.field)
                    },
                    message: format!("{} (--strict)", f.message),
                }),
        );
    }
    if !errors.is_empty() {
        return Err(fail(errors));
    }
    let toml = write::write(&config, &im.sources, source);
    // the output must pass `config check`: parse it back and validate
    let check = Config::parse(&toml, "(imported)").and_then(|c| c.validate("(imported)"));
    if let Err(e) = check {
        return Err(fail(
            e.errors
                .into_iter()
                .map(|e| FieldError {
                    field: format!("(imported configuration) {}", e.field),
                    message: e.message,
                })
                .collect(),
        ));
    }
    Ok(Imported {
        config,
        toml,
        findings,
    })
}

/// The state of one import: the file, what it produced so far, and the
/// source keys of each output section.
pub(crate) struct Importer<'a> {
    pub db: &'a Db,
    pub errors: Vec<FieldError>,
    pub findings: Vec<Finding>,
    /// Output section -> the `TABLE|key` entries it was made from.
    pub sources: BTreeMap<String, BTreeSet<String>>,
    /// Tables some part of the import reads (the rest are reported whole).
    pub handled: BTreeSet<&'static str>,
}

impl<'a> Importer<'a> {
    fn new(db: &'a Db) -> Self {
        Importer {
            db,
            errors: Vec::new(),
            findings: Vec::new(),
            sources: BTreeMap::new(),
            handled: BTreeSet::new(),
        }
    }

    /// Every table, in the order the configuration needs them.
    fn run(&mut self, opts: &ImportOptions) -> Config {
        let mut cfg = Config::default();
        self.device_metadata(&mut cfg);
        let mut ports = self.ports(opts, &mut cfg);
        self.class_maps(&mut cfg);
        self.port_qos(&mut ports, &mut cfg);
        self.buffers(&ports, &mut cfg);
        self.queues(&ports, &mut cfg);
        self.pfcwd(&ports, &mut cfg);
        self.trimming(&mut cfg);
        self.unhandled_tables();
        cfg
    }

    /// A `PORT[,PORT]|RANGE` key of `table` (BUFFER_PG, BUFFER_QUEUE,
    /// QUEUE): its ports, the range as written and its bits; an error naming the key
    /// and what was expected otherwise. `(short, what, example)`: e.g.
    /// `("PGS", "priority groups", "3-4")`.
    pub fn port_range_key(
        &mut self,
        table: &str,
        key: &str,
        (short, what, example): (&str, &str, &str),
    ) -> Option<(Vec<String>, String, u8)> {
        let at = format!("{table}|{key}");
        let Some((names, range)) = import_ports::split_port_key(key) else {
            self.error(
                at,
                format!("expected a key PORT|{short} (e.g. Ethernet0|{example})"),
            );
            return None;
        };
        let Some(bits) = range_bits(&range) else {
            self.error(
                at,
                format!("expected {what} 0-7 or a range like {example}, got {range:?}"),
            );
            return None;
        };
        Some((names, range, bits))
    }

    pub fn error(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.errors.push(FieldError {
            field: field.into(),
            message: message.into(),
        });
    }

    pub fn unsupported(&mut self, at: &str, field: &str, message: impl Into<String>) {
        self.find(Kind::Unsupported, at, field, message);
    }

    pub fn note(&mut self, at: &str, field: &str, message: impl Into<String>) {
        self.find(Kind::Note, at, field, message);
    }

    fn find(&mut self, kind: Kind, at: &str, field: &str, message: impl Into<String>) {
        self.findings.push(Finding {
            kind,
            at: at.into(),
            field: field.into(),
            message: message.into(),
        });
    }

    /// Records that output `section` comes from `TABLE|key`.
    pub fn source(&mut self, section: &str, entry: String) {
        self.sources
            .entry(section.to_string())
            .or_default()
            .insert(entry);
    }

    /// Reports every field of `TABLE|key` outside `known` as not honoured
    /// with `why`, so no field is dropped silently.
    pub fn rest(&mut self, table: &str, key: &str, known: &[&str], why: &str) {
        let Some(fields) = self.db.get(table, key) else {
            return;
        };
        let extra: Vec<String> = fields
            .keys()
            .filter(|f| !known.contains(&f.as_str()))
            .cloned()
            .collect();
        for f in extra {
            self.unsupported(&format!("{table}|{key}"), &f, why);
        }
    }

    /// DEVICE_METADATA|localhost: the hostname names the instance.
    fn device_metadata(&mut self, cfg: &mut Config) {
        self.handled.insert("DEVICE_METADATA");
        let others: Vec<String> = self
            .db
            .table("DEVICE_METADATA")
            .map(|(k, _)| k.clone())
            .filter(|k| k != "localhost")
            .collect();
        for k in others {
            self.note(
                &format!("DEVICE_METADATA|{k}"),
                "",
                "device description, no data-plane behaviour to carry",
            );
        }
        let Some(md) = self.db.get("DEVICE_METADATA", "localhost") else {
            return;
        };
        if let Some(h) = md.get("hostname") {
            if crate::check_instance_name(h).is_ok() {
                cfg.switch.name = h.clone();
                self.source("switch", "DEVICE_METADATA|localhost".into());
            } else {
                self.note(
                    "DEVICE_METADATA|localhost",
                    "hostname",
                    format!("{h:?} cannot name an instance (1-64 of [A-Za-z0-9_-]): [switch] name stays \"default\""),
                );
            }
        }
        for f in md.keys() {
            if !matches!(f.as_str(), "hostname" | "buffer_model") {
                self.note(
                    "DEVICE_METADATA|localhost",
                    f,
                    "device description, no data-plane behaviour to carry",
                );
            }
        }
    }

    /// Tables no part of the import reads: reported whole.
    fn unhandled_tables(&mut self) {
        let names: Vec<(String, usize)> = self
            .db
            .tables
            .iter()
            .filter(|(t, _)| !self.handled.contains(t.as_str()))
            .map(|(t, k)| (t.clone(), k.len()))
            .collect();
        for (t, n) in names {
            self.unsupported(
                &t,
                "",
                format!("table not imported ({n} key(s)): this data plane has no equivalent"),
            );
        }
    }
}

/// An integer field, or an error naming it.
pub(crate) fn int_field(
    im: &mut Importer,
    at: &str,
    field: &str,
    v: &str,
    lo: i64,
    hi: i64,
) -> Option<i64> {
    match v.trim().parse::<i64>() {
        Ok(n) if (lo..=hi).contains(&n) => Some(n),
        _ => {
            im.error(
                format!("{at}.{field}"),
                format!("expected an integer {lo}-{hi}, got {v:?}"),
            );
            None
        }
    }
}

/// "3-4" or "3" to the bits of that range of 0-7.
pub(crate) fn range_bits(s: &str) -> Option<u8> {
    let (a, b) = match s.split_once('-') {
        Some((a, b)) => (a.trim().parse::<u8>().ok()?, b.trim().parse::<u8>().ok()?),
        None => {
            let x = s.trim().parse::<u8>().ok()?;
            (x, x)
        }
    };
    (a <= b && b <= 7).then(|| (a..=b).fold(0u8, |m, i| m | 1 << i))
}

/// The bits of `bits` as SONiC ranges: 0b0001_1011 -> ["0-1", "3-4"].
pub(crate) fn bits_ranges(bits: u8) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < 8 {
        if bits & (1 << i) == 0 {
            i += 1;
            continue;
        }
        let start = i;
        while i < 8 && bits & (1 << i) != 0 {
            i += 1;
        }
        out.push(if i - 1 == start {
            start.to_string()
        } else {
            format!("{start}-{}", i - 1)
        });
    }
    out
}
