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
//!
//! An instrumented rank on the wall clock at full CPU power records guards in *stream mode*
//! (`stream`): a guard's open or close appends one raw clock reading and its ids to a
//! preallocated buffer, and the regions' records (their nesting, stage and event context) are
//! built from that stream later, when the buffer fills or the records are read. Other ranks
//! (virtual and charged clocks, emulated slower CPUs, `--timings` runs) build each record as
//! its guard closes. Both ways give the same records.

pub mod foreign;
mod guards;
#[cfg(feature = "mpi")]
pub(crate) mod pmpi;
mod record;
mod stream;

use std::cell::{Cell, RefCell};
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

pub use crate::format::IoKind;
use crate::format::{ArrayInfo, StageKey};
use guards::Frame;
pub use guards::{event, group, io, iteration, section, stage, tile, Guard, IoGuard};
use record::Region;
pub use record::{io_code, io_kind, CallKind, Record, RecordKind, NONE};
use stream::Tick;

use crate::clock;
use crate::comm::Traffic;
use crate::ooc::DiskCosts;

/// An interned variable id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct VarId(pub u32);

/// What one rank recorded, handed back by [`uninstall`].
#[derive(Debug, Clone, Default)]
pub struct RankRecords {
    /// Every closed guard, I/O operation and communication call, in the order they closed.
    pub records: Vec<Record>,
    /// The arrays the rank registered.
    pub arrays: Vec<ArrayInfo>,
    /// The node's disk costs from the out-of-core microbenchmarks, when they ran
    /// ([`set_io_calibration`]).
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
/// Stream-mode entries reserved per rank up front: 32 bytes each; when they are used up, the
/// stream is turned into records (about 5 ns an entry) and starts again.
const PREALLOCATED_TICKS: usize = 16384;

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
    /// This thread's recorder, owned here so that it is dropped when the thread exits. Hooks
    /// reach it through [`CURRENT`].
    static OWNER: RefCell<Owner> = const { RefCell::new(Owner(None)) };
    /// The recorder [`OWNER`] holds, or null: what every hook reads. A `Cell` of a pointer is
    /// one thread-local load, with no borrow flag and no lazy initialisation to check.
    /// [`with_recorder`] sets it to null while it lends the recorder out, so no hook reached
    /// from inside can alias that loan.
    static CURRENT: Cell<*mut Recorder> = const { Cell::new(ptr::null_mut()) };
}

struct Owner(Option<Box<Recorder>>);

impl Drop for Owner {
    fn drop(&mut self) {
        // The thread is exiting: no later hook may reach the recorder being freed.
        CURRENT.set(ptr::null_mut());
    }
}

struct Recorder {
    config: HookConfig,
    /// Recording every region, I/O and call (an instrumented run, after its start-up
    /// microbenchmarks).
    recording: bool,
    /// Recording iteration guards (instrumented or `--timings`).
    timing: bool,
    /// Recording guards as a stream of raw clock readings ([`stream`]): an instrumented,
    /// recording rank on the wall clock at full CPU power.
    fast: bool,
    /// The stream: guard opens and closes, and I/O and communication records waiting for
    /// their context. Empty unless `fast`.
    ticks: Vec<Tick>,
    /// Records of I/O and communication in the stream, in stream order, without their
    /// context (key, `in_stage`, event) yet.
    pending: Vec<Record>,
    /// Regions open at the end of the stream (frames, then opens less closes in the stream).
    depth: u32,
    records: Vec<Record>,
    /// Regions open on this thread, innermost last.
    frames: Vec<Frame>,
    seq: u32,
    stage: Option<StageKey>,
    last_stage: StageKey,
    event: u32,
    /// Call sites of callees the macro could not instrument, innermost last ([`site`]).
    hints: Vec<Hint>,
    arrays: Vec<ArrayInfo>,
    calibration: Option<DiskCosts>,
}

/// The events whose calls lie in a callee that `#[mheta::solver]` could not copy (another
/// module's function, a method), for the duration of one call of it: each with the kinds of
/// call it makes, in source order. A call recorded with no event region open belongs to the
/// first of them, from the last one a call went to, that makes its kind of call.
struct Hint {
    events: &'static [(u32, &'static [CallKind])],
    at: usize,
}

impl Hint {
    fn assign(&mut self, kind: Option<CallKind>) -> u32 {
        let n = self.events.len();
        if n == 1 {
            return self.events[0].0;
        }
        let Some(kind) = kind else { return NONE };
        for k in 0..n {
            let i = (self.at + k) % n;
            if self.events[i].1.contains(&kind) {
                self.at = i;
                return self.events[i].0;
            }
        }
        NONE
    }
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

