//! The command-line flags every mheta program shares (DESIGN §5). With feature `clap`, flatten
//! [`Args`] into a program's own clap parser:
//!
//! ```
//! #[derive(clap::Parser)]
//! struct Cli {
//!     #[command(flatten)]
//!     mheta: mheta_runtime::Args,
//!     /// A program-specific flag.
//!     #[arg(long, default_value_t = 1e-6)]
//!     tolerance: f64,
//! }
//! # use clap::Parser;
//! let cli = Cli::parse_from(["prog", "--ranks", "4", "--rows", "100", "--distribution", "10,20,30,40"]);
//! assert_eq!(cli.mheta.ranks, Some(4));
//! ```
//!
//! Without it, a program fills in [`Args`] itself (`Args { ranks: Some(4), ..Args::default() }`),
//! or, attached to an rsmpi program, reads its settings from `MHETA_*` ([`crate::attach`]).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::clock::ClockMode;
use crate::distribution::Distribution;
use crate::error::Error;
use crate::format::ClusterSpec;

/// Where ranks run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Backend {
    /// Ranks are threads of this process (nothing to install).
    Threads,
    /// Ranks are MPI processes under `mpirun` (feature `mpi`).
    Mpi,
}

/// Which distribution of rows to nodes a run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DistributionSpec {
    /// Equal strips.
    Block,
    /// Proportional to CPU power.
    Balanced,
    /// Proportional to in-core capacity (needs the program's bytes per row).
    InCore,
    /// As many nodes in core as possible, then balanced (needs the bytes per row).
    InCoreBalanced,
    /// Explicit row counts, one per rank.
    Rows(Vec<u64>),
    /// Row counts read from a file: `r0,r1,...` (commas or whitespace), a JSON array, or a JSON
    /// object with a `rows` array.
    File(PathBuf),
}

impl FromStr for DistributionSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let t = text.trim();
        Ok(match t {
            "block" => DistributionSpec::Block,
            "balanced" => DistributionSpec::Balanced,
            "in-core" => DistributionSpec::InCore,
            "in-core-balanced" => DistributionSpec::InCoreBalanced,
            "" => return Err("empty distribution".into()),
            // Row counts; also a list with an entry that is not a whole number of rows
            // (`-5,2005`, `1.5,2`), unless a file of that name exists. Every error starts with
            // the text itself.
            _ if t
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c.is_whitespace())
                || t.contains(',') && !std::path::Path::new(t).exists() =>
            {
                if let Some(bad) = t
                    .split(',')
                    .map(str::trim)
                    .find(|e| e.parse::<u64>().is_err())
                {
                    let entry = match bad {
                        "" => "an entry is empty".to_string(),
                        bad => format!("`{bad}` is not a whole number of rows (0 or more)"),
                    };
                    return Err(format!(
                        "`{t}` is not block, balanced, in-core, in-core-balanced, row counts \
                         `r0,r1,..` or a readable file: {entry}"
                    ));
                }
                DistributionSpec::Rows(
                    t.parse::<Distribution>()
                        .map_err(|e| format!("`{t}`: {e}"))?
                        .rows,
                )
            }
            _ => DistributionSpec::File(PathBuf::from(t)),
        })
    }
}

impl DistributionSpec {
    /// The rows per rank this gives for `rows` over `cluster`'s nodes, not yet validated; the
    /// in-core generators ask `bytes_per_row` for the program's bytes per row.
    pub fn distribution(
        &self,
        rows: u64,
        cluster: &ClusterSpec,
        bytes_per_row: impl FnOnce() -> Result<u64, Error>,
    ) -> Result<Distribution, Error> {
        Ok(match self {
            DistributionSpec::Block => Distribution::block(rows, cluster.nodes.len())?,
            DistributionSpec::Balanced => Distribution::balanced(rows, cluster)?,
            DistributionSpec::InCore => Distribution::in_core(rows, bytes_per_row()?, cluster)?,
            DistributionSpec::InCoreBalanced => {
                Distribution::in_core_balanced(rows, bytes_per_row()?, cluster)?
            }
            DistributionSpec::Rows(r) => Distribution::new(r.clone()),
            DistributionSpec::File(p) => Distribution::new(read_distribution_file(p)?),
        })
    }

    /// The name used in reports (`block`, `balanced`, …, or the row counts).
    pub fn name(&self) -> String {
        match self {
            DistributionSpec::Block => "block".into(),
            DistributionSpec::Balanced => "balanced".into(),
            DistributionSpec::InCore => "in-core".into(),
            DistributionSpec::InCoreBalanced => "in-core-balanced".into(),
            DistributionSpec::Rows(r) => Distribution::new(r.clone()).to_string(),
            DistributionSpec::File(p) => p.display().to_string(),
        }
    }
}

