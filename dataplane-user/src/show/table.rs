//! The two table layouts sonic-utilities prints, as Python's `tabulate`
//! draws them: `tablefmt='simple'` with headers and every column
//! right-aligned (pfcstat, queuestat, watermarkstat), and the headerless
//! default (ecnconfig -l, mmuconfig -l), where a column of integers is
//! right-aligned and any other column left-aligned.
//!
//! Both: a column is as wide as its widest cell (with headers, at least its
//! header plus 2), columns are joined by two spaces, a rule of dashes per
//! column goes under the headers (headerless: above and below the rows),
//! and trailing spaces are trimmed from every line.

/// How `tabulate` aligns a column.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    Right,
}

fn pad(cell: &str, width: usize, align: Align) -> String {
    match align {
        Align::Left => format!("{cell:<width$}"),
        Align::Right => format!("{cell:>width$}"),
    }
}

fn line(cells: impl Iterator<Item = String>) -> String {
    let s: Vec<String> = cells.collect();
    s.join("  ").trim_end().to_string()
}

fn rule(widths: &[usize]) -> String {
    line(widths.iter().map(|w| "-".repeat(*w)))
}

/// `tabulate(rows, headers, tablefmt='simple', stralign='right')`, without
/// the final newline (as `tabulate` returns it; `print` adds one).
pub fn simple(headers: &[&str], rows: &[Vec<String>]) -> String {
    let widths: Vec<usize> = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count())
                .max()
                .unwrap_or(0)
                .max(h.chars().count() + 2)
        })
        .collect();
    let mut out = vec![
        line(
            headers
                .iter()
                .zip(&widths)
                .map(|(h, w)| pad(h, *w, Align::Right)),
        ),
        rule(&widths),
    ];
    for r in rows {
        out.push(line(widths.iter().enumerate().map(|(i, w)| {
            pad(r.get(i).map(String::as_str).unwrap_or(""), *w, Align::Right)
        })));
    }
    out.join("\n")
}

/// A cell `tabulate` reads as an integer (and so right-aligns).
fn is_int(s: &str) -> bool {
    let d = s.strip_prefix('-').unwrap_or(s);
    !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit())
}

/// `tabulate(rows)`: no headers, default format and alignment, without the
/// final newline.
pub fn plain(rows: &[Vec<String>]) -> String {
    let ncols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let cell = |r: &Vec<String>, i: usize| r.get(i).cloned().unwrap_or_default();
    let widths: Vec<usize> = (0..ncols)
        .map(|i| {
            rows.iter()
                .map(|r| cell(r, i).chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let aligns: Vec<Align> = (0..ncols)
        .map(|i| {
            if rows.iter().all(|r| is_int(&cell(r, i))) {
                Align::Right
            } else {
                Align::Left
            }
        })
        .collect();
    let mut out = vec![rule(&widths)];
    for r in rows {
        out.push(line(
            (0..ncols).map(|i| pad(&cell(r, i), widths[i], aligns[i])),
        ));
    }
    out.push(rule(&widths));
    out.join("\n")
}

/// Python's `'{:,}'.format(n)`.
pub fn commas(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::with_capacity(d.len() + d.len() / 3);
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Port names in natural order (`natsort`, as sonic-utilities sorts
/// them): Ethernet2 before Ethernet10.
pub fn natural_cmp(a: &str, b: &str) -> std::cmp::Ordering {
    fn chunks(s: &str) -> Vec<(bool, String)> {
        let mut v: Vec<(bool, String)> = Vec::new();
        for c in s.chars() {
            let digit = c.is_ascii_digit();
            match v.last_mut() {
                Some((d, t)) if *d == digit => t.push(c),
                _ => v.push((digit, c.to_string())),
            }
        }
        v
    }
    let (x, y) = (chunks(a), chunks(b));
    for ((dx, tx), (dy, ty)) in x.iter().zip(&y) {
        let o = if *dx && *dy {
            let (tx, ty) = (tx.trim_start_matches('0'), ty.trim_start_matches('0'));
            tx.len().cmp(&ty.len()).then_with(|| tx.cmp(ty))
        } else {
            tx.cmp(ty)
        };
        if o != std::cmp::Ordering::Equal {
            return o;
        }
    }
    x.len().cmp(&y.len()).then_with(|| a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    // Expected strings below were printed by Python's tabulate 0.8.9
    // (Debian python3-tabulate) for the same rows.
    #[test]
    fn simple_right_aligned_with_header_padding() {
        let t = simple(
            &["Port Rx", "PFC0", "PFC1"],
            &[row(&["Ethernet0", "0", "1,234"])],
        );
        assert_eq!(
            t,
            "  Port Rx    PFC0    PFC1\n---------  ------  ------\nEthernet0       0   1,234"
        );
        assert_eq!(
            simple(&["Port", "TxQ"], &[]),
            "  Port    TxQ\n------  -----"
        );
    }

    #[test]
    fn plain_aligns_integer_columns_right_and_trims() {
        let t = plain(&[
            row(&["ecn", "ecn_all"]),
            row(&["green_min_threshold", "1048576"]),
            row(&["green_drop_probability", "5"]),
        ]);
        assert_eq!(t, "----------------------  -------\necn                     ecn_all\ngreen_min_threshold     1048576\ngreen_drop_probability  5\n----------------------  -------");
        let t = plain(&[row(&["size", "1048576"]), row(&["xoff", "5"])]);
        assert_eq!(
            t,
            "----  -------\nsize  1048576\nxoff        5\n----  -------"
        );
        let t = plain(&[row(&["a", "-2"]), row(&["bb", "10"])]);
        assert_eq!(t, "--  --\na   -2\nbb  10\n--  --");
    }

    #[test]
    fn commas_and_natural_order() {
        assert_eq!(commas(0), "0");
        assert_eq!(commas(999), "999");
        assert_eq!(commas(1000), "1,000");
        assert_eq!(commas(1234567), "1,234,567");
        let mut v = vec!["Ethernet10", "Ethernet2", "Ethernet0", "eth1"];
        v.sort_by(|a, b| natural_cmp(a, b));
        assert_eq!(v, ["Ethernet0", "Ethernet2", "Ethernet10", "eth1"]);
    }
}
