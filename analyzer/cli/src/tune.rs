//! `mheta tune CRATE --cluster C [...] [-- PROGRAM ARGS]`: the whole loop (DESIGN §8).
//!
//! 1. analyze the crate;
//! 2. `cargo build --release` its binary;
//! 3. run it instrumented under Block with every array forced out of core ([`FORCED_RUNS`]
//!    times, keeping the median run), then with in-core arrays kept in core under
//!    In-Core-Balanced and In-Core;
//! 4. search for the best distribution with the model; sample a chosen distribution that
//!    would give the model a new in-core sample, and search again (at most [`REFINEMENTS`]
//!    times);
//! 5. run the chosen distribution and the spectrum Block / Balanced / In-Core /
//!    In-Core-Balanced for K iterations each, `--repeat` times in rounds, with the in-core
//!    samples of steps 3–4 repeated in the same rounds; predict each with the model built from
//!    all the samples, and answer with the one it predicts fastest (the search's pick unless
//!    another is predicted faster; it then stays in the table as `searched`);
//! 6. print a table (or the `--json` document) and, with `--report DIR`, an HTML report.
//!
//! "Actual" seconds per iteration ([`ActualMethod`]): by default an uninstrumented run of K
//! iterations writes its own iteration times on its own clock (`--timings`, `mheta-timings/1`),
//! and the steady-state figure leaves out the warm-up iterations, as the model's measurements
//! do. This works on every clock and backend, and only the main loop is timed (not start-up,
//! set-up or a fixture's final check). Two older methods remain selectable: `timed` (wall clock
//! only: two runs of 1 and K+1 iterations timed from outside, their difference over K) and
//! `instrumented` (the instrumented run's slowest-node `iteration_s`, biased: an instrumented run
//! forces in-core arrays through the disk, seed §5.2.2).

pub mod accuracy;
pub mod document;
pub mod launch;
pub mod program;
mod progress;
pub mod quiet;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};
use mheta_model::search::{self, Algorithm, SearchConfig, SearchResult};
use mheta_model::{self as model, Model};
use mheta_runtime::cleanup::{DirLock, LockError, OwnedDir};
use mheta_runtime::distribution::Distribution;
use mheta_runtime::format::{Measurements, Structure, Timings};
use mheta_runtime::{Backend, ClockMode};

use document::{
    rows_list, Best, DistributionResult, NodeBreakdown, SampleResult, SearchSummary, TracePoint,
    TuneDocument,
};
use launch::Launcher;
use program::{Interface, Program, RunSpec};
use progress::Progress;

#[derive(Debug, clap::Args)]
pub struct TuneArgs {
    /// The program's crate directory (with Cargo.toml and one binary).
    #[arg(value_name = "CRATE")]
    pub crate_dir: PathBuf,
    /// The cluster description (cluster.toml) to run on and tune for.
    #[arg(long, value_name = "FILE")]
    pub cluster: PathBuf,
    /// Number of ranks [default: the cluster's node count].
    #[arg(long, value_name = "P")]
    pub ranks: Option<usize>,
    /// Where the program's ranks run: threads of one process, or MPI processes under --mpirun
    /// (the program is then built with its `mpi` feature).
    #[arg(long, value_enum, default_value_t = Backend::Threads)]
    pub backend: Backend,
    /// The MPI launcher of every run, e.g. "mpirun -np 4 --oversubscribe" (split like a shell;
    /// its process count and --ranks must agree) [default: mpirun -np P].
    #[arg(long, value_name = "COMMAND")]
    pub mpirun: Option<String>,
    /// The clock of every run: wall, virtual or charged.
    #[arg(long, value_enum, default_value_t = ClockMode::Wall)]
    pub clock: ClockMode,
    /// Rows S of the distributed dimension [default: the program's].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub rows: Option<u64>,
    /// Iterations of every compared run [default: per distribution, enough that each run's
    /// steady state (warm-up left out) lasts at least 0.2 s by the model's prediction, and at
    /// least 3]. The instrumented model run always runs 6; those that keep arrays in core run
    /// as long as a compared run, at least 10 (`in_core_iterations`).
    #[arg(long, value_name = "K")]
    pub iterations: Option<u32>,
    /// Runs of every compared distribution, each a separate process; its actual time is their
    /// median, and tune.json keeps every run with their quartiles and extremes. Runs go in
    /// rounds (every distribution once, then again), so a slow spell of the machine does not
    /// fall on one distribution only. The instrumented runs that keep arrays in core (the
    /// model's samples) run in the same rounds (no more once they measured 2 s and every node's
    /// computation is known to ±3 % of the iteration; up to --max-repeat runs, in rounds of
    /// their own once the compared runs are done); the model takes the median of their
    /// computation at each row count, and predicts the compared runs with every sample.
    #[arg(long, value_name = "R", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: u32,
    /// Runs of every compared distribution at most: after the --repeat rounds, more rounds run
    /// while some distribution's median is not known to within ±3 % (its 95 % confidence
    /// interval, from the runs' order statistics, is wider), until this many [default:
    /// --repeat, no more rounds]. Also the most runs of an in-core sample whose nodes'
    /// computation is not known to within ±3 % of its iteration. Longer cases see more of the
    /// machine's drift: on this VM, jacobi on dc-2 went to 15 runs and Block's later runs took
    /// 20 ms where its first took 16-17 (the model, sampled in the first rounds, predicted
    /// 17.2).
    #[arg(long, value_name = "R", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_repeat: Option<u32>,
    /// How long to wait, after the build, for a quiet machine (load average below the core
    /// count, no other process above 10% of a core) before measuring; tune then goes on either
    /// way and records the load in tune.json and the report. `0s` does not wait, nor does a
    /// run on the charged clock, which counts no CPU time.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = super::parse_budget)]
    pub wait_quiet: Duration,
    /// Search algorithm: gbs, gs, ga, sa or exact.
    #[arg(long, default_value = "gbs", value_parser = parse_algorithm)]
    pub algorithm: Algorithm,
    /// Search time budget, e.g. `1s`, `250ms`.
    #[arg(long, default_value = "1s", value_parser = super::parse_budget)]
    pub budget: Duration,
    /// Seed of the searches' random choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// How actual times are measured [default: timings, on every clock].
    #[arg(long, value_enum)]
    pub actual: Option<ActualMethod>,
    /// Print the result as JSON (DESIGN §8) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Write tune.json, the measurements, the Chrome trace and an HTML report (index.html) to
    /// DIR; every search algorithm then runs, for the convergence plot.
    #[arg(long, value_name = "DIR")]
    pub report: Option<PathBuf>,
    /// Extra arguments for the program (after `--`), e.g. `-- --cols 500`.
    #[arg(last = true, value_name = "PROGRAM ARGS")]
    pub program_args: Vec<String>,
}

/// Iterations of the instrumented run the model is built from: the first two are a warm-up the
/// measurements leave out (`format::warm_up_iterations`), and four more are averaged. Their
/// number is even, so an array pair that swaps roles each iteration (Jacobi's A and B) is seen
/// as often read as written.
pub const MODEL_ITERATIONS: u32 = 6;

