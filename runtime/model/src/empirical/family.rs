//! The model families of the seed's Table V (Ichikawa et al., `002_c8a418cc8cc4fee2.txt`) and
//! one derived for our fixtures: for each, the terms of the N-T, P-T and NP-T models, so that a
//! model is `coefficients · row` and fitting one is least squares over its rows.
//!
//! Logarithms are base 2 (another base only rescales the coefficient). `N` is the problem size
//! (for our programs the rows S of the distributed dimension), `P` the total number of
//! processes, `T_b(N)` the base N-T model the P-T model scales (see [`Family::pt_row`]).
//!
//! **`jacobi`, ours**, derived as the seed derives its Eq. (1) for HPL and Eq. (5) for Himeno:
//! our grid programs (the Jacobi fixtures) hold `N × C` values distributed by rows, `C` fixed
//! (the columns). One iteration is a sweep of each rank's `N/P` rows, `(1/P) · O(N)` (and, out
//! of core, the same rows moved through the disk, again `(1/P) · O(N)`); a halo exchange of
//! one row with each neighbour, `O(C) = O(1)`; and an all-reduce of the residual, which the
//! runtime's collectives do linearly (a reduce to rank 0, then a broadcast: `comm/collectives.rs`),
//! `P · O(1)`. So
//!
//! ```text
//! T(N, P) = (1/P) · O(N) + O(1) + P · O(1)                                   (ours)
//! N-T:  T(N)|P      = k0 N + k1
//! P-T:  T(N, P)     = (k0 / P) · T_b(N) + k1 + k2 P
//! NP-T: T(N, P)     = (1/P)(k0 N + k1) + k2 + k3 P
//! ```
//!
//! (Himeno's Eq. (5) has `log P` where ours has `P`: its all-reduce is a balanced tree.)
//!
//! **`cg`, ours**, for the CG fixture (NAS-CG-like, rows of a sparse matrix distributed by rows,
//! a bounded number of entries per row): one iteration is a mat-vec and vector updates over the
//! rank's `N/P` rows, `(1/P) · O(N)` (out of core, the matrix's rows through the disk, again
//! `(1/P) · O(N)`); an all-gather of the direction vector, in which every rank receives the
//! `N − N/P` values it does not hold, `O(N) + (1/P) · O(N)`, in `P − 1` messages, `P · O(1)`;
//! and three linear all-reduces, `P · O(1)`. So
//!
//! ```text
//! T(N, P) = (1/P) · O(N) + O(N) + O(1) + P · O(1)                            (cg)
//! N-T:  T(N)|P      = k0 N + k1
//! P-T:  T(N, P)     = (k0 / P) · T_b(N) + k1 T_b(N) + k2 + k3 P
//! NP-T: T(N, P)     = (1/P)(k0 N + k1) + k2 N + k3 + k4 P
//! ```
//!
//! **`pipeline`, ours**, for the rna fixture (a wavefront: `N` rows distributed, `C` columns
//! swept in tiles of `b`): a rank computes its `N/P` rows of a tile, then passes its last row's
//! `b` values to the next rank, so the last rank finishes after `C/b + P − 1` tile steps of
//! `(N/P) · b` cells and one message each: `(C/b + P − 1)((N/P) b c + m)`, which expands to
//! `(1/P) · O(N)` (the sweep), `O(N) − (1/P) · O(N)` (the `P − 1` steps of filling the pipeline),
//! `O(1)` and `P · O(1)` (messages). The same terms as `cg`:
//!
//! ```text
//! NP-T: T(N, P)     = (1/P)(k0 N + k1) + k2 N + k3 + k4 P                   (pipeline)
//! ```

use std::fmt;
use std::str::FromStr;

/// A family of N-T, P-T and NP-T models (one row of Table V, or ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Himeno (Table V): Jacobi iterations `(1/P) O(N³)`, exchanges `O(N²)`, all-reduce
    /// `log P · O(1)` (Eq. 5).
    Himeno,
    /// FEM (Table V): the same terms as Himeno (Eq. 6).
    Fem,
    /// HPL (Table V, Eq. 1): `(1/P) O(N³) + P · O(N²) + O(N²)`.
    Hpl,
    /// FFTE (Table V): `N log N`, `N`, `N^{1/3}` terms.
    Ffte,
    /// Ours, for row-distributed grids with a linear all-reduce (module documentation).
    Jacobi,
    /// Ours, for the CG fixture: the Jacobi terms plus the all-gather's `O(N)` (module
    /// documentation).
    Cg,
    /// Ours, for the rna fixture's wavefront: the terms of `cg`, from the pipeline's fill
    /// (module documentation).
    Pipeline,
}

