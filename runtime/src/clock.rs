//! The rank's clock: wall time, or the virtual clock of `--clock virtual` (DESIGN §5).
//!
//! Interface used across the runtime (hooks, out-of-core arrays, communicators):
//! [`now()`] reads the current rank's clock in seconds; [`charge(s)`](charge) accounts an
//! emulated cost of `s` seconds (a virtual clock advances by `s`; the wall clock waits `s`).
//!
//! Three modes, chosen per run and installed per rank thread by `launch`:
//! - **wall**: seconds since a process-wide epoch, shared by all ranks of the process. A node
//!   slower than this machine is emulated by spinning `(1/cpu − 1)` times the CPU time a stage
//!   used ([`ComputeMark`]); charges wait (sleep, then spin for the last few microseconds).
//! - **virtual** (SimGrid SMPI style): each rank's clock advances by its thread's CPU time
//!   divided by its CPU power, by charged costs, and by message arrival ([`advance_to`]), so
//!   oversubscribing 2 cores with 256 ranks does not distort times.
//! - **charged**: like virtual, but CPU time is not counted: only charged costs and the network
//!   move the clock. Times are then bit-for-bit reproducible (tests, model validation).
//!
//! A thread that is not a rank (no clock installed) reads the wall clock.
//!
//! A node's load schedule (`[[node.load]]`, [`install_load`]) changes its CPU power while the
//! rank runs: steps by iteration take effect when the iteration's guard opens
//! ([`iteration_begins`]), steps by time when the clock is read at or after their time.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

#[cfg(feature = "serde")]
use serde::{Deserialize, Serialize};

use crate::format::{LoadAt, LoadStep};

/// How a run measures time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize, Deserialize))]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum ClockMode {
    /// Real elapsed time (the default, and the only mode for the `mpi` backend).
    Wall,
    /// Per-rank thread CPU time scaled by CPU power, plus charged and network costs.
    Virtual,
    /// Only charged and network costs: deterministic.
    Charged,
}

impl ClockMode {
    /// The name written into measurement files.
    pub fn name(self) -> &'static str {
        match self {
            ClockMode::Wall => "wall",
            ClockMode::Virtual => "virtual",
            ClockMode::Charged => "charged",
        }
    }

    /// True for the modes whose time is simulated rather than elapsed.
    pub fn is_virtual(self) -> bool {
        !matches!(self, ClockMode::Wall)
    }
}

const NONE: u8 = 0;
const WALL: u8 = 1;
const VIRTUAL: u8 = 2;
const CHARGED: u8 = 3;

thread_local! {
    static MODE: Cell<u8> = const { Cell::new(NONE) };
    /// The CPU power of this rank's node (1.0 = this machine).
    static POWER: Cell<f64> = const { Cell::new(1.0) };
    /// Virtual seconds accumulated apart from CPU time not yet folded in.
    static BASE: Cell<f64> = const { Cell::new(0.0) };
    /// Thread CPU seconds at the last fold (virtual mode).
    static CPU_MARK: Cell<f64> = const { Cell::new(0.0) };
    /// Compute marks open on this thread: while there are any, [`not_compute`] spans measure.
    static OPEN_MARKS: Cell<u32> = const { Cell::new(0) };
    /// Thread CPU seconds spent in measured [`not_compute`] spans (only ever grows).
    static EXCLUDED_CPU: Cell<f64> = const { Cell::new(0.0) };
    /// True while an outermost [`not_compute`] span is measuring.
    static EXCLUDING: Cell<bool> = const { Cell::new(false) };
    /// True while [`unclocked`] bookkeeping runs: a virtual clock then reads [`FLOOR`].
    static FROZEN: Cell<bool> = const { Cell::new(false) };
    /// A virtual clock never reads less than this: the time at which the last [`unclocked`]
    /// bookkeeping froze it.
    static FLOOR: Cell<f64> = const { Cell::new(0.0) };
    /// The node's own CPU power, before load takes a share of it.
    static NODE_POWER: Cell<f64> = const { Cell::new(1.0) };
    /// The load steps not reached yet, the next one last.
    static PENDING: RefCell<Vec<LoadStep>> = const { RefCell::new(Vec::new()) };
    /// The clock time of the next pending step by time (infinite when there is none).
    static NEXT_AT_S: Cell<f64> = const { Cell::new(f64::INFINITY) };
    /// The iteration of the next pending step by iteration (`u64::MAX` when there is none).
    static NEXT_ITERATION: Cell<u64> = const { Cell::new(u64::MAX) };
    /// Where the run's time starts on this clock: time steps count from here.
    static ORIGIN_S: Cell<f64> = const { Cell::new(0.0) };
    /// The node's memory that load takes now, bytes.
    static MEMORY_TAKEN: Cell<u64> = const { Cell::new(0) };
    /// The innermost open [`ComputeMark`]'s `(cpu_s, excluded_s)`; NaN when none is open.
    static INNERMOST_MARK: Cell<(f64, f64)> = const { Cell::new((f64::NAN, f64::NAN)) };
}

