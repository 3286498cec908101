//! The searches on the model: every algorithm returns a valid distribution whose reported value
//! is the model's prediction, and the refinement on the full model never makes things worse.

use std::time::Duration;

use mheta_model::search::{
    exact, refine, search_model, Algorithm, FullModel, Objective, SearchConfig,
};
use mheta_model::synthetic::{workload, Program};
use mheta_model::Model;
use mheta_runtime::distribution::Distribution;

#[test]
fn every_algorithm_returns_a_valid_predicted_distribution() {
    for program in [Program::Jacobi, Program::Cg] {
        let w = workload(program, 12, 12 * 400);
        let m = Model::new(&w.structure, &w.measurements, &w.cluster).unwrap();
        let cfg = SearchConfig {
            budget: Duration::from_millis(150),
            seed: 9,
            start: None,
        };
        for algorithm in Algorithm::ALL {
            let r = search_model(&m, algorithm, &cfg);
            Distribution::new(r.rows.clone())
                .validate(m.total_rows(), m.nodes())
                .unwrap();
            let predicted = m.predict(&r.rows).unwrap().iteration_s;
            assert_eq!(predicted, r.predicted_s, "{program:?} {algorithm:?}");
            assert!(!r.trace.is_empty());
        }
    }
}

#[test]
fn refine_never_worsens_its_start_on_the_full_model() {
    let w = workload(Program::Jacobi, 16, 16 * 512);
    let m = Model::new(&w.structure, &w.measurements, &w.cluster).unwrap();
    let cfg = SearchConfig {
        budget: Duration::from_secs(2),
        seed: 2,
        start: None,
    };
    let start = exact(&m, &cfg).rows;
    let mut full = FullModel::new(&m);
    let mut per_node = vec![0.0; 16];
    let before = full.evaluate(&start, &mut per_node);
    let refined = refine(&mut full, &start, &cfg);
    assert!(refined.predicted_s <= before);
    assert_eq!(refined.rows.iter().sum::<u64>(), m.total_rows());
}

#[test]
fn the_search_beats_every_generator_of_the_seed_spectrum() {
    // Seed Fig. 6.1: Block, Balanced, In-Core and In-Core/Balanced are the hand-made
    // distributions; GBS + refine on the model should do at least as well as the best of them.
    let w = workload(Program::Jacobi, 8, 8 * 512);
    let m = Model::new(&w.structure, &w.measurements, &w.cluster).unwrap();
    let bpr = mheta_model::distributed_bytes_per_row(&w.measurements);
    let s = m.total_rows();
    let spectrum = [
        Distribution::block(s, 8).unwrap(),
        Distribution::balanced(s, &w.cluster).unwrap(),
        Distribution::in_core(s, bpr, &w.cluster).unwrap(),
        Distribution::in_core_balanced(s, bpr, &w.cluster).unwrap(),
    ];
    let best_generator = spectrum
        .iter()
        .map(|d| m.predict(&d.rows).unwrap().iteration_s)
        .fold(f64::INFINITY, f64::min);
    let r = search_model(
        &m,
        Algorithm::Gbs,
        &SearchConfig {
            budget: Duration::from_secs(2),
            seed: 4,
            start: None,
        },
    );
    assert!(
        r.predicted_s <= best_generator * 1.0001,
        "{} vs {}",
        r.predicted_s,
        best_generator
    );
}
