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

pub use array::{IoStats, OocArray, Part};
pub use block_file::WriteFault;
pub use element::Element;
pub use micro::{measure_disk, DiskBenchConfig, DiskCosts};
pub use policy::{choose, plan, ArrayDemand, Choice, IoEstimate, Placement};
pub use store::{forced_for_instrumentation, ArraySpec, NodeStore, StoreConfig};

/// Bytes a node keeps in core of arrays whose rows take `demand` bytes in all: all of them, or
/// at most its `memory_bytes` (the rest is out of core). `u64::MAX` is unbounded memory.
pub fn in_core_bytes(demand: u128, memory_bytes: u64) -> u128 {
    match memory_bytes {
        u64::MAX => demand,
        memory => demand.min(u128::from(memory)),
    }
}

/// An out-of-core array operation that failed. Errors about files name the file.
#[derive(Debug, thiserror::Error)]
pub enum OocError {
    /// A file-system call failed.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was being done (`read`, `open`, `create store directory`, …), as it reads after
        /// "cannot".
        action: &'static str,
        /// The file or directory concerned.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// A block this array wrote (or found on disk when it was opened) has no file any more: never
    /// read as zeros.
    #[error(
        "block file {} was written and has disappeared (removed while the program ran?)",
        path.display()
    )]
    Missing {
        /// The block file that should be there.
        path: PathBuf,
    },
    /// A block file failed its header or CRC check.
    #[error("block file {} is corrupt: {reason}", path.display())]
    Corrupt {
        /// The block file.
        path: PathBuf,
        /// What the check found wrong.
        reason: String,
    },
    /// A block index at or past the array's number of blocks.
    #[error("array `{array}`: block {block} is out of range (the array has {blocks} blocks)")]
    BlockOutOfRange {
        /// The array's name.
        array: String,
        /// The block asked for.
        block: usize,
        /// How many blocks the array has.
        blocks: usize,
    },
    /// A buffer whose length is not the block's number of elements.
    #[error("array `{array}`: block {block} holds {expected} elements, but {got} were given")]
    WrongLength {
        /// The array's name.
        array: String,
        /// The block concerned.
        block: usize,
        /// Elements the block holds.
        expected: usize,
        /// Elements the buffer had.
        got: usize,
    },
    /// `wait` called with no prefetch pending.
    #[error("array `{array}`: wait() without a pending prefetch_block()")]
    NoPrefetch {
        /// The array's name.
        array: String,
    },
    /// A second `prefetch_block` before the first one's `wait`.
    #[error(
        "array `{array}`: prefetch_block({block}) while block {pending} is still being \
         prefetched; call wait() first"
    )]
    PrefetchPending {
        /// The array's name.
        array: String,
        /// The block the second prefetch asked for.
        block: usize,
        /// The block still being prefetched.
        pending: usize,
    },
    /// Two arrays of one store with the same name (or file name).
    #[error("an array named `{name}` (or with the same file name) already exists in store {}", dir.display())]
    DuplicateArray {
        /// The name given twice.
        name: String,
        /// The store's directory.
        dir: PathBuf,
    },
    /// The background prefetch thread could not start, or stopped.
    #[error("array `{array}`: the background prefetch thread could not start or stopped")]
    PrefetchThread {
        /// The array's name.
        array: String,
    },
    /// The in-core part of the array would not fit in this machine's memory.
    #[error(
        "array `{array}`: its {rows} rows of {row_bytes} bytes would keep {in_core} bytes in \
         core, more than the {machine} bytes this process can use (use fewer rows, more ranks, \
         or give the node less memory in the cluster description so that the array goes out of \
         core)"
    )]
    TooLarge {
        /// The array's name.
        array: String,
        /// The array's rows on this node.
        rows: u64,
        /// Bytes per row.
        row_bytes: u64,
        /// Bytes the array would keep in core: all of it, or at most the node's emulated memory.
        in_core: u128,
        /// Bytes this process can use on this machine.
        machine: u64,
    },
    /// Another process holds the store directory; `holder` is its pid when known.
    #[error(
        "store directory {} is in use by another process{} (give each run its own --scratch)",
        dir.display(),
        holder.map(|p| format!(" (pid {p})")).unwrap_or_default()
    )]
    InUse {
        /// The store directory.
        dir: PathBuf,
        /// The pid of the process holding it, when it could be read.
        holder: Option<u32>,
    },
    /// [`OocArray::reshape`] was given parts that do not make up the new rows.
    #[error("array `{array}`: cannot reshape: {problem}")]
    Reshape {
        /// The array's name.
        array: String,
        /// What is wrong with the parts.
        problem: String,
    },
    /// A write failed on purpose after `after` bytes (a test's [`WriteFault`]).
    #[error("injected write failure after {after} bytes of {}", path.display())]
    InjectedFault {
        /// The block file being written.
        path: PathBuf,
        /// Bytes written before the failure.
        after: usize,
    },
}
