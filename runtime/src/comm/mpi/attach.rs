//! Attaching to an rsmpi program (`mheta::mpi::attach(&world)`): the program keeps its own MPI
//! set-up and communication; the session installs this rank's clock and hooks as `launch` would,
//! according to the `MHETA_*` environment ([`crate::attach`]), hands out this rank's rows, and
//! when it ends gathers every rank's records to rank 0, which writes what was asked for.
//!
//! The session talks over its own duplicate of `MPI_COMM_WORLD`, so its messages never match the
//! program's. Its collective steps (`attach`, [`Session::rows`], [`Session::finish`]) must be
//! reached by every rank, like any MPI collective.

use std::cell::{Cell, RefCell};
use std::ops::Range;

use mpi::topology::Communicator;

use super::{run, MpiComm};
use crate::attach::EnvSettings;
use crate::clock::{self, ClockMode};
use crate::comm::{Comm, CommExt, ReduceOp};
use crate::context::RunSettings;
use crate::distribution::Distribution;
use crate::error::Error;
use crate::format::{ClusterSpec, Microbenchmarks};
use crate::hooks::{self, HookConfig};
use crate::measure;

/// One rank's attachment; see the module documentation. Dropping it finishes it (errors are
/// then printed, as a destructor cannot return them); call [`Session::finish`] to see them.
pub struct Session {
    env: EnvSettings,
    comm: Option<MpiComm>,
    rank: usize,
    size: usize,
    cluster: ClusterSpec,
    rows: RefCell<Option<(u64, Vec<u64>)>>,
    /// Measuring began through [`Session::begin`], without rows.
    began: Cell<bool>,
    offset_s: f64,
    micro: Microbenchmarks,
    hooks: bool,
    finished: bool,
}

/// Reads `MHETA_*`, checks it, and attaches this rank. Every rank of `world` must call it.
/// `world` must span all MPI processes (`universe.world()`).
///
/// The program keeps its own `mpi::initialize()` and communication; it asks the session for its
/// rows and finishes it at the end. With no `MHETA_*` variable set the session records nothing
/// and hands out Block rows. Run it under `mpirun` (`MHETA_INSTRUMENT=1 mpirun -np 4 prog` writes
/// measurements); the variables are listed in [`crate::attach`].
///
/// ```no_run
/// use mheta_runtime::comm::mpi::attach;
///
/// fn main() -> Result<(), mheta_runtime::Error> {
///     let universe = mpi::initialize().expect("MPI is initialised once");
///     let world = universe.world();
///     let session = attach(&world)?; // reads and checks MHETA_*
///     let mine = session.rows(1000); // this rank's rows of 1000: Block unless MHETA_DISTRIBUTION
///     let local = vec![0.0f64; mine.len()];
///     // ... call the #[mheta::solver] function on `local` ...
///     drop(local);
///     session.finish()?; // rank 0 writes what was asked for
///     Ok(())
/// }
/// ```
pub fn attach<C: Communicator>(world: &C) -> Result<Session, Error> {
    crate::attach::ATTACHED.store(true, std::sync::atomic::Ordering::Relaxed);
    crate::hooks::pmpi::link();
    let env = EnvSettings::from_env()?;
    crate::malloc::pin();
    let w = super::world()?;
    if world.size() as usize != w.size {
        return Err(Error::Session(format!(
            "attach needs the world communicator (all {} processes); this one has {}",
            w.size,
            world.size()
        )));
    }
    let cluster = match &env.cluster {
        Some(path) => {
            let c = ClusterSpec::load(path)?;
            if c.nodes.len() != w.size {
                return Err(Error::Env {
                    var: "MHETA_CLUSTER",
                    message: format!(
                        ": {} describes {} nodes but the MPI job has {} processes (one per node)",
                        path.display(),
                        c.nodes.len(),
                        w.size
                    ),
                });
            }
            c
        }
        None => ClusterSpec::this_machine(w.size),
    };
    let mut session = Session {
        env,
        comm: None,
        rank: w.rank,
        size: w.size,
        cluster,
        rows: RefCell::new(None),
        began: Cell::new(false),
        offset_s: 0.0,
        micro: Microbenchmarks::default(),
        hooks: false,
        finished: false,
    };
    if session.env.is_idle() {
        return Ok(session);
    }
    let comm = MpiComm::duplicate_world()?;
    session.offset_s = run::estimate_offset(&comm)?;
    let node = session.cluster.nodes[session.rank];
    let instrument = session.env.instrument;
    clock::install(ClockMode::Wall, node.cpu);
    let least_cpu = clock::install_load(session.cluster.load_of(session.rank));
    hooks::install(HookConfig {
        instrument,
        slowdown: least_cpu < 1.0,
        timing: session.env.timings.is_some(),
    });
    session.hooks = true;
    if instrument {
        session.micro = crate::micro::network(&comm, &session.cluster.network)?;
    }
    session.comm = Some(comm);
    Ok(session)
}

