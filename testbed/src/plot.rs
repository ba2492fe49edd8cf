//! Small SVG charts for reports (no dependencies): line charts over time
//! with labelled threshold lines, and grouped bar charts.

use std::fmt::Write;

const W: f64 = 800.0;
const H: f64 = 420.0;
const L: f64 = 70.0; // left margin
const R: f64 = 20.0;
/// Left margin of a timeline (room for row labels).
const LT: f64 = 170.0;
const T: f64 = 40.0;
const B: f64 = 50.0;
const COLORS: [&str; 8] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

fn nice_max(v: f64) -> f64 {
    if v <= 0.0 {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if m * p >= v {
            return m * p;
        }
    }
    10.0 * p
}

/// The SVG element, a white background and the centred title.
fn svg_open(out: &mut String, height: f64, title: &str) {
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        W / 2.0,
        esc(title)
    );
}

fn frame(
    out: &mut String,
    title: &str,
    xlabel: &str,
    ylabel: &str,
    ymax: f64,
    xmax: f64,
    xticks: bool,
) {
    svg_open(out, H, title);
    let _ = writeln!(
        out,
        r#"<line x1="{L}" y1="{}" x2="{}" y2="{}" stroke="black"/>"#,
        H - B,
        W - R,
        H - B
    );
    let _ = writeln!(
        out,
        r#"<line x1="{L}" y1="{T}" x2="{L}" y2="{}" stroke="black"/>"#,
        H - B
    );
    for i in 0..=5 {
        let v = ymax * f64::from(i) / 5.0;
        let y = H - B - (H - B - T) * f64::from(i) / 5.0;
        let _ = writeln!(
            out,
            r##"<line x1="{L}" y1="{y}" x2="{}" y2="{y}" stroke="#ddd"/>"##,
            W - R
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            L - 6.0,
            y + 4.0,
            fmt(v)
        );
        if xticks {
            let xv = xmax * f64::from(i) / 5.0;
            let x = L + (W - L - R) * f64::from(i) / 5.0;
            centred(out, x, H - B + 16.0, fmt(xv));
        }
    }
    centred(out, (W + L) / 2.0, H - 12.0, esc(xlabel));
    let _ = writeln!(
        out,
        r#"<text transform="translate(16,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (H - B + T) / 2.0,
        esc(ylabel)
    );
}

fn fmt(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 10.0 || v == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A line chart: `series` of (name, points (x, y)), plus horizontal
/// threshold lines (name, y) drawn dashed.
pub fn lines(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[(&str, Vec<(f64, f64)>)],
    thresholds: &[(&str, f64)],
) -> String {
    let xmax = nice_max(
        series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.0))
            .fold(0.0, f64::max),
    );
    let ymax = nice_max(
        series
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.1))
            .chain(thresholds.iter().map(|t| t.1))
            .fold(0.0, f64::max),
    );
    let sx = |x: f64| L + (W - L - R) * x / xmax;
    let sy = |y: f64| H - B - (H - B - T) * y / ymax;
    let mut out = String::new();
    frame(&mut out, title, xlabel, ylabel, ymax, xmax, true);
    for (i, (name, y)) in thresholds.iter().enumerate() {
        let c = COLORS[(i + 3) % COLORS.len()];
        let _ = writeln!(
            out,
            r#"<line x1="{L}" y1="{0}" x2="{1}" y2="{0}" stroke="{c}" stroke-dasharray="6,4"/>"#,
            sy(*y),
            W - R
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end" fill="{c}">{}</text>"#,
            W - R - 4.0,
            sy(*y) - 4.0,
            esc(name)
        );
    }
    for (i, (name, pts)) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let mut d = String::new();
        for (j, (x, y)) in pts.iter().enumerate() {
            let _ = write!(
                d,
                "{}{:.1},{:.1} ",
                if j == 0 { "M" } else { "L" },
                sx(*x),
                sy(*y)
            );
        }
        let _ = writeln!(
            out,
            r#"<path d="{d}" fill="none" stroke="{c}" stroke-width="1.5"/>"#
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" fill="{c}">{}</text>"#,
            L + 8.0,
            T + 14.0 * (i as f64 + 1.0),
            esc(name)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// A timeline: one row per (label, intervals (start, end)), a bar where
/// the row is "on" (e.g. a port pausing its peer), over `0..xmax`.
pub fn timeline(
    title: &str,
    xlabel: &str,
    rows: &[(String, Vec<(f64, f64)>)],
    xmax: f64,
) -> String {
    let xmax = nice_max(xmax);
    let n = rows.len().max(1) as f64;
    let row_h = ((H - B - T) / n).min(28.0);
    let height = T + B + row_h * n;
    let sx = |x: f64| LT + (W - LT - R) * x / xmax;
    let mut out = String::new();
    svg_open(&mut out, height, title);
    for i in 0..=5 {
        let xv = xmax * f64::from(i) / 5.0;
        let x = sx(xv);
        let _ = writeln!(
            out,
            r##"<line x1="{x}" y1="{T}" x2="{x}" y2="{}" stroke="#ddd"/>"##,
            height - B
        );
        centred(&mut out, x, height - B + 16.0, fmt(xv));
    }
    for (i, (label, spans)) in rows.iter().enumerate() {
        let y = T + row_h * i as f64;
        let c = COLORS[i % COLORS.len()];
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            LT - 6.0,
            y + row_h * 0.65,
            esc(label)
        );
        for (a, b) in spans {
            let w = (sx(*b) - sx(*a)).max(1.0);
            let _ = writeln!(
                out,
                r#"<rect x="{:.1}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="{c}"/>"#,
                sx(*a),
                y + 3.0,
                row_h - 6.0
            );
        }
    }
    let _ = writeln!(
        out,
        r#"<line x1="{LT}" y1="{0}" x2="{1}" y2="{0}" stroke="black"/>"#,
        height - B,
        W - R
    );
    centred(&mut out, (W + LT) / 2.0, height - 12.0, esc(xlabel));
    out.push_str("</svg>\n");
    out
}

