//! `mheta gangsim [--experiment E] [--seed N] [--job DIR --measurements M]... [--json]
//! [--svg FILE]`: the I/O-aware gang scheduler of the seed's Chapter 3
//! (`mheta_model::gang`): average turnaround time and end time of a job mix under Schark and
//! Enhanced mode and the four task-count methods.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use mheta_model::gang::experiment::{self, Experiment, VariantResult};
use mheta_model::gang::{self, bridge, Config, Job, MixSpec, Outcome};
use mheta_model::Model;
use mheta_runtime::format::{ClusterSpec, Measurements, Structure};

use super::report::svg;

#[derive(Debug, clap::Args)]
pub struct GangsimArgs {
    /// Regenerate the rows of one of the thesis's tables: baseline (3.3), cn-range (3.4) or
    /// io-frequency (3.5), beside the thesis's numbers.
    #[arg(long, value_enum, value_name = "E")]
    pub experiment: Option<ExperimentArg>,
    /// With `--experiment` and `--json`: the variant to print (cn-range: half, twice;
    /// io-frequency: half, double).
    #[arg(long, value_name = "V", requires = "experiment")]
    pub variant: Option<String>,
    /// Seed of the generated job mix (Table 3.2).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Generated jobs in the mix (Table 3.2: 100); 0 with `--job` runs the real jobs alone.
    #[arg(long, default_value_t = 100, conflicts_with = "experiment")]
    pub jobs: usize,
    /// `N_S^p`: processors of the simulated machine (§3.3: 128).
    #[arg(long, default_value_t = 128)]
    pub processors: u32,
    /// Generated jobs draw CN from (1, MAX), rounded up to a power of two (default: the
    /// processors).
    #[arg(long, value_name = "MAX", conflicts_with = "experiment")]
    pub cn_max: Option<f64>,
    /// `N_i^iters` of the generated jobs (§3.3: 100).
    #[arg(long, default_value_t = 100, conflicts_with = "experiment")]
    pub iterations: u32,
    /// `T_s^i` of the generated jobs, STU (§3.3: 200).
    #[arg(long, default_value_t = 200.0, conflicts_with = "experiment")]
    pub sequential_time: f64,
    /// `T^s`: the time slice, STU (§3.3: 20).
    #[arg(long, default_value_t = 20.0)]
    pub time_slice: f64,
    /// `T_w^β`: one disk access, STU (§3.3: 2).
    #[arg(long, default_value_t = 2.0)]
    pub io_duration: f64,
    /// A process's context switch in Enhanced mode, STU (not in the thesis; ours: 1).
    #[arg(long, default_value_t = 1.0)]
    pub context_switch: f64,
    /// A process's migration between processors in Enhanced mode, STU (not in the thesis;
    /// ours: 1).
    #[arg(long, default_value_t = 1.0)]
    pub migration: f64,
    /// The most processor combinations the Enhanced placement tries per row.
    #[arg(long, default_value_t = 16)]
    pub max_combinations: usize,
    /// Stop with an error if jobs remain at this simulated time, STU.
    #[arg(long, default_value_t = 10_000_000.0)]
    pub time_limit: f64,
    /// A real program to add to the mix: a crate directory (analyzed as `mheta analyze` does)
    /// or a structure file (`mheta-structure/1`). Repeat for several; each needs a
    /// `--measurements`, in the same order.
    #[arg(long, value_name = "DIR|FILE")]
    pub job: Vec<PathBuf>,
    /// The measurements of one instrumented run of the `--job` at the same position (a
    /// fixture writes them with `--instrument --measurements FILE`).
    #[arg(long, value_name = "FILE")]
    pub measurements: Vec<PathBuf>,
    /// The cluster whose node the real jobs' critical numbers count copies of (default: the
    /// cluster each was measured on).
    #[arg(long, value_name = "FILE", requires = "job")]
    pub cluster: Option<PathBuf>,
    /// The node of the cluster the simulated machine is made of (identical copies of it).
    #[arg(long, default_value_t = 0, requires = "job")]
    pub node: usize,
    /// Seconds of a real job per simulated time unit, e.g. `1ms`.
    #[arg(long, default_value = "1ms", value_parser = parse_seconds, requires = "job")]
    pub stu: f64,
    /// `N_i^iters` of the real jobs (default: the iterations their measurements recorded).
    #[arg(long, value_name = "N", requires = "job")]
    pub job_iterations: Option<u32>,
    /// Print JSON: `{"rows": [{"mode", "method", "att", "end_time"}]}`.
    #[arg(long)]
    pub json: bool,
    /// Also write a bar chart of ATT and end time per mode and method.
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExperimentArg {
    Baseline,
    CnRange,
    IoFrequency,
}

impl From<ExperimentArg> for Experiment {
    fn from(e: ExperimentArg) -> Self {
        match e {
            ExperimentArg::Baseline => Experiment::Baseline,
            ExperimentArg::CnRange => Experiment::CnRange,
            ExperimentArg::IoFrequency => Experiment::IoFrequency,
        }
    }
}

pub fn run(args: &GangsimArgs) -> anyhow::Result<()> {
    let config = Config {
        processors: args.processors,
        time_slice: args.time_slice,
        io_duration: args.io_duration,
        context_switch: args.context_switch,
        migration: args.migration,
        max_combinations: args.max_combinations,
        time_limit: args.time_limit,
        ..Config::default()
    };
    config.check().map_err(flag_error)?;
    let mut real_turnarounds = String::new();
    let results = match args.experiment {
        Some(e) => {
            if !args.job.is_empty() {
                bail!("`--job` adds real jobs to one mix; it cannot go with `--experiment`");
            }
            let e = Experiment::from(e);
            // Refuse a variant that does not exist, or JSON of several, before simulating.
            let names: Vec<&str> = (e.variants(args.processors).iter())
                .map(|(name, _)| *name)
                .collect();
            match &args.variant {
                Some(v) if !names.contains(&v.as_str()) => bail!(
                    "`--variant {v}`: experiment {} has variants {}",
                    e.name(),
                    names.join(", ")
                ),
                None if args.json && names.len() > 1 => bail!(
                    "`--json` prints one mix's rows; experiment {} has several: add `--variant {}`",
                    e.name(),
                    names.join("` or `--variant ")
                ),
                _ => {}
            }
            let results = e.run(args.seed, &config).map_err(flag_error)?;
            (Some(e), results)
        }
        None => {
            let mut jobs = generated(args)?;
            let first_real = jobs.len();
            jobs.extend(real_jobs(args)?);
            if jobs.is_empty() {
                bail!("the mix is empty: `--jobs 0` and no `--job`");
            }
            let rows = gang::simulate_all(&jobs, &config).map_err(flag_error)?;
            if !args.json {
                real_turnarounds = real_table(&jobs, first_real, &rows);
            }
            (
                None,
                vec![VariantResult {
                    variant: "mix",
                    rows,
                }],
            )
        }
    };
    let (experiment, results) = results;
    let shown: Vec<&VariantResult> = results
        .iter()
        .filter(|r| args.variant.as_deref().map_or(true, |v| v == r.variant))
        .collect();
    if let Some(path) = &args.svg {
        super::write_atomic(path, &chart(&shown, experiment))?;
    }
    if args.json {
        let [one] = shown.as_slice() else {
            bail!("`--json` prints one mix's rows: choose one with `--variant`");
        };
        super::stdout(&format!(
            "{}\n",
            serde_json::to_string_pretty(&json(&one.rows))?
        ))?;
    } else {
        super::stdout(&text(&shown, experiment))?;
        super::stdout(&real_turnarounds)?;
    }
    Ok(())
}

/// The JSON document other tools read.
pub fn json(rows: &[Outcome]) -> serde_json::Value {
    serde_json::json!({
        "rows": rows.iter().map(|o| serde_json::json!({
            "mode": o.mode.name(),
            "method": o.method.name(),
            "att": o.att,
            "end_time": o.end_time,
        })).collect::<Vec<_>>()
    })
}

/// A library error about a field, told as the flag that set it.
fn flag_error(e: gang::GangError) -> anyhow::Error {
    let text = e.to_string();
    let flags = [
        ("`processors`", "`--processors`"),
        ("`time_slice`", "`--time-slice`"),
        ("`io_duration`", "`--io-duration`"),
        ("`context_switch`", "`--context-switch`"),
        ("`migration`", "`--migration`"),
        ("`max_combinations`", "`--max-combinations`"),
        ("`time_limit`", "`--time-limit`"),
        ("`stu`", "`--stu`"),
        ("`node`", "`--node`"),
    ];
    let text = flags.iter().fold(text, |t, (field, flag)| {
        t.replace(&format!("field {field}"), &format!("flag {flag}"))
    });
    let text = text.replace("time limit of", "time limit (`--time-limit`) of");
    anyhow::anyhow!(text)
}

/// The generated part of the mix (Table 3.2).
fn generated(args: &GangsimArgs) -> anyhow::Result<Vec<Job>> {
    let cn_max = args.cn_max.unwrap_or(f64::from(args.processors));
    if !(cn_max.is_finite() && cn_max >= 1.0) {
        bail!("flag `--cn-max` is {cn_max}, expected a number at least 1");
    }
    if args.iterations == 0 {
        bail!("flag `--iterations` is 0, expected at least 1");
    }
    if !(args.sequential_time.is_finite() && args.sequential_time > 0.0) {
        bail!(
            "flag `--sequential-time` is {}, expected a positive number of STU",
            args.sequential_time
        );
    }
    Ok(MixSpec {
        jobs: args.jobs,
        sequential_time: args.sequential_time,
        iterations: args.iterations,
        cn_max,
        ..MixSpec::baseline(args.processors)
    }
    .generate(args.seed))
}

/// The real jobs of `--job`, through the model (`gang::bridge`).
fn real_jobs(args: &GangsimArgs) -> anyhow::Result<Vec<Job>> {
    if args.job.len() != args.measurements.len() {
        bail!(
            "{} `--job` but {} `--measurements`: give each job the measurements of one of its \
             runs, in the same order",
            args.job.len(),
            args.measurements.len()
        );
    }
    let cluster = match &args.cluster {
        Some(path) => Some(ClusterSpec::load(path)?),
        None => None,
    };
    let mut jobs = Vec::new();
    for (dir, m) in args.job.iter().zip(&args.measurements) {
        let structure = structure(dir)?;
        let measurements: Measurements = super::read_json(m)?;
        // The checks `mheta predict` makes: schema, digest, row totals, the measured cluster,
        // stages and events the structure has.
        super::predict::consistent(&structure, dir, &measurements, m)?;
        let cluster = cluster
            .clone()
            .unwrap_or_else(|| measurements.cluster.clone());
        let model = Model::new(&structure, &measurements, &cluster).with_context(|| {
            format!(
                "cannot build the model of `{}` from `{}`",
                dir.display(),
                m.display()
            )
        })?;
        let derived = bridge::derive(&model, args.node).map_err(flag_error)?;
        let iterations = args.job_iterations.unwrap_or(measurements.iterations);
        if iterations == 0 {
            bail!(
                "`{}`: field `iterations` is 0; give the job's iterations with \
                 `--job-iterations`",
                m.display()
            );
        }
        let job = derived
            .job(dir.display().to_string(), iterations, args.stu)
            .map_err(flag_error)?;
        eprintln!(
            "{}: CN {} (copies of node {} in core), {:.6} s per iteration on one node, P {:.1} \
             %, {} iterations → T_s {:.1} STU",
            job.name,
            job.critical_number,
            args.node,
            derived.sequential_iteration_s,
            job.percent_parallel,
            iterations,
            job.sequential_time
        );
        jobs.push(job);
    }
    Ok(jobs)
}

/// The turnaround of each real job (`jobs[first_real..]`) under every mode and method.
fn real_table(jobs: &[Job], first_real: usize, rows: &[Outcome]) -> String {
    if first_real >= jobs.len() {
        return String::new();
    }
    let mut out = String::from("\nturnaround of the real jobs:\n");
    let _ = write!(out, "{:<24} {:<9}", "job", "mode");
    for method in gang::Method::ALL {
        let _ = write!(out, " {:>9}", method.name());
    }
    out.push('\n');
    for (j, job) in jobs.iter().enumerate().skip(first_real) {
        for mode in gang::Mode::ALL {
            let _ = write!(out, "{:<24} {:<9}", job.name, mode.name());
            for method in gang::Method::ALL {
                let t = (rows.iter())
                    .find(|o| o.mode == mode && o.method == method)
                    .map_or(f64::NAN, |o| o.turnaround[j]);
                let _ = write!(out, " {t:>9.0}");
            }
            out.push('\n');
        }
    }
    out
}

/// A crate directory, analyzed, or a structure file.
fn structure(path: &Path) -> anyhow::Result<Structure> {
    if path.is_file() {
        return super::read_json(path);
    }
    super::tune::analyze(path).with_context(|| format!("`--job {}`", path.display()))
}

/// The table as text; for an experiment, the thesis's numbers beside ours, with the ratio of
/// each method's ATT to c-based's in the same mode.
fn text(results: &[&VariantResult], experiment: Option<Experiment>) -> String {
    let mut out = String::new();
    let thesis = experiment.map_or(&[][..], experiment::thesis);
    let _ = writeln!(
        out,
        "{:<9} {:<9} {:<9} {:>9} {:>9} {:>8}{}",
        "variant",
        "mode",
        "method",
        "ATT",
        "end",
        "ATT/c",
        if thesis.is_empty() {
            ""
        } else {
            "   thesis ATT   end  ATT/c"
        }
    );
    for r in results {
        for o in &r.rows {
            let c_att = r
                .rows
                .iter()
                .find(|x| x.mode == o.mode && x.method == gang::Method::CBased)
                .map_or(f64::NAN, |x| x.att);
            let _ = write!(
                out,
                "{:<9} {:<9} {:<9} {:>9.0} {:>9.0} {:>8.2}",
                r.variant,
                o.mode.name(),
                o.method.name(),
                o.att,
                o.end_time,
                o.att / c_att
            );
            let find = |method| {
                thesis
                    .iter()
                    .find(|t| t.variant == r.variant && t.mode == o.mode && t.method == method)
            };
            if let Some(t) = find(o.method) {
                let tc = find(gang::Method::CBased).map_or(f64::NAN, |c| c.att);
                let _ = write!(
                    out,
                    "   {:>10.0} {:>5.0} {:>6.2}",
                    t.att,
                    t.end_time,
                    t.att / tc
                );
            } else if !thesis.is_empty() {
                let _ = write!(out, "   {:>10} {:>5} {:>6}", "-", "-", "-");
            }
            out.push('\n');
        }
    }
    out
}

/// Grouped bars: per variant and method, ATT and end time under each mode.
fn chart(results: &[&VariantResult], experiment: Option<Experiment>) -> String {
    let mut categories = Vec::new();
    let mut values: [Vec<f64>; 4] = Default::default();
    for r in results {
        for method in gang::Method::ALL {
            categories.push(if results.len() > 1 {
                format!("{} {}", r.variant, method.name())
            } else {
                method.name().to_string()
            });
            for (k, (mode, end)) in [
                (gang::Mode::Schark, false),
                (gang::Mode::Enhanced, false),
                (gang::Mode::Schark, true),
                (gang::Mode::Enhanced, true),
            ]
            .into_iter()
            .enumerate()
            {
                let o = r.rows.iter().find(|o| o.mode == mode && o.method == method);
                values[k].push(o.map_or(0.0, |o| if end { o.end_time } else { o.att }));
            }
        }
    }
    let [sa, ea, se, ee] = values;
    let series = [
        svg::Series {
            name: "Schark ATT",
            color: "#4c78a8",
            values: sa,
        },
        svg::Series {
            name: "Enhanced ATT",
            color: "#f58518",
            values: ea,
        },
        svg::Series {
            name: "Schark end",
            color: "#9ecae9",
            values: se,
        },
        svg::Series {
            name: "Enhanced end",
            color: "#ffbf79",
            values: ee,
        },
    ];
    let title = match experiment {
        Some(e) => format!("I/O-aware gang scheduling: {} (seed Ch. 3)", e.name()),
        None => "I/O-aware gang scheduling (seed Ch. 3)".to_string(),
    };
    svg::grouped_bars(&title, "STU", &categories, &series)
}

/// Parses a duration such as `1ms` or `0.5s` into seconds (clap value parser).
fn parse_seconds(s: &str) -> Result<f64, String> {
    mheta_runtime::cluster::units::parse_duration(s)
}
