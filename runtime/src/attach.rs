//! What an attached program is asked to do, read from the environment (`MHETA_*`), the way
//! Caliper reads `CALI_CONFIG` and Score-P its `SCOREP_*` variables: measurement is switched on
//! at run time, without touching the program's own command line.
//!
//! | variable | meaning |
//! |---|---|
//! | `MHETA_INSTRUMENT` | `1`/`true` records regions and calls (`0`/`false`: not) |
//! | `MHETA_MEASUREMENTS` | where rank 0 writes `mheta-measurements/1` (implies instrumenting) |
//! | `MHETA_TRACE` | a Chrome trace of the records (implies instrumenting) |
//! | `MHETA_TIMINGS` | `mheta-timings/1`: the main loop's iteration times |
//! | `MHETA_DISTRIBUTION` | `block`, `balanced`, `in-core`, `in-core-balanced`, a file, or `r0,r1,..` |
//! | `MHETA_CLUSTER` | a `cluster.toml`: each rank emulates its node's CPU power |
//! | `MHETA_CLOCK` | `wall` (the only clock of a real MPI job) |
//!
//! Every value is checked when the program attaches, before any work: a bad one is an
//! [`Error::Env`](crate::error::Error::Env) naming the variable. With none of them set,
//! attaching does nothing.
//!
//! Only an MPI session (`comm::mpi::attach`) reads them, and, before it attaches,
//! [`regions_requested`]: without feature `mpi` this module holds just the names, and
//! `regions_requested` is false.

/// Every variable an attached program reads.
pub const VARIABLES: [&str; 7] = [
    "MHETA_INSTRUMENT",
    "MHETA_MEASUREMENTS",
    "MHETA_TRACE",
    "MHETA_TIMINGS",
    "MHETA_DISTRIBUTION",
    "MHETA_CLUSTER",
    "MHETA_CLOCK",
];

/// The default measurements file of an instrumented run without `MHETA_MEASUREMENTS`.
pub const DEFAULT_MEASUREMENTS: &str = "mheta-measurements.json";

#[cfg(any(feature = "mpi", test))]
pub use settings::EnvSettings;

/// Whether this process has not attached yet and its environment asks an attaching program for
/// hooks that time regions or emulate a slower CPU: instrumenting (`MHETA_INSTRUMENT`,
/// `MHETA_MEASUREMENTS`, `MHETA_TRACE`), or an `MHETA_CLUSTER` with a node slower than this
/// machine (which node is this process's is not known before MPI starts). The environment is
/// read once per process; false when it does not parse (attaching reports that), once the
/// process has attached (the hooks' own state, `hooks::regions_active`, then decides exactly),
/// and without feature `mpi`, where nothing attaches.
///
/// `#[mheta::solver]` takes its instrumented body when this holds: a program whose solver is
/// `main`, entered before it attaches inside it, then records from the moment it attaches (its
/// guards do nothing until then). A solver called after attaching is not affected.
pub fn regions_requested() -> bool {
    #[cfg(feature = "mpi")]
    {
        use std::sync::atomic::Ordering;
        if ATTACHED.load(Ordering::Relaxed) {
            return false;
        }
        static REQUESTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *REQUESTED.get_or_init(|| {
            never_attached::check_at_exit();
            EnvSettings::from_env().is_ok_and(|env| {
                env.instrument
                    || env.cluster.as_deref().is_some_and(|path| {
                        crate::format::ClusterSpec::load(path)
                            .is_ok_and(|c| (0..c.nodes.len()).any(|r| c.least_cpu(r) < 1.0))
                    })
            })
        })
    }
    #[cfg(not(feature = "mpi"))]
    false
}

/// Set when the process attaches (`comm::mpi::attach`).
#[cfg(feature = "mpi")]
pub(crate) static ATTACHED: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// A program that runs a `#[mheta::solver]` function with `MHETA_*` set but never attaches
/// records nothing and writes nothing: at its exit, rank 0 says so and what to add, where it
/// would otherwise end in silence (the variables are only read by an attaching program).
#[cfg(any(feature = "mpi", test))]
mod never_attached {
    /// Registers the check at process exit, once, when some `MHETA_*` variable is set.
    #[cfg(feature = "mpi")]
    pub(super) fn check_at_exit() {
        fn report() {
            use std::sync::atomic::Ordering;
            if super::ATTACHED.load(Ordering::Relaxed) {
                return;
            }
            if let Some(message) = warning(&set_variables(), world_rank()) {
                // At exit stderr may be gone; a failed write is no reason to abort.
                let _ = std::io::Write::write_all(
                    &mut std::io::stderr(),
                    format!("{message}\n").as_bytes(),
                );
            }
        }
        extern "C" fn at_exit() {
            // Nothing may unwind out of an exit handler.
            let _ = std::panic::catch_unwind(report);
        }
        if !set_variables().is_empty() {
            // SAFETY: `at_exit` is a function with C linkage and no arguments, as `atexit` takes;
            // it unwinds into nothing.
            unsafe { libc::atexit(at_exit) };
        }
    }

