//! mheta procedural macros.
//!
//! `#[mheta::solver]`, `#[mheta::comm]`, `#[mheta::iterate]`, `#[mheta::distributed]` and
//! `#[mheta::replicated]` arrive with the macros issue; until then this crate exports nothing,
//! so no user code can mistake a placeholder for an instrumenting macro.
