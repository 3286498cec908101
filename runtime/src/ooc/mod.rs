//! Out-of-core arrays (DESIGN §5, seed §5.1, §5.2.2).
//!
//! A node's local array of a row-distributed variable lives in memory when the node's memory
//! budget allows, and otherwise in the node's file store, processed in ICLA-sized blocks:
//!
//! - [`NodeStore`] — one per rank: its directory, memory budget, emulated disk, and whether
//!   the run is instrumented. Arrays created from it share the budget.
//! - [`OocArray`] — `read_block`, `write_block`, `prefetch_block` + `wait`, over block files
//!   written atomically and durably; real background prefetch, or the seed's Fig. 5.6 semantics
//!   when instrumented.
//! - [`plan`] — the placement heuristic (which arrays stay in core, ICLA sizes), shared with
//!   the model.
//! - [`measure_disk`] — the I/O microbenchmarks (O_r, O_w, O_A, r, w).

mod array;
mod block_file;
mod element;
mod micro;
mod policy;
mod prefetch;
mod store;

use std::path::PathBuf;

pub use array::{IoStats, OocArray};
pub use block_file::WriteFault;
pub use element::Element;
pub use micro::{measure_disk, DiskBenchConfig, DiskCosts};
pub use policy::{choose, plan, ArrayDemand, Choice, IoEstimate, Placement};
pub use store::{forced_for_instrumentation, ArraySpec, NodeStore, StoreConfig};

/// An out-of-core array operation that failed. Errors about files name the file.
/// Bytes a node keeps in core of arrays whose rows take `demand` bytes in all: all of them, or
/// at most its `memory_bytes` (the rest is out of core). `u64::MAX` is unbounded memory.
pub fn in_core_bytes(demand: u128, memory_bytes: u64) -> u128 {
    match memory_bytes {
        u64::MAX => demand,
        memory => demand.min(u128::from(memory)),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum OocError {
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "block file {} was written and has disappeared (removed while the program ran?)",
        path.display()
    )]
    Missing { path: PathBuf },
    #[error("block file {} is corrupt: {reason}", path.display())]
    Corrupt { path: PathBuf, reason: String },
    #[error("array `{array}`: block {block} is out of range (the array has {blocks} blocks)")]
    BlockOutOfRange {
        array: String,
        block: usize,
        blocks: usize,
    },
    #[error("array `{array}`: block {block} holds {expected} elements, but {got} were given")]
    WrongLength {
        array: String,
        block: usize,
        expected: usize,
        got: usize,
    },
    #[error("array `{array}`: wait() without a pending prefetch_block()")]
    NoPrefetch { array: String },
    #[error(
        "array `{array}`: prefetch_block({block}) while block {pending} is still being \
         prefetched; call wait() first"
    )]
    PrefetchPending {
        array: String,
        block: usize,
        pending: usize,
    },
    #[error("an array named `{name}` (or with the same file name) already exists in store {}", dir.display())]
    DuplicateArray { name: String, dir: PathBuf },
    #[error("array `{array}`: the background prefetch thread could not start or stopped")]
    PrefetchThread { array: String },
    #[error(
        "array `{array}`: its {rows} rows of {row_bytes} bytes would keep {in_core} bytes in \
         core, more than the {machine} bytes this process can use (use fewer rows, more ranks, \
         or give the node less memory in the cluster description so that the array goes out of \
         core)"
    )]
    TooLarge {
        array: String,
        rows: u64,
        row_bytes: u64,
        in_core: u128,
        machine: u64,
    },
    #[error(
        "store directory {} is in use by another process{} (give each run its own --scratch)",
        dir.display(),
        holder.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    InUse { dir: PathBuf, holder: Option<u32> },
    #[error("injected write failure after {after} bytes of {}", path.display())]
    InjectedFault { path: PathBuf, after: usize },
}
