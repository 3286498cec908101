//! The `tune --json` document (DESIGN §8, a contract: extra fields are welcome, the listed ones
//! never change) and its human-readable table. `mheta report` reads the same document back.

use std::fmt::Write as _;

use mheta_runtime::format::ClusterSpec;
use serde::{Deserialize, Serialize};

use super::accuracy::{self, Summary};

/// Everything one `mheta tune` run found.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TuneDocument {
    /// The structure the program embeds (`mheta-structure/1`), which the model used.
    pub structure: serde_json::Value,
    /// The cluster the program ran on.
    pub cluster: ClusterSpec,
    /// Every distribution that was run: the chosen one (`best`) and the spectrum.
    pub distributions: Vec<DistributionResult>,
    pub best: Best,
    /// Over `distributions`.
    pub accuracy: Summary,
    /// `wall`, `virtual` or `charged`.
    pub clock: String,
    /// Total rows S.
    pub total_rows: u64,
    /// Iterations of every measured run.
    pub iterations: u32,
    /// How `actual_s` was measured.
    pub actual_method: String,
    /// Per-node breakdown of the model's prediction for the chosen distribution: one steady-state
    /// iteration, where a node waiting for others shows it as blocked time.
    pub best_breakdown: Vec<NodeBreakdown>,
    /// Every search that ran, with its best-so-far trace (the chosen algorithm first).
    pub searches: Vec<SearchSummary>,
    /// Chrome trace of the instrumented run, relative to the document's directory, if kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_file: Option<String>,
    /// What the machine was doing when the tune began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<super::quiet::Load>,
    /// The model's in-core samples, each with every run it made (absent from documents of
    /// earlier versions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub samples: Vec<SampleResult>,
}

/// One of the model's in-core samples: instrumented runs under one distribution that keep
/// their arrays in core, repeated in the rounds of the compared runs until their medians are
/// known (see `tune`'s `Sample::known`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SampleResult {
    /// `block`, `balanced`, … or `refined-N`: which distribution it samples.
    pub name: String,
    pub rows: Vec<u64>,
    /// Iterations of each run, warm-up included.
    pub iterations: u32,
    /// The slowest node's seconds per iteration in each run, in the order they ran.
    pub runs_s: Vec<f64>,
    /// Each node's computation per iteration (its stages added up), the median of its runs.
    pub compute_s: Vec<f64>,
    /// Every node's computation was known to within ±3 % of the median iteration (the 95 %
    /// interval of its median) when the runs stopped.
    pub known: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DistributionResult {
    /// `best`, `block`, `balanced`, `in-core` or `in-core-balanced`.
    pub name: String,
    pub rows: Vec<u64>,
    pub predicted_s: f64,
    pub actual_s: f64,
    /// `1 − |predicted − actual| / min(predicted, actual)`.
    pub accuracy: f64,
    /// Every run's seconds per iteration, in the order they ran (`actual_s` is their median).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs_s: Vec<f64>,
    /// How well those runs agree (`accuracy::repeatability`); absent with a single run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeatability: Option<f64>,
    /// The runs' quartiles and extremes, and how far the prediction lies outside them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<accuracy::Spread>,
    /// Iterations of each of its runs, warm-up included, when tune chose them per distribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iterations: Option<u32>,
}

impl DistributionResult {
    pub fn new(name: &str, rows: Vec<u64>, predicted_s: f64, actual_s: f64) -> Self {
        DistributionResult {
            name: name.to_string(),
            rows,
            predicted_s,
            actual_s,
            accuracy: accuracy::accuracy(predicted_s, actual_s),
            runs_s: Vec::new(),
            repeatability: None,
            spread: None,
            iterations: None,
        }
    }