impl Session {
    /// Whether the environment asked for nothing (no hooks, no files, Block rows).
    pub fn is_idle(&self) -> bool {
        self.env.is_idle()
    }

    /// This rank's rows of `total` (the problem size S), by `MHETA_DISTRIBUTION` (Block when
    /// unset). A collective call: every rank must pass the same `total`. Measuring starts here.
    ///
    /// # Panics
    /// When the ranks disagree on `total`, the distribution does not fit `total` and the
    /// processes, or rows were already handed out; [`Session::try_rows`] returns these as errors.
    pub fn rows(&self, total: usize) -> Range<usize> {
        self.try_rows(total)
            .unwrap_or_else(|e| panic!("mheta (rank {}): {e}", self.rank))
    }

    /// [`Session::rows`], with its misuses as errors.
    pub fn try_rows(&self, total: usize) -> Result<Range<usize>, Error> {
        let counts = self.distribute(total as u64, None)?;
        Ok(self.start(total as u64, counts))
    }

    /// [`Session::try_rows`] for `MHETA_DISTRIBUTION=in-core` and `in-core-balanced`, which
    /// need the bytes one row of the distributed arrays takes in total.
    pub fn try_rows_sized(&self, total: usize, bytes_per_row: u64) -> Result<Range<usize>, Error> {
        let counts = self.distribute(total as u64, Some(bytes_per_row))?;
        Ok(self.start(total as u64, counts))
    }