/// Nanoseconds on the monotonic clock (the clock `Instant` reads), without `Instant`'s
/// normalising arithmetic: the wall clock is read on every hook, so it is kept to one call.
#[inline]
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_MONOTONIC is supported everywhere.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

/// The wall clock's source, chosen and calibrated once per process (at the first wall-clock
/// [`install`]): the CPU's time-stamp counter where the kernel keeps time by it (x86-64 with
/// clocksource `tsc`, which the kernel selects only when the counter is invariant and
/// synchronised across cores), else `CLOCK_MONOTONIC`. A counter read costs about 8 ns here
/// against about 20 ns for the vDSO's `clock_gettime`, and the hooks read the clock twice per
/// region.
struct WallSource {
    /// `CLOCK_MONOTONIC` at the epoch, nanoseconds.
    epoch_ns: u64,
    /// The counter at the epoch and seconds per tick, when the counter is used.
    tsc: Option<(u64, f64)>,
}

/// How long the counter is calibrated against `CLOCK_MONOTONIC`: a read pair is bracketed to a
/// few tens of nanoseconds, so the rate is known to about 1e-5.
const TSC_CALIBRATION_NS: u64 = 10_000_000;

fn wall_source() -> &'static WallSource {
    static SOURCE: OnceLock<WallSource> = OnceLock::new();
    SOURCE.get_or_init(|| {
        let tsc = tsc_usable().then(calibrate_tsc);
        match tsc {
            Some((epoch_ns, start, seconds_per_tick)) => WallSource {
                epoch_ns,
                tsc: Some((start, seconds_per_tick)),
            },
            None => WallSource {
                epoch_ns: monotonic_ns(),
                tsc: None,
            },
        }
    })
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn read_tsc() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn read_tsc() -> u64 {
    0
}

/// Whether the kernel keeps time by the TSC (so it is invariant and synchronised). Set
/// `MHETA_CLOCK_SOURCE=monotonic` to use `clock_gettime` instead.
fn tsc_usable() -> bool {
    if !cfg!(target_arch = "x86_64")
        || std::env::var_os("MHETA_CLOCK_SOURCE").is_some_and(|v| v == "monotonic")
    {
        return false;
    }
    std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
        .is_ok_and(|s| s.trim() == "tsc")
}

/// A `CLOCK_MONOTONIC` reading and the counter at the same moment: the tightest of a few
/// bracketed reads, the counter taken as the bracket's midpoint.
fn paired_read() -> (u64, u64) {
    let mut best = (u64::MAX, 0, 0);
    for _ in 0..16 {
        let before = read_tsc();
        let mono = monotonic_ns();
        let after = read_tsc();
        let width = after.wrapping_sub(before);
        if width < best.0 {
            best = (width, mono, before + width / 2);
        }
    }
    (best.1, best.2)
}

/// (epoch in monotonic ns, counter at the epoch, seconds per tick).
fn calibrate_tsc() -> (u64, u64, f64) {
    let (mono0, tsc0) = paired_read();
    while monotonic_ns().wrapping_sub(mono0) < TSC_CALIBRATION_NS {
        std::hint::spin_loop();
    }
    let (mono1, tsc1) = paired_read();
    let seconds_per_tick = (mono1 - mono0) as f64 * 1e-9 / tsc1.wrapping_sub(tsc0).max(1) as f64;
    (mono0, tsc0, seconds_per_tick)
}

/// Seconds since the process's wall-clock epoch.
#[inline]
fn wall_s() -> f64 {
    wall_seconds(wall_ticks())
}

