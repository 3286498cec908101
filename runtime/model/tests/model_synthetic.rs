//! The model on whole synthetic programs: invariants of every prediction, the file-format round
//! trip, and the shape of the per-node cost functions the searches rely on.

use mheta_model::search::Rng;
use mheta_model::synthetic::{workload, Program, Workload};
use mheta_model::{distributed_bytes_per_row, Model};
use mheta_runtime::distribution::Distribution;
use mheta_runtime::format::{Measurements, Structure};
use proptest::prelude::*;

fn model(w: &Workload) -> Model {
    Model::new(&w.structure, &w.measurements, &w.cluster).expect("synthetic workload builds")
}

#[test]
fn breakdowns_add_up_and_the_iteration_is_every_nodes_steady_advance() {
    for program in [Program::Jacobi, Program::Cg] {
        let w = workload(program, 16, 16 * 300);
        let m = model(&w);
        let mut rng = Rng::new(5);
        for _ in 0..50 {
            let rows = rng.composition(m.total_rows(), m.nodes());
            let p = m.predict(&rows).unwrap();
            let mut slowest: f64 = 0.0;
            for n in &p.nodes {
                let parts = n.compute_s + n.io_s + n.overhead_s + n.blocked_s;
                assert!(
                    (parts - n.total_s).abs() <= 1e-9 * n.total_s.max(1e-12),
                    "{program:?}: {n:?}"
                );
                assert!(
                    n.compute_s >= 0.0
                        && n.io_s >= 0.0
                        && n.overhead_s >= 0.0
                        && n.blocked_s >= 0.0
                );
                slowest = slowest.max(n.total_s);
            }
            // In the steady state every node advances by the period (they all communicate).
            assert!(
                (p.iteration_s - slowest).abs() <= 1e-9 * slowest,
                "{program:?}: {} vs {slowest}",
                p.iteration_s
            );
            let first = p.synchronized.iter().map(|n| n.total_s).fold(0.0, f64::max);
            assert_eq!(p.synchronized_s, first);
            for i in 0..m.nodes() {
                let by_section: f64 = (0..p.sections.len()).map(|k| p.section_time(k, i)).sum();
                assert!((by_section - p.nodes[i].total_s).abs() <= 1e-9 * p.nodes[i].total_s);
            }
        }
    }
}

#[test]
fn files_round_trip_to_the_same_prediction() {
    let w = workload(Program::Cg, 8, 8 * 500);
    let structure: Structure =
        serde_json::from_str(&serde_json::to_string(&w.structure).unwrap()).unwrap();
    let measurements: Measurements =
        serde_json::from_str(&serde_json::to_string(&w.measurements).unwrap()).unwrap();
    let a = model(&w);
    let b = Model::new(&structure, &measurements, &w.cluster).unwrap();
    let rows = Distribution::balanced(4000, &w.cluster).unwrap().rows;
    assert_eq!(
        a.predict(&rows).unwrap().iteration_s,
        b.predict(&rows).unwrap().iteration_s
    );
}

#[test]
fn io_appears_exactly_when_a_node_exceeds_its_memory() {
    let w = workload(Program::Jacobi, 8, 8 * 512);
    let m = model(&w);
    let bpr = distributed_bytes_per_row(&w.measurements);
    let in_core = Distribution::in_core(4096, bpr, &w.cluster).unwrap();
    let p = m.predict(&in_core.rows).unwrap();
    assert!(p.nodes.iter().all(|n| n.io_s == 0.0), "{p}");
    // Block overloads the small-memory nodes (every third node has a quarter of the memory).
    let block = m
        .predict(&Distribution::block(4096, 8).unwrap().rows)
        .unwrap();
    assert!(
        block.nodes[1].io_s > 0.0 && block.nodes[0].io_s == 0.0,
        "{block}"
    );
    assert!(block.iteration_s > p.iteration_s);
}

#[test]
fn per_node_costs_are_monotone_on_the_synthetic_programs() {
    for program in [Program::Jacobi, Program::Cg] {
        let w = workload(program, 8, 8 * 512);
        let m = model(&w);
        for node in 0..8 {
            let mut previous = m.node_cost(node, 0);
            for rows in 1..=4096 {
                let c = m.node_cost(node, rows);
                assert!(
                    c >= previous,
                    "{program:?} node {node}: f({rows}) = {c} < f({}) = {previous}",
                    rows - 1
                );
                previous = c;
            }
        }
    }
}

proptest! {
    #[test]
    fn predictions_are_finite_pure_and_reject_bad_lengths(seed in 0u64..10_000, nodes in 1usize..24) {
        let w = workload(Program::Cg, nodes, 64 * nodes as u64);
        let m = model(&w);
        let rows = Rng::new(seed).composition(m.total_rows(), nodes);
        let a = m.predict(&rows).unwrap();
        let b = m.predict(&rows).unwrap();
        prop_assert!(a.iteration_s.is_finite() && a.iteration_s > 0.0);
        prop_assert_eq!(a.iteration_s, b.iteration_s);
        prop_assert!(m.predict(&rows[1..]).is_err());
    }
}
