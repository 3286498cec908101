//! The I/O-aware gang scheduler of the seed's Chapter 3: a deterministic discrete-event
//! simulator of gang-scheduled jobs whose processes do I/O when they run on fewer processors
//! than their critical number.
//!
//! - [`jobs`]: the job description of §3.2.2 (equations 3.1–3.3) and the mixes of Table 3.2.
//! - [`methods`]: the four task-count methods of §3.3.1 (p-, c-, a- and cP-based).
//! - [`matrix`]: the trace matrix (§3.1.1), Schark's first fit and the Enhanced multi-row
//!   placement with its fitness function (§3.2.3–3.2.5, Table 3.1).
//! - [`experiment`]: the runs behind Tables 3.3–3.5.
//!
//! Times are in simulated time units (STU). Like the rest of this crate, the simulator is pure
//! computation: a mix and a [`Config`] in, an [`Outcome`] per (mode, method) out.

pub mod bridge;
pub mod experiment;
pub mod jobs;
pub mod matrix;
pub mod methods;
mod sim;

pub use jobs::{Job, MixSpec};
pub use methods::Method;
pub use sim::slices;

/// Errors of the gang simulator; each names the field at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GangError {
    #[error("{job}: field `{field}` is {value}, expected {expected}")]
    BadJob {
        job: String,
        field: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("field `{field}` is {value}, expected {expected}")]
    BadConfig {
        field: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("the mix has no jobs")]
    NoJobs,
    #[error("{unfinished} jobs had not finished at the time limit of {limit} STU")]
    TimeLimit { limit: f64, unfinished: usize },
}

/// The scheduler's mode (§3.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One row per job, first fit: the original Schark simulator's bin packing.
    Schark,
    /// `N_i^s` rows per job, chosen by the fitness function (§3.2.3–3.2.5).
    Enhanced,
}

impl Mode {
    pub const ALL: [Mode; 2] = [Mode::Schark, Mode::Enhanced];

    /// The name other tools read (`--json`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Schark => "schark",
            Mode::Enhanced => "enhanced",
        }
    }
}

/// The most processors a simulated machine may have: the trace matrix holds a cell per processor
/// and row, and the thesis's machine has 128.
pub const MAX_PROCESSORS: u32 = 1 << 14;

/// The machine and the scheduler's constants (§3.3, Tables 3.1 and 3.2).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// `N_S^p`: processors of the machine (§3.3: a 128-node mesh).
    pub processors: u32,
    /// `T^s`: the duration of a time slice (§3.3: 20 STU).
    pub time_slice: f64,
    /// `T_w^β`: the duration of one disk access (§3.3: 2 STU).
    pub io_duration: f64,
    /// The time a process loses at the start of its slice when another process ran on its
    /// processor since its last slice: restoring its state and reloading its working set
    /// (§3.2.4's `T_c^i`). The thesis gives no value; we take 1 STU, half a disk access (the
    /// working set of a process of a job in several rows is usually still in memory: its other
    /// rows are the ones just before).
    pub context_switch: f64,
    /// The time a process loses when it runs on another processor than in the job's previous
    /// row (§3.2.4's `T_m^i`). The thesis gives no value; we take 1 STU.
    pub migration: f64,
    /// α: the processors beyond `N_i^p` the Enhanced placement considers (§3.2.5: 2).
    pub alpha: usize,
    /// The most processor combinations the Enhanced placement tries per target row (ours; see
    /// [`matrix::enhanced`]).
    pub max_combinations: usize,
    /// The simulation stops with [`GangError::TimeLimit`] here. The thesis's hard limit was
    /// 80,000 STU, "a sufficiently high number so that all of the jobs finished"; ours is
    /// larger by default, so a mix that takes longer reports how long it took instead.
    pub time_limit: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            processors: 128,
            time_slice: 20.0,
            io_duration: 2.0,
            context_switch: 1.0,
            migration: 1.0,
            alpha: 2,
            max_combinations: 16,
            time_limit: 10_000_000.0,
        }
    }
}

impl Config {
    /// Refuses constants the simulation cannot run with, naming the field.
    pub fn check(&self) -> Result<(), GangError> {
        let bad = |field: &'static str, value: String, expected: &'static str| {
            Err(GangError::BadConfig {
                field,
                value,
                expected,
            })
        };
        let finite_non_negative = |x: f64| x.is_finite() && x >= 0.0;
        if self.processors == 0 || self.processors > MAX_PROCESSORS {
            return bad(
                "processors",
                self.processors.to_string(),
                "between 1 and 16384",
            );
        }
        if !(self.time_slice.is_finite() && self.time_slice > 0.0) {
            return bad(
                "time_slice",
                self.time_slice.to_string(),
                "a finite positive number of STU",
            );
        }
        for (field, value) in [
            ("io_duration", self.io_duration),
            ("context_switch", self.context_switch),
            ("migration", self.migration),
        ] {
            if !finite_non_negative(value) {
                return bad(
                    field,
                    value.to_string(),
                    "a finite non-negative number of STU",
                );
            }
        }
        if self.context_switch + self.migration >= self.time_slice {
            return bad(
                "context_switch",
                format!(
                    "{} (with migration {})",
                    self.context_switch, self.migration
                ),
                "context switch plus migration shorter than a time slice",
            );
        }
        if self.max_combinations == 0 {
            return bad("max_combinations", "0".into(), "at least 1");
        }
        if self.time_limit.is_nan() || self.time_limit <= 0.0 {
            return bad(
                "time_limit",
                self.time_limit.to_string(),
                "a positive number of STU",
            );
        }
        Ok(())
    }
}

/// One run: ATT and end time of a mix under one mode and one method.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Outcome {
    pub mode: Mode,
    pub method: Method,
    /// Average turnaround time (all jobs arrive at 0: the mean finishing time), STU.
    pub att: f64,
    /// When the last job finished, STU.
    pub end_time: f64,
    /// Each job's finishing time, in mix order.
    #[serde(skip)]
    pub turnaround: Vec<f64>,
}

/// Runs `jobs` under one mode and one method.
pub fn simulate(
    jobs: &[Job],
    mode: Mode,
    method: Method,
    config: &Config,
) -> Result<Outcome, GangError> {
    config.check()?;
    if jobs.is_empty() {
        return Err(GangError::NoJobs);
    }
    for job in jobs {
        job.check()?;
    }
    sim::simulate(jobs, mode, method, config)
}

/// Runs `jobs` under every mode and method: Schark then Enhanced, each with the methods in the
/// order of the thesis's tables (p-, a-, cP-, c-based).
pub fn simulate_all(jobs: &[Job], config: &Config) -> Result<Vec<Outcome>, GangError> {
    let mut out = Vec::new();
    for mode in Mode::ALL {
        for method in Method::ALL {
            out.push(simulate(jobs, mode, method, config)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
