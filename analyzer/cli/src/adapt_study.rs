//! `mheta adapt-study`: run-time adaptation under load that changes during the run (issue 17,
//! seeds 001 and 004).
//!
//! For each fixture and each cluster whose load changes mid-run (`[[node.load]]`), it asks
//! `mheta tune` for the distribution MHETA picks before the run, for the cluster as it is when
//! the run starts (the load-free cluster the loaded one is named after), then runs the program
//! on the loaded cluster with that distribution: as it is (static), and with each adaptation the
//! fixture supports (`--rebalance`: seed 001's rebalancer; `--flexible`: seed 004's LBlib;
//! `--mmlib`: seed 004's memory-malleable arrays). Every variant runs `--repeat` times,
//! each run a separate process, in rounds over the variants. The table (`README.md`), the cases
//! (`adapt.json`) and one plot per case of the time per iteration over the run (the median over
//! the runs, per iteration) go to `--out`, rewritten after every case. `--json` prints
//! `{"cases": [{"fixture", "cluster", "static_s", "rebalancer_s", "lblib_s", "mmlib_s", ..}]}`:
//! total seconds over the run's iterations, the median over the runs; `null` where a variant
//! does not apply to the fixture.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};
use mheta_runtime::format::Timings;
use serde::{Deserialize, Serialize};

use super::report::svg::{self, Series};
use super::tune::document::TuneDocument;
use super::tune::program::{build, command_line};

#[derive(Debug, clap::Args)]
pub struct AdaptStudyArgs {
    /// Where the table (README.md), adapt.json, the plots and every run's timings go.
    #[arg(long, value_name = "DIR", default_value = "adapt-study")]
    pub out: PathBuf,
    /// The directory holding the fixture crates and `clusters/`.
    #[arg(long, value_name = "DIR", default_value = "fixtures")]
    pub fixtures_dir: PathBuf,
    /// Only these fixtures (comma-separated: jacobi, cg, rna, schwarz) [default: all].
    #[arg(long, value_delimiter = ',')]
    pub fixtures: Vec<String>,
    /// Iterations of every run (the load changes at iteration 10 of the clusters here).
    #[arg(long, value_name = "K", default_value_t = 40)]
    pub iterations: u32,
    /// Runs of every variant, each a separate process, in rounds over the variants.
    #[arg(long, value_name = "R", default_value_t = 5)]
    pub repeat: u32,
    /// Print the cases as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

/// A fixture, the problem size the study runs it at (as `mheta study`), and the adaptations it
/// has: rebalancing its rows (`--rebalance`), a flexible phase balanced by LBlib (`--flexible`).
struct Fixture {
    name: &'static str,
    rows: u64,
    rebalance: bool,
    lblib: bool,
    /// Whether its data are out-of-core arrays, which `--mmlib` makes malleable.
    mmlib: bool,
}

const FIXTURES: [Fixture; 4] = [
    Fixture {
        name: "jacobi",
        rows: 2000,
        rebalance: true,
        lblib: false,
        mmlib: true,
    },
    Fixture {
        name: "cg",
        rows: 200_000,
        rebalance: true,
        lblib: false,
        mmlib: true,
    },
    Fixture {
        name: "rna",
        rows: 8000,
        rebalance: true,
        lblib: false,
        mmlib: true,
    },
    // 16 bytes per row (x and b); its inner phase is flexible.
    Fixture {
        name: "schwarz",
        rows: 100_000,
        rebalance: false,
        lblib: true,
        mmlib: false,
    },
];

/// Clusters whose load changes mid-run, each with the load-free cluster it starts as: the fast
/// node loses CPU (and some memory, which the arrays still fit in), or most of its memory.
const CLUSTERS: [(&str, &str); 2] = [("dc-load-2", "dc-2"), ("dc-mem-2", "dc-2")];

/// The variants: the static distribution, then the adaptations.
const STATIC: &str = "static";
const REBALANCER: &str = "rebalancer";
const LBLIB: &str = "lblib";
const MMLIB: &str = "mmlib";

/// One fixture on one cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Case {
    pub fixture: String,
    pub cluster: String,
    /// The distribution `mheta tune` chose for the load-free cluster.
    pub distribution: Vec<u64>,
    /// Total seconds over the run's iterations, the median over the runs: the distribution as
    /// chosen, unchanged.
    pub static_s: Option<f64>,
    /// The same with seed 001's rebalancer (`--rebalance`); `None` where the fixture has none.
    pub rebalancer_s: Option<f64>,
    /// Seed 004's flexible-phase balancing (`--flexible`); `None` where the fixture has no
    /// flexible phase.
    pub lblib_s: Option<f64>,
    /// Seed 004's memory-adaptive out-of-core arrays (`--mmlib`); `None` where the fixture
    /// keeps no out-of-core arrays.
    pub mmlib_s: Option<f64>,
    /// Every run's total seconds, per variant.
    pub runs_s: BTreeMap<String, Vec<f64>>,
    /// Per variant, each iteration's seconds on the machine (end of the previous iteration to
    /// the end of this one, on the last rank to finish), the median over the runs.
    pub per_iteration_s: BTreeMap<String, Vec<f64>>,
    /// The 1-minute load average when the case's runs began.
    pub load: f64,
    /// Why the case could not be measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Document {
    cases: Vec<Case>,
}

