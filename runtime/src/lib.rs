//! mheta runtime: what every instrumented program links.
//!
//! Communicators and backends, timing hooks, out-of-core arrays, cluster emulation and the file
//! formats. The MHETA model and the distribution searches, which only the `mheta` tool calls,
//! are the `mheta-model` crate. This crate never depends on syn: every user program links it.
//!
//! A program: `launch(&args, |ctx| { ... })` runs the closure on every rank with a [`Context`]
//! (rank, size, communicator through [`CommExt`], this node's rows, out-of-core arrays); hook
//! guards from [`hooks`] mark iterations, sections, stages and events; `--instrument` writes
//! `mheta-measurements/1`.
//!
//! Features: `mpi` adds the MPI backend (`--backend mpi`); `clap` makes [`Args`] a `clap::Args`
//! to flatten into a program's own parser (and adds `Args::try_parse_from`).

#![warn(missing_docs)]

pub mod adapt;
pub mod args;
pub mod attach;
pub mod cleanup;
pub mod clock;
pub mod cluster;
pub mod comm;
pub mod context;
pub mod distribution;
pub mod embedded;
pub mod error;
/// The file formats (crate `mheta-format`), here under the name the runtime has always used.
pub use mheta_format as format;
pub mod hooks;
pub mod launch;
pub mod malloc;
pub mod measure;
pub mod micro;
pub mod ooc;
mod rank;
pub mod stats;
pub mod testing;

pub use args::{Args, Backend, DistributionSpec};
pub use clock::ClockMode;
pub use comm::{Comm, CommError, CommExt, ReduceOp};
pub use context::Context;
pub use error::Error;
pub use launch::{launch, Launch};
