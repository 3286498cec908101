//! The model's output: predicted iteration time and where each node spends it.

use serde::Serialize;

use super::out_of_core::OocState;
use super::MAX_GROUP_DEPTH;

/// Where one node spends one iteration. `total_s = compute_s + io_s + overhead_s + blocked_s`
/// (up to rounding). In [`Prediction::synchronized`], `total_s` is the node's `T_I(i)` (§5.3.4):
/// its clock at the end of one iteration from a synchronized start; in [`Prediction::nodes`], the
/// node's advance over one iteration in the steady state.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct NodeBreakdown {
    /// The node's time in the iteration (see the type's description).
    pub total_s: f64,
    /// Σ `T_φ'` over all stages (and the reduction compute `T_r` on a reduction's root).
    pub compute_s: f64,
    /// Σ `T_ψ(m)` over all stages and out-of-core arrays.
    pub io_s: f64,
    /// Send and receive overheads, including reading out-of-core messages (`O_→`, `O_←`).
    pub overhead_s: f64,
    /// `T_w`: time blocked waiting for messages.
    pub blocked_s: f64,
}

/// A predicted iteration. Reuse one value across [`super::Model::predict_into`] calls to avoid
/// allocation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Prediction {
    /// Predicted seconds per iteration in the steady state: how far the largest node clock
    /// advances per iteration once the iterations repeat (see the module description), which is
    /// what a run's timings measure between iteration ends.
    pub iteration_s: f64,
    /// The seed's `T_I` (§5.3.4): the largest node clock after one iteration from a
    /// synchronized start. At least `iteration_s` less rounding when every node communicates;
    /// larger by the skew the steady state keeps (about one latency for Jacobi).
    pub synchronized_s: f64,
    /// Per node, in rank order: one steady-state iteration. A node that waits for others each
    /// iteration shows it as `blocked_s`, wherever in the iteration it waits.
    pub nodes: Vec<NodeBreakdown>,
    /// Per node, in rank order: the one iteration from a synchronized start (the seed's).
    pub synchronized: Vec<NodeBreakdown>,
    /// The structure's section ids, in program order.
    pub sections: Vec<u32>,
    /// Seconds each node spends in each section per steady-state iteration (all passes of
    /// repeated groups summed), laid out `[section][node]`; see [`Prediction::section_time`].
    pub section_s: Vec<f64>,
    #[serde(skip)]
    pub(crate) ooc: Vec<OocState>,
    #[serde(skip)]
    pub(crate) section_start: Vec<f64>,
    /// Scratch clocks and values used by the communication patterns.
    #[serde(skip)]
    pub(crate) scratch: Vec<f64>,
    #[serde(skip)]
    pub(crate) scratch2: Vec<f64>,
    #[serde(skip)]
    pub(crate) scratch3: Vec<f64>,
    #[serde(skip)]
    pub(crate) scratch4: Vec<f64>,
    /// Working state of events simulated call by call (`nearest_neighbor::in_order`).
    #[serde(skip)]
    pub(crate) calls: CallScratch,
    /// The nodes before a conditional event, to charge it at its frequency.
    #[serde(skip)]
    pub(crate) before_event: Vec<NodeBreakdown>,
    /// Per group depth, and for the main loop's own iterations at [`MAIN_LOOP`]: the state at
    /// the start of the current pass, and the clocks at the start of the previous one.
    #[serde(skip)]
    snapshots: Vec<(State, Vec<NodeBreakdown>)>,
    /// The state from which a steady state that never repeats exactly is averaged.
    #[serde(skip)]
    anchor: State,
    /// Per node, the factor on its computation in the pass being run: 1, or a measured
    /// iteration's (`Model::predict_into`).
    #[serde(skip)]
    pub(crate) compute_scale: Vec<f64>,
}

/// The snapshot slot of the main loop's iterations, outside every repeated group.
const MAIN_LOOP: usize = MAX_GROUP_DEPTH;

/// The nodes and per-section times at one moment of an evaluation.
#[derive(Debug, Clone, Default)]
struct State {
    nodes: Vec<NodeBreakdown>,
    sections: Vec<f64>,
}

impl State {
    fn copy(&mut self, nodes: &[NodeBreakdown], sections: &[f64]) {
        self.nodes.clear();
        self.nodes.extend_from_slice(nodes);
        self.sections.clear();
        self.sections.extend_from_slice(sections);
    }
}

impl NodeBreakdown {
    /// Every field `f(self's, other's)`.
    fn zip_with(self, other: &NodeBreakdown, f: impl Fn(f64, f64) -> f64) -> NodeBreakdown {
        NodeBreakdown {
            total_s: f(self.total_s, other.total_s),
            compute_s: f(self.compute_s, other.compute_s),
            io_s: f(self.io_s, other.io_s),
            overhead_s: f(self.overhead_s, other.overhead_s),
            blocked_s: f(self.blocked_s, other.blocked_s),
        }
    }
}

