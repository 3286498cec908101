//! `refine` (DESIGN §7, beyond the seed): local search on a whole-distribution objective,
//! normally the full MHETA model with blocked time, which GBS, GS and `exact` ignore (the case
//! where they were 20% off in the seed's CG results, §6.3.3).
//!
//! From the start vector it tries moving `step` rows from one node to another (every pair on
//! small clusters; the few nodes with the largest per-node values to the few with the smallest
//! on large ones), keeping the best move that lowers the objective; when no move helps it
//! halves `step`, and stops after `step = 1` fails.

use super::{Objective, SearchConfig, SearchResult, Tracker};

/// Up to this many nodes, every pair of nodes is tried; above it, the `CANDIDATES` busiest as
/// donors and the `CANDIDATES` idlest as receivers.
const ALL_PAIRS_UP_TO: usize = 16;
const CANDIDATES: usize = 6;

/// Refines `start` on `objective`.
pub fn refine<O: Objective + ?Sized>(
    objective: &mut O,
    start: &[u64],
    config: &SearchConfig,
) -> SearchResult {
    let p = objective.nodes();
    let mut tracker = Tracker::new(config.budget);
    let mut x = start.to_vec();
    let mut per_node = vec![0.0; p];
    let mut scratch = vec![0.0; p];
    let mut best = objective.evaluate(&x, &mut per_node);
    tracker.count(1);
    tracker.offer(&x, best);
    if p < 2 {
        return tracker.finish("refine", true);
    }
    let mut step = (objective.total_rows() / (4 * p as u64)).max(1);
    let mut order: Vec<usize> = (0..p).collect();
    let mut converged = true;
    loop {
        if tracker.out_of_time() {
            converged = false;
            break;
        }
        order.sort_by(|&a, &b| per_node[b].total_cmp(&per_node[a]));
        let k = if p <= ALL_PAIRS_UP_TO { p } else { CANDIDATES };
        let mut best_move: Option<(usize, usize, u64, f64)> = None;
        for &from in order.iter().take(k) {
            for &to in order.iter().rev().take(k) {
                let amount = step.min(x[from]);
                if from == to || amount == 0 {
                    continue;
                }
                x[from] -= amount;
                x[to] += amount;
                let value = objective.evaluate(&x, &mut scratch);
                tracker.count(1);
                x[from] += amount;
                x[to] -= amount;
                if value < best && best_move.map_or(true, |m| value < m.3) {
                    best_move = Some((from, to, amount, value));
                }
            }
        }
        match best_move {
            Some((from, to, amount, value)) => {
                x[from] -= amount;
                x[to] += amount;
                best = objective.evaluate(&x, &mut per_node);
                debug_assert!((best - value).abs() <= 1e-12 * value.abs().max(1.0));
                tracker.count(1);
                tracker.offer(&x, best);
            }
            None if step > 1 => step /= 2,
            None => break,
        }
    }
    tracker.finish("refine", converged)
}