/// The wall clock's raw reading: counter ticks, or monotonic nanoseconds where the counter is
/// not used. Cheaper than [`now`] by the conversion, which [`wall_seconds`] does later: the
/// hooks store ticks while a region runs and convert them when their records are read.
#[inline(always)]
pub(crate) fn wall_ticks() -> u64 {
    match wall_source().tsc {
        Some(_) => read_tsc(),
        None => monotonic_ns(),
    }
}

/// The wall-clock time, in seconds since the epoch, of a [`wall_ticks`] reading: the value
/// [`now`] would have returned on a wall clock at that moment.
#[inline]
pub(crate) fn wall_seconds(ticks: u64) -> f64 {
    let source = wall_source();
    match source.tsc {
        Some((start, seconds_per_tick)) => ticks.saturating_sub(start) as f64 * seconds_per_tick,
        None => ticks.saturating_sub(source.epoch_ns) as f64 * 1e-9,
    }
}

/// Seconds of CPU time the calling thread has used.
pub fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec and CLOCK_THREAD_CPUTIME_ID is supported on
    // every platform this crate builds for (Linux, macOS, the BSDs).
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Install this thread's clock as a rank clock starting at zero (virtual modes) or at the
/// process epoch (wall). `cpu` is the node's relative CPU power.
pub fn install(mode: ClockMode, cpu: f64) {
    let code = match mode {
        ClockMode::Wall => WALL,
        ClockMode::Virtual => VIRTUAL,
        ClockMode::Charged => CHARGED,
    };
    if code == WALL {
        // Calibrated here, before the rank's first reading, and only by runs that read it.
        wall_source();
    }
    MODE.with(|m| m.set(code));
    OPEN_MARKS.with(|m| m.set(0));
    EXCLUDING.with(|e| e.set(false));
    let power = if cpu.is_finite() && cpu > 0.0 {
        cpu
    } else {
        1.0
    };
    POWER.with(|p| p.set(power));
    NODE_POWER.with(|p| p.set(power));
    clear_load();
    reset();
}

/// Remove this thread's rank clock (it reads the wall clock again).
pub fn uninstall() {
    MODE.with(|m| m.set(NONE));
    POWER.with(|p| p.set(1.0));
    NODE_POWER.with(|p| p.set(1.0));
    clear_load();
}

/// Restart a virtual clock at zero (no effect on the wall clock). Load steps by time count
/// from here.
pub fn reset() {
    BASE.with(|b| b.set(0.0));
    FLOOR.with(|f| f.set(0.0));
    FROZEN.with(|f| f.set(false));
    CPU_MARK.with(|c| c.set(thread_cpu_s()));
    INNERMOST_MARK.with(|m| m.set((f64::NAN, f64::NAN)));
    let origin = if MODE.with(Cell::get) == WALL {
        wall_s()
    } else {
        0.0
    };
    ORIGIN_S.with(|o| o.set(origin));
    aim_at_next_step();
}

/// Give this rank's node the load schedule `steps` (in order, as [`ClusterSpec::check`]
/// requires; `crate::format::ClusterSpec::load_of`), on a clock [`install`]ed with the node's
/// own power. Returns the least CPU power the node will have: below 1.0, a wall clock must
/// emulate a slowdown at some point of the run.
///
/// [`ClusterSpec::check`]: crate::format::ClusterSpec::check
pub fn install_load(steps: &[LoadStep]) -> f64 {
    PENDING.with(|p| {
        let mut pending = p.borrow_mut();
        pending.clear();
        pending.extend(steps.iter().rev().copied());
    });
    aim_at_next_step();
    NODE_POWER.with(Cell::get) * (1.0 - LoadStep::largest_cpu_share(steps))
}

/// The node's memory that its load schedule takes now, bytes (0 without one).
pub fn memory_taken() -> u64 {
    MEMORY_TAKEN.with(Cell::get)
}

/// Iteration `index` of the main loop begins: load steps due by then take effect.
#[inline]
pub fn iteration_begins(index: u64) {
    if index >= NEXT_ITERATION.with(Cell::get) || NEXT_AT_S.with(Cell::get).is_finite() {
        begin_steps(Some(index));
    }
}

fn clear_load() {
    PENDING.with(|p| p.borrow_mut().clear());
    NEXT_AT_S.with(|n| n.set(f64::INFINITY));
    NEXT_ITERATION.with(|n| n.set(u64::MAX));
    MEMORY_TAKEN.with(|m| m.set(0));
}

