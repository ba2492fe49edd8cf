//! The benchmark results file, `target/bench/results.json`: a JSON list of
//! records `{"figure", "value", "unit", "baseline", "ratio", "machine",
//! "note"}`. Every bench of the project (the lab's, the simulator's,
//! xtask's fuzzing) merges its figures into it by name through
//! [`merge`], so one bench never loses another's figures: a file that does
//! not read as a list of records is an error naming it (nothing is
//! written), a record of a shape this build does not know is kept as it
//! is, and the file is replaced whole (written beside it, then renamed).

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// One figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub figure: String,
    pub value: f64,
    pub unit: String,
    /// Figure this one is compared with (same run).
    pub baseline: Option<String>,
    /// value / baseline value.
    pub ratio: Option<f64>,
    pub machine: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Record {
    /// A figure on its own (no baseline).
    pub fn new(figure: String, value: f64, unit: &str, machine: &str, note: String) -> Record {
        Record {
            figure,
            value,
            unit: unit.into(),
            baseline: None,
            ratio: None,
            machine: machine.into(),
            note: Some(note),
        }
    }

    /// A figure measured in the same run as `baseline` (whose value is
    /// `base`): the ratio is value / base when base is positive.
    pub fn against(
        figure: String,
        value: f64,
        unit: &str,
        (baseline, base): (&str, f64),
        machine: &str,
        note: String,
    ) -> Record {
        Record {
            figure,
            value,
            unit: unit.into(),
            baseline: Some(baseline.into()),
            ratio: (base > 0.0).then(|| value / base),
            machine: machine.into(),
            note: Some(note),
        }
    }
}

/// Merges `new` into the results file at `path` (created if missing):
/// records with the same figure names are replaced, every other record is
/// kept, whatever its shape.
pub fn merge(path: &Path, new: &[Record]) -> Result<()> {
    let new: Vec<serde_json::Value> = new
        .iter()
        .map(serde_json::to_value)
        .collect::<Result<_, _>>()?;
    merge_values(path, new)
}

/// [`merge`] for records already in JSON form; each must have a string
/// `figure`.
pub fn merge_values(path: &Path, new: Vec<serde_json::Value>) -> Result<()> {
    for (i, r) in new.iter().enumerate() {
        if !r["figure"].is_string() {
            bail!("new record {i} has no string \"figure\": {r}");
        }
    }
    let mut all = read(path)?;
    all.retain(|r| !new.iter().any(|n| n["figure"] == r["figure"]));
    all.extend(new);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = path.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&all)?)
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

/// Every record of the results file at `path` (none when it does not
/// exist); an error, naming the file and where, when it is not a JSON
/// list of objects.
pub fn read(path: &Path) -> Result<Vec<serde_json::Value>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let all: Vec<serde_json::Value> = serde_json::from_slice(&bytes).with_context(|| {
        format!(
            "{} is not a JSON list of bench records (move it away to start a new one)",
            path.display()
        )
    })?;
    if let Some(i) = all.iter().position(|r| !r.is_object()) {
        bail!(
            "{}: record {i} is not an object: {}",
            path.display(),
            all[i]
        );
    }
    Ok(all)
}

/// One line describing the machine: CPU model, cores, memory, kernel and
/// the date (UTC), as every record names it.
pub fn machine() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = cpuinfo
        .lines()
        .filter(|l| l.starts_with("processor"))
        .count();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let mem_kib = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .next()
                .and_then(|l| l.split_whitespace().nth(1).map(str::to_owned))
        })
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    let date = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    format!(
        "{model}, {cores} vCPU, {} GiB, Linux {}, {date}",
        mem_kib / 1024 / 1024,
        kernel.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(figure: &str, value: f64) -> Record {
        Record::new(figure.into(), value, "ns", "test machine", String::new())
    }

    fn dir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("bench-results-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn merge_replaces_by_name_and_keeps_the_rest() {
        let d = dir("merge");
        let p = d.join("results.json");
        merge(&p, &[rec("a", 1.0), rec("b", 2.0)]).unwrap();
        merge(&p, &[rec("b", 3.0), rec("c", 4.0)]).unwrap();
        let all = read(&p).unwrap();
        let v: Vec<(String, f64)> = all
            .iter()
            .map(|r| {
                (
                    r["figure"].as_str().unwrap().into(),
                    r["value"].as_f64().unwrap(),
                )
            })
            .collect();
        assert_eq!(v, [("a".into(), 1.0), ("b".into(), 3.0), ("c".into(), 4.0)]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A record another bench wrote in a shape `Record` cannot read (here
    /// without "unit", with a list value) survives a merge.
    #[test]
    fn records_of_other_shapes_are_kept() {
        let d = dir("shape");
        let p = d.join("results.json");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            &p,
            r#"[{"figure": "x", "value": [1, 2]}, {"figure": "y", "value": 5}]"#,
        )
        .unwrap();
        merge(&p, &[rec("z", 1.0)]).unwrap();
        let all = read(&p).unwrap();
        assert_eq!(all.len(), 3);
        assert_eq!(all[0]["value"], serde_json::json!([1, 2]));
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A file that is not a list of records is an error naming it, and it
    /// is left as it was.
    #[test]
    fn an_unreadable_file_is_an_error_and_untouched() {
        let d = dir("bad");
        let p = d.join("results.json");
        std::fs::create_dir_all(&d).unwrap();
        for bad in [&b"{\"figure\": 1}"[..], b"[1, 2]", b"[{\"figure\": \"a\"}"] {
            std::fs::write(&p, bad).unwrap();
            let e = format!("{:#}", merge(&p, &[rec("a", 1.0)]).unwrap_err());
            assert!(e.contains("results.json"), "{e}");
            assert_eq!(std::fs::read(&p).unwrap(), bad);
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_new_record_needs_a_figure_name() {
        let d = dir("name");
        let p = d.join("results.json");
        let e = merge_values(&p, vec![serde_json::json!({"value": 1})]).unwrap_err();
        assert!(e.to_string().contains("figure"), "{e}");
        assert!(!p.exists());
    }
}
