//! What a rank sees of its run: rank, size, communicator, this node's share of the distributed
//! rows, its emulated capabilities and its out-of-core store.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::clock::ClockMode;
use crate::comm::Comm;
use crate::format::{ClusterSpec, NodeSpec};
use crate::hooks;
use crate::ooc::{self, ArraySpec, NodeStore, OocArray, OocError, StoreConfig};

/// The settings shared by every rank of a run, resolved from the arguments.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// Number of ranks.
    pub size: usize,
    /// Total rows S of the distributed dimension (`--rows`).
    pub rows: u64,
    /// Rows per rank (GEN_BLOCK counts), summing to `rows`.
    pub distribution: Vec<u64>,
    /// The distribution's name as given (`block`, `r0,r1,...`, a file).
    pub distribution_name: String,
    /// The expanded cluster description (`--cluster`, or `size` copies of this machine), one node
    /// per rank.
    pub cluster: ClusterSpec,
    /// Iterations of the main loop (`--iterations`).
    pub iterations: u32,
    /// An instrumented run (`--instrument`, `--measurements` or `--trace`).
    pub instrument: bool,
    /// An instrumented run that leaves in-core arrays in core (`--keep-in-core`).
    pub keep_in_core: bool,
    /// Arrays follow the memory available (`--mmlib`, [`crate::adapt::mm`]).
    pub mmlib: bool,
    /// Time the main loop's iterations (`--timings`).
    pub timing: bool,
    /// Wall, virtual or charged clock (`--clock`).
    pub clock: ClockMode,
    /// The run's scratch directory; rank `r` stores its arrays under `rank-r/`.
    pub scratch: PathBuf,
    /// The longest one MPI communication may wait before the job is ended (`--comm-timeout`).
    pub comm_timeout: Option<std::time::Duration>,
}

/// One rank's view of the run, handed to the closure given to `launch`.
///
/// The closure sees the run through it: its rank among `size()` ranks, the total rows S and
/// this rank's share of them under the run's distribution, the iteration count, the
/// communicator, and out-of-core arrays sized by the node's memory.
///
/// ```
/// use mheta_runtime::{launch, Args, CommError, CommExt, Context, ReduceOp};
///
/// /// Halves a vector of ones every iteration; returns its squared norm.
/// fn solve(ctx: &Context) -> Result<f64, CommError> {
///     let n = ctx.rows() as usize; // S, from --rows
///     let mut x = vec![1.0; ctx.local_rows(n)]; // this rank's rows only
///     let mut norm = 0.0;
///     for _ in 0..ctx.iterations() {
///         x.iter_mut().for_each(|v| *v *= 0.5);
///         let local: f64 = x.iter().map(|v| v * v).sum();
///         norm = ctx.comm().all_reduce_value(local, ReduceOp::Sum)?;
///     }
///     Ok(norm)
/// }
///
/// let args = Args::try_parse_from(["prog", "--ranks", "2", "--rows", "6", "--iterations", "2"])?;
/// assert_eq!(launch(&args, solve)?, vec![0.375, 0.375]); // 6 rows of 0.25²
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Context {
    rank: usize,
    comm: Box<dyn Comm>,
    settings: Arc<RunSettings>,
    store: std::sync::OnceLock<NodeStore>,
}

impl Context {
    pub(crate) fn new(rank: usize, comm: Box<dyn Comm>, settings: Arc<RunSettings>) -> Context {
        Context {
            rank,
            comm,
            settings,
            store: std::sync::OnceLock::new(),
        }
    }