    /// The `MHETA_*` variables set in this process's environment.
    #[cfg(feature = "mpi")]
    fn set_variables() -> Vec<&'static str> {
        super::VARIABLES
            .into_iter()
            .filter(|v| std::env::var_os(v).is_some())
            .collect()
    }

    /// This process's rank in the job as the launcher tells it (Open MPI, MPICH and Slurm each
    /// export it); `None` when none does. MPI itself has been finalized at exit.
    #[cfg(feature = "mpi")]
    fn world_rank() -> Option<u64> {
        [
            "OMPI_COMM_WORLD_RANK",
            "PMIX_RANK",
            "PMI_RANK",
            "SLURM_PROCID",
        ]
        .into_iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
    }

    /// What a process that never attached says at exit, with `set` the variables set: rank 0
    /// (or a process whose rank is unknown) speaks for the job; `None` when nothing is set.
    pub(super) fn warning(set: &[&str], rank: Option<u64>) -> Option<String> {
        if set.is_empty() || rank.is_some_and(|r| r != 0) {
            return None;
        }
        let (names, verb) = match set {
            [one] => (one.to_string(), "is"),
            [init @ .., last] => (format!("{} and {last}", init.join(", ")), "are"),
            [] => return None,
        };
        Some(format!(
            "mheta: {names} {verb} set, but this program never attached, so mheta recorded nothing \
             and wrote no file: `#[mheta::solver]` records only in a program that calls \
             `mheta::mpi::attach(&world)` on every rank after `mpi::initialize()` and ends with \
             `session.finish()` (README, quick start)"
        ))
    }

    #[cfg(test)]
    mod tests {
        use super::warning;

        #[test]
        fn rank_zero_names_what_is_set_and_what_to_add() {
            let one = warning(&["MHETA_MEASUREMENTS"], Some(0)).unwrap();
            assert!(
                one.starts_with(
                    "mheta: MHETA_MEASUREMENTS is set, but this program never attached"
                ),
                "{one}"
            );
            assert!(one.contains("mheta::mpi::attach(&world)"), "{one}");
            assert!(
                !one.contains("  ") && !one.contains('\n'),
                "one line: {one}"
            );
            let two = warning(&["MHETA_TRACE", "MHETA_CLUSTER"], None).unwrap();
            assert!(
                two.starts_with("mheta: MHETA_TRACE and MHETA_CLUSTER are set"),
                "{two}"
            );
            let three = warning(
                &["MHETA_INSTRUMENT", "MHETA_TRACE", "MHETA_TIMINGS"],
                Some(0),
            )
            .unwrap();
            assert!(
                three.starts_with("mheta: MHETA_INSTRUMENT, MHETA_TRACE and MHETA_TIMINGS are set"),
                "{three}"
            );
        }

        #[test]
        fn other_ranks_and_unset_environments_say_nothing() {
            assert_eq!(warning(&["MHETA_MEASUREMENTS"], Some(3)), None);
            assert_eq!(warning(&[], Some(0)), None);
            assert_eq!(warning(&[], None), None);
        }
    }
}

#[cfg(any(feature = "mpi", test))]
mod settings {
    use std::path::PathBuf;

    use super::DEFAULT_MEASUREMENTS;
    use crate::args::DistributionSpec;
    use crate::clock::ClockMode;
    use crate::error::Error;

