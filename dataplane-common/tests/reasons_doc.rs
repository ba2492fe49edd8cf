//! The reason glossary (`docs/src/reference/reasons.md`) against the one
//! reason table: every code with a name has its row (`| code | `name` |`),
//! and every row names a code of the table.

use dataplane_common::reason::code_name;

#[test]
fn the_glossary_lists_every_reason_and_nothing_else() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/src/reference/reasons.md"
    );
    let page = std::fs::read_to_string(path).expect("the glossary page");
    let mut problems = Vec::new();
    for code in 0..=u8::MAX {
        let name = code_name(code);
        if name == "unknown" {
            continue;
        }
        let row = format!("| {code} | `{name}` |");
        if !page.lines().any(|l| l.starts_with(&row)) {
            problems.push(format!("code {code} ({name}) has no row `{row}`"));
        }
    }
    for line in page.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() < 3 {
            continue;
        }
        let Ok(code) = cells[1].parse::<u8>() else {
            continue;
        };
        let name = cells[2].trim_matches('`');
        if code_name(code) != name {
            problems.push(format!(
                "row for code {code} names `{name}`, the table says `{}`",
                code_name(code)
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