/// Instrumented runs under Block with every array forced out of core that the model is built
/// from (fewer when `--repeat` is lower): their median by iteration time. The model takes these
/// runs' computation for every node it predicts out of core and their I/O rates for all, and
/// one run is one sample of a noisy machine: one of jacobi-prefetch on sliver-2 measured its
/// relaxation at 11.7 ms per iteration where runs measure 1.8–3.7 ms, and the model predicted
/// Block 12 % slow.
pub const FORCED_RUNS: u32 = 3;

/// Whether the compared runs go on after `rounds` rounds whose runs of each distribution are
/// `runs`: always up to `repeat` rounds, then while the median of some distribution is not known
/// to [`MEDIAN_PRECISION`], up to `max_repeat`.
fn another_round<'r>(
    rounds: u32,
    repeat: u32,
    max_repeat: u32,
    mut runs: impl Iterator<Item = &'r [f64]>,
) -> bool {
    rounds < repeat
        || (rounds < max_repeat && !runs.all(|r| accuracy::median_known(r, MEDIAN_PRECISION)))
}

/// The most runs of a compared distribution: `--max-repeat`, or its default `--repeat` (no
/// rounds beyond those); an error when it is below `--repeat` (`mheta study` passes both on).
pub fn max_repeat(repeat: u32, max_repeat: Option<u32>) -> anyhow::Result<u32> {
    match max_repeat {
        Some(max) if max < repeat => bail!(
            "--max-repeat {max} is below --repeat {repeat}: it is the most runs of a \
             distribution, --repeat the fewest"
        ),
        Some(max) => Ok(max),
        None => Ok(repeat),
    }
}

/// The item of `items` (not empty) whose `key` is the median (the lower middle one of an even
/// count).
fn median_by<T>(mut items: Vec<T>, key: impl Fn(&T) -> f64) -> T {
    items.sort_by(|a, b| key(a).total_cmp(&key(b)));
    let middle = (items.len() - 1) / 2;
    items.swap_remove(middle)
}

/// Iterations of each instrumented run that keeps arrays in core, at least: cheap runs, so
/// more steady iterations (eight) to average out noise; even, for the same reason as
/// `MODEL_ITERATIONS`. Runs of faster iterations run longer ([`in_core_iterations`]).
pub const IN_CORE_ITERATIONS: u32 = 10;

/// At most this many steady iterations per instrumented in-core run (its records are kept in
/// memory until the run ends).
pub const MAX_IN_CORE_STEADY: u32 = 2_000;

/// Iterations of an instrumented in-core run whose steady iterations are estimated at
/// `iteration_s`: a steady state as long as a compared run's ([`MIN_STEADY_S`], so that the
/// model's sample and the runs it predicts see the same machine), an even number of steady
/// iterations, never fewer than [`IN_CORE_ITERATIONS`] in all. Short runs measured the first
/// iterations after the warm-up, which are still slow: Lanczos at 400 and 1600 rows on dc-2
/// measured 5.7–9.8 ms per iteration in runs of 10 and 3.4–3.6 ms in runs of 42.
pub fn in_core_iterations(iteration_s: f64) -> u32 {
    let floor = IN_CORE_ITERATIONS - warm_up(IN_CORE_ITERATIONS);
    run_of(iteration_s, MAX_IN_CORE_STEADY, floor)
}

/// Times at most that `tune` samples the chosen distribution in core and searches again.
pub const REFINEMENTS: u32 = 2;

/// How precisely the compared runs' medians are to be known: with `--max-repeat` above
/// `--repeat`, more rounds run while a median's 95 % interval reaches further than this
/// fraction of it on either side (`accuracy::median_known`). Runs that agree to 94 % meet it in
/// five runs; the bimodal runs of a shared host (jacobi-prefetch on net-2: 7.0 or 8.6 ms
/// whatever the distribution, switching modes mid-process) need more before their medians
/// tell distributions apart.
pub const MEDIAN_PRECISION: f64 = 0.03;

/// Measured seconds after which `--repeat` runs an in-core model sample no more.
pub const REPEAT_SECONDS: f64 = 2.0;

/// The shortest steady state (seconds, warm-up left out) of a compared run when tune chooses
/// its iterations: long enough that timer resolution and one-off stalls do not decide it.
pub const MIN_STEADY_S: f64 = 0.2;

/// At most this many iterations per compared run when tune chooses them.
pub const MAX_ITERATIONS: u32 = 100_000;

/// Iterations of a compared run whose steady iterations take `iteration_s` each: enough for
/// [`MIN_STEADY_S`], at least 4 (4 is also the count for a run that cannot be timed), rounded
/// up to an even number as the timings keep (`format::warm_up_iterations`: arrays that swap
/// roles every iteration are measured as often in each role), plus the fewest warm-up
/// iterations the timings leave out (a run whose durations show a longer warm-up keeps fewer
/// steady ones, `format::warm_up`).
pub fn iterations_for(iteration_s: f64) -> u32 {
    run_of(iteration_s, MAX_ITERATIONS, 4)
}

/// The iterations of a run whose steady state is [`steady_for`] (at most `cap`, at least
/// `floor`, `floor` when the time is unknown) rounded up to an even number, plus the fewest
/// warm-up iterations that leave it. `cap` is even.
fn run_of(iteration_s: f64, cap: u32, floor: u32) -> u32 {
    let steady = steady_for(iteration_s, cap)
        .unwrap_or(floor)
        .max(floor)
        .next_multiple_of(2);
    steady + steady_to_run(steady)
}

/// Steady iterations of `iteration_s` seconds that last [`MIN_STEADY_S`], at most `cap`;
/// `None` when the time is not a positive number (a run that could not be timed).
fn steady_for(iteration_s: f64, cap: u32) -> Option<u32> {
    (iteration_s.is_finite() && iteration_s > 0.0)
        .then(|| (MIN_STEADY_S / iteration_s).ceil().min(f64::from(cap)) as u32)
}

/// The spectrum of distributions every tune run compares (seed Fig. 6.1).
pub const SPECTRUM: [&str; 4] = ["block", "balanced", "in-core", "in-core-balanced"];