/// Points [`NEXT_AT_S`] and [`NEXT_ITERATION`] at the next pending step.
fn aim_at_next_step() {
    let next = PENDING.with(|p| p.borrow().last().map(|s| s.at));
    let (at_s, iteration) = match next {
        Some(LoadAt::Seconds(s)) => (ORIGIN_S.with(Cell::get) + s, u64::MAX),
        Some(LoadAt::Iteration(i)) => (f64::INFINITY, i),
        None => (f64::INFINITY, u64::MAX),
    };
    NEXT_AT_S.with(|n| n.set(at_s));
    NEXT_ITERATION.with(|n| n.set(iteration));
}

/// Takes every pending step that is due: by iteration when `iteration` is given, by time when
/// the clock reads past it. A virtual clock's power changes at the step's time exactly: the
/// CPU time since then is counted at the new power.
#[cold]
#[inline(never)]
fn begin_steps(iteration: Option<u64>) {
    if FROZEN.with(Cell::get) {
        return; // Bookkeeping: the steps wait for the clock to run again.
    }
    while let Some(step) = PENDING.with(|p| p.borrow().last().copied()) {
        let due_at_s = match step.at {
            LoadAt::Iteration(i) => {
                if iteration.is_some_and(|index| index >= i) {
                    None
                } else {
                    break;
                }
            }
            LoadAt::Seconds(s) => {
                let at = ORIGIN_S.with(Cell::get) + s;
                if raw_now() >= at {
                    Some(at)
                } else {
                    break;
                }
            }
        };
        PENDING.with(|p| p.borrow_mut().pop());
        if let Some(memory) = step.memory_bytes {
            MEMORY_TAKEN.with(|m| m.set(memory));
        }
        if let Some(share) = step.cpu_share {
            set_power(NODE_POWER.with(Cell::get) * (1.0 - share), due_at_s);
        }
    }
    aim_at_next_step();
}

/// Changes this rank's CPU power. A virtual clock folds the CPU time it has counted so far at
/// the old power, from `since_s` on (when given) at the new one.
fn set_power(power: f64, since_s: Option<f64>) {
    if MODE.with(Cell::get) == VIRTUAL {
        let cpu_s = thread_cpu_s();
        let old = POWER.with(Cell::get);
        let now = virtual_at(cpu_s);
        // CPU time counted since the step's time ran at the new power already.
        let (base, mark) = match since_s {
            Some(at) if at < now => (at, cpu_s - (now - at) * old),
            _ => (now, cpu_s),
        };
        BASE.with(|b| b.set(base));
        CPU_MARK.with(|m| m.set(mark));
    }
    POWER.with(|p| p.set(power));
}

/// The clock's reading without taking due load steps.
#[inline]
fn raw_now() -> f64 {
    match MODE.with(Cell::get) {
        VIRTUAL => {
            if FROZEN.with(Cell::get) {
                return FLOOR.with(Cell::get);
            }
            virtual_at(thread_cpu_s()).max(FLOOR.with(Cell::get))
        }
        CHARGED => BASE.with(Cell::get),
        _ => wall_s(),
    }
}

/// The mode of this thread's clock (`Wall` when no rank clock is installed).
pub fn mode() -> ClockMode {
    match MODE.with(Cell::get) {
        VIRTUAL => ClockMode::Virtual,
        CHARGED => ClockMode::Charged,
        _ => ClockMode::Wall,
    }
}

/// The CPU power of this rank's node (1.0 when no rank clock is installed).
pub fn cpu_power() -> f64 {
    POWER.with(Cell::get)
}

/// Seconds on the current rank's clock. Load steps due by then take effect.
#[inline]
pub fn now() -> f64 {
    let t = raw_now();
    if t >= NEXT_AT_S.with(Cell::get) {
        begin_steps(None);
        return raw_now();
    }
    t
}

/// A virtual clock's reading when the thread's CPU time is `cpu_s`.
#[inline]
fn virtual_at(cpu_s: f64) -> f64 {
    BASE.with(Cell::get) + (cpu_s - CPU_MARK.with(Cell::get)) / POWER.with(Cell::get)
}

