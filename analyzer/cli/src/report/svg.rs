//! Hand-written SVG charts: grouped bars, stacked bars and step lines. Every chart is a pure
//! function of its data; each drawn value carries a `data-value` attribute so tests (and
//! readers of the page source) can find it.

use std::fmt::Write as _;

/// Size of every chart, in SVG user units (pixels).
pub const WIDTH: f64 = 760.0;
pub const HEIGHT: f64 = 340.0;
/// Plot area margins: left, right, top, bottom.
const LEFT: f64 = 70.0;
const RIGHT: f64 = 150.0;
const TOP: f64 = 36.0;
const BOTTOM: f64 = 56.0;

/// One named series of values and its colour.
pub struct Series<'a, T> {
    pub name: &'a str,
    pub color: &'a str,
    pub values: T,
}

/// Maps values to the plot area's y coordinate (0 at the bottom), from 0 to a rounded maximum.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct YScale {
    pub max: f64,
}

impl YScale {
    /// A scale whose top is a "nice" number (1, 2 or 5 × 10^k) at least `max`.
    pub fn covering(max: f64) -> Self {
        YScale {
            max: nice_ceiling(max),
        }
    }

    /// The y coordinate of `value`.
    pub fn y(&self, value: f64) -> f64 {
        let plot = HEIGHT - TOP - BOTTOM;
        HEIGHT - BOTTOM - plot * (value / self.max).clamp(0.0, 1.0)
    }

    /// Height in user units of a bar of `value`.
    pub fn height(&self, value: f64) -> f64 {
        (HEIGHT - TOP - BOTTOM) * (value / self.max).clamp(0.0, 1.0)
    }
}

/// Mantissas of the scale tops [`nice_ceiling`] picks from: each divides into five round ticks.
const NICE: [f64; 11] = [1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0];

/// The smallest `NICE` × 10^k that is ≥ `x` (1 for non-positive or non-finite input).
pub fn nice_ceiling(x: f64) -> f64 {
    if x.is_nan() || x <= 0.0 || !x.is_finite() {
        return 1.0;
    }
    let base = 10f64.powf(x.log10().floor());
    NICE.into_iter()
        .map(|m| m * base)
        .find(|&v| v >= x * (1.0 - 1e-12))
        .unwrap_or(10.0 * base)
}

