//! The hook layer (DESIGN §5): per-rank record buffers fed by guards and by the runtime's own
//! communication and I/O calls — the role of the seed's MPI-Jack pre and post hooks.
//!
//! Guards ([`iteration`], [`section`], [`tile`], [`stage`], [`event`], [`group`], [`io`]) are
//! RAII values: created where a region begins, they record one [`Record`] when dropped. Their ids
//! are the structure's ids (`format::StageKey`, event ids, …). Communication calls are recorded by
//! `CommExt` through [`comm_begin`]/[`comm_end`].
//!
//! Interface used by the out-of-core arrays: [`register_var`] once per array (may allocate and
//! lock), then [`record_io`] around every block operation (no allocation, no lock). Times come
//! from [`crate::clock::now`]. In an instrumented run ([`instrumenting`]), a prefetch is recorded
//! as `Prefetch` around the synchronous read it became, and the matching wait as `Wait` (seed Fig.
//! 5.6): the compute between the prefetch's end and the wait's begin is T_A.
//!
//! Cost: buffers are thread-local and preallocated; recording takes no lock. When no rank of the
//! process records or emulates a slower CPU, every guard costs one relaxed atomic load and a
//! branch. On a wall clock, a stage guard of a node with CPU power below 1 also spins to emulate
//! the slower CPU ([`crate::clock::ComputeMark`]), instrumented or not.

pub mod foreign;
mod guards;
mod record;

use std::cell::RefCell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub use crate::format::IoKind;
use crate::format::{ArrayInfo, StageKey};
use guards::Frame;
pub use guards::{event, group, io, iteration, section, stage, tile, Guard, IoGuard};
pub use record::{io_code, io_kind, CallKind, Record, RecordKind, NONE};

use crate::clock;
use crate::comm::Traffic;
use crate::ooc::DiskCosts;

/// An interned variable id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VarId(pub u32);

/// What one rank recorded, handed back by [`uninstall`].
#[derive(Debug, Clone, Default)]
pub struct RankRecords {
    pub records: Vec<Record>,
    pub arrays: Vec<ArrayInfo>,
    pub calibration: Option<DiskCosts>,
}

/// How a rank's hooks behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HookConfig {
    /// Record guards, I/O and communication (an instrumented run).
    pub instrument: bool,
    /// Emulate a slower CPU in stage guards (wall clock, CPU power below 1).
    pub slowdown: bool,
    /// Record the main loop's iteration guards only (an uninstrumented run's `--timings`):
    /// one record per iteration, nothing inside it.
    pub timing: bool,
}

/// Records reserved per rank up front.
const PREALLOCATED_RECORDS: usize = 8192;
/// Records reserved per rank up front when only iterations are timed.
const PREALLOCATED_ITERATIONS: usize = 1024;
/// Open regions reserved per rank up front (the deepest nesting expected).
const PREALLOCATED_FRAMES: usize = 64;

/// Ranks (threads) of this process with hooks installed: zero means every hook is a no-op.
static ACTIVE: AtomicUsize = AtomicUsize::new(0);
/// Ranks of this process whose hooks time regions or emulate a slower CPU (not `timing` alone):
/// zero means `#[mheta::solver]` runs its plain body, whose only guard is the iteration guard
/// ([`regions_active`]). Guards themselves check [`ACTIVE`] only: in a `--timings` run a
/// single-body solver's region guards still open and close, recording nothing.
static REGIONS: AtomicUsize = AtomicUsize::new(0);

/// Whether hooks of `config` need the guards inside an iteration.
fn guards_regions(config: &HookConfig) -> bool {
    config.instrument || config.slowdown
}

thread_local! {
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
}

struct Recorder {
    config: HookConfig,
    /// Recording every region, I/O and call (an instrumented run, after its start-up
    /// microbenchmarks).
    recording: bool,
    /// Recording iteration guards (instrumented or `--timings`).
    timing: bool,
    records: Vec<Record>,
    /// Regions open on this thread, innermost last.
    frames: Vec<Frame>,
    seq: u32,
    stage: Option<StageKey>,
    last_stage: StageKey,
    event: u32,
    arrays: Vec<ArrayInfo>,
    calibration: Option<DiskCosts>,
}

impl Recorder {
    fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    fn context_key(&self) -> (StageKey, bool) {
        match self.stage {
            Some(k) => (k, true),
            None => (self.last_stage, false),
        }
    }
}