pub fn run(args: &TuneArgs) -> anyhow::Result<()> {
    if args.iterations == Some(0) {
        bail!("--iterations must be at least 1");
    }
    max_repeat(args.repeat, args.max_repeat)?;
    // Checked before the (slow) build, so a typo fails at once.
    mheta_runtime::format::ClusterSpec::load(&args.cluster).context("--cluster")?;
    // Without a report directory, the working files go to a directory of this tune's own
    // (`mheta-tune-*`), removed at the end, on SIGINT, SIGTERM and SIGHUP, or by the next tune
    // if this one is killed.
    let private;
    let _report_lock;
    let work: &Path = match &args.report {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create report directory `{}`", dir.display()))?;
            _report_lock = DirLock::acquire(dir).map_err(|e| match e {
                LockError::Busy(busy) => anyhow::anyhow!(
                    "report directory `{}` is being written by another mheta tune{}; give \
                     each tune its own --report",
                    dir.display(),
                    busy.holder
                        .map(|p| format!(" (pid {p})"))
                        .unwrap_or_default()
                ),
                other => anyhow::Error::new(other),
            })?;
            dir
        }
        None => {
            private =
                OwnedDir::create("mheta-tune").context("cannot create a temporary directory")?;
            private.path()
        }
    };
    let mut progress = Progress::new(6 + SPECTRUM.len() as u64 + u64::from(args.report.is_some()));
    let result = tune(args, work, &mut progress);
    progress.finish();
    let doc = result?;
    if let Some(dir) = &args.report {
        super::write_atomic(&dir.join("tune.json"), &serde_json::to_string_pretty(&doc)?)?;
        super::report::write(dir, &doc).context("step 7 (report) failed")?;
        eprintln!(
            "tune: report written to {}",
            dir.join("index.html").display()
        );
    }
    if args.json {
        super::stdout(&format!("{}\n", serde_json::to_string_pretty(&doc)?))?;
    } else {
        super::stdout(&doc.table())?;
    }
    Ok(())
}