pub fn run(args: &AdaptStudyArgs) -> anyhow::Result<()> {
    let fixtures: Vec<&Fixture> = FIXTURES
        .iter()
        .filter(|f| args.fixtures.is_empty() || args.fixtures.iter().any(|n| n == f.name))
        .collect();
    if fixtures.is_empty() {
        bail!(
            "--fixtures selects none of {}",
            FIXTURES.map(|f| f.name).join(", ")
        );
    }
    if args.repeat == 0 || args.iterations == 0 {
        bail!("--repeat and --iterations must be at least 1");
    }
    for (loaded, base) in CLUSTERS {
        for name in [loaded, base] {
            let file = cluster_file(args, name);
            if !file.is_file() {
                bail!(
                    "--fixtures-dir `{}` has no `clusters/{name}.toml`",
                    args.fixtures_dir.display()
                );
            }
        }
    }
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create `{}`", args.out.display()))?;
    let mheta = std::env::current_exe().context("cannot find the mheta executable")?;
    let mut cases = Vec::new();
    for fixture in &fixtures {
        for (loaded, base) in CLUSTERS {
            let case = match run_case(&mheta, args, fixture, loaded, base) {
                Ok(case) => case,
                Err(e) => Case {
                    fixture: fixture.name.to_string(),
                    cluster: loaded.to_string(),
                    distribution: Vec::new(),
                    static_s: None,
                    rebalancer_s: None,
                    lblib_s: None,
                    mmlib_s: None,
                    runs_s: BTreeMap::new(),
                    per_iteration_s: BTreeMap::new(),
                    load: load_average(),
                    error: Some(format!("{e:#}")),
                },
            };
            eprintln!("adapt-study: {}", line(&case));
            cases.push(case);
            write(&args.out, &cases)?;
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&Document { cases })?);
    }
    Ok(())
}

fn cluster_file(args: &AdaptStudyArgs, name: &str) -> PathBuf {
    args.fixtures_dir
        .join("clusters")
        .join(format!("{name}.toml"))
}

