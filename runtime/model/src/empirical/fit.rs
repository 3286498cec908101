//! Fitting N-T, P-T and NP-T models (seed 002 §4.1–4.2) to measured runs.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{dot, Family, Method, ModelKind, Run};

/// An N-T model: one group's time against N for one configuration of it (`nodes` × `ranks`),
/// `T_i(N)|_{P,M_i} = k · family.nt_row(N)`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NtModel {
    /// The group.
    pub group: usize,
    /// Its nodes in use (P_i).
    pub nodes: u32,
    /// Processes per node (M_i).
    pub ranks: u32,
    /// P = P_i M_i.
    pub processes: u64,
    /// k_0, k_1, … in the order of [`Family::nt_terms`].
    pub coefficients: Vec<f64>,
    /// The distinct sizes it was fitted on, ascending.
    pub sizes: Vec<f64>,
    /// The runs it was fitted on.
    pub runs: usize,
    /// Mean of |model − measured| / measured over those runs.
    pub fit_error: f64,
}

/// A P-T model: one group's time against N and P for one M_i, `T_i(N, P)|_{M_i} = k ·
/// family.pt_row(T_b(N), P)` where `T_b` is the group's single-node N-T model
/// ([`Family::pt_row`] says why).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PtModel {
    /// The group.
    pub group: usize,
    /// Processes per node (M_i).
    pub ranks: u32,
    /// The coefficients in the order of [`Family::pt_terms`].
    pub coefficients: Vec<f64>,
    /// The (N, P) points of the N-T models it was fitted to.
    pub points: usize,
    /// Mean of |model − measured| / measured over the runs of the N-T models it integrates.
    pub fit_error: f64,
}

/// An NP-T model: one group's time against N and P for one M_i, `T_i(N, P)|_{M_i} = k ·
/// family.npt_row(N, P)`, fitted to the runs with `P > M_i`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NptModel {
    /// The group.
    pub group: usize,
    /// Processes per node (M_i).
    pub ranks: u32,
    /// The coefficients in the order of [`Family::npt_terms`].
    pub coefficients: Vec<f64>,
    /// The runs it was fitted on.
    pub runs: usize,
    /// Mean of |model − measured| / measured over those runs.
    pub fit_error: f64,
}

/// A model that could not be fitted, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Skipped {
    /// `nt`, `pt` or `npt`.
    pub kind: ModelKind,
    /// The group.
    pub group: usize,
    /// Nodes of the configuration (N-T models only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nodes: Option<u32>,
    /// Processes per node.
    pub ranks: u32,
    /// Why.
    pub reason: String,
}

/// Every model fitted from one set of runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fitted {
    /// The family of every model.
    pub family: Family,
    /// How the coefficients were extracted.
    pub method: Method,
    /// The number of groups.
    pub groups: usize,
    /// N-T models, by group, nodes and ranks.
    pub nt: Vec<NtModel>,
    /// P-T models, by group and ranks.
    pub pt: Vec<PtModel>,
    /// NP-T models, by group and ranks.
    pub npt: Vec<NptModel>,
    /// Models the runs do not determine.
    pub skipped: Vec<Skipped>,
}

/// Fits every N-T, P-T and NP-T model the `runs` determine, over `groups` groups. Only runs
/// that use one group are fitted on (the seed builds its models on homogeneous sub-clusters);
/// a model with fewer runs (points, for P-T) than terms, or whose terms the runs cannot tell
/// apart, is [`Skipped`] with the reason.
pub fn fit(runs: &[Run], groups: usize, family: Family, method: Method) -> Fitted {
    let mut out = Fitted {
        family,
        method,
        groups,
        nt: Vec::new(),
        pt: Vec::new(),
        npt: Vec::new(),
        skipped: Vec::new(),
    };
    // Runs of one group alone, by (group, nodes, ranks).
    let mut by_config: BTreeMap<(usize, u32, u32), Vec<&Run>> = BTreeMap::new();
    for run in runs {
        if run.configuration.0.len() != groups {
            continue;
        }
        if let Some(g) = run.configuration.single_group() {
            let u = run.configuration.0[g];
            by_config
                .entry((g, u.nodes, u.ranks))
                .or_default()
                .push(run);
        }
    }
    for (&(group, nodes, ranks), rs) in &by_config {
        let rows: Vec<Vec<f64>> = rs.iter().map(|r| family.nt_row(r.size)).collect();
        let b: Vec<f64> = rs.iter().map(|r| r.seconds).collect();
        let skip = |reason: String| Skipped {
            kind: ModelKind::Nt,
            group,
            nodes: Some(nodes),
            ranks,
            reason,
        };
        match solve(method, &rows, &b, family.nt_terms()) {
            Ok(k) => {
                let mut sizes: Vec<f64> = rs.iter().map(|r| r.size).collect();
                sizes.sort_by(f64::total_cmp);
                sizes.dedup();
                out.nt.push(NtModel {
                    group,
                    nodes,
                    ranks,
                    processes: u64::from(nodes) * u64::from(ranks),
                    fit_error: fit_error(&k, &rows, &b),
                    coefficients: k,
                    sizes,
                    runs: rs.len(),
                });
            }
            Err(reason) => out.skipped.push(skip(reason)),
        }
    }
    let group_ranks: std::collections::BTreeSet<(usize, u32)> =
        by_config.keys().map(|&(g, _, m)| (g, m)).collect();
    for &(group, ranks) in &group_ranks {
        out.fit_pt(group, ranks, &by_config);
        // NP-T: every run of the group with this M_i and P > M_i.
        let rs: Vec<&Run> = by_config
            .range((group, 2, ranks)..=(group, u32::MAX, ranks))
            .filter(|((_, _, m), _)| *m == ranks)
            .flat_map(|(_, rs)| rs.iter().copied())
            .collect();
        let rows: Vec<Vec<f64>> = rs
            .iter()
            .map(|r| family.npt_row(r.size, r.configuration.processes() as f64))
            .collect();
        let b: Vec<f64> = rs.iter().map(|r| r.seconds).collect();
        match solve(method, &rows, &b, family.npt_terms()) {
            Ok(k) => out.npt.push(NptModel {
                group,
                ranks,
                fit_error: fit_error(&k, &rows, &b),
                coefficients: k,
                runs: rs.len(),
            }),
            Err(reason) => out.skipped.push(Skipped {
                kind: ModelKind::Npt,
                group,
                nodes: None,
                ranks,
                reason: format!("{reason} (runs on 2 or more of its nodes)"),
            }),
        }
    }
    out
}

