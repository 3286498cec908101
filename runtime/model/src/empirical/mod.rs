//! Empirical execution-time models and process allocation (seed 002: Ichikawa et al.,
//! `002_c8a418cc8cc4fee2.txt`), the black-box alternative to the MHETA model: time measured
//! over configurations and sizes, fitted by least squares, then an exhaustive search over
//! process allocations.
//!
//! - A cluster is a list of *groups* (the seed's sub-clusters G_i: identical nodes). A
//!   [`Configuration`] gives each group the nodes it uses and the processes on each (the seed's
//!   `(P_1, M_1, …, P_Γ, M_Γ)`); `P = Σ P_i M_i`.
//! - [`fit`] builds, per group, from runs that use that group alone (the seed fits on
//!   homogeneous sub-clusters): N-T models per configuration, P-T models per `M_i` integrating
//!   the N-T models, and NP-T models per `M_i`, each by OLS or NNLS ([`lstsq`]) in a [`Family`]
//!   of Table V.
//! - [`search`] is the seed's Fig. 1: for every configuration, `T = max_i T_i(N, P, M_i)`, the
//!   least is the estimated optimum; [`epsilon`] is §4.1's error of that choice given measured
//!   times of the alternatives.
//!
//! The data are divided as our programs divide them: a configuration runs `P` ranks, the
//! nodes of each group in turn and a node's ranks one after the other, under the Block
//! distribution (equal rows per rank, [`Configuration::rows`]), as the seed's benchmarks divide
//! theirs equally per process; so a fast node that runs more processes gets more of the data.

mod allocate;
pub mod family;
mod fit;
pub mod lstsq;

use std::fmt;

use serde::Serialize;

pub use allocate::{epsilon, search, Epsilon, EpsilonError, Estimate, SearchResult};
pub use family::Family;
pub use fit::{fit, Fitted, NptModel, NtModel, PtModel, Skipped};

/// How a group of identical nodes is used: `nodes` of them (the seed's P_i), each running
/// `ranks` processes (M_i); both 0 when the group is not used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct GroupUse {
    /// Nodes of the group in use (P_i).
    pub nodes: u32,
    /// Processes on each of them (M_i).
    pub ranks: u32,
}

/// A process allocation: one [`GroupUse`] per group, in the groups' order.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Configuration(pub Vec<GroupUse>);

impl Configuration {
    /// P = Σ P_i M_i, the processes of the job.
    pub fn processes(&self) -> u64 {
        self.0
            .iter()
            .map(|g| u64::from(g.nodes) * u64::from(g.ranks))
            .sum()
    }

    /// The one group the configuration uses, if it uses exactly one.
    pub fn single_group(&self) -> Option<usize> {
        let mut used = self.0.iter().enumerate().filter(|(_, g)| g.nodes > 0);
        match (used.next(), used.next()) {
            (Some((i, _)), None) => Some(i),
            _ => None,
        }
    }

    /// Rows per rank of a problem of `size` rows, as the program divides them (Block over the
    /// P ranks: the first `size mod P` ranks one more), ranks in group order.
    pub fn rows(&self, size: u64) -> Vec<u64> {
        // No processes: no rows.
        mheta_runtime::distribution::Distribution::block(size, self.processes() as usize)
            .map(|d| d.rows)
            .unwrap_or_default()
    }
}

impl fmt::Display for Configuration {
    /// The seed's notation, `(P_1, M_1, P_2, M_2, …)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("(")?;
        for (i, g) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}, {}", g.nodes, g.ranks)?;
        }
        f.write_str(")")
    }
}

/// One measured run: a configuration at a problem size, and its seconds per iteration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Run {
    /// The problem size N (rows of the distributed dimension).
    pub size: f64,
    /// The processes per group it ran with.
    pub configuration: Configuration,
    /// Seconds per iteration in the steady state.
    pub seconds: f64,
}

/// How the coefficients are extracted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// Ordinary least squares (the seed's LS).
    Ols,
    /// Non-negative least squares (Lawson–Hanson), which the seed finds far better (§5.7).
    Nnls,
}

impl Method {
    /// Solves the system with this method.
    pub fn solve(self, rows: &[Vec<f64>], b: &[f64]) -> Result<Vec<f64>, lstsq::LstsqError> {
        match self {
            Method::Ols => lstsq::ols(rows, b),
            Method::Nnls => lstsq::nnls(rows, b),
        }
    }

    /// `ols` or `nnls`.
    pub fn name(self) -> &'static str {
        match self {
            Method::Ols => "ols",
            Method::Nnls => "nnls",
        }
    }
}

/// Which of the fitted models estimates a group's time `T_i(N, P, M_i)` for `P > M_i` (at
/// `P = M_i`, a single node, every kind uses the N-T model, as the seed does).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// The N-T model of the configuration of the group with P processes (only where one was
    /// fitted).
    Nt,
    /// The group's P-T model for M_i.
    Pt,
    /// The group's NP-T model for M_i.
    Npt,
}

impl ModelKind {
    /// `nt`, `pt` or `npt`.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Nt => "nt",
            ModelKind::Pt => "pt",
            ModelKind::Npt => "npt",
        }
    }
}

fn dot(k: &[f64], row: &[f64]) -> f64 {
    k.iter().zip(row).map(|(a, b)| a * b).sum()
}

#[cfg(test)]
mod tests;