/// Run the hooks' bookkeeping `f` outside a virtual clock's time, so that instrumenting a
/// program does not slow it down on that clock (the probe effect).
///
/// A virtual clock is thread CPU time, and reading it is a system call (about 0.6 µs on this
/// machine; 2.4 µs of virtual time on a node of CPU power 0.25). An instrumented iteration
/// reads it twice per region, so on fine-grained solvers (Lanczos: some 40 regions per
/// iteration and rank) instrumentation made iterations 5–25 % slower than uninstrumented ones,
/// and the model, built from those, predicted them slower too. Inside `f` the clock stands
/// still ([`now`] returns the time of entry); afterwards it resumes as if `f`, and the two
/// clock reads that bracket it ([`clock_read_cost_s`]), had taken no CPU time. Other clocks
/// run `f` as is: the wall clock's read is a vDSO call (about 20 ns), and the charged clock
/// does not count CPU time. Nested calls run inside the outer one's freeze.
#[inline]
pub fn unclocked<R>(f: impl FnOnce() -> R) -> R {
    if MODE.with(Cell::get) != VIRTUAL || FROZEN.with(Cell::get) {
        return f();
    }
    /// Resumes the clock however `f` ends.
    struct Thaw(f64);
    impl Drop for Thaw {
        fn drop(&mut self) {
            // The cost first: its one-time measurement (a thousand reads) runs frozen too.
            let read_cost = clock_read_cost_s();
            let used = thread_cpu_s() - self.0 + read_cost;
            CPU_MARK.with(|m| m.set(m.get() + used.max(0.0)));
            FROZEN.with(|f| f.set(false));
        }
    }
    let cpu_s = thread_cpu_s();
    FLOOR.with(|f| f.set(virtual_at(cpu_s).max(f.get())));
    FROZEN.with(|f| f.set(true));
    let _thaw = Thaw(cpu_s);
    f()
}

/// The thread CPU time one read of the thread's CPU clock costs: the median over five
/// batches of 200 reads, measured once per process.
pub fn clock_read_cost_s() -> f64 {
    static COST: OnceLock<f64> = OnceLock::new();
    *COST.get_or_init(|| {
        const READS: usize = 200;
        let mut batches: Vec<f64> = (0..5)
            .map(|_| {
                let begin = thread_cpu_s();
                for _ in 0..READS {
                    std::hint::black_box(thread_cpu_s());
                }
                (thread_cpu_s() - begin) / (READS + 1) as f64
            })
            .collect();
        crate::stats::median(&mut batches).max(0.0)
    })
}

/// Account an emulated cost of `seconds` on the current rank: a virtual clock advances by it, the
/// wall clock waits it out. Non-positive and non-finite costs are ignored.
pub fn charge(seconds: f64) {
    if !(seconds.is_finite() && seconds > 0.0) {
        return;
    }
    match MODE.with(Cell::get) {
        VIRTUAL | CHARGED => BASE.with(|b| b.set(b.get() + seconds)),
        _ => wait_wall(Duration::from_secs_f64(seconds)),
    }
}

/// Move a virtual clock forward to `t` if it is behind (message arrival). Returns the seconds the
/// clock jumped: the time this rank was blocked. The wall clock is not affected (returns 0).
pub fn advance_to(t: f64) -> f64 {
    match MODE.with(Cell::get) {
        VIRTUAL => {
            // The clock may read its floor, above the CPU-based time: the jump lands on `t`.
            let raw = virtual_at(thread_cpu_s());
            let now = raw.max(FLOOR.with(Cell::get));
            if t > now {
                BASE.with(|b| b.set(b.get() + (t - raw)));
                t - now
            } else {
                0.0
            }
        }
        CHARGED => {
            let now = now();
            if t > now {
                BASE.with(|b| b.set(b.get() + (t - now)));
                t - now
            } else {
                0.0
            }
        }
        _ => 0.0,
    }
}

