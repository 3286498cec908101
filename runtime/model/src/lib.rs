//! The MHETA execution-time model (seed §5.3): structure + measurements + cluster + candidate
//! distribution → predicted seconds per iteration, with a per-node breakdown; and the searches
//! for the distribution it predicts fastest ([`search`]). Beside them, the I/O-aware gang
//! scheduler of the seed's Chapter 3 ([`gang`]), whose jobs can come from this model; and the
//! empirical NP-T models and process allocation of seed 002 ([`empirical`]), its black-box
//! alternative.
//!
//! Only the `mheta` tool links this crate: an instrumented program links `mheta-runtime`, which
//! writes the measurements this crate reads, and never the model.
//!
//! The model is a pure function. Everything that does not depend on the candidate distribution
//! (per-row compute rates, I/O modes and costs, message overheads, peers, the program's
//! section/group layout) is compiled once into a [`Model`] by [`Model::new`]; evaluating a
//! distribution with [`Model::predict_into`] then only walks that compiled form and allocates
//! nothing once the [`Prediction`] buffers have their size.
//!
//! How one iteration is evaluated (seed §5.3.4): every node carries a clock. For each parallel
//! section in program order the node's clock advances by its computation and I/O `T_τ`
//! (`compute`, `out_of_core`), then by its communication `T_Υ`, which depends on the other
//! nodes' clocks through the pattern of the section's closing event (`nearest_neighbor`,
//! `reduction`, `collective`, `pipeline`). A node's send time in section k therefore
//! includes all its earlier sections, which is exactly the seed's `T_→(i, i', k)`. Sections of a
//! repeated group (a nested iteration) are replayed `trips` times. The seed's iteration time is
//! the largest clock after one iteration from a synchronized start: `T_I = max_i Σ_k T_σ(i, k)`
//! ([`Prediction::synchronized_s`]).
//!
//! **The predicted time is the steady period, not `T_I`.** A real run does not start every
//! iteration with all nodes synchronized: a reduction's root leaves before the others, a halo
//! exchange releases its ends first, and the skew carries into the next iteration. So the model
//! runs the iteration again from the clocks the last one ended with, until an iteration ends with
//! the same offsets between the nodes as it began with (every later one would repeat it), and
//! predicts that iteration's advance of the largest clock ([`Prediction::iteration_s`]), which is
//! what a run's timings measure between iteration ends. Measured on Jacobi over a 1 ms network
//! (net-2), the steady period is shorter than `T_I` by about one latency.
//!
//! **Measured variation.** Where the measurements hold each iteration's computation per node
//! (`iteration_compute_s`), the model then replays those iterations from the steady state, each
//! node computing its mean times that iteration's factor, and predicts their mean period: a node
//! waits for the slowest node of each iteration, which the means understate when nodes are close.
//!
//! Equation numbers in comments refer to the seed (`000_1e602fdfab80303d.txt`, Ch. 5).

mod build;
mod collective;
mod comm;
mod compute;
pub mod empirical;
pub mod gang;
mod nearest_neighbor;
mod out_of_core;
pub mod phases;
mod pipeline;
mod prediction;
mod reduction;
pub mod retarget;
pub mod search;
pub mod synthetic;

use mheta_runtime::format::{Measurements, Pattern};

pub use prediction::{NodeBreakdown, Prediction};

use comm::CommCost;
use compute::StageCost;
use out_of_core::{ArrayCost, NodeMemory};
use pipeline::TileCost;

/// Errors building a model or evaluating a distribution.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("structure has no solver named `{0}` (the measurements belong to it)")]
    UnknownSolver(String),
    #[error("`{file}`: {at} {message}")]
    Trace {
        file: String,
        at: String,
        message: String,
    },
    #[error("structure has no solver")]
    NoSolver,
    #[error("measurements cover {measured} nodes but the cluster has {cluster}")]
    NodeCount { measured: usize, cluster: usize },
    #[error("measurements field `nodes[{index}].rank` is {rank}, expected {index}")]
    RankOrder { index: usize, rank: u32 },
    #[error("the model supports at most 64 distributed arrays, the measurements list {0}")]
    TooManyArrays(usize),
    #[error("measurements field `{field}` names array `{name}`, which `arrays` does not list")]
    UnknownArray { field: String, name: String },
    #[error("measurements field `{field}` is {value}, expected a finite non-negative number")]
    BadValue { field: String, value: f64 },
    #[error("structure event {event}: `frequency` is {value}, expected a share of the iterations in (0, 1]")]
    BadFrequency { event: u32, value: f64 },
    #[error("distribution has {actual} entries, the model has {expected} nodes")]
    DistributionLength { expected: usize, actual: usize },
    #[error("group {group}: nested groups are deeper than {max} levels")]
    TooDeep { group: u32, max: usize },
    #[error(
        "{what} is {value} per iteration, more than the model replays (at most {max}; the \
         measurements are corrupt, or the loop should not be a tile loop or group)"
    )]
    TooManyPasses {
        /// `section 2 tile loop 0`, `group 1`.
        what: String,
        value: f64,
        max: u32,
    },
}

