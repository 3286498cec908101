//! Genetic algorithm (seed §4.3.3). A candidate is encoded by the *index of the last row* of
//! every node (`e_i = x_0 + … + x_i`, so `e_{P−1} = S` always), which keeps the sum at S
//! through crossover; children whose indices are not non-decreasing are dropped. Each
//! generation keeps the two fittest members as parents and fills the rest of the population
//! with children made by multi-point crossover of the parents (two or more points), each
//! mutated with a small probability (one index moved at random between its neighbours).

use super::{start_vector, Objective, Rng, SearchConfig, SearchResult, Tracker};

/// Population size (the seed found 100 to work well, §6.3.1).
const POPULATION: usize = 100;
/// Mutation probability per child (the seed used 5%).
const MUTATION: f64 = 0.05;
/// Crossover points per child.
const CROSSOVER_POINTS: usize = 3;
/// Generations without improvement after which the population has converged.
const PATIENCE: usize = 1000;
/// Attempts to produce a valid child before falling back to a mutated parent.
const ATTEMPTS: usize = 8;

/// Runs the GA on `objective`.
pub fn genetic<O: Objective + ?Sized>(objective: &mut O, config: &SearchConfig) -> SearchResult {
    let p = objective.nodes();
    let s = objective.total_rows();
    let mut tracker = Tracker::new(config.budget);
    let mut rng = Rng::new(config.seed);
    let mut per_node = vec![0.0; p];
    let mut rows = vec![0u64; p];
    let mut population: Vec<(f64, Vec<u64>)> = Vec::with_capacity(POPULATION);
    let first = start_vector(config, p, s, &mut rng);
    for k in 0..POPULATION {
        let x = if k == 0 {
            first.clone()
        } else {
            rng.composition(s, p)
        };
        let ends = to_ends(&x);
        let value = objective.evaluate(&x, &mut per_node);
        tracker.count(1);
        tracker.offer(&x, value);
        population.push((value, ends));
    }
    let mut stale = 0;
    let mut converged = true;
    while stale < PATIENCE {
        if tracker.out_of_time() {
            converged = false;
            break;
        }
        population.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (pa, pb) = (population[0].1.clone(), population[1].1.clone());
        let before = tracker.best();
        for member in population.iter_mut().skip(2) {
            let mut child = crossover(&pa, &pb, &mut rng);
            if rng.unit() < MUTATION {
                mutate(&mut child, &mut rng);
            }
            from_ends(&child, &mut rows);
            member.0 = objective.evaluate(&rows, &mut per_node);
            member.1 = child;
            tracker.count(1);
            tracker.offer(&rows, member.0);
        }
        stale = if tracker.best() < before {
            0
        } else {
            stale + 1
        };
    }
    tracker.finish("ga", converged)
}

fn to_ends(x: &[u64]) -> Vec<u64> {
    x.iter()
        .scan(0u64, |acc, &r| {
            *acc += r;
            Some(*acc)
        })
        .collect()
}

fn from_ends(ends: &[u64], rows: &mut [u64]) {
    let mut previous = 0;
    for (r, &e) in rows.iter_mut().zip(ends) {
        *r = e - previous;
        previous = e;
    }
}

/// Multi-point crossover; retries until the child's indices are ordered (else drops it and
/// returns a mutated copy of the first parent).
fn crossover(a: &[u64], b: &[u64], rng: &mut Rng) -> Vec<u64> {
    let p = a.len();
    for _ in 0..ATTEMPTS {
        let mut points: Vec<usize> = (0..CROSSOVER_POINTS)
            .map(|_| rng.below(p as u64) as usize)
            .collect();
        points.sort_unstable();
        let mut child = Vec::with_capacity(p);
        let mut from_a = rng.below(2) == 0;
        let mut next = 0;
        for i in 0..p {
            while next < points.len() && points[next] == i {
                from_a = !from_a;
                next += 1;
            }
            child.push(if from_a { a[i] } else { b[i] });
        }
        if child.windows(2).all(|w| w[0] <= w[1]) {
            return child;
        }
    }
    let mut child = a.to_vec();
    mutate(&mut child, rng);
    child
}

/// Moves one last-row index (not the final one, which is always S) slightly: by a random amount
/// up to an eighth of the room between its neighbours (at least one row), staying between them.
fn mutate(ends: &mut [u64], rng: &mut Rng) {
    let p = ends.len();
    if p < 2 {
        return;
    }
    let i = rng.below(p as u64 - 1) as usize;
    let low = if i == 0 { 0 } else { ends[i - 1] };
    let high = ends[i + 1];
    let reach = ((high - low) / 8).max(1);
    let shift = 1 + rng.below(reach);
    ends[i] = if rng.below(2) == 0 {
        ends[i].saturating_sub(shift).max(low)
    } else {
        (ends[i] + shift).min(high)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips_and_operators_keep_order() {
        let x = vec![3, 0, 5, 2];
        let ends = to_ends(&x);
        assert_eq!(ends, vec![3, 3, 8, 10]);
        let mut back = vec![0; 4];
        from_ends(&ends, &mut back);
        assert_eq!(back, x);
        let mut rng = Rng::new(3);
        let other = to_ends(&[1, 6, 1, 2]);
        for _ in 0..200 {
            let mut child = crossover(&ends, &other, &mut rng);
            mutate(&mut child, &mut rng);
            assert!(child.windows(2).all(|w| w[0] <= w[1]));
            assert_eq!(*child.last().unwrap(), 10);
        }
    }
}
