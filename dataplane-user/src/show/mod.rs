//! `dataplane show <target>` and `dataplane clear <target>` in SONiC's
//! layouts (sonic-utilities: pfcstat, queuestat, watermarkstat, ecnconfig,
//! mmuconfig).
//!
//! Each target is a file here with a pure renderer (its data in, an
//! [`Output`] out: SONiC's text and a JSON value) and a reader that
//! gathers that data from a running instance through [`Ctx`]; the file
//! exports `TARGETS`, and [`targets!`] below lists the files: adding a
//! target is one file and one line there.
//!
//! `clear` never zeroes the data plane (its counters stay monotonic for
//! Prometheus): counter targets store a baseline in the instance's state
//! directory ([`baseline`]) that `show` subtracts, as SONiC keeps its
//! counter cache; watermark targets reset a window of the controller's
//! folded marks (`telemetry::watermarks`).

pub mod baseline;
pub mod pfc_history;
pub mod pyjson;
pub mod table;

use std::path::PathBuf;

use anyhow::{bail, Result};

use crate::telemetry::stats::Snapshot;

/// What a target shows: SONiC's text (ending in a newline) and the same
/// data as JSON.
#[derive(Clone, Debug, PartialEq)]
pub struct Output {
    pub text: String,
    pub json: serde_json::Value,
    /// The JSON as the target prints it, when its layout is not
    /// [`Output::json_string`]'s default (sonic-utilities' `json_dump`:
    /// keys sorted, indent 2): e.g. watermarkstat's `json.dumps(indent=4)`
    /// in the order of its columns.
    pub json_text: Option<String>,
}

impl Output {
    /// Text and JSON, the JSON printed with sorted keys and indent 2.
    pub fn new(text: String, json: serde_json::Value) -> Output {
        Output {
            text,
            json,
            json_text: None,
        }
    }

    /// The JSON as `--json` prints it (ending in a newline).
    pub fn json_string(&self) -> String {
        match &self.json_text {
            Some(t) => t.clone(),
            None => format!(
                "{}\n",
                serde_json::to_string_pretty(&self.json).expect("a Value always serialises")
            ),
        }
    }
}

/// Where a target reads from: a running instance.
pub struct Ctx {
    pub instance: String,
    /// The instance's configuration file, when given (`-c`): names of
    /// profiles the data plane's tables do not carry.
    pub config: Option<PathBuf>,
    /// The words after the target's name (its [`Target::args`]).
    pub args: Vec<String>,
    /// Also rows whose counters are all zero (`-e`).
    pub empty: bool,
    /// Only rows with a counter other than zero (`-nz`, `--nonzero`).
    pub nonzero: bool,
    /// `pfc counters --history`: pause history instead of frames.
    pub history: bool,
    /// `clear --delete`: remove the stored baseline (pfcstat -d,
    /// queuestat -d) instead of storing one.
    pub delete: bool,
    /// `interfaces counters -p SECONDS` (portstat -p): the counters over
    /// that many seconds, and the rates over them.
    pub period: Option<u64>,
    /// `interfaces counters --printall` (portstat -a): every column.
    pub printall: bool,
}

impl Ctx {
    pub fn new(instance: &str, config: Option<PathBuf>) -> Ctx {
        Ctx {
            instance: instance.to_string(),
            config,
            args: Vec::new(),
            empty: false,
            nonzero: false,
            history: false,
            delete: false,
            period: None,
            printall: false,
        }
    }

    /// This context with the words after the target's name.
    fn with_args(&self, args: &[String]) -> Ctx {
        Ctx {
            instance: self.instance.clone(),
            config: self.config.clone(),
            args: args.to_vec(),
            empty: self.empty,
            nonzero: self.nonzero,
            history: self.history,
            delete: self.delete,
            period: self.period,
            printall: self.printall,
        }
    }

    /// The instance's counters and watermarks.
    pub fn snapshot(&self) -> Result<Snapshot> {
        crate::snapshot(&self.instance)
    }
}

/// One `show` target.
pub struct Target {
    /// The words after `show` (and `clear`), e.g. "pfc counters".
    pub name: &'static str,
    /// What `show` takes after the name (in [`Ctx::args`]), e.g.
    /// "[PORT]"; `None`: nothing (more words are an unknown target).
    pub args: Option<&'static str>,
    /// One line of help.
    pub about: &'static str,
    pub show: fn(&Ctx) -> Result<Output>,
    /// `dataplane clear <name>`: stores a baseline or resets a window and
    /// says what it did; `None` when there is nothing to clear.
    pub clear: Option<fn(&Ctx) -> Result<String>>,
}