fn tune(args: &TuneArgs, work: &Path, progress: &mut Progress) -> anyhow::Result<TuneDocument> {
    let method = match (args.actual, args.clock) {
        (Some(ActualMethod::Timed), clock) if clock != ClockMode::Wall => {
            bail!("--actual timed needs --clock wall (a timed run measures real seconds)")
        }
        (Some(m), _) => m,
        (None, _) => ActualMethod::Timings,
    };
    let launcher = Launcher::for_tune(
        args.backend,
        args.mpirun.as_deref(),
        args.ranks,
        &args.cluster,
    )?;
    progress.step("analyzing the crate");
    let analyzed = analyze(&args.crate_dir).context("step 1 (analyze) failed")?;
    let interface = interface(args, method)?;

    progress.step("building the program (cargo build --release)");
    // `_copy` holds this tune's own copy of the binary.
    let (_copy, binary) = program::build(&args.crate_dir, launcher.cargo_features())
        .context("step 2 (build) failed")?;
    let program = Program {
        binary,
        launcher,
        common: match interface {
            Interface::Flags => common_args(args),
            Interface::Environment(_) => args.program_args.clone(),
        },
        interface,
    };
    // Measurements start here: on a quiet machine, or saying it was not. The charged clock
    // counts no CPU time, so other work cannot move its runs: it does not wait.
    let charged = args.clock == ClockMode::Charged;
    let limit = if charged {
        Duration::ZERO
    } else {
        args.wait_quiet
    };
    let load = quiet::wait(limit, |m| progress.note(m));
    if load.quiet == Some(false) && !charged {
        eprintln!(
            "tune: warning: measuring on a busy machine: {}",
            load.describe()
        );
    }

    let forced_runs = args.repeat.min(FORCED_RUNS);
    progress.step(&match forced_runs {
        1 => "one instrumented run under block".to_string(),
        n => format!("{n} instrumented runs under block"),
    });
    let structure_path = work.join("structure.json");
    let trace_path = work.join("trace.json");
    let measurements_path = work.join("measurements.json");
    let mut forced = Vec::new();
    for k in 0..forced_runs {
        let first = k == 0;
        // `measurements.json` is written once the in-core samples are merged (below).
        let path = work.join(format!("measurements-forced-{k}.json"));
        let run = program
            .run(&RunSpec {
                distribution: "block",
                iterations: MODEL_ITERATIONS,
                measurements: &path,
                emit_structure: first.then_some(structure_path.as_path()),
                trace: args
                    .report
                    .as_ref()
                    .filter(|_| first)
                    .map(|_| trace_path.as_path()),
                keep_in_core: false,
            })
            .context("step 3 (instrumented run) failed")?;
        forced.push(run);
    }
    // The median run, whole, so that its stages, I/O and events stay one measurement.
    let mut measured = median_by(forced, program::iteration_seconds);
    if let Interface::Environment(_) = program.interface {
        // An attached program does not write its structure: it is the crate's.
        super::write_atomic(&structure_path, &serde_json::to_string_pretty(&analyzed)?)?;
    }
    let structure_json: serde_json::Value =
        super::read_json(&structure_path).context("step 3: the structure the program wrote")?;
    let structure: Structure = serde_json::from_value(structure_json.clone())
        .with_context(|| format!("step 3: `{}` is not a structure", structure_path.display()))?;
    if structure.digest() != analyzed.digest() {
        eprintln!(
            "tune: warning: the structure `{}` embeds differs from `mheta analyze {}`; the model \
             uses the embedded one (rebuild the crate if its source changed)",
            program.binary.display(),
            args.crate_dir.display()
        );
    }

    // The forced run measures I/O, and computation as it runs between block reads and writes.
    // Runs that keep in-core arrays in core measure computation as it runs in core, at two row
    // counts per node (per-row cost is not constant: caches, allocations): In-Core-Balanced and
    // In-Core, which both keep every node's arrays in core that the cluster's memory can (the
    // second is skipped when it is the same distribution). Their communication overheads are
    // more samples of the forced run's (see `merge_in_core_compute`).
    let mut spectrum = Vec::new();
    for name in SPECTRUM {
        spectrum.push((name, generate(name, &measured).context("step 5 (compare)")?));
    }
    progress.step("instrumented runs with arrays kept in core");
    let rows_of = |wanted: &str| {
        spectrum
            .iter()
            .find(|(name, _)| *name == wanted)
            .expect("the spectrum has both in-core distributions")
            .1
            .as_slice()
    };
    let mut sampler = Sampler::new(&program, work);
    sampler.add(
        "in-core-balanced",
        rows_of("in-core-balanced"),
        &structure,
        &mut measured,
    )?;
    if rows_of("in-core") != rows_of("in-core-balanced") {
        sampler.add("in-core", rows_of("in-core"), &structure, &mut measured)?;
    }
    progress.step(&format!("searching ({})", args.algorithm.name()));
    let build_model = |measured: &Measurements| {
        Model::new(&structure, measured, &measured.cluster)
            .context("step 4 (search): cannot build the model")
    };
    let mut model = build_model(&measured)?;
    let mut searches = run_searches(&model, args);
    // Refinement: the search goes where the model predicts least time, so where its in-core
    // computation is interpolated between samples it goes, among other places, where that
    // interpolation is too low (the winner's curse). A chosen distribution that would give the
    // model a new sample is sampled in core like the others, and the search runs again on the
    // model that knows it; at most `REFINEMENTS` times. One whose samples the model would pool
    // with those it has (`Model::adds_in_core_sample`) is left: its runs could not change the
    // model's shape.
    for refinement in 1..=REFINEMENTS {
        let rows = searches[0].rows.clone();
        if !model.adds_in_core_sample(&sampler.sampled(), &rows) {
            break;
        }
        let name = format!("chosen-{refinement}");
        progress.note(&format!(
            "measuring the chosen distribution in core ({name}: {})",
            rows_list(&rows)
        ));
        sampler.add(&name, &rows, &structure, &mut measured)?;
        model = build_model(&measured)?;
        searches = run_searches(&model, args);
    }
    // The model's prediction decides: a search's objective can differ from it (GBS balances
    // the nodes' own costs), and on jacobi dc-2 GBS returned 432,1568 (predicted 8.01 ms)
    // beside Balanced's 400,1600 (7.44 ms). Every search result and the spectrum are
    // candidates; ties go to the earlier (the chosen algorithm's first).
    let candidates = searches
        .iter()
        .map(|r| (r.algorithm.to_string(), r.rows.clone()))
        .chain(
            spectrum
                .iter()
                .map(|(name, rows)| (format!("spectrum ({name})"), rows.clone())),
        );
    let (chosen_by, chosen_rows) =
        lowest_predicted(candidates, |rows| Ok(model.predict(rows)?.iteration_s))
            .context("step 4 (search): predicting the candidates")?;

    // Each distinct distribution is predicted once and run `--repeat` times, in rounds (every
    // distribution once, then again): the machine's speed drifts over minutes, and runs in
    // rounds share that drift instead of pinning it on one of them. Unless `--iterations` is
    // given (or the program runs its own, attached), each distribution runs enough iterations
    // for `MIN_STEADY_S` of steady state by its prediction; a first run that falls short (the
    // model predicted it slower than it runs) is made again with iterations from its measured
    // time, and only runs of the final length count.
    let named: Vec<(&str, Vec<u64>)> = std::iter::once(("best", chosen_rows.clone()))
        .chain(spectrum)
        .collect();
    let mut distinct: Vec<Compared<'_>> = Vec::new();
    for (name, rows) in &named {
        if distinct.iter().any(|c| &c.rows == rows) {
            continue;
        }
        let prediction = model
            .predict(rows)
            .with_context(|| format!("step 5: cannot predict {name}"))?;
        let iterations = match program.interface {
            Interface::Environment(_) => None,
            Interface::Flags => Some(
                args.iterations
                    .unwrap_or_else(|| iterations_for(prediction.iteration_s)),
            ),
        };
        distinct.push(Compared {
            name,
            list: rows_list(rows),
            rows: rows.clone(),
            predicted_s: prediction.iteration_s,
            iterations,
            runs: Vec::new(),
        });
    }
    let run_once = |c: &mut Compared<'_>| -> anyhow::Result<()> {
        // An attached program runs its own iterations (its program arguments ignore these).
        let k = c.iterations.unwrap_or(1);
        let mut seconds = measure(&program, method, &c.list, k, work, c.name)?;
        let steady = k - warm_up(k);
        let longer = iterations_for(seconds);
        let chosen_here = args.iterations.is_none() && c.iterations.is_some();
        if chosen_here
            && c.runs.is_empty()
            && seconds * f64::from(steady) < MIN_STEADY_S
            && longer > k
        {
            c.iterations = Some(longer);
            seconds = measure(&program, method, &c.list, longer, work, c.name)?;
        }
        c.runs.push(seconds);
        Ok(())
    };
    // The first round: one progress step per named distribution.
    for (name, rows) in &named {
        let c = distinct
            .iter_mut()
            .find(|c| &c.rows == rows)
            .expect("every named distribution is among the distinct ones");
        if !c.runs.is_empty() {
            progress.step(&format!("{name}: the same rows as {}", c.name));
            continue;
        }
        progress.step(&match c.iterations {
            Some(k) => format!("running {name} for {k} iterations"),
            None => format!("running {name}"),
        });
        run_once(c)?;
    }
    let max_repeat = max_repeat(args.repeat, args.max_repeat)?;
    // Rounds of the compared runs (`rounds` counts them), each with the samples that still
    // run; then rounds of the samples alone while one's medians are loose (cg on hy1-2: five
    // in-core runs whose CPU-0.25 node computed 13.0–18.5 ms gave a median of 15.6 ms where
    // nine on the quiet machine gave 12.8, and a prediction 5 % above every compared run).
    let mut rounds = 1;
    loop {
        let compared = another_round(
            rounds,
            args.repeat,
            max_repeat,
            distinct.iter().map(|c| c.runs.as_slice()),
        );
        if !compared && !sampler.loose(max_repeat) {
            break;
        }
        if compared {
            rounds += 1;
            if rounds > args.repeat {
                progress.note(&format!(
                    "round {rounds}: a median is not yet known to ±{:.0} %",
                    100.0 * MEDIAN_PRECISION
                ));
            }
            progress.note(&format!("round {rounds}: the model's in-core samples"));
        } else {
            progress.note(&format!(
                "the model's in-core samples again: a node's computation is not yet known to \
                 ±{:.0} % of the iteration",
                100.0 * MEDIAN_PRECISION
            ));
        }
        sampler.round(&mut measured, max_repeat)?;
        if compared {
            for c in &mut distinct {
                progress.note(&format!("running {} again (run {rounds})", c.name));
                run_once(c)?;
            }
        }
    }
    // The predictions compared are the model's with every sample, those taken in the rounds
    // included (the search chose from the samples it had: `best` is what tune answers).
    super::write_atomic(
        &measurements_path,
        &mheta_runtime::format::json::pretty(&measured),
    )
    .context("step 3: writing the merged measurements")?;
    let model = build_model(&measured)?;
    let mut predictions = Vec::new();
    for c in &mut distinct {
        let prediction = model
            .predict(&c.rows)
            .with_context(|| format!("step 5: cannot predict {}", c.name))?;
        c.predicted_s = prediction.iteration_s;
        predictions.push(prediction);
    }
    // tune answers with what the model with every sample predicts fastest among the
    // distributions it ran. The search chose from the samples taken before the rounds; the
    // rounds' samples can reorder close candidates (jacobi on dc-2: the search's 415,1585
    // predicted 10.08 ms beside Balanced's 9.78 ms once every sample was in, and 15
    // interleaved pairs of runs measured it 3.5 % slower). The search's pick stays in the
    // table as `searched`, with its runs.
    let searched = distinct
        .iter()
        .position(|c| c.rows == chosen_rows)
        .expect("the search's pick was compared");
    let predicted: Vec<f64> = predictions.iter().map(|p| p.iteration_s).collect();
    let answer = final_choice(searched, &predicted);
    let best_breakdown = predictions[answer]
        .nodes
        .iter()
        .map(NodeBreakdown::from)
        .collect();
    let answer_rows = distinct[answer].rows.clone();
    let chosen_by = if answer == searched {
        chosen_by
    } else {
        format!(
            "{} (the model with every sample; {chosen_by} chose {} from the samples before the \
             rounds)",
            distinct[answer].name,
            rows_list(&chosen_rows)
        )
    };
    let mut reported: Vec<(&str, Vec<u64>)> = vec![("best", answer_rows.clone())];
    reported.extend(named.into_iter().skip(1));
    if answer != searched {
        reported.push(("searched", chosen_rows));
    }
    let mut distributions = Vec::new();
    for (name, rows) in reported {
        let c = distinct
            .iter()
            .find(|c| c.rows == rows)
            .expect("every distribution was compared");
        let mut d = DistributionResult::measured(name, rows, c.predicted_s, c.runs.clone());
        d.iterations = c.iterations;
        distributions.push(d);
    }

    if args.report.is_some() {
        progress.step("writing the report");
    }
    let best_iterations = distributions[0].iterations.unwrap_or(3);
    Ok(TuneDocument {
        structure: structure_json,
        cluster: measured.cluster.clone(),
        best: Best {
            algorithm: chosen_by,
            rows: answer_rows,
            predicted_s: distributions[0].predicted_s,
            actual_s: distributions[0].actual_s,
            search_s: searches[0].elapsed_s,
        },
        accuracy: TuneDocument::summarize(&distributions),
        distributions,
        clock: measured.clock.clone(),
        total_rows: measured.rows,
        // An attached program runs its own iterations: those of its measured run, warm-up
        // included. Otherwise those of the chosen distribution's runs.
        iterations: match program.interface {
            Interface::Flags => best_iterations,
            Interface::Environment(_) => measured.iterations + measured.warm_up,
        },
        actual_method: if rounds > 1 {
            let more = if max_repeat > args.repeat {
                format!(
                    " ({} at least, more while a median's 95 % interval was wider than ±{:.0} \
                     %, at most {max_repeat})",
                    args.repeat,
                    100.0 * MEDIAN_PRECISION
                )
            } else {
                String::new()
            };
            format!(
                "{}; the median of {rounds} runs, each a separate process, made in rounds over \
                 the distributions{more}",
                method.describe(),
            )
        } else {
            method.describe().into()
        },
        best_breakdown,
        searches: searches.iter().map(summary).collect(),
        trace_file: args.report.as_ref().map(|_| "trace.json".into()),
        load: Some(load),
        samples: sampler.results(),
    })
}

