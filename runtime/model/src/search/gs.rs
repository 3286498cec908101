//! Greedy Search (seed §4.3.2): one scan finds the components with the largest and smallest
//! f-values, x_u and x_d; rows move from u to d (the transfer that best balances the two, as in
//! GBS) as long as that lowers `f_u`. It is fast but, not comparing every pair of nodes, it can
//! stop in a local optimum: when moving even one row to d would raise `f_d` to `f_u` or above,
//! it stops although moving rows to a third node a might still help (the seed's
//! counter-example, tested in `search::tests`).

use super::gbs::balance;
use super::{start_vector, NodeCosts, Rng, SearchConfig, SearchResult, Tracker};

/// Runs GS on per-node costs.
pub fn greedy<C: NodeCosts + ?Sized>(costs: &C, config: &SearchConfig) -> SearchResult {
    let p = costs.nodes();
    let mut tracker = Tracker::new(config.budget);
    let mut rng = Rng::new(config.seed);
    let mut x = start_vector(config, p, costs.total_rows(), &mut rng);
    let mut f: Vec<f64> = (0..p).map(|i| costs.cost(i, x[i])).collect();
    tracker.count(p as u64);
    let mut converged = true;
    loop {
        let (mut u, mut d) = (0, 0);
        for i in 1..p {
            if f[i] > f[u] {
                u = i;
            }
            if f[i] < f[d] {
                d = i;
            }
        }
        tracker.offer(&x, f[u]);
        if tracker.out_of_time() {
            converged = false;
            break;
        }
        if u == d || x[u] == 0 {
            break;
        }
        let (delta, f_u, f_d, evals) = balance(costs, u, x[u], d, x[d]);
        tracker.count(evals);
        if f_u.max(f_d) >= f[u] {
            break;
        }
        x[u] -= delta;
        x[d] += delta;
        f[u] = f_u;
        f[d] = f_d;
    }
    tracker.finish("gs", converged)
}
