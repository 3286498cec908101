//! mheta analyzer: Rust SPMD source → MHETA structure.
