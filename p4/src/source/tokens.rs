//! The P4 tokenizer: tokens without comments and preprocessor lines, and
//! integer literals.

/// The tokens of a P4 text: identifiers and numbers, strings, single
/// punctuation characters; comments and preprocessor lines dropped.
pub fn p4_tokens(src: &str) -> Vec<String> {
    // comments and preprocessor lines (with their continuations) go
    let mut text = String::with_capacity(src.len());
    let mut in_directive = false;
    for line in src.lines() {
        let t = line.trim_start();
        if in_directive || t.starts_with('#') {
            in_directive = t.ends_with('\\');
            text.push('\n');
            continue;
        }
        text.push_str(line);
        text.push('\n');
    }
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c == '/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if c == '/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '"' {
            let start = i;
            i += 1;
            while i < b.len() && b[i] != b'"' {
                i += 1;
            }
            i += 1;
            out.push(text[start..i.min(b.len())].to_string());
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(text[start..i].to_string());
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// A P4 integer literal (decimal or 0x hex, `_` separators).
pub fn parse_int(s: &str) -> Option<u32> {
    let s = s.replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => s.parse().ok(),
    }
}
