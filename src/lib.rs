//! mheta: find fast data distributions for iterative SPMD programs on heterogeneous clusters.
//!
//! This facade is the only crate a user program depends on. It re-exports the runtime
//! (launch, `Context`, communicators, out-of-core arrays, file formats, model, search) and the
//! procedural macros (`#[mheta::solver]` and friends).

pub use mheta_macros::*;
pub use mheta_runtime::*;

/// Paths used by macro-generated code. Not public API: names here may change without notice.
#[doc(hidden)]
pub mod __private {
    pub use mheta_runtime::*;
}
