//! Speed of the searches (issue 6 targets: GBS at the optimum for 8 nodes ≤ 10 ms and for 128
//! nodes ≤ 1 s; `exact` at 1024 nodes ≤ 100 ms). Each iteration runs one whole search to
//! convergence on the CG-like workload's per-node costs, from a fixed random start.
//!
//! `cargo bench -p mheta-model --bench search`

use std::time::Duration;

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use mheta_model::search::{exact, gbs, greedy, SearchConfig};
use mheta_model::synthetic::{workload, Program};
use mheta_model::Model;

fn model(nodes: usize) -> Model {
    let w = workload(Program::Cg, nodes, 512 * nodes as u64);
    Model::new(&w.structure, &w.measurements, &w.cluster).expect("synthetic workload builds")
}

fn searches(c: &mut Criterion) {
    let config = SearchConfig {
        budget: Duration::from_secs(60),
        seed: 11,
        start: None,
    };
    let mut group = c.benchmark_group("search");
    group.sample_size(10);
    for nodes in [8usize, 128] {
        let m = model(nodes);
        let optimum = exact(&m, &config).predicted_s;
        let found = gbs(&m, &config).predicted_s;
        assert!(
            (found - optimum).abs() <= 1e-12 * optimum,
            "GBS must reach the optimum: {found} vs {optimum}"
        );
        group.bench_with_input(BenchmarkId::new("gbs", nodes), &nodes, |b, _| {
            b.iter(|| black_box(gbs(&m, &config).predicted_s))
        });
        group.bench_with_input(BenchmarkId::new("gs", nodes), &nodes, |b, _| {
            b.iter(|| black_box(greedy(&m, &config).predicted_s))
        });
    }
    for nodes in [8usize, 128, 1024] {
        let m = model(nodes);
        group.bench_with_input(BenchmarkId::new("exact", nodes), &nodes, |b, _| {
            b.iter(|| black_box(exact(&m, &config).predicted_s))
        });
    }
    group.finish();
}

criterion_group!(benches, searches);
criterion_main!(benches);