/// A grouped bar chart: one group per (label, values), one bar per value,
/// colours per position named by `legend`.
pub fn bars(title: &str, ylabel: &str, legend: &[&str], groups: &[(&str, Vec<f64>)]) -> String {
    let ymax = nice_max(
        groups
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .fold(0.0, f64::max),
    );
    let sy = |y: f64| H - B - (H - B - T) * y / ymax;
    let mut out = String::new();
    frame(&mut out, title, "", ylabel, ymax, 1.0, false);
    let gw = (W - L - R) / groups.len().max(1) as f64;
    for (g, (label, vals)) in groups.iter().enumerate() {
        let bw = gw * 0.8 / vals.len().max(1) as f64;
        for (i, v) in vals.iter().enumerate() {
            let x = L + gw * g as f64 + gw * 0.1 + bw * i as f64;
            let _ = writeln!(
                out,
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                sy(*v),
                bw * 0.9,
                (H - B - sy(*v)).max(0.0),
                COLORS[i % COLORS.len()]
            );
        }
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            L + gw * (g as f64 + 0.5),
            H - B + 16.0,
            esc(label)
        );
    }
    for (i, name) in legend.iter().enumerate() {
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" fill="{}">{}</text>"#,
            W - R - 90.0,
            T + 14.0 * (i as f64 + 1.0),
            COLORS[i % COLORS.len()],
            esc(name)
        );
    }
    out.push_str("</svg>\n");
    out
}

/// A text centred on (x, y).
fn centred(out: &mut String, x: f64, y: f64, text: impl std::fmt::Display) {
    let _ = writeln!(
        out,
        r#"<text x="{x}" y="{y}" text-anchor="middle">{text}</text>"#
    );
}

#[cfg(test)]
mod tests {
    #[test]
    fn charts_are_well_formed_svg() {
        let l = super::lines(
            "q",
            "ms",
            "bytes",
            &[("queue", vec![(0.0, 0.0), (1.0, 5.0), (2.0, 3.0)])],
            &[("Kmin", 2.0)],
        );
        assert!(
            l.starts_with("<svg")
                && l.trim_end().ends_with("</svg>")
                && l.contains("Kmin")
                && l.contains("<path")
        );
        let b = super::bars(
            "u",
            "%",
            &["u0", "u1"],
            &[("hash", vec![50.0, 25.0]), ("bw", vec![25.0, 25.0])],
        );
        assert_eq!(b.matches("<rect ").count(), 1 + 4);
    }
}
