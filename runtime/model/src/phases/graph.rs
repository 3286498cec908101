//! Independent blocks (Gehring, Def. 1) and the dependency graph (Def. 2) of a trace.
//!
//! **Blocks.** Every communication call the runtime records is taken as a *critical*
//! communication (§2.1): the runtime records blocking calls, and an immediate send is recorded
//! where it is issued, so it bounds blocks like a blocking one. With the start and the end of a
//! rank as the paper's two extra critical points, a rank with `n` calls has `n + 1` blocks: block
//! `i` is the computation between call `i - 1` and call `i`.
//!
//! **Labels** decide isomorphism ("the same code"). A block is labelled by the call that *ends*
//! it: its name, the peer relative to the rank (`send +1`, so the same halo exchange on every
//! rank has one label) and its structure event (`#3`); the last block of a rank is labelled
//! `end`. Labelling by the closing call, not by both bounding calls, gives the first block of
//! the first iteration (which also holds the initialisation) the label of every other iteration's
//! first block, so the main loop's body occurs K times in a trace of K iterations.
//!
//! **Request completions** (rsmpi's `wait`, `test`: a `receive` naming no peer and moving no
//! message) end a block like any call, but have no message edge (the message belongs to the
//! immediate call that posted the request). A run of them one after another in one main-loop
//! iteration is one step (`for r in requests { r.wait() }` is a wait-all), so it ends one block:
//! otherwise the empty blocks between them, identical labels in a row, let every stretch of the
//! run match every other, and the detection's phases and pairs grow with the square of the run.
//!
//! **Exchanges** (rsmpi's `send_receive_into`) send to their peer and receive from their
//! `source` when the trace names one (a ring shift), else from their peer; the label then names
//! both (`receive +1 from -1`).
//!
//! **Edges** (Def. 2): sequence edges between consecutive blocks of a rank (2.1); message edges
//! from the block before the k-th send from rank a to rank b to the block after the k-th receive
//! on b from a (2.2 and 2.4 — the trace records no tags, so messages are matched in MPI's
//! non-overtaking order per pair of ranks, which is exact for programs with one tag per pair);
//! collective edges from the block before a rank's i-th collective call to the block after every
//! other rank's i-th collective call (2.3; collectives are matched by their order, as MPI
//! requires every rank to call them in the same order).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use petgraph::graph::{DiGraph, NodeIndex};
use petgraph::visit::EdgeRef as _;
use petgraph::Direction;

use super::trace::Trace;
use crate::ModelError;

/// An independent block: one node of the dependency graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The rank (process) that ran it.
    pub rank: u32,
    /// Its position among the rank's blocks.
    pub index: u32,
    /// Its label: blocks with equal labels are the same code.
    pub label: u32,
    /// The computation time it covers, seconds.
    pub seconds: f64,
    /// The structure event of the call that ends it, if any.
    pub event: Option<u32>,
    /// True when a call ends it (false for a rank's last block).
    pub has_call: bool,
}

/// The kind of a dependency edge (Def. 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum EdgeKind {
    /// Consecutive blocks of one rank (2.1).
    Sequence,
    /// A point-to-point message (2.2, 2.4).
    Message,
    /// A collective call (2.3).
    Collective,
}

/// A dependency graph: blocks and their dependencies, with the blocks' labels interned.
#[derive(Debug, Clone, Default)]
pub struct DependencyGraph {
    /// The graph itself.
    pub graph: DiGraph<Block, EdgeKind>,
    /// Label text by label id.
    pub labels: Vec<String>,
    label_ids: HashMap<String, u32>,
    /// Blocks per rank, in order.
    pub ranks: Vec<Vec<NodeIndex>>,
}

impl DependencyGraph {
    /// An empty graph, for building one by hand.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a block to `rank`, with a sequence edge from the rank's previous block.
    pub fn push_block(&mut self, rank: u32, label: &str, seconds: f64) -> NodeIndex {
        self.push(rank, label, seconds, None, true)
    }

    fn push(
        &mut self,
        rank: u32,
        label: &str,
        seconds: f64,
        event: Option<u32>,
        has_call: bool,
    ) -> NodeIndex {
        let label = match self.label_ids.get(label) {
            Some(&id) => id,
            None => {
                let id = self.labels.len() as u32;
                self.label_ids.insert(label.to_string(), id);
                self.labels.push(label.to_string());
                id
            }
        };
        let r = rank as usize;
        if self.ranks.len() <= r {
            self.ranks.resize_with(r + 1, Vec::new);
        }
        let index = self.ranks[r].len() as u32;
        let node = self.graph.add_node(Block {
            rank,
            index,
            label,
            seconds,
            event,
            has_call,
        });
        if let Some(&prev) = self.ranks[r].last() {
            self.graph.add_edge(prev, node, EdgeKind::Sequence);
        }
        self.ranks[r].push(node);
        node
    }