    /// Gives an I/O or communication record the current stage and event context: an open event
    /// region decides its event, else it keeps the one a call site's hint gave it.
    fn in_context(&self, record: &mut Record) {
        (record.key, record.in_stage) = self.context_key();
        if self.event != NONE {
            record.event = self.event;
        }
    }

    /// Record an I/O or communication `record` in the current stage and event context: now,
    /// or, in stream mode, when the stream reaches it.
    fn push_in_context(&mut self, mut record: Record) {
        // A call in a callee the macro could not instrument: its event is the call site's
        // hint's, unless an event region is open around it (which the context decides below).
        if record.kind == RecordKind::Comm {
            if let Some(hint) = self.hints.last_mut() {
                record.event = hint.assign(CallKind::from_code(record.aux));
            }
        }
        // A repeat of the call just recorded folds into its record: in stream mode the record
        // before it in the stream, when nothing was ticked since (both get their context later).
        let last = if self.fast {
            self.last_deferred()
        } else {
            self.in_context(&mut record);
            self.records.last_mut()
        };
        if last.is_some_and(|last| last.fold_repeat(&record)) {
            return;
        }
        if self.fast {
            self.defer(record);
        } else {
            self.records.push(record);
        }
    }
}

/// Install hooks on the calling (rank) thread.
pub fn install(config: HookConfig) {
    if !(config.instrument || config.slowdown || config.timing) {
        return;
    }
    let mut recorder = Box::new(Recorder {
        config,
        recording: false,
        timing: false,
        fast: false,
        ticks: if config.instrument {
            stream::prefaulted(PREALLOCATED_TICKS)
        } else {
            Vec::new()
        },
        pending: Vec::new(),
        depth: 0,
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
        hints: Vec::new(),
        arrays: Vec::new(),
        calibration: None,
    });
    let current: *mut Recorder = &mut *recorder;
    let old = OWNER.with(|o| o.borrow_mut().0.replace(recorder));
    match &old {
        None => {
            ACTIVE.fetch_add(1, Ordering::SeqCst);
        }
        Some(old) if guards_regions(&old.config) => {
            REGIONS.fetch_sub(1, Ordering::SeqCst);
        }
        Some(_) => {}
    }
    if guards_regions(&config) {
        REGIONS.fetch_add(1, Ordering::SeqCst);
    }
    // The box keeps its address when moved into `OWNER`.
    CURRENT.set(current);
    drop(old);
}