fn run_case(
    mheta: &Path,
    args: &AdaptStudyArgs,
    fixture: &Fixture,
    loaded: &str,
    base: &str,
) -> anyhow::Result<Case> {
    let dir = args.out.join(format!("{}-{loaded}", fixture.name));
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create `{}`", dir.display()))?;
    let crate_dir = args.fixtures_dir.join(fixture.name);
    // The distribution MHETA picks before the run, for the cluster as the run starts.
    let report = dir.join("tune");
    let mut tune = Command::new(mheta);
    tune.arg("tune")
        .arg(&crate_dir)
        .arg("--cluster")
        .arg(cluster_file(args, base))
        .args(["--ranks", "2", "--clock", "wall"])
        .args(["--rows", &fixture.rows.to_string(), "--repeat", "1"])
        .arg("--report")
        .arg(&report);
    let output =
        super::output(&mut tune).with_context(|| format!("cannot run `{}`", mheta.display()))?;
    if !output.status.success() {
        bail!(
            "`{}` failed ({}): {}",
            command_line(&tune),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim_end()
        );
    }
    let doc: TuneDocument = super::read_json(&report.join("tune.json"))?;
    let distribution = doc.best.rows.clone();
    let rows: Vec<String> = distribution.iter().map(u64::to_string).collect();

    let (_build_dir, binary) = build(&crate_dir, &[])?;
    let mut variants = vec![STATIC];
    if fixture.rebalance {
        variants.push(REBALANCER);
    }
    if fixture.lblib {
        variants.push(LBLIB);
    }
    if fixture.mmlib {
        variants.push(MMLIB);
    }
    let load = load_average();
    let mut totals: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let mut iterations: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
    for round in 0..args.repeat {
        for &variant in &variants {
            let timings = dir.join(format!("timings-{variant}-{round}.json"));
            let mut command = Command::new(&binary);
            command
                .args(["--backend", "threads", "--ranks", "2", "--clock", "wall"])
                .arg("--cluster")
                .arg(cluster_file(args, loaded))
                .args(["--rows", &fixture.rows.to_string()])
                .args(["--distribution", &rows.join(",")])
                .args(["--iterations", &args.iterations.to_string()])
                .arg("--timings")
                .arg(&timings);
            match variant {
                REBALANCER => command.arg("--rebalance"),
                LBLIB => command.arg("--flexible"),
                MMLIB => command.arg("--mmlib"),
                _ => &mut command,
            };
            let output = super::output(&mut command)
                .with_context(|| format!("cannot start `{}`", command_line(&command)))?;
            if !output.status.success() {
                bail!(
                    "`{}` failed ({}): {}",
                    command_line(&command),
                    output.status,
                    String::from_utf8_lossy(&output.stderr).trim_end()
                );
            }
            let per_iteration = iteration_seconds(&super::read_json(&timings)?)
                .with_context(|| format!("timings `{}`", timings.display()))?;
            totals
                .entry(variant.to_string())
                .or_default()
                .push(per_iteration.iter().sum());
            iterations
                .entry(variant.to_string())
                .or_default()
                .push(per_iteration);
        }
    }
    let total = |variant: &str| totals.get(variant).map(|runs| median(runs.clone()));
    let per_iteration_s = iterations
        .iter()
        .map(|(variant, runs)| {
            let n = runs.iter().map(Vec::len).min().unwrap_or(0);
            let medians = (0..n)
                .map(|k| median(runs.iter().map(|r| r[k]).collect()))
                .collect();
            (variant.clone(), medians)
        })
        .collect();
    Ok(Case {
        fixture: fixture.name.to_string(),
        cluster: loaded.to_string(),
        distribution,
        static_s: total(STATIC),
        rebalancer_s: total(REBALANCER),
        lblib_s: total(LBLIB),
        mmlib_s: total(MMLIB),
        runs_s: totals,
        per_iteration_s,
        load,
        error: None,
    })
}

/// Each iteration's seconds on the machine (`Timings::machine_iterations_s`): they sum to the
/// run's span, a pipeline's overlapping iterations counted once.
fn iteration_seconds(timings: &Timings) -> anyhow::Result<Vec<f64>> {
    let durations = Timings::machine_iterations_s(&timings.nodes);
    if durations.is_empty() {
        bail!("no iterations recorded");
    }
    Ok(durations)
}

fn median(mut values: Vec<f64>) -> f64 {
    mheta_runtime::stats::median(&mut values)
}