/// Whether two sets of node clocks have the same offsets from their earliest clock, to
/// `tolerance` seconds.
fn same_offsets(a: &[NodeBreakdown], b: &[NodeBreakdown], tolerance: f64) -> bool {
    let earliest = |v: &[NodeBreakdown]| v.iter().map(|n| n.total_s).fold(f64::INFINITY, f64::min);
    let (min_a, min_b) = (earliest(a), earliest(b));
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| ((x.total_s - min_a) - (y.total_s - min_b)).abs() <= tolerance)
}

/// Per call of a [`super::comm::Schedule`]: when its message left (sends); per node: the next
/// call to make; and the nodes that can make progress.
#[derive(Debug, Clone, Default)]
pub(crate) struct CallScratch {
    pub sent_at: Vec<f64>,
    pub next: Vec<u32>,
    pub runnable: Vec<u32>,
}

impl Prediction {
    /// Seconds node `node` spends in the section at position `index` of [`Prediction::sections`].
    pub fn section_time(&self, index: usize, node: usize) -> f64 {
        self.section_s[index * self.nodes.len() + node]
    }

    /// The node busiest in a steady-state iteration (the most time not blocked): the one the
    /// others wait for.
    pub fn slowest_node(&self) -> usize {
        let busy = |n: &NodeBreakdown| n.total_s - n.blocked_s;
        (0..self.nodes.len())
            .max_by(|&a, &b| busy(&self.nodes[a]).total_cmp(&busy(&self.nodes[b])))
            .unwrap_or(0)
    }

    pub(crate) fn reset(&mut self, nodes: usize, sections: impl Iterator<Item = u32>) {
        self.iteration_s = 0.0;
        self.synchronized_s = 0.0;
        self.nodes.clear();
        self.nodes.resize(nodes, NodeBreakdown::default());
        self.sections.clear();
        self.sections.extend(sections);
        self.section_s.clear();
        self.section_s.resize(self.sections.len() * nodes, 0.0);
        self.section_start.resize(nodes, 0.0);
        self.scratch.resize(nodes, 0.0);
        self.scratch2.resize(nodes, 0.0);
        self.scratch3.resize(nodes, 0.0);
        self.scratch4.resize(nodes, 0.0);
        self.compute_scale.clear();
        self.compute_scale.resize(nodes, 1.0);
    }

    /// Marks the start of an iteration of the whole program.
    pub(crate) fn begin_pass(&mut self) {
        self.snapshot(MAIN_LOOP);
    }

    /// After the first iteration, which began with every clock at 0: keeps it as the seed's.
    pub(crate) fn end_synchronized_pass(&mut self) {
        self.synchronized.clear();
        self.synchronized.extend_from_slice(&self.nodes);
        self.synchronized_s = largest_clock(&self.nodes);
        self.anchor();
    }

    /// Averages the steady state from here on, unless an iteration repeats first.
    pub(crate) fn anchor(&mut self) {
        self.anchor.copy(&self.nodes, &self.section_s);
    }

    /// Did the iteration just run end with the same offsets between node clocks as it began
    /// with (to 1e-9 of its length)? Then every later iteration repeats it.
    pub(crate) fn ends_as_it_began(&self) -> bool {
        let start = &self.snapshots[MAIN_LOOP].0.nodes;
        let length = (largest_clock(&self.nodes) - largest_clock(start)).abs();
        same_offsets(&self.nodes, start, 1e-9 * length.max(1e-300))
    }

    /// Turns the accumulated clocks into one steady-state iteration: the last iteration, or,
    /// with `averaged_over: Some(n)`, the mean of the `n` run since [`Prediction::anchor`].
    pub(crate) fn settle(&mut self, averaged_over: Option<u32>) {
        let (base, passes) = match averaged_over {
            None => (&self.snapshots[MAIN_LOOP].0, 1),
            Some(n) => (&self.anchor, n.max(1)),
        };
        let per = 1.0 / f64::from(passes);
        self.iteration_s = (largest_clock(&self.nodes) - largest_clock(&base.nodes)) * per;
        for (n, b) in self.nodes.iter_mut().zip(&base.nodes) {
            *n = n.zip_with(b, |now, then| (now - then) * per);
        }
        for (v, b) in self.section_s.iter_mut().zip(&base.sections) {
            *v = (*v - b) * per;
        }
    }

    /// Advances node `i` by computation and I/O.
    pub(crate) fn charge_work(&mut self, i: usize, compute_s: f64, io_s: f64) {
        let n = &mut self.nodes[i];
        n.compute_s += compute_s;
        n.io_s += io_s;
        n.total_s += compute_s + io_s;
    }

