//! `exact` (DESIGN §7, beyond the seed): binary search on the target time T. For a given T,
//! each node's largest row count with `f_i(x_i) ≤ T` is found by binary search; T is feasible
//! when those counts add up to at least S. The smallest feasible T is the optimum of
//! `min_x max_i f_i(x_i)` for monotone non-decreasing `f_i` (as in Lemma 1, no distribution can
//! do better than a T whose capacities fall short of S).
//!
//! T is bisected over the *ordered bit patterns* of f64, so at most 64 steps reach two adjacent
//! floats: the result is exactly optimal, not optimal to a tolerance. Each node keeps a bracket
//! of its row count from the last feasible and infeasible T (counts are monotone in T), so the
//! per-node searches shrink as T converges: O(P · (log S + 64)) evaluations in all.

use super::{NodeCosts, SearchConfig, SearchResult, Tracker};
use mheta_runtime::distribution::Distribution;

/// Runs `exact` on per-node costs.
pub fn exact<C: NodeCosts + ?Sized>(costs: &C, config: &SearchConfig) -> SearchResult {
    let p = costs.nodes();
    let s = costs.total_rows();
    let mut tracker = Tracker::new(config.budget);
    let block = Distribution::block(s, p.max(1))
        .map(|d| d.rows)
        .unwrap_or_default();
    let t_block = costs.max_cost(&block);
    tracker.count(p as u64);
    tracker.offer(&block, t_block);
    if p == 0 {
        return tracker.finish("exact", true);
    }
    // Brackets: lo[i] = x_i(T_lo) (−1: none), hi[i] = x_i(T_hi), for T_lo infeasible < T_hi feasible.
    let mut lo_x: Vec<i64> = vec![-1; p];
    let mut hi_x: Vec<i64> = vec![s as i64; p];
    let t_floor = (0..p)
        .map(|i| costs.cost(i, 0))
        .fold(f64::NEG_INFINITY, f64::max);
    tracker.count(p as u64);
    let mut cand = vec![0i64; p];
    let mut evals = 0u64;
    let feasible =
        |t: f64, lo_x: &[i64], hi_x: &[i64], cand: &mut [i64], evals: &mut u64| -> bool {
            let mut sum: i64 = 0;
            let mut every_node_fits = true;
            for i in 0..p {
                // Largest x in [lo_x, hi_x] with f_i(x) ≤ t (lo_x itself satisfies it or is −1).
                let (mut a, mut b) = (lo_x[i], hi_x[i]);
                while a < b {
                    let mid = a + (b - a + 1) / 2;
                    *evals += 1;
                    if costs.cost(i, mid as u64) <= t {
                        a = mid;
                    } else {
                        b = mid - 1;
                    }
                }
                cand[i] = a;
                every_node_fits &= a >= 0;
                sum += a.max(0);
            }
            every_node_fits && sum >= s as i64
        };
    let (mut t_lo, mut t_hi);
    if feasible(t_floor, &lo_x, &hi_x, &mut cand, &mut evals) {
        t_hi = t_floor;
        hi_x.copy_from_slice(&cand);
        t_lo = t_floor; // Nothing below max_i f_i(0) can be feasible.
    } else {
        t_lo = t_floor;
        // The block distribution is feasible at its own maximum.
        t_hi = t_block;
        if !feasible(t_hi, &lo_x, &hi_x, &mut cand, &mut evals) {
            // Only possible for non-monotone f_i: fall back to the block distribution.
            tracker.count(evals);
            return tracker.finish("exact", true);
        }
        hi_x.copy_from_slice(&cand);
        // Remember x_i(T_lo) for the nodes that have one.
        let _ = feasible(t_lo, &lo_x, &hi_x, &mut cand, &mut evals);
        lo_x.copy_from_slice(&cand);
    }
    let mut converged = true;
    while order_key(t_hi) - order_key(t_lo) > 1 {
        if tracker.out_of_time() {
            converged = false;
            break;
        }
        let t = from_order_key(order_key(t_lo) + (order_key(t_hi) - order_key(t_lo)) / 2);
        if feasible(t, &lo_x, &hi_x, &mut cand, &mut evals) {
            t_hi = t;
            hi_x.copy_from_slice(&cand);
        } else {
            t_lo = t;
            lo_x.copy_from_slice(&cand);
        }
    }
    tracker.count(evals);
    // Capacities at T_hi add up to at least S: give back the surplus, largest costs first.
    let mut x: Vec<u64> = hi_x.iter().map(|&v| v.max(0) as u64).collect();
    let mut surplus = x.iter().sum::<u64>() - s;
    let mut order: Vec<usize> = (0..p).collect();
    let f: Vec<f64> = (0..p).map(|i| costs.cost(i, x[i])).collect();
    order.sort_by(|&a, &b| f[b].total_cmp(&f[a]));
    for i in order {
        if surplus == 0 {
            break;
        }
        let floor = lo_x[i].max(0) as u64;
        let take = surplus.min(x[i].saturating_sub(floor));
        x[i] -= take;
        surplus -= take;
    }
    for xi in x.iter_mut() {
        let take = surplus.min(*xi);
        *xi -= take;
        surplus -= take;
    }
    let value = costs.max_cost(&x);
    tracker.count(2 * p as u64);
    tracker.offer(&x, value);
    tracker.finish("exact", converged)
}

/// Maps f64 to u64 so that the order of the floats is the order of the integers.
fn order_key(x: f64) -> u64 {
    let bits = x.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

fn from_order_key(k: u64) -> f64 {
    if k >> 63 == 1 {
        f64::from_bits(k & !(1 << 63))
    } else {
        f64::from_bits(!k)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_keys_are_monotone_and_invertible() {
        let xs = [-3.5, -0.0, 0.0, 1e-300, 0.5, 2.0, 1e10];
        for w in xs.windows(2) {
            assert!(order_key(w[0]) <= order_key(w[1]));
        }
        for x in xs {
            assert_eq!(from_order_key(order_key(x)), x);
        }
    }
}
