//! mheta: find fast data distributions for iterative SPMD programs on heterogeneous clusters.
//!
//! This facade is the only crate a user program depends on. It re-exports the runtime
//! (`mheta-runtime`: [`launch()`], [`Context`], the communicators, out-of-core arrays, the
//! distributions and the file formats) and the procedural macros (`#[mheta::solver]` and
//! friends). The MHETA model and the searches are not linked into programs: the `mheta` tool
//! runs them (crate `mheta-model`).
//!
//! # A program
//!
//! A program runs its solver on every rank with [`launch()`]; the shared flags ([`Args`]:
//! `--ranks`, `--rows`, `--distribution`, `--cluster`, `--instrument`, …) say how. Each rank
//! works on its own rows of the distributed dimension ([`Context::partition`]) and talks to the
//! others through [`CommExt`]. A 1-D Jacobi relaxation, two ranks against one:
//!
//! ```
//! use mheta::{launch, Args, CommError, CommExt, Context, ReduceOp};
//!
//! /// Relaxes `u` (fixed at 1 above row 0 and at 0 below the last row); returns this rank's
//! /// rows and the last residual.
//! fn solve(ctx: &Context) -> Result<(Vec<f64>, f64), CommError> {
//!     let (rank, size, comm) = (ctx.rank(), ctx.size(), ctx.comm());
//!     let n = ctx.rows() as usize;
//!     let mut u = vec![0.0f64; ctx.local_rows(n)];
//!     let (mut above, mut below) = ([if rank == 0 { 1.0 } else { 0.0 }], [0.0]);
//!     let mut residual = 0.0;
//!     for _ in 0..ctx.iterations() {
//!         // Halo exchange: this rank's edge rows to its neighbours, theirs into the halos.
//!         if rank > 0 {
//!             comm.send(rank - 1, &u[..1])?;
//!         }
//!         if rank + 1 < size {
//!             comm.send(rank + 1, &u[u.len() - 1..])?;
//!             comm.receive_into(rank + 1, &mut below)?;
//!         }
//!         if rank > 0 {
//!             comm.receive_into(rank - 1, &mut above)?;
//!         }
//!         let old = u.clone();
//!         let mut local = 0.0;
//!         for i in 0..u.len() {
//!             let up = if i == 0 { above[0] } else { old[i - 1] };
//!             let down = if i + 1 == u.len() { below[0] } else { old[i + 1] };
//!             u[i] = 0.5 * (up + down);
//!             local += (u[i] - old[i]).powi(2);
//!         }
//!         residual = comm.all_reduce_value(local, ReduceOp::Sum)?;
//!     }
//!     Ok((u, residual))
//! }
//!
//! // A real program parses its own command line (with feature `clap`, `Args` flattens into a
//! // clap parser) or fills in `Args { ranks: Some(2), ..Args::default() }` itself.
//! let two = Args::try_parse_from(["jacobi", "--ranks", "2", "--rows", "8", "--iterations", "5"])?;
//! let one = Args::try_parse_from(["jacobi", "--ranks", "1", "--rows", "8", "--iterations", "5"])?;
//! let split = launch(&two, solve)?;
//! let whole = launch(&one, solve)?;
//! let joined: Vec<f64> = split.iter().flat_map(|(u, _)| u.clone()).collect();
//! assert_eq!(joined, whole[0].0); // the same field, whatever the distribution
//! assert!((split[0].1 - whole[0].1).abs() < 1e-12);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Put `#[mheta::solver]` on `solve` and the same program records its iterations, sections,
//! stages and communication events when run with `--instrument`, which is what `mheta tune`
//! measures and predicts from.
//!
//! # Features
//!
//! - `clap`: [`Args`] is a `clap::Args`, to flatten (`#[command(flatten)]`) into the program's
//!   own clap parser, and `Args::try_parse_from` parses the shared flags alone. Off by
//!   default, so that a program that does not parse flags with clap does not compile it.
//! - `mpi`: the MPI backend (`--backend mpi`, run under `mpirun`) and `mpi::attach` for
//!   programs written against rsmpi; needs the system MPI to build.

#![warn(missing_docs)]

pub use mheta_macros::{comm, distributed, iterate, replicated, solver};
pub use mheta_runtime::*;

/// Attaching to a program written against rsmpi (feature `mpi`): measurement and distributions
/// switched on through the environment, with no other change to the program.
///
/// The program keeps `mpi::initialize()` and its own communicator, calls
/// [`attach`](mpi::attach)`(&world)` once on every rank, takes its rows from
/// [`Session::rows`](mpi::Session::rows)`(total)` (Block unless `MHETA_DISTRIBUTION` says
/// otherwise; a program that makes its own blocks says how many rows it holds with
/// [`Session::held_rows`](mpi::Session::held_rows)) and ends with [`Session::finish`](mpi::Session::finish), after which rank 0 writes
/// the measurements, trace and timings the `MHETA_*` variables asked for. With none set, the
/// session does nothing but hand out Block rows. [`attach`](mpi::attach) has an example; the
/// variables are listed in [`mheta_runtime::attach`].
#[cfg(feature = "mpi")]
pub mod mpi {
    pub use mheta_runtime::comm::mpi::{attach, Session};
}

/// Paths used by macro-generated code. Not public API: names here may change without notice.
///
/// Generated code reaches the runtime only through this module, so user programs depend on the
/// facade alone and the runtime's layout can change without touching the macros' output.
#[doc(hidden)]
pub mod __private {
    pub use mheta_runtime::embedded::{register, Embedded};
    pub use mheta_runtime::format::{IoKind, StageKey};
    /// Whether a solver call takes its instrumented body: some rank of the process has hooks
    /// that time regions, or the environment asks a program that attaches for them (two loads
    /// per call; see `attach::regions_requested`).
    #[inline(always)]
    pub fn hooks_active() -> bool {
        mheta_runtime::hooks::regions_active() || mheta_runtime::attach::regions_requested()
    }
    pub use mheta_runtime::hooks::{event, group, iteration, section, tile, Guard, IoGuard};

    use mheta_runtime::hooks;

    /// Recording calls made through rsmpi directly (`hooks::foreign`).
    pub mod rsmpi {
        pub use mheta_runtime::hooks::foreign::{
            begin, end, AnyBytes, AnyMembers, AnyPeer, AnySource, BufferBytes, CommMembers,
            Members, Message, Peer, ProcessPeer, Received, StatusSource, VecBytes,
        };
        pub use mheta_runtime::hooks::{site, CallKind, SiteGuard};
    }

    /// Stage `stage` of section `section` (outside any tile loop).
    #[inline(always)]
    pub fn stage(section: u32, stage: u32) -> Guard {
        hooks::stage(StageKey {
            section,
            tile: None,
            stage,
        })
    }

    /// Stage `stage` inside tile loop `tile` of section `section`.
    #[inline(always)]
    pub fn tile_stage(section: u32, tile: u32, stage: u32) -> Guard {
        hooks::stage(StageKey {
            section,
            tile: Some(tile),
            stage,
        })
    }

    /// A user I/O call (named in mheta.toml) on variable `var`. The variable is interned only in
    /// an instrumented run, so a disabled hook takes no lock.
    #[inline]
    pub fn io(var: &'static str, op: IoKind) -> Option<IoGuard> {
        if hooks::instrumenting() {
            Some(hooks::io(hooks::register_var(var), op, 0))
        } else {
            None
        }
    }
}
