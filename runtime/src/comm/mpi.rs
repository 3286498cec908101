//! The `mpi` backend (feature `mpi`, DESIGN §5): each MPI process started by `mpirun` is one
//! rank; communication goes through rsmpi's bindings to the system MPI.
//!
//! - [`world`] initialises MPI once per process (thread level at least `SERIALIZED`) and
//!   registers `MPI_Finalize` to run at process exit, so a program may `launch` several times.
//! - [`MpiComm`] implements [`crate::comm::Comm`]: buffered point-to-point sends over
//!   `MPI_Isend`, polled receives, and every collective over MPI's non-blocking collectives,
//!   with the same results and the same recorded traffic as the threads backend.
//! - `run` is `launch`'s MPI path: clock offset estimation, the rank's work with the same
//!   emulation and hooks as on threads, and gathering every rank's records to rank 0.
//! - A failing rank ends the whole job with `MPI_Abort` after printing which rank failed and
//!   why ([`abort`]); no rank is left waiting.

mod attach;
mod collective;
mod run;
mod transport;

use std::io::Write;
use std::sync::OnceLock;

use mpi::topology::Communicator;
use mpi::Threading;

pub use attach::{attach, Session};
pub use run::estimate_offset;
pub(crate) use run::run;
pub use transport::MpiComm;

use crate::comm::CommError;

/// This process's place in `MPI_COMM_WORLD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct World {
    /// This process's rank in `MPI_COMM_WORLD`.
    pub rank: usize,
    /// The number of processes in `MPI_COMM_WORLD`.
    pub size: usize,
}

/// Initialise MPI (once per process) and return this process's rank and the world size.
pub fn world() -> Result<World, CommError> {
    static WORLD: OnceLock<Result<World, String>> = OnceLock::new();
    WORLD
        .get_or_init(initialise)
        .clone()
        .map_err(CommError::Backend)
}

fn initialise() -> Result<World, String> {
    match mpi::initialize_with_threading(Threading::Multiple) {
        Some((universe, provided)) => {
            if matches!(provided, Threading::Single | Threading::Funneled) {
                return Err(format!(
                    "the MPI library provides thread level {provided:?}; mheta needs \
                     Serialized or Multiple"
                ));
            }
            // MPI is finalised at process exit rather than when a `Universe` is dropped, so
            // that several runs in one process share one initialisation.
            std::mem::forget(universe);
            // SAFETY: `finalize_at_exit` is a plain `extern "C" fn()` that stays valid for the
            // whole process.
            if unsafe { libc::atexit(finalize_at_exit) } != 0 {
                return Err("could not register MPI_Finalize to run at exit".into());
            }
        }
        // Someone else (the program, through rsmpi) initialised MPI and will finalise it.
        None if mpi::is_initialized() => {}
        None => return Err("MPI could not be initialised".into()),
    }
    let world = mpi::topology::SimpleCommunicator::world();
    Ok(World {
        rank: world.rank() as usize,
        size: world.size() as usize,
    })
}

extern "C" fn finalize_at_exit() {
    let mut finalized = 0;
    // SAFETY: both calls are valid at any time after MPI_Init; MPI was initialised by
    // `initialise`, which registered this handler.
    unsafe {
        mpi::ffi::MPI_Finalized(&mut finalized);
        if finalized == 0 {
            mpi::ffi::MPI_Finalize();
        }
    }
}

/// Print which rank failed and why, then end every process of the job (`MPI_Abort`).
pub fn abort(rank: usize, message: &str) -> ! {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "mheta: rank {rank} failed: {message}");
    let _ = writeln!(err, "mheta: aborting the MPI job");
    let _ = err.flush();
    // MPI_Abort ends this process without unwinding: remove its scratch directory first.
    crate::cleanup::run_now();
    // SAFETY: MPI is initialised (a rank exists); MPI_Abort does not return on success.
    unsafe {
        mpi::ffi::MPI_Abort(mpi::ffi::RSMPI_COMM_WORLD, 1);
    }
    std::process::abort()
}
