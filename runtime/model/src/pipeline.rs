//! Pipelined tile loops (seed Eq. 5.4, 5.5, 5.10 and the `T_p` recurrence of §5.3.3).
//!
//! The pipeline runs from rank 0 to rank P−1. For every tile j, node i waits for the upstream
//! node's tile-j message, processes it, computes the tile and sends downstream:
//!
//! ```text
//! T_p(i, j)   = T_p(i, j−1) + T_w(i,q,j) + O_←(q)·[i > 0] + T_τ(i, j) + O_→(q)·[i < P−1]
//! T_w(i,q,j)  = max{0, T_p(i−1, j) + T_{(i−1)→i}(q) − T_p(i, j−1)}       (recurrence, §5.3.3)
//! T_w(0,q,j)  = 0                                                       (Eq. 5.4)
//! T_p(i, −1)  = the node's clock when the tile loop starts (§5.3.4)
//! ```
//!
//! and `T_Υ(i) = Σ_j [T_w(i,q,j) + O_←(q) or O_→(q)]` (Eq. 5.10). For two nodes the recurrence
//! unrolls to Eq. 5.5.
//!
//! The seed takes tiles as uniform (§5.1): `T_τ(i, j) = T_τ(i) / N_T`. Here tile `j`'s
//! computation is `T_τ(i)`'s computation times `w(i, j) / N_T`, where the weights `w(i, ·)`
//! (mean 1) are the shape of node `i`'s measured computation by tile position
//! ([`TileWeights`]); I/O stays uniform. The first tile of a pass can cost twice a later one
//! (its data cold after the wait that ended the last pass) and a last, narrower tile less;
//! uniform tiles spread that over the pass, which leaves the pipeline's fill, a run through
//! every node's first tile, too short.

use super::compute::{self, StageCost};
use super::out_of_core::{ArrayCost, NodeMemory, OocState};
use super::{Model, Prediction};

/// One tile loop, compiled.
#[derive(Debug, Clone)]
pub(crate) struct TileCost {
    /// Stages inside a tile; their rates are per pass of the section (all tiles together).
    pub stages: Vec<StageCost>,
    /// `N_T`: tiles per pass.
    pub tiles: u32,
    /// `O_→(q)` and `O_←(q)` per tile message, per node.
    pub o_send: Vec<f64>,
    pub o_recv: Vec<f64>,
    /// Bytes of one tile message.
    pub bytes: f64,
    /// Per node, the shape of its computation over the tiles of a pass.
    pub weights: Vec<TileWeights>,
}

/// The shape of one node's computation over the `N_T` tiles of a pass: weights with mean 1,
/// from the forced run (`forced`) and from the runs that kept the node in core (`in_core`).
/// An empty list means uniform tiles (no tile-by-tile measurement, or one of another length).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct TileWeights {
    pub forced: Vec<f64>,
    pub in_core: Vec<f64>,
}

impl TileWeights {
    /// Weights (mean 1) from seconds per tile position, or none when `seconds` does not hold
    /// `tiles` positive figures.
    pub fn shape(seconds: &[f64], tiles: u32) -> Vec<f64> {
        let total: f64 = seconds.iter().sum();
        let usable = seconds.len() == tiles as usize
            && total > 0.0
            && total.is_finite()
            && seconds.iter().all(|s| *s >= 0.0);
        if !usable {
            return Vec::new();
        }
        let mean = total / f64::from(tiles);
        seconds.iter().map(|s| s / mean).collect()
    }

    /// The weights for a node that holds its arrays in core or not: the in-core shape when
    /// measured, else the forced run's.
    fn pick(&self, in_core: bool) -> &[f64] {
        if in_core && !self.in_core.is_empty() {
            &self.in_core
        } else {
            &self.forced
        }
    }
}

impl TileCost {
    /// Node `i`'s share of `f_i(x_i)`: all tiles' computation, I/O and message overheads.
    pub fn node_cost(
        &self,
        arrays: &[ArrayCost],
        memory: &NodeMemory,
        i: usize,
        nodes: usize,
        state: &OocState,
    ) -> f64 {
        let tau = compute::section_tau(&self.stages, arrays, memory, i, state).total();
        tau + f64::from(self.tiles) * self.per_tile_overhead(i, nodes)
    }

    fn per_tile_overhead(&self, i: usize, nodes: usize) -> f64 {
        let recv = if i > 0 { self.o_recv[i] } else { 0.0 };
        let send = if i + 1 < nodes { self.o_send[i] } else { 0.0 };
        recv + send
    }
}

/// Advances every node's clock through a tile loop.
pub(crate) fn run(model: &Model, tiles: &TileCost, _rows: &[u64], out: &mut Prediction) {
    let p = model.nodes;
    let n_t = tiles.tiles.max(1);
    let transfer = model.transfer(tiles.bytes);
    // scratch[i] = T_p(i, j) as j advances; scratch2[i] = Σ_j T_w(i,q,j).
    for i in 0..p {
        out.scratch[i] = out.nodes[i].total_s;
        out.scratch2[i] = 0.0;
    }
    // T_τ(i, j) = scratch3[i] · w(i, j) + scratch4[i]: a mean tile's computation, shaped by
    // the node's weights, and its I/O.
    for i in 0..p {
        let tau = compute::section_tau(
            &tiles.stages,
            &model.arrays,
            &model.memory[i],
            i,
            &out.ooc[i],
        );
        out.scratch3[i] = tau.compute_s * out.compute_scale[i] / f64::from(n_t);
        out.scratch4[i] = tau.io_s / f64::from(n_t);
    }
    for j in 0..n_t as usize {
        for i in 0..p {
            let previous = out.scratch[i];
            let t_w = if i == 0 {
                // Eq. 5.4: T_w(0, q, j) = 0.
                0.0
            } else {
                (out.scratch[i - 1] + transfer - previous).max(0.0)
            };
            let w = tiles.weights[i].pick(out.ooc[i].in_core());
            let compute = out.scratch3[i] * w.get(j).copied().unwrap_or(1.0);
            out.scratch2[i] += t_w;
            out.scratch[i] =
                previous + t_w + compute + out.scratch4[i] + tiles.per_tile_overhead(i, p);
        }
    }
    for i in 0..p {
        let tau = compute::section_tau(
            &tiles.stages,
            &model.arrays,
            &model.memory[i],
            i,
            &out.ooc[i],
        );
        out.charge_work(i, tau.compute_s * out.compute_scale[i], tau.io_s);
        out.charge_comm(
            i,
            f64::from(n_t) * tiles.per_tile_overhead(i, p),
            out.scratch2[i],
            0.0,
        );
    }
}