/// The most tiles per pass, or trips of a group per iteration, the model replays one by one
/// (a prediction walks every tile of every node): a million is far above any measured program
/// and still predicts in well under a second, where a corrupt count of 2^32 took minutes.
pub const MAX_PASSES: u32 = 1 << 20;

/// `value` rounded to a whole number of passes, at least `min`, if it is at most
/// [`MAX_PASSES`].
pub(crate) fn passes(
    what: impl FnOnce() -> String,
    value: f64,
    min: f64,
) -> Result<u32, ModelError> {
    let rounded = value.round().max(min);
    if rounded.is_nan() || rounded > f64::from(MAX_PASSES) {
        return Err(ModelError::TooManyPasses {
            what: what(),
            value,
            max: MAX_PASSES,
        });
    }
    Ok(rounded as u32)
}

/// Bytes one row occupies summed over the distributed arrays of the measurements: the
/// `bytes_per_row` the In-Core generators of [`mheta_runtime::distribution::Distribution`] need.
pub fn distributed_bytes_per_row(measurements: &Measurements) -> u64 {
    measurements
        .arrays
        .iter()
        .filter(|a| a.distributed)
        .map(|a| a.bytes_per_row)
        .sum::<u64>()
        .max(1)
}

/// One step of the compiled program, in source order.
#[derive(Debug, Clone)]
enum Step {
    /// Run section `sections[index]`.
    Section(usize),
    /// Repeat the next `len` steps `trips` times (a nested iteration, DESIGN §3.4).
    Group { trips: u32, len: usize },
}

/// One parallel section, compiled.
#[derive(Debug, Clone)]
struct SectionCost {
    /// The structure's section id.
    id: u32,
    /// Stages outside tile loops, in order.
    stages: Vec<StageCost>,
    /// Pipelined tile loops, in order (each after the stages preceding it are summed: the
    /// model runs all plain stages first, which is exact when tiles end the section).
    tiles: Vec<TileCost>,
    /// The closing communication event.
    comm: Option<CommCost>,
    /// Product of the trip counts of the groups enclosing this section.
    multiplicity: f64,
}

/// Deepest nesting of repeated groups the evaluator handles.
const MAX_GROUP_DEPTH: usize = 8;

/// Measured iterations the model replays at most (`Model::predict_into`), spread over those
/// measured. Each costs one more pass of the program per prediction; 32 predicted both studies'
/// runs no better than 16 (`study/noise.md`).
pub const MAX_VARIATION_PASSES: usize = 16;

/// Iterations the model runs after the first, at most, looking for the steady state. Pairwise
/// exchanges and reductions settle in one or two; when none repeats exactly (conditional events,
/// charged at their frequency, converge only geometrically; nodes that never communicate drift
/// apart), the period is the mean over the last half of them ([`Prediction::settle`]).
const STEADY_PASSES: u32 = 16;

/// The MHETA model of one solver, compiled for one cluster.
#[derive(Debug, Clone)]
pub struct Model {
    nodes: usize,
    total_rows: u64,
    program: Vec<Step>,
    sections: Vec<SectionCost>,
    arrays: Vec<ArrayCost>,
    memory: Vec<NodeMemory>,
    /// One-way latency per message and seconds per byte: `T_{i→i'}(q) = latency + bytes·per_byte`.
    latency_s: f64,
    per_byte_s: f64,
    /// Measured variation: per replayed iteration k, per node i, the factor on node i's
    /// computation at `k * nodes + i` (empty: none measured). See [`Model::predict_into`].
    variation: Vec<f64>,
}

impl Model {
    /// Number of nodes.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Total rows S of the distributed dimension.
    pub fn total_rows(&self) -> u64 {
        self.total_rows
    }

