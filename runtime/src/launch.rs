//! Starting a run: resolve the arguments into [`RunSettings`], start one rank per thread
//! (`threads` backend), run the program on each, and — for an instrumented run — turn every
//! rank's records into the measurements file and the Chrome trace (and, with `--timings`, the
//! iteration times into `mheta-timings/1`).
//!
//! Failure: the first rank whose closure returns an error or panics poisons the communicator;
//! every other rank's pending or later communication fails at once, so `launch` returns
//! [`Error::RankFailed`] naming that rank and its message, and writes no measurements.
//!
//! `--backend mpi` (feature `mpi`): this process is one rank of the job `mpirun` started
//! (`crate::comm::mpi`). `launch` then returns this rank's result only, rank 0 writes the
//! measurements and trace, and a failing rank aborts the whole job naming itself.

use std::path::PathBuf;
use std::sync::Arc;

use crate::args::{read_distribution_file, Args, Backend, DistributionSpec};
use crate::comm::threads::ThreadWorld;
use crate::context::{Context, RunSettings};
use crate::distribution::Distribution;
use crate::error::Error;
use crate::format::{ClusterSpec, Microbenchmarks};
use crate::hooks::RankRecords;
use crate::measure::{self, write_atomic};
use crate::ooc;
use crate::rank::rank_work;

/// Most ranks the threads backend starts.
pub const MAX_THREAD_RANKS: usize = 4096;
const RANK_STACK_BYTES: usize = 8 << 20;

/// Run `f` on every rank with the flags in `args`; returns every rank's result in rank order
/// (threads backend), or this process's rank's result alone (`--backend mpi`).
///
/// Each rank runs `f` on a thread of its own (`--backend threads`, the default), or as this MPI
/// process (`--backend mpi`). When a rank's closure fails or panics, every other rank's
/// communication fails at once and `launch` returns [`Error::RankFailed`] naming it. An
/// instrumented run (`--instrument`) writes its measurements once every rank has succeeded.
///
/// ```
/// use mheta_runtime::{launch, Args, CommExt, ReduceOp};
///
/// // Two ranks over 10 rows; Block gives rank 0 rows 0..5 and rank 1 rows 5..10.
/// let args = Args::try_parse_from(["prog", "--ranks", "2", "--rows", "10"])?;
/// let sums = launch(&args, |ctx| {
///     let mine: f64 = ctx.partition(10).map(|row| row as f64).sum();
///     ctx.comm().all_reduce_value(mine, ReduceOp::Sum)
/// })?;
/// assert_eq!(sums, vec![45.0, 45.0]); // every rank's result, in rank order
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A rank that fails stops the run:
///
/// ```
/// use mheta_runtime::{launch, Args, Error};
///
/// let args = Args::try_parse_from(["prog", "--ranks", "2", "--rows", "2"])?;
/// let result = launch(&args, |ctx| {
///     if ctx.rank() == 1 {
///         return Err("no convergence");
///     }
///     Ok(ctx.rank())
/// });
/// assert!(matches!(result, Err(Error::RankFailed { rank: 1, .. })));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn launch<R, E, F>(args: &Args, f: F) -> Result<Vec<R>, Error>
where
    F: Fn(&Context) -> Result<R, E> + Sync,
    R: Send,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    Launch::new(args).run(f)
}

/// A run being configured: the arguments plus what only the program knows.
///
/// [`launch`] is `Launch::new(args).run(f)`. Build a `Launch` to tell the run what only the
/// program knows (the bytes a row takes for the in-core generators), to look at
/// the resolved settings first, or to collect the records instead of writing files.
///
/// ```
/// use mheta_runtime::{Args, CommError, Launch};
///
/// let args = Args::try_parse_from(["prog", "--ranks", "3", "--distribution", "2,3,5"])?;
/// let launch = Launch::new(&args);
/// let settings = launch.settings()?;
/// assert_eq!((settings.size, settings.rows), (3, 10)); // S is the sum of the counts
/// assert_eq!(settings.distribution, vec![2, 3, 5]);
///
/// let ranges = launch.run(|ctx| Ok::<_, CommError>(ctx.partition(10)))?;
/// assert_eq!(ranges, vec![0..2, 2..5, 5..10]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Launch<'a> {
    args: &'a Args,
    bytes_per_row: Option<u64>,
    microbenchmarks: bool,
}

