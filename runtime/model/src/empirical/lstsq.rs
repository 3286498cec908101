//! Least squares: ordinary (`ols`) and non-negative (`nnls`, Lawson and Hanson's active-set
//! algorithm, *Solving Least Squares Problems*, 1974, Ch. 23), over a dense design matrix given
//! row by row.
//!
//! Written here rather than taken from a crate: the `nnls` crate builds on ndarray, a large
//! dependency for the few hundred-by-ten systems the empirical models solve, and the algorithm
//! is short. Both solvers scale every column to a largest magnitude of 1 before solving (the
//! design's columns range from 1 to N³ ≈ 10¹¹) and scale the solution back; a positive
//! scaling leaves the sign constraints of NNLS as they were.

/// A least-squares system that has no unique solution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LstsqError {
    /// Fewer equations than unknowns.
    #[error("{rows} equations for {columns} unknowns: need at least {columns}")]
    Underdetermined {
        /// Equations (measured runs).
        rows: usize,
        /// Unknowns (coefficients).
        columns: usize,
    },
    /// A column is (numerically) a combination of the others on these rows.
    #[error("term {column} is a linear combination of the others on the runs given")]
    Dependent {
        /// Index of the first such column.
        column: usize,
    },
    /// A value in the design or the right-hand side is not finite.
    #[error("a value of the system is not finite")]
    NonFinite,
    /// The rows are not all as long as the first.
    #[error("row {row} has {len} terms, expected {columns}")]
    Ragged {
        /// The row.
        row: usize,
        /// Its length.
        len: usize,
        /// The first row's length.
        columns: usize,
    },
}

/// Relative size under which a triangular factor's diagonal counts as zero.
const RANK_TOL: f64 = 1e-10;

/// The x minimising ‖Ax − b‖₂, A given as `rows` (each of the same length). Fails when there
/// are fewer rows than columns or a column depends on the others.
pub fn ols(rows: &[Vec<f64>], b: &[f64]) -> Result<Vec<f64>, LstsqError> {
    let system = Scaled::new(rows, b)?;
    if system.m < system.n {
        return Err(LstsqError::Underdetermined {
            rows: system.m,
            columns: system.n,
        });
    }
    let all: Vec<usize> = (0..system.n).collect();
    let z = solve_subset(&system, &all).map_err(|column| LstsqError::Dependent { column })?;
    Ok(system.unscale(&z))
}

/// The x ≥ 0 minimising ‖Ax − b‖₂ (Lawson–Hanson). A column that is never needed stays 0, so
/// fewer rows than columns and dependent columns are no error as long as the active columns
/// are independent (they are, in exact arithmetic, by the algorithm's choice of column).
pub fn nnls(rows: &[Vec<f64>], b: &[f64]) -> Result<Vec<f64>, LstsqError> {
    let s = Scaled::new(rows, b)?;
    let n = s.n;
    let mut x = vec![0.0; n];
    let mut passive = vec![false; n];
    let norm_b = s.b.iter().map(|v| v * v).sum::<f64>().sqrt();
    for _ in 0..3 * n + 3 {
        // Lawson and Hanson's tolerance on the dual vector w = Aᵀ(b − Ax), which is computed with
        // an error of about ε‖A‖(‖b‖ + ‖A‖‖x‖); ‖A‖ ≤ √m after scaling. Without the ‖x‖ term, a
        // fit that is exact with large coefficients (two nearly parallel columns) left w of
        // rounding size above the tolerance: a column entered on noise, and with more columns
        // than rows the solution fell apart.
        let norm_x = x.iter().map(|v| v * v).sum::<f64>().sqrt();
        let sqrt_m = (s.m as f64).sqrt();
        let tol = 10.0
            * f64::EPSILON
            * (s.m.max(n) as f64)
            * sqrt_m
            * (norm_b + sqrt_m * norm_x).max(1e-300);
        let w = s.gradient(&x);
        let entering = (0..n)
            .filter(|&j| !passive[j])
            .max_by(|&i, &j| w[i].total_cmp(&w[j]))
            .filter(|&j| w[j] > tol);
        let Some(t) = entering else { break };
        passive[t] = true;
        // Inner loop: step towards the unconstrained solution on the passive set until it is
        // positive, dropping the coefficients that reach zero on the way.
        loop {
            let set: Vec<usize> = (0..n).filter(|&j| passive[j]).collect();
            let z = match solve_subset(&s, &set) {
                Ok(z) => z,
                Err(column) => {
                    // Numerically dependent on the passive set: this column cannot help.
                    passive[column] = false;
                    x[column] = 0.0;
                    if column == t {
                        break;
                    }
                    continue;
                }
            };
            if set.iter().all(|&j| z[j] > 0.0) {
                x = z;
                break;
            }
            // The largest step that keeps x ≥ 0; the coefficient that limits it leaves.
            let (alpha, limit) = set
                .iter()
                .filter(|&&j| z[j] <= 0.0)
                .map(|&j| (x[j] / (x[j] - z[j]), j))
                .fold((f64::INFINITY, t), |a, b| if b.0 < a.0 { b } else { a });
            for &j in &set {
                x[j] += alpha * (z[j] - x[j]);
            }
            x[limit] = 0.0;
            for &j in &set {
                if x[j] <= 0.0 {
                    x[j] = 0.0;
                    passive[j] = false;
                }
            }
            if !passive.iter().any(|&p| p) {
                break;
            }
        }
    }
    Ok(s.unscale(&x))
}

