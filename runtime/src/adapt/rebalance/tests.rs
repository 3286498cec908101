//! Hand-computed redistributions (seed 001 §3.2), hysteresis holding still, and the rows'
//! data arriving where the new layout puts them.

use super::*;
use crate::{launch, Args};

/// One iteration's times for `counts` rows on ranks of the given true powers.
fn times(counts: &[u64], power: &[f64]) -> Vec<f64> {
    counts
        .iter()
        .zip(power)
        .map(|(&n, &p)| n as f64 / p)
        .collect()
}

fn stencil() -> RebalanceConfig {
    RebalanceConfig {
        settle: 0,
        ..RebalanceConfig::new(Access::Stencil)
    }
}

#[test]
fn a_balanced_distribution_under_steady_load_never_moves() {
    // Powers 1 : 4, rows 400 : 1600: the distribution already fits.
    let mut balancer = Rebalancer::new(&[400, 1600], stencil());
    for i in 0..300 {
        // ±4 % jitter, never the same twice in a row.
        let jitter = [1.0, 1.04, 0.96, 1.02, 0.98][i % 5];
        let mut t = times(&[400, 1600], &[1.0, 4.0]);
        t[i % 2] *= jitter;
        assert_eq!(balancer.observe(&t), None, "iteration {i}");
    }
    assert_eq!(balancer.moves(), 0);
}

#[test]
fn rows_follow_the_measured_powers_after_one_window() {
    // Block on nodes of powers 1 and 3: each rank ran 1000 rows, in 1000 s and 333 s.
    let mut balancer = Rebalancer::new(&[1000, 1000], stencil());
    let t = times(&[1000, 1000], &[1.0, 3.0]);
    assert_eq!(
        balancer.observe(&t),
        None,
        "the first iteration of the window"
    );
    assert_eq!(balancer.observe(&t), None, "the second");
    let change = balancer
        .observe(&t)
        .expect("the window is full: powers 0.25, 0.75");
    assert_eq!(change.before, Layout::gen_block(&[1000, 1000]));
    assert_eq!(change.after, Layout::gen_block(&[500, 1500]));
    assert_eq!(balancer.powers(), &[0.25, 0.75]);
    // Balanced now: the same powers give the same spread, and nothing moves again.
    for _ in 0..30 {
        assert_eq!(balancer.observe(&times(&[500, 1500], &[1.0, 3.0])), None);
    }
    // The fast node loses three quarters of its CPU: powers 1 : 0.75, 1142.9 : 857.1 rows.
    let mut moved = None;
    for _ in 0..3 {
        moved = balancer.observe(&times(&[500, 1500], &[1.0, 0.75]));
    }
    assert_eq!(moved.unwrap().after, Layout::gen_block(&[1143, 857]));
    assert_eq!(balancer.moves(), 2);
}

#[test]
fn a_spread_change_within_the_hysteresis_holds_still() {
    let config = RebalanceConfig {
        window: 1,
        ..stencil()
    };
    let mut balancer = Rebalancer::new(&[500, 500], config);
    // Powers 0.52 : 0.48: spread 0.04 / 0.5 = 0.08 from 0, within 0.10.
    assert_eq!(balancer.observe(&times(&[500, 500], &[0.52, 0.48])), None);
    // 0.6 : 0.4: spread 0.4, past it, and 600 : 400 rows make the slowest rank's time 1000
    // against 1250 now (20 % shorter): they move.
    let change = balancer.observe(&times(&[500, 500], &[0.6, 0.4])).unwrap();
    assert_eq!(change.after.counts(), vec![600, 400]);
    // Back to 0.58 : 0.42 (spread 0.32, 0.08 from the 0.4 moved at): still.
    assert_eq!(balancer.observe(&times(&[600, 400], &[0.58, 0.42])), None);
}

#[test]
fn a_move_that_gains_less_than_min_gain_holds_still() {
    let config = RebalanceConfig {
        window: 1,
        ..stencil()
    };
    let mut balancer = Rebalancer::new(&[500, 500], config);
    // Powers 0.53 : 0.47: the spread moved by 0.12, past the hysteresis, but 530 : 470 rows
    // would take the slowest rank 1000 instead of 1063.8 (6 % shorter, under 10 %).
    assert_eq!(balancer.observe(&times(&[500, 500], &[0.53, 0.47])), None);
    assert_eq!(balancer.moves(), 0);
}

#[test]
fn a_rank_without_rows_keeps_its_power() {
    let config = RebalanceConfig {
        window: 1,
        ..stencil()
    };
    let mut balancer = Rebalancer::new(&[0, 600, 600], config);
    // Rank 0 has no rows (its power 0 stays 0); ranks 1 and 2 at 1 : 2.
    let change = balancer
        .observe(&[0.0, 600.0, 300.0])
        .expect("spread 1.5 → 2.0");
    assert_eq!(change.after.counts(), vec![0, 400, 800]);
    assert_eq!(balancer.range(0), Some(0..0));
    assert_eq!(balancer.range(2), Some(400..1200));
}

#[test]
fn independent_rows_go_from_the_slowest_ranks_to_the_fastest() {
    let config = RebalanceConfig {
        window: 1,
        settle: 0,
        ..RebalanceConfig::new(Access::Independent)
    };
    let mut balancer = Rebalancer::new(&[10, 10, 10], config);
    // Powers 0.2, 0.3, 0.5: 6, 9 and 15 rows. Rank 0 gives its last 4 rows (6..10), rank 1
    // its last one (19), all to rank 2.
    let change = balancer
        .observe(&times(&[10, 10, 10], &[0.2, 0.3, 0.5]))
        .unwrap();
    assert_eq!(balancer.range(0), Some(0..6));
    assert_eq!(balancer.range(1), Some(10..19));
    assert_eq!(change.after.pieces(2), &[6..10, 19..30]);
    assert_eq!(balancer.range(2), None, "not contiguous any more");
}