    /// Adds a message or collective edge (no duplicates).
    pub fn add_dependency(&mut self, from: NodeIndex, to: NodeIndex, kind: EdgeKind) {
        if from != to && self.graph.find_edge(from, to).is_none() {
            self.graph.add_edge(from, to, kind);
        }
    }

    /// The graph of a trace (see the module documentation for blocks, labels and edges).
    /// Errors: a receive without its send (or the reverse), a peer out of range, and ranks
    /// whose collective calls differ in number or kind, naming `file`.
    pub fn from_trace(trace: &Trace, file: &str) -> Result<Self, ModelError> {
        let err = |at: String, message: String| ModelError::Trace {
            file: file.to_string(),
            at,
            message,
        };
        let n = trace.ranks.len();
        let mut g = DependencyGraph::new();
        // Per rank and call: the position of the block the call ends in `g.ranks[rank]` (a
        // completion after a completion ends the same block as the run's first).
        let mut ends_block: Vec<Vec<usize>> = Vec::with_capacity(n);
        for (r, rank) in trace.ranks.iter().enumerate() {
            let mut prev_end = rank.begin_s;
            let mut positions = Vec::with_capacity(rank.calls.len());
            for (i, c) in rank.calls.iter().enumerate() {
                let prev = i.checked_sub(1).map(|p| &rank.calls[p]);
                if c.is_completion()
                    && prev.is_some_and(|p| {
                        p.is_completion()
                            && rank.iteration_at(p.begin_s) == rank.iteration_at(c.begin_s)
                    })
                {
                    positions.push(g.ranks[r].len() - 1);
                    prev_end = prev_end.max(c.end_s);
                    continue;
                }
                positions.push(g.ranks.get(r).map_or(0, Vec::len));
                let relative = |p: Option<u32>, what: &str| match p {
                    Some(p) if (p as usize) >= n => Err(err(
                        format!("rank {r}"),
                        format!(
                            "`{}`: {what} {p} is not a rank of the trace (it has {n})",
                            c.call
                        ),
                    )),
                    Some(p) => Ok(format!(" {:+}", i64::from(p) - r as i64)),
                    None => Ok(String::new()),
                };
                let peer = relative(c.peer, "peer")?;
                // An exchange receiving from another rank than it sends to (a ring shift).
                let source = relative(c.source, "source")?;
                let source = if source.is_empty() {
                    source
                } else {
                    format!(" from{source}")
                };
                let event = c.event.map_or(String::new(), |e| format!(" #{e}"));
                let label = format!("{}{peer}{source}{event}", c.call);
                let seconds = (c.begin_s - prev_end).max(0.0);
                g.push(r as u32, &label, seconds, c.event, true);
                prev_end = prev_end.max(c.end_s);
            }
            let seconds = (rank.end_s - prev_end).max(0.0);
            g.push(r as u32, "end", seconds, None, false);
            ends_block.push(positions);
        }
        // Message edges: k-th send a→b with k-th receive on b from a.
        let mut sends: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        let mut receives: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        // Collectives by the ranks they ran among (every rank, or a communicator's): per rank,
        // its calls among them.
        let every: Vec<u32> = (0..n as u32).collect();
        let mut collectives: BTreeMap<Vec<u32>, Vec<Vec<usize>>> = BTreeMap::new();
        for (r, rank) in trace.ranks.iter().enumerate() {
            for (i, c) in rank.calls.iter().enumerate() {
                match (c.peer, c.received_from()) {
                    (Some(p), Some(from)) if c.is_point_to_point() => {
                        if c.is_send() {
                            sends.entry((r, p as usize)).or_default().push(i);
                        }
                        if c.is_receive() {
                            receives.entry((from as usize, r)).or_default().push(i);
                        }
                    }
                    _ if c.is_completion() => {}
                    _ if c.is_point_to_point() => {
                        return Err(err(
                            format!("rank {r}, call {i}"),
                            format!(
                                "`{}` names no peer; a point-to-point call needs one",
                                c.call
                            ),
                        ))
                    }
                    _ => {
                        let members = c.group.as_deref().unwrap_or(&every);
                        if let Some(&m) = members.iter().find(|&&m| m as usize >= n) {
                            return Err(err(
                                format!("rank {r}, call {i}"),
                                format!("`{}` runs among rank {m}, which is not a rank of the trace (it has {n})", c.call),
                            ));
                        }
                        if !members.contains(&(r as u32)) {
                            return Err(err(
                                format!("rank {r}, call {i}"),
                                format!("`{}` runs among ranks {members:?}, which do not include rank {r}", c.call),
                            ));
                        }
                        match collectives.get_mut(members) {
                            Some(calls) => calls[r].push(i),
                            None => {
                                let mut calls = vec![Vec::new(); n];
                                calls[r].push(i);
                                collectives.insert(members.to_vec(), calls);
                            }
                        }
                    }
                }
            }
        }
        let mut pairs: Vec<_> = sends.keys().chain(receives.keys()).copied().collect();
        pairs.sort_unstable();
        pairs.dedup();
        for (a, b) in pairs {
            let s = sends.get(&(a, b)).map_or(&[][..], Vec::as_slice);
            let v = receives.get(&(a, b)).map_or(&[][..], Vec::as_slice);
            if s.len() != v.len() {
                let messages = |k: usize| format!("{k} message{}", if k == 1 { "" } else { "s" });
                return Err(err(
                    format!("rank {a}"),
                    format!(
                        "sends {} to rank {b}, which receives {} from it",
                        messages(s.len()),
                        v.len()
                    ),
                ));
            }
            for (&si, &ri) in s.iter().zip(v) {
                let from = g.ranks[a][ends_block[a][si]];
                let to = g.ranks[b][ends_block[b][ri] + 1];
                g.add_dependency(from, to, EdgeKind::Message);
            }
        }
        for (members, calls) in &collectives {
            let among = if *members == every {
                String::new()
            } else {
                format!(" among ranks {members:?}")
            };
            let members: Vec<usize> = members.iter().map(|&m| m as usize).collect();
            let first = members[0];
            let count = calls[first].len();
            if let Some(&r) = members.iter().find(|&&r| calls[r].len() != count) {
                return Err(err(
                    format!("rank {r}"),
                    format!(
                        "makes {} collective calls{among}, rank {first} makes {count}: collectives cannot be matched",
                        calls[r].len()
                    ),
                ));
            }
            for k in 0..count {
                let name0 = &trace.ranks[first].calls[calls[first][k]].call;
                for &a in &members {
                    let call = &trace.ranks[a].calls[calls[a][k]].call;
                    if call != name0 {
                        return Err(err(
                            format!("rank {a}, collective call {k}{among}"),
                            format!("is `{call}`, rank {first}'s is `{name0}`"),
                        ));
                    }
                    for &b in &members {
                        if a != b {
                            let from = g.ranks[a][ends_block[a][calls[a][k]]];
                            let to = g.ranks[b][ends_block[b][calls[b][k]] + 1];
                            g.add_dependency(from, to, EdgeKind::Collective);
                        }
                    }
                }
            }
        }
        Ok(g)
    }

