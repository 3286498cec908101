//! `mheta bench`: how fast the model evaluates a distribution and how fast each search reaches
//! its best, on synthetic but realistic workloads ([`crate::synthetic`]) of 8, 64, 128
//! and 1024 heterogeneous nodes.
//!
//! Model evaluations are timed on the Jacobi-like workload (mean of many evaluations of random
//! distributions). Searches run on the per-node costs `f_i` of a Jacobi-like workload with many
//! rows per node (the monotone model without blocked time, which GBS and `exact` assume; GA and
//! SA see `max_i f_i` as their objective), so every algorithm is judged against the same,
//! provable optimum: `exact`'s result, cross-checked by brute force where the instance is small
//! enough. The many rows keep the instance non-trivial at 1024 nodes: with few rows, the root's
//! overheads in the star-shaped reduction (2·(P−1) messages) would exceed every other node's
//! cost, and any distribution that leaves the root alone would be optimal.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::{
    annealing, exact, gbs, genetic, greedy, Algorithm, MaxCost, NodeCosts, Rng, SearchConfig,
    SearchResult,
};
use crate::synthetic::{workload, Program};
use crate::{Model, ModelError, Prediction};

/// Settings of one benchmark run.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub nodes: Vec<usize>,
    /// Rows per node of the workloads the model evaluation is timed on.
    pub rows_per_node: u64,
    /// Rows per node of the workloads the searches run on.
    pub search_rows_per_node: u64,
    /// Time budget of every search run.
    pub budget: Duration,
    /// Wall time spent timing model evaluations per node count.
    pub model_time: Duration,
    pub algorithms: Vec<Algorithm>,
    pub seed: u64,
}

impl Default for BenchConfig {
    fn default() -> Self {
        BenchConfig {
            nodes: vec![8, 64, 128, 1024],
            rows_per_node: 512,
            search_rows_per_node: 32_768,
            budget: Duration::from_secs(1),
            model_time: Duration::from_millis(200),
            algorithms: Algorithm::ALL.to_vec(),
            seed: 1,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct ModelEval {
    pub nodes: usize,
    /// Mean seconds per evaluation.
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct SearchEval {
    pub algorithm: &'static str,
    pub nodes: usize,
    /// Seconds until the search first reached its final best.
    pub seconds_to_best: f64,
    /// `(found − optimum) / optimum` of `max_i f_i`.
    pub gap_to_optimum: f64,
}

/// The `bench --json` document.
#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub model_eval: Vec<ModelEval>,
    pub search: Vec<SearchEval>,
}

/// Runs the benchmark.
pub fn run(config: &BenchConfig) -> Result<BenchReport, ModelError> {
    let mut report = BenchReport {
        model_eval: Vec::new(),
        search: Vec::new(),
    };
    for &n in &config.nodes {
        let rows = config.rows_per_node * n as u64;
        let w = workload(Program::Jacobi, n, rows);
        let model = Model::new(&w.structure, &w.measurements, &w.cluster)?;
        report.model_eval.push(ModelEval {
            nodes: n,
            seconds: time_model(&model, config.model_time, config.seed)?,
        });
        let w = workload(Program::Jacobi, n, config.search_rows_per_node * n as u64);
        let model = Model::new(&w.structure, &w.measurements, &w.cluster)?;
        let search_config = SearchConfig {
            budget: config.budget,
            seed: config.seed,
            start: None,
        };
        let optimum = optimum(&model, &search_config);
        for &algorithm in &config.algorithms {
            let result = run_one(&model, algorithm, &search_config);
            report.search.push(SearchEval {
                algorithm: algorithm.name(),
                nodes: n,
                seconds_to_best: result.seconds_to_best(),
                gap_to_optimum: (result.predicted_s - optimum) / optimum,
            });
        }
    }
    Ok(report)
}

/// Mean seconds per `predict_into` over random distributions, for about `budget`.
pub fn time_model(model: &Model, budget: Duration, seed: u64) -> Result<f64, ModelError> {
    let mut rng = Rng::new(seed);
    let candidates: Vec<Vec<u64>> = (0..64)
        .map(|_| rng.composition(model.total_rows(), model.nodes()))
        .collect();
    let mut out = Prediction::default();
    model.predict_into(&candidates[0], &mut out)?;
    let start = Instant::now();
    let mut evaluations = 0u64;
    let mut sink = 0.0;
    while start.elapsed() < budget || evaluations < 10 {
        for c in &candidates {
            model.predict_into(c, &mut out)?;
            sink += out.iteration_s;
        }
        evaluations += candidates.len() as u64;
    }
    std::hint::black_box(sink);
    Ok(start.elapsed().as_secs_f64() / evaluations as f64)
}

fn run_one(model: &Model, algorithm: Algorithm, config: &SearchConfig) -> SearchResult {
    match algorithm {
        Algorithm::Gbs => gbs(model, config),
        Algorithm::Gs => greedy(model, config),
        Algorithm::Exact => exact(model, config),
        Algorithm::Ga => genetic(&mut MaxCost(model), config),
        Algorithm::Sa => annealing(&mut MaxCost(model), config),
    }
}

/// The optimum of `max_i f_i`: `exact`'s value, or brute force when it is cheaper and smaller.
fn optimum<C: NodeCosts + ?Sized>(costs: &C, config: &SearchConfig) -> f64 {
    let by_exact = exact(
        costs,
        &SearchConfig {
            budget: Duration::from_secs(3600),
            ..config.clone()
        },
    )
    .predicted_s;
    match brute_force(costs, 2_000_000) {
        Some(b) => b.min(by_exact),
        None => by_exact,
    }
}

/// The exhaustive optimum of `max_i f_i` when there are at most `limit` distributions
/// (seed Theorem 1: there are C(S + P − 1, P − 1) of them).
pub fn brute_force<C: NodeCosts + ?Sized>(costs: &C, limit: u64) -> Option<f64> {
    let p = costs.nodes();
    let s = costs.total_rows();
    let mut count: u128 = 1;
    for k in 1..p as u128 {
        count = count * (s as u128 + k) / k;
        if count > u128::from(limit) {
            return None;
        }
    }
    let mut best = f64::INFINITY;
    let mut x = vec![0u64; p];
    enumerate(costs, &mut x, 0, s, f64::NEG_INFINITY, &mut best);
    Some(best)
}

fn enumerate<C: NodeCosts + ?Sized>(
    costs: &C,
    x: &mut [u64],
    i: usize,
    left: u64,
    max: f64,
    best: &mut f64,
) {
    if max >= *best {
        return;
    }
    if i + 1 == x.len() {
        x[i] = left;
        *best = best.min(max.max(costs.cost(i, left)));
        return;
    }
    for r in 0..=left {
        x[i] = r;
        let m = max.max(costs.cost(i, r));
        enumerate(costs, x, i + 1, left - r, m, best);
    }
}

impl std::fmt::Display for BenchReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "model evaluation (Jacobi-like):")?;
        for m in &self.model_eval {
            writeln!(f, "  {:>5} nodes  {:>12.3} us", m.nodes, m.seconds * 1e6)?;
        }
        writeln!(f, "search (Jacobi-like, per-node costs f_i):")?;
        for s in &self.search {
            writeln!(
                f,
                "  {:>5} nodes  {:<6} best after {:>10.3} ms  gap {:>9.4}%",
                s.nodes,
                s.algorithm,
                s.seconds_to_best * 1e3,
                s.gap_to_optimum * 100.0
            )?;
        }
        Ok(())
    }
}
