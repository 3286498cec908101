//! A node's (rank's) out-of-core store: its directory, memory budget, emulated disk and mode.
//!
//! Arrays created from one [`NodeStore`] share its memory budget. Their placement (in core, or
//! out of core with an ICLA size) is decided by [`plan`] over *all arrays created so far*, at the
//! first block operation on any of them: programs create their arrays before the main loop, so
//! the runtime decides exactly as the model does. Arrays created after that point are placed in
//! the memory left over. In an instrumented run every array that would be in core is forced out
//! of core in two blocks (seed §5.2.2), so that r(m), w(m), O_r and O_w are measured on every
//! node whatever the distribution.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use super::policy::{plan, ArrayDemand, IoEstimate, Placement};
use super::OocError;
use crate::cleanup::{DirLock, LockError};
use crate::cluster::DiskModel;
use crate::format::NodeSpec;

/// How to open a node's store.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreConfig {
    /// This rank's directory; created if missing. One directory per rank.
    pub dir: PathBuf,
    /// Memory available to the node's distributed arrays, bytes (`u64::MAX` = unbounded).
    pub memory_bytes: u64,
    /// The node's emulated disk.
    pub disk: DiskModel,
    /// An instrumented run: prefetches are synchronous reads and waits no-ops (seed Fig. 5.6),
    /// and (with `force_out_of_core`) every potentially out-of-core array does I/O in at least
    /// two blocks.
    pub instrumented: bool,
    /// In an instrumented run, force the arrays the budget keeps in core out of core, so their
    /// I/O is measured (seed §5.2.2). Off for the run that measures in-core computation.
    pub force_out_of_core: bool,
}

impl StoreConfig {
    /// The store of a node described by `node`; `instrumented` runs force in-core arrays out of
    /// core unless `keep_in_core`.
    pub fn for_node(
        dir: impl Into<PathBuf>,
        node: &NodeSpec,
        instrumented: bool,
        keep_in_core: bool,
    ) -> StoreConfig {
        StoreConfig {
            dir: dir.into(),
            memory_bytes: node.memory_bytes,
            disk: DiskModel::of(node),
            instrumented,
            force_out_of_core: instrumented && !keep_in_core,
        }
    }
}

/// What to create: an array of `rows` local rows of `row_len` elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArraySpec {
    /// The variable's name: names the directory of its blocks and its I/O records.
    pub name: String,
    /// Local rows (this rank's part of the distributed dimension).
    pub rows: u64,
    /// Elements per row.
    pub row_len: usize,
    /// How often the array is used per iteration, for the placement heuristic (1 if unknown).
    pub uses: u32,
    /// A fixed placement instead of the budget's decision (the array then uses no budget and
    /// is not forced out of core when instrumenting).
    pub placement: Option<Placement>,
    /// Record the array's I/O through the hook layer (off for the runtime's own benchmarks).
    pub record: bool,
}

impl ArraySpec {
    /// An array named `name` of `rows` local rows of `row_len` elements, used once per iteration,
    /// placed by the store, and recorded.
    pub fn new(name: impl Into<String>, rows: u64, row_len: usize) -> ArraySpec {
        ArraySpec {
            name: name.into(),
            rows,
            row_len,
            uses: 1,
            placement: None,
            record: true,
        }
    }

    /// The same array with a fixed placement.
    pub fn with_placement(mut self, placement: Placement) -> ArraySpec {
        self.placement = Some(placement);
        self
    }
}

/// A node's store; cheap to clone (all clones share the budget).
#[derive(Debug, Clone)]
pub struct NodeStore {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    /// The store's directory is this process's while the store is open.
    _lock: DirLock,
    config: StoreConfig,
    ledger: Mutex<Ledger>,
    /// Arrays created from now on follow the memory (`crate::adapt::mm`).
    malleable: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Default)]
struct Ledger {
    names: HashSet<String>,
    demands: Vec<ArrayDemand>,
    /// Placements decided so far, for `demands[..placed.len()]`.
    placed: Vec<Placement>,
    /// Per slot: the bytes a malleable array holds now, which its placement does not say.
    held: Vec<Option<u128>>,
}

impl Ledger {
    /// Bytes the placed arrays hold in memory: in-core arrays whole, out-of-core ones their
    /// ICLA, malleable ones their cached panels.
    fn resident(&self) -> u128 {
        self.placed
            .iter()
            .zip(&self.demands)
            .zip(&self.held)
            .map(|((placement, demand), held)| {
                held.unwrap_or_else(|| placement.memory_bytes(demand))
            })
            .sum()
    }
}

impl NodeStore {
    /// Open (creating if needed) the store directory.
    pub fn open(config: StoreConfig) -> Result<NodeStore, OocError> {
        std::fs::create_dir_all(&config.dir).map_err(|source| OocError::Io {
            action: "create store directory",
            path: config.dir.clone(),
            source,
        })?;
        let lock = DirLock::acquire(&config.dir).map_err(|e| match e {
            LockError::Busy(busy) => OocError::InUse {
                dir: busy.dir,
                holder: busy.holder,
            },
            LockError::Io { path, source } => OocError::Io {
                action: "lock store directory",
                path,
                source,
            },
        })?;
        Ok(NodeStore {
            inner: Arc::new(Inner {
                _lock: lock,
                config,
                ledger: Mutex::default(),
                malleable: std::sync::atomic::AtomicBool::new(false),
            }),
        })
    }

