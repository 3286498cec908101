//! Sequential references shared by the runtime's integration tests and the MPI check driver
//! (`src/bin/mpi_check.rs` includes this file by path), so both backends are checked against
//! one definition.

use mheta_runtime::comm::ReduceOp;

/// Rank `r`'s `n` values: distinct per rank and position, exactly representable.
pub fn data(r: usize, n: usize) -> Vec<f64> {
    (0..n).map(|i| (r * 100 + i) as f64 * 0.5 - 7.0).collect()
}

/// The reduction of every rank's [`data`] under `op`, folded in rank order.
pub fn fold(p: usize, n: usize, op: ReduceOp) -> Vec<f64> {
    let mut acc = data(0, n);
    for r in 1..p {
        for (a, b) in acc.iter_mut().zip(data(r, n)) {
            *a = match op {
                ReduceOp::Sum => *a + b,
                ReduceOp::Prod => *a * b,
                ReduceOp::Min => a.min(b),
                ReduceOp::Max => a.max(b),
            };
        }
    }
    acc
}

/// Initial value of row `i` of the 1-D heat problem.
pub fn initial(i: usize) -> f64 {
    ((i * 37 % 11) as f64) * 0.25
}

/// One explicit heat step of a row from its neighbours.
pub fn step(left: f64, mid: f64, right: f64) -> f64 {
    mid + 0.25 * (left - 2.0 * mid + right)
}

/// The sequential heat reference: the field and the residual of the last iteration.
pub fn sequential(rows: usize, iterations: u32) -> (Vec<f64>, f64) {
    let mut u: Vec<f64> = (0..rows).map(initial).collect();
    let mut residual = 0.0;
    for _ in 0..iterations {
        let new: Vec<f64> = (0..u.len())
            .map(|i| {
                let left = if i == 0 { 0.0 } else { u[i - 1] };
                let right = if i + 1 == u.len() { 0.0 } else { u[i + 1] };
                step(left, u[i], right)
            })
            .collect();
        residual = new
            .iter()
            .zip(&u)
            .map(|(a, b)| (a - b).abs())
            .fold(0.0, f64::max);
        u = new;
    }
    (u, residual)
}
