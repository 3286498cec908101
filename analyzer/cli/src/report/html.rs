//! The report page: one self-contained HTML file with inline SVG charts.

use std::fmt::Write as _;

use super::svg::{self, escape, Series};
use crate::tune::accuracy::run_range;
use crate::tune::document::TuneDocument;

const PREDICTED: &str = "#4c78a8";
const ACTUAL: &str = "#f58518";
const LAYERS: [(&str, &str); 4] = [
    ("compute", "#54a24b"),
    ("I/O", "#e45756"),
    ("overhead", "#b279a2"),
    ("blocked", "#bab0ac"),
];
const ALGORITHMS: [&str; 6] = [
    "#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2",
];

/// Renders the whole page.
pub fn render(doc: &TuneDocument) -> String {
    let crate_name = doc.structure["crate"].as_str().unwrap_or("program");
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>mheta tune: {name}</title><style>\
         body{{font-family:sans-serif;max-width:800px;margin:24px auto;color:#222}}\
         table{{border-collapse:collapse;margin:8px 0 20px}}\
         td,th{{border-bottom:1px solid #ddd;padding:3px 10px;text-align:right;font-size:13px}}\
         th{{background:#f4f4f4}} td:first-child,th:first-child{{text-align:left}}\
         h2{{font-size:17px;margin-top:28px}} p{{font-size:14px}}</style></head><body>\n\
         <h1>mheta tune: {name}</h1>\n",
        name = escape(crate_name)
    );
    let _ = writeln!(
        out,
        "<p>{} nodes, S = {} rows, {} iterations per run, {} clock. Accuracy \
         (1 − |predicted − actual| / min) over the distributions below: mean <b>{:.2}%</b>, \
         min <b>{:.2}%</b>. Actual time: {}.</p>",
        doc.cluster.nodes.len(),
        doc.total_rows,
        doc.iterations,
        escape(&doc.clock),
        100.0 * doc.accuracy.mean,
        100.0 * doc.accuracy.min,
        escape(&doc.actual_method)
    );
    if let Some(load) = &doc.load {
        let _ = writeln!(
            out,
            "<p>When the runs began, {}.</p>",
            escape(&load.describe())
        );
    }
    distributions_table(&mut out, doc);
    out.push_str("<h2>Predicted and actual time per iteration across the spectrum</h2>\n");
    out.push_str(&spectrum_chart(doc));
    out.push_str("<h2>Where each node spends the chosen distribution's iteration (model)</h2>\n");
    out.push_str(&breakdown_chart(doc));
    out.push_str("<h2>Search convergence (best predicted so far)</h2>\n");
    out.push_str(&convergence_chart(doc));
    samples_table(&mut out, doc);
    cluster_table(&mut out, doc);
    if let Some(trace) = &doc.trace_file {
        let _ = writeln!(
            out,
            "<h2>Trace</h2><p>The instrumented run under Block as a Chrome trace: \
             <a href=\"{t}\">{t}</a> (open it in <code>chrome://tracing</code> or \
             ui.perfetto.dev).</p>",
            t = escape(trace)
        );
    }
    out.push_str("</body></html>\n");
    out
}

fn distributions_table(out: &mut String, doc: &TuneDocument) {
    out.push_str(
        "<table><tr><th>distribution</th><th>rows</th><th>predicted (s)</th>\
         <th>actual (s)</th><th>accuracy</th><th>runs (s)</th><th>run-to-run</th>\
         <th>interquartile range (s)</th><th>prediction vs runs</th></tr>\n",
    );
    for d in &doc.distributions {
        let rows: Vec<String> = d.rows.iter().map(u64::to_string).collect();
        let runs = runs_cell(&d.runs_s);
        let agreement = d
            .repeatability
            .map_or_else(String::new, |r| format!("{:.2}%", 100.0 * r));
        let (iqr, against) = match &d.spread {
            Some(s) if s.outside == 0.0 => {
                (format!("{:.6}–{:.6}", s.q1_s, s.q3_s), "inside".into())
            }
            Some(s) => (
                format!("{:.6}–{:.6}", s.q1_s, s.q3_s),
                format!("{:.1}% outside", 100.0 * s.outside),
            ),
            None => (String::new(), String::new()),
        };
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{:.6}</td><td>{:.6}</td><td>{:.2}%</td><td>{runs}</td>\
             <td>{agreement}</td><td>{iqr}</td><td>{against}</td></tr>",
            escape(&d.name),
            rows.join(", "),
            d.predicted_s,
            d.actual_s,
            100.0 * d.accuracy
        );
    }
    let _ = writeln!(
        out,
        "</table><p>Chosen by <b>{}</b> in {:.1} ms.</p>",
        escape(&doc.best.algorithm),
        1e3 * doc.best.search_s
    );
}

/// Runs' seconds per iteration as a table cell: fastest–slowest and how many.
fn runs_cell(runs_s: &[f64]) -> String {
    match (run_range(runs_s), runs_s.len()) {
        (None, _) => String::new(),
        (Some((only, _)), 1) => format!("{only:.6} (1)"),
        (Some((fastest, slowest)), n) => format!("{fastest:.6}–{slowest:.6} ({n})"),
    }
}

/// Predicted next to actual seconds per iteration, one group per distribution (seed Fig. 6.3).
pub fn spectrum_chart(doc: &TuneDocument) -> String {
    let names: Vec<String> = doc.distributions.iter().map(|d| d.name.clone()).collect();
    svg::grouped_bars(
        "seconds per iteration",
        "seconds",
        &names,
        &[
            Series {
                name: "predicted",
                color: PREDICTED,
                values: doc.distributions.iter().map(|d| d.predicted_s).collect(),
            },
            Series {
                name: "actual",
                color: ACTUAL,
                values: doc.distributions.iter().map(|d| d.actual_s).collect(),
            },
        ],
    )
}

/// The model's per-node breakdown for the chosen distribution, stacked.
pub fn breakdown_chart(doc: &TuneDocument) -> String {
    let nodes: Vec<String> = (0..doc.best_breakdown.len())
        .map(|i| match doc.best.rows.get(i) {
            Some(r) => format!("node {i} ({r})"),
            None => format!("node {i}"),
        })
        .collect();
    let b = &doc.best_breakdown;
    let layers: Vec<Series<'_, Vec<f64>>> = LAYERS
        .iter()
        .enumerate()
        .map(|(k, &(name, color))| Series {
            name,
            color,
            values: b
                .iter()
                .map(|n| [n.compute_s, n.io_s, n.overhead_s, n.blocked_s][k])
                .collect(),
        })
        .collect();
    svg::stacked_bars(
        "predicted seconds per node (rows)",
        "seconds",
        &nodes,
        &layers,
    )
}

/// Best-so-far over time, one line per search.
pub fn convergence_chart(doc: &TuneDocument) -> String {
    let end = doc
        .searches
        .iter()
        .map(|s| s.elapsed_s)
        .fold(1e-6, f64::max);
    let series: Vec<Series<'_, Vec<(f64, f64)>>> = doc
        .searches
        .iter()
        .enumerate()
        .map(|(i, s)| Series {
            name: &s.algorithm,
            color: ALGORITHMS[i % ALGORITHMS.len()],
            values: s
                .trace
                .iter()
                .map(|t| (t.elapsed_s, t.predicted_s))
                .collect(),
        })
        .collect();
    svg::step_lines("best predicted iteration time", "seconds", end, &series)
}

/// The model's in-core samples: every run each made, and whether its nodes' computation was
/// known when they stopped.
fn samples_table(out: &mut String, doc: &TuneDocument) {
    if doc.samples.is_empty() {
        return;
    }
    out.push_str(
        "<h2>The model's in-core samples</h2><p>Instrumented runs that keep the arrays in core, \
         repeated until every node's computation is known to ±3 % of the iteration (the 95 % \
         interval of its median) or the runs reach <code>--max-repeat</code>; the model takes \
         the medians.</p><table><tr><th>sample</th><th>rows</th><th>iterations</th>\
         <th>runs (slowest node, s per iteration)</th><th>median (s)</th>\
         <th>computation per node, median (s)</th><th>known</th></tr>\n",
    );
    for s in &doc.samples {
        let rows: Vec<String> = s.rows.iter().map(u64::to_string).collect();
        let runs = runs_cell(&s.runs_s);
        let median = mheta_runtime::stats::median(&mut s.runs_s.clone());
        let compute: Vec<String> = s.compute_s.iter().map(|c| format!("{c:.6}")).collect();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{runs}</td><td>{median:.6}</td>\
             <td>{}</td><td>{}</td></tr>",
            escape(&s.name),
            rows.join(", "),
            s.iterations,
            compute.join(", "),
            if s.known { "yes" } else { "no" }
        );
    }
    out.push_str("</table>\n");
}

fn cluster_table(out: &mut String, doc: &TuneDocument) {
    out.push_str(
        "<h2>Cluster</h2><table><tr><th>node</th><th>cpu</th><th>memory (MiB)</th>\
         <th>disk read (MB/s)</th><th>disk write (MB/s)</th><th>disk latency (ms)</th></tr>\n",
    );
    for (i, n) in doc.cluster.nodes.iter().enumerate() {
        let _ = writeln!(
            out,
            "<tr><td>{i}</td><td>{}</td><td>{:.1}</td><td>{:.0}</td><td>{:.0}</td><td>{}</td></tr>",
            n.cpu,
            n.memory_bytes as f64 / (1u64 << 20) as f64,
            n.disk_read_bps / 1e6,
            n.disk_write_bps / 1e6,
            n.disk_latency_s * 1e3
        );
    }
    out.push_str("</table>\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::svg::tests::assert_well_formed;
    use crate::tune::document::tests::sample;

    #[test]
    fn page_is_well_formed_and_shows_every_distribution() {
        let doc = sample();
        let page = render(&doc);
        let body = &page[page.find("<html").unwrap()..];
        assert_well_formed(body.replace("<meta charset=\"utf-8\">", "").as_str());
        for d in &doc.distributions {
            assert!(page.contains(&format!("<td>{}</td>", d.name)));
        }
        assert!(page.contains("mean <b>95.00%</b>"), "{page}");
        // The chosen distribution's three runs: their range and agreement 1 − 0.2 / 1.0.
        assert!(
            page.contains("<td>1.000000–1.200000 (3)</td><td>80.00%</td>"),
            "{page}"
        );
        // Their quartiles (1.05 and 1.15), and the prediction 1.0 lies within them.
        assert!(
            page.contains("<td>1.050000–1.150000</td><td>inside</td>"),
            "{page}"
        );
        assert!(page.contains("href=\"trace.json\""));
        // Each in-core sample with all its runs: the range and count, their median, and
        // whether the computation was known.
        assert!(
            page.contains(
                "<tr><td>block</td><td>500, 500</td><td>4</td><td>1.900000–2.100000 (3)</td>\
                 <td>2.000000</td><td>1.500000, 0.750000</td><td>yes</td></tr>"
            ),
            "{page}"
        );
        assert!(
            page.contains("<td>1.400000–1.400000 (9)</td><td>1.400000</td><td>0.400000, 1.200000</td><td>no</td>"),
            "{page}"
        );
        assert_eq!(page.matches("<svg").count(), 3);
    }

    #[test]
    fn breakdown_places_each_component_of_each_node() {
        let svg = breakdown_chart(&sample());
        for v in ["0.5", "0.25", "0.7", "0.2"] {
            assert!(svg.contains(&format!("data-value=\"{v}\"")), "{v} missing");
        }
        assert!(svg.contains("node 1 (700)"));
    }

    #[test]
    fn spectrum_has_one_bar_per_distribution_and_kind() {
        let svg = spectrum_chart(&sample());
        assert_eq!(svg.matches("data-series=\"predicted\"").count(), 2);
        assert_eq!(svg.matches("data-series=\"actual\"").count(), 2);
        assert!(svg.contains("data-value=\"1.1\""));
    }
}