impl Family {
    /// Every family, in the order they are listed.
    pub const ALL: [Family; 7] = [
        Family::Himeno,
        Family::Fem,
        Family::Hpl,
        Family::Ffte,
        Family::Jacobi,
        Family::Cg,
        Family::Pipeline,
    ];

    /// The name `--family` takes.
    pub fn name(self) -> &'static str {
        match self {
            Family::Himeno => "himeno",
            Family::Fem => "fem",
            Family::Hpl => "hpl",
            Family::Ffte => "ffte",
            Family::Jacobi => "jacobi",
            Family::Cg => "cg",
            Family::Pipeline => "pipeline",
        }
    }

    /// The N-T model's terms at size `n`: `T_i(N)|_{P,M_i} = k · row`.
    pub fn nt_row(self, n: f64) -> Vec<f64> {
        match self {
            Family::Himeno | Family::Fem | Family::Hpl => vec![n * n * n, n * n, n, 1.0],
            Family::Ffte => vec![n * n.log2(), n, n.cbrt(), 1.0],
            Family::Jacobi | Family::Cg | Family::Pipeline => vec![n, 1.0],
        }
    }

    /// The names of the N-T terms, as `nt_row` orders them.
    pub fn nt_terms(self) -> &'static [&'static str] {
        match self {
            Family::Himeno | Family::Fem | Family::Hpl => &["N^3", "N^2", "N", "1"],
            Family::Ffte => &["N log N", "N", "N^(1/3)", "1"],
            Family::Jacobi | Family::Cg | Family::Pipeline => &["N", "1"],
        }
    }

    /// The P-T model's terms for `p` processes, where `base` is `T_i(N)|_{P,M_i}` of Table V.
    /// The seed integrates the N-T models of one group and `M_i` into this model; we read
    /// Table V's `T_i(N)|_{P,M_i}` as the N-T model of the group's single-node configuration
    /// (`P = M_i`, the case the seed leaves to N-T models) evaluated at N, and fit the P-T
    /// coefficients to the N-T models of the larger configurations (`P > M_i`) at their
    /// measured sizes.
    pub fn pt_row(self, base: f64, p: f64) -> Vec<f64> {
        match self {
            Family::Himeno | Family::Fem => vec![base / p, 1.0, p.log2()],
            Family::Hpl => vec![p * base, base / p, 1.0],
            Family::Ffte => vec![base / p, p * base, 1.0],
            Family::Jacobi => vec![base / p, 1.0, p],
            Family::Cg | Family::Pipeline => vec![base / p, base, 1.0, p],
        }
    }

    /// The names of the P-T terms (`T` is the base N-T model).
    pub fn pt_terms(self) -> &'static [&'static str] {
        match self {
            Family::Himeno | Family::Fem => &["T/P", "1", "log P"],
            Family::Hpl => &["P T", "T/P", "1"],
            Family::Ffte => &["T/P", "P T", "1"],
            Family::Jacobi => &["T/P", "1", "P"],
            Family::Cg | Family::Pipeline => &["T/P", "T", "1", "P"],
        }
    }

    /// The NP-T model's terms at size `n` and `p` processes (Table V; Eq. 4 for HPL).
    pub fn npt_row(self, n: f64, p: f64) -> Vec<f64> {
        let q = 1.0 / p;
        match self {
            Family::Himeno | Family::Fem => {
                vec![q * n * n * n, q * n * n, q * n, q, n * n, n, 1.0, p.log2()]
            }
            Family::Hpl => vec![
                q * n * n * n,
                q * n * n,
                q * n,
                q,
                p * n * n,
                p * n,
                p,
                n * n,
                n,
                1.0,
            ],
            Family::Ffte => vec![q * n * n.log2(), q * n, q, p, n, n.cbrt(), 1.0],
            Family::Jacobi => vec![q * n, q, 1.0, p],
            Family::Cg | Family::Pipeline => vec![q * n, q, n, 1.0, p],
        }
    }

    /// The names of the NP-T terms.
    pub fn npt_terms(self) -> &'static [&'static str] {
        match self {
            Family::Himeno | Family::Fem => {
                &["N^3/P", "N^2/P", "N/P", "1/P", "N^2", "N", "1", "log P"]
            }
            Family::Hpl => &[
                "N^3/P", "N^2/P", "N/P", "1/P", "P N^2", "P N", "P", "N^2", "N", "1",
            ],
            Family::Ffte => &["N log N/P", "N/P", "1/P", "P", "N", "N^(1/3)", "1"],
            Family::Jacobi => &["N/P", "1/P", "1", "P"],
            Family::Cg | Family::Pipeline => &["N/P", "1/P", "N", "1", "P"],
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A name that is no family.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown model family `{0}` (expected himeno, fem, hpl, ffte, jacobi, cg or pipeline)")]
pub struct UnknownFamily(pub String);

impl FromStr for Family {
    type Err = UnknownFamily;

    fn from_str(s: &str) -> Result<Family, UnknownFamily> {
        Family::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| UnknownFamily(s.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every family's rows at N = 8, P = 4 (log₂ 8 = 3, log₂ 4 = 2, ∛8 = 2), computed by hand.
    #[test]
    fn table_v_rows_by_hand() {
        let (n, p) = (8.0, 4.0);
        assert_eq!(Family::Himeno.nt_row(n), [512.0, 64.0, 8.0, 1.0]);
        assert_eq!(Family::Ffte.nt_row(n), [24.0, 8.0, 2.0, 1.0]);
        assert_eq!(Family::Jacobi.nt_row(n), [8.0, 1.0]);
        // Himeno/FEM NP-T: (1/P)(N³, N², N, 1), N², N, 1, log P.
        let himeno = [128.0, 16.0, 2.0, 0.25, 64.0, 8.0, 1.0, 2.0];
        assert_eq!(Family::Himeno.npt_row(n, p), himeno);
        assert_eq!(Family::Fem.npt_row(n, p), himeno);
        // HPL NP-T (Eq. 4): (1/P)(N³, N², N, 1), P(N², N, 1), N², N, 1.
        assert_eq!(
            Family::Hpl.npt_row(n, p),
            [128.0, 16.0, 2.0, 0.25, 256.0, 32.0, 4.0, 64.0, 8.0, 1.0]
        );
        // FFTE NP-T: (1/P)(N log N, N, 1), P, N, N^(1/3), 1.
        assert_eq!(
            Family::Ffte.npt_row(n, p),
            [6.0, 2.0, 0.25, 4.0, 8.0, 2.0, 1.0]
        );
        assert_eq!(Family::Jacobi.npt_row(n, p), [2.0, 0.25, 1.0, 4.0]);
        // CG NP-T: (1/P)(N, 1), N, 1, P.
        assert_eq!(Family::Cg.npt_row(n, p), [2.0, 0.25, 8.0, 1.0, 4.0]);
        assert_eq!(Family::Cg.nt_row(n), [8.0, 1.0]);
        assert_eq!(Family::Pipeline.npt_row(n, p), Family::Cg.npt_row(n, p));
        // P-T with a base time of 10 s.
        assert_eq!(Family::Himeno.pt_row(10.0, p), [2.5, 1.0, 2.0]);
        assert_eq!(Family::Hpl.pt_row(10.0, p), [40.0, 2.5, 1.0]);
        assert_eq!(Family::Ffte.pt_row(10.0, p), [2.5, 40.0, 1.0]);
        assert_eq!(Family::Jacobi.pt_row(10.0, p), [2.5, 1.0, 4.0]);
        assert_eq!(Family::Cg.pt_row(10.0, p), [2.5, 10.0, 1.0, 4.0]);
    }

    #[test]
    fn terms_name_every_column_and_names_parse() {
        for f in Family::ALL {
            assert_eq!(f.nt_terms().len(), f.nt_row(8.0).len(), "{f}");
            assert_eq!(f.pt_terms().len(), f.pt_row(1.0, 2.0).len(), "{f}");
            assert_eq!(f.npt_terms().len(), f.npt_row(8.0, 2.0).len(), "{f}");
            assert_eq!(f.name().parse::<Family>(), Ok(f));
        }
        assert_eq!(Family::Hpl.npt_row(8.0, 2.0).len(), 10);
        assert!("linpack"
            .parse::<Family>()
            .unwrap_err()
            .to_string()
            .contains("hpl"));
    }
}