    /// This rank, `0..size()`.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.settings.size
    }

    /// The communicator (use it through `CommExt`).
    pub fn comm(&self) -> &dyn Comm {
        &*self.comm
    }

    /// Total rows S of the distributed dimension.
    pub fn rows(&self) -> u64 {
        self.settings.rows
    }

    /// Iterations of the main loop (`--iterations`).
    pub fn iterations(&self) -> u32 {
        self.settings.iterations
    }

    /// Rows per rank of the current distribution.
    pub fn distribution(&self) -> &[u64] {
        &self.settings.distribution
    }

    /// This node's GEN_BLOCK range of `n` items. For `n == rows()` it is exactly the
    /// distribution's range; for other lengths the distribution's boundaries are scaled
    /// proportionally (`floor(boundary × n / S)`), so the ranks' ranges still tile `0..n`.
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommError};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "2", "--distribution", "1,3"])?;
    /// let parts = launch(&args, |ctx| {
    ///     Ok::<_, CommError>((ctx.partition(4), ctx.partition(8), ctx.local_rows(8)))
    /// })?;
    /// assert_eq!(parts[0], (0..1, 0..2, 2)); // S = 4; for 8 items the boundaries double
    /// assert_eq!(parts[1], (1..4, 2..8, 6));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn partition(&self, n: usize) -> Range<usize> {
        partition_of(
            &self.settings.distribution,
            self.settings.rows,
            self.rank,
            n,
        )
    }

    /// The length of [`partition`](Self::partition)`(n)`.
    pub fn local_rows(&self, n: usize) -> usize {
        self.partition(n).len()
    }

    /// The whole (expanded) cluster description.
    pub fn cluster(&self) -> &ClusterSpec {
        &self.settings.cluster
    }

    /// This node's emulated capabilities.
    pub fn node(&self) -> &NodeSpec {
        &self.settings.cluster.nodes[self.rank]
    }

    /// Is this an instrumented run?
    pub fn instrumenting(&self) -> bool {
        self.settings.instrument
    }

    /// The run's clock mode.
    pub fn clock_mode(&self) -> ClockMode {
        self.settings.clock
    }

    /// This rank's directory for its file store.
    pub fn scratch_dir(&self) -> PathBuf {
        rank_dir(&self.settings.scratch, self.rank)
    }

    /// The run's settings.
    pub fn settings(&self) -> &RunSettings {
        &self.settings
    }

    /// This node's out-of-core store (opened on first use).
    pub fn store(&self) -> Result<&NodeStore, OocError> {
        if let Some(s) = self.store.get() {
            return Ok(s);
        }
        let config = StoreConfig::for_node(
            self.scratch_dir(),
            self.node(),
            self.settings.instrument,
            self.settings.keep_in_core,
        );
        let store = NodeStore::open(config)?;
        if self.settings.mmlib {
            store.set_malleable();
        }
        Ok(self.store.get_or_init(|| store))
    }

    /// An out-of-core capable array of `rows` local rows of `row_len` elements, placed in core
    /// or on disk according to this node's memory budget.
    ///
    /// Without `--cluster` every node has unbounded memory and the array stays in core, one block;
    /// under a cluster whose node memory is smaller, it goes to the rank's file store and is moved
    /// block by block (see [`OocArray`]).
    ///
    /// ```
    /// use mheta_runtime::{launch, Args};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "2", "--rows", "8"])?;
    /// let firsts = launch(&args, |ctx| {
    ///     let rows = ctx.local_rows(8);
    ///     let mut u = ctx.array::<f64>("u", rows as u64, 3)?; // 3 elements per row
    ///     for k in 0..u.num_blocks() {
    ///         let values = vec![ctx.rank() as f64; u.block_len(k)];
    ///         u.write_block(k, &values)?;
    ///     }
    ///     let first = u.read_block(0)?[0];
    ///     Ok::<_, mheta_runtime::ooc::OocError>(first)
    /// })?;
    /// assert_eq!(firsts, vec![0.0, 1.0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn array<T: ooc::Element>(
        &self,
        name: &str,
        rows: u64,
        row_len: usize,
    ) -> Result<OocArray<T>, OocError> {
        hooks::register_array(name, (row_len * std::mem::size_of::<T>()) as u64, true);
        OocArray::new(self.store()?, ArraySpec::new(name, rows, row_len))
    }
}

/// Rank `rank`'s directory under a run's scratch directory.
pub fn rank_dir(scratch: &Path, rank: usize) -> PathBuf {
    scratch.join(format!("rank-{rank}"))
}

/// Rank `rank`'s range of `n` items under a GEN_BLOCK distribution of `total` rows.
pub fn partition_of(distribution: &[u64], total: u64, rank: usize, n: usize) -> Range<usize> {
    let before: u64 = distribution[..rank].iter().sum();
    let end = before + distribution[rank];
    if total == n as u64 {
        return before as usize..end as usize;
    }
    if total == 0 {
        return 0..0;
    }
    let scale = |b: u64| ((b as u128 * n as u128) / total as u128) as usize;
    scale(before)..scale(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_tile_the_range() {
        let d = [3u64, 0, 5, 2];
        assert_eq!(partition_of(&d, 10, 0, 10), 0..3);
        assert_eq!(partition_of(&d, 10, 1, 10), 3..3);
        assert_eq!(partition_of(&d, 10, 2, 10), 3..8);
        assert_eq!(partition_of(&d, 10, 3, 10), 8..10);
        // Scaled to 20 items: boundaries double.
        assert_eq!(partition_of(&d, 10, 2, 20), 6..16);
        // Scaled to 7 items: floor(boundary × 7 / 10), still contiguous and covering.
        let ranges: Vec<_> = (0..4).map(|r| partition_of(&d, 10, r, 7)).collect();
        assert_eq!(ranges.first().unwrap().start, 0);
        assert_eq!(ranges.last().unwrap().end, 7);
        for w in ranges.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
    }
}
