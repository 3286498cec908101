//! The file formats mheta reads and writes: the structure file (`mheta-structure/1`), the
//! measurements file (`mheta-measurements/1`), the timings file (`mheta-timings/1`) and the
//! cluster description (`cluster.toml`).
//!
//! Field names serialised here are a contract (DESIGN §3.8, §5): add fields freely, rename none
//! without bumping the schema string.

#![warn(missing_docs)]

pub mod cluster;
pub mod document;
pub mod json;
pub mod measurements;
pub mod structure;
pub mod timings;

pub use cluster::{ClusterSpec, LoadAt, LoadStep, NetworkSpec, NodeSpec};
pub use measurements::*;
pub use structure::*;
pub use timings::{
    warm_up, warm_up_iterations, IterationSpan, NodeTimings, Timings, TIMINGS_SCHEMA,
};
