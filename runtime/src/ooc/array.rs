//! [`OocArray`]: a node's local block of a row-distributed 2-D array, in core or out of core.
//!
//! The array has `rows` local rows of `row_len` elements, processed in blocks of ICLA rows
//! (seed §5.1): block `i` holds rows `i·icla .. min((i+1)·icla, rows)`; the last block may be
//! shorter. An in-core array is one block held in memory; an out-of-core one lives in its
//! directory of the node's store, one block file per block (see `block_file`), and a block
//! never written reads as zeros.
//!
//! Every disk operation is charged the emulated disk's cost (`DiskModel`): the real operation's
//! shortfall is passed to `clock::charge`, and the operation is recorded with `hooks::record_io`
//! as `(var, op, payload bytes, begin, end)` on the rank's clock. Prefetching records two
//! operations: `Prefetch` over the issue (in an instrumented run, the whole synchronous read),
//! and `Wait` with zero bytes over the interval from the prefetch's return to the entry into
//! `wait` — the overlapped computation T_A of seed Fig. 5.5/5.6.
//!
//! In an instrumented run a block write also times the memory copy an in-core write of the
//! block would make, and records it as a `Copy` record (`hooks`).
//!
//! Every disk operation (the real I/O, its charge and its record) runs in a
//! `clock::not_compute` span: its CPU time is not slowed by a wall-clock CPU slowdown, since the
//! disk is emulated by its charge already.

use std::cell::OnceCell;
use std::path::PathBuf;

use super::block_file::{read_block_file, write_block_file, BlockShape, WriteFault, HEADER_BYTES};
use super::element::{decode, encode, Element};
use super::policy::Placement;
use super::prefetch::{Job, Worker};
use super::store::{ArraySpec, NodeStore};
use super::OocError;
use crate::adapt::mm::{PanelCache, PANELS};
use crate::clock;
use crate::cluster::DiskModel;
use crate::hooks::{self, IoKind, VarId};

/// The page size of emulated paging.
pub const PAGE_BYTES: u64 = 4096;

/// Counts and times of an array's disk operations (all since creation).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IoStats {
    /// Synchronous block reads.
    pub reads: u64,
    /// Block writes.
    pub writes: u64,
    /// Prefetches.
    pub prefetches: u64,
    /// Payload bytes read, by reads and prefetches.
    pub bytes_read: u64,
    /// Payload bytes written.
    pub bytes_written: u64,
    /// Seconds charged to the clock by disk emulation (paging included).
    pub charged_s: f64,
    /// Pages faulted in by emulated paging (see [`OocArray::read_block`]).
    pub pages_faulted: u64,
}

/// A prefetch between `prefetch_block` and `wait`.
enum Pending {
    /// The block is in `ahead` already (instrumented run, or an in-core array).
    Ready { block: usize, issued_end: f64 },
    /// The worker is reading it; its emulated read completes at `done_at` on the rank's clock.
    InFlight {
        block: usize,
        issued_end: f64,
        done_at: f64,
    },
}

/// A node's local part of a distributed array, out-of-core capable.
///
/// A program gets one from [`Context::array`](crate::Context::array), which places it by the
/// node's memory in the cluster description. Whatever the placement, the program walks the
/// blocks: `num_blocks()` blocks of `block_rows()` rows (the last may be shorter), read with
/// [`read_block`](Self::read_block), written with [`write_block`](Self::write_block). An in-core
/// array is a single block and moves no bytes. Block files are written atomically (temp file,
/// fsync, rename) and CRC-checked on read; a block never written reads as zeros.
///
/// ```
/// use mheta_runtime::format::ClusterSpec;
/// use mheta_runtime::ooc::{ArraySpec, NodeStore, OocArray, StoreConfig};
///
/// // A node whose memory holds 4 rows of 8 f64 (64 bytes each): a 10-row array goes out of core.
/// let mut node = ClusterSpec::this_machine(1).nodes[0];
/// node.memory_bytes = 4 * 64;
/// let scratch = tempfile::tempdir()?;
/// let store = NodeStore::open(StoreConfig::for_node(scratch.path(), &node, false, false))?;
/// let mut a = OocArray::<f64>::new(&store, ArraySpec::new("a", 10, 8))?;
/// assert!(a.is_out_of_core());
/// assert!(a.num_blocks() > 1);
///
/// // Fill every block with its rows' indices, then read them back.
/// for k in 0..a.num_blocks() {
///     let rows = a.block_range(k);
///     let values: Vec<f64> = rows.flat_map(|r| [r as f64; 8]).collect();
///     a.write_block(k, &values)?;
/// }
/// let last = a.num_blocks() - 1;
/// let block = a.read_block(last)?;
/// assert_eq!(block[block.len() - 1], 9.0); // the last element of row 9
/// assert_eq!(a.stats().writes, a.num_blocks() as u64);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OocArray<T: Element> {
    store: NodeStore,
    spec: ArraySpec,
    dir: PathBuf,
    slot: Option<usize>,
    placement: OnceCell<Placement>,
    var: Option<VarId>,
    /// The ICLA buffer (out of core), or the whole array (in core, allocated on first use).
    current: Vec<T>,
    /// The buffer a prefetch fills.
    ahead: Vec<T>,
    bytes: Vec<u8>,
    file_bytes: Vec<u8>,
    /// Instrumented runs only: the target of the timed in-core copy of each block written.
    copy: Vec<T>,
    pending: Option<Pending>,
    worker: Option<Worker<T>>,
    stats: IoStats,
    fault: Option<WriteFault>,
    /// Per block: whether its file was written (by this array or before a reopen). A block
    /// never written reads as zeros; a written one whose file is gone is an error.
    written: Vec<bool>,
    /// The array follows the memory (`--mmlib`): its blocks are MMlib's panels.
    malleable: bool,
    /// The panels cached in memory, once a block was asked for (malleable arrays).
    panels: Option<PanelCache>,
    /// A malleable array on a node whose memory is not emulated: the machine's available memory
    /// when last read, and when (read at most every [`FREE_MEMORY_EVERY`]).
    machine_free: Option<(std::time::Instant, Option<u64>)>,
}