/// The instrumented runs that keep in-core arrays in core (the model's in-core samples), each
/// under one distribution, merged into the measurements as they come
/// (`Measurements::merge_in_core_compute`); the model takes the median of a row count's samples.
///
/// A sample distribution runs once when it is added, so the search has it, and once more in
/// every later round of the compared runs ([`Sampler::round`]), until its runs have measured
/// [`REPEAT_SECONDS`]: the machine's speed drifts by up to 2× between minutes on a shared VM,
/// and a model whose samples were all taken minutes before the runs it predicts inherits that
/// drift as error. Taken in the same rounds, samples and runs share it. A sample whose nodes'
/// medians are not known ([`Sample::known`]) runs on, in those rounds and then in rounds of its
/// own, up to `--max-repeat` runs: like a compared run's, its median is only as good as its
/// runs are many.
struct Sampler<'a> {
    program: &'a Program,
    work: &'a Path,
    samples: Vec<Sample>,
}

/// One sample distribution: its name (for the files), rows, run length, the slowest node's
/// seconds its runs measured, and what each run measured per iteration: every node's
/// computation (its stages added up) and the slowest node's iteration.
struct Sample {
    name: String,
    rows: Vec<u64>,
    iterations: u32,
    spent_s: f64,
    /// `[node][run]`.
    compute_s: Vec<Vec<f64>>,
    /// `[run]`.
    iteration_s: Vec<f64>,
}

impl Sample {
    /// Whether the medians the model takes from this sample's runs are known: every node's
    /// computation to within [`MEDIAN_PRECISION`] of the median iteration on either side (its
    /// 95 % interval, `accuracy::median_interval`). Relative to the iteration, not to the
    /// node's own computation: a node that computes a tenth of the iteration may scatter by
    /// a third without moving the prediction. A sample whose iteration takes no time (the
    /// charged clock) is known.
    fn known(&self) -> bool {
        let iteration = mheta_runtime::stats::median(&mut self.iteration_s.clone());
        if iteration.is_nan() || iteration <= 0.0 {
            return true;
        }
        self.compute_s
            .iter()
            .all(|runs| accuracy::median_within(runs, MEDIAN_PRECISION * iteration))
    }

    /// The runs made so far.
    fn runs(&self) -> u32 {
        self.iteration_s.len() as u32
    }

    /// Whether it runs again in a round: until its runs measured [`REPEAT_SECONDS`], and
    /// while its medians are not known, up to `max_runs` runs.
    fn wanted(&self, max_runs: u32) -> bool {
        self.spent_s < REPEAT_SECONDS || self.loose(max_runs)
    }

    /// Whether its medians are not known yet and it may run again (fewer than `max_runs`).
    fn loose(&self, max_runs: u32) -> bool {
        self.runs() < max_runs && !self.known()
    }
}

impl<'a> Sampler<'a> {
    fn new(program: &'a Program, work: &'a Path) -> Self {
        Sampler {
            program,
            work,
            samples: Vec::new(),
        }
    }

    /// Adds a sample distribution and runs it once. Its length comes from the model as
    /// measured so far (its computation measured out of core, so an overestimate: the runs
    /// come out no shorter than intended).
    fn add(
        &mut self,
        name: &str,
        rows: &[u64],
        structure: &Structure,
        measured: &mut Measurements,
    ) -> anyhow::Result<()> {
        let estimate = Model::new(structure, measured, &measured.cluster)
            .ok()
            .and_then(|m| m.predict(rows).ok())
            .map_or(f64::NAN, |p| p.iteration_s);
        self.samples.push(Sample {
            name: name.to_string(),
            rows: rows.to_vec(),
            iterations: in_core_iterations(estimate),
            spent_s: 0.0,
            compute_s: Vec::new(),
            iteration_s: Vec::new(),
        });
        let last = self.samples.len() - 1;
        self.run(last, measured)
    }

    /// Runs every sample distribution once more that is [`Sample::wanted`] (at most
    /// `max_runs` runs while its medians are loose).
    fn round(&mut self, measured: &mut Measurements, max_runs: u32) -> anyhow::Result<()> {
        for k in 0..self.samples.len() {
            if self.samples[k].wanted(max_runs) {
                self.run(k, measured)?;
            }
        }
        Ok(())
    }

    /// Whether some sample's medians are not known yet ([`Sample::loose`]): a reason for
    /// another round of samples when the compared runs need none.
    fn loose(&self, max_runs: u32) -> bool {
        self.samples.iter().any(|s| s.loose(max_runs))
    }

