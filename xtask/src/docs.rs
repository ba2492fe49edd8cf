//! The user guide: `mdbook build docs` and a check that every relative link
//! in `docs/src` and the READMEs resolves to a file.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Result};

/// Markdown files whose links are checked: the guide's sources and the
/// READMEs.
fn markdown_files(root: &Path) -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut files = Vec::new();
    walk(&root.join("docs/src"), &mut files);
    for f in ["README.md", "p4/README.md"] {
        let p = root.join(f);
        if p.exists() {
            files.push(p);
        }
    }
    files.sort();
    files
}

/// The targets of inline links `[text](target)` outside code fences and
/// code spans.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        // drop code spans
        let mut plain = String::new();
        for (i, part) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain.push_str(part);
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].trim().to_string());
            rest = &after[end..];
        }
    }
    out
}

/// Every relative link that does not resolve to an existing file, as
/// "file: target".
pub fn broken_links(root: &Path) -> Vec<String> {
    let mut broken = Vec::new();
    for file in markdown_files(root) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let dir = file.parent().unwrap_or(root);
        for target in links(&text) {
            if target.is_empty()
                || target.starts_with('#')
                || target.contains("://")
                || target.starts_with("mailto:")
            {
                continue;
            }
            let path = target.split('#').next().unwrap_or("");
            if !dir.join(path).exists() {
                let shown = file.strip_prefix(root).unwrap_or(&file);
                broken.push(format!("{}: {target}", shown.display()));
            }
        }
    }
    broken
}

/// Builds the guide and checks its links.
pub fn check() -> Result<()> {
    let root = crate::root();
    let broken = broken_links(&root);
    if !broken.is_empty() {
        bail!(
            "broken links in the documentation:\n  {}",
            broken.join("\n  ")
        );
    }
    println!("docs: every relative link resolves");
    if !crate::machine::on_path("mdbook") {
        bail!("mdbook is not on PATH: `cargo xtask setup` installs it (cargo install mdbook --locked)");
    }
    crate::run(Command::new("mdbook").arg("build").arg(root.join("docs")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_outside_code_are_found() {
        let t = "see [a](a.md) and `[b](b.md)`\n```\n[c](c.md)\n```\n[d](d/e.md#x) [f](https://x)";
        assert_eq!(links(t), ["a.md", "d/e.md#x", "https://x"]);
    }

    #[test]
    fn every_relative_link_in_the_docs_resolves() {
        let root = crate::root();
        let broken = broken_links(&root);
        assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
    }
}