/// Read explicit row counts from a distribution file.
pub fn read_distribution_file(path: &Path) -> Result<Vec<u64>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let fail = |message: String| Error::DistributionFile {
        path: path.to_path_buf(),
        message,
    };
    let trimmed = text.trim();
    if trimmed.starts_with('[') || trimmed.starts_with('{') {
        use mheta_format::json::{parse, Value};
        let value = parse(&text).map_err(|e| fail(e.to_string()))?;
        let rows = match &value {
            Value::Array(_) => Some(&value),
            _ => value.get("rows"),
        };
        let counts = match rows {
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| match v {
                    Value::Number(n) => n.parse::<u64>().ok(),
                    _ => None,
                })
                .collect::<Option<Vec<u64>>>(),
            _ => None,
        };
        return counts.ok_or_else(|| {
            fail(
                "expected an array of row counts (non-negative integers), or an object with `rows`"
                    .into(),
            )
        });
    }
    let mut rows = Vec::new();
    for (line_no, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("");
        for entry in line
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|e| !e.is_empty())
        {
            rows.push(entry.parse::<u64>().map_err(|e| {
                fail(format!(
                    "line {}: `{entry}` is not a row count: {e}",
                    line_no + 1
                ))
            })?);
        }
    }
    if rows.is_empty() {
        return Err(fail("no row counts found".into()));
    }
    Ok(rows)
}

/// The flags shared by every mheta program (a `clap::Args` with feature `clap`).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct Args {
    /// Number of ranks [default: the cluster's node count, else the distribution's length, else 1].
    #[cfg_attr(feature = "clap", arg(long, value_name = "P"))]
    pub ranks: Option<usize>,
    /// Where ranks run.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = Backend::Threads))]
    pub backend: Backend,
    /// Cluster description (cluster.toml) to emulate [default: P copies of this machine].
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub cluster: Option<PathBuf>,
    /// block, balanced, in-core, in-core-balanced, a FILE of row counts, or r0,r1,...
    #[cfg_attr(
        feature = "clap",
        arg(long, value_name = "SPEC", default_value = "block")
    )]
    pub distribution: DistributionSpec,
    /// Rows S of the distributed dimension [default: the sum of explicit row counts].
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..)))]
    pub rows: Option<u64>,
    /// Iterations of the main loop.
    #[cfg_attr(feature = "clap", arg(long, value_name = "K", default_value_t = 10))]
    pub iterations: u32,
    /// Instrumented run: record every hook and write measurements (seed §5.2).
    #[cfg_attr(feature = "clap", arg(long))]
    pub instrument: bool,
    /// In an instrumented run: leave the arrays the memory budget keeps in core in core instead of
    /// forcing them through the disk (seed §5.2.2). Such a run measures in-core computation,
    /// which runs faster than computation between block reads and writes; `mheta tune` makes
    /// such runs after the forced run and merges them into its stages' `in_core` samples.
    #[cfg_attr(feature = "clap", arg(long))]
    pub keep_in_core: bool,
    /// Out-of-core arrays follow the memory the node has while the run goes (MMlib, seed 004
    /// Ch. 5–6): each is cut into panels and caches as many as fit, fewer when the cluster's load
    /// schedule takes memory, more when it gives it back. Without it a placement is fixed at the
    /// start, and an in-core array pages once the load takes its memory.
    #[cfg_attr(feature = "clap", arg(long))]
    pub mmlib: bool,
    /// Where an instrumented run writes its measurements [default: measurements.json].
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub measurements: Option<PathBuf>,
    /// Write the recorded events as Chrome trace JSON (implies --instrument).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub trace: Option<PathBuf>,
    /// Write the main loop's iteration times to FILE (`mheta-timings/1`); works with or without
    /// --instrument, and without it the run is otherwise untouched (one record per iteration).
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub timings: Option<PathBuf>,
    /// wall, virtual (thread CPU time / CPU power + emulated costs), or charged (emulated costs only).
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value_t = ClockMode::Wall))]
    pub clock: ClockMode,
    /// Write the structure the program embeds to FILE, then run.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub emit_structure: Option<PathBuf>,
    /// Directory for the ranks' out-of-core file stores [default: a fresh temporary directory].
    #[cfg_attr(feature = "clap", arg(long, value_name = "DIR"))]
    pub scratch: Option<PathBuf>,
    /// With --backend mpi: end the job when one communication waits longer than this (`300s`),
    /// naming the rank and the operation, instead of hanging when a rank is stopped or hung
    /// [default: wait forever].
    #[cfg_attr(feature = "clap", arg(long, value_name = "DURATION", value_parser = parse_timeout))]
    pub comm_timeout: Option<std::time::Duration>,
}