/// Checks that the distributed arrays this process would hold in core fit in the memory it can
/// use: every rank's under the threads backend (they share the process), this rank's under MPI.
/// A node holds its rows' bytes, or at most its memory (the rest is out of core).
fn fits_in_memory(
    rows: &[u64],
    bytes_per_row: u64,
    cluster: &ClusterSpec,
    backend: Backend,
) -> Result<(), Error> {
    let Some(machine) = crate::cluster::machine_memory() else {
        return Ok(());
    };
    let in_core = |rank: usize| {
        ooc::in_core_bytes(
            u128::from(rows[rank]) * u128::from(bytes_per_row),
            cluster.nodes[rank].memory_bytes,
        )
    };
    let (held, whose) = match backend {
        Backend::Threads => ((0..rows.len()).map(in_core).sum(), "its ranks"),
        Backend::Mpi => (in_core(process_rank(backend)), "this rank"),
    };
    if held > u128::from(machine) {
        return Err(Error::Args(format!(
            "{} rows of {bytes_per_row} bytes: {whose} would keep {held} bytes of distributed \
             arrays in core, more than the {machine} bytes this process can use (use fewer \
             rows, or a cluster description whose nodes have less memory so that the arrays \
             go out of core)",
            rows.iter().sum::<u64>()
        )));
    }
    Ok(())
}

/// One rank's outcome, handed back to the launcher.
struct RankOutcome<R> {
    result: Option<R>,
    records: RankRecords,
    micro: Microbenchmarks,
}