/// How long a reading of the machine's available memory serves a malleable array.
const FREE_MEMORY_EVERY: std::time::Duration = std::time::Duration::from_millis(10);

impl<T: Element> OocArray<T> {
    /// Create (or reopen: existing blocks are kept) an array in `store`.
    pub fn new(store: &NodeStore, spec: ArraySpec) -> Result<OocArray<T>, OocError> {
        let row_bytes = (spec.row_len as u64).saturating_mul(T::SIZE as u64);
        // Held in core: the whole array, or at most the node's memory as its ICLA.
        let in_core = super::in_core_bytes(
            u128::from(spec.rows) * u128::from(row_bytes),
            store.config().memory_bytes,
        );
        if let Some(machine) = crate::cluster::machine_memory() {
            if in_core > u128::from(machine) {
                return Err(OocError::TooLarge {
                    array: spec.name.clone(),
                    rows: spec.rows,
                    row_bytes,
                    in_core,
                    machine,
                });
            }
        }
        let (dir, slot) = store.register(&spec, row_bytes)?;
        std::fs::create_dir_all(&dir).map_err(|source| OocError::Io {
            action: "create array directory",
            path: dir.clone(),
            source,
        })?;
        let written = open_directory(&dir)?;
        let placement = OnceCell::new();
        if let Some(fixed) = spec.placement {
            let _ = placement.set(fixed);
        }
        let var = spec.record.then(|| hooks::register_var(&spec.name));
        let malleable = store.malleable() && slot.is_some() && spec.rows > 0;
        Ok(OocArray {
            store: store.clone(),
            spec,
            dir,
            slot,
            placement,
            var,
            current: Vec::new(),
            ahead: Vec::new(),
            bytes: Vec::new(),
            file_bytes: Vec::new(),
            copy: Vec::new(),
            pending: None,
            written,
            worker: None,
            stats: IoStats::default(),
            fault: None,
            malleable,
            panels: None,
            machine_free: None,
        })
    }

    /// The name the array was created with.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// Local rows.
    pub fn rows(&self) -> u64 {
        self.spec.rows
    }

    /// Elements per row.
    pub fn row_len(&self) -> usize {
        self.spec.row_len
    }

    /// In core, or out of core with its ICLA size (decided on first use; see `NodeStore`).
    pub fn placement(&self) -> Placement {
        *self.placement.get_or_init(|| match self.slot {
            // A malleable array's blocks are its panels, whatever the plan.
            Some(_) if self.malleable => Placement::OutOfCore {
                icla_rows: self.spec.rows.div_ceil(PANELS).max(1),
            },
            Some(slot) => self.store.placement(slot),
            None => Placement::InCore,
        })
    }

    /// True when the array lives on disk and moves in blocks.
    pub fn is_out_of_core(&self) -> bool {
        matches!(self.placement(), Placement::OutOfCore { .. })
    }

    /// Rows per block (the ICLA size; all rows when in core).
    pub fn block_rows(&self) -> u64 {
        self.placement().block_rows(self.spec.rows)
    }

    /// Number of blocks, N_L (zero for an array without rows).
    pub fn num_blocks(&self) -> usize {
        self.placement().blocks(self.spec.rows) as usize
    }

    /// The local rows block `i` covers.
    pub fn block_range(&self, i: usize) -> std::ops::Range<u64> {
        let per = self.block_rows();
        let start = (i as u64 * per).min(self.spec.rows);
        start..(start + per).min(self.spec.rows)
    }

