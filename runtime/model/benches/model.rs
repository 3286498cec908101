//! Speed of one MHETA evaluation (issue 6 targets: ≤ 2 µs at 8 nodes, ≤ 1 ms at 1024 nodes).
//!
//! `cargo bench -p mheta-model --bench model`

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion};
use mheta_model::search::Rng;
use mheta_model::synthetic::{workload, Program};
use mheta_model::{Model, Prediction};

fn predict(c: &mut Criterion) {
    let mut group = c.benchmark_group("model_predict");
    for program in [Program::Jacobi, Program::Cg] {
        for nodes in [8usize, 64, 128, 1024] {
            let w = workload(program, nodes, 512 * nodes as u64);
            let model = Model::new(&w.structure, &w.measurements, &w.cluster)
                .expect("synthetic workload builds");
            let mut rng = Rng::new(7);
            let candidates: Vec<Vec<u64>> = (0..16)
                .map(|_| rng.composition(model.total_rows(), nodes))
                .collect();
            let mut out = Prediction::default();
            let mut k = 0;
            group.bench_with_input(
                BenchmarkId::new(format!("{program:?}"), nodes),
                &nodes,
                |b, _| {
                    b.iter(|| {
                        k = (k + 1) % candidates.len();
                        model
                            .predict_into(black_box(&candidates[k]), &mut out)
                            .expect("valid distribution");
                        black_box(out.iteration_s)
                    })
                },
            );
        }
    }
    group.finish();
}

fn node_cost(c: &mut Criterion) {
    let w = workload(Program::Cg, 1024, 512 * 1024);
    let model =
        Model::new(&w.structure, &w.measurements, &w.cluster).expect("synthetic workload builds");
    c.bench_function("model_node_cost/Cg", |b| {
        let mut x = 0u64;
        b.iter(|| {
            x = (x + 97) % 2048;
            black_box(model.node_cost(black_box(5), x))
        })
    });
}

criterion_group!(benches, predict, node_cost);
criterion_main!(benches);