    /// This rank's rows when the program divides its data itself and every rank knows how many
    /// rows it holds (weak scaling: an HPCCG-style benchmark generates `nx * ny * nz` rows on
    /// each rank): the total is their sum, and this rank's range follows the lower ranks' rows.
    /// A collective call, made where [`Session::rows`] would be; measuring starts here, and
    /// [`Session::finish`] writes measurements as it does after `rows`.
    ///
    /// The program, not mheta, chose these rows: an `MHETA_DISTRIBUTION` other than `block` is
    /// an error (on every rank), as is a job in which no rank holds a row.
    pub fn held_rows(&self, count: usize) -> Result<Range<usize>, Error> {
        self.check_not_started()?;
        if self.env.distribution != crate::args::DistributionSpec::Block {
            return Err(Error::Env {
                var: "MHETA_DISTRIBUTION",
                message: format!(
                    "={}: this program divides its rows itself (session.held_rows), so it \
                     cannot take another distribution",
                    self.env.distribution.name()
                ),
            });
        }
        let counts = self.on_comm(|c| {
            let mut counts = vec![0u64; self.size];
            c.all_gather(&[count as u64], &mut counts)?;
            Ok(counts)
        })?;
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return Err(Error::Session(
                "held_rows: no rank holds a row, so there is nothing to measure".into(),
            ));
        }
        Ok(self.start(total, counts))
    }

    /// Starts measuring without handing out rows, for a program that divides its data itself.
    /// A collective call, made where [`Session::rows`] would be (after the program's set-up,
    /// before its main loop).
    ///
    /// The problem size then stays unknown, so [`Session::finish`] writes the trace and the
    /// iteration times that were asked for but no measurements, which the model cannot use
    /// without the rows: setting `MHETA_MEASUREMENTS` is then an error at `finish`.
    pub fn begin(&self) -> Result<(), Error> {
        self.check_not_started()?;
        self.began.set(true);
        self.start_measuring();
        Ok(())
    }

    fn check_not_started(&self) -> Result<(), Error> {
        if self.rows.borrow().is_some() {
            return Err(Error::Session("rows were already handed out".into()));
        }
        if self.began.get() {
            return Err(Error::Session(
                "measuring already began (session.begin() was called)".into(),
            ));
        }
        Ok(())
    }

    /// `f` on the session's communicator, or on a duplicate of the world when the session holds
    /// none (nothing asked of it): its collective steps run either way.
    fn on_comm<T>(&self, f: impl FnOnce(&MpiComm) -> Result<T, Error>) -> Result<T, Error> {
        match &self.comm {
            Some(c) => f(c),
            None => f(&MpiComm::duplicate_world()?),
        }
    }

    fn distribute(&self, total: u64, bytes_per_row: Option<u64>) -> Result<Vec<u64>, Error> {
        self.check_not_started()?;
        // Every rank must ask for the same total: the largest total and the largest complement
        // (the smallest total) in one reduction.
        let spread = |c: &MpiComm| -> Result<[u64; 2], Error> {
            let mut out = [0u64; 2];
            c.all_reduce(&[total, u64::MAX - total], &mut out, ReduceOp::Max)?;
            Ok(out)
        };
        let [most, complement] = self.on_comm(spread)?;
        let least = u64::MAX - complement;
        if least != most {
            return Err(Error::Session(format!(
                "rows(total): the ranks disagree on the total ({least} to {most}; rank {} \
                 passed {total})",
                self.rank
            )));
        }
        let p = self.size;
        let dist = self.env.distribution.distribution(total, &self.cluster, || {
            let name = self.env.distribution.name();
            bytes_per_row.ok_or_else(|| Error::Env {
                var: "MHETA_DISTRIBUTION",
                message: format!(
                    "={name} needs the bytes per row: call session.try_rows_sized(total, bytes_per_row)"
                ),
            })
        })?;
        dist.validate(total, p).map_err(|e| Error::Env {
            var: "MHETA_DISTRIBUTION",
            message: format!(": {e}"),
        })?;
        Ok(dist.rows)
    }

    /// Records the rows and starts measuring: every rank's first timed iteration begins together.
    fn start(&self, total: u64, counts: Vec<u64>) -> Range<usize> {
        let first: u64 = counts[..self.rank].iter().sum();
        let mine = first as usize..(first + counts[self.rank]) as usize;
        *self.rows.borrow_mut() = Some((total, counts));
        self.start_measuring();
        mine
    }

    /// Every rank's first timed iteration begins together.
    fn start_measuring(&self) {
        if let Some(comm) = &self.comm {
            if comm.barrier_bytes().is_ok() {
                clock::reset();
                hooks::set_recording(true);
            }
        }
    }

    /// Stops measuring; on rank 0 writes the measurements, trace and timings that were asked
    /// for. Every rank must call it (or drop the session).
    pub fn finish(mut self) -> Result<(), Error> {
        self.end()
    }

    fn end(&mut self) -> Result<(), Error> {
        if std::mem::replace(&mut self.finished, true) || self.is_idle() {
            return Ok(());
        }
        let records = if self.hooks {
            hooks::set_recording(false);
            let r = hooks::uninstall();
            clock::uninstall();
            self.hooks = false;
            r
        } else {
            Default::default()
        };
        let Some(comm) = self.comm.take() else {
            return Ok(());
        };
        let all = run::gather_records(&comm, &records, self.offset_s)?;
        comm.finish()?;
        if self.rank != 0 {
            return Ok(());
        }
        let measurements = self.env.measurements_path();
        let known = self.rows.borrow().clone();
        let (total, counts, measurements, unwritten) = match known {
            Some((total, counts)) => (
                total,
                counts,
                self.env.instrument.then_some(measurements.as_path()),
                None,
            ),
            None if self.began.get() => (
                0,
                vec![0; self.size],
                None,
                self.env.measurements.as_ref().map(|path| Error::Env {
                    var: "MHETA_MEASUREMENTS",
                    message: format!(
                        "={}: not written: the program began measuring with session.begin(), \
                         without rows, and measurements need the problem size \
                         (session.rows(total), or session.held_rows(count) for the rows this \
                         rank holds)",
                        path.display()
                    ),
                }),
            ),
            None => {
                return Err(Error::Session(
                    "neither session.rows(total) nor session.begin() was called, so nothing \
                     was measured and nothing was written"
                        .into(),
                ))
            }
        };
        let settings = RunSettings {
            size: self.size,
            rows: total,
            distribution_name: Distribution::new(counts.clone()).to_string(),
            distribution: counts,
            cluster: self.cluster.clone(),
            iterations: 0,
            instrument: self.env.instrument,
            keep_in_core: false,
            mmlib: false,
            timing: self.env.timings.is_some(),
            clock: ClockMode::Wall,
            scratch: Default::default(),
            comm_timeout: None,
        };
        let outputs = measure::Outputs {
            timings: self.env.timings.as_deref(),
            measurements,
            trace: self.env.trace.as_deref(),
        };
        measure::write_outputs(
            &settings,
            crate::embedded::first_id(),
            self.micro,
            &all,
            outputs,
        )?;
        unwritten.map_or(Ok(()), Err)
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Err(e) = self.end() {
            eprintln!("mheta (rank {}): {e}", self.rank);
        }
    }
}