    /// The settings the environment asks for.
    #[derive(Debug, Clone, PartialEq)]
    pub struct EnvSettings {
        /// `MHETA_INSTRUMENT`: record every hook and write measurements (also implied by
        /// `MHETA_MEASUREMENTS` and `MHETA_TRACE`).
        pub instrument: bool,
        /// `MHETA_MEASUREMENTS`: where rank 0 writes the measurements; `None` means
        /// [`DEFAULT_MEASUREMENTS`] when instrumenting.
        pub measurements: Option<PathBuf>,
        /// `MHETA_TRACE`: where rank 0 writes the Chrome trace; `None` writes none.
        pub trace: Option<PathBuf>,
        /// `MHETA_TIMINGS`: where rank 0 writes the iteration times (`mheta-timings/1`); `None` writes
        /// none.
        pub timings: Option<PathBuf>,
        /// `MHETA_DISTRIBUTION`: which rows `Session::rows` hands out; Block when unset.
        pub distribution: DistributionSpec,
        /// `MHETA_CLUSTER`: the `cluster.toml` whose CPU powers are emulated; `None` runs at this
        /// machine's speed.
        pub cluster: Option<PathBuf>,
        /// `MHETA_CLOCK`: the clock the session measures with (only `wall` under MPI).
        pub clock: ClockMode,
    }

    impl EnvSettings {
        /// Reads the process's environment.
        pub fn from_env() -> Result<EnvSettings, Error> {
            EnvSettings::parse(|name| std::env::var_os(name))
        }

