//! Simulated annealing (seed §4.3.4) with the seed's greedy transition: the node M with the
//! largest per-node value loses a random number of rows, which go to the other nodes in
//! proportion to `1 / F_i` (nodes with smaller values receive more). A worse vector is accepted
//! with the probability of Eq. 4.1, `e^p` with `p = (F(S) − F(S')) / (K_B · T)`. The temperature
//! drops geometrically every `nIters` transitions; when the best value has not dropped for
//! `nIters` transitions the search restarts from the current vector with `x_M ← 0` and its rows
//! reassigned the same way.

use super::{start_vector, Objective, Rng, SearchConfig, SearchResult, Tracker};
use mheta_runtime::distribution::largest_remainder;

/// Initial `K_B · T` as a fraction of the start vector's value.
const INITIAL_TEMPERATURE: f64 = 0.1;
/// Cooling factor applied every `nIters` transitions.
const COOLING: f64 = 0.98;
/// Once `K_B · T` falls below this fraction of the best value and a whole round changes
/// nothing, the system is frozen.
const FROZEN: f64 = 1e-6;

/// Runs SA on `objective`.
pub fn annealing<O: Objective + ?Sized>(objective: &mut O, config: &SearchConfig) -> SearchResult {
    let p = objective.nodes();
    let s = objective.total_rows();
    let mut tracker = Tracker::new(config.budget);
    let mut rng = Rng::new(config.seed);
    let mut x = start_vector(config, p, s, &mut rng);
    let mut f_node = vec![0.0; p];
    let mut f = objective.evaluate(&x, &mut f_node);
    tracker.count(1);
    tracker.offer(&x, f);
    let n_iters = p.clamp(10, 200);
    let mut temperature = INITIAL_TEMPERATURE * f.abs().max(f64::MIN_POSITIVE);
    let (mut y, mut g_node, mut weights) = (vec![0u64; p], vec![0.0; p], vec![0.0; p]);
    let mut since_best = 0;
    if p < 2 {
        return tracker.finish("sa", true);
    }
    loop {
        let mut changed = false;
        for _ in 0..n_iters {
            if tracker.out_of_time() {
                return tracker.finish("sa", false);
            }
            let m = argmax(&f_node);
            if x[m] == 0 {
                break;
            }
            let amount = 1 + rng.below(x[m]);
            transition(&x, &f_node, m, amount, &mut y, &mut weights);
            let g = objective.evaluate(&y, &mut g_node);
            tracker.count(1);
            // Eq. 4.1: accept a worse vector with probability e^((F(S) − F(S')) / (K_B·T)).
            let accept = g < f || rng.unit() < ((f - g) / temperature).exp();
            if accept {
                changed |= g != f;
                std::mem::swap(&mut x, &mut y);
                std::mem::swap(&mut f_node, &mut g_node);
                f = g;
            }
            if tracker.offer(&x, f) {
                since_best = 0;
            } else {
                since_best += 1;
            }
            if since_best >= n_iters {
                // Restart: x_M ← 0, its rows reassigned to the others.
                let m = argmax(&f_node);
                let all = x[m];
                transition(&x, &f_node, m, all, &mut y, &mut weights);
                std::mem::swap(&mut x, &mut y);
                f = objective.evaluate(&x, &mut f_node);
                tracker.count(1);
                tracker.offer(&x, f);
                since_best = 0;
            }
        }
        temperature *= COOLING;
        if !changed && temperature < FROZEN * tracker.best().abs() {
            break;
        }
    }
    tracker.finish("sa", true)
}

fn argmax(v: &[f64]) -> usize {
    (0..v.len())
        .max_by(|&a, &b| v[a].total_cmp(&v[b]))
        .unwrap_or(0)
}

/// `y` = `x` with `amount` rows taken from node `m` and spread over the others ∝ `1 / F_i`.
fn transition(
    x: &[u64],
    f_node: &[f64],
    m: usize,
    amount: u64,
    y: &mut [u64],
    weights: &mut Vec<f64>,
) {
    let p = x.len();
    weights.clear();
    weights.extend(
        (0..p)
            .filter(|&i| i != m)
            .map(|i| 1.0 / f_node[i].max(1e-12)),
    );
    y.copy_from_slice(x);
    y[m] -= amount;
    let shares = largest_remainder(amount, weights);
    for (k, i) in (0..p).filter(|&i| i != m).enumerate() {
        y[i] += shares[k];
    }
}
