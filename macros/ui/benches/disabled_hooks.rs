//! Cost of disabled hooks: the `heat` kernel instrumented by `#[mheta::solver]` (hooks disabled,
//! as in every uninstrumented run) against the same kernel without the attribute, measured in
//! the same run. Criterion reports each side; the closing line is the ratio of medians from
//! interleaved samples (instrumented / plain), so drift affects both sides alike, with the
//! quartiles of the per-pair ratios as the noise it should be read against. With hooks disabled
//! the instrumented kernel runs the macro's plain copy of its body (iteration guards only).
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

/// The `q`-quantile of `v` (nearest rank).
fn quantile(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// Interleaved samples of both kernels; prints the ratio of medians, and the spread of the
/// ratios of adjacent samples (quartiles), which shows how far apart two runs of the same code
/// fall on this machine.
fn ratio() {
    let (mut plain, mut instrumented) = (Vec::new(), Vec::new());
    for _ in 0..41 {
        plain.push(time(heat_plain, 20).as_secs_f64());
        instrumented.push(time(heat, 20).as_secs_f64());
    }
    let pairs: Vec<f64> = instrumented
        .iter()
        .zip(&plain)
        .map(|(i, p)| i / p)
        .collect();
    let (p, i) = (median(plain), median(instrumented));
    println!(
        "heat, 20 calls per sample, 41 interleaved samples: plain {:.3} ms, instrumented (disabled) {:.3} ms, ratio {:.4} (sample ratios: quartiles {:.3} .. {:.3})",
        p * 1e3,
        i * 1e3,
        i / p,
        quantile(pairs.clone(), 0.25),
        quantile(pairs, 0.75)
    );
}

criterion_group!(benches, bench);

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    ratio();
}