/// Wait `d` of wall time: sleep for most of it, spin for the rest (sleep overshoots).
///
/// The wait emulates time, not computation, so its CPU (the final spin) is excluded from a
/// CPU slowdown ([`not_compute`]).
pub fn wait_wall(d: Duration) {
    let _waiting = not_compute();
    let until = Instant::now() + d;
    const SPIN: Duration = Duration::from_micros(100);
    if d > SPIN {
        std::thread::sleep(d - SPIN);
    }
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// The CPU time at the start of a compute region, for wall-clock CPU slowdown emulation.
///
/// On a wall clock with CPU power `c < 1`, [`ComputeMark::finish`] spins until the thread has
/// used `(1/c − 1)` times the compute CPU it used since the mark, so the region takes `1/c` as
/// long. Compute CPU is the thread's CPU time minus what it spent in [`not_compute`] spans
/// (out-of-core I/O, charged waits, hook bookkeeping): those costs are emulated on their own,
/// and slowing their CPU too would count them twice. Virtual clocks need no spinning (they
/// scale CPU time), and `c ≥ 1` cannot be emulated on a wall clock, so in those cases the mark
/// is inert.
#[derive(Debug, Clone, Copy)]
pub struct ComputeMark {
    cpu_s: f64,
    excluded_s: f64,
    /// The enclosing mark's `(cpu_s, excluded_s)`, restored as the innermost at `finish`.
    enclosing: (f64, f64),
}

impl ComputeMark {
    /// Start a compute region, or `None` when no slowdown applies to this thread.
    pub fn start() -> Option<ComputeMark> {
        if NEXT_AT_S.with(Cell::get).is_finite() {
            now(); // A load step by time may be due: the hooks read the wall clock as ticks.
        }
        if MODE.with(Cell::get) == WALL && POWER.with(Cell::get) < 1.0 {
            OPEN_MARKS.with(|m| m.set(m.get().saturating_add(1)));
            let (cpu_s, excluded_s) = (thread_cpu_s(), EXCLUDED_CPU.with(Cell::get));
            Some(ComputeMark {
                excluded_s,
                cpu_s,
                enclosing: INNERMOST_MARK.with(|m| m.replace((cpu_s, excluded_s))),
            })
        } else {
            None
        }
    }

    /// End the region, spinning for the emulated extra time. Returns the compute CPU seconds
    /// the slowdown was based on (the region's CPU time less its [`not_compute`] spans).
    pub fn finish(self) -> f64 {
        let now = thread_cpu_s();
        let excluded = EXCLUDED_CPU.with(Cell::get) - self.excluded_s;
        let compute = (now - self.cpu_s - excluded).max(0.0);
        let extra = (1.0 / POWER.with(Cell::get) - 1.0) * compute;
        let until = now + extra;
        let mut spun = now;
        // Spin on the wall clock, which reads the TSC in user space, and check the CPU time
        // only when the wall time is up: a thread preempted meanwhile spins again for what it
        // missed. Polling the thread's CPU time (a system call) in the loop made the stages'
        // own computation slower than the spin accounts for: on rna at CPU power 0.25 an
        // instrumented run took 0.096 s per iteration against a plain run's 0.071 s, and
        // takes 0.070 s with this loop.
        while spun < until {
            let wall_until = Instant::now() + Duration::from_secs_f64(until - spun);
            while Instant::now() < wall_until {
                std::hint::spin_loop();
            }
            spun = thread_cpu_s();
        }
        INNERMOST_MARK.with(|m| m.set(self.enclosing));
        let outer = OPEN_MARKS.with(|m| {
            m.set(m.get().saturating_sub(1));
            m.get() > 0
        });
        // An enclosing region's slowdown must not slow this region's spin again. (Inside a
        // measuring `not_compute` span, that span accounts for the spin already.)
        if outer && !EXCLUDING.with(Cell::get) {
            EXCLUDED_CPU.with(|e| e.set(e.get() + (spun - now)));
        }
        compute
    }
}

/// The seconds of emulated slowdown the innermost open compute region owes so far: a wall clock
/// spins for a slow node's extra time only when the region ends ([`ComputeMark::finish`]), so
/// code that times itself inside a region (LBlib's `Section::proceed`) adds this to [`now`] to
/// see the node's speed. 0 on other clocks and outside compute regions.
pub fn owed_s() -> f64 {
    let (cpu_s, excluded_s) = INNERMOST_MARK.with(Cell::get);
    if MODE.with(Cell::get) != WALL || cpu_s.is_nan() {
        return 0.0;
    }
    let excluded = EXCLUDED_CPU.with(Cell::get) - excluded_s;
    let compute = (thread_cpu_s() - cpu_s - excluded).max(0.0);
    (1.0 / POWER.with(Cell::get) - 1.0).max(0.0) * compute
}

/// A span of non-computation (I/O, an emulated wait, hook bookkeeping) whose thread CPU time a
/// [`ComputeMark`] does not slow down. Measures only when a compute mark is open on the thread
/// and no enclosing span is measuring already; otherwise creating and dropping it costs one or
/// two thread-local reads. It allocates nothing.
#[must_use = "a not-compute span measures until it is dropped: bind it with `let _x = ...`"]
pub struct NotCompute {
    begin_cpu_s: Option<f64>,
    _thread_bound: std::marker::PhantomData<*const ()>,
}

/// Begin a [`NotCompute`] span, which ends when the value is dropped.
#[inline]
pub fn not_compute() -> NotCompute {
    let measure = OPEN_MARKS.with(Cell::get) > 0 && !EXCLUDING.with(Cell::get);
    let begin_cpu_s = if measure {
        EXCLUDING.with(|e| e.set(true));
        Some(thread_cpu_s())
    } else {
        None
    };
    NotCompute {
        begin_cpu_s,
        _thread_bound: std::marker::PhantomData,
    }
}

impl Drop for NotCompute {
    #[inline]
    fn drop(&mut self) {
        if let Some(begin) = self.begin_cpu_s {
            let used = thread_cpu_s() - begin;
            EXCLUDED_CPU.with(|e| e.set(e.get() + used.max(0.0)));
            EXCLUDING.with(|e| e.set(false));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wall_clock_keeps_pace_with_the_monotonic_clock_and_never_goes_back() {
        install(ClockMode::Wall, 1.0);
        let (start, instant) = (now(), std::time::Instant::now());
        let mut last = start;
        while instant.elapsed() < Duration::from_millis(50) {
            let t = now();
            assert!(t >= last, "{t} after {last}");
            last = t;
        }
        let (elapsed, reference) = (now() - start, instant.elapsed().as_secs_f64());
        // The counter's rate is calibrated to about 1e-5; the two reads differ by one call.
        assert!(
            (elapsed - reference).abs() < 1e-4 * reference + 20e-6,
            "wall clock {elapsed} s against Instant {reference} s"
        );
    }

    fn spin_cpu(seconds: f64) {
        let until = thread_cpu_s() + seconds;
        while thread_cpu_s() < until {
            std::hint::spin_loop();
        }
    }

    #[test]
    fn unclocked_bookkeeping_takes_no_virtual_time() {
        std::thread::spawn(|| {
            install(ClockMode::Virtual, 0.25);
            // 1000 bookkeeping calls of 20 µs CPU each (80 µs of virtual time each at CPU
            // power 0.25, 0.08 s in all) around 0.01 s of CPU work (0.04 s virtual).
            let begin = now();
            for _ in 0..1000 {
                let frozen = unclocked(|| {
                    let t = now();
                    spin_cpu(20e-6);
                    assert_eq!(now(), t, "the clock stands still inside");
                    t
                });
                assert!(now() >= frozen, "and never runs backwards");
            }
            spin_cpu(0.01);
            let elapsed = now() - begin;
            // The work alone: 0.04 s. What is left of the bookkeeping is the spin loop's
            // overshoot of each 20 µs, far less than its 0.08 s.
            assert!(elapsed > 0.039 && elapsed < 0.05, "{elapsed}");
            // Other clocks run the bookkeeping as is.
            install(ClockMode::Charged, 1.0);
            assert_eq!(unclocked(|| 7), 7);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn charged_clock_counts_only_charges_and_arrivals() {
        std::thread::spawn(|| {
            install(ClockMode::Charged, 0.5);
            assert_eq!(now(), 0.0);
            charge(1.5);
            assert_eq!(now(), 1.5);
            assert_eq!(advance_to(1.0), 0.0);
            assert_eq!(advance_to(2.25), 0.75);
            assert_eq!(now(), 2.25);
            charge(-1.0);
            charge(f64::NAN);
            assert_eq!(now(), 2.25);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn virtual_clock_scales_cpu_time_by_power() {
        std::thread::spawn(|| {
            install(ClockMode::Virtual, 0.25);
            let cpu0 = thread_cpu_s();
            let t0 = now();
            let mut x = 0u64;
            while thread_cpu_s() - cpu0 < 0.02 {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            let cpu = thread_cpu_s() - cpu0;
            let virt = now() - t0;
            // Four times slower: 4 × the CPU used, give or take the reads themselves.
            assert!(
                (virt - 4.0 * cpu).abs() < 0.004,
                "virtual {virt} vs cpu {cpu}"
            );
            std::hint::black_box(x);
        })
        .join()
        .unwrap();
    }

    fn step(at: LoadAt, cpu_share: Option<f64>, memory_bytes: Option<u64>) -> LoadStep {
        LoadStep {
            at,
            cpu_share,
            memory_bytes,
        }
    }

    #[test]
    fn a_virtual_clock_slows_down_from_a_load_steps_time_on() {
        std::thread::spawn(|| {
            install(ClockMode::Virtual, 1.0);
            let least = install_load(&[step(LoadAt::Seconds(0.02), Some(0.5), None)]);
            assert_eq!(least, 0.5);
            reset();
            let start = thread_cpu_s();
            // Full power until 0.02 s on the clock, half power after, however late the clock
            // is read.
            spin_cpu(0.03);
            let cpu0 = thread_cpu_s();
            let t = now();
            spin_cpu(0.01);
            let after = now();
            let cpu = thread_cpu_s() - cpu0;
            assert_eq!(cpu_power(), 0.5);
            // About 0.03 s of CPU, all past 0.02 s counted twice: 0.04 s by the first read. The
            // CPU is measured, not assumed: the spin can use more than it asks for (a loaded CI
            // run read 0.0422 where this test expected 0.04 ± 0.002).
            let used = cpu0 - start;
            assert!(used >= 0.03);
            let expected = 0.02 + 2.0 * (used - 0.02);
            assert!((t - expected).abs() < 0.002, "{t} after {used} s of CPU");
            assert!((after - t - 2.0 * cpu).abs() < 0.002, "{after} after {t}");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn iteration_steps_take_effect_when_their_iteration_begins() {
        std::thread::spawn(|| {
            install(ClockMode::Charged, 0.8);
            let steps = [
                step(LoadAt::Iteration(3), Some(0.5), Some(1 << 20)),
                step(LoadAt::Iteration(5), None, Some(2 << 20)),
                step(LoadAt::Iteration(9), Some(0.0), None),
            ];
            assert_eq!(install_load(&steps), 0.4);
            let mut seen = Vec::new();
            // Iterations 4 and 6–9 are skipped (a loop that starts elsewhere): a step applies
            // at the first iteration at or after its own.
            for index in [0, 1, 2, 3, 5, 10] {
                iteration_begins(index);
                seen.push((index, cpu_power(), memory_taken()));
            }
            assert_eq!(
                seen,
                [
                    (0, 0.8, 0),
                    (1, 0.8, 0),
                    (2, 0.8, 0),
                    (3, 0.4, 1 << 20),
                    (5, 0.4, 2 << 20),
                    (10, 0.8, 2 << 20),
                ]
            );
            uninstall();
            assert_eq!((cpu_power(), memory_taken()), (1.0, 0));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_wall_clock_load_step_turns_the_cpu_slowdown_on() {
        std::thread::spawn(|| {
            install(ClockMode::Wall, 1.0);
            install_load(&[step(LoadAt::Seconds(0.01), Some(0.5), None)]);
            reset();
            assert!(
                ComputeMark::start().is_none(),
                "full power: nothing to emulate"
            );
            wait_wall(Duration::from_millis(12));
            // Due now: the next compute region spins as long again as it computes.
            let mark = ComputeMark::start().expect("half power after 0.01 s");
            let begin = Instant::now();
            spin_cpu(0.005);
            let compute = mark.finish();
            let elapsed = begin.elapsed().as_secs_f64();
            assert!(
                elapsed > 1.9 * compute,
                "{elapsed} s for {compute} s of compute"
            );
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_wall_clock_region_owes_its_slowdown_until_it_ends() {
        std::thread::spawn(|| {
            install(ClockMode::Wall, 0.5);
            assert_eq!(owed_s(), 0.0, "no region open");
            let mark = ComputeMark::start().expect("power 0.5 on a wall clock");
            spin_cpu(0.005);
            // Half power: 5 ms of computation owe 5 ms more.
            let owed = owed_s();
            assert!((owed - 0.005).abs() < 0.001, "{owed}");
            let (before, owed_before) = (now(), owed_s());
            mark.finish();
            assert_eq!(owed_s(), 0.0, "paid at the end");
            // The spin paid what was owed: now + owed did not jump.
            assert!(now() - before >= owed_before - 1e-4);
            install(ClockMode::Virtual, 0.5);
            assert_eq!(owed_s(), 0.0, "a virtual clock scales CPU time itself");
        })
        .join()
        .unwrap();
    }

    #[test]
    fn uninstalled_thread_reads_wall_clock() {
        std::thread::spawn(|| {
            assert_eq!(mode(), ClockMode::Wall);
            let a = now();
            charge(0.002);
            assert!(now() - a >= 0.002);
        })
        .join()
        .unwrap();
    }
}