        /// Reads the variables through `get` (the environment, or a table in tests).
        pub fn parse(
            get: impl Fn(&str) -> Option<std::ffi::OsString>,
        ) -> Result<EnvSettings, Error> {
            let text = |var: &'static str| -> Result<Option<String>, Error> {
                match get(var) {
                    None => Ok(None),
                    Some(v) => match v.into_string() {
                        Ok(s) if s.trim().is_empty() => Err(env_error(var, " is empty")),
                        Ok(s) => Ok(Some(s.trim().to_string())),
                        Err(_) => Err(env_error(var, " is not valid UTF-8")),
                    },
                }
            };
            let path = |var: &'static str| -> Result<Option<PathBuf>, Error> {
                Ok(text(var)?.map(PathBuf::from))
            };
            let instrument_flag = match text("MHETA_INSTRUMENT")?.as_deref() {
                None => None,
                Some("1" | "true" | "yes" | "on") => Some(true),
                Some("0" | "false" | "no" | "off") => Some(false),
                Some(other) => {
                    return Err(env_error(
                        "MHETA_INSTRUMENT",
                        &format!(" is `{other}`; expected 1 or 0 (true/false, yes/no, on/off)"),
                    ))
                }
            };
            let measurements = path("MHETA_MEASUREMENTS")?;
            let trace = path("MHETA_TRACE")?;
            if instrument_flag == Some(false) {
                for (var, set) in [
                    ("MHETA_MEASUREMENTS", measurements.is_some()),
                    ("MHETA_TRACE", trace.is_some()),
                ] {
                    if set {
                        return Err(env_error(
                            var,
                            " is set but MHETA_INSTRUMENT=0: measurements need an instrumented run",
                        ));
                    }
                }
            }
            let instrument =
                instrument_flag.unwrap_or(false) || measurements.is_some() || trace.is_some();
            let distribution = match text("MHETA_DISTRIBUTION")? {
                None => DistributionSpec::Block,
                Some(t) => t
                    .parse::<DistributionSpec>()
                    .map_err(|e| env_error("MHETA_DISTRIBUTION", &format!(": {e}")))?,
            };
            if let DistributionSpec::File(p) = &distribution {
                if !p.is_file() {
                    return Err(env_error(
                        "MHETA_DISTRIBUTION",
                        &format!(
                            ": `{}` is not block, balanced, in-core, in-core-balanced, row counts \
                         `r0,r1,..` or a readable file",
                            p.display()
                        ),
                    ));
                }
            }
            let cluster = path("MHETA_CLUSTER")?;
            if let Some(p) = &cluster {
                if !p.is_file() {
                    return Err(env_error(
                        "MHETA_CLUSTER",
                        &format!(": `{}` is not a readable file", p.display()),
                    ));
                }
            }
            let clock = match text("MHETA_CLOCK")?.as_deref() {
                None | Some("wall") => ClockMode::Wall,
                Some(other @ ("virtual" | "charged")) => {
                    return Err(env_error(
                        "MHETA_CLOCK",
                        &format!(
                            " is `{other}`, which needs ranks that are threads of one process \
                         (`--backend threads`); an MPI job runs on the wall clock"
                        ),
                    ))
                }
                Some(other) => {
                    return Err(env_error(
                        "MHETA_CLOCK",
                        &format!(" is `{other}`; the only clock of an MPI job is `wall`"),
                    ))
                }
            };
            Ok(EnvSettings {
                instrument,
                measurements,
                trace,
                timings: path("MHETA_TIMINGS")?,
                distribution,
                cluster,
                clock,
            })
        }

        /// Nothing asked: no hooks, no files, Block rows.
        pub fn is_idle(&self) -> bool {
            !self.instrument
                && self.timings.is_none()
                && self.cluster.is_none()
                && self.distribution == DistributionSpec::Block
        }

        /// Where rank 0 writes the measurements of an instrumented run.
        pub fn measurements_path(&self) -> PathBuf {
            self.measurements
                .clone()
                .unwrap_or_else(|| PathBuf::from(DEFAULT_MEASUREMENTS))
        }
    }

    fn env_error(var: &'static str, message: &str) -> Error {
        Error::Env {
            var,
            message: message.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    use crate::args::DistributionSpec;
    use crate::error::Error;

    fn parse(vars: &[(&str, &str)]) -> Result<EnvSettings, Error> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        EnvSettings::parse(|name| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.into()))
    }

    fn message(vars: &[(&str, &str)]) -> String {
        parse(vars).expect_err("a misuse").to_string()
    }

    #[test]
    fn nothing_set_is_idle_block() {
        let s = parse(&[]).unwrap();
        assert!(s.is_idle());
        assert_eq!(s.distribution, DistributionSpec::Block);
        assert_eq!(s.measurements_path(), PathBuf::from(DEFAULT_MEASUREMENTS));
    }

    #[test]
    fn measurements_or_a_trace_imply_instrumenting() {
        assert!(parse(&[("MHETA_INSTRUMENT", "1")]).unwrap().instrument);
        assert!(
            parse(&[("MHETA_MEASUREMENTS", "m.json")])
                .unwrap()
                .instrument
        );
        assert!(parse(&[("MHETA_TRACE", "t.json")]).unwrap().instrument);
        let timed = parse(&[("MHETA_TIMINGS", "t.json")]).unwrap();
        assert!(!timed.instrument && !timed.is_idle());
        let rows = parse(&[("MHETA_DISTRIBUTION", "3, 5")]).unwrap();
        assert_eq!(rows.distribution, DistributionSpec::Rows(vec![3, 5]));
        assert!(!rows.is_idle());
    }

    #[test]
    fn every_misuse_names_its_variable() {
        let cases: &[(&[(&str, &str)], &str)] = &[
            (
                &[("MHETA_INSTRUMENT", "maybe")],
                "MHETA_INSTRUMENT is `maybe`; expected 1 or 0",
            ),
            (&[("MHETA_INSTRUMENT", " ")], "MHETA_INSTRUMENT is empty"),
            (
                &[("MHETA_INSTRUMENT", "0"), ("MHETA_MEASUREMENTS", "m.json")],
                "MHETA_MEASUREMENTS is set but MHETA_INSTRUMENT=0",
            ),
            (
                &[("MHETA_INSTRUMENT", "off"), ("MHETA_TRACE", "t.json")],
                "MHETA_TRACE is set but MHETA_INSTRUMENT=0",
            ),
            (
                &[("MHETA_DISTRIBUTION", "no/such/file")],
                "MHETA_DISTRIBUTION: `no/such/file` is not block, balanced",
            ),
            (
                &[("MHETA_DISTRIBUTION", "3,,x")],
                "MHETA_DISTRIBUTION: `3,,x` is not block",
            ),
            (
                &[("MHETA_CLUSTER", "no/such/cluster.toml")],
                "MHETA_CLUSTER: `no/such/cluster.toml` is not a readable file",
            ),
            (
                &[("MHETA_CLOCK", "virtual")],
                "MHETA_CLOCK is `virtual`, which needs ranks that are threads",
            ),
            (
                &[("MHETA_CLOCK", "cpu")],
                "MHETA_CLOCK is `cpu`; the only clock of an MPI job is `wall`",
            ),
        ];
        for (vars, expected) in cases {
            let got = message(vars);
            assert!(
                got.contains(expected),
                "{vars:?}: `{got}` does not say `{expected}`"
            );
        }
    }

    #[test]
    fn row_counts_that_do_not_parse_name_the_variable() {
        let got = message(&[("MHETA_DISTRIBUTION", "10,0x5")]);
        assert!(got.starts_with("MHETA_DISTRIBUTION"), "{got}");
    }
}