/// Start or stop recording on this thread (hooks stay installed): everything in an
/// instrumented run, the iteration guards alone in a timing run.
pub fn set_recording(on: bool) {
    with_recorder(|r| {
        r.flush();
        r.recording = on && r.config.instrument;
        r.timing = on && (r.config.instrument || r.config.timing);
        // Stream mode leaves out what only the other modes do: emulating a slower CPU
        // (`clock::not_compute`, compute marks) and hiding bookkeeping from a virtual clock.
        r.fast = r.recording
            && !r.config.slowdown
            && clock::mode() == clock::ClockMode::Wall
            && clock::cpu_power() >= 1.0;
        r.depth = r.frames.len() as u32;
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
        group: NONE,
        traffic: Traffic::default(),
        bytes: 0,
        begin_s: 0.0,
        end_s: 0.0,
        open: 0,
        close: 0,
        repeats: 0,
    };
    let mut records = vec![blank; capacity];
    records.clear();
    records
}

/// Take the records made so far on this thread. They are copied out: the thread keeps its
/// buffer, already paged in, so that recording after this call stays free of page faults.
pub fn take_records() -> Vec<Record> {
    with_recorder(|r| {
        r.flush();
        let taken = r.records.clone();
        r.records.clear();
        taken
    })
    .unwrap_or_default()
}

/// Build the records of what this thread's stream holds so far (see [`stream`]); they are
/// otherwise built between iterations and when read. For benchmarks of the hooks.
#[doc(hidden)]
pub fn build_records() {
    with_recorder(Recorder::flush);
}

/// Remove this thread's hooks and return what it recorded.
pub fn uninstall() -> RankRecords {
    CURRENT.set(ptr::null_mut());
    match OWNER.with(|o| o.borrow_mut().0.take()) {
        Some(mut rec) => {
            rec.flush();
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
    }
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

/// Run `f` on this thread's recorder, if hooks are installed. While `f` runs, [`CURRENT`] is
/// null: a hook reached from inside `f` finds no recorder and does nothing.
fn with_recorder<R>(f: impl FnOnce(&mut Recorder) -> R) -> Option<R> {
    /// Puts the recorder back however `f` ends.
    struct Lend(*mut Recorder);
    impl Drop for Lend {
        fn drop(&mut self) {
            CURRENT.set(self.0);
        }
    }
    let current = CURRENT.replace(ptr::null_mut());
    if current.is_null() {
        return None;
    }
    let _lend = Lend(current);
    // SAFETY: a non-null `CURRENT` points to the recorder boxed in this thread's `OWNER`, which
    // frees it only after nulling `CURRENT` (`uninstall`, thread exit). `CURRENT` stays null
    // until `_lend` drops, so this is the only reference to the recorder while `f` runs.
    Some(f(unsafe { &mut *current }))
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

/// An interned set of world ranks: the members of a communicator split off the world, which
/// a collective call on it runs among ([`register_group`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupId(pub u32);

fn group_table() -> &'static Mutex<Vec<Box<[u32]>>> {
    static GROUPS: Mutex<Vec<Box<[u32]>>> = Mutex::new(Vec::new());
    &GROUPS
}

/// Intern a set of world ranks (in the order of the communicator's own ranks). Ids are
/// process-wide, as [`register_var`]'s are.
pub fn register_group(members: &[u32]) -> GroupId {
    let mut groups = group_table()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let id = match groups.iter().position(|g| **g == *members) {
        Some(i) => i,
        None => {
            groups.push(members.into());
            groups.len() - 1
        }
    };
    GroupId(id as u32)
}

/// The world ranks of an interned group.
pub fn group_members(group: GroupId) -> Option<Vec<u32>> {
    let groups = group_table()
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    groups.get(group.0 as usize).map(|g| g.to_vec())
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
        let open = r.next_seq();
        let close = r.next_seq();
        r.push_in_context(Record {
            kind,
            id: var.0,
            aux,
            key: r.last_stage,
            in_stage: false,
            event: NONE,
            peer: NONE,
            group: NONE,
            traffic: Traffic::default(),
            bytes,
            begin_s,
            end_s,
            open,
            close,
            repeats: 0,
        });
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

/// While the returned guard lives, a communication call recorded with no event region open
/// belongs to one of `events` ([`Hint`]): `#[mheta::solver]` puts one around each call of a
/// callee it could not copy, naming the events whose calls lie in it at that call site, and
/// the MPI profiling interface records those calls (feature `mpi`).
pub fn site(events: &'static [(u32, &'static [CallKind])]) -> SiteGuard {
    if !active() || events.is_empty() {
        return SiteGuard(false);
    }
    SiteGuard(
        with_recorder(|r| {
            r.recording
                .then(|| r.hints.push(Hint { events, at: 0 }))
                .is_some()
        })
        .unwrap_or(false),
    )
}

/// Ends a call site's hint ([`site`]) when dropped.
#[must_use = "the hint ends when the guard is dropped"]
pub struct SiteGuard(bool);

impl Drop for SiteGuard {
    fn drop(&mut self) {
        if self.0 {
            with_recorder(|r| r.hints.pop());
        }
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
    comm_end_from(start, call, peer, None, None, traffic);
}

/// [`comm_end`] for an exchange that sent to `peer` and received from `source`
/// (`send_receive_into(&x, &dest, &mut y, &source)`): the record keeps `source` when it is
/// another rank than `peer` (see [`Record::id`]), and for a collective among `group`, ranks
/// of a communicator split off the world (`None`: the whole world).
pub fn comm_end_from(
    start: CommStart,
    call: CallKind,
    peer: Option<usize>,
    source: Option<usize>,
    group: Option<GroupId>,
    traffic: &Traffic,
) {
    let Some((begin_s, open)) = start.0 else {
        return;
    };
    let blocks = start.1;
    let source = source.filter(|&s| Some(s) != peer);
    bookkeeping(|| push_comm(begin_s, open, call, (peer, source, group), traffic, blocks));
}

fn push_comm(
    begin_s: f64,
    open: u32,
    call: CallKind,
    (peer, source, group): (Option<usize>, Option<usize>, Option<GroupId>),
    traffic: &Traffic,
    blocks: bool,
) {
    let end_s = clock::now();
    let mut traffic = *traffic;
    if blocks {
        traffic.blocked_s = end_s - begin_s;
    }
    with_recorder(|r| {
        let close = r.next_seq();
        r.push_in_context(Record {
            kind: RecordKind::Comm,
            id: source.map_or(NONE, |s| s as u32),
            aux: call as u32,
            key: r.last_stage,
            in_stage: false,
            event: NONE,
            peer: peer.map_or(NONE, |p| p as u32),
            group: group.map_or(NONE, |g| g.0),
            traffic,
            bytes: 0,
            begin_s,
            end_s,
            open,
            close,
            repeats: 0,
        });
    });
}

#[cfg(test)]
mod tests;