    fn run(&mut self, k: usize, measured: &mut Measurements) -> anyhow::Result<()> {
        let sample = &mut self.samples[k];
        let name = &sample.name;
        let kept = self
            .program
            .run(&RunSpec {
                distribution: &rows_list(&sample.rows),
                iterations: sample.iterations,
                measurements: &self
                    .work
                    .join(format!("measurements-{name}-{}.json", sample.runs())),
                emit_structure: None,
                trace: None,
                keep_in_core: true,
            })
            .with_context(|| format!("step 3 (instrumented in-core run under {name}) failed"))?;
        let slowest = kept.nodes.iter().map(|n| n.iteration_s).fold(0.0, f64::max);
        sample.spent_s += f64::from(sample.iterations) * slowest;
        sample.iteration_s.push(slowest);
        sample.compute_s.resize(kept.nodes.len(), Vec::new());
        for (runs, node) in sample.compute_s.iter_mut().zip(&kept.nodes) {
            runs.push(node.stages.iter().map(|s| s.compute_s).sum());
        }
        measured.merge_in_core_compute(&kept).map_err(|e| {
            anyhow::anyhow!("step 3: the in-core run under {name} does not match: {e}")
        })?;
        Ok(())
    }

    /// The rows of every sample distribution.
    fn sampled(&self) -> Vec<Vec<u64>> {
        self.samples.iter().map(|s| s.rows.clone()).collect()
    }

    /// Every sample with its runs, for tune.json and the report.
    fn results(&self) -> Vec<SampleResult> {
        self.samples
            .iter()
            .map(|s| SampleResult {
                name: s.name.clone(),
                rows: s.rows.clone(),
                iterations: s.iterations,
                runs_s: s.iteration_s.clone(),
                compute_s: s
                    .compute_s
                    .iter()
                    .map(|runs| mheta_runtime::stats::median(&mut runs.clone()))
                    .collect(),
                known: s.known(),
            })
            .collect()
    }
}

/// Analyzes the crate, printing its diagnostics; errors fail the step.
pub(crate) fn analyze(dir: &Path) -> anyhow::Result<Structure> {
    if !dir.join("Cargo.toml").is_file() {
        bail!(
            "`{}` is not a crate directory (no Cargo.toml)",
            dir.display()
        );
    }
    let analysis = mheta_analyzer::analyze_path(dir, &mheta_analyzer::Options { trace: false });
    let rendered = analysis.render_diagnostics();
    if !rendered.is_empty() {
        eprint!("{rendered}");
    }
    if analysis.has_errors() {
        bail!("`mheta analyze {}` reported errors (above)", dir.display());
    }
    Ok(analysis.structure)
}

/// The fewest warm-up iterations a run of `steady` measured iterations leaves out
/// (`format::warm_up_iterations` counts them from the recorded total; where two totals give
/// the same steady count, the shorter).
fn steady_to_run(steady: u32) -> u32 {
    (0..=2)
        .find(|&w| mheta_runtime::format::warm_up_iterations((steady + w) as usize) == w as usize)
        .unwrap_or(0)
}

/// The warm-up iterations of a run of `total` iterations (`format::warm_up_iterations`).
fn warm_up(total: u32) -> u32 {
    mheta_runtime::format::warm_up_iterations(total as usize) as u32
}

/// How the runs reach the program: `MHETA_*` variables when the crate attaches to rsmpi
/// (`mheta::mpi::attach` in its sources), else the shared flags.
fn interface(args: &TuneArgs, method: ActualMethod) -> anyhow::Result<Interface> {
    if !attaches(&args.crate_dir.join("src")) {
        return Ok(Interface::Flags);
    }
    let name = args.crate_dir.display();
    if args.backend != Backend::Mpi {
        bail!("`{name}` attaches to rsmpi (mheta::mpi::attach): its ranks are MPI processes, tune it with --backend mpi");
    }
    if args.rows.is_some() {
        bail!("--rows: `{name}` attaches to rsmpi and takes its rows from session.rows(..); give the program's own arguments after `--`");
    }
    if method == ActualMethod::Timed {
        bail!("--actual timed: `{name}` attaches to rsmpi and runs its own iteration count, so runs of different lengths cannot be compared; use --actual timings");
    }
    if args.clock != ClockMode::Wall {
        bail!(
            "--clock {}: `{name}` attaches to rsmpi, and an MPI job runs on the wall clock",
            args.clock.name()
        );
    }
    Ok(Interface::Environment(vec![
        ("MHETA_CLUSTER".into(), args.cluster.display().to_string()),
        ("MHETA_CLOCK".into(), "wall".into()),
    ]))
}

/// Whether a source tree calls `mheta::mpi::attach` (or `mpi::attach` under a `use mheta`).
fn attaches(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    entries.flatten().any(|e| {
        let path = e.path();
        if path.is_dir() {
            attaches(&path)
        } else {
            path.extension().is_some_and(|x| x == "rs")
                && std::fs::read_to_string(&path)
                    .is_ok_and(|text| text.contains("mpi::attach(") && text.contains("mheta"))
        }
    })
}

/// The flags every run of the program shares.
fn common_args(args: &TuneArgs) -> Vec<String> {
    let mut common = vec![
        "--backend".to_string(),
        // The spelling the programs' `--backend` parses (the same clap `ValueEnum`).
        clap::ValueEnum::to_possible_value(&args.backend)
            .expect("every backend has a flag value")
            .get_name()
            .to_string(),
        "--cluster".to_string(),
        args.cluster.display().to_string(),
        "--clock".to_string(),
        args.clock.name().to_string(),
    ];
    if let Some(rows) = args.rows {
        common.extend(["--rows".to_string(), rows.to_string()]);
    }
    if let Some(ranks) = args.ranks {
        common.extend(["--ranks".to_string(), ranks.to_string()]);
    }
    // Under MPI a stopped or hung rank would hang the tune: its runs end instead once one
    // communication has waited this long (unless the program's arguments set their own).
    let own_timeout = args
        .program_args
        .iter()
        .any(|a| a.starts_with("--comm-timeout"));
    if args.backend == Backend::Mpi && !own_timeout {
        common.extend(["--comm-timeout".to_string(), MPI_COMM_TIMEOUT.to_string()]);
    }
    common.extend(args.program_args.iter().cloned());
    common
}

/// The longest one communication of a tune's MPI run may wait (`--comm-timeout`): far above
/// any wait of a run tune makes (each lasts seconds), far below forever.
const MPI_COMM_TIMEOUT: &str = "600s";

/// The candidate with the lowest prediction, the first of equals: its name and rows.
fn lowest_predicted(
    candidates: impl Iterator<Item = (String, Vec<u64>)>,
    predict: impl Fn(&[u64]) -> anyhow::Result<f64>,
) -> anyhow::Result<(String, Vec<u64>)> {
    let mut best: Option<(String, Vec<u64>, f64)> = None;
    for (name, rows) in candidates {
        let t = predict(&rows).with_context(|| format!("cannot predict {name}"))?;
        if best.as_ref().map_or(true, |b| t < b.2) {
            best = Some((name, rows, t));
        }
    }
    best.map(|(name, rows, _)| (name, rows))
        .context("no candidate distribution")
}

