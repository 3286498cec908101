//! Distribution searches (seed Ch. 4, DESIGN §7): GBS, GS, GA, SA, and `exact` + `refine`.
//!
//! Every search is *anytime*: it runs until it converges or its time budget is spent, and
//! records a best-so-far trace `(elapsed, predicted)` every time its best improves. Searches
//! work on one of two objectives, so they can be tested on synthetic functions:
//!
//! - [`NodeCosts`]: independent per-node cost functions `f_i(x_i)` (seed §4.2); the objective is
//!   `max_i f_i(x_i)`. GBS, GS and `exact` need this form (they are optimal, or nearly, when
//!   every `f_i` is monotone non-decreasing). [`crate::Model`] provides it without
//!   blocked time.
//! - [`Objective`]: any evaluation of a whole distribution that also reports per-node values;
//!   GA, SA and `refine` use it. [`FullModel`] is the complete MHETA model, blocked time included.
//!
//! Every distribution a search returns is non-negative and sums to S.

pub mod bench;
mod exact;
mod ga;
mod gbs;
mod gs;
mod refine;
pub(crate) mod rng;
mod sa;

use std::time::{Duration, Instant};

use serde::Serialize;

use crate::{Model, Prediction};

pub use exact::exact;
pub use ga::genetic;
pub use gbs::gbs;
pub use gs::greedy;
pub use refine::refine;
pub use rng::Rng;
pub use sa::annealing;

/// Per-node cost functions `f_i(x_i)`.
pub trait NodeCosts {
    fn nodes(&self) -> usize;
    fn total_rows(&self) -> u64;
    /// `f_i(rows)`.
    fn cost(&self, node: usize, rows: u64) -> f64;

    /// `max_i f_i(x_i)`.
    fn max_cost(&self, rows: &[u64]) -> f64 {
        rows.iter()
            .enumerate()
            .map(|(i, &r)| self.cost(i, r))
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

/// An evaluation of whole distributions.
pub trait Objective {
    fn nodes(&self) -> usize;
    fn total_rows(&self) -> u64;
    /// Evaluates `rows`, writing each node's value (its time, for the model) into `per_node`,
    /// and returns the objective (the predicted iteration time).
    fn evaluate(&mut self, rows: &[u64], per_node: &mut [f64]) -> f64;
}

impl NodeCosts for Model {
    fn nodes(&self) -> usize {
        Model::nodes(self)
    }
    fn total_rows(&self) -> u64 {
        Model::total_rows(self)
    }
    fn cost(&self, node: usize, rows: u64) -> f64 {
        self.node_cost(node, rows)
    }
}

/// `max_i f_i(x_i)` as an [`Objective`]: lets GA and SA search the same monotone objective
/// as GBS (per-node values are the `f_i`).
pub struct MaxCost<'a, C: NodeCosts + ?Sized>(pub &'a C);

impl<C: NodeCosts + ?Sized> Objective for MaxCost<'_, C> {
    fn nodes(&self) -> usize {
        self.0.nodes()
    }
    fn total_rows(&self) -> u64 {
        self.0.total_rows()
    }
    fn evaluate(&mut self, rows: &[u64], per_node: &mut [f64]) -> f64 {
        let mut max = f64::NEG_INFINITY;
        for (i, &r) in rows.iter().enumerate() {
            per_node[i] = self.0.cost(i, r);
            max = max.max(per_node[i]);
        }
        max
    }
}

/// The full MHETA model (blocked time included) as an [`Objective`]. Per-node values are each
/// node's busy time (computation, I/O and overheads: its clock minus its blocked time), which
/// is what tells a search which node holds the others up.
pub struct FullModel<'a> {
    model: &'a Model,
    prediction: Prediction,
}

impl<'a> FullModel<'a> {
    pub fn new(model: &'a Model) -> Self {
        FullModel {
            model,
            prediction: Prediction::default(),
        }
    }
}

impl Objective for FullModel<'_> {
    fn nodes(&self) -> usize {
        self.model.nodes()
    }
    fn total_rows(&self) -> u64 {
        self.model.total_rows()
    }
    fn evaluate(&mut self, rows: &[u64], per_node: &mut [f64]) -> f64 {
        match self.model.predict_into(rows, &mut self.prediction) {
            Ok(()) => {
                for (v, n) in per_node.iter_mut().zip(&self.prediction.nodes) {
                    *v = n.total_s - n.blocked_s;
                }
                self.prediction.iteration_s
            }
            Err(_) => f64::INFINITY,
        }
    }
}

/// Search settings shared by all algorithms.
#[derive(Debug, Clone)]
pub struct SearchConfig {
    /// Wall-clock budget.
    pub budget: Duration,
    /// Seed of the random choices (start vectors, GA, SA): equal seeds, equal searches.
    pub seed: u64,
    /// Start vector; a random one when `None` (seed Fig. 4.2 line 1).
    pub start: Option<Vec<u64>>,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            budget: Duration::from_secs(1),
            seed: 1,
            start: None,
        }
    }
}

/// One improvement of the best-so-far.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TracePoint {
    pub elapsed_s: f64,
    pub predicted_s: f64,
}