    /// A distribution measured by `runs_s` (seconds per iteration, in the order they ran): the
    /// actual time is their median.
    pub fn measured(name: &str, rows: Vec<u64>, predicted_s: f64, runs_s: Vec<f64>) -> Self {
        let actual_s = mheta_runtime::stats::median(&mut runs_s.clone());
        DistributionResult {
            repeatability: accuracy::repeatability(&runs_s),
            spread: accuracy::spread(predicted_s, &runs_s),
            runs_s,
            ..DistributionResult::new(name, rows, predicted_s, actual_s)
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Best {
    pub algorithm: String,
    pub rows: Vec<u64>,
    pub predicted_s: f64,
    pub actual_s: f64,
    /// Seconds the search took.
    pub search_s: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SearchSummary {
    pub algorithm: String,
    pub rows: Vec<u64>,
    pub predicted_s: f64,
    pub elapsed_s: f64,
    pub evaluations: u64,
    pub trace: Vec<TracePoint>,
}

/// Where one node spends the predicted iteration (the model's `NodeBreakdown`).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct NodeBreakdown {
    pub total_s: f64,
    pub compute_s: f64,
    pub io_s: f64,
    pub overhead_s: f64,
    pub blocked_s: f64,
}

impl From<&mheta_model::NodeBreakdown> for NodeBreakdown {
    fn from(n: &mheta_model::NodeBreakdown) -> Self {
        NodeBreakdown {
            total_s: n.total_s,
            compute_s: n.compute_s,
            io_s: n.io_s,
            overhead_s: n.overhead_s,
            blocked_s: n.blocked_s,
        }
    }
}

/// One improvement of a search's best-so-far.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TracePoint {
    pub elapsed_s: f64,
    pub predicted_s: f64,
}

impl TuneDocument {
    /// The lowest agreement between repeated runs of one distribution, if any was repeated.
    pub fn repeatability(&self) -> Option<f64> {
        self.distributions
            .iter()
            .filter_map(|d| d.repeatability)
            .reduce(f64::min)
    }

    /// The accuracy summary of `distributions` (1 for an empty list, which tune never writes).
    pub fn summarize(distributions: &[DistributionResult]) -> Summary {
        accuracy::summarize(distributions.iter().map(|d| (d.predicted_s, d.actual_s))).unwrap_or(
            Summary {
                mean: 1.0,
                min: 1.0,
            },
        )
    }

    /// The human-readable result: one line per distribution, then the accuracy and the speedup
    /// of the chosen distribution over Block.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let rows: Vec<String> = self
            .distributions
            .iter()
            .map(|d| rows_list(&d.rows))
            .collect();
        let width = rows.iter().map(String::len).max().unwrap_or(4).max(4);
        let _ = writeln!(
            out,
            "{:<18} {:<width$} {:>13} {:>13} {:>9} {:>25} {:>8}",
            "distribution",
            "rows",
            "predicted (s)",
            "actual (s)",
            "accuracy",
            "runs: q1-q3 (s)",
            "outside"
        );
        for (d, r) in self.distributions.iter().zip(&rows) {
            let (iqr, outside) = match &d.spread {
                Some(s) => (
                    format!("{:.6}-{:.6}", s.q1_s, s.q3_s),
                    if s.outside == 0.0 {
                        "inside".to_string()
                    } else {
                        format!("{:.1}%", 100.0 * s.outside)
                    },
                ),
                None => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                out,
                "{:<18} {:<width$} {:>13.6} {:>13.6} {:>8.2}% {:>25} {:>8}",
                d.name,
                r,
                d.predicted_s,
                d.actual_s,
                100.0 * d.accuracy,
                iqr,
                outside
            );
        }
        let _ = writeln!(
            out,
            "accuracy: mean {:.2}%, min {:.2}% ({} clock, S = {}, {} iterations, actual = {})",
            100.0 * self.accuracy.mean,
            100.0 * self.accuracy.min,
            self.clock,
            self.total_rows,
            self.iterations,
            self.actual_method
        );
        if let Some(r) = self.repeatability() {
            let _ = writeln!(
                out,
                "run-to-run: repeated runs of one distribution agreed to {:.2}% at worst (fastest \
                 run against slowest)",
                100.0 * r
            );
        }
        let spreads: Vec<&accuracy::Spread> = self
            .distributions
            .iter()
            .filter_map(|d| d.spread.as_ref())
            .collect();
        if !spreads.is_empty() {
            let inside = spreads.iter().filter(|s| s.outside == 0.0).count();
            let worst = spreads.iter().map(|s| s.outside).fold(0.0, f64::max);
            let _ = writeln!(
                out,
                "predictions inside their runs' min-max: {inside} of {} (worst {:.1}% outside)",
                spreads.len(),
                100.0 * worst
            );
        }
        if let Some(load) = &self.load {
            let _ = writeln!(out, "{}", load.describe());
        }
        if let Some(block) = self.distributions.iter().find(|d| d.name == "block") {
            if self.best.actual_s > 0.0 {
                let _ = writeln!(
                    out,
                    "best ({}, search {:.1} ms): {:.2}x faster than block (actual)",
                    self.best.algorithm,
                    1e3 * self.best.search_s,
                    block.actual_s / self.best.actual_s
                );
            }
        }
        out
    }
}

/// Row counts as the programs' `--distribution r0,r1,...` takes them.
pub(crate) fn rows_list(rows: &[u64]) -> String {
    rows.iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use mheta_runtime::format::{NetworkSpec, NodeSpec};

    /// A small document with hand-picked numbers (shared with the report's tests).
    pub(crate) fn sample() -> TuneDocument {
        let cluster: ClusterSpec = ClusterSpec {
            network: NetworkSpec {
                latency_s: 60e-6,
                bandwidth_bps: 125e6,
            },
            nodes: vec![node(0.25), node(0.5)],
            loads: Vec::new(),
        };
        let distributions = vec![
            DistributionResult::measured("best", vec![300, 700], 1.0, vec![1.2, 1.1, 1.0]),
            DistributionResult::new("block", vec![500, 500], 2.0, 2.0),
        ];
        TuneDocument {
            structure: serde_json::json!({"schema": "mheta-structure/1"}),
            cluster,
            accuracy: TuneDocument::summarize(&distributions),
            best: Best {
                algorithm: "gbs".into(),
                rows: vec![300, 700],
                predicted_s: 1.0,
                actual_s: 1.1,
                search_s: 0.01,
            },
            distributions,
            clock: "virtual".into(),
            total_rows: 1000,
            iterations: 2,
            actual_method: "instrumented".into(),
            best_breakdown: vec![
                NodeBreakdown {
                    total_s: 1.0,
                    compute_s: 0.5,
                    io_s: 0.25,
                    overhead_s: 0.05,
                    blocked_s: 0.2,
                },
                NodeBreakdown {
                    total_s: 1.0,
                    compute_s: 0.7,
                    io_s: 0.0,
                    overhead_s: 0.05,
                    blocked_s: 0.25,
                },
            ],
            searches: vec![SearchSummary {
                algorithm: "gbs".into(),
                rows: vec![300, 700],
                predicted_s: 1.0,
                elapsed_s: 0.01,
                evaluations: 40,
                trace: vec![
                    TracePoint {
                        elapsed_s: 0.001,
                        predicted_s: 1.5,
                    },
                    TracePoint {
                        elapsed_s: 0.005,
                        predicted_s: 1.0,
                    },
                ],
            }],
            trace_file: Some("trace.json".into()),
            load: None,
            samples: vec![
                SampleResult {
                    name: "block".into(),
                    rows: vec![500, 500],
                    iterations: 4,
                    runs_s: vec![2.0, 2.1, 1.9],
                    compute_s: vec![1.5, 0.75],
                    known: true,
                },
                SampleResult {
                    name: "in-core".into(),
                    rows: vec![200, 800],
                    iterations: 4,
                    runs_s: vec![1.4; 9],
                    compute_s: vec![0.4, 1.2],
                    known: false,
                },
            ],
        }
    }

    fn node(cpu: f64) -> NodeSpec {
        NodeSpec {
            cpu,
            memory_bytes: 12 << 20,
            disk_read_bps: 50e6,
            disk_write_bps: 40e6,
            disk_latency_s: 8e-3,
        }
    }

    #[test]
    fn a_measured_distribution_is_the_median_of_its_runs_kept_in_order() {
        let d = DistributionResult::measured("best", vec![1, 1], 2.0, vec![3.0, 1.0, 2.0]);
        assert_eq!(d.actual_s, 2.0);
        assert_eq!(d.accuracy, 1.0);
        assert_eq!(d.runs_s, vec![3.0, 1.0, 2.0]);
        assert_eq!(d.repeatability, Some(1.0 - 2.0 / 1.0));
    }

    #[test]
    fn json_has_the_contract_keys() {
        let value = serde_json::to_value(sample()).unwrap();
        for key in ["structure", "cluster", "distributions", "best", "accuracy"] {
            assert!(value.get(key).is_some(), "missing `{key}`");
        }
        let d = &value["distributions"][0];
        for key in ["name", "rows", "predicted_s", "actual_s"] {
            assert!(d.get(key).is_some(), "distribution lacks `{key}`");
        }
        for key in ["algorithm", "rows", "predicted_s", "actual_s", "search_s"] {
            assert!(value["best"].get(key).is_some(), "best lacks `{key}`");
        }
        assert!(value["accuracy"]["mean"].is_f64());
        assert!(value["accuracy"]["min"].is_f64());
    }

    #[test]
    fn json_round_trips() {
        let doc = sample();
        let text = serde_json::to_string(&doc).unwrap();
        let back: TuneDocument = serde_json::from_str(&text).unwrap();
        assert_eq!(back.distributions.len(), 2);
        assert_eq!(back.best.rows, vec![300, 700]);
        assert_eq!(back.cluster, doc.cluster);
        assert_eq!(back.samples, doc.samples);
        // A document written before samples were kept reads back with none.
        let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
        old.as_object_mut().unwrap().remove("samples");
        let back: TuneDocument = serde_json::from_value(old).unwrap();
        assert!(back.samples.is_empty());
    }

    #[test]
    fn table_lists_every_distribution_with_its_accuracy() {
        let table = sample().table();
        // best: 1 − 0.1 / 1.0 = 90%; block: exact.
        assert!(table.contains("best"), "{table}");
        assert!(table.contains("300,700"), "{table}");
        assert!(table.contains("90.00%"), "{table}");
        assert!(table.contains("100.00%"), "{table}");
        assert!(table.contains("mean 95.00%, min 90.00%"), "{table}");
        // 2.0 / 1.1.
        assert!(table.contains("1.82x faster than block"), "{table}");
    }
}
