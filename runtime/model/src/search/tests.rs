//! Search tests on synthetic monotone per-node costs (seed §4.2: `f_i = g_i + h_i + r_i` with
//! `g_i` linear and `h_i` a step function) and on the model.

use std::time::Duration;

use proptest::prelude::*;

use super::bench::brute_force;
use super::*;

/// `f_i(x) = base_i + c_i·x + k_i·(steps of size N_i, starting at 2 accesses)`.
#[derive(Debug, Clone)]
struct Monotone {
    s: u64,
    base: Vec<f64>,
    slope: Vec<f64>,
    step_rows: Vec<u64>,
    step_cost: Vec<f64>,
}

impl NodeCosts for Monotone {
    fn nodes(&self) -> usize {
        self.slope.len()
    }
    fn total_rows(&self) -> u64 {
        self.s
    }
    fn cost(&self, i: usize, x: u64) -> f64 {
        let pieces = x.div_ceil(self.step_rows[i]);
        let io = if pieces >= 2 {
            pieces as f64 * self.step_cost[i]
        } else {
            0.0
        };
        self.base[i] + self.slope[i] * x as f64 + io
    }
}

fn monotone() -> impl Strategy<Value = Monotone> {
    (1usize..=4, 0u64..=24).prop_flat_map(|(p, s)| {
        (
            proptest::collection::vec(0.0f64..2.0, p),
            proptest::collection::vec(0.1f64..5.0, p),
            proptest::collection::vec(1u64..12, p),
            proptest::collection::vec(0.0f64..6.0, p),
        )
            .prop_map(move |(base, slope, step_rows, step_cost)| Monotone {
                s,
                base,
                slope,
                step_rows,
                step_cost,
            })
    })
}

fn config(seed: u64) -> SearchConfig {
    SearchConfig {
        budget: Duration::from_secs(5),
        seed,
        start: None,
    }
}

fn valid(result: &SearchResult, p: usize, s: u64) -> bool {
    result.rows.len() == p && result.rows.iter().sum::<u64>() == s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn gbs_and_exact_reach_the_brute_force_optimum(f in monotone(), seed in 0u64..1000) {
        let best = brute_force(&f, 10_000_000).expect("small instance");
        for result in [gbs(&f, &config(seed)), exact(&f, &config(seed))] {
            prop_assert!(valid(&result, f.nodes(), f.s), "{:?}", result);
            prop_assert_eq!(result.predicted_s, f.max_cost(&result.rows));
            prop_assert!((result.predicted_s - best).abs() <= 1e-12 * best.abs().max(1.0),
                "{} found {} vs optimum {} for {:?}", result.algorithm, result.predicted_s, best, f);
        }
    }

    #[test]
    fn every_search_returns_a_distribution_of_s_rows(f in monotone(), seed in 0u64..1000) {
        let short = SearchConfig { budget: Duration::from_millis(20), seed, start: None };
        let results = [
            greedy(&f, &short),
            genetic(&mut MaxCost(&f), &short),
            annealing(&mut MaxCost(&f), &short),
            refine(&mut MaxCost(&f), &super::Rng::new(seed).composition(f.s, f.nodes()), &short),
        ];
        for r in results {
            prop_assert!(valid(&r, f.nodes(), f.s), "{:?}", r);
            prop_assert!(r.trace.windows(2).all(|w| w[1].predicted_s < w[0].predicted_s && w[1].elapsed_s >= w[0].elapsed_s));
            prop_assert_eq!(r.trace.last().map(|t| t.predicted_s), Some(r.predicted_s));
        }
    }
}

#[test]
fn gs_gets_stuck_where_gbs_does_not_section_4_3_2() {
    // Seed §4.3.2: f_u(x_u) > f_a(x_a) >> f_d(x_d), f_u(x_u − 1) < f_d(x_d + 1) (moving a row to
    // d does not help) but f_u(x_u − 1) > f_a(x_a + 1) (moving it to a would).
    // u: f = x (10 rows → 10). a: f = 0.5x (10 rows → 5). d: f = 0 up to 1 row, then 100 (a huge
    // step, e.g. its array going out of core).
    let f = Monotone {
        s: 21,
        base: vec![0.0, 0.0, 0.0],
        slope: vec![1.0, 0.5, 1e-3],
        step_rows: vec![1000, 1000, 1],
        step_cost: vec![0.0, 0.0, 50.0],
    };
    let start = SearchConfig {
        start: Some(vec![10, 10, 1]),
        ..config(1)
    };
    assert!(f.cost(2, 2) > f.cost(0, 10) && f.cost(0, 9) > f.cost(1, 11));
    let stuck = greedy(&f, &start);
    assert_eq!(stuck.rows, vec![10, 10, 1]);
    assert_eq!(stuck.predicted_s, 10.0);
    let optimal = gbs(&f, &start);
    // Optimum: u and a balance at x_u = 0.5·x_a with x_u + x_a = 20 − (x_d = 1 stays): 7/13 → 7, 6.5.
    assert_eq!(optimal.rows[2], 1);
    assert_eq!(optimal.predicted_s, 7.0);
    assert_eq!(brute_force(&f, 1_000_000), Some(7.0));
}

#[test]
fn searches_on_the_model_improve_on_block() {
    use crate::synthetic::{workload, Program};
    use crate::Model;
    use mheta_runtime::distribution::Distribution;
    let w = workload(Program::Jacobi, 8, 4096);
    let model = Model::new(&w.structure, &w.measurements, &w.cluster).unwrap();
    let block = Distribution::block(4096, 8).unwrap().rows;
    let block_time = model.predict(&block).unwrap().iteration_s;
    let cfg = SearchConfig {
        budget: Duration::from_millis(300),
        seed: 3,
        start: None,
    };
    for algorithm in [Algorithm::Gbs, Algorithm::Exact, Algorithm::Gs] {
        let r = search_model(&model, algorithm, &cfg);
        assert_eq!(r.rows.iter().sum::<u64>(), 4096);
        let predicted = model.predict(&r.rows).unwrap().iteration_s;
        assert!((predicted - r.predicted_s).abs() < 1e-12, "{algorithm:?}");
        assert!(
            predicted < 0.9 * block_time,
            "{algorithm:?}: {predicted} vs block {block_time}"
        );
    }
    // GBS and exact agree on the per-node optimum.
    let a = gbs(
        &model,
        &SearchConfig {
            budget: Duration::from_secs(10),
            ..cfg.clone()
        },
    );
    let b = exact(&model, &cfg);
    assert!(
        (a.predicted_s - b.predicted_s).abs() <= 1e-12 * b.predicted_s,
        "{} vs {}",
        a.predicted_s,
        b.predicted_s
    );
}

#[test]
fn exact_is_optimal_when_zero_rows_already_cost_the_most() {
    // Node 1's replicated work (f(0) = 100) dominates: any distribution is optimal at 100 unless
    // node 1 gets many rows; exact must not give it any.
    let f = Monotone {
        s: 10,
        base: vec![0.0, 100.0],
        slope: vec![1.0, 1.0],
        step_rows: vec![100, 100],
        step_cost: vec![0.0, 0.0],
    };
    let r = exact(&f, &config(1));
    assert_eq!(r.predicted_s, 100.0);
    assert!(r.rows[1] == 0);
}
