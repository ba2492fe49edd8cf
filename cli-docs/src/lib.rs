//! Man pages and shell completions of a command-line tool, generated from
//! its clap definition, so they cannot drift from what the tool accepts.
//! Each binary exposes this as a hidden option; `cargo xtask man` and
//! `cargo xtask package` call it.

use std::path::Path;

use anyhow::Result;

/// Writes `cmd`'s man pages (one a subcommand) to `out/man` and its bash,
/// zsh and fish completions to `out/completions`.
pub fn generate(cmd: clap::Command, out: &Path) -> Result<()> {
    let man = out.join("man");
    let completions = out.join("completions");
    std::fs::create_dir_all(&man)?;
    std::fs::create_dir_all(&completions)?;
    let name = cmd.get_name().to_string();
    clap_mangen::generate_to(cmd.clone(), &man)?;
    for shell in [
        clap_complete::Shell::Bash,
        clap_complete::Shell::Zsh,
        clap_complete::Shell::Fish,
    ] {
        clap_complete::generate_to(shell, &mut cmd.clone(), &name, &completions)?;
    }
    println!(
        "{name}: man pages in {}, completions in {}",
        man.display(),
        completions.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_man_page_and_three_completions() {
        let cmd = clap::Command::new("demo-tool")
            .about("A demo")
            .subcommand(clap::Command::new("run").about("Runs"));
        let out = std::env::temp_dir().join(format!("cli-docs-{}", std::process::id()));
        generate(cmd, &out).unwrap();
        let page = std::fs::read_to_string(out.join("man/demo-tool.1")).unwrap();
        assert!(
            page.contains("demo\\-tool") && page.contains("A demo"),
            "{page}"
        );
        assert!(out.join("man/demo-tool-run.1").exists());
        for f in ["demo-tool.bash", "_demo-tool", "demo-tool.fish"] {
            assert!(out.join("completions").join(f).exists(), "{f}");
        }
        std::fs::remove_dir_all(&out).unwrap();
    }
}
