//! `mheta fit RUNS [--family F] [--method ols|nnls] [--json]`: the empirical models of seed 002
//! (Ichikawa et al.: N-T, P-T and NP-T, Table V) fitted to measured runs by OLS and NNLS. The
//! work is `mheta_model::empirical`; this file reads the runs file (shared with `mheta
//! allocate`) and prints.
//!
//! The runs file, `mheta-runs/1` (JSON), names the groups of identical nodes and lists the
//! runs, each a problem size, the processes per group and its seconds per iteration, given as
//! a number or as the `mheta-timings/1` file of the run (its `iteration_s`; a relative path is
//! relative to the runs file):
//!
//! ```json
//! {
//!   "schema": "mheta-runs/1",
//!   "program": "jacobi",
//!   "cluster": "hy1-4",
//!   "groups": [{"name": "fast", "nodes": 2}, {"name": "slow", "nodes": 2}],
//!   "runs": [
//!     {"size": 1000, "allocation": [[2, 1], [0, 0]], "seconds": 0.0123},
//!     {"size": 2000, "allocation": [[1, 2], [0, 0]], "timings": "runs/b.json"}
//!   ]
//! }
//! ```
//!
//! `allocation` is the seed's configuration `(P_1, M_1, …)`: for each group, the nodes used
//! and the processes on each (`[0, 0]` when unused). A run of it on our runtime is a
//! `cluster.toml` with a `[[node]]` table per used group, `count = P_i` and `ranks = M_i`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use mheta_model::empirical::{self, Configuration, Family, Fitted, GroupUse, Method, Run};
use mheta_runtime::format::{Timings, TIMINGS_SCHEMA};
use serde::Deserialize;

/// Schema string of the runs file.
pub const RUNS_SCHEMA: &str = "mheta-runs/1";

#[derive(Debug, clap::Args)]
pub struct FitArgs {
    /// The measured runs (`mheta-runs/1` JSON: `groups` [{name, nodes}] and `runs` [{size,
    /// allocation: [[P_i, M_i], ...], seconds or timings}]).
    #[arg(value_name = "RUNS")]
    pub runs: PathBuf,
    /// The model family of the seed's Table V (himeno, fem, hpl, ffte) or ours (jacobi, cg, pipeline).
    #[arg(long, default_value = "jacobi", value_parser = parse_family)]
    pub family: Family,
    /// Fit by this method only (default: both, OLS then NNLS).
    #[arg(long, value_enum)]
    pub method: Option<MethodArg>,
    /// Print `{"family", "terms": {"nt", "pt", "npt"}, "fits": [{"method", "nt", "pt", "npt",
    /// "skipped"}]}`.
    #[arg(long)]
    pub json: bool,
}

/// `--method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MethodArg {
    /// Ordinary least squares.
    Ols,
    /// Non-negative least squares (Lawson–Hanson).
    Nnls,
}

impl From<MethodArg> for Method {
    fn from(m: MethodArg) -> Method {
        match m {
            MethodArg::Ols => Method::Ols,
            MethodArg::Nnls => Method::Nnls,
        }
    }
}

/// `--family`'s value parser.
pub fn parse_family(s: &str) -> Result<Family, String> {
    s.parse::<Family>().map_err(|e| e.to_string())
}

pub fn run(args: &FitArgs) -> anyhow::Result<()> {
    let runs = RunsFile::load(&args.runs)?;
    let methods = match args.method {
        Some(m) => vec![Method::from(m)],
        None => vec![Method::Ols, Method::Nnls],
    };
    let fits: Vec<Fitted> = methods
        .iter()
        .map(|&m| empirical::fit(&runs.runs, runs.groups.len(), args.family, m))
        .collect();
    if args.json {
        let f = args.family;
        let doc = serde_json::json!({
            "program": runs.program,
            "cluster": runs.cluster,
            "groups": runs.groups.iter().map(|g| &g.name).collect::<Vec<_>>(),
            "family": f,
            "terms": {"nt": f.nt_terms(), "pt": f.pt_terms(), "npt": f.npt_terms()},
            "runs": runs.runs.len(),
            "fits": fits,
        });
        return super::stdout(&format!("{}\n", serde_json::to_string_pretty(&doc)?));
    }
    super::stdout(&render(&runs, &fits))
}

