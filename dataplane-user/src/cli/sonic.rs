//! `dataplane config import-sonic` and `export-sonic`: the file I/O around
//! `dataplane_config::sonic`. Findings go to standard error; the output is
//! written whole (a temporary file renamed into place) or not at all.

use std::path::Path;

use anyhow::{Context, Result};
use dataplane_config::sonic::{self, ImportOptions, Kind};
use dataplane_config::Config;

/// Imports `input` into `output`; with `strict`, any field not honoured
/// refuses the import.
pub fn import(input: &Path, ports: Option<&str>, strict: bool, output: &Path) -> Result<()> {
    let text = std::fs::read_to_string(input)
        .with_context(|| format!("{}: cannot read", input.display()))?;
    let opts = ImportOptions {
        ports: match ports {
            Some(p) => sonic::parse_port_map(p).map_err(|m| anyhow::anyhow!("--ports: {m}"))?,
            None => Default::default(),
        },
        strict,
    };
    let source = input.display().to_string();
    let imported = sonic::import(&text, &source, &opts)?;
    for f in &imported.findings {
        eprintln!("{f}");
    }
    write_whole(output, &imported.toml)?;
    let unsupported = imported
        .findings
        .iter()
        .filter(|f| f.kind == Kind::Unsupported)
        .count();
    eprintln!(
        "{}: {} port(s) written to {}; {unsupported} field(s) not honoured, {} note(s)",
        source,
        imported.config.ports.len(),
        output.display(),
        imported.findings.len() - unsupported
    );
    Ok(())
}

/// Exports `config` as config_db.json to `output` or standard output.
pub fn export(config: &Path, output: Option<&Path>) -> Result<()> {
    let source = config.display().to_string();
    let cfg = Config::load(config)?;
    let ex = sonic::export(&cfg, &source)?;
    for f in &ex.findings {
        eprintln!("{f}");
    }
    match output {
        Some(o) => write_whole(o, &ex.json),
        None => {
            print!("{}", ex.json);
            Ok(())
        }
    }
}

/// Writes `text` to `path` through a temporary file in the same directory,
/// so a failure leaves no partial file.
fn write_whole(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, text).with_context(|| format!("{}: cannot write", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: cannot write", path.display())
    })
}