/// The chosen algorithm first; with `--report`, every other algorithm after it.
fn run_searches(model: &Model, args: &TuneArgs) -> Vec<SearchResult> {
    let config = SearchConfig {
        budget: args.budget,
        seed: args.seed,
        start: None,
    };
    let mut algorithms = vec![args.algorithm];
    if args.report.is_some() {
        algorithms.extend(Algorithm::ALL.into_iter().filter(|&a| a != args.algorithm));
    }
    algorithms
        .into_iter()
        .map(|a| search::search_model(model, a, &config))
        .collect()
}

/// Which of the compared distributions tune answers with: the one the final model predicts
/// fastest, `searched` (the search's pick) unless another is predicted strictly faster; among
/// equals, the first.
fn final_choice(searched: usize, predicted_s: &[f64]) -> usize {
    let mut answer = searched;
    for (i, &p) in predicted_s.iter().enumerate() {
        if p < predicted_s[answer] {
            answer = i;
        }
    }
    answer
}

/// A distinct distribution compared against its prediction: the first name it goes by.
struct Compared<'a> {
    name: &'a str,
    rows: Vec<u64>,
    list: String,
    predicted_s: f64,
    /// Iterations of each run (`None`: the attached program's own).
    iterations: Option<u32>,
    runs: Vec<f64>,
}

/// One of the spectrum's generators, on the cluster and S of the measured run.
pub fn generate(name: &str, measured: &Measurements) -> anyhow::Result<Vec<u64>> {
    let bytes_per_row = model::distributed_bytes_per_row(measured);
    Ok(
        Distribution::from_spec(name, measured.rows, bytes_per_row, &measured.cluster)
            .with_context(|| format!("cannot build distribution {name}"))?
            .rows,
    )
}

/// How the actual seconds per iteration of a distribution are measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ActualMethod {
    /// An uninstrumented run of K iterations reports its main loop's iteration times on its own
    /// clock (`--timings`); the steady state leaves the warm-up iterations out. Every clock.
    Timings,
    /// Two uninstrumented runs of 1 and K+1 iterations, timed from outside; their difference
    /// divided by K. Wall clock only. Includes whatever the program does per iteration outside
    /// the solver (a fixture's sequential reference computes one more iteration per iteration).
    Timed,
    /// The instrumented run's slowest-node `iteration_s`. Works on every clock, but instrumented
    /// runs force in-core arrays out of core (seed §5.2.2), so it overstates I/O.
    Instrumented,
}

impl ActualMethod {
    fn describe(self) -> &'static str {
        match self {
            ActualMethod::Timings => {
                "timings: an uninstrumented run's own steady-state seconds per iteration \
                 (--timings, warm-up iterations left out)"
            }
            ActualMethod::Timed => {
                "timed: (T(K+1 iterations) - T(1 iteration)) / K of uninstrumented runs, wall clock"
            }
            ActualMethod::Instrumented => {
                "instrumented: slowest node's iteration_s (in-core arrays forced out of core)"
            }
        }
    }
}

/// Runs `rows` and returns the measured seconds per iteration.
/// Runs `distribution` (`r0,r1,...`) for `iterations` and returns the measured seconds per
/// iteration.
fn measure(
    program: &Program,
    method: ActualMethod,
    distribution: &str,
    iterations: u32,
    work: &Path,
    name: &str,
) -> anyhow::Result<f64> {
    let step = || format!("step 5 (run {name}) failed");
    match method {
        ActualMethod::Timings => {
            let path = work.join(format!("timings-{name}.json"));
            let mut command = program.command(distribution, iterations);
            program.timings(&mut command, &path);
            program.execute(command, distribution).with_context(step)?;
            let timings: Timings = super::read_json(&path)
                .context("the program's timings")
                .with_context(step)?;
            Ok(timings.iteration_s)
        }
        ActualMethod::Timed => {
            let short = program.timed(distribution, 1).with_context(step)?;
            let long = program
                .timed(distribution, iterations + 1)
                .with_context(step)?;
            Ok(program::per_iteration((1, short), (iterations + 1, long)))
        }
        ActualMethod::Instrumented => {
            let measurements = program
                .run(&RunSpec {
                    distribution,
                    iterations,
                    measurements: &work.join(format!("measurements-{name}.json")),
                    emit_structure: None,
                    trace: None,
                    keep_in_core: false,
                })
                .with_context(step)?;
            Ok(program::iteration_seconds(&measurements))
        }
    }
}

fn summary(result: &SearchResult) -> SearchSummary {
    SearchSummary {
        algorithm: result.algorithm.to_string(),
        rows: result.rows.clone(),
        predicted_s: result.predicted_s,
        elapsed_s: result.elapsed_s,
        evaluations: result.evaluations,
        trace: result
            .trace
            .iter()
            .map(|t| TracePoint {
                elapsed_s: t.elapsed_s,
                predicted_s: t.predicted_s,
            })
            .collect(),
    }
}

fn parse_algorithm(s: &str) -> Result<Algorithm, String> {
    s.parse()
}

#[cfg(test)]
mod tests {
    use super::steady_to_run;

    #[test]
    fn the_answer_is_the_distribution_the_final_model_predicts_fastest() {
        use super::final_choice;
        // The search's pick (0) stays unless another is predicted strictly faster.
        assert_eq!(final_choice(0, &[0.010, 0.010, 0.012]), 0);
        assert_eq!(final_choice(0, &[0.01008, 0.02716, 0.00978, 0.02716]), 2);
        // Among equals below the pick, the first.
        assert_eq!(final_choice(1, &[0.5, 0.3, 0.2, 0.2]), 2);
        assert_eq!(final_choice(2, &[0.1, 0.3, 0.2]), 0);
    }

    #[test]
    fn rounds_go_on_while_a_median_is_not_known_to_three_percent() {
        use super::another_round;
        let tight = [1.00, 1.01, 0.99, 1.00, 1.02];
        // jacobi-prefetch on net-2, Balanced (ms): two modes.
        let bimodal = [6.98, 7.00, 7.27, 8.48, 8.59];
        let both: [&[f64]; 2] = [&tight, &bimodal];
        // The --repeat rounds run whatever the runs say.
        assert!(another_round(1, 5, 15, [&tight[..1]].into_iter()));
        assert!(another_round(4, 5, 15, both.into_iter()));
        // Then only while a median is loose, and never past --max-repeat.
        assert!(!another_round(5, 5, 15, [&tight[..]].into_iter()));
        assert!(another_round(5, 5, 15, both.into_iter()));
        assert!(!another_round(15, 5, 15, both.into_iter()));
        assert!(!another_round(5, 5, 5, both.into_iter()));
        // Fifteen runs: the interval is [x(4), x(12)]. With twelve in the fast mode it is
        // 7.03..7.14, known; with ten it reaches the slow mode.
        let mut fifteen = vec![
            6.98, 7.00, 7.02, 7.03, 7.04, 7.05, 7.06, 7.07, 7.08, 7.10, 7.12, 7.14,
        ];
        fifteen.extend([8.48, 8.50, 8.55]);
        assert!(!another_round(14, 5, 20, [&fifteen[..]].into_iter()));
        fifteen[10..12].copy_from_slice(&[8.59, 8.60]);
        assert!(another_round(14, 5, 20, [&fifteen[..]].into_iter()));
    }

