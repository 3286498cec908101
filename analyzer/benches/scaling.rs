//! How analysis time grows with the size of one construct: the curve of issue 21 item 12.
//!
//! Each shape is an rsmpi program whose main loop holds one construct of `n` parts (an `else
//! if` chain of n branches, a sum of n terms, a method chain of n calls, n functions written on
//! one line); criterion times `analyze_source` at every n with the throughput set to n, so its
//! report gives the time per part at each size. At the end the bench prints, per shape, the
//! median time per part at each n (thread CPU time, 5 runs) and the growth: per-part time at the
//! largest n over the smallest. About 1 is linear; a quadratic cost grows with n (16 from 500 to
//! 8000).
//!
//! ```sh
//! cargo bench -p mheta-analyzer --bench scaling
//! ```

use std::time::Duration;

use criterion::{black_box, BenchmarkId, Criterion, Throughput};
use mheta_analyzer::{analyze_source, Options};
use mheta_runtime::clock::thread_cpu_s;

const SIZES: [usize; 5] = [500, 1000, 2000, 4000, 8000];

/// A program whose main loop computes `value` (an `f64` expression) and all-reduces it, after
/// the items `before` at the top of the file.
fn program(before: &str, value: &str) -> String {
    format!(
        "use mpi::traits::*;\nuse mpi::collective::SystemOperation;\n{before}\n\
         fn main() {{\n    let universe = mpi::initialize().unwrap();\n    \
         let world = universe.world();\n    let x = vec![1.0f64; 10];\n    \
         for it in 0..100 {{\n        let v: f64 = {value};\n        let mut s = 0.0;\n        \
         world.all_reduce_into(&v, &mut s, SystemOperation::sum());\n    }}\n}}\n"
    )
}

fn else_if_chain(n: usize) -> String {
    let mut value = String::from("if it == 0 { x[0] }");
    for k in 1..n {
        value.push_str(&format!("\n        else if it == {k} {{ x[{}] }}", k % 10));
    }
    value.push_str("\n        else { -1.0 }");
    program("", &value)
}

fn sum_of_terms(n: usize) -> String {
    let terms: Vec<String> = (0..n).map(|k| format!("x[{}]", k % 10)).collect();
    program("", &terms.join(" + "))
}

fn method_chain(n: usize) -> String {
    let mut value = String::from("x.iter().copied()");
    for k in 0..n {
        value.push_str(&format!(".map(|a| a + {k}.0)"));
    }
    value.push_str(".sum::<f64>()");
    program("", &value)
}

fn functions_on_one_line(n: usize) -> String {
    let items: Vec<String> = (0..n)
        .map(|k| format!("fn h{k}(a: f64) -> f64 {{ a + {k}.0 }}"))
        .collect();
    program(&items.join(" "), &format!("h0(x[0]) + h{}(x[1])", n - 1))
}

type Shape = (&'static str, fn(usize) -> String);

const SHAPES: [Shape; 4] = [
    ("else_if_chain", else_if_chain),
    ("sum_of_terms", sum_of_terms),
    ("method_chain", method_chain),
    ("functions_on_one_line", functions_on_one_line),
];

fn bench(c: &mut Criterion) {
    let options = Options::default();
    for (shape, make) in SHAPES {
        let mut group = c.benchmark_group(format!("scaling/{shape}"));
        group
            .sample_size(10)
            .warm_up_time(Duration::from_millis(200))
            .measurement_time(Duration::from_secs(1));
        for n in SIZES {
            let source = make(n);
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::from_parameter(n), &source, |b, source| {
                b.iter(|| black_box(analyze_source(shape, black_box(source), &options)))
            });
        }
        group.finish();
    }
}

/// Median thread CPU seconds of one analysis of `source`, over 5 runs.
fn median_seconds(shape: &str, source: &str, options: &Options) -> f64 {
    let mut runs: Vec<f64> = (0..5)
        .map(|_| {
            let start = thread_cpu_s();
            black_box(analyze_source(shape, black_box(source), options));
            thread_cpu_s() - start
        })
        .collect();
    runs.sort_by(f64::total_cmp);
    runs[runs.len() / 2]
}

fn print_curves() {
    let options = Options::default();
    println!("\nper-part analysis time (µs, median of 5, thread CPU) at n = {SIZES:?}:");
    for (shape, make) in SHAPES {
        let per_part: Vec<f64> = SIZES
            .iter()
            .map(|&n| {
                let source = make(n);
                // The analysis must find the solver, or the curve measures an early exit.
                let analysis = analyze_source(shape, &source, &options);
                assert!(
                    !analysis.has_errors() && !analysis.solvers.is_empty(),
                    "{shape} at n = {n}: no solver: {:?}",
                    analysis.diagnostics
                );
                median_seconds(shape, &source, &options) / n as f64 * 1e6
            })
            .collect();
        let growth = per_part[per_part.len() - 1] / per_part[0];
        let shown: Vec<String> = per_part.iter().map(|t| format!("{t:.2}")).collect();
        println!("  {shape:<22} {}  growth {growth:.2}", shown.join(" "));
    }
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();
    bench(&mut criterion);
    criterion.final_summary();
    print_curves();
}
