//! The model's output: predicted iteration time and where each node spends it.

use serde::Serialize;

use super::out_of_core::OocState;
use super::MAX_GROUP_DEPTH;

/// Where one node spends one iteration. `total_s = compute_s + io_s + overhead_s + blocked_s`
/// (up to rounding), and `total_s` is the node's `T_I(i)` (§5.3.4).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct NodeBreakdown {
    /// `T_I(i)`: the node's clock at the end of the iteration.
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
    /// Predicted seconds per iteration: the largest node clock.
    pub iteration_s: f64,
    /// Per node, in rank order.
    pub nodes: Vec<NodeBreakdown>,
    /// The structure's section ids, in program order.
    pub sections: Vec<u32>,
    /// Seconds each node spends in each section per iteration (all passes of repeated groups
    /// summed), laid out `[section][node]`; see [`Prediction::section_time`].
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
    /// Per group depth: the state at the start of the current pass and of the previous one.
    #[serde(skip)]
    snapshots: Vec<(Vec<NodeBreakdown>, Vec<f64>, Vec<NodeBreakdown>)>,
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

    /// The node whose clock is largest (the one that determines the iteration time).
    pub fn slowest_node(&self) -> usize {
        (0..self.nodes.len())
            .max_by(|&a, &b| self.nodes[a].total_s.total_cmp(&self.nodes[b].total_s))
            .unwrap_or(0)
    }

    pub(crate) fn reset(&mut self, nodes: usize, sections: impl Iterator<Item = u32>) {
        self.iteration_s = 0.0;
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
    }

    pub(crate) fn finish(&mut self) {
        self.iteration_s = self.nodes.iter().map(|n| n.total_s).fold(0.0, f64::max);
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

    fn snapshot_slot(
        &mut self,
        depth: usize,
    ) -> &mut (Vec<NodeBreakdown>, Vec<f64>, Vec<NodeBreakdown>) {
        debug_assert!(depth < MAX_GROUP_DEPTH);
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
            let blend = |after: f64, before: f64| before + frequency * (after - before);
            n.total_s = blend(n.total_s, b.total_s);
            n.compute_s = blend(n.compute_s, b.compute_s);
            n.io_s = blend(n.io_s, b.io_s);
            n.overhead_s = blend(n.overhead_s, b.overhead_s);
            n.blocked_s = blend(n.blocked_s, b.blocked_s);
        }
    }

    /// Records the state at the start of a pass of the group at `depth`.
    pub(crate) fn snapshot(&mut self, depth: usize) {
        let nodes = std::mem::take(&mut self.nodes);
        let sections = std::mem::take(&mut self.section_s);
        let slot = self.snapshot_slot(depth);
        slot.0.clear();
        slot.0.extend_from_slice(&nodes);
        slot.1.clear();
        slot.1.extend_from_slice(&sections);
        self.nodes = nodes;
        self.section_s = sections;
    }

    /// Remembers this pass's start clocks as the previous pass's.
    pub(crate) fn keep_previous_start(&mut self, depth: usize) {
        let slot = self.snapshot_slot(depth);
        slot.2.clear();
        slot.2.extend_from_slice(&slot.0);
    }

    /// Did the pass just run start from the same clock offsets (relative to the earliest
    /// clock) as the pass before it?
    pub(crate) fn same_relative_start(&mut self, depth: usize) -> bool {
        let slot = self.snapshot_slot(depth);
        let (now, prev) = (&slot.0, &slot.2);
        if now.len() != prev.len() || now.is_empty() {
            return false;
        }
        let min_now = now.iter().map(|n| n.total_s).fold(f64::INFINITY, f64::min);
        let min_prev = prev.iter().map(|n| n.total_s).fold(f64::INFINITY, f64::min);
        let scale = now.iter().map(|n| n.total_s.abs()).fold(1e-300, f64::max);
        now.iter()
            .zip(prev)
            .all(|(a, b)| ((a.total_s - min_now) - (b.total_s - min_prev)).abs() <= 1e-12 * scale)
    }

    /// Adds `passes` more copies of the pass just run (from the last snapshot to now).
    pub(crate) fn extrapolate(&mut self, depth: usize, passes: f64) {
        if passes <= 0.0 {
            return;
        }
        let slot = &self.snapshots[depth];
        for (n, s) in self.nodes.iter_mut().zip(&slot.0) {
            n.total_s += passes * (n.total_s - s.total_s);
            n.compute_s += passes * (n.compute_s - s.compute_s);
            n.io_s += passes * (n.io_s - s.io_s);
            n.overhead_s += passes * (n.overhead_s - s.overhead_s);
            n.blocked_s += passes * (n.blocked_s - s.blocked_s);
        }
        for (v, s) in self.section_s.iter_mut().zip(&slot.1) {
            *v += passes * (*v - s);
        }
    }
}

impl std::fmt::Display for Prediction {
    /// A table: the iteration time, then one line per node.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "predicted iteration: {:.6} s (slowest node {})",
            self.iteration_s,
            self.slowest_node()
        )?;
        writeln!(
            f,
            "{:>6} {:>12} {:>12} {:>12} {:>12} {:>12}",
            "node", "total_s", "compute_s", "io_s", "overhead_s", "blocked_s"
        )?;
        for (i, n) in self.nodes.iter().enumerate() {
            writeln!(
                f,
                "{i:>6} {:>12.6} {:>12.6} {:>12.6} {:>12.6} {:>12.6}",
                n.total_s, n.compute_s, n.io_s, n.overhead_s, n.blocked_s
            )?;
        }
        Ok(())
    }
}
