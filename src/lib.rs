//! mheta: find fast data distributions for iterative SPMD programs on heterogeneous clusters.
//!
//! This facade is the only crate a user program depends on. It re-exports the runtime
//! (launch, `Context`, communicators, out-of-core arrays, file formats, model, search) and the
//! procedural macros (`#[mheta::solver]` and friends).

#![warn(missing_docs)]

pub use mheta_macros::{comm, distributed, iterate, replicated, solver};
pub use mheta_runtime::*;

/// Attaching to a program written against rsmpi (feature `mpi`): measurement and distributions
/// switched on through the environment, with no other change to the program.
///
/// ```ignore
/// // (Not compiled as a doctest: it needs the system MPI.)
/// # fn main() -> Result<(), mheta::Error> {
/// let universe = mpi::initialize().unwrap();
/// let world = universe.world();
/// let session = mheta::mpi::attach(&world)?; // reads MHETA_*; does nothing when none is set
/// let mine = session.rows(1000); // this rank's rows of 1000: Block unless MHETA_DISTRIBUTION
/// // ... allocate the local block, call the #[mheta::solver] function ...
/// session.finish()?; // rank 0 writes what was asked for
/// # let _ = mine;
/// # Ok(())
/// # }
/// ```
///
/// See [`mheta_runtime::attach`] for the variables.
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
    /// Whether a solver call takes its instrumented body (one relaxed load per call).
    pub use mheta_runtime::hooks::regions_active as hooks_active;
    pub use mheta_runtime::hooks::{event, group, iteration, section, tile, Guard, IoGuard};

    use mheta_runtime::hooks;

    /// Recording calls made through rsmpi directly (`hooks::foreign`).
    pub mod rsmpi {
        pub use mheta_runtime::hooks::foreign::{
            begin, end, AnyBytes, AnyPeer, BufferBytes, Message, Peer, ProcessPeer, VecBytes,
        };
        pub use mheta_runtime::hooks::CallKind;
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
