use super::*;

/// Checks that every element is closed in order (a minimal XML well-formedness check: tags,
/// self-closing tags, and no stray `<` or `&` in text).
pub(crate) fn assert_well_formed(svg: &str) {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(open) = rest.find('<') {
        let text = &rest[..open];
        for (i, _) in text.match_indices('&') {
            let entity = &text[i..];
            assert!(
                ["&amp;", "&lt;", "&gt;", "&quot;"]
                    .iter()
                    .any(|e| entity.starts_with(e)),
                "bare `&` in text: {text}"
            );
        }
        let close = rest[open..].find('>').expect("unterminated tag") + open;
        let tag = &rest[open + 1..close];
        assert!(!tag.contains('<'), "`<` inside a tag: {tag}");
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(
                stack.pop().as_deref(),
                Some(name.trim()),
                "mismatched </{name}>"
            );
        } else if !tag.ends_with('/') && !tag.starts_with('!') {
            let name = tag.split_whitespace().next().expect("tag name");
            stack.push(name.to_string());
        }
        rest = &rest[close + 1..];
    }
    assert!(stack.is_empty(), "unclosed elements: {stack:?}");
}

/// The `(y, height)` of the rect whose `data-series` and `data-value` are given.
fn rect_of(svg: &str, series: &str, value: f64) -> (f64, f64) {
    let needle = format!(r#"data-series="{series}" data-value="{value}""#);
    let line = svg
        .lines()
        .find(|l| l.starts_with("<rect") && l.contains(&needle))
        .unwrap_or_else(|| panic!("no rect {needle} in\n{svg}"));
    (attr(line, "y"), attr(line, "height"))
}

fn attr(line: &str, name: &str) -> f64 {
    let key = format!(" {name}=\"");
    let start = line.find(&key).expect("attribute") + key.len();
    let end = line[start..].find('"').unwrap() + start;
    line[start..end].parse().unwrap()
}

#[test]
fn nice_ceilings() {
    assert_eq!(nice_ceiling(0.0), 1.0);
    assert_eq!(nice_ceiling(1.0), 1.0);
    assert_eq!(nice_ceiling(0.7), 0.8);
    assert_eq!(nice_ceiling(1.3), 1.5);
    assert_eq!(nice_ceiling(3.0), 3.0);
    assert_eq!(nice_ceiling(8.5), 10.0);
    assert!((nice_ceiling(0.0123) - 0.015).abs() < 1e-15);
    assert_eq!(nice_ceiling(f64::NAN), 1.0);
}

#[test]
fn grouped_bars_scale_values_to_the_plot() {
    let svg = grouped_bars(
        "t <&>",
        "seconds",
        &["block".into(), "best".into()],
        &[
            Series {
                name: "predicted",
                color: "#1f77b4",
                values: vec![2.0, 1.0],
            },
            Series {
                name: "actual",
                color: "#ff7f0e",
                values: vec![1.5, 0.5],
            },
        ],
    );
    assert_well_formed(&svg);
    assert!(svg.contains("t &lt;&amp;&gt;"));
    // The maximum 2.0 is already nice: a bar of 2.0 spans the whole plot, 1.0 half of it.
    let plot = HEIGHT - TOP - BOTTOM;
    let (y, h) = rect_of(&svg, "predicted", 2.0);
    assert!((h - plot).abs() < 0.11 && (y - TOP).abs() < 0.11, "{y} {h}");
    let (y, h) = rect_of(&svg, "actual", 0.5);
    assert!((h - plot / 4.0).abs() < 0.11, "{h}");
    assert!(
        (y + h - (HEIGHT - BOTTOM)).abs() < 0.11,
        "bars stand on the axis"
    );
}

#[test]
fn stacked_bars_stack_layers_bottom_to_top() {
    let svg = stacked_bars(
        "breakdown",
        "seconds",
        &["node 0".into()],
        &[
            Series {
                name: "compute",
                color: "#2ca02c",
                values: vec![3.0],
            },
            Series {
                name: "io",
                color: "#d62728",
                values: vec![1.0],
            },
        ],
    );
    assert_well_formed(&svg);
    // Total 4 is a nice scale top; compute from 0 to 3, I/O from 3 to 4.
    let plot = HEIGHT - TOP - BOTTOM;
    let (cy, ch) = rect_of(&svg, "compute", 3.0);
    let (iy, ih) = rect_of(&svg, "io", 1.0);
    assert!((ch - plot * 0.75).abs() < 0.11);
    assert!((ih - plot * 0.25).abs() < 0.11);
    assert!((iy - TOP).abs() < 0.11, "the stack reaches the top");
    assert!((iy + ih - cy).abs() < 0.11, "I/O sits on top of compute");
}

#[test]
fn step_lines_hold_values_between_improvements() {
    let svg = step_lines(
        "convergence",
        "predicted s",
        1.0,
        &[Series {
            name: "gbs",
            color: "#000",
            values: vec![(1e-3, 4.0), (1e-2, 2.0)],
        }],
    );
    assert_well_formed(&svg);
    assert_eq!(svg.matches("<circle").count(), 2);
    assert!(svg.contains(r#"data-value="2""#));
    // The line moves horizontally to the second point before it steps down.
    let path = svg.lines().find(|l| l.starts_with("<path")).unwrap();
    assert_eq!(path.matches(" L").count(), 3, "{path}");
    // Axis runs from 1e-3 s (the left edge) to 1 s (the right edge), one label per decade.
    let label_x = |label: &str| {
        let line = svg
            .lines()
            .find(|l| l.ends_with(&format!(">{label}</text>")))
            .unwrap();
        attr(line, "x")
    };
    assert!((label_x("1e-3 s") - LEFT).abs() < 0.11);
    assert!((label_x("1e0 s") - (WIDTH - RIGHT)).abs() < 0.11);
    assert!((label_x("1e-2 s") - (LEFT + plot_width() / 3.0)).abs() < 0.11);
}

#[test]
fn lines_scale_x_linearly_from_zero() {
    let svg = lines(
        "per iteration",
        "ms",
        "iteration",
        &[
            Series {
                name: "static",
                color: "#000",
                values: vec![(0.0, 10.0), (20.0, 40.0), (40.0, 40.0)],
            },
            Series {
                name: "rebalancer",
                color: "#f00",
                values: vec![(0.0, 10.0), (40.0, 25.0)],
            },
        ],
    );
    assert_well_formed(&svg);
    assert_eq!(svg.matches("<circle").count(), 5);
    assert_eq!(svg.matches("<path").count(), 2);
    let circle = svg
        .lines()
        .find(|l| l.contains(r#"data-series="static""#) && l.contains(r#"data-value="40""#))
        .unwrap();
    assert!((attr(circle, "cx") - (LEFT + plot_width() / 2.0)).abs() < 0.11);
    assert!(svg.contains(">iteration</text>"));
    assert_well_formed(&lines("x", "y", "z", &[]));
}

#[test]
fn tick_labels_resolve_the_step() {
    assert_eq!(tick(0.0, 0.1), "0");
    assert_eq!(tick(0.3, 0.1), "0.30");
    assert_eq!(tick(0.012, 0.004), "0.0120");
    assert_eq!(tick(250.0, 50.0), "250");
}

#[test]
fn empty_inputs_still_render() {
    assert_well_formed(&grouped_bars("x", "y", &[], &[]));
    assert_well_formed(&step_lines("x", "y", 1.0, &[]));
}
