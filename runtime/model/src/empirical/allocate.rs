//! The exhaustive search over process allocations (seed 002, Fig. 1) and the error ε of the
//! configuration it chooses (§4.1).

use serde::Serialize;

use super::{Configuration, Fitted, GroupUse, ModelKind};

/// A configuration and its estimated seconds per iteration, `T = max_i T_i`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// The allocation.
    pub configuration: Configuration,
    /// P.
    pub processes: u64,
    /// The estimate.
    pub seconds: f64,
}

/// What the search found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchResult {
    /// Every configuration the models estimate, fastest first (ties in configuration order).
    pub estimates: Vec<Estimate>,
    /// Configurations left out because a group's model for them was not fitted.
    pub not_estimated: usize,
}

impl SearchResult {
    /// The estimated optimum, if any configuration could be estimated.
    pub fn best(&self) -> Option<&Estimate> {
        self.estimates.first()
    }
}

/// Fig. 1: every configuration with `0 ≤ P_i ≤ nodes[i]` and `1 ≤ M_i ≤ max_ranks` (M_i = 0
/// where P_i = 0), at least one process, estimated as `T = max_i T_i(N, P, M_i)` by the models
/// of `kind`; a configuration some group's model does not cover is counted in
/// `not_estimated`. `nodes` has one entry per group of `fitted`.
pub fn search(
    fitted: &Fitted,
    kind: ModelKind,
    nodes: &[u32],
    max_ranks: u32,
    size: f64,
) -> SearchResult {
    let mut estimates = Vec::new();
    let mut not_estimated = 0;
    let mut config = vec![GroupUse { nodes: 0, ranks: 0 }; nodes.len()];
    loop {
        let c = Configuration(config.clone());
        let p = c.processes();
        if p > 0 {
            let times: Option<Vec<f64>> =
                c.0.iter()
                    .enumerate()
                    .filter(|(_, g)| g.nodes > 0)
                    .map(|(i, g)| fitted.estimate(kind, i, size, p, g.ranks))
                    .collect();
            match times {
                Some(t) => estimates.push(Estimate {
                    processes: p,
                    seconds: t.into_iter().fold(f64::NEG_INFINITY, f64::max),
                    configuration: c,
                }),
                None => not_estimated += 1,
            }
        }
        if !next(&mut config, nodes, max_ranks) {
            break;
        }
    }
    // Stable: equal estimates keep the enumeration order.
    estimates.sort_by(|a, b| a.seconds.total_cmp(&b.seconds));
    SearchResult {
        estimates,
        not_estimated,
    }
}

/// The next configuration in odometer order (group 0 fastest), or false after the last. A
/// group's states: (0, 0), then (1, 1), (1, 2), …, (nodes, max_ranks).
fn next(config: &mut [GroupUse], nodes: &[u32], max_ranks: u32) -> bool {
    for (g, &limit) in config.iter_mut().zip(nodes) {
        if limit == 0 || max_ranks == 0 {
            continue;
        }
        if g.nodes == 0 {
            *g = GroupUse { nodes: 1, ranks: 1 };
            return true;
        }
        if g.ranks < max_ranks {
            g.ranks += 1;
            return true;
        }
        if g.nodes < limit {
            *g = GroupUse {
                nodes: g.nodes + 1,
                ranks: 1,
            };
            return true;
        }
        *g = GroupUse { nodes: 0, ranks: 0 };
    }
    false
}

/// §4.1's error of an estimated optimum, and §5.8's error δ of its estimated time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Epsilon {
    /// The measured optimum (the fastest measured alternative).
    pub optimum: Configuration,
    /// T̂: its measured seconds.
    pub optimum_s: f64,
    /// τ̂: the measured seconds of the estimated optimum.
    pub chosen_s: f64,
    /// ε = (τ̂ − T̂) / T̂.
    pub epsilon: f64,
    /// δ = (τ − τ̂) / τ̂, τ the estimate.
    pub delta: f64,
}

/// Why ε cannot be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EpsilonError {
    /// No measured alternative.
    #[error("no measured run of any alternative at this size")]
    NoAlternatives,
    /// The chosen configuration was not measured.
    #[error("the estimated optimum {0} has no measured run at this size")]
    ChosenNotMeasured(Configuration),
}

/// ε of choosing `chosen` (estimated at `estimate_s`) among the `measured` alternatives, one
/// (configuration, measured seconds) per configuration: T̂ is the least of them, τ̂ the
/// chosen configuration's.
pub fn epsilon(
    chosen: &Configuration,
    estimate_s: f64,
    measured: &[(Configuration, f64)],
) -> Result<Epsilon, EpsilonError> {
    let (optimum, optimum_s) = measured
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .ok_or(EpsilonError::NoAlternatives)?;
    let chosen_s = measured
        .iter()
        .find(|(c, _)| c == chosen)
        .map(|(_, s)| *s)
        .ok_or_else(|| EpsilonError::ChosenNotMeasured(chosen.clone()))?;
    Ok(Epsilon {
        optimum: optimum.clone(),
        optimum_s: *optimum_s,
        chosen_s,
        epsilon: (chosen_s - optimum_s) / optimum_s,
        delta: (estimate_s - chosen_s) / chosen_s,
    })
}