/// What a search found.
#[derive(Debug, Clone, Serialize)]
pub struct SearchResult {
    pub algorithm: &'static str,
    /// The best distribution found (GEN_BLOCK counts).
    pub rows: Vec<u64>,
    /// Its value under the objective the search used.
    pub predicted_s: f64,
    /// Best-so-far over time.
    pub trace: Vec<TracePoint>,
    pub evaluations: u64,
    pub elapsed_s: f64,
    /// True when the search stopped because it converged, false when the budget ran out.
    pub converged: bool,
}

impl SearchResult {
    /// Seconds from the start until the final best was first reached.
    pub fn seconds_to_best(&self) -> f64 {
        self.trace.last().map(|t| t.elapsed_s).unwrap_or(0.0)
    }
}

impl std::fmt::Display for SearchResult {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "algorithm: {}", self.algorithm)?;
        writeln!(
            f,
            "predicted iteration: {} s",
            crate::prediction::seconds(self.predicted_s)
        )?;
        let rows: Vec<String> = self.rows.iter().map(u64::to_string).collect();
        writeln!(f, "distribution: {}", rows.join(","))?;
        writeln!(
            f,
            "{} evaluations in {:.3} s ({}), best reached after {:.3} s",
            self.evaluations,
            self.elapsed_s,
            if self.converged {
                "converged"
            } else {
                "budget spent"
            },
            self.seconds_to_best()
        )
    }
}

/// The algorithms, by their command-line names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Algorithm {
    Gbs,
    Gs,
    Ga,
    Sa,
    Exact,
}

impl Algorithm {
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Gbs,
        Algorithm::Gs,
        Algorithm::Ga,
        Algorithm::Sa,
        Algorithm::Exact,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Algorithm::Gbs => "gbs",
            Algorithm::Gs => "gs",
            Algorithm::Ga => "ga",
            Algorithm::Sa => "sa",
            Algorithm::Exact => "exact",
        }
    }
}

impl std::str::FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.name() == s)
            .ok_or_else(|| format!("unknown algorithm `{s}` (expected gbs, gs, ga, sa or exact)"))
    }
}

/// Runs `algorithm` on the model: GBS, GS and `exact` on the per-node costs `f_i` followed by
/// `refine` on the full model (blocked time included); GA and SA directly on the full model.
/// The returned `predicted_s` is always the full model's prediction.
pub fn search_model(model: &Model, algorithm: Algorithm, config: &SearchConfig) -> SearchResult {
    let start = Instant::now();
    let mut full = FullModel::new(model);
    let mut result = match algorithm {
        Algorithm::Gbs => gbs(model, config),
        Algorithm::Gs => greedy(model, config),
        Algorithm::Exact => exact(model, config),
        Algorithm::Ga => return genetic(&mut full, config),
        Algorithm::Sa => return annealing(&mut full, config),
    };
    let left = config.budget.saturating_sub(start.elapsed());
    let refined = refine(
        &mut full,
        &result.rows,
        &SearchConfig {
            budget: left,
            ..config.clone()
        },
    );
    let offset = result.elapsed_s;
    result.trace = refined
        .trace
        .iter()
        .map(|t| TracePoint {
            elapsed_s: offset + t.elapsed_s,
            ..*t
        })
        .collect();
    result.rows = refined.rows;
    result.predicted_s = refined.predicted_s;
    result.evaluations += refined.evaluations;
    result.elapsed_s = start.elapsed().as_secs_f64();
    result.converged &= refined.converged;
    result
}

/// Records the best-so-far and the time budget of one search run.
pub(crate) struct Tracker {
    start: Instant,
    budget: Duration,
    best: f64,
    best_rows: Vec<u64>,
    trace: Vec<TracePoint>,
    evaluations: u64,
}

impl Tracker {
    pub fn new(budget: Duration) -> Self {
        Tracker {
            start: Instant::now(),
            budget,
            best: f64::INFINITY,
            best_rows: Vec::new(),
            trace: Vec::new(),
            evaluations: 0,
        }
    }

    pub fn out_of_time(&self) -> bool {
        self.start.elapsed() >= self.budget
    }

    pub fn count(&mut self, evaluations: u64) {
        self.evaluations += evaluations;
    }

    /// Offers a candidate; keeps it if it beats the best so far.
    pub fn offer(&mut self, rows: &[u64], value: f64) -> bool {
        if value < self.best {
            self.best = value;
            self.best_rows.clear();
            self.best_rows.extend_from_slice(rows);
            self.trace.push(TracePoint {
                elapsed_s: self.start.elapsed().as_secs_f64(),
                predicted_s: value,
            });
            true
        } else {
            false
        }
    }

    pub fn best(&self) -> f64 {
        self.best
    }

    pub fn finish(self, algorithm: &'static str, converged: bool) -> SearchResult {
        SearchResult {
            algorithm,
            rows: self.best_rows,
            predicted_s: self.best,
            trace: self.trace,
            evaluations: self.evaluations,
            elapsed_s: self.start.elapsed().as_secs_f64(),
            converged,
        }
    }
}

/// The start vector: the configured one when it is valid, else uniformly random.
pub(crate) fn start_vector(
    config: &SearchConfig,
    nodes: usize,
    total: u64,
    rng: &mut Rng,
) -> Vec<u64> {
    match &config.start {
        Some(s) if s.len() == nodes && s.iter().sum::<u64>() == total => s.clone(),
        _ => rng.composition(total, nodes),
    }
}

#[cfg(test)]
mod tests;
