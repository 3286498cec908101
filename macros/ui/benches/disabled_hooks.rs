//! Cost of disabled hooks: the `heat` kernel instrumented by `#[mheta::solver]` (hooks disabled,
//! as in every uninstrumented run) against the same kernel without the attribute, measured in
//! the same run. Criterion reports each side; the closing line is the ratio of medians from
//! interleaved samples (instrumented / plain), so drift affects both sides alike.
//!
//! `cargo bench -p mheta-macros-tests --bench disabled_hooks`

use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion};
use mheta::{Args, CommError, Context, DistributionSpec};
use mheta_macros_tests::{heat, heat_plain};

type Kernel = fn(&Context, usize, usize) -> Result<f64, CommError>;

const COLS: usize = 64;
const SWEEPS: usize = 4;

/// One rank, 64 rows, 8 iterations of 4 sweeps: 32 group trips, 74 guards per call.
fn args() -> Args {
    Args {
        ranks: Some(1),
        rows: Some(64),
        iterations: 8,
        distribution: DistributionSpec::Block,
        ..Args::default()
    }
}

/// Time `calls` calls of `kernel` inside one launched rank (launch cost excluded).
fn time(kernel: Kernel, calls: u64) -> Duration {
    let elapsed = mheta::launch(&args(), |ctx| {
        let start = Instant::now();
        for _ in 0..calls {
            std::hint::black_box(kernel(ctx, COLS, SWEEPS)?);
        }
        Ok::<_, CommError>(start.elapsed())
    })
    .expect("the kernel runs");
    elapsed[0]
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("heat");
    group.bench_function("plain", |b| b.iter_custom(|n| time(heat_plain, n)));
    group.bench_function("instrumented_disabled", |b| {
        b.iter_custom(|n| time(heat, n))
    });
    group.finish();
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Interleaved samples of both kernels; prints the ratio of medians.
fn ratio() {
    let (mut plain, mut instrumented) = (Vec::new(), Vec::new());
    for _ in 0..41 {
        plain.push(time(heat_plain, 20).as_secs_f64());
        instrumented.push(time(heat, 20).as_secs_f64());
    }
    let (p, i) = (median(plain), median(instrumented));
    println!(
        "heat, 20 calls per sample, 41 interleaved samples: plain {:.3} ms, instrumented (disabled) {:.3} ms, ratio {:.4}",
        p * 1e3,
        i * 1e3,
        i / p
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    ratio();
}