/// A positive duration with its unit (`300s`, `1500ms`).
#[cfg(feature = "clap")]
fn parse_timeout(text: &str) -> Result<std::time::Duration, String> {
    let seconds = crate::cluster::units::parse_duration(text)?;
    if !seconds.is_finite() || seconds <= 0.0 || seconds > 1e9 {
        return Err(format!(
            "`{text}` is not a timeout: expected a positive time such as 300s"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(seconds))
}

impl Default for Args {
    fn default() -> Self {
        Args {
            ranks: None,
            backend: Backend::Threads,
            cluster: None,
            distribution: DistributionSpec::Block,
            rows: None,
            iterations: 10,
            instrument: false,
            keep_in_core: false,
            mmlib: false,
            measurements: None,
            trace: None,
            timings: None,
            clock: ClockMode::Wall,
            emit_structure: None,
            scratch: None,
            comm_timeout: None,
        }
    }
}

#[cfg(feature = "clap")]
#[derive(clap::Parser)]
#[command(name = "mheta-program")]
struct Standalone {
    #[command(flatten)]
    args: Args,
}

impl Args {
    /// Parse the shared flags alone from `argv` (the first item is the program name; feature
    /// `clap`).
    #[cfg(feature = "clap")]
    pub fn try_parse_from<I, T>(argv: I) -> Result<Args, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        <Standalone as clap::Parser>::try_parse_from(argv).map(|s| s.args)
    }

    /// Is this an instrumented run (`--instrument`, `--measurements` or `--trace`)?
    pub fn instrumented(&self) -> bool {
        self.instrument || self.measurements.is_some() || self.trace.is_some()
    }

    /// Where the measurements go when instrumented.
    pub fn measurements_path(&self) -> PathBuf {
        self.measurements
            .clone()
            .unwrap_or_else(|| PathBuf::from("measurements.json"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_flag() {
        let a = Args::try_parse_from([
            "p",
            "--ranks",
            "3",
            "--cluster",
            "c.toml",
            "--distribution",
            "1, 2,3",
            "--rows",
            "6",
            "--iterations",
            "4",
            "--instrument",
            "--measurements",
            "m.json",
            "--trace",
            "t.json",
            "--clock",
            "virtual",
            "--emit-structure",
            "s.json",
            "--backend",
            "threads",
        ])
        .unwrap();
        assert_eq!(a.ranks, Some(3));
        assert_eq!(a.distribution, DistributionSpec::Rows(vec![1, 2, 3]));
        assert_eq!(a.clock, ClockMode::Virtual);
        assert_eq!(a.iterations, 4);
        assert!(a.instrumented());
        assert_eq!(a.emit_structure.as_deref(), Some(Path::new("s.json")));
    }

    #[test]
    fn distribution_spec_forms() {
        assert_eq!(
            "in-core-balanced".parse(),
            Ok(DistributionSpec::InCoreBalanced)
        );
        assert_eq!("7".parse(), Ok(DistributionSpec::Rows(vec![7])));
        assert_eq!(
            "dist.txt".parse(),
            Ok(DistributionSpec::File("dist.txt".into()))
        );
        assert!("1,,2".parse::<DistributionSpec>().is_err());
        // A list with a negative or fractional entry says which entry, not "no such file".
        let err = "-5,2005".parse::<DistributionSpec>().unwrap_err();
        assert!(err.contains("`-5` is not a whole number of rows"), "{err}");
        let err = "3,,x".parse::<DistributionSpec>().unwrap_err();
        assert!(err.contains("an entry is empty"), "{err}");
        let err = "1.5,2".parse::<DistributionSpec>().unwrap_err();
        assert!(err.contains("`1.5`"), "{err}");
        assert!(Args::try_parse_from(["p", "--clock", "sundial"]).is_err());
        // Zero rows is not a problem size.
        let err = Args::try_parse_from(["p", "--rows", "0"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("--rows"), "{err}");
    }

    #[test]
    fn distribution_files() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("d.txt");
        std::fs::write(&text, "# rows\n1, 2\n3\n").unwrap();
        assert_eq!(read_distribution_file(&text).unwrap(), vec![1, 2, 3]);
        let json = dir.path().join("d.json");
        std::fs::write(&json, r#"{"rows": [4, 5]}"#).unwrap();
        assert_eq!(read_distribution_file(&json).unwrap(), vec![4, 5]);
        let bad = dir.path().join("bad.txt");
        std::fs::write(&bad, "1\n2 x\n").unwrap();
        let err = read_distribution_file(&bad).unwrap_err().to_string();
        assert!(
            err.contains("bad.txt") && err.contains("line 2") && err.contains("`x`"),
            "{err}"
        );
        // `mheta search --json` output: an object whose `rows` is the distribution, among
        // other fields; and a bare array.
        std::fs::write(
            &json,
            "{\n  \"method\": \"gbs\",\n  \"predicted_s\": 0.5,\n  \"rows\": [6, 7]\n}\n",
        )
        .unwrap();
        assert_eq!(read_distribution_file(&json).unwrap(), vec![6, 7]);
        std::fs::write(&json, "\n [8, 9]").unwrap();
        assert_eq!(read_distribution_file(&json).unwrap(), vec![8, 9]);
        for (text, says) in [
            ("{\"rows\": [1,\n 2", "line 2, column 3"),
            ("{\"rows\": [1, -2]}", "non-negative integers"),
            ("{\"rows\": [1.5]}", "non-negative integers"),
            ("{\"cols\": [1]}", "an object with `rows`"),
        ] {
            std::fs::write(&json, text).unwrap();
            let err = read_distribution_file(&json).unwrap_err().to_string();
            assert!(
                err.contains("d.json") && err.contains(says),
                "{text}: {err}"
            );
        }
    }
}