/// The 1-minute load average (0 where it cannot be read).
fn load_average() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0)
}

/// The case's line on stderr.
fn line(case: &Case) -> String {
    match &case.error {
        Some(e) => format!("{} on {}: failed: {e}", case.fixture, case.cluster),
        None => format!(
            "{} on {}: static {}, rebalancer {}, LBlib {}, MMlib {}",
            case.fixture,
            case.cluster,
            seconds(case.static_s),
            seconds(case.rebalancer_s),
            seconds(case.lblib_s),
            seconds(case.mmlib_s)
        ),
    }
}

fn seconds(s: Option<f64>) -> String {
    s.map_or("–".to_string(), |s| format!("{s:.3} s"))
}

/// Writes `README.md`, `adapt.json` and each case's plot.
fn write(out: &Path, cases: &[Case]) -> anyhow::Result<()> {
    let mut table = String::from(
        "# Run-time adaptation (issue 17)\n\n\
         Written by `mheta adapt-study`. Each fixture runs on a cluster whose load changes during \
         the run, with the distribution `mheta tune` picked for the cluster as the run starts: \
         as it is (static) and with each run-time adaptation the fixture has. Times are the \
         total over the run's iterations, the median of separate runs; the plot of each case is \
         the time of each iteration (median over the runs). `–`: the variant does not apply \
         (LBlib needs a flexible phase, which only schwarz has; MMlib, `--mmlib`, out-of-core \
         arrays, which schwarz does not keep).\n\n\
         | fixture | cluster | distribution | static | rebalancer | LBlib | MMlib | runs | load |\n\
         |---|---|---|---:|---:|---:|---:|---|---:|\n",
    );
    for case in cases {
        if let Some(e) = &case.error {
            let _ = writeln!(
                table,
                "| {} | {} | failed: {} | | | | | | |",
                case.fixture,
                case.cluster,
                e.replace('|', "\\|").replace('\n', " ")
            );
            continue;
        }
        let versus = |adapted: Option<f64>| match (case.static_s, adapted) {
            (Some(s), Some(r)) if s > 0.0 => format!(" ({:+.1}%)", (r / s - 1.0) * 100.0),
            _ => String::new(),
        };
        let runs: Vec<String> = case
            .runs_s
            .iter()
            .map(|(variant, runs)| {
                let (lo, hi) = runs.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &r| {
                    (lo.min(r), hi.max(r))
                });
                format!("{variant} {lo:.3}–{hi:.3} s")
            })
            .collect();
        let plot = format!("{}-{}.svg", case.fixture, case.cluster);
        let _ = writeln!(
            table,
            "| {} | [{}]({plot}) | {:?} | {} | {}{} | {}{} | {}{} | {} | {:.2} |",
            case.fixture,
            case.cluster,
            case.distribution,
            seconds(case.static_s),
            seconds(case.rebalancer_s),
            versus(case.rebalancer_s),
            seconds(case.lblib_s),
            versus(case.lblib_s),
            seconds(case.mmlib_s),
            versus(case.mmlib_s),
            runs.join("; "),
            case.load
        );
        let colors = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];
        let series: Vec<Series<'_, Vec<(f64, f64)>>> = case
            .per_iteration_s
            .iter()
            .zip(colors)
            .map(|((variant, times), color)| Series {
                name: variant.as_str(),
                color,
                values: times
                    .iter()
                    .enumerate()
                    .map(|(k, &t)| (k as f64, t * 1e3))
                    .collect(),
            })
            .collect();
        let title = format!("{} on {}: time per iteration", case.fixture, case.cluster);
        super::write_atomic(
            &out.join(&plot),
            &svg::lines(&title, "ms per iteration", "iteration", &series),
        )?;
    }
    super::write_atomic(&out.join("README.md"), &table)?;
    let json = serde_json::to_string_pretty(&Document {
        cases: cases.to_vec(),
    })?;
    super::write_atomic(&out.join("adapt.json"), &(json + "\n"))
}