    /// Predicts one iteration under the distribution `rows` (one count per node).
    pub fn predict(&self, rows: &[u64]) -> Result<Prediction, ModelError> {
        let mut out = Prediction::default();
        self.predict_into(rows, &mut out)?;
        Ok(out)
    }

    /// Predicts one iteration into `out`, reusing its buffers (no allocation once sized).
    ///
    /// `rows` needs one entry per node; it normally sums to the measured S (searches and
    /// [`mheta_runtime::distribution::Distribution::validate`] guarantee it), but need not: the model
    /// then extrapolates the per-row costs to the other problem size.
    pub fn predict_into(&self, rows: &[u64], out: &mut Prediction) -> Result<(), ModelError> {
        if rows.len() != self.nodes {
            return Err(ModelError::DistributionLength {
                expected: self.nodes,
                actual: rows.len(),
            });
        }
        out.reset(self.nodes, self.sections.iter().map(|s| s.id));
        out.ooc.clear();
        out.ooc.extend(
            (0..self.nodes).map(|i| out_of_core::decide(&self.arrays, &self.memory[i], rows[i])),
        );
        // One iteration from a synchronized start (the seed's T_I), then again from where it
        // ended until an iteration repeats.
        out.begin_pass();
        self.run_steps(0, self.program.len(), rows, out, 0);
        out.end_synchronized_pass();
        let mut since_anchor = 0;
        let mut repeated = false;
        for pass in 1..=STEADY_PASSES {
            if out.ends_as_it_began() {
                repeated = true;
                break;
            }
            if pass == STEADY_PASSES / 2 {
                out.anchor();
                since_anchor = 0;
            }
            out.begin_pass();
            self.run_steps(0, self.program.len(), rows, out, 0);
            since_anchor += 1;
        }
        repeated |= out.ends_as_it_began();
        if self.variation.is_empty() {
            out.settle((!repeated).then_some(since_anchor));
            return Ok(());
        }
        // Measured variation. Iterations differ (caches, the operating system, other work on
        // the machine), and a node waits at the iteration's communication for the slowest node
        // of that iteration, not of the average one: the mean of per-iteration maxima exceeds
        // the maximum of the means whenever the nodes are close. From the steady state, the
        // measured iterations (at most `MAX_VARIATION_PASSES`, spread over them: `build`) are
        // replayed in order, each node computing its mean times its own factor of that
        // iteration (the same iteration on every node, so variation the nodes share, such as
        // the whole machine slowing down, stays shared), and the period is their mean.
        let passes = self.variation.len() / self.nodes;
        out.anchor();
        for k in 0..passes {
            out.compute_scale
                .copy_from_slice(&self.variation[k * self.nodes..(k + 1) * self.nodes]);
            out.begin_pass();
            self.run_steps(0, self.program.len(), rows, out, 0);
        }
        out.compute_scale.fill(1.0);
        out.settle(Some(passes as u32));
        Ok(())
    }

    /// Would an in-core run (`--keep-in-core`) under `rows` give the model a sample it does
    /// not already have, given such runs under each of `sampled`? Yes when some node would hold
    /// rows with a placement (the arrays out of core, as the runtime decides it) and a row count
    /// at least 20 % away (`compute::SAMPLE_SPREAD`) from every non-zero row count it held
    /// with that placement in those runs: closer samples are pooled with the nearby one, samples
    /// of another placement are not used for it, and a node without rows gives none.
    pub fn adds_in_core_sample(&self, sampled: &[Vec<u64>], rows: &[u64]) -> bool {
        let mask = |i: usize, r: u64| {
            (i < self.nodes).then(|| out_of_core::decide(&self.arrays, &self.memory[i], r).mask)
        };
        rows.iter().enumerate().any(|(i, &r)| {
            r > 0
                && sampled.iter().all(|s| {
                    let held = s.get(i).copied().unwrap_or(0);
                    let (lo, hi) = (r.min(held) as f64, r.max(held) as f64);
                    held == 0 || hi >= compute::SAMPLE_SPREAD * lo || mask(i, held) != mask(i, r)
                })
        })
    }

    /// Whether node `node` holding `rows` rows keeps every distributed array in memory: the
    /// out-of-core placement the model predicts with, which is the runtime's own
    /// (`mheta_runtime::ooc::plan` over the node's memory). The gang simulator's critical
    /// number (`gang`, seed §3.2.2) is the fewest nodes at which this holds.
    pub fn in_core(&self, node: usize, rows: u64) -> bool {
        out_of_core::decide(&self.arrays, &self.memory[node], rows).in_core()
    }