    /// Advances node `i` by communication: overheads, blocked time and reduction compute.
    pub(crate) fn charge_comm(
        &mut self,
        i: usize,
        overhead_s: f64,
        blocked_s: f64,
        compute_s: f64,
    ) {
        let n = &mut self.nodes[i];
        n.overhead_s += overhead_s;
        n.blocked_s += blocked_s;
        n.compute_s += compute_s;
        n.total_s += overhead_s + blocked_s + compute_s;
    }

    fn snapshot_slot(&mut self, depth: usize) -> &mut (State, Vec<NodeBreakdown>) {
        debug_assert!(depth <= MAIN_LOOP);
        while self.snapshots.len() <= depth {
            self.snapshots.push(Default::default());
        }
        &mut self.snapshots[depth]
    }

    /// Remembers every node's state before a communication event.
    pub(crate) fn mark_event(&mut self) {
        self.before_event.clear();
        self.before_event.extend_from_slice(&self.nodes);
    }

    /// Charges the event run since [`Prediction::mark_event`] at `frequency` (the share of
    /// iterations it runs in): every node's clock and breakdown advance by that share of what
    /// the event added.
    pub(crate) fn scale_event(&mut self, frequency: f64) {
        for (n, b) in self.nodes.iter_mut().zip(&self.before_event) {
            *n = n.zip_with(b, |after, before| before + frequency * (after - before));
        }
    }

    /// Records the state at the start of a pass of the group at `depth`.
    pub(crate) fn snapshot(&mut self, depth: usize) {
        let nodes = std::mem::take(&mut self.nodes);
        let sections = std::mem::take(&mut self.section_s);
        self.snapshot_slot(depth).0.copy(&nodes, &sections);
        self.nodes = nodes;
        self.section_s = sections;
    }

    /// Remembers this pass's start clocks as the previous pass's.
    pub(crate) fn keep_previous_start(&mut self, depth: usize) {
        let slot = self.snapshot_slot(depth);
        slot.1.clear();
        slot.1.extend_from_slice(&slot.0.nodes);
    }

    /// Did the pass just run start from the same clock offsets (relative to the earliest
    /// clock) as the pass before it?
    pub(crate) fn same_relative_start(&mut self, depth: usize) -> bool {
        let slot = self.snapshot_slot(depth);
        let (now, prev) = (&slot.0.nodes, &slot.1);
        let scale = now.iter().map(|n| n.total_s.abs()).fold(1e-300, f64::max);
        !now.is_empty() && same_offsets(now, prev, 1e-12 * scale)
    }

    /// Adds `passes` more copies of the pass just run (from the last snapshot to now).
    pub(crate) fn extrapolate(&mut self, depth: usize, passes: f64) {
        if passes <= 0.0 {
            return;
        }
        let start = &self.snapshots[depth].0;
        for (n, s) in self.nodes.iter_mut().zip(&start.nodes) {
            *n = n.zip_with(s, |now, then| now + passes * (now - then));
        }
        for (v, s) in self.section_s.iter_mut().zip(&start.sections) {
            *v += passes * (*v - s);
        }
    }
}

/// Seconds as the tables print them: six decimals from a millisecond up, else four significant
/// digits (`1.058e-6`), so that a small problem's microseconds do not print as `0.000001`.
pub fn seconds(s: f64) -> String {
    if s == 0.0 || s.abs() >= 1e-3 || !s.is_finite() {
        format!("{s:.6}")
    } else {
        format!("{s:.3e}")
    }
}

/// The largest `total_s`, at least 0.
fn largest_clock(nodes: &[NodeBreakdown]) -> f64 {
    nodes.iter().map(|n| n.total_s).fold(0.0, f64::max)
}

impl std::fmt::Display for Prediction {
    /// A table: the iteration time, then one line per node (steady state).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "predicted iteration: {} s in the steady state (slowest node {}); {} s from a \
             synchronized start",
            seconds(self.iteration_s),
            self.slowest_node(),
            seconds(self.synchronized_s)
        )?;
        writeln!(
            f,
            "{:>6} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "node", "total_s", "compute_s", "io_s", "overhead_s", "blocked_s"
        )?;
        for (i, n) in self.nodes.iter().enumerate() {
            writeln!(
                f,
                "{i:>6} {:>12} {:>12} {:>12} {:>12} {:>12}",
                seconds(n.total_s),
                seconds(n.compute_s),
                seconds(n.io_s),
                seconds(n.overhead_s),
                seconds(n.blocked_s)
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::seconds;

    /// Microseconds keep their digits; a millisecond and up prints as it always did.
    #[test]
    fn small_times_print_their_significant_digits() {
        assert_eq!(seconds(1.058e-6), "1.058e-6");
        assert_eq!(seconds(4.2e-4), "4.200e-4");
        assert_eq!(seconds(0.0), "0.000000");
        assert_eq!(seconds(0.001), "0.001000");
        assert_eq!(seconds(2.5), "2.500000");
    }
}