fn render(runs: &RunsFile, fits: &[Fitted]) -> String {
    let mut out = String::new();
    let Some(first) = fits.first() else {
        return out;
    };
    let f = first.family;
    let _ = writeln!(
        out,
        "{} runs of {} on {} ({} groups), family {f}",
        runs.runs.len(),
        runs.program.as_deref().unwrap_or("a program"),
        runs.cluster.as_deref().unwrap_or("a cluster"),
        runs.groups.len()
    );
    let terms = |t: &[&str]| t.join(", ");
    let _ = writeln!(out, "N-T terms:  {}", terms(f.nt_terms()));
    let _ = writeln!(out, "P-T terms:  {}", terms(f.pt_terms()));
    let _ = writeln!(out, "NP-T terms: {}", terms(f.npt_terms()));
    let coefficients = |k: &[f64]| {
        k.iter()
            .map(|v| format!("{v:.4e}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    for fit in fits {
        let _ = writeln!(out, "\n{}:", fit.method.name().to_uppercase());
        let group = |i: usize| runs.groups[i].name.as_str();
        // One line per model: kind, group, configuration, what it was fitted to, error, k.
        let mut model =
            |kind: &str, g: usize, config: String, data: String, error: f64, k: &[f64]| {
                let _ = writeln!(
                    out,
                    "  {kind:<4} {:<8} {config}  {data}  error {:>6.2}%  k = {}",
                    group(g),
                    100.0 * error,
                    coefficients(k)
                );
            };
        for m in &fit.nt {
            let config = format!("P_i={} M_i={}", m.nodes, m.ranks);
            model(
                "N-T",
                m.group,
                config,
                format!("{} runs", m.runs),
                m.fit_error,
                &m.coefficients,
            );
        }
        for m in &fit.pt {
            let config = format!("M_i={}", m.ranks);
            let data = format!("{} points", m.points);
            model("P-T", m.group, config, data, m.fit_error, &m.coefficients);
        }
        for m in &fit.npt {
            let config = format!("M_i={}", m.ranks);
            model(
                "NP-T",
                m.group,
                config,
                format!("{} runs", m.runs),
                m.fit_error,
                &m.coefficients,
            );
        }
        for s in &fit.skipped {
            let nodes = s.nodes.map(|n| format!(" P_i={n}")).unwrap_or_default();
            let _ = writeln!(
                out,
                "  not fitted: {} {}{nodes} M_i={}: {}",
                s.kind.name().to_uppercase(),
                group(s.group),
                s.ranks,
                s.reason
            );
        }
    }
    out
}

/// One group of identical nodes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group {
    /// Its name, for output.
    pub name: String,
    /// How many nodes it has (|G_i|).
    pub nodes: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRuns {
    schema: String,
    #[serde(default)]
    program: Option<String>,
    #[serde(default)]
    cluster: Option<String>,
    groups: Vec<Group>,
    runs: Vec<RawRun>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRun {
    #[serde(default)]
    size: Option<f64>,
    allocation: Vec<[u32; 2]>,
    #[serde(default)]
    seconds: Option<f64>,
    #[serde(default)]
    timings: Option<PathBuf>,
}

/// A checked runs file.
#[derive(Debug)]
pub struct RunsFile {
    /// The program measured, if the file says.
    pub program: Option<String>,
    /// The cluster, if the file says.
    pub cluster: Option<String>,
    /// The groups, in the order of every allocation.
    pub groups: Vec<Group>,
    /// The runs, in file order.
    pub runs: Vec<Run>,
}

impl RunsFile {
    /// Reads and checks a runs file; every error names the file and the field
    /// (`runs[2].allocation[1]`).
    pub fn load(path: &Path) -> anyhow::Result<RunsFile> {
        let file = path.display().to_string();
        let raw: RawRuns = super::read_json(path)?;
        if raw.schema != RUNS_SCHEMA {
            bail!(
                "`{file}`: field `schema` is \"{}\", this mheta reads \"{RUNS_SCHEMA}\"",
                raw.schema
            );
        }
        if raw.groups.is_empty() {
            bail!("`{file}`: field `groups` is empty, expected at least one group of nodes");
        }
        for (i, g) in raw.groups.iter().enumerate() {
            if g.nodes == 0 {
                bail!("`{file}`: field `groups[{i}].nodes` is 0, expected at least one node");
            }
        }
        let dir = path.parent().unwrap_or(Path::new(""));
        let mut runs = Vec::with_capacity(raw.runs.len());
        for (i, r) in raw.runs.iter().enumerate() {
            let field = |name: &str| format!("`{file}`: field `runs[{i}].{name}`");
            if r.allocation.len() != raw.groups.len() {
                bail!(
                    "{} has {} entries, expected one [nodes, ranks] per group ({})",
                    field("allocation"),
                    r.allocation.len(),
                    raw.groups.len()
                );
            }
            let mut uses = Vec::with_capacity(r.allocation.len());
            for (g, (&[nodes, ranks], group)) in r.allocation.iter().zip(&raw.groups).enumerate() {
                let at = field(&format!("allocation[{g}]"));
                if nodes > group.nodes {
                    bail!(
                        "{at} uses {nodes} nodes of group `{}`, which has {}",
                        group.name,
                        group.nodes
                    );
                }
                if (nodes == 0) != (ranks == 0) {
                    bail!(
                        "{at} is [{nodes}, {ranks}]: a group is either unused, [0, 0], or \
                         runs at least one rank on at least one node"
                    );
                }
                uses.push(GroupUse { nodes, ranks });
            }
            let configuration = Configuration(uses);
            if configuration.processes() == 0 {
                bail!(
                    "{} uses no group: expected at least one rank",
                    field("allocation")
                );
            }
            let (size, seconds) = match (&r.seconds, &r.timings) {
                (Some(_), Some(_)) => bail!(
                    "{} and `seconds` are both given: give one",
                    field("timings")
                ),
                (None, None) => bail!(
                    "{} is missing: give the seconds per iteration or the run's timings file",
                    field("seconds")
                ),
                (Some(s), None) => {
                    let Some(size) = r.size else {
                        bail!("{} is missing: the problem size of the run", field("size"));
                    };
                    (size, *s)
                }
                (None, Some(t)) => {
                    let timings = dir.join(t);
                    let (rows, s) =
                        read_timings(&timings, configuration.processes(), &field("timings"))?;
                    if let Some(size) = r.size {
                        if size != rows as f64 {
                            bail!(
                                "{} is {size}, but its timings file `{}` ran {rows} rows",
                                field("size"),
                                timings.display()
                            );
                        }
                    }
                    (rows as f64, s)
                }
            };
            if !(size.is_finite() && size > 0.0) {
                bail!(
                    "{} is {size}, expected a positive problem size",
                    field("size")
                );
            }
            if !(seconds.is_finite() && seconds > 0.0) {
                bail!(
                    "{} is {seconds}, expected positive seconds per iteration",
                    field("seconds")
                );
            }
            runs.push(Run {
                size,
                configuration,
                seconds,
            });
        }
        Ok(RunsFile {
            program: raw.program,
            cluster: raw.cluster,
            groups: raw.groups,
            runs,
        })
    }
}

/// A run's rows and steady seconds per iteration from its `mheta-timings/1` file, which must
/// have `processes` ranks.
fn read_timings(path: &Path, processes: u64, field: &str) -> anyhow::Result<(u64, f64)> {
    let t: Timings = super::read_json(path).with_context(|| field.to_string())?;
    let name = path.display();
    if t.schema != TIMINGS_SCHEMA {
        bail!(
            "{field}: `{name}`: field `schema` is \"{}\", this mheta reads \"{TIMINGS_SCHEMA}\"",
            t.schema
        );
    }
    if t.distribution.len() as u64 != processes {
        bail!(
            "{field}: `{name}` ran {} ranks (field `distribution`), but the allocation has {processes}",
            t.distribution.len()
        );
    }
    if !(t.iteration_s.is_finite() && t.iteration_s > 0.0) {
        bail!(
            "{field}: `{name}`: field `iteration_s` is {}, expected positive seconds",
            t.iteration_s
        );
    }
    Ok((t.rows, t.iteration_s))
}