impl<'a> Launch<'a> {
    /// A run of `args` (a `#[mheta::solver]` registers the program's structure when it first
    /// runs), no bytes-per-row hint, and the start-up microbenchmarks.
    pub fn new(args: &'a Args) -> Launch<'a> {
        Launch {
            args,
            bytes_per_row: None,
            microbenchmarks: true,
        }
    }

    /// Skip the start-up network and disk microbenchmarks of instrumented runs (their figures
    /// are then zero); for tests that only look at records.
    pub fn without_microbenchmarks(mut self) -> Self {
        self.microbenchmarks = false;
        self
    }

    /// Bytes one row of the distributed arrays occupies in total (for the in-core generators).
    pub fn bytes_per_row(mut self, bytes: u64) -> Self {
        self.bytes_per_row = Some(bytes);
        self
    }

    /// Resolve the arguments into the settings every rank shares. With `--backend mpi` this
    /// initialises MPI, and the rank count is the MPI world's size.
    pub fn settings(&self) -> Result<RunSettings, Error> {
        let a = self.args;
        if a.clock.is_virtual() && a.backend != Backend::Threads {
            return Err(Error::Args(
                "--clock virtual and charged need --backend threads".into(),
            ));
        }
        let world_size = backend_world_size(a.backend)?;
        let explicit = match &a.distribution {
            DistributionSpec::Rows(r) => Some(r.clone()),
            DistributionSpec::File(p) => Some(read_distribution_file(p)?),
            _ => None,
        };
        let cluster = a.cluster.as_deref().map(ClusterSpec::load).transpose()?;
        let size = match (world_size, a.ranks, &cluster, &explicit) {
            (Some(w), Some(p), _, _) if p != w => {
                return Err(Error::Args(format!(
                "--ranks {p} but the MPI job has {w} processes (start it with `mpirun -np {p}`, \
                     or leave out --ranks)"
            )))
            }
            (Some(w), _, _, _) => w,
            (None, Some(p), _, _) => p,
            (None, None, Some(c), _) => c.nodes.len(),
            (None, None, None, Some(rows)) => rows.len(),
            (None, None, None, None) => 1,
        };
        if size == 0 || size > MAX_THREAD_RANKS {
            return Err(Error::Args(format!(
                "--ranks must be in 1..={MAX_THREAD_RANKS}, got {size}"
            )));
        }
        let cluster = match cluster {
            Some(c) if c.nodes.len() != size => {
                return Err(Error::Args(format!(
                    "--ranks {size} but cluster file {} describes {} nodes",
                    a.cluster
                        .as_ref()
                        .map_or(String::new(), |p| p.display().to_string()),
                    c.nodes.len()
                )))
            }
            Some(c) => c,
            None => ClusterSpec::this_machine(size),
        };
        let rows = match (a.rows, &explicit) {
            (Some(s), _) => s,
            (None, Some(r)) => r.iter().sum(),
            (None, None) => {
                return Err(Error::Args(format!(
                    "--rows is required with --distribution {}",
                    a.distribution.name()
                )))
            }
        };
        let bytes_per_row = || {
            self.bytes_per_row.ok_or_else(|| {
                Error::Args(format!(
                    "--distribution {} needs the program's bytes per row (Launch::bytes_per_row)",
                    a.distribution.name()
                ))
            })
        };
        // Explicit rows were read above (a file once).
        let dist = match &explicit {
            Some(counts) => Distribution::new(counts.clone()),
            None => a.distribution.distribution(rows, &cluster, bytes_per_row)?,
        };
        dist.validate(rows, size)?;
        if let Some(bytes_per_row) = self.bytes_per_row {
            fits_in_memory(&dist.rows, bytes_per_row, &cluster, a.backend)?;
        }
        Ok(RunSettings {
            size,
            rows,
            distribution: dist.rows,
            distribution_name: a.distribution.name(),
            cluster,
            iterations: a.iterations,
            instrument: a.instrumented(),
            keep_in_core: a.keep_in_core,
            mmlib: a.mmlib,
            timing: a.timings.is_some(),
            clock: a.clock,
            scratch: PathBuf::new(),
            comm_timeout: a.comm_timeout,
        })
    }

    /// Run `f` on every rank; an instrumented run then writes its measurements (and trace).
    pub fn run<R, E, F>(self, f: F) -> Result<Vec<R>, Error>
    where
        F: Fn(&Context) -> Result<R, E> + Sync,
        R: Send,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let settings = self.settings()?;
        // Under MPI only rank 0's process writes files.
        let writer = self.args.backend == Backend::Threads || process_rank(self.args.backend) == 0;
        let (results, records, micro) = self.run_settings(settings.clone(), f)?;
        // A `#[mheta::solver]` registered its embedded structure when it first ran: write that
        // text byte for byte (it is `mheta analyze`'s output).
        let embedded = crate::embedded::first();
        if let (Some(path), true) = (&self.args.emit_structure, writer) {
            let e = embedded.ok_or_else(|| {
                Error::Args("--emit-structure: this program embeds no structure".into())
            })?;
            write_atomic(path, e.structure_json.as_bytes())?;
        }
        if writer {
            let id = crate::embedded::first_id();
            let measurements = self.args.measurements_path();
            let outputs = measure::Outputs {
                timings: self.args.timings.as_deref(),
                measurements: settings.instrument.then_some(measurements.as_path()),
                trace: self.args.trace.as_deref(),
            };
            measure::write_outputs(&settings, id, micro, &records, outputs)?;
        }
        Ok(results)
    }