    /// Elements in block `i`.
    pub fn block_len(&self, i: usize) -> usize {
        let range = self.block_range(i);
        (range.end - range.start) as usize * self.spec.row_len
    }

    /// The array's disk operations so far.
    pub fn stats(&self) -> IoStats {
        self.stats
    }

    /// Read block `i`; the slice lives until the next operation on the array.
    ///
    /// An in-core array moves no bytes, unless the node's load schedule takes so much memory
    /// (`[[node.load]] memory`) that the arrays placed in core no longer fit: the kernel then
    /// keeps what fits and pages the rest, and every access to in-core data faults in its
    /// share of the excess, a page at a time, each page a disk read with its latency (a write
    /// also pages its dirty pages out, at the disk's write rate). A placement fixed before the
    /// memory went pays this; an array that follows the memory ([`crate::adapt::mm`]) need not.
    pub fn read_block(&mut self, i: usize) -> Result<&[T], OocError> {
        self.check_block(i)?;
        let len = self.block_len(i);
        if self.malleable {
            return self.read_panel(i);
        }
        if !self.is_out_of_core() {
            self.page(len, false);
            return Ok(&self.in_core_data()[..len]);
        }
        let mut buffer = std::mem::take(&mut self.current);
        let result = self.read_sync(i, &mut buffer, IoKind::Read);
        self.current = buffer;
        result?;
        Ok(&self.current[..len])
    }

    /// Read block `i` into `out`, which must hold exactly `block_len(i)` elements.
    pub fn read_block_into(&mut self, i: usize, out: &mut [T]) -> Result<(), OocError> {
        self.check_len(i, out.len())?;
        let block = self.read_block(i)?;
        out.copy_from_slice(block);
        Ok(())
    }

    /// Write block `i` (exactly `block_len(i)` elements); durable and atomic when out of core.
    pub fn write_block(&mut self, i: usize, values: &[T]) -> Result<(), OocError> {
        self.check_len(i, values.len())?;
        if self.malleable {
            return self.write_panel(i, values);
        }
        if !self.is_out_of_core() {
            self.page(values.len(), true);
            self.in_core_data()[..values.len()].copy_from_slice(values);
            return Ok(());
        }
        self.write_file(i, values)
    }

    /// Write block `i`'s file: atomically, charged, recorded.
    fn write_file(&mut self, i: usize, values: &[T]) -> Result<(), OocError> {
        let _io = clock::not_compute();
        self.time_in_core_copy(values);
        let shape = self.shape(i);
        let path = self.block_path(i);
        let begin = clock::now();
        encode(values, &mut self.bytes);
        write_block_file(
            &path,
            shape,
            &self.bytes,
            &mut self.file_bytes,
            self.fault.take(),
        )?;
        mark_written(&mut self.written, i);
        self.account_write(shape, begin);
        Ok(())
    }

