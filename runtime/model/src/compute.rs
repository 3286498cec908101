//! Computation and I/O of stages (seed §5.3.1): `T_φ'`, `T_γ` and `T_τ`.

use super::out_of_core::{self, ArrayCost, IoMode, NodeMemory, OocState, PieceCosts};

/// One stage, compiled.
#[derive(Debug, Clone)]
pub(crate) struct StageCost {
    /// Distributed stages scale with the node's rows; replicated ones are constant.
    pub distributed: bool,
    /// Per node, per pass of the stage's section: seconds per row (distributed) or seconds
    /// (replicated), already adjusted to the target cluster's CPU power.
    pub rate: Vec<f64>,
    /// Per placement the kept runs (`--keep-in-core`) measured on some node, its mask (as
    /// `OocState::mask`: 0 when all arrays are in core, else the arrays out of core) and every
    /// node's computation with that placement (see `build::kept_costs`); already CPU-adjusted.
    /// Such a computation includes the memory copies of in-core block writes. A placement not
    /// listed computes at `rate`, the forced run's.
    pub kept: Vec<(u64, Vec<InCore>)>,
    /// The out-of-core capable arrays this stage reads or writes.
    pub io: Vec<StageIo>,
}

/// In-core samples closer than this ratio in rows are pooled into one (`build::spread_samples`):
/// the slope between close samples is mostly noise.
pub(crate) const SAMPLE_SPREAD: f64 = 1.2;

/// A stage's computation on one node holding all its arrays in core.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum InCore {
    /// Seconds per row (distributed stage) or seconds (replicated), as `StageCost::rate`.
    Rate(f64),
    /// Measured `(rows, seconds)`: rows > 0, increasing by at least 20 %, seconds rising with
    /// them (distributed stages only; see `build::spread_samples`). One sample scales in
    /// proportion to the rows. With more, the seconds are piecewise linear in the rows between
    /// them: a fixed cost per pass shows as a line above proportion, caches falling behind as
    /// one below. Below the first sample the first segment goes on, never under proportion to
    /// that sample (once the data fits the caches, per-row cost stops falling). Above the last
    /// one the cost grows by the last segment's slope or the last sample's per-row cost,
    /// whichever is more: unmeasured row counts are never predicted cheaper than the nearest
    /// measured per-row cost, so the search does not chase a slope made by noise.
    Samples(Vec<(f64, f64)>),
}

impl InCore {
    /// Seconds for `rows` rows (a distributed stage) or per pass (a replicated one).
    pub fn seconds(&self, rows: u64, distributed: bool) -> f64 {
        let x = rows as f64;
        match self {
            InCore::Rate(r) if distributed => r * x,
            InCore::Rate(r) => *r,
            InCore::Samples(points) => match points.as_slice() {
                [] => 0.0,
                [(r0, t0)] => t0 / r0 * x,
                [(r0, t0), .., (rn, tn)] => {
                    if x > *rn {
                        let (ra, ta) = points[points.len() - 2];
                        let slope = ((tn - ta) / (rn - ra)).max(tn / rn);
                        return tn + slope * (x - rn);
                    }
                    let i = points
                        .partition_point(|&(r, _)| r <= x)
                        .clamp(1, points.len() - 1);
                    let ((ra, ta), (rb, tb)) = (points[i - 1], points[i]);
                    let line = ta + (tb - ta) * (x - ra) / (rb - ra);
                    if x < *r0 {
                        line.max(t0 / r0 * x)
                    } else {
                        line
                    }
                }
            },
        }
    }
}

/// How one stage accesses one array when that array is out of core.
#[derive(Debug, Clone)]
pub(crate) struct StageIo {
    pub array: usize,
    pub mode: IoMode,
    /// `f_r(m)`, `f_w(m)`: shares of the local array read and written per pass, in `[0, 1]`
    /// (see `out_of_core::t_psi`).
    pub read: f64,
    pub write: f64,
    /// Fraction of the stage's computation that overlaps a prefetch (`T_A` per piece is this
    /// fraction of the computation on one piece).
    pub overlap: f64,
}