impl Fitted {
    /// The N-T model of `group` with `processes` processes, `ranks` per node.
    pub fn nt_model(&self, group: usize, processes: u64, ranks: u32) -> Option<&NtModel> {
        self.nt
            .iter()
            .find(|m| m.group == group && m.processes == processes && m.ranks == ranks)
    }

    /// The estimate of `T_i(N, P, M_i)` for `group` by the model of `kind`, or `None` when that
    /// model was not fitted. At `P = M_i` (one node) it is the N-T model's, whatever `kind`.
    pub fn estimate(
        &self,
        kind: ModelKind,
        group: usize,
        n: f64,
        p: u64,
        ranks: u32,
    ) -> Option<f64> {
        let nt = |processes: u64| {
            self.nt_model(group, processes, ranks)
                .map(|m| dot(&m.coefficients, &self.family.nt_row(n)))
        };
        if p == u64::from(ranks) {
            return nt(p);
        }
        match kind {
            ModelKind::Nt => nt(p),
            ModelKind::Pt => {
                let base = nt(u64::from(ranks))?;
                let m = self
                    .pt
                    .iter()
                    .find(|m| m.group == group && m.ranks == ranks)?;
                Some(dot(&m.coefficients, &self.family.pt_row(base, p as f64)))
            }
            ModelKind::Npt => {
                let m = self
                    .npt
                    .iter()
                    .find(|m| m.group == group && m.ranks == ranks)?;
                Some(dot(&m.coefficients, &self.family.npt_row(n, p as f64)))
            }
        }
    }

    /// The P-T model of (`group`, `ranks`): the N-T models with `P > M_i`, at their measured
    /// sizes, against the single-node N-T model.
    fn fit_pt(
        &mut self,
        group: usize,
        ranks: u32,
        by_config: &BTreeMap<(usize, u32, u32), Vec<&Run>>,
    ) {
        let family = self.family;
        let skip = |reason: String| Skipped {
            kind: ModelKind::Pt,
            group,
            nodes: None,
            ranks,
            reason,
        };
        let Some(base) = self.nt_model(group, u64::from(ranks), ranks).cloned() else {
            self.skipped.push(skip(
                "no N-T model of one node to integrate over P (runs on one node at several sizes)"
                    .into(),
            ));
            return;
        };
        let (mut rows, mut b) = (Vec::new(), Vec::new());
        for m in self
            .nt
            .iter()
            .filter(|m| m.group == group && m.ranks == ranks && m.nodes > 1)
        {
            for &n in &m.sizes {
                let t_b = dot(&base.coefficients, &family.nt_row(n));
                rows.push(family.pt_row(t_b, m.processes as f64));
                b.push(dot(&m.coefficients, &family.nt_row(n)));
            }
        }
        let k = match solve(self.method, &rows, &b, family.pt_terms()) {
            Ok(k) => k,
            Err(reason) => {
                self.skipped.push(skip(format!(
                    "{reason} (N-T models' sizes on 2 or more of its nodes)"
                )));
                return;
            }
        };
        // Its error against the runs behind those N-T models.
        let (mut measured_rows, mut measured) = (Vec::new(), Vec::new());
        for ((_, _, _), rs) in by_config
            .range((group, 2, ranks)..=(group, u32::MAX, ranks))
            .filter(|((_, _, m), _)| *m == ranks)
        {
            for r in rs {
                let t_b = dot(&base.coefficients, &family.nt_row(r.size));
                measured_rows.push(family.pt_row(t_b, r.configuration.processes() as f64));
                measured.push(r.seconds);
            }
        }
        self.pt.push(PtModel {
            group,
            ranks,
            fit_error: fit_error(&k, &measured_rows, &measured),
            coefficients: k,
            points: rows.len(),
        });
    }
}

/// Solves with `method`, requiring at least as many equations as terms; the error is a reason
/// a reader can act on.
fn solve(method: Method, rows: &[Vec<f64>], b: &[f64], terms: &[&str]) -> Result<Vec<f64>, String> {
    if rows.len() < terms.len() {
        return Err(format!(
            "{} runs for {} terms ({})",
            rows.len(),
            terms.len(),
            terms.join(", ")
        ));
    }
    method.solve(rows, b).map_err(|e| match e {
        super::lstsq::LstsqError::Dependent { column } => format!(
            "term `{}` cannot be told apart from the others on these runs",
            terms[column]
        ),
        other => other.to_string(),
    })
}

/// Mean relative error of `k · row` against `b`.
fn fit_error(k: &[f64], rows: &[Vec<f64>], b: &[f64]) -> f64 {
    if b.is_empty() {
        return 0.0;
    }
    rows.iter()
        .zip(b)
        .map(|(row, &t)| ((dot(k, row) - t) / t).abs())
        .sum::<f64>()
        / b.len() as f64
}