/// Declares the target files and the table of their `TARGETS`.
macro_rules! targets {
    ($($file:ident),* $(,)?) => {
        $(pub mod $file;)*
        /// Every target file's targets.
        pub const TABLE: &[&[Target]] = &[$($file::TARGETS),*];
    };
}

targets! {
    pfc_counters,
    queue_counters,
    watermark,
    ecn,
    buffer,
    pfcwd,
    dcbx,
    interfaces,
    pg_drop,
}

/// Every target, in the table's order.
pub fn all() -> impl Iterator<Item = &'static Target> {
    TABLE.iter().flat_map(|t| t.iter())
}

/// The target named by the first of `words` (case-insensitive) and the
/// words after its name (only a `show` of a target with [`Target::args`]
/// takes any), or an error listing the valid targets.
pub fn find(words: &[String], clearing: bool) -> Result<(&'static Target, &[String])> {
    let lower: Vec<String> = words.iter().map(|w| w.to_lowercase()).collect();
    let found = all()
        .filter(|t| !clearing || t.clear.is_some())
        .filter_map(|t| {
            let n = t.name.split(' ').count();
            let named = lower.len() >= n && lower[..n].join(" ") == t.name;
            let rest = &words[n.min(words.len())..];
            (named && (rest.is_empty() || (!clearing && t.args.is_some()))).then_some((t, rest))
        })
        .max_by_key(|(t, _)| t.name.len());
    if let Some(f) = found {
        return Ok(f);
    }
    let verb = if clearing { "clear" } else { "show" };
    let valid: Vec<String> = all()
        .filter(|t| !clearing || t.clear.is_some())
        .map(|t| {
            let usage = match (clearing, t.args) {
                (false, Some(a)) => format!("{} {a}", t.name),
                _ => t.name.to_string(),
            };
            format!("  {verb} {usage:<42} {}", t.about)
        })
        .collect();
    bail!(
        "unknown {verb} target {:?}; valid targets:\n{}",
        lower.join(" "),
        valid.join("\n")
    )
}

/// The flags of some targets: whether set, the flag, the targets that
/// take it (`NAME*`: NAME and the targets whose name goes on from it).
type Flag = (fn(&Ctx) -> bool, &'static str, &'static [&'static str]);
const FLAGS: [Flag; 4] = [
    (
        |c| c.nonzero,
        "--nonzero",
        &["queue counters", "interfaces counters*"],
    ),
    (|c| c.history, "--history", &["pfc counters"]),
    (
        |c| c.period.is_some(),
        "--period",
        &["interfaces counters*"],
    ),
    (|c| c.printall, "--printall", &["interfaces counters"]),
];

/// Whether target `name` takes a flag for `targets` (see [`Flag`]).
fn takes(targets: &[&str], name: &str) -> bool {
    targets.iter().any(|t| match t.strip_suffix('*') {
        Some(base) => name == base || name.starts_with(&format!("{base} ")),
        None => name == *t,
    })
}

/// `dataplane show WORDS`: the target's text, or its JSON.
pub fn show(ctx: &Ctx, words: &[String], json: bool) -> Result<String> {
    let (t, rest) = find(words, false)?;
    for (set, flag, targets) in FLAGS {
        if set(ctx) && !takes(targets, t.name) {
            let takes: Vec<String> = targets.iter().map(|t| format!("show {t}")).collect();
            bail!("{flag} is for {}, not show {}", takes.join(" or "), t.name);
        }
    }
    let out = (t.show)(&ctx.with_args(rest))?;
    Ok(if json { out.json_string() } else { out.text })
}

/// `dataplane clear WORDS`: what the target cleared.
pub fn clear(ctx: &Ctx, words: &[String]) -> Result<String> {
    let (t, _) = find(words, true)?;
    (t.clear.expect("found with a clear"))(ctx)
}

/// The ports of a snapshot in SONiC's order (natural sort of the names).
pub fn ports_sorted(snap: &Snapshot) -> Vec<&crate::telemetry::stats::PortStats> {
    let mut v: Vec<_> = snap.ports.iter().collect();
    v.sort_by(|a, b| table::natural_cmp(&a.name, &b.name));
    v
}