/// Computation and I/O seconds of a group of stages on one node.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Tau {
    pub compute_s: f64,
    pub io_s: f64,
}

impl Tau {
    pub fn total(&self) -> f64 {
        self.compute_s + self.io_s
    }
}

impl StageCost {
    /// The computation kept runs measured for `node` with the placement `state`, if any.
    fn kept(&self, node: usize, state: &OocState) -> Option<&InCore> {
        let (_, costs) = self.kept.iter().find(|(mask, _)| *mask == state.mask)?;
        Some(&costs[node])
    }

    /// `(T_φ)' = T_φ · W'/W` (§5.3.1) for a distributed stage (the rate is `T_φ / W`),
    /// `T_φ` for a replicated one, at the rate measured with the node's placement `state` when
    /// a kept run measured it, else at the forced run's (every array out of core).
    fn t_phi(&self, kept: Option<&InCore>, node: usize, rows: u64) -> f64 {
        match kept {
            Some(cost) => cost.seconds(rows, self.distributed),
            None if self.distributed => self.rate[node] * rows as f64,
            None => self.rate[node],
        }
    }

    /// `T_γ = T_φ' + Σ_{m∈β} T_ψ(m)` (§5.3.1), plus the memory copies of block writes to the
    /// arrays not in β (in-core writes; not in the seed, whose in-core arrays were not written
    /// through its I/O layer).
    pub fn t_gamma(
        &self,
        arrays: &[ArrayCost],
        memory: &NodeMemory,
        node: usize,
        state: &OocState,
    ) -> Tau {
        let in_core = state.in_core();
        let kept = self.kept(node, state);
        let t_phi = self.t_phi(kept, node, state.rows);
        let mut compute_s = t_phi;
        for io in &self.io {
            // A computation measured with this placement includes them already.
            if !state.is_out_of_core(io.array) && kept.is_none() {
                // An in-core array's block writes are memory copies, CPU work (the
                // instrumented run, with every array out of core, wrote to disk instead).
                let bytes = io.write * state.rows as f64 * arrays[io.array].bytes_per_row;
                compute_s += bytes * memory.copy_per_byte;
            }
        }
        let mut io_s = 0.0;
        if !in_core {
            let n_l = state.n_l as f64;
            for io in &self.io {
                if !state.is_out_of_core(io.array) {
                    continue;
                }
                // M_ι(m) = M_β(m) / N_L(m), bytes (see `out_of_core::t_psi`).
                let m_iota = state.rows as f64 * arrays[io.array].bytes_per_row / n_l;
                let costs = PieceCosts {
                    n_l,
                    o_r: memory.o_r,
                    o_w: memory.o_w,
                    o_a: if io.mode == IoMode::Sync {
                        0.0
                    } else {
                        memory.o_a
                    },
                    t_r: memory.read_per_byte[io.array] * m_iota,
                    t_w: memory.write_per_byte[io.array] * m_iota,
                    t_a: io.overlap * t_phi / n_l,
                };
                io_s += out_of_core::t_psi(io.mode, io.read, io.write, &costs);
            }
        }
        Tau { compute_s, io_s }
    }
}

/// `T_τ = Σ_{k=1}^{N_γ} T_γ(k)` (§5.3.1): a node's computation and I/O in a group of stages.
pub(crate) fn section_tau(
    stages: &[StageCost],
    arrays: &[ArrayCost],
    memory: &NodeMemory,
    node: usize,
    state: &OocState,
) -> Tau {
    let mut tau = Tau::default();
    for s in stages {
        let g = s.t_gamma(arrays, memory, node, state);
        tau.compute_s += g.compute_s;
        tau.io_s += g.io_s;
    }
    tau
}