#[test]
fn the_first_iteration_and_the_one_after_a_move_are_not_counted() {
    let config = RebalanceConfig {
        window: 1,
        ..RebalanceConfig::new(Access::Stencil)
    };
    let mut balancer = Rebalancer::new(&[100, 100], config);
    let skewed = times(&[100, 100], &[1.0, 3.0]);
    assert_eq!(
        balancer.observe(&skewed),
        None,
        "the first iteration settles"
    );
    let change = balancer.observe(&skewed).expect("counted: powers 1 : 3");
    assert_eq!(change.after.counts(), vec![50, 150]);
    // The sweep right after the move is slow on rank 0 (first touches): not counted.
    assert_eq!(balancer.observe(&[500.0, 50.0]), None);
    assert_eq!(balancer.observe(&times(&[50, 150], &[1.0, 3.0])), None);
}

#[test]
fn a_rank_that_holds_rows_keeps_one_however_slow_it_gets() {
    let config = RebalanceConfig {
        window: 1,
        ..stencil()
    };
    let mut balancer = Rebalancer::new(&[100, 100], config);
    // Rank 0 at a thousandth of rank 1's power: its share rounds to 0 rows, but it keeps one
    // so that its power stays measured.
    let change = balancer
        .observe(&times(&[100, 100], &[0.001, 1.0]))
        .unwrap();
    assert_eq!(change.after.counts(), vec![1, 199]);
    assert_eq!(
        super::keep_one_row(vec![0, 5, 0], &[2, 2, 0]),
        vec![1, 4, 0]
    );
    assert_eq!(
        super::keep_one_row(vec![0, 1], &[1, 0]),
        vec![0, 1],
        "no donor to spare"
    );
}

proptest::proptest! {
    /// Whatever the powers, every row is held by exactly one rank after a move, and a
    /// stencil's layout stays contiguous and in rank order.
    #[test]
    fn every_row_is_held_once_after_a_move(
        counts in proptest::collection::vec(0u64..200, 1..6),
        powers in proptest::collection::vec(0.05f64..4.0, 6),
        independent in proptest::bool::ANY,
    ) {
        let access = if independent { Access::Independent } else { Access::Stencil };
        let config = RebalanceConfig { window: 1, settle: 0, ..RebalanceConfig::new(access) };
        let mut balancer = Rebalancer::new(&counts, config);
        let total: u64 = counts.iter().sum();
        for _ in 0..3 {
            let held = balancer.layout().counts();
            balancer.observe(&times(&held, &powers[..counts.len()]));
            let layout = balancer.layout();
            let mut rows: Vec<u64> = (0..layout.ranks())
                .flat_map(|r| layout.pieces(r).iter().flat_map(|p| p.clone()))
                .collect();
            rows.sort_unstable();
            proptest::prop_assert_eq!(rows, (0..total).collect::<Vec<_>>());
            if !independent {
                for r in 0..layout.ranks() {
                    proptest::prop_assert!(layout.range(r).is_some());
                }
            }
        }
    }
}

/// Each rank's rows of a `row_len`-wide array whose element `(row, j)` is `row * 100 + j`.
fn rows_of(layout: &Layout, rank: usize, row_len: usize) -> Vec<f64> {
    layout
        .pieces(rank)
        .iter()
        .flat_map(|p| p.clone())
        .flat_map(|row| (0..row_len).map(move |j| (row * 100 + j as u64) as f64))
        .collect()
}

#[test]
fn the_rows_data_arrive_where_the_new_layout_puts_them() {
    for access in [Access::Stencil, Access::Independent] {
        let args = Args::try_parse_from(["prog", "--ranks", "3", "--rows", "30"]).unwrap();
        let results = launch(&args, |ctx| {
            let config = RebalanceConfig {
                window: 1,
                settle: 0,
                ..RebalanceConfig::new(access)
            };
            let mut balancer = Rebalancer::new(&[10, 10, 10], config);
            let mut a = rows_of(balancer.layout(), ctx.rank(), 2);
            let mut b: Vec<u32> = rows_of(balancer.layout(), ctx.rank(), 1)
                .iter()
                .map(|&x| x as u32)
                .collect();
            let power = [0.2, 0.3, 0.5][ctx.rank()];
            let change = balancer
                .step(ctx.comm(), 10.0 / power)?
                .expect("powers 0.2, 0.3, 0.5 move rows");
            change.move_rows(ctx.comm(), &mut a, 2)?;
            change.move_rows(ctx.comm(), &mut b, 1)?;
            Ok::<_, CommError>((balancer.layout().clone(), a, b))
        })
        .unwrap();
        for (rank, (layout, a, b)) in results.iter().enumerate() {
            assert_eq!(layout.counts(), vec![6, 9, 15], "{access:?}");
            assert_eq!(a, &rows_of(layout, rank, 2), "{access:?} rank {rank}");
            let want: Vec<u32> = rows_of(layout, rank, 1).iter().map(|&x| x as u32).collect();
            assert_eq!(b, &want, "{access:?} rank {rank}");
        }
    }
}

#[test]
fn rows_of_the_wrong_length_are_an_error_not_a_panic() {
    let change = Change {
        before: Layout::gen_block(&[2]),
        after: Layout::gen_block(&[2]),
    };
    let args = Args::try_parse_from(["prog", "--ranks", "1", "--rows", "2"]).unwrap();
    let result = launch(&args, |ctx| {
        let mut rows = vec![0.0f64; 3];
        change.move_rows(ctx.comm(), &mut rows, 2)
    });
    let message = result.unwrap_err().to_string();
    assert!(message.contains("passed 3 elements"), "{message}");
}
