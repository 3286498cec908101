//! `mheta allocate RUNS --size N [--family F] [--method M] [--model npt|pt|nt] [--json]`: the
//! exhaustive search of seed 002 (Fig. 1) over process allocations with models fitted to the
//! runs (`mheta fit`'s runs file), and, where the runs file (or `--measured`) holds measured
//! runs of the alternatives at that size, the error ε of the choice (§4.1). The work is
//! `mheta_model::empirical`; this file reads and prints.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::bail;
use mheta_model::empirical::{self, Configuration, Family, ModelKind};

use crate::fit::{parse_family, MethodArg, RunsFile};

#[derive(Debug, clap::Args)]
pub struct AllocateArgs {
    /// The measured runs the models are fitted to (`mheta-runs/1`, as `mheta fit` reads).
    #[arg(value_name = "RUNS")]
    pub runs: PathBuf,
    /// The problem size N to allocate processes for.
    #[arg(long)]
    pub size: u64,
    /// The model family (himeno, fem, hpl, ffte of the seed's Table V, or ours, jacobi, cg and pipeline).
    #[arg(long, default_value = "jacobi", value_parser = parse_family)]
    pub family: Family,
    /// How the coefficients are extracted.
    #[arg(long, value_enum, default_value = "nnls")]
    pub method: MethodArg,
    /// Which model estimates a group with more than one node.
    #[arg(long, value_enum, default_value = "npt")]
    pub model: ModelArg,
    /// The most processes per node the search tries (default: the most any run used).
    #[arg(long, value_name = "M")]
    pub max_ranks: Option<u32>,
    /// More measured runs (a runs file with the same groups) of the alternatives, for ε; the
    /// runs of RUNS at `--size` count too. Not fitted on.
    #[arg(long, value_name = "RUNS")]
    pub measured: Option<PathBuf>,
    /// How many of the best estimated configurations to list.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Print `{"size", "optimum": {"configuration", "processes", "seconds", "rows"},
    /// "estimates", "not_estimated", "epsilon"}` (`epsilon` null, with `epsilon_unavailable`,
    /// when the alternatives were not measured).
    #[arg(long)]
    pub json: bool,
}

/// The most configurations `allocate` evaluates (about a second of estimates).
const MAX_CONFIGURATIONS: f64 = 1e7;

/// `--model`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModelArg {
    /// N-T models (only configurations whose P was measured on the group).
    Nt,
    /// P-T models.
    Pt,
    /// NP-T models.
    Npt,
}

impl From<ModelArg> for ModelKind {
    fn from(m: ModelArg) -> ModelKind {
        match m {
            ModelArg::Nt => ModelKind::Nt,
            ModelArg::Pt => ModelKind::Pt,
            ModelArg::Npt => ModelKind::Npt,
        }
    }
}