    /// How the store was opened.
    pub fn config(&self) -> &StoreConfig {
        &self.inner.config
    }

    /// The store's directory.
    pub fn dir(&self) -> &Path {
        &self.inner.config.dir
    }

    /// Reserve `spec`'s name and, unless its placement is fixed, a place in the budget.
    /// Returns the directory for its blocks and its ledger slot.
    pub(crate) fn register(
        &self,
        spec: &ArraySpec,
        row_bytes: u64,
    ) -> Result<(PathBuf, Option<usize>), OocError> {
        let dir_name = sanitize(&spec.name);
        let mut ledger = self.ledger();
        if !ledger.names.insert(dir_name.clone()) {
            return Err(OocError::DuplicateArray {
                name: spec.name.clone(),
                dir: self.dir().into(),
            });
        }
        let slot = spec.placement.is_none().then(|| {
            ledger.demands.push(ArrayDemand {
                rows: spec.rows,
                row_bytes,
                uses: spec.uses,
                io: IoEstimate::on_disk(&self.inner.config.disk, spec.uses),
            });
            ledger.held.push(None);
            ledger.demands.len() - 1
        });
        Ok((self.dir().join(dir_name), slot))
    }

    /// The placement of the array in ledger `slot`, deciding all pending placements if needed,
    /// with the instrumented run's forcing applied.
    pub(crate) fn placement(&self, slot: usize) -> Placement {
        let mut ledger = self.ledger();
        if slot >= ledger.placed.len() {
            let used = ledger.resident();
            let left = u128::from(self.inner.config.memory_bytes).saturating_sub(used);
            let left = u64::try_from(left).unwrap_or(u64::MAX);
            let pending = plan(left, &ledger.demands[ledger.placed.len()..]);
            ledger.placed.extend(pending);
        }
        let placement = ledger.placed[slot];
        let rows = ledger.demands[slot].rows;
        if self.inner.config.instrumented && self.inner.config.force_out_of_core {
            forced_for_instrumentation(placement, rows)
        } else {
            placement
        }
    }

    /// The array in ledger `slot` now has `rows` rows (rows moved to or from other ranks):
    /// decides its placement again, in the memory the node's other arrays leave it; their
    /// placements stay as they are.
    pub(crate) fn replace_rows(&self, slot: usize, rows: u64) -> Placement {
        {
            let mut ledger = self.ledger();
            ledger.demands[slot].rows = rows;
            if slot < ledger.placed.len() {
                let used: u128 = ledger
                    .placed
                    .iter()
                    .zip(&ledger.demands)
                    .enumerate()
                    .filter(|&(i, _)| i != slot)
                    .map(|(_, (placement, demand))| placement.memory_bytes(demand))
                    .sum();
                let left = u128::from(self.inner.config.memory_bytes).saturating_sub(used);
                let left = u64::try_from(left).unwrap_or(u64::MAX);
                let demand = ledger.demands[slot];
                ledger.placed[slot] = plan(left, &[demand])[0];
            }
        }
        self.placement(slot)
    }

    /// Bytes the node's arrays placed so far hold in memory (see [`Placement::memory_bytes`]).
    pub(crate) fn resident_bytes(&self) -> u128 {
        self.ledger().resident()
    }

    /// Arrays this store places from now on follow the memory available (MMlib, see
    /// [`crate::adapt::mm`]); not in instrumented runs, which measure the fixed placement.
    pub fn set_malleable(&self) {
        if !self.inner.config.instrumented {
            self.inner
                .malleable
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Whether arrays placed by this store follow the memory.
    pub(crate) fn malleable(&self) -> bool {
        self.inner
            .malleable
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The malleable array in ledger `slot` holds `bytes` in memory now.
    pub(crate) fn set_held(&self, slot: usize, bytes: u128) {
        if let Some(held) = self.ledger().held.get_mut(slot) {
            *held = Some(bytes);
        }
    }

    fn ledger(&self) -> std::sync::MutexGuard<'_, Ledger> {
        // The ledger holds no invariant a panicking holder could break half-way.
        self.inner
            .ledger
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// In an instrumented run an in-core array is processed in two blocks (one when it has a
/// single row), so that its I/O costs get measured (seed §5.2.2).
pub fn forced_for_instrumentation(placement: Placement, rows: u64) -> Placement {
    match placement {
        Placement::InCore if rows > 0 => Placement::OutOfCore {
            icla_rows: rows.div_ceil(2),
        },
        other => other,
    }
}

/// A file-name-safe form of an array name.
fn sanitize(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if clean.is_empty() {
        "_".to_string()
    } else {
        clean
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_safe_directory_names() {
        assert_eq!(sanitize("a::b c/../d"), "a__b_c____d");
        assert_eq!(sanitize(""), "_");
        assert_eq!(sanitize("x-1_y"), "x-1_y");
    }

    #[test]
    fn instrumentation_forces_two_blocks() {
        assert_eq!(
            forced_for_instrumentation(Placement::InCore, 5),
            Placement::OutOfCore { icla_rows: 3 }
        );
        assert_eq!(
            forced_for_instrumentation(Placement::InCore, 1),
            Placement::OutOfCore { icla_rows: 1 }
        );
        assert_eq!(
            forced_for_instrumentation(Placement::InCore, 0),
            Placement::InCore
        );
        let ooc = Placement::OutOfCore { icla_rows: 2 };
        assert_eq!(forced_for_instrumentation(ooc, 9), ooc);
    }
}