/// Bars side by side for each category (one bar per series).
pub fn grouped_bars(
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[Series<'_, Vec<f64>>],
) -> String {
    let max = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .fold(0.0, f64::max);
    let scale = YScale::covering(max);
    let mut out = frame(title, y_label, &scale);
    let slot = plot_width() / categories.len().max(1) as f64;
    let bar = slot * 0.8 / series.len().max(1) as f64;
    for (c, category) in categories.iter().enumerate() {
        let x0 = LEFT + slot * c as f64 + slot * 0.1;
        for (k, s) in series.iter().enumerate() {
            let v = s.values.get(c).copied().unwrap_or(0.0);
            rect(
                &mut out,
                x0 + bar * k as f64,
                scale.y(v),
                bar,
                scale.height(v),
                s.color,
                s.name,
                v,
            );
        }
        category_label(&mut out, LEFT + slot * (c as f64 + 0.5), category);
    }
    legend(&mut out, series.iter().map(|s| (s.name, s.color)));
    out.push_str("</svg>\n");
    out
}

/// One stacked bar per category; `layers` stack bottom to top.
pub fn stacked_bars(
    title: &str,
    y_label: &str,
    categories: &[String],
    layers: &[Series<'_, Vec<f64>>],
) -> String {
    let totals: Vec<f64> = (0..categories.len())
        .map(|c| {
            layers
                .iter()
                .map(|l| l.values.get(c).copied().unwrap_or(0.0).max(0.0))
                .sum()
        })
        .collect();
    let scale = YScale::covering(totals.iter().copied().fold(0.0, f64::max));
    let mut out = frame(title, y_label, &scale);
    let slot = plot_width() / categories.len().max(1) as f64;
    for (c, category) in categories.iter().enumerate() {
        let x = LEFT + slot * c as f64 + slot * 0.2;
        let mut below = 0.0;
        for l in layers {
            let v = l.values.get(c).copied().unwrap_or(0.0).max(0.0);
            rect(
                &mut out,
                x,
                scale.y(below + v),
                slot * 0.6,
                scale.height(v),
                l.color,
                l.name,
                v,
            );
            below += v;
        }
        category_label(&mut out, LEFT + slot * (c as f64 + 0.5), category);
    }
    legend(&mut out, layers.iter().map(|l| (l.name, l.color)));
    out.push_str("</svg>\n");
    out
}

/// Step lines (a best-so-far falls in steps) over a logarithmic time axis; each series is
/// `(elapsed_s, value)` pairs in time order, drawn as held until `x_end`.
pub fn step_lines(
    title: &str,
    y_label: &str,
    x_end: f64,
    series: &[Series<'_, Vec<(f64, f64)>>],
) -> String {
    let points = series.iter().flat_map(|s| s.values.iter());
    let y_max = points.clone().map(|p| p.1).fold(0.0, f64::max);
    let x_min = points
        .map(|p| p.0)
        .filter(|&x| x > 0.0)
        .fold(x_end, f64::min)
        .max(1e-7);
    // A search that stops just past its budget (1.004 s) keeps the axis at 1 s: points past
    // the last decade are drawn at the edge.
    let lo = x_min.log10().floor();
    let hi = (x_end.log10() - 0.05).ceil().max(lo + 1.0);
    let scale = YScale::covering(y_max);
    let x = |t: f64| {
        LEFT + plot_width() * ((t.max(10f64.powf(lo)).log10() - lo) / (hi - lo)).clamp(0.0, 1.0)
    };
    let mut out = frame(title, y_label, &scale);
    for k in lo as i32..=hi as i32 {
        let at = x(10f64.powi(k));
        let _ = writeln!(
            out,
            r#"<text x="{at:.1}" y="{:.1}" font-size="11" text-anchor="middle">1e{k} s</text>"#,
            HEIGHT - BOTTOM + 16.0
        );
    }
    for s in series {
        let mut path = String::new();
        let mut last_y = None;
        for &(t, v) in &s.values {
            let (px, py) = (x(t), scale.y(v));
            match last_y {
                None => write!(path, "M{px:.1},{py:.1}"),
                Some(ly) => write!(path, " L{px:.1},{ly:.1} L{px:.1},{py:.1}"),
            }
            .ok();
            last_y = Some(py);
            point(&mut out, (px, py), 2.5, s, v);
        }
        if let Some(ly) = last_y {
            let _ = write!(path, " L{:.1},{ly:.1}", x(x_end));
            let _ = writeln!(
                out,
                r#"<path d="{path}" fill="none" stroke="{}" stroke-width="2"/>"#,
                s.color
            );
        }
    }
    legend(&mut out, series.iter().map(|s| (s.name, s.color)));
    out.push_str("</svg>\n");
    out
}

/// Lines over a linear x axis from 0 to the largest x (iterations, say); each series is
/// `(x, value)` pairs in x order.
pub fn lines(
    title: &str,
    y_label: &str,
    x_label: &str,
    series: &[Series<'_, Vec<(f64, f64)>>],
) -> String {
    let points = series.iter().flat_map(|s| s.values.iter());
    let y_max = points.clone().map(|p| p.1).fold(0.0, f64::max);
    let x_max = points.map(|p| p.0).fold(0.0, f64::max).max(1.0);
    let scale = YScale::covering(y_max);
    let x = |v: f64| LEFT + plot_width() * (v / x_max).clamp(0.0, 1.0);
    let mut out = frame(title, y_label, &scale);
    let step = nice_ceiling(x_max / 8.0).max(1.0);
    let mut at = 0.0;
    while at <= x_max + 1e-9 {
        let _ = writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
            x(at),
            HEIGHT - BOTTOM + 16.0,
            tick(at, step)
        );
        at += step;
    }
    let _ = writeln!(
        out,
        r#"<text x="{:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
        LEFT + plot_width() / 2.0,
        HEIGHT - BOTTOM + 34.0,
        escape(x_label)
    );
    for s in series {
        let mut path = String::new();
        for (k, &(px, v)) in s.values.iter().enumerate() {
            let (px, py) = (x(px), scale.y(v));
            let _ = write!(path, "{}{px:.1},{py:.1}", if k == 0 { "M" } else { " L" });
            point(&mut out, (px, py), 2.0, s, v);
        }
        if !path.is_empty() {
            let _ = writeln!(
                out,
                r#"<path d="{path}" fill="none" stroke="{}" stroke-width="1.5"/>"#,
                s.color
            );
        }
    }
    legend(&mut out, series.iter().map(|s| (s.name, s.color)));
    out.push_str("</svg>\n");
    out
}

/// A data point of series `s` at `at`, carrying its value for readers of the SVG.
fn point<T>(out: &mut String, at: (f64, f64), r: f64, s: &Series<'_, T>, v: f64) {
    let _ = writeln!(
        out,
        r#"<circle cx="{:.1}" cy="{:.1}" r="{r}" fill="{}" data-series="{}" data-value="{v}"/>"#,
        at.0,
        at.1,
        s.color,
        escape(s.name)
    );
}

fn plot_width() -> f64 {
    WIDTH - LEFT - RIGHT
}

/// The opening tag, title, axes and y ticks.
fn frame(title: &str, y_label: &str, scale: &YScale) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif">"#
    );
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="20" font-size="14" font-weight="bold">{}</text>"#,
        escape(title)
    );
    for i in 0..=5 {
        let v = scale.max * f64::from(i) / 5.0;
        let y = scale.y(v);
        let _ = writeln!(
            out,
            "<line x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\" stroke=\"#ddd\"/>\n\
             <text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            WIDTH - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            tick(v, scale.max / 5.0)
        );
    }
    let _ = writeln!(
        out,
        "<line x1=\"{LEFT}\" y1=\"{TOP}\" x2=\"{LEFT}\" y2=\"{b}\" stroke=\"#333\"/>\n\
         <line x1=\"{LEFT}\" y1=\"{b}\" x2=\"{r}\" y2=\"{b}\" stroke=\"#333\"/>\n\
         <text transform=\"translate(16,{m}) rotate(-90)\" font-size=\"12\" text-anchor=\"middle\">{}</text>",
        escape(y_label),
        b = HEIGHT - BOTTOM,
        r = WIDTH - RIGHT,
        m = (TOP + HEIGHT - BOTTOM) / 2.0
    );
    out
}