/// The system with each column divided by its largest magnitude.
struct Scaled {
    m: usize,
    n: usize,
    /// Row-major, m × n.
    a: Vec<f64>,
    b: Vec<f64>,
    scale: Vec<f64>,
}

impl Scaled {
    fn new(rows: &[Vec<f64>], b: &[f64]) -> Result<Scaled, LstsqError> {
        let m = rows.len().min(b.len());
        let n = rows.first().map_or(0, Vec::len);
        let mut a = Vec::with_capacity(m * n);
        for (row, r) in rows.iter().take(m).enumerate() {
            if r.len() != n {
                return Err(LstsqError::Ragged {
                    row,
                    len: r.len(),
                    columns: n,
                });
            }
            a.extend_from_slice(r);
        }
        let b = b[..m].to_vec();
        if a.iter().chain(&b).any(|v| !v.is_finite()) {
            return Err(LstsqError::NonFinite);
        }
        let mut scale = vec![1.0; n];
        for (j, s) in scale.iter_mut().enumerate() {
            let largest = (0..m).map(|i| a[i * n + j].abs()).fold(0.0, f64::max);
            if largest > 0.0 {
                *s = largest;
                for i in 0..m {
                    a[i * n + j] /= largest;
                }
            }
        }
        Ok(Scaled { m, n, a, b, scale })
    }

    /// w = Aᵀ(b − Ax).
    fn gradient(&self, x: &[f64]) -> Vec<f64> {
        let (m, n) = (self.m, self.n);
        let residual: Vec<f64> = (0..m)
            .map(|i| self.b[i] - (0..n).map(|j| self.a[i * n + j] * x[j]).sum::<f64>())
            .collect();
        (0..n)
            .map(|j| (0..m).map(|i| self.a[i * n + j] * residual[i]).sum())
            .collect()
    }

    fn unscale(&self, z: &[f64]) -> Vec<f64> {
        z.iter().zip(&self.scale).map(|(v, s)| v / s).collect()
    }
}