    /// Start reading block `i` in the background; `wait` returns it. In an instrumented run
    /// this is a synchronous read (seed Fig. 5.6).
    ///
    /// One prefetch may be pending at a time; overlap the next block's read with this block's
    /// computation:
    ///
    /// ```
    /// use mheta_runtime::format::ClusterSpec;
    /// use mheta_runtime::ooc::{ArraySpec, NodeStore, OocArray, StoreConfig};
    ///
    /// let mut node = ClusterSpec::this_machine(1).nodes[0];
    /// node.memory_bytes = 2 * 32; // two rows of 4 f64
    /// let scratch = tempfile::tempdir()?;
    /// let store = NodeStore::open(StoreConfig::for_node(scratch.path(), &node, false, false))?;
    /// let mut a = OocArray::<f64>::new(&store, ArraySpec::new("a", 6, 4))?;
    /// for k in 0..a.num_blocks() {
    ///     a.write_block(k, &vec![k as f64; a.block_len(k)])?;
    /// }
    ///
    /// let mut sum = 0.0;
    /// a.prefetch_block(0)?;
    /// for k in 0..a.num_blocks() {
    ///     let current = a.wait()?.to_vec();
    ///     if k + 1 < a.num_blocks() {
    ///         a.prefetch_block(k + 1)?; // read block k + 1 while computing on block k
    ///     }
    ///     sum += current.iter().sum::<f64>();
    /// }
    /// let expected: f64 = (0..a.num_blocks()).map(|k| (k * a.block_len(k)) as f64).sum();
    /// assert_eq!(sum, expected);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefetch_block(&mut self, i: usize) -> Result<(), OocError> {
        self.check_block(i)?;
        if let Some(Pending::Ready { block, .. } | Pending::InFlight { block, .. }) = self.pending {
            return Err(OocError::PrefetchPending {
                array: self.spec.name.clone(),
                block: i,
                pending: block,
            });
        }
        if !self.is_out_of_core() || self.malleable {
            // Nothing to read ahead (a malleable array reads a missing panel at `wait`).
            self.pending = Some(Pending::Ready {
                block: i,
                issued_end: clock::now(),
            });
            return Ok(());
        }
        let _io = clock::not_compute();
        if self.store.config().instrumented {
            let mut ahead = std::mem::take(&mut self.ahead);
            let result = self.read_sync(i, &mut ahead, IoKind::Prefetch);
            self.ahead = ahead;
            result?;
            self.pending = Some(Pending::Ready {
                block: i,
                issued_end: clock::now(),
            });
            return Ok(());
        }
        let begin = clock::now();
        if self.worker.is_none() {
            self.worker = Some(Worker::spawn(&self.spec.name)?);
        }
        let job = Job {
            path: self.block_path(i),
            shape: self.shape(i),
            buffer: std::mem::take(&mut self.ahead),
            written: self.was_written(i),
        };
        let bytes = job.shape.payload_bytes() as u64;
        let done_at = begin + self.disk().read_seconds(bytes);
        if let Some(worker) = self.worker.as_mut() {
            worker.submit(job, &self.spec.name)?;
        }
        self.record(IoKind::Prefetch, bytes, begin);
        self.stats.prefetches += 1;
        self.stats.bytes_read += bytes;
        self.pending = Some(Pending::InFlight {
            block: i,
            issued_end: clock::now(),
            done_at,
        });
        Ok(())
    }

    /// Wait for the pending prefetch and return its block. A no-op wait in an instrumented run.
    pub fn wait(&mut self) -> Result<&[T], OocError> {
        let _io = clock::not_compute();
        let entry = clock::now();
        let Some(pending) = self.pending.take() else {
            return Err(OocError::NoPrefetch {
                array: self.spec.name.clone(),
            });
        };
        let (block, issued_end) = match pending {
            Pending::Ready { block, issued_end } => (block, issued_end),
            Pending::InFlight {
                block,
                issued_end,
                done_at,
            } => {
                let worker = self
                    .worker
                    .as_mut()
                    .ok_or_else(|| OocError::PrefetchThread {
                        array: self.spec.name.clone(),
                    })?;
                let (buffer, result) = worker.finish(&self.spec.name)?;
                self.ahead = buffer;
                result?;
                // The emulated read completes at `done_at`; charge what the real one fell short.
                let short = DiskModel::shortfall(done_at, clock::now());
                clock::charge(short);
                self.stats.charged_s += short;
                (block, issued_end)
            }
        };
        // T_A: from the prefetch's return to the entry into wait.
        if let Some(var) = self.var {
            hooks::record_io(var, IoKind::Wait, 0, issued_end, entry);
        }
        let len = self.block_len(block);
        if self.malleable {
            return self.read_panel(block);
        }
        if !self.is_out_of_core() {
            self.page(len, false);
            return Ok(&self.in_core_data()[..len]);
        }
        std::mem::swap(&mut self.current, &mut self.ahead);
        Ok(&self.current[..len])
    }

    /// When the prefetch in flight has really finished, the rank-clock time at which the
    /// emulated read completes (for the microbenchmarks); `None` while it is still running.
    pub(crate) fn prefetch_done_at(&mut self) -> Option<f64> {
        match self.pending {
            Some(Pending::InFlight { done_at, .. }) => {
                self.worker.as_mut()?.poll().then_some(done_at)
            }
            Some(Pending::Ready { .. }) => Some(clock::now()),
            None => None,
        }
    }

    /// Local rows `rows` (any range inside the array), appended to `out` in order; reads the
    /// blocks they lie in.
    pub fn read_rows(
        &mut self,
        rows: std::ops::Range<u64>,
        out: &mut Vec<T>,
    ) -> Result<(), OocError> {
        if rows.end > self.spec.rows || rows.start > rows.end {
            return Err(OocError::Reshape {
                array: self.spec.name.clone(),
                problem: format!(
                    "rows {}..{} are outside its {} rows",
                    rows.start, rows.end, self.spec.rows
                ),
            });
        }
        let (per, row_len) = (self.block_rows().max(1), self.spec.row_len);
        let mut row = rows.start;
        while row < rows.end {
            let k = (row / per) as usize;
            let block = self.block_range(k);
            let end = rows.end.min(block.end);
            let data = self.read_block(k)?;
            let (from, to) = ((row - block.start) as usize, (end - block.start) as usize);
            out.extend_from_slice(&data[from * row_len..to * row_len]);
            row = end;
        }
        Ok(())
    }

    /// Gives the array new local rows, assembled in order from `parts`: ranges of its own
    /// current rows and rows given as elements (rows that arrived from other ranks). The
    /// placement is decided again for the new row count in the memory the node's other arrays
    /// leave, so the array may go out of core or come back in. Out of core, the new blocks are
    /// written beside the old ones and replace them when all are written, so an own row is
    /// always read from the old blocks; the reads and writes are emulated and recorded like
    /// any other. A pending prefetch is waited for and dropped.
    pub fn reshape(&mut self, parts: &[Part<'_, T>]) -> Result<(), OocError> {
        if self.malleable {
            return Err(self.reshape_error(
                "it follows the memory (--mmlib), and its cached panels would not move with the rows"
                    .to_string(),
            ));
        }
        let row_len = self.spec.row_len.max(1);
        let mut rows = 0u64;
        for part in parts {
            rows += match part {
                Part::Own(r) if r.start <= r.end && r.end <= self.spec.rows => r.end - r.start,
                Part::Own(r) => {
                    return Err(self.reshape_error(format!(
                        "own rows {}..{} are outside its {} rows",
                        r.start, r.end, self.spec.rows
                    )))
                }
                Part::Given(v) if v.len() % row_len == 0 => (v.len() / row_len) as u64,
                Part::Given(v) => {
                    return Err(self.reshape_error(format!(
                        "{} given elements are not whole rows of {row_len}",
                        v.len()
                    )))
                }
            };
        }
        if self.pending.is_some() {
            self.wait()?;
        }
        let placement = match self.slot {
            Some(slot) => self.store.replace_rows(slot, rows),
            None => self.placement(),
        };
        let blocks = placement.blocks(rows) as usize;
        let staging = self.sibling("reshape");
        let out_of_core = matches!(placement, Placement::OutOfCore { .. });
        let old_rows = self.spec.rows;
        let next = match self.stage_rows(parts, rows, placement, &staging) {
            Ok(next) => next,
            Err(e) => {
                // Nothing changed but the ledger, which goes back; the staged blocks go.
                self.restore_ledger(old_rows);
                let _ = std::fs::remove_dir_all(&staging);
                return Err(e);
            }
        };
        // The old blocks go; the new ones (or the in-core rows) take their place.
        let io = |action: &'static str, path: PathBuf| {
            move |source| OocError::Io {
                action,
                path,
                source,
            }
        };
        // The old directory is set aside before the new one takes its name, so that a failure
        // between the two leaves the old blocks whole; once the new are in place, it goes.
        let old = self.sibling("old");
        let _ = std::fs::remove_dir_all(&old);
        if self.dir.exists() {
            std::fs::rename(&self.dir, &old)
                .map_err(io("set aside the old blocks of", self.dir.clone()))?;
        }
        let placed = if out_of_core {
            std::fs::rename(&staging, &self.dir)
                .map_err(io("move new blocks into", self.dir.clone()))
        } else {
            std::fs::create_dir_all(&self.dir)
                .map_err(io("create array directory", self.dir.clone()))
        };
        if let Err(e) = placed {
            let _ = std::fs::rename(&old, &self.dir);
            self.restore_ledger(old_rows);
            return Err(e);
        }
        // Leftovers here go with the run's scratch directory.
        let _ = std::fs::remove_dir_all(&old);
        self.spec.rows = rows;
        self.placement = OnceCell::new();
        let _ = self.placement.set(placement);
        self.written = vec![out_of_core; if out_of_core { blocks } else { 0 }];
        self.current = if out_of_core { Vec::new() } else { next };
        self.ahead = Vec::new();
        Ok(())
    }

    /// The new rows of a [`OocArray::reshape`] under `placement`: out of core, written block by
    /// block into `staging` (returns nothing); in core, returned.
    fn stage_rows(
        &mut self,
        parts: &[Part<'_, T>],
        rows: u64,
        placement: Placement,
        staging: &std::path::Path,
    ) -> Result<Vec<T>, OocError> {
        let out_of_core = matches!(placement, Placement::OutOfCore { .. });
        let per = placement.block_rows(rows).max(1);
        let row_len = self.spec.row_len.max(1);
        if out_of_core {
            std::fs::create_dir_all(staging).map_err(|source| OocError::Io {
                action: "create reshape directory",
                path: staging.to_path_buf(),
                source,
            })?;
        }
        // The new rows, streamed: a block at a time out of core, all of them in core.
        let mut next: Vec<T> = Vec::new();
        let (mut block, mut block_start) = (0usize, 0u64);
        for part in parts {
            let part_rows = match part {
                Part::Own(r) => r.end - r.start,
                Part::Given(values) => (values.len() / row_len) as u64,
            };
            let mut done = 0;
            while done < part_rows {
                let block_rows = (block_start + per).min(rows) - block_start;
                let filled = (next.len() / row_len) as u64;
                let n = if out_of_core {
                    (block_rows - filled).min(part_rows - done)
                } else {
                    part_rows - done
                };
                match part {
                    Part::Own(r) => {
                        self.read_rows(r.start + done..r.start + done + n, &mut next)?
                    }
                    Part::Given(values) => next.extend_from_slice(
                        &values[done as usize * row_len..(done + n) as usize * row_len],
                    ),
                }
                done += n;
                if out_of_core && filled + n == block_rows {
                    self.write_staged(staging, block, &next)?;
                    block += 1;
                    block_start += per;
                    next.clear();
                }
            }
        }
        Ok(next)
    }

    /// Writes block `i` of a reshape's new blocks into `dir`.
    fn write_staged(
        &mut self,
        dir: &std::path::Path,
        i: usize,
        values: &[T],
    ) -> Result<(), OocError> {
        let _io = clock::not_compute();
        let shape = BlockShape {
            elem_size: T::SIZE as u32,
            rows: (values.len() / self.spec.row_len.max(1)) as u64,
            row_len: self.spec.row_len as u64,
        };
        let begin = clock::now();
        encode(values, &mut self.bytes);
        write_block_file(
            &dir.join(format!("{i}.blk")),
            shape,
            &self.bytes,
            &mut self.file_bytes,
            self.fault.take(),
        )?;
        self.account_write(shape, begin);
        Ok(())
    }

    /// Emulates, records and counts the write of a block of `shape` that began at `begin`.
    fn account_write(&mut self, shape: BlockShape, begin: f64) {
        let bytes = shape.payload_bytes() as u64;
        self.emulate(self.disk().write_seconds(bytes), begin);
        self.record(IoKind::Write, bytes, begin);
        self.stats.writes += 1;
        self.stats.bytes_written += bytes;
    }

    /// The store's ledger back at `rows` for this array, after a reshape that failed.
    fn restore_ledger(&self, rows: u64) {
        if let Some(slot) = self.slot {
            self.store.replace_rows(slot, rows);
        }
    }

    /// A directory beside the array's, named after it with `.suffix`.
    fn sibling(&self, suffix: &str) -> PathBuf {
        let name = self
            .dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("array");
        self.dir.with_file_name(format!("{name}.{suffix}"))
    }

    fn reshape_error(&self, problem: String) -> OocError {
        OocError::Reshape {
            array: self.spec.name.clone(),
            problem,
        }
    }

    /// Make the next block write fail part-way (crash-safety tests only).
    #[doc(hidden)]
    pub fn inject_write_fault(&mut self, fault: WriteFault) {
        self.fault = Some(fault);
    }

    fn was_written(&self, i: usize) -> bool {
        self.written.get(i).copied().unwrap_or(false)
    }

    /// The file holding block `i` (for tests and error reports).
    pub fn block_path(&self, i: usize) -> PathBuf {
        self.dir.join(format!("{i}.blk"))
    }

    fn read_sync(&mut self, i: usize, buffer: &mut Vec<T>, kind: IoKind) -> Result<(), OocError> {
        let _io = clock::not_compute();
        let shape = self.shape(i);
        let path = self.block_path(i);
        let begin = clock::now();
        let written = self.was_written(i);
        read_block_file(&path, shape, &mut self.file_bytes, written)?;
        crate::malloc::reserve_huge(buffer, self.block_len(i));
        buffer.resize(self.block_len(i), T::default());
        decode(&self.file_bytes[HEADER_BYTES..], buffer);
        let bytes = shape.payload_bytes() as u64;
        self.emulate(self.disk().read_seconds(bytes), begin);
        self.record(kind, bytes, begin);
        match kind {
            IoKind::Prefetch => self.stats.prefetches += 1,
            _ => self.stats.reads += 1,
        }
        self.stats.bytes_read += bytes;
        Ok(())
    }

    /// In an instrumented run, make and time the memory copy an in-core write of `values`
    /// would make. The run forces arrays out of core (seed §5.2.2), so it would otherwise never
    /// see what writing an in-core array costs, which the model charges when it places the array
    /// in core. The copy is CPU work: on a wall clock it is slowed to the node's CPU power like
    /// computation, and its record is taken out of the stage's computation like I/O.
    fn time_in_core_copy(&mut self, values: &[T]) {
        let Some(var) = self.var else { return };
        if !self.store.config().instrumented || self.spec.placement.is_some() {
            return;
        }
        let begin = clock::now();
        let slowdown = clock::ComputeMark::start();
        self.copy.resize(values.len(), T::default());
        self.copy.copy_from_slice(values);
        if let Some(mark) = slowdown {
            mark.finish();
        }
        let bytes = (values.len() * T::SIZE) as u64;
        hooks::record_in_core_copy(var, bytes, begin, clock::now());
    }

    /// Charge the emulated disk's shortfall for an operation that began at `begin`.
    /// The panel cache, made at the first panel asked for: it starts with as many panels as the
    /// node's plan gave the array memory for (at least one).
    fn panel_cache(&mut self) -> &mut PanelCache {
        if self.panels.is_none() {
            let panel_rows = self.block_rows().max(1);
            let planned_rows = match self.slot {
                Some(slot) => self.store.placement(slot).block_rows(self.spec.rows),
                None => self.spec.rows,
            };
            let capacity = (planned_rows / panel_rows).max(1);
            self.panels = Some(PanelCache::new(self.num_blocks(), capacity));
        }
        self.panels.as_mut().expect("made above")
    }

    /// Bytes of one (full) panel.
    fn panel_bytes(&self) -> u128 {
        u128::from(self.block_rows()) * self.spec.row_len as u128 * T::SIZE as u128
    }

    /// Where panel `i` lies in the buffer of the whole array.
    fn panel_span(&self, i: usize) -> std::ops::Range<usize> {
        let rows = self.block_range(i);
        rows.start as usize * self.spec.row_len..rows.end as usize * self.spec.row_len
    }

    /// MMlib's decision at a panel request (seed Fig. 5.10, [`crate::adapt::mm::Adapter`]): the
    /// room the node leaves this array now, in panels, against what it caches; evicts down to
    /// the capacity decided.
    fn adapt_panels(&mut self) -> Result<(), OocError> {
        let panel_bytes = self.panel_bytes().max(1);
        let now = clock::now();
        let own = u128::from(self.panel_cache().cached()) * panel_bytes;
        let room_bytes = if self.store.config().memory_bytes == u64::MAX {
            // Not emulated: what the machine has available now, besides what the panels hold
            // (the node's other arrays are part of what it has given already).
            match self.machine_free() {
                Some(free) => u128::from(free) + own,
                None => u128::MAX,
            }
        } else {
            let taken = clock::memory_taken();
            let memory = u128::from(self.store.config().memory_bytes.saturating_sub(taken));
            let others = self.store.resident_bytes().saturating_sub(own);
            memory.saturating_sub(others)
        };
        let room = u64::try_from(room_bytes / panel_bytes).unwrap_or(u64::MAX);
        let cache = self.panel_cache();
        let cached = cache.cached();
        let capacity = cache.adapter.before_request(now, cached, room).capacity;
        while self.panel_cache().cached() > capacity {
            self.evict_panel()?;
        }
        Ok(())
    }

    /// The machine's available memory, read again when the last reading is older than
    /// [`FREE_MEMORY_EVERY`].
    fn machine_free(&mut self) -> Option<u64> {
        match self.machine_free {
            Some((at, free)) if at.elapsed() < FREE_MEMORY_EVERY => free,
            _ => {
                let free = crate::cluster::machine_available_memory();
                self.machine_free = Some((std::time::Instant::now(), free));
                free
            }
        }
    }

    /// Evicts the most recently used panel, writing it back when dirty.
    fn evict_panel(&mut self) -> Result<(), OocError> {
        let cache = self.panel_cache();
        let Some(victim) = cache.victim() else {
            return Ok(());
        };
        if cache.take(victim) == Some(true) {
            let span = self.panel_span(victim);
            let data = std::mem::take(&mut self.current);
            let written = self.write_file(victim, &data[span]);
            self.current = data;
            written?;
        }
        self.note_held();
        Ok(())
    }

    /// Tells the store what the panels cached now hold.
    fn note_held(&mut self) {
        let bytes = u128::from(self.panel_cache().cached()) * self.panel_bytes();
        if let Some(slot) = self.slot {
            self.store.set_held(slot, bytes);
        }
    }

    /// Makes room for one more panel in the cache.
    fn make_room(&mut self) -> Result<(), OocError> {
        let capacity = self.panel_cache().adapter.capacity();
        while self.panel_cache().cached() >= capacity {
            self.evict_panel()?;
        }
        Ok(())
    }

    /// Read panel `i` of a malleable array: from the cache, or from its block file into the
    /// cache (evicting to make room).
    fn read_panel(&mut self, i: usize) -> Result<&[T], OocError> {
        self.adapt_panels()?;
        let span = self.panel_span(i);
        self.in_core_data(); // the whole array's buffer, where cached panels live
        if self.panel_cache().slots[i].is_some() {
            self.panel_cache().touch(i);
            self.page(span.len(), false);
        } else {
            self.make_room()?;
            let mut buffer = std::mem::take(&mut self.ahead);
            let read = self.read_sync(i, &mut buffer, IoKind::Read);
            if read.is_ok() {
                self.current[span.clone()].copy_from_slice(&buffer[..span.len()]);
            }
            self.ahead = buffer;
            read?;
            let cache = self.panel_cache();
            cache.slots[i] = Some(false);
            cache.touch(i);
            self.note_held();
        }
        Ok(&self.current[span])
    }

    /// Write panel `i` of a malleable array: into the cache (written back when evicted).
    fn write_panel(&mut self, i: usize, values: &[T]) -> Result<(), OocError> {
        self.adapt_panels()?;
        let span = self.panel_span(i);
        self.in_core_data(); // the whole array's buffer, where cached panels live
        let cached = self.panel_cache().slots[i].is_some();
        if cached {
            self.page(values.len(), true);
        } else {
            self.make_room()?;
        }
        self.current[span].copy_from_slice(values);
        let cache = self.panel_cache();
        cache.slots[i] = Some(true);
        cache.touch(i);
        if !cached {
            self.note_held();
        }
        Ok(())
    }

    /// Emulated paging of an access to `elements` in-core elements (see [`Self::read_block`]):
    /// the access faults in its share `excess / resident` of the node's arrays' in-memory bytes
    /// that no longer fit beside the memory the load schedule takes.
    fn page(&mut self, elements: usize, dirty: bool) {
        let taken = clock::memory_taken();
        if taken == 0 {
            return;
        }
        let available = u128::from(self.store.config().memory_bytes.saturating_sub(taken));
        let resident = self.store.resident_bytes();
        if resident <= available {
            return;
        }
        let bytes = elements as u128 * T::SIZE as u128;
        let faulted = bytes * (resident - available) / resident;
        let pages = u64::try_from(faulted.div_ceil(PAGE_BYTES as u128)).unwrap_or(u64::MAX);
        if pages == 0 {
            return;
        }
        let disk = self.disk();
        let mut cost_s = pages as f64 * disk.read_seconds(PAGE_BYTES);
        if dirty {
            cost_s += pages as f64 * PAGE_BYTES as f64 / disk.write_bps;
        }
        let _io = clock::not_compute();
        clock::charge(cost_s);
        self.stats.charged_s += cost_s;
        self.stats.pages_faulted += pages;
    }

    fn emulate(&mut self, cost_s: f64, begin: f64) {
        let short = DiskModel::shortfall(cost_s, clock::now() - begin);
        clock::charge(short);
        self.stats.charged_s += short;
    }

    fn record(&self, kind: IoKind, bytes: u64, begin: f64) {
        if let Some(var) = self.var {
            hooks::record_io(var, kind, bytes, begin, clock::now());
        }
    }

    fn disk(&self) -> DiskModel {
        self.store.config().disk
    }

    fn shape(&self, i: usize) -> BlockShape {
        let range = self.block_range(i);
        BlockShape {
            elem_size: T::SIZE as u32,
            rows: range.end - range.start,
            row_len: self.spec.row_len as u64,
        }
    }

    fn in_core_data(&mut self) -> &mut [T] {
        let len = self.spec.rows as usize * self.spec.row_len;
        if self.current.len() != len {
            crate::malloc::reserve_huge(&mut self.current, len);
            self.current.resize(len, T::default());
        }
        &mut self.current
    }

    fn check_block(&self, i: usize) -> Result<(), OocError> {
        let blocks = self.num_blocks();
        if i >= blocks {
            return Err(OocError::BlockOutOfRange {
                array: self.spec.name.clone(),
                block: i,
                blocks,
            });
        }
        Ok(())
    }

    fn check_len(&self, i: usize, got: usize) -> Result<(), OocError> {
        self.check_block(i)?;
        let expected = self.block_len(i);
        if got != expected {
            return Err(OocError::WrongLength {
                array: self.spec.name.clone(),
                block: i,
                expected,
                got,
            });
        }
        Ok(())
    }
}