    /// The seed's per-node cost `f_i(x_i) = g_i + h_i + r_i` (§4.2): computation, I/O and
    /// communication overheads of node `node` holding `rows` rows, without blocked time (so it
    /// depends on `rows` only). Non-decreasing in `rows` when the stages' I/O is synchronous
    /// (the out-of-core heuristic picks the least I/O among candidates whose costs all grow
    /// with `rows`, see `out_of_core`); prefetch masking and out-of-core messages can make
    /// it dip slightly.
    pub fn node_cost(&self, node: usize, rows: u64) -> f64 {
        let state = out_of_core::decide(&self.arrays, &self.memory[node], rows);
        let mut total = 0.0;
        for s in &self.sections {
            let mut t =
                compute::section_tau(&s.stages, &self.arrays, &self.memory[node], node, &state)
                    .total();
            for tiles in &s.tiles {
                t += tiles.node_cost(&self.arrays, &self.memory[node], node, self.nodes, &state);
            }
            if let Some(c) = &s.comm {
                t += c.frequency * c.node_overheads(self, node, rows, &state);
            }
            total += s.multiplicity * t;
        }
        total
    }

    /// Runs steps `start..end` of the program.
    fn run_steps(
        &self,
        start: usize,
        end: usize,
        rows: &[u64],
        out: &mut Prediction,
        depth: usize,
    ) {
        let mut k = start;
        while k < end {
            match self.program[k] {
                Step::Section(index) => {
                    self.run_section(index, rows, out);
                    k += 1;
                }
                Step::Group { trips, len } => {
                    self.run_group(k + 1, k + 1 + len, trips, rows, out, depth);
                    k += 1 + len;
                }
            }
        }
    }

    /// Replays a repeated group `trips` times. When a pass starts from the same relative clock
    /// offsets as the previous one, every later pass is identical, so the remaining passes are
    /// added in one step (which keeps long inner loops cheap to evaluate).
    fn run_group(
        &self,
        start: usize,
        end: usize,
        trips: u32,
        rows: &[u64],
        out: &mut Prediction,
        depth: usize,
    ) {
        let depth = depth.min(MAX_GROUP_DEPTH - 1);
        for pass in 0..trips {
            out.snapshot(depth);
            self.run_steps(start, end, rows, out, depth + 1);
            if pass >= 1 && out.same_relative_start(depth) {
                out.extrapolate(depth, f64::from(trips - pass - 1));
                return;
            }
            out.keep_previous_start(depth);
        }
    }

    /// One parallel section on every node: `T_σ(i) = T_τ(i) + T_Υ(i)`.
    fn run_section(&self, index: usize, rows: &[u64], out: &mut Prediction) {
        let section = &self.sections[index];
        for i in 0..self.nodes {
            out.section_start[i] = out.nodes[i].total_s;
            // T_τ = Σ_k T_γ(k) (§5.3.1).
            let tau = compute::section_tau(
                &section.stages,
                &self.arrays,
                &self.memory[i],
                i,
                &out.ooc[i],
            );
            out.charge_work(i, tau.compute_s * out.compute_scale[i], tau.io_s);
        }
        for tiles in &section.tiles {
            pipeline::run(self, tiles, rows, out);
        }
        if let Some(comm) = &section.comm {
            let conditional = comm.frequency < 1.0;
            if conditional {
                out.mark_event();
            }
            match comm.pattern {
                Pattern::NearestNeighbor
                | Pattern::PointToPoint
                | Pattern::AllToAll
                | Pattern::Pipeline => nearest_neighbor::run(self, comm, rows, out),
                Pattern::Reduction | Pattern::Barrier | Pattern::AllGather => {
                    reduction::run(self, comm, rows, out)
                }
                Pattern::Broadcast | Pattern::Scatter => {
                    collective::run_broadcast(self, comm, rows, out)
                }
                Pattern::Gather => collective::run_gather(self, comm, rows, out),
            }
            if conditional {
                out.scale_event(comm.frequency);
            }
        }
        for i in 0..self.nodes {
            let spent = out.nodes[i].total_s - out.section_start[i];
            out.section_s[index * self.nodes + i] += spent;
        }
    }

    /// `T_{i→i'}(q)`: network transfer time of a message of `bytes` bytes.
    fn transfer(&self, bytes: f64) -> f64 {
        self.latency_s + bytes * self.per_byte_s
    }
}

#[cfg(test)]
mod tests;
