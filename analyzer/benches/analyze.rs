//! Analysis time against its lower limit, `syn::parse_file` alone, on the same source.
//!
//! For every single-file analysis fixture (`fixtures/analysis/*.rs`) the two sides run in the
//! same criterion group, one after the other. Every timed batch is also recorded here, so that at
//! the end the bench prints, per fixture, the median time per call of each side and their ratio
//! (analyze / parse), then the median of those ratios and the ratio of the summed medians.
//!
//! Criterion measures one side after the other, so a change of machine load between them moves
//! the ratio. The bench therefore also takes a *paired* ratio: rounds that time a batch of parses
//! and then a batch of analyses back to back, in this thread's CPU time (which other processes on
//! a busy machine barely disturb), the ratio of each round, and their median.
//!
//! ```sh
//! cargo bench -p mheta-analyzer --bench analyze
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{black_box, Criterion};
use mheta_analyzer::{analyze_source, Options};
use mheta_runtime::clock::thread_cpu_s;

/// Per-call times (seconds) of every timed batch, keyed by (fixture, side).
type Samples = Arc<Mutex<BTreeMap<(String, &'static str), Vec<f64>>>>;

const PARSE: &str = "syn_parse_file";
const ANALYZE: &str = "analyze_source";

fn fixtures() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/analysis");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "rs"))
        .collect();
    paths.sort();
    assert!(!paths.is_empty(), "no fixtures in {}", dir.display());
    paths
        .into_iter()
        .map(|p| {
            let name = p
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let source = std::fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
            (name, source)
        })
        .collect()
}

/// Times `iters` calls of `f` and records the per-call time under `key`.
fn timed<F: FnMut()>(
    samples: &Samples,
    key: (String, &'static str),
    iters: u64,
    mut f: F,
) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    let elapsed = start.elapsed();
    if iters > 0 {
        if let Ok(mut map) = samples.lock() {
            map.entry(key)
                .or_default()
                .push(elapsed.as_secs_f64() / iters as f64);
        }
    }
    elapsed
}

fn bench_fixtures(c: &mut Criterion, samples: &Samples) {
    let options = Options::default();
    for (name, source) in fixtures() {
        let mut group = c.benchmark_group(format!("analyze/{name}"));
        group
            .sample_size(20)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1));
        group.bench_function(PARSE, |b| {
            b.iter_custom(|iters| {
                timed(samples, (name.clone(), PARSE), iters, || {
                    let _ = black_box(syn::parse_file(black_box(&source)));
                })
            })
        });
        group.bench_function(ANALYZE, |b| {
            b.iter_custom(|iters| {
                timed(samples, (name.clone(), ANALYZE), iters, || {
                    black_box(analyze_source(&name, black_box(&source), &options));
                })
            })
        });
        group.finish();
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => f64::NAN,
        _ if n % 2 == 1 => values[n / 2],
        _ => 0.5 * (values[n / 2 - 1] + values[n / 2]),
    }
}

fn print_ratios(samples: &Samples) {
    let Ok(mut map) = samples.lock() else { return };
    let names: Vec<String> = map
        .keys()
        .map(|(n, _)| n.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let (mut sum_parse, mut sum_analyze) = (0.0, 0.0);
    let mut ratios = Vec::new();
    println!();
    println!(
        "{:<42} {:>12} {:>12} {:>8}",
        "fixture", "parse µs", "analyze µs", "ratio"
    );
    for name in names {
        let parse = median(
            map.get_mut(&(name.clone(), PARSE))
                .map(Vec::as_mut_slice)
                .unwrap_or(&mut []),
        );
        let analyze = median(
            map.get_mut(&(name.clone(), ANALYZE))
                .map(Vec::as_mut_slice)
                .unwrap_or(&mut []),
        );
        if !(parse.is_finite() && analyze.is_finite() && parse > 0.0) {
            continue;
        }
        let ratio = analyze / parse;
        ratios.push(ratio);
        sum_parse += parse;
        sum_analyze += analyze;
        println!(
            "{name:<42} {:>12.1} {:>12.1} {ratio:>8.2}",
            parse * 1e6,
            analyze * 1e6
        );
    }
    if !ratios.is_empty() {
        let (lo, hi) = ratios
            .iter()
            .fold((f64::MAX, f64::MIN), |(lo, hi), r| (lo.min(*r), hi.max(*r)));
        println!(
            "overall: median ratio {:.2} (min {lo:.2}, max {hi:.2}) over {} fixtures; summed medians {:.1} µs / {:.1} µs = {:.2}",
            median(&mut ratios),
            ratios.len(),
            sum_analyze * 1e6,
            sum_parse * 1e6,
            sum_analyze / sum_parse
        );
    }
}

/// Rounds of the paired measurement, and the least time one analysis batch should take.
const PAIRED_ROUNDS: usize = 21;
const PAIRED_BATCH: Duration = Duration::from_millis(3);

/// The median over rounds of (analysis batch time / parse batch time), batches of equal count.
fn paired_ratio(name: &str, source: &str, options: &Options) -> f64 {
    let parse = |n: u32| {
        let t = thread_cpu_s();
        for _ in 0..n {
            let _ = black_box(syn::parse_file(black_box(source)));
        }
        thread_cpu_s() - t
    };
    let analyze = |n: u32| {
        let t = thread_cpu_s();
        for _ in 0..n {
            black_box(analyze_source(name, black_box(source), options));
        }
        thread_cpu_s() - t
    };
    let mut n = 1u32;
    while analyze(n) < PAIRED_BATCH.as_secs_f64() && n < 1 << 16 {
        n *= 2;
    }
    let mut ratios: Vec<f64> = (0..PAIRED_ROUNDS)
        .map(|_| {
            let p = parse(n);
            let a = analyze(n);
            a / p.max(1e-12)
        })
        .collect();
    median(&mut ratios)
}

fn print_paired(fixtures: &[(String, String)]) {
    let options = Options::default();
    let mut ratios = Vec::new();
    println!();
    println!("paired (interleaved batches, thread CPU time, median of {PAIRED_ROUNDS} rounds):");
    for (name, source) in fixtures {
        let ratio = paired_ratio(name, source, &options);
        ratios.push(ratio);
        println!("{name:<42} {ratio:>8.2}");
    }
    if !ratios.is_empty() {
        let n = ratios.len();
        println!(
            "overall paired: median ratio {:.2} over {n} fixtures",
            median(&mut ratios)
        );
    }
}

fn main() {
    let samples: Samples = Arc::default();
    let mut criterion = Criterion::default().configure_from_args();
    bench_fixtures(&mut criterion, &samples);
    criterion.final_summary();
    print_ratios(&samples);
    print_paired(&fixtures());
}