    #[test]
    fn in_core_samples_run_on_while_a_nodes_computation_is_loose() {
        use super::Sample;
        let ms = |v: &[f64]| v.iter().map(|x| x / 1e3).collect::<Vec<f64>>();
        // cg on hy1-2, In-Core-Balanced (139,506 and 60,494 rows), the study's five runs: the
        // CPU-0.25 node computed 13.0–18.5 ms, ±9 % of a 31.9 ms iteration.
        let mut sample = Sample {
            name: "in-core-balanced".into(),
            rows: vec![139_506, 60_494],
            iterations: 10,
            spent_s: 5.0 * 0.3,
            compute_s: vec![
                ms(&[18.5, 13.5, 16.9, 15.6, 13.0]),
                ms(&[3.1, 3.3, 4.2, 3.8, 3.1]),
            ],
            iteration_s: ms(&[35.0, 30.0, 33.0, 31.9, 29.9]),
        };
        assert!(!sample.known());
        assert!(sample.wanted(9) && sample.loose(9));
        // Never past --max-repeat runs while loose, but on until 2 s as before.
        assert!(!sample.loose(5) && sample.wanted(5));
        sample.spent_s = 2.0;
        assert!(!sample.wanted(5));
        // Nine quiet runs (2026-11-29): the interval drops one run at each end, 12.4–13.5 ms,
        // within ±3 % of 29.4 ms. The other node's spread counts against the same iteration.
        sample.compute_s = vec![
            ms(&[15.6, 12.8, 13.2, 12.8, 12.4, 12.7, 11.8, 13.5, 12.9]),
            ms(&[3.5, 2.7, 3.1, 2.9, 2.8, 2.6, 2.5, 2.6, 2.5]),
        ];
        sample.iteration_s = ms(&[32.0, 29.1, 29.8, 29.6, 28.7, 29.1, 28.2, 30.0, 29.3]);
        assert!(sample.known());
        assert!(!sample.wanted(15));
        // A machine whose iterations take no time (the charged clock) has nothing to wait for.
        sample.iteration_s = vec![0.0; 9];
        sample.compute_s[0][0] = 1.0;
        assert!(sample.known());
    }

    #[test]
    fn compared_runs_last_a_fifth_of_a_second_of_steady_state() {
        use super::iterations_for;
        // 10 ms per iteration: 20 steady iterations, and the 2 of warm-up.
        assert_eq!(iterations_for(0.01), 22);
        // 0.3 ms: ceil(666.7) = 667 steady, even: 668.
        assert_eq!(iterations_for(0.0003), 670);
        // 77 ms (Jacobi out of core on slowdisk-2): ceil(2.6) = 3 steady, even and at least
        // 4: 4, in 6 iterations.
        assert_eq!(iterations_for(0.077), 6);
        // Slow iterations still run 4 steady ones (6 in all), as does a run that cannot be
        // timed.
        assert_eq!(iterations_for(1.0), 6);
        assert_eq!(iterations_for(0.0), 6);
        assert_eq!(iterations_for(f64::NAN), 6);
        // Bounded (the bound is even).
        assert_eq!(iterations_for(1e-12), super::MAX_ITERATIONS + 2);
        // Every count keeps an even steady state.
        for ms in 1..2000 {
            let k = iterations_for(f64::from(ms) * 1e-4) as usize;
            assert_eq!(
                (k - mheta_runtime::format::warm_up_iterations(k)) % 2,
                0,
                "{ms}"
            );
        }
    }

    #[test]
    fn the_lowest_prediction_is_chosen_and_ties_go_to_the_first() {
        use super::lowest_predicted;
        let predict = |rows: &[u64]| Ok(rows[0] as f64 / 100.0 + rows[1] as f64 / 400.0);
        let candidates = vec![
            ("gbs".to_string(), vec![432, 1568]),
            ("sa".to_string(), vec![400, 1600]),
            ("spectrum (balanced)".to_string(), vec![400, 1600]),
            ("spectrum (block)".to_string(), vec![1000, 1000]),
        ];
        assert_eq!(
            lowest_predicted(candidates.into_iter(), predict).unwrap(),
            ("sa".to_string(), vec![400, 1600])
        );
        let failing = |_: &[u64]| anyhow::bail!("no model");
        let err = lowest_predicted(std::iter::once(("gbs".into(), vec![1])), failing);
        assert!(format!("{:#}", err.unwrap_err()).contains("cannot predict gbs"));
        assert!(lowest_predicted(std::iter::empty(), predict).is_err());
    }

    #[test]
    fn the_model_is_built_from_the_median_forced_run() {
        use super::median_by;
        let runs = vec![("outlier", 0.121), ("a", 0.107), ("b", 0.111)];
        assert_eq!(median_by(runs, |r| r.1).0, "b");
        assert_eq!(median_by(vec![("only", 1.0)], |r| r.1).0, "only");
        assert_eq!(median_by(vec![("x", 2.0), ("y", 1.0)], |r| r.1).0, "y");
    }

    #[test]
    fn in_core_samples_run_as_long_as_compared_runs_with_even_steady_counts() {
        use super::in_core_iterations;
        // 10 ms: 20 steady + 2 warm-up, as a compared run.
        assert_eq!(in_core_iterations(0.01), 22);
        // 4 ms: 50 steady (even) + 2.
        assert_eq!(in_core_iterations(0.004), 52);
        // 0.3 ms: 667 steady rounds up to 668, + 2.
        assert_eq!(in_core_iterations(0.0003), 670);
        // Slow or unknown: the floor, 8 steady + 2.
        assert_eq!(in_core_iterations(0.5), 10);
        assert_eq!(in_core_iterations(f64::NAN), 10);
        // Bounded: 2000 steady + 2.
        assert_eq!(in_core_iterations(1e-9), 2_002);
    }

    #[test]
    fn a_run_of_steady_iterations_adds_the_fewest_warm_up() {
        // `warm_up_iterations`: 2 of an even 4 or more recorded, 3 of an odd 5 or more, 1 of
        // 2–3, none of 0–1. Two steady iterations come from 3 or 4 recorded: the shorter run is
        // taken. Runs of three or more keep an even number, which is all tune asks for.
        assert_eq!(98 + steady_to_run(98), 100);
        for steady in (0..5000).filter(|s| s % 2 == 0 || *s == 1) {
            let total = steady + steady_to_run(steady);
            assert_eq!(total - super::warm_up(total), steady, "{steady}");
        }
        assert_eq!(2 + steady_to_run(2), 3);
        assert_eq!(1 + steady_to_run(1), 1);
        assert_eq!(steady_to_run(0), 0);
    }
}