/// Where [`OocArray::reshape`] takes a run of the new rows from.
#[derive(Debug, Clone)]
pub enum Part<'a, T> {
    /// These of the array's current local rows.
    Own(std::ops::Range<u64>),
    /// These elements (whole rows).
    Given(&'a [T]),
}

/// Remove `*.tmp` files a crash left in an array directory.
fn mark_written(written: &mut Vec<bool>, block: usize) {
    if written.len() <= block {
        written.resize(block + 1, false);
    }
    written[block] = true;
}

/// Removes the temporary files a crash left in an array's directory and returns, per block
/// index, whether its block file exists (blocks kept from before a reopen count as written).
fn open_directory(dir: &std::path::Path) -> Result<Vec<bool>, OocError> {
    let io = |action: &'static str, path: PathBuf| {
        move |source| OocError::Io {
            action,
            path,
            source,
        }
    };
    let mut written = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io("list", dir.to_path_buf()))? {
        let path = entry.map_err(io("list", dir.to_path_buf()))?.path();
        if path.extension().is_some_and(|e| e == "tmp") {
            std::fs::remove_file(&path).map_err(io("remove leftover", path.clone()))?;
        } else if path.extension().is_some_and(|e| e == "blk") {
            let index = path
                .file_stem()
                .and_then(|s| s.to_str()?.parse::<usize>().ok());
            if let Some(i) = index {
                mark_written(&mut written, i);
            }
        }
    }
    Ok(written)
}