pub fn run(args: &AllocateArgs) -> anyhow::Result<()> {
    if args.size == 0 {
        bail!("--size is 0, expected a positive problem size");
    }
    let runs = RunsFile::load(&args.runs)?;
    let fitted = empirical::fit(
        &runs.runs,
        runs.groups.len(),
        args.family,
        args.method.into(),
    );
    let max_ranks = args.max_ranks.unwrap_or_else(|| {
        runs.runs
            .iter()
            .flat_map(|r| r.configuration.0.iter().map(|g| g.ranks))
            .max()
            .unwrap_or(1)
    });
    if max_ranks == 0 {
        bail!("--max-ranks is 0, expected at least one process per node");
    }
    let nodes: Vec<u32> = runs.groups.iter().map(|g| g.nodes).collect();
    // Each group is unused or (P_i, M_i) with 1 ≤ P_i ≤ |G_i|, 1 ≤ M_i ≤ max_ranks.
    let configurations = nodes
        .iter()
        .map(|&n| f64::from(n) * f64::from(max_ranks) + 1.0)
        .product::<f64>()
        - 1.0;
    if configurations > MAX_CONFIGURATIONS {
        bail!(
            "`{}`: the groups' nodes (field `groups`) with up to {max_ranks} processes per node \
             make {configurations:.3e} configurations, more than the {MAX_CONFIGURATIONS:e} an \
             exhaustive search tries: lower --max-ranks or use fewer groups",
            args.runs.display()
        );
    }
    let size = args.size as f64;
    let kind = ModelKind::from(args.model);
    let result = empirical::search(&fitted, kind, &nodes, max_ranks, size);

    // The measured alternatives at this size: one time per configuration, the median of its
    // runs.
    let mut measured_runs: Vec<(Configuration, f64)> = runs
        .runs
        .iter()
        .filter(|r| r.size == size)
        .map(|r| (r.configuration.clone(), r.seconds))
        .collect();
    if let Some(path) = &args.measured {
        let more = RunsFile::load(path)?;
        let names = |f: &RunsFile| {
            f.groups
                .iter()
                .map(|g| (g.name.clone(), g.nodes))
                .collect::<Vec<_>>()
        };
        if names(&more) != names(&runs) {
            bail!(
                "`{}`: field `groups` is not the groups of `{}` (same names and nodes, in order)",
                path.display(),
                args.runs.display()
            );
        }
        measured_runs.extend(
            more.runs
                .into_iter()
                .filter(|r| r.size == size)
                .map(|r| (r.configuration, r.seconds)),
        );
    }
    let measured = medians(measured_runs);
    let best = result.best();
    let epsilon = best.map(|b| empirical::epsilon(&b.configuration, b.seconds, &measured));

    if args.json {
        let optimum = best.map(|b| {
            serde_json::json!({
                "configuration": b.configuration,
                "label": b.configuration.to_string(),
                "processes": b.processes,
                "seconds": b.seconds,
                "rows": b.configuration.rows(args.size),
            })
        });
        let (eps, why) = match &epsilon {
            Some(Ok(e)) => (serde_json::to_value(e)?, None),
            Some(Err(e)) => (serde_json::Value::Null, Some(e.to_string())),
            None => (serde_json::Value::Null, Some("no estimate".to_string())),
        };
        let doc = serde_json::json!({
            "size": args.size,
            "family": args.family,
            "method": mheta_model::empirical::Method::from(args.method),
            "model": kind,
            "groups": runs.groups.iter().map(|g| &g.name).collect::<Vec<_>>(),
            "max_ranks": max_ranks,
            "optimum": optimum,
            "estimates": result.estimates.iter().take(args.top).collect::<Vec<_>>(),
            "not_estimated": result.not_estimated,
            "measured": measured.len(),
            "epsilon": eps,
            "epsilon_unavailable": why,
        });
        return super::stdout(&format!("{}\n", serde_json::to_string_pretty(&doc)?));
    }

    let mut out = String::new();
    let groups: Vec<&str> = runs.groups.iter().map(|g| g.name.as_str()).collect();
    let _ = writeln!(
        out,
        "N = {}, {} {} models ({}), groups ({}), up to {max_ranks} processes per node",
        args.size,
        match kind {
            ModelKind::Nt => "N-T",
            ModelKind::Pt => "P-T",
            ModelKind::Npt => "NP-T",
        },
        mheta_model::empirical::Method::from(args.method)
            .name()
            .to_uppercase(),
        args.family,
        groups.join(", ")
    );
    let _ = writeln!(
        out,
        "{} configurations estimated, {} without a fitted model",
        result.estimates.len(),
        result.not_estimated
    );
    let Some(best) = best else {
        bail!(
            "no configuration can be estimated: {}",
            skipped_reasons(&fitted)
        );
    };
    let _ = writeln!(
        out,
        "estimated optimum {}: P = {}, {:.6} s per iteration; rows per rank {:?}",
        best.configuration,
        best.processes,
        best.seconds,
        best.configuration.rows(args.size)
    );
    let _ = writeln!(
        out,
        "\n{:>4}  {:<24}  {:>3}  {:>12}",
        "", "configuration", "P", "estimate s"
    );
    for (i, e) in result.estimates.iter().take(args.top).enumerate() {
        let _ = writeln!(
            out,
            "{:>4}  {:<24}  {:>3}  {:>12.6}",
            i + 1,
            e.configuration.to_string(),
            e.processes,
            e.seconds
        );
    }
    match epsilon {
        Some(Ok(e)) => {
            let _ = writeln!(
                out,
                "\nmeasured: {} alternatives; optimum {} at {:.6} s, the estimated optimum ran \
                 {:.6} s: ε = {:.4} ({:.1}%), δ = {:.4}",
                measured.len(),
                e.optimum,
                e.optimum_s,
                e.chosen_s,
                e.epsilon,
                100.0 * e.epsilon,
                e.delta
            );
        }
        Some(Err(e)) => {
            let _ = writeln!(out, "\nε not available: {e}");
        }
        None => {}
    }
    super::stdout(&out)
}

/// One (configuration, median seconds) per configuration, in first-seen order.
fn medians(runs: Vec<(Configuration, f64)>) -> Vec<(Configuration, f64)> {
    let mut grouped: Vec<(Configuration, Vec<f64>)> = Vec::new();
    for (c, s) in runs {
        match grouped.iter_mut().find(|(g, _)| *g == c) {
            Some((_, v)) => v.push(s),
            None => grouped.push((c, vec![s])),
        }
    }
    grouped
        .into_iter()
        .map(|(c, mut v)| (c, mheta_runtime::stats::median(&mut v)))
        .collect()
}

fn skipped_reasons(f: &mheta_model::empirical::Fitted) -> String {
    if f.skipped.is_empty() {
        return "no runs of a single group".into();
    }
    f.skipped
        .iter()
        .map(|s| {
            format!(
                "{} of group {} (M_i = {}): {}",
                s.kind.name(),
                s.group,
                s.ranks,
                s.reason
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
