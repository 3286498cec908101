//! mheta runtime: what every instrumented program links.
//!
//! Communicators and backends, timing hooks, out-of-core arrays, cluster emulation, the file
//! formats, and the MHETA model and distribution searches (pure computation on those formats).
//! This crate never depends on syn: every user program links it.

pub mod format;
pub mod clock;
pub mod hooks;