/// Install hooks on the calling (rank) thread.
pub fn install(config: HookConfig) {
    if !(config.instrument || config.slowdown || config.timing) {
        return;
    }
    RECORDER.with(|r| {
        let mut r = r.borrow_mut();
        if r.is_none() {
            ACTIVE.fetch_add(1, Ordering::SeqCst);
        }
        if r.as_ref().is_some_and(|old| guards_regions(&old.config)) {
            REGIONS.fetch_sub(1, Ordering::SeqCst);
        }
        if guards_regions(&config) {
            REGIONS.fetch_add(1, Ordering::SeqCst);
        }
        *r = Some(Recorder {
            config,
            recording: false,
            timing: false,
            records: if config.instrument {
                prefaulted(PREALLOCATED_RECORDS)
            } else if config.timing {
                prefaulted(PREALLOCATED_ITERATIONS)
            } else {
                Vec::new()
            },
            frames: Vec::with_capacity(PREALLOCATED_FRAMES),
            seq: 0,
            stage: None,
            last_stage: StageKey {
                section: 0,
                tile: None,
                stage: 0,
            },
            event: NONE,
            arrays: Vec::new(),
            calibration: None,
        });
    });
}

/// Start or stop recording on this thread (hooks stay installed): everything in an
/// instrumented run, the iteration guards alone in a timing run.
pub fn set_recording(on: bool) {
    with_recorder(|r| {
        r.recording = on && r.config.instrument;
        r.timing = on && (r.config.instrument || r.config.timing);
    });
}

/// An empty record buffer of `capacity` whose memory has been written once, so that recording
/// into it takes no page fault inside a timed region.
fn prefaulted(capacity: usize) -> Vec<Record> {
    let blank = Record {
        kind: RecordKind::Section,
        id: 0,
        aux: 0,
        key: StageKey {
            section: 0,
            tile: None,
            stage: 0,
        },
        in_stage: false,
        event: NONE,
        peer: NONE,
        traffic: Traffic::default(),
        bytes: 0,
        begin_s: 0.0,
        end_s: 0.0,
        open: 0,
        close: 0,
    };
    let mut records = vec![blank; capacity];
    records.clear();
    records
}

/// Take the records made so far on this thread. They are copied out: the thread keeps its
/// buffer, already paged in, so that recording after this call stays free of page faults.
pub fn take_records() -> Vec<Record> {
    with_recorder(|r| {
        let taken = r.records.clone();
        r.records.clear();
        taken
    })
    .unwrap_or_default()
}

/// Remove this thread's hooks and return what it recorded.
pub fn uninstall() -> RankRecords {
    RECORDER.with(|r| match r.borrow_mut().take() {
        Some(rec) => {
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
            if guards_regions(&rec.config) {
                REGIONS.fetch_sub(1, Ordering::SeqCst);
            }
            RankRecords {
                records: rec.records,
                arrays: rec.arrays,
                calibration: rec.calibration,
            }
        }
        None => RankRecords::default(),
    })
}

/// Does some rank of this process have hooks that time regions or emulate a slower CPU? One
/// relaxed load: `#[mheta::solver]` runs the solver's instrumented body when it is true and the
/// plain body (iteration guards only) otherwise, choosing once per call. A rank's hooks are
/// installed before its program runs and removed after it returns, so on a rank thread whose
/// hooks need regions the answer stays true for the whole call.
#[inline]
pub fn regions_active() -> bool {
    REGIONS.load(Ordering::Relaxed) != 0
}

#[inline]
fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed) != 0
}

fn with_recorder<R>(f: impl FnOnce(&mut Recorder) -> R) -> Option<R> {
    RECORDER.with(|r| r.try_borrow_mut().ok().and_then(|mut r| r.as_mut().map(f)))
}

/// Is the current rank taking an instrumented run (seed Fig. 5.6 semantics apply)?
pub fn instrumenting() -> bool {
    active() && with_recorder(|r| r.config.instrument).unwrap_or(false)
}

/// Run a hook's bookkeeping `f`: outside a virtual clock's time in an instrumented run
/// ([`clock::unclocked`]), as it is otherwise. A run that only times its iterations
/// (`--timings`, the compared runs of `mheta tune`) records two regions per iteration, and
/// hiding its hooks would cost two clock reads on every guard and communication call for
/// nothing.
fn bookkeeping<R>(f: impl FnOnce() -> R) -> R {
    if instrumenting() {
        clock::unclocked(f)
    } else {
        f()
    }
}

fn var_table() -> &'static Mutex<Vec<String>> {
    static VARS: Mutex<Vec<String>> = Mutex::new(Vec::new());
    &VARS
}