    /// The number of blocks.
    pub fn len(&self) -> usize {
        self.graph.node_count()
    }

    /// True when the graph has no blocks.
    pub fn is_empty(&self) -> bool {
        self.graph.node_count() == 0
    }

    /// A block's label text.
    pub fn label(&self, node: NodeIndex) -> &str {
        &self.labels[self.graph[node].label as usize]
    }

    /// Predecessors of a block.
    pub fn preds(&self, node: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.graph.neighbors_directed(node, Direction::Incoming)
    }

    /// Successors of a block.
    pub fn succs(&self, node: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        self.graph.neighbors_directed(node, Direction::Outgoing)
    }

    /// The graph in DOT (Graphviz): one cluster per rank; message edges solid, collective edges
    /// dashed, sequence edges grey.
    pub fn to_dot(&self) -> String {
        let mut out = String::from("digraph dependencies {\n  rankdir=TB;\n  node [shape=box];\n");
        for (r, nodes) in self.ranks.iter().enumerate() {
            let _ = writeln!(
                out,
                "  subgraph cluster_rank{r} {{\n    label=\"rank {r}\";"
            );
            for &v in nodes {
                let b = &self.graph[v];
                let _ = writeln!(
                    out,
                    "    b{} [label=\"r{}.{}\\n{}\\n{:.6} s\"];",
                    v.index(),
                    b.rank,
                    b.index,
                    self.label(v).replace('"', "'"),
                    b.seconds
                );
            }
            out.push_str("  }\n");
        }
        for e in self.graph.edge_references() {
            let style = match e.weight() {
                EdgeKind::Sequence => "color=grey",
                EdgeKind::Message => "style=solid",
                EdgeKind::Collective => "style=dashed",
            };
            let _ = writeln!(
                out,
                "  b{} -> b{} [{style}];",
                e.source().index(),
                e.target().index()
            );
        }
        out.push_str("}\n");
        out
    }
}
