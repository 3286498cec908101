//! Hook overhead (DESIGN §5): a stage guard pair with hooks disabled and enabled, against a raw
//! `Instant::now()` pair (the floor of any timer) and a `tracing` span enter/exit under a
//! subscriber, all measured in the same run. After criterion's report, prints the medians of
//! an independent batch measurement and the ratios.
//!
//! Run: `cargo bench -p mheta-runtime --bench hooks`

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use mheta_runtime::clock::{self, ClockMode};
use mheta_runtime::format::StageKey;
use mheta_runtime::hooks::{self, HookConfig};

const KEY: StageKey = StageKey {
    section: 1,
    tile: None,
    stage: 2,
};
/// Records are cleared after this many guard pairs (outside the timed region), so the enabled
/// case measures the steady state of a preallocated buffer.
const BATCH: u64 = 4096;

fn disabled_pair() {
    let g = hooks::stage(black_box(KEY));
    drop(black_box(g));
}

/// Two reads of the CPU's time-stamp counter: the floor of a clock read on x86-64.
#[cfg(target_arch = "x86_64")]
fn tsc_pair() -> u64 {
    // SAFETY: RDTSC has no preconditions on x86-64.
    let (a, b) = unsafe { (core::arch::x86_64::_rdtsc(), core::arch::x86_64::_rdtsc()) };
    black_box(b.wrapping_sub(a))
}

fn raw_instant_pair() -> Duration {
    let a = Instant::now();
    let b = Instant::now();
    black_box(b - a)
}

/// Time `iters` calls of `f` in batches, running `between` untimed after each batch.
fn timed(iters: u64, f: impl FnMut(), between: impl FnMut()) -> Duration {
    timed_with(iters, f, || (), between)
}

/// Time `iters` calls of `f` in batches, each batch followed by `end` (timed) and `between`
/// (untimed).
fn timed_with(
    iters: u64,
    mut f: impl FnMut(),
    mut end: impl FnMut(),
    mut between: impl FnMut(),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters;
    while left > 0 {
        let n = left.min(BATCH);
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        end();
        total += t.elapsed();
        between();
        left -= n;
    }
    total
}

fn with_hooks<R>(f: impl FnOnce() -> R) -> R {
    clock::install(ClockMode::Wall, 1.0);
    hooks::install(HookConfig {
        instrument: true,
        slowdown: false,
        timing: false,
    });
    hooks::set_recording(true);
    let r = f();
    hooks::uninstall();
    clock::uninstall();
    r
}

fn with_tracing<R>(f: impl FnOnce() -> R) -> R {
    let subscriber = tracing_subscriber::registry();
    tracing::subscriber::with_default(subscriber, f)
}

fn tracing_pair() {
    let span = tracing::info_span!("stage", section = 1, stage = 2);
    let entered = span.enter();
    drop(black_box(entered));
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("guard_pair");
    g.bench_function("disabled", |b| b.iter(disabled_pair));
    g.bench_function("enabled", |b| {
        b.iter_custom(|iters| {
            with_hooks(|| timed(iters, disabled_pair, || drop(hooks::take_records())))
        })
    });
    g.bench_function("raw_instant_now_pair", |b| b.iter(raw_instant_pair));
    g.bench_function("tracing_span_enter_exit", |b| {
        b.iter_custom(|iters| with_tracing(|| timed(iters, tracing_pair, || ())))
    });
    g.finish();
}

criterion_group!(benches, bench);

/// Median nanoseconds per pair over `rounds` batches of `n`.
fn median_ns(rounds: usize, n: u64, mut run: impl FnMut(u64) -> Duration) -> f64 {
    let mut xs: Vec<f64> = (0..rounds)
        .map(|_| run(n).as_nanos() as f64 / n as f64)
        .collect();
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

fn print_ratios() {
    let (rounds, n) = (31, 200_000);
    let disabled = median_ns(rounds, n, |n| timed(n, disabled_pair, || ()));
    let enabled = with_hooks(|| {
        median_ns(rounds, n, |n| {
            timed(n, disabled_pair, || drop(hooks::take_records()))
        })
    });
    // The same, with the records built from the stream inside the timed region: what a guard
    // pair costs a run all told, though a run builds them between iterations.
    let enabled_built = with_hooks(|| {
        median_ns(rounds, n, |n| {
            timed_with(n, disabled_pair, hooks::build_records, || {
                drop(hooks::take_records())
            })
        })
    });
    #[cfg(target_arch = "x86_64")]
    let tsc = median_ns(rounds, n, |n| {
        timed(
            n,
            || {
                tsc_pair();
            },
            || (),
        )
    });
    let raw = median_ns(rounds, n, |n| {
        timed(
            n,
            || {
                raw_instant_pair();
            },
            || (),
        )
    });
    let tracing = with_tracing(|| median_ns(rounds, n, |n| timed(n, tracing_pair, || ())));
    println!("\nmedian ns per pair ({rounds} rounds of {n}):");
    println!("  guard disabled          {disabled:8.2} ns");
    println!("  guard enabled           {enabled:8.2} ns");
    println!("  ... with records built  {enabled_built:8.2} ns");
    println!("  raw Instant::now pair   {raw:8.2} ns");
    println!("  tracing span enter/exit {tracing:8.2} ns");
    #[cfg(target_arch = "x86_64")]
    println!("  rdtsc pair              {tsc:8.2} ns");
    println!(
        "ratios: enabled/raw = {:.2}, with records built/raw = {:.2}, enabled/tracing = {:.2}, \
         disabled/raw = {:.3}",
        enabled / raw,
        enabled_built / raw,
        enabled / tracing,
        disabled / raw
    );
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    print_ratios();
}
