//! Minimal SVG charts (grouped bars, lines). Kept here rather than using
//! `plotters`: its SVG backend needs a font backend to lay out text, and
//! the simulator must not depend on the testbed (which builds the eBPF
//! programs) for testbed/src/plot.rs.

use std::fmt::Write;

const W: f64 = 760.0;
const H: f64 = 420.0;
const L: f64 = 70.0;
const R: f64 = 150.0;
const T: f64 = 40.0;
const B: f64 = 60.0;
const COLOURS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A round upper bound of the axis.
fn axis_max(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let e = 10f64.powf(v.log10().floor());
    for m in [1.0, 2.0, 2.5, 5.0, 10.0] {
        if v <= m * e {
            return m * e;
        }
    }
    10.0 * e
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 || v == v.round() {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Frame, title, y axis with 5 ticks and labels, legend; returns the SVG
/// started and the y scale's maximum.
fn frame(title: &str, ylabel: &str, ymax: f64, legend: &[&str]) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        (L + W - R) / 2.0,
        esc(title)
    );
    for i in 0..=5 {
        let v = ymax * f64::from(i) / 5.0;
        let y = H - B - (H - T - B) * f64::from(i) / 5.0;
        let _ = write!(
            s,
            r##"<line x1="{L}" x2="{}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="{}" y="{}" text-anchor="end">{}</text>"##,
            W - R,
            L - 6.0,
            y + 4.0,
            num(v)
        );
    }
    let _ = write!(
        s,
        r#"<text transform="translate(16,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (T + H - B) / 2.0,
        esc(ylabel)
    );
    for (i, name) in legend.iter().enumerate() {
        let y = T + 18.0 * i as f64;
        let _ = write!(
            s,
            r#"<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            W - R + 12.0,
            y,
            COLOURS[i % COLOURS.len()],
            W - R + 30.0,
            y + 10.0,
            esc(name)
        );
    }
    s
}

/// Grouped bars: one group per label, one bar per series in each.
pub fn bars(title: &str, ylabel: &str, series: &[&str], groups: &[(String, Vec<f64>)]) -> String {
    let ymax = axis_max(
        groups
            .iter()
            .flat_map(|(_, v)| v.iter().cloned())
            .fold(0.0, f64::max),
    );
    let mut s = frame(title, ylabel, ymax, series);
    let gw = (W - L - R) / groups.len().max(1) as f64;
    let bw = gw * 0.8 / series.len().max(1) as f64;
    for (g, (label, vals)) in groups.iter().enumerate() {
        let x0 = L + gw * g as f64 + gw * 0.1;
        for (i, &v) in vals.iter().enumerate() {
            let h = (H - T - B) * (v / ymax).clamp(0.0, 1.0);
            let _ = write!(
                s,
                r#"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}</title></rect>"#,
                x0 + bw * i as f64,
                H - B - h,
                bw * 0.95,
                h,
                COLOURS[i % COLOURS.len()],
                num(v)
            );
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            x0 + gw * 0.4,
            H - B + 18.0,
            esc(label)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Lines over a shared x axis.
pub fn lines(
    title: &str,
    xlabel: &str,
    ylabel: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> String {
    let xmax = axis_max(
        series
            .iter()
            .flat_map(|(_, v)| v.iter().map(|p| p.0))
            .fold(0.0, f64::max),
    );
    let ymax = axis_max(
        series
            .iter()
            .flat_map(|(_, v)| v.iter().map(|p| p.1))
            .fold(0.0, f64::max),
    );
    let names: Vec<&str> = series.iter().map(|(n, _)| n.as_str()).collect();
    let mut s = frame(title, ylabel, ymax, &names);
    for i in 0..=5 {
        let v = xmax * f64::from(i) / 5.0;
        let x = L + (W - L - R) * f64::from(i) / 5.0;
        let _ = write!(
            s,
            r#"<text x="{x}" y="{}" text-anchor="middle">{}</text>"#,
            H - B + 18.0,
            num(v)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (L + W - R) / 2.0,
        H - 16.0,
        esc(xlabel)
    );
    for (i, (_, pts)) in series.iter().enumerate() {
        let path: Vec<String> = pts
            .iter()
            .map(|&(x, y)| {
                format!(
                    "{:.1},{:.1}",
                    L + (W - L - R) * (x / xmax),
                    H - B - (H - T - B) * (y / ymax).clamp(0.0, 1.0)
                )
            })
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{}" stroke-width="1.5" points="{}"/>"#,
            COLOURS[i % COLOURS.len()],
            path.join(" ")
        );
    }
    s.push_str("</svg>\n");
    s
}

/// A heat map: one row per label, one cell per column (x from 0 to
/// `xmax`), the cell's shade its value in `0..=1` (white to dark red;
/// above 1 is drawn as 1).
pub fn heatmap(title: &str, xlabel: &str, xmax: f64, rows: &[(String, Vec<f64>)]) -> String {
    let n = rows.len().max(1);
    let cols = rows.iter().map(|r| r.1.len()).max().unwrap_or(1).max(1);
    let (x0, x1, y0) = (L + 40.0, W - 60.0, T);
    let rh = ((H - T - B) / n as f64).max(1.0);
    let h = y0 + rh * n as f64 + B;
    let cw = (x1 - x0) / cols as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{h:.0}" font-family="sans-serif" font-size="12"><rect width="100%" height="100%" fill="white"/><text x="{}" y="22" text-anchor="middle" font-size="15">{}</text>"#,
        (x0 + x1) / 2.0,
        esc(title)
    );
    let every = n.div_ceil(16).max(1);
    for (r, (label, vals)) in rows.iter().enumerate() {
        let y = y0 + rh * r as f64;
        for (c, &v) in vals.iter().enumerate() {
            let v = v.clamp(0.0, 1.0);
            let (g, b) = ((255.0 * (1.0 - v)) as u8, (255.0 * (1.0 - v)) as u8);
            let red = (255.0 - 80.0 * v) as u8;
            let _ = write!(
                s,
                r#"<rect x="{:.2}" y="{y:.2}" width="{:.2}" height="{rh:.2}" fill="rgb({red},{g},{b})"/>"#,
                x0 + cw * c as f64,
                cw + 0.05
            );
        }
        if r % every == 0 {
            let _ = write!(
                s,
                r#"<text x="{}" y="{:.1}" text-anchor="end" font-size="10">{}</text>"#,
                x0 - 4.0,
                y + rh.min(10.0),
                esc(label)
            );
        }
    }
    let yb = y0 + rh * n as f64;
    for i in 0..=5 {
        let v = xmax * f64::from(i) / 5.0;
        let x = x0 + (x1 - x0) * f64::from(i) / 5.0;
        let _ = write!(
            s,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            yb + 16.0,
            num(v)
        );
    }
    let _ = write!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text x="{:.1}" y="{:.1}" text-anchor="middle">shade: 0 % (white) to 100 % (dark red) of line rate</text>"#,
        (x0 + x1) / 2.0,
        yb + 34.0,
        esc(xlabel),
        (x0 + x1) / 2.0,
        yb + 50.0
    );
    s.push_str("</svg>\n");
    s
}
