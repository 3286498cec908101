//! Generalized Binary Search, exactly as seed Fig. 4.2 (optimal when every `f_i` is monotone
//! non-decreasing, Theorem 4):
//!
//! ```text
//!  1: Randomly choose an x ∈ V where Σ x_i = S.
//!  2: Sort the components of f(x) into decreasing order and relabel the indices.
//!  3: Let j = P − 1.
//!  4: while j > 0 do
//!  5:   if f_j(x_j + 1) < f_0(x_0) then
//!  6-10:  bisect the transfer between x_0 and x_j (below)
//! 11:     Sort the components of f(x) into decreasing order and relabel the indices.
//! 12:     Let j = P − 1.
//! 13:   else
//! 14:     Set j = j − 1.
//! ```
//!
//! Lines 6–10 bisect the number of rows moved from the largest component x_0 to x_j until
//! neither overshoots; here that bisection is a binary search for the transfer Δ ∈ [1, x_0]
//! minimising `max(f_0(x_0 − Δ), f_j(x_j + Δ))` (the point where the two monotone curves
//! cross), which is what the seed's halving loop converges to. The loop also stops, as the
//! proof of Theorem 3 allows, after P + 1 consecutive moves that do not lower the maximum (the
//! optimum is then reached), or when the budget runs out.

use super::{start_vector, NodeCosts, Rng, SearchConfig, SearchResult, Tracker};

/// Runs GBS on per-node costs.
pub fn gbs<C: NodeCosts + ?Sized>(costs: &C, config: &SearchConfig) -> SearchResult {
    let p = costs.nodes();
    let mut tracker = Tracker::new(config.budget);
    let mut rng = Rng::new(config.seed);
    let mut x = start_vector(config, p, costs.total_rows(), &mut rng);
    let mut f: Vec<f64> = (0..p).map(|i| costs.cost(i, x[i])).collect();
    tracker.count(p as u64);
    let mut order: Vec<usize> = (0..p).collect();
    let sort = |order: &mut Vec<usize>, f: &[f64]| {
        order.sort_by(|&a, &b| f[b].total_cmp(&f[a]).then(a.cmp(&b)))
    };
    sort(&mut order, &f);
    tracker.offer(&x, f[order[0]]);
    let mut stale_moves = 0;
    let mut j = p.saturating_sub(1);
    let mut converged = true;
    while j > 0 {
        if tracker.out_of_time() {
            converged = false;
            break;
        }
        let (top, cand) = (order[0], order[j]);
        tracker.count(1);
        if x[top] > 0 && costs.cost(cand, x[cand] + 1) < f[top] {
            let (delta, f_top, f_cand, evals) = balance(costs, top, x[top], cand, x[cand]);
            tracker.count(evals);
            x[top] -= delta;
            x[cand] += delta;
            f[top] = f_top;
            f[cand] = f_cand;
            sort(&mut order, &f);
            if tracker.offer(&x, f[order[0]]) {
                stale_moves = 0;
            } else {
                stale_moves += 1;
                if stale_moves > p + 1 {
                    break;
                }
            }
            j = p - 1;
        } else {
            j -= 1;
        }
    }
    tracker.finish("gbs", converged)
}

/// The transfer Δ ∈ [1, x_from] from node `from` to node `to` minimising
/// `max(f_from(x_from − Δ), f_to(x_to + Δ))`, by binary search on the crossing of the two
/// monotone curves. Returns Δ, the two new costs and the number of evaluations.
pub(crate) fn balance<C: NodeCosts + ?Sized>(
    costs: &C,
    from: usize,
    x_from: u64,
    to: usize,
    x_to: u64,
) -> (u64, f64, f64, u64) {
    let pair = |d: u64| (costs.cost(from, x_from - d), costs.cost(to, x_to + d));
    let mut evals = 0;
    // Smallest Δ in [1, x_from] with f_to(x_to + Δ) ≥ f_from(x_from − Δ), or x_from + 1 if none.
    let (mut lo, mut hi) = (1, x_from + 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let (a, b) = pair(mid);
        evals += 2;
        if b >= a {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    let mut best = (0, f64::INFINITY, 0.0, 0.0);
    for d in [lo.saturating_sub(1), lo] {
        if d == 0 || d > x_from {
            continue;
        }
        let (a, b) = pair(d);
        evals += 2;
        let m = a.max(b);
        if m < best.1 || (m == best.1 && d > best.0) {
            best = (d, m, a, b);
        }
    }
    (best.0, best.2, best.3, evals)
}