#[allow(clippy::too_many_arguments)]
fn rect(out: &mut String, x: f64, y: f64, w: f64, h: f64, color: &str, series: &str, v: f64) {
    let _ = writeln!(
        out,
        r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{h:.1}" fill="{color}" data-series="{}" data-value="{v}"><title>{}: {}</title></rect>"#,
        escape(series),
        escape(series),
        tick(v, v)
    );
}

fn category_label(out: &mut String, x: f64, label: &str) {
    let _ = writeln!(
        out,
        r#"<text x="{x:.1}" y="{:.1}" font-size="11" text-anchor="middle">{}</text>"#,
        HEIGHT - BOTTOM + 16.0,
        escape(label)
    );
}

fn legend<'a>(out: &mut String, entries: impl Iterator<Item = (&'a str, &'a str)>) {
    for (i, (name, color)) in entries.enumerate() {
        let y = TOP + 18.0 * i as f64;
        let x = WIDTH - RIGHT + 14.0;
        let _ = writeln!(
            out,
            r#"<rect x="{x}" y="{y}" width="12" height="12" fill="{color}"/><text x="{}" y="{}" font-size="12">{}</text>"#,
            x + 18.0,
            y + 10.0,
            escape(name)
        );
    }
}

/// A label for `v` with enough decimals to tell multiples of `step` apart.
fn tick(v: f64, step: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if step.is_nan() || step < 1e-9 || !step.is_finite() {
        return format!("{v:.2e}");
    }
    let decimals = (1.0 - step.log10().floor()).max(0.0) as usize;
    format!("{v:.decimals$}")
}

/// Escapes text for SVG/HTML content and attribute values.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
pub(crate) mod tests;