    /// Run `f` on every rank and hand back the results, every rank's records and rank 0's
    /// network microbenchmarks, writing nothing.
    pub fn run_collect<R, E, F>(
        self,
        f: F,
    ) -> Result<(Vec<R>, Vec<RankRecords>, Microbenchmarks), Error>
    where
        F: Fn(&Context) -> Result<R, E> + Sync,
        R: Send,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let settings = self.settings()?;
        self.run_settings(settings, f)
    }

    fn run_settings<R, E, F>(
        &self,
        mut settings: RunSettings,
        f: F,
    ) -> Result<(Vec<R>, Vec<RankRecords>, Microbenchmarks), Error>
    where
        F: Fn(&Context) -> Result<R, E> + Sync,
        R: Send,
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        crate::malloc::pin();
        let scratch = Scratch::new(self.args.scratch.clone())?;
        settings.scratch = scratch.path.clone();
        let settings = Arc::new(settings);
        #[cfg(feature = "mpi")]
        if self.args.backend == Backend::Mpi {
            return crate::comm::mpi::run(settings, &f, self.microbenchmarks);
        }
        let world = ThreadWorld::new(settings.size, settings.cluster.network, settings.clock);
        let benchmarks = self.microbenchmarks;
        let outcomes: Vec<Option<RankOutcome<R>>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..settings.size)
                .map(|rank| {
                    let (world, settings, f) = (Arc::clone(&world), Arc::clone(&settings), &f);
                    std::thread::Builder::new()
                        .name(format!("mheta-rank-{rank}"))
                        .stack_size(RANK_STACK_BYTES)
                        .spawn_scoped(s, move || run_rank(rank, &world, settings, f, benchmarks))
                })
                .collect();
            handles
                .into_iter()
                .enumerate()
                .map(|(rank, h)| match h {
                    Ok(h) => h.join().ok(),
                    Err(e) => {
                        world.abort(rank, format!("could not start the rank's thread: {e}"));
                        None
                    }
                })
                .collect()
        });

        if let Some(failure) = world.failure() {
            return Err(Error::RankFailed {
                rank: failure.rank,
                message: failure.message,
            });
        }
        let mut results = Vec::with_capacity(outcomes.len());
        let mut records = Vec::with_capacity(outcomes.len());
        let mut micro = Microbenchmarks::default();
        for (rank, o) in outcomes.into_iter().enumerate() {
            let o = o.ok_or_else(|| Error::RankFailed {
                rank,
                message: "the rank's thread died".into(),
            })?;
            if rank == 0 {
                micro = o.micro;
            }
            results.push(o.result.expect("a rank without failure has a result"));
            records.push(o.records);
        }
        Ok((results, records, micro))
    }
}

fn run_rank<R, E, F>(
    rank: usize,
    world: &Arc<ThreadWorld>,
    settings: Arc<RunSettings>,
    f: &F,
    benchmarks: bool,
) -> RankOutcome<R>
where
    F: Fn(&Context) -> Result<R, E> + Sync,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    world.start();
    let (outcome, records, micro) =
        rank_work(rank, Box::new(world.comm(rank)), settings, f, benchmarks);
    let result = match outcome {
        Ok(r) => Some(r),
        Err(message) => {
            world.abort(rank, message);
            None
        }
    };
    world.finish(rank);
    RankOutcome {
        result,
        records,
        micro,
    }
}

/// The number of ranks the backend itself fixes: the MPI world's size (initialising MPI), or
/// none for threads.
fn backend_world_size(backend: Backend) -> Result<Option<usize>, Error> {
    match backend {
        Backend::Threads => Ok(None),
        #[cfg(feature = "mpi")]
        Backend::Mpi => Ok(Some(crate::comm::mpi::world()?.size)),
        #[cfg(not(feature = "mpi"))]
        Backend::Mpi => Err(Error::MpiUnavailable),
    }
}

/// This process's rank under `backend` (0 for threads, where one process holds every rank).
fn process_rank(backend: Backend) -> usize {
    match backend {
        Backend::Threads => 0,
        #[cfg(feature = "mpi")]
        Backend::Mpi => crate::comm::mpi::world().map_or(0, |w| w.rank),
        #[cfg(not(feature = "mpi"))]
        Backend::Mpi => 0,
    }
}

/// The run's scratch directory: the one given, or a fresh temporary one (`mheta-run-*`) removed
/// at the end, or on SIGINT/SIGTERM/SIGHUP, or by the next run if this one is killed
/// (`cleanup::OwnedDir`).
struct Scratch {
    path: PathBuf,
    _owned: Option<crate::cleanup::OwnedDir>,
}

impl Scratch {
    fn new(given: Option<PathBuf>) -> Result<Scratch, Error> {
        match given {
            Some(path) => {
                std::fs::create_dir_all(&path).map_err(|e| Error::io(&path, e))?;
                Ok(Scratch { path, _owned: None })
            }
            None => {
                let owned = crate::cleanup::OwnedDir::create("mheta-run")
                    .map_err(|e| Error::io(std::env::temp_dir(), e))?;
                Ok(Scratch {
                    path: owned.path().to_path_buf(),
                    _owned: Some(owned),
                })
            }
        }
    }
}