/// Intern a variable (array) name. Ids are process-wide, so every rank gets the same id for the
/// same name.
pub fn register_var(name: &str) -> VarId {
    let mut vars = var_table()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let id = match vars.iter().position(|v| v == name) {
        Some(i) => i,
        None => {
            vars.push(name.to_string());
            vars.len() - 1
        }
    };
    VarId(id as u32)
}

/// The name of an interned variable.
pub fn var_name(var: VarId) -> Option<String> {
    let vars = var_table()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    vars.get(var.0 as usize).cloned()
}

/// Describe an array for the measurements file (bytes per row, distributed or replicated).
/// `read_only` is derived from the iteration's records.
pub fn register_array(name: &str, bytes_per_row: u64, distributed: bool) {
    if !active() {
        return;
    }
    with_recorder(|r| {
        if r.config.instrument && !r.arrays.iter().any(|a| a.name == name) {
            r.arrays.push(ArrayInfo {
                name: name.to_string(),
                bytes_per_row,
                distributed,
                read_only: false,
            });
        }
    });
}

/// Provide this node's I/O costs from the out-of-core microbenchmarks; the measurements then
/// use them instead of fitting the iteration's I/O records.
pub fn set_io_calibration(calibration: DiskCosts) {
    if active() {
        with_recorder(|r| r.calibration = Some(calibration));
    }
}

/// Record one I/O operation on the current rank.
pub fn record_io(var: VarId, op: IoKind, bytes: u64, begin_s: f64, end_s: f64) {
    record_var(RecordKind::Io, var, io_code(op), bytes, begin_s, end_s);
}

/// Record the in-core copy of `bytes` an instrumented block write timed ([`RecordKind::Copy`]).
pub fn record_in_core_copy(var: VarId, bytes: u64, begin_s: f64, end_s: f64) {
    record_var(RecordKind::Copy, var, 0, bytes, begin_s, end_s);
}

fn record_var(kind: RecordKind, var: VarId, aux: u32, bytes: u64, begin_s: f64, end_s: f64) {
    if !active() {
        return;
    }
    bookkeeping(|| push_var(kind, var, aux, bytes, begin_s, end_s));
}

fn push_var(kind: RecordKind, var: VarId, aux: u32, bytes: u64, begin_s: f64, end_s: f64) {
    with_recorder(|r| {
        if !r.recording {
            return;
        }
        let (key, in_stage) = r.context_key();
        let open = r.next_seq();
        let close = r.next_seq();
        let record = Record {
            kind,
            id: var.0,
            aux,
            key,
            in_stage,
            event: r.event,
            peer: NONE,
            traffic: Traffic::default(),
            bytes,
            begin_s,
            end_s,
            open,
            close,
        };
        r.records.push(record);
    });
}

/// The start of a communication call: its begin time when recording, and whether the call's
/// whole duration counts as blocked time.
#[derive(Debug, Clone, Copy)]
pub struct CommStart(Option<(f64, u32)>, bool);

impl CommStart {
    /// The same start, for a call whose whole duration is blocked time (a wrapped rsmpi call
    /// that waits for other ranks).
    pub fn blocking(self, blocks: bool) -> CommStart {
        CommStart(self.0, blocks)
    }
}

/// Note the start of a communication call.
#[inline]
pub fn comm_begin() -> CommStart {
    if !active() {
        return CommStart(None, false);
    }
    bookkeeping(|| {
        CommStart(
            with_recorder(|r| r.recording.then(|| (clock::now(), r.next_seq()))).flatten(),
            false,
        )
    })
}

/// Record a communication call that began at `start`.
#[inline]
pub fn comm_end(start: CommStart, call: CallKind, peer: Option<usize>, traffic: &Traffic) {
    let Some((begin_s, open)) = start.0 else {
        return;
    };
    let blocks = start.1;
    bookkeeping(|| push_comm(begin_s, open, call, peer, traffic, blocks));
}

fn push_comm(
    begin_s: f64,
    open: u32,
    call: CallKind,
    peer: Option<usize>,
    traffic: &Traffic,
    blocks: bool,
) {
    let end_s = clock::now();
    let mut traffic = *traffic;
    if blocks {
        traffic.blocked_s = end_s - begin_s;
    }
    with_recorder(|r| {
        let (key, in_stage) = r.context_key();
        let close = r.next_seq();
        let record = Record {
            kind: RecordKind::Comm,
            id: 0,
            aux: call as u32,
            key,
            in_stage,
            event: r.event,
            peer: peer.map_or(NONE, |p| p as u32),
            traffic,
            bytes: 0,
            begin_s,
            end_s,
            open,
            close,
        };
        r.records.push(record);
    });
}

#[cfg(test)]
mod tests;
