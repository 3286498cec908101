//! The `mheta` command line: one file per subcommand, each exposing
//! `#[derive(clap::Args)] pub struct XArgs` and `pub fn run(&XArgs) -> anyhow::Result<()>`.
//! To add a subcommand: add its file here as a module and a variant to [`Command`], and a match
//! arm in [`Cli::run`].

pub mod adapt_study;
pub mod allocate;
pub mod analyze;
pub mod bench;
pub mod cargo;
pub mod entry;
pub mod fit;
pub mod gangsim;
pub mod phases;
pub mod predict;
pub mod report;
pub mod search;
pub mod study;
pub mod tune;

use std::path::Path;

/// mheta: find fast data distributions for iterative SPMD programs on heterogeneous clusters.
#[derive(Debug, clap::Parser)]
#[command(name = "mheta", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Extract the MHETA structure (sections, tiles, stages, events) of a crate or a file.
    Analyze(analyze::AnalyzeArgs),
    /// Predict the iteration time of a distribution with the MHETA model.
    Predict(predict::PredictArgs),
    /// Search for the distribution with the lowest predicted iteration time.
    Search(search::SearchArgs),
    /// Measure model-evaluation and search speed on synthetic programs.
    Bench(bench::BenchArgs),
    /// Analyze, build, measure, search, then run the best and the spectrum: predicted vs actual.
    Tune(tune::TuneArgs),
    /// Write the HTML report of a tune run from the tune.json saved in DIR.
    Report(report::ReportArgs),
    /// The accuracy study: tune every fixture on every cluster family, then tabulate accuracy.
    Study(study::StudyArgs),
    /// Run-time adaptation under load that changes mid-run: static distribution vs rebalancer.
    AdaptStudy(adapt_study::AdaptStudyArgs),
    /// The I/O-aware gang scheduler of the seed's Chapter 3: ATT and end time per mode and
    /// task-count method.
    Gangsim(gangsim::GangsimArgs),
    /// Independent blocks, dependency graph and phases of a run's trace (seed 003), checked
    /// against the program's structure.
    Phases(phases::PhasesArgs),
    /// Fit the empirical N-T, P-T and NP-T models of seed 002 (Table V) to measured runs, by
    /// OLS and NNLS.
    Fit(fit::FitArgs),
    /// Search every process allocation with a fitted NP-T (P-T, N-T) model for the fastest,
    /// and its error ε against measured alternatives (seed 002).
    Allocate(allocate::AllocateArgs),
}

impl Cli {
    pub fn run(&self) -> anyhow::Result<()> {
        match &self.command {
            Command::Analyze(args) => analyze::run(args),
            Command::Predict(args) => predict::run(args),
            Command::Search(args) => search::run(args),
            Command::Bench(args) => bench::run(args),
            Command::Tune(args) => tune::run(args),
            Command::Report(args) => report::run(args),
            Command::Study(args) => study::run(args),
            Command::AdaptStudy(args) => adapt_study::run(args),
            Command::Gangsim(args) => gangsim::run(args),
            Command::Phases(args) => phases::run(args),
            Command::Fit(args) => fit::run(args),
            Command::Allocate(args) => allocate::run(args),
        }
    }
}

/// The command already reported its problems on stderr; exit with status 1 and print nothing
/// more.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Reported(pub String);

/// Runs `command` to completion and collects its output, like `Command::output` (standard input
/// is empty), as a child that does not outlive mheta: it starts in a process group of its own
/// (under `mpirun`, with every rank it starts), which is sent SIGTERM when mheta is ended by
/// SIGINT, SIGTERM or SIGHUP (`mheta_runtime::cleanup`); and on Linux the child is sent SIGTERM
/// when mheta dies in any other way (`PR_SET_PDEATHSIG`, armed by the calling thread, so call
/// this from a thread that lives as long as the child should).
pub fn output(command: &mut std::process::Command) -> std::io::Result<std::process::Output> {
    use std::os::unix::process::CommandExt as _;
    use std::process::Stdio;
    command.process_group(0);
    #[cfg(target_os = "linux")]
    {
        let parent = std::process::id();
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (prctl, getppid).
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // mheta died before the signal was armed.
                if libc::getppid() as u32 != parent {
                    return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
                }
                Ok(())
            });
        }
    }
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let _ended_with_mheta = mheta_runtime::cleanup::end_group_on_signal(child.id());
    child.wait_with_output()
}

/// Writes `contents` to `path` atomically (`mheta_runtime::measure::write_atomic`: a flushed
/// temporary file in the same directory, then rename).
pub fn write_atomic(path: &Path, contents: &str) -> anyhow::Result<()> {
    Ok(mheta_runtime::measure::write_atomic(
        path,
        contents.as_bytes(),
    )?)
}

/// Writes `text` to standard output; a full disk or a closed descriptor is an error saying so
/// (`println!` would panic). A reader that went away ends the process quietly (SIGPIPE, see
/// `main`).
pub fn stdout(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| anyhow::anyhow!("cannot write to standard output: {e}"))
}

/// Reads and parses a JSON file; errors name the file (and serde's line and column).
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    use anyhow::Context as _;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read `{}`", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("`{}` is not valid", path.display()))
}

/// Parses a search time budget such as `1s` or `250ms` (clap value parser).
pub fn parse_budget(s: &str) -> Result<std::time::Duration, String> {
    let seconds = mheta_runtime::cluster::units::parse_duration(s)?;
    std::time::Duration::try_from_secs_f64(seconds).map_err(|e| format!("budget `{s}`: {e}"))
}