/// The least-squares solution on the columns `set` (the others 0), by Householder QR; the
/// error is a column of `set` whose diagonal element vanishes (it depends on those before it).
fn solve_subset(s: &Scaled, set: &[usize]) -> Result<Vec<f64>, usize> {
    let (m, k) = (s.m, set.len());
    // Column-major copy of the chosen columns, and the right-hand side.
    let mut q: Vec<Vec<f64>> = set
        .iter()
        .map(|&j| (0..m).map(|i| s.a[i * s.n + j]).collect())
        .collect();
    let mut rhs = s.b.clone();
    let norms: Vec<f64> = q
        .iter()
        .map(|c| c.iter().map(|v| v * v).sum::<f64>().sqrt())
        .collect();
    let mut diag = vec![0.0; k];
    for c in 0..k {
        if c >= m {
            return Err(set[c]);
        }
        let alpha = q[c][c..].iter().map(|v| v * v).sum::<f64>().sqrt();
        if alpha <= RANK_TOL * norms[c].max(f64::MIN_POSITIVE) || alpha == 0.0 {
            return Err(set[c]);
        }
        let alpha = if q[c][c] > 0.0 { -alpha } else { alpha };
        // v = x − alpha e₁, H = I − 2vvᵀ/vᵀv.
        let mut v = q[c][c..].to_vec();
        v[0] -= alpha;
        let vv: f64 = v.iter().map(|t| t * t).sum();
        let reflect = |col: &mut [f64]| {
            let dot: f64 = v.iter().zip(col.iter()).map(|(a, b)| a * b).sum();
            let f = 2.0 * dot / vv;
            for (x, vi) in col.iter_mut().zip(&v) {
                *x -= f * vi;
            }
        };
        for col in q.iter_mut().skip(c + 1) {
            reflect(&mut col[c..]);
        }
        reflect(&mut rhs[c..]);
        diag[c] = alpha;
    }
    // Back substitution R z = Qᵀ b (first k rows).
    let mut z = vec![0.0; k];
    for c in (0..k).rev() {
        let mut sum = rhs[c];
        for (d, zd) in z.iter().enumerate().skip(c + 1) {
            sum -= q[d][c] * zd;
        }
        z[c] = sum / diag[c];
    }
    let mut full = vec![0.0; s.n];
    for (&j, v) in set.iter().zip(z) {
        full[j] = v;
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * a.abs().max(b.abs()) + 1e-12
    }

    #[test]
    fn ols_fits_an_exact_line_and_a_cubic() {
        // y = 2 + 3x at x = 0, 1, 2.
        let rows = vec![vec![1.0, 0.0], vec![1.0, 1.0], vec![1.0, 2.0]];
        let x = ols(&rows, &[2.0, 5.0, 8.0]).unwrap();
        assert!(close(x[0], 2.0) && close(x[1], 3.0), "{x:?}");
        // T = 1e-9 N³ + 2e-6 N² + 3e-4 N + 0.5 at N = 100 … 4000 (the columns span 1 to 6.4e10).
        let sizes = [100.0, 500.0, 1000.0, 2000.0, 4000.0];
        let rows: Vec<Vec<f64>> = sizes
            .iter()
            .map(|&n| vec![n * n * n, n * n, n, 1.0])
            .collect();
        let b: Vec<f64> = sizes
            .iter()
            .map(|&n| 1e-9 * n * n * n + 2e-6 * n * n + 3e-4 * n + 0.5)
            .collect();
        let x = ols(&rows, &b).unwrap();
        for (got, want) in x.iter().zip([1e-9, 2e-6, 3e-4, 0.5]) {
            assert!(close(*got, want), "{x:?}");
        }
    }

    #[test]
    fn ols_refuses_too_few_rows_and_dependent_columns() {
        let rows = vec![vec![1.0, 2.0]];
        assert_eq!(
            ols(&rows, &[1.0]),
            Err(LstsqError::Underdetermined {
                rows: 1,
                columns: 2
            })
        );
        // The second column is twice the first.
        let rows = vec![vec![1.0, 2.0], vec![2.0, 4.0], vec![3.0, 6.0]];
        assert_eq!(
            ols(&rows, &[1.0, 2.0, 3.0]),
            Err(LstsqError::Dependent { column: 1 })
        );
        assert_eq!(ols(&[vec![f64::NAN]], &[1.0]), Err(LstsqError::NonFinite));
    }

    /// A = [[1, 0], [1, 1], [1, 2]], b = [3, 1, 0]. Least squares: AᵀA = [[3, 3], [3, 5]],
    /// Aᵀb = [4, 1], so x = (17/6, −3/2): a negative slope. Under x ≥ 0 the slope is 0 and the
    /// intercept the mean of b, 4/3; the gradient w = Aᵀ(b − Ax) = (0, 1 − 4 = −3) ≤ 0 there.
    #[test]
    fn nnls_zeroes_the_coefficient_least_squares_makes_negative() {
        let rows = vec![vec![1.0, 0.0], vec![1.0, 1.0], vec![1.0, 2.0]];
        let b = [3.0, 1.0, 0.0];
        let x = ols(&rows, &b).unwrap();
        assert!(close(x[0], 17.0 / 6.0) && close(x[1], -1.5), "{x:?}");
        let x = nnls(&rows, &b).unwrap();
        assert!(close(x[0], 4.0 / 3.0) && x[1] == 0.0, "{x:?}");
        let w = gradient(&rows, &b, &x);
        assert!(close(w[0], 0.0) && close(w[1], -3.0), "{w:?}");
    }

    /// Three unknowns, the unconstrained solution negative in the middle one: A = I₃ stacked on
    /// [1, 1, 1], b = (1, −2, 3, 2). Least squares: AᵀA = I + J, Aᵀb = (3, 0, 5), so
    /// x = (I − J/4)(3, 0, 5) = (1, −2, 3). With x₂ = 0 the rest solve [[2, 1], [1, 2]] x =
    /// (3, 5): x = (1/3, 7/3), and w₂ = −2 − (1/3 + 7/3 − 2) · 1 = −2 − 2/3 < 0: optimal.
    #[test]
    fn nnls_matches_a_hand_solution_in_three_unknowns() {
        let rows = vec![
            vec![1.0, 0.0, 0.0],
            vec![0.0, 1.0, 0.0],
            vec![0.0, 0.0, 1.0],
            vec![1.0, 1.0, 1.0],
        ];
        let b = [1.0, -2.0, 3.0, 2.0];
        let x = ols(&rows, &b).unwrap();
        assert!(
            close(x[0], 1.0) && close(x[1], -2.0) && close(x[2], 3.0),
            "{x:?}"
        );
        let x = nnls(&rows, &b).unwrap();
        assert!(
            close(x[0], 1.0 / 3.0) && x[1] == 0.0 && close(x[2], 7.0 / 3.0),
            "{x:?}"
        );
        let w = gradient(&rows, &b, &x);
        assert!(close(w[0], 0.0) && close(w[2], 0.0), "{w:?}");
        assert!(close(w[1], -2.0 - 2.0 / 3.0), "{w:?}");
    }

    #[test]
    fn nnls_keeps_a_nonnegative_least_squares_solution() {
        let rows = vec![vec![1.0, 0.0], vec![1.0, 1.0], vec![1.0, 2.0]];
        let x = nnls(&rows, &[2.0, 5.0, 8.0]).unwrap();
        assert!(close(x[0], 2.0) && close(x[1], 3.0), "{x:?}");
        // All of b negative: x = 0.
        let x = nnls(&rows, &[-1.0, -1.0, -1.0]).unwrap();
        assert_eq!(x, [0.0, 0.0]);
    }

    /// Found by the property test below: columns 0 and 3 are nearly parallel, so b is fitted
    /// exactly with coefficients near 371 and 330. The dual vector's rounding (7e-13) was above
    /// the tolerance, column 2 entered on it, the three columns did not fit two rows, and the
    /// solver ended at x = (1.10, 0, 0, 0), where w₃ > 0.
    #[test]
    fn nnls_keeps_an_exact_fit_with_nearly_parallel_columns() {
        let rows = vec![
            vec![8.27128243408808, 0.0, 5.022733152018416, -9.274585780815729],
            vec![1.177305622292086, 0.0, 0.0, -1.3162818373878726],
        ];
        let b = [8.91667084880354, 2.5336934097472903];
        let x = nnls(&rows, &b).unwrap();
        assert!(
            x[0] > 300.0 && x[3] > 300.0 && x[1] == 0.0 && x[2] == 0.0,
            "{x:?}"
        );
        let w = gradient(&rows, &b, &x);
        assert!(w.iter().all(|v| v.abs() < 1e-6), "{w:?}");
    }

    /// w = Aᵀ(b − Ax) in the caller's units.
    pub(crate) fn gradient(rows: &[Vec<f64>], b: &[f64], x: &[f64]) -> Vec<f64> {
        let r: Vec<f64> = rows
            .iter()
            .zip(b)
            .map(|(row, bi)| bi - row.iter().zip(x).map(|(a, v)| a * v).sum::<f64>())
            .collect();
        (0..x.len())
            .map(|j| rows.iter().zip(&r).map(|(row, ri)| row[j] * ri).sum())
            .collect()
    }

    mod invariants {
        use super::{gradient, nnls};
        use proptest::prelude::*;

        proptest! {
            /// x ≥ 0; KKT: w ≤ 0 where x = 0 and w ≈ 0 where x > 0 (relative to ‖A‖‖b‖).
            #[test]
            fn nnls_satisfies_kkt(
                m in 1usize..8,
                n in 1usize..5,
                values in proptest::collection::vec(-10.0f64..10.0, 64),
                rhs in proptest::collection::vec(-10.0f64..10.0, 8),
            ) {
                let rows: Vec<Vec<f64>> = (0..m).map(|i| values[i * n..(i + 1) * n].to_vec()).collect();
                let b = &rhs[..m];
                let x = nnls(&rows, b).unwrap();
                prop_assert!(x.iter().all(|&v| v >= 0.0), "{x:?}");
                let w = gradient(&rows, b, &x);
                let scale = 1e-7 * (1.0 + values.iter().map(|v| v.abs()).fold(0.0, f64::max))
                    * (1.0 + b.iter().map(|v| v.abs()).sum::<f64>());
                for j in 0..n {
                    if x[j] > 0.0 {
                        prop_assert!(w[j].abs() <= scale, "w[{j}] = {} with x = {x:?}", w[j]);
                    } else {
                        prop_assert!(w[j] <= scale, "w[{j}] = {} with x = 0: {x:?}", w[j]);
                    }
                }
            }
        }
    }
}
