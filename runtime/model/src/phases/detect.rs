//! Phases (Gehring, Def. 3), their quality (Def. 4), concatenation (Def. 5) and the
//! phase-detection algorithm of §3.3 (Fig. 4).
//!
//! # Phases as classes of instances
//! The paper's `S_i` holds phases and judges each by `Occ`, the number of isomorphic copies in
//! the graph ("there is only one atomic phase with 12 instances", §3.4). A [`Phase`] here is one
//! such isomorphism class with its instances kept explicitly: the atomic phases are the blocks
//! grouped by label, and the instances of `A ⊕ B` are the `a ⊕ b` of the instances `a` of `A` and
//! `b` of `B` joined by an edge from `a` to `b`. Isomorphism is decided by a canonical form of an
//! instance's labelled induced subgraph ([`canonical_form`]): blocks ordered by rank and position,
//! ranks renumbered from 0 in order, positions counted from the rank's first block in the
//! instance, then labels and edges. It identifies instances that are translations of each other
//! in time and across ranks (the same code one iteration later, or on the next rank — labels
//! carry peers relative to the rank); an isomorphism that reorders ranks is not looked for.
//! `Occ` counts the distinct instances found this way (they may overlap, as the paper's
//! `{A' ⊆ D | A, A' isomorph}` does).
//!
//! # Reconstruction of Fig. 4
//! Fig. 4's text is garbled in the seed; what is legible, with §3.3–3.4's prose, gives:
//! 1. `S_0 := V` (the atomic phases), `S_0* := E` (as pairs of the atomic phases of each edge).
//! 2. While `S_i* ≠ ∅`: take the pair `(A_i, B_i) ∈ S_i*` with the largest `Q(A_i ⊕ B_i)`,
//!    qualities compared lexicographically (Def. 4); ties go to the pair that entered `S*`
//!    first (the paper is silent; this keeps the run deterministic).
//! 3. `S_{i+1} := S_i ∪ {A_i ⊕ B_i}`. A pair whose `A ⊕ B` is isomorphic to a phase already in
//!    `S` would add nothing: it is dropped when it would enter `S*`, or when it is taken if that
//!    phase was made meanwhile, and does not count as an iteration (it lies within a phase
//!    already created, §3.3's reason for `U_i`, read at the level of isomorphism classes).
//! 4. `T_i` (line 5): the pairs `(C, A_i ⊕ B_i)` and `(A_i ⊕ B_i, C)` for every `C` with an
//!    instance joined to an instance of the new phase by an edge in that direction, that instance
//!    of `C` not lying inside the new one (`C ∈ S_i \ (A_i ⊕ B_i)`). The new phase is paired with
//!    itself too: in the paper's view its instances are distinct phases of `S`, and Fig. 5 grows
//!    a phase of identical blocks this way.
//! 5. `U_i` (line 6): the pairs `(F, G)` lying entirely within the new phase — every joined
//!    instance pair `f ∪ g` inside one of its instances ("we exclude pairs lying entirely within
//!    a phase that has already been created", §3.3). The chosen pair itself always leaves `S*`
//!    (in the paper it lies within `A_i ⊕ B_i` by construction).
//! 6. `S_{i+1}* := (S_i* ∪ T_i) \ U_i` (line 7), `i := i + 1`, and `I := i` at the end.
//!
//! §3.4 proves `I ≤ |V|²`; [`detect`] stops at `|V|²` iterations whatever happens and says so
//! ([`Detection::truncated`]), and the tests check the bound is met.
//!
//! # ⊕ (Def. 5)
//! `A ⊕ B` is `A ∪ B` plus every block that feeds it (`γ → (A ∪ B)`). Def. 5 adds the feeders
//! of `B`'s blocks once; a feeder can itself have a predecessor inside the set, so the feeders
//! are added until none is missing, which makes the result a phase by Def. 3 ("the smallest
//! possible phase that includes `A ∪ B`", as §3.2 states).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef as _;
use petgraph::Direction::{Incoming, Outgoing};
use rustc_hash::{FxHashMap, FxHashSet};

use super::graph::DependencyGraph;
use workspace::Workspace;

mod workspace;

/// One phase: an isomorphism class of connected subgraphs, with its instances.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// The canonical form of its instances ([`canonical_form`]).
    pub key: Vec<u32>,
    /// Its instances: sorted block sets, distinct, in the order found.
    pub instances: Vec<Vec<NodeIndex>>,
    /// The phases it was made from (`A ⊕ B`), or `None` for an atomic phase.
    pub made_from: Option<(usize, usize)>,
    by_node: ByNode,
}

/// The instances holding each block, as sorted arrays (a block's list is found by binary
/// search, not by hashing).
#[derive(Debug, Clone, Default, PartialEq)]
struct ByNode {
    /// The blocks some instance holds, ascending.
    nodes: Vec<NodeIndex>,
    /// `instances[starts[k]..starts[k + 1]]` hold `nodes[k]`.
    starts: Vec<u32>,
    /// Instance indices, ascending within each block's range.
    instances: Vec<u32>,
}

impl ByNode {
    fn new(instances: &[Vec<NodeIndex>]) -> Self {
        let mut pairs: Vec<(NodeIndex, u32)> = instances
            .iter()
            .enumerate()
            .flat_map(|(i, inst)| inst.iter().map(move |&v| (v, i as u32)))
            .collect();
        pairs.sort_unstable();
        let mut out = ByNode {
            instances: Vec::with_capacity(pairs.len()),
            ..ByNode::default()
        };
        for (v, i) in pairs {
            if out.nodes.last() != Some(&v) {
                out.nodes.push(v);
                out.starts.push(out.instances.len() as u32);
            }
            out.instances.push(i);
        }
        out.starts.push(out.instances.len() as u32);
        out
    }

    fn get(&self, v: NodeIndex) -> &[u32] {
        match self.nodes.binary_search(&v) {
            Ok(k) => &self.instances[self.starts[k] as usize..self.starts[k + 1] as usize],
            Err(_) => &[],
        }
    }
}

impl Phase {
    fn new(
        key: Vec<u32>,
        instances: Vec<Vec<NodeIndex>>,
        made_from: Option<(usize, usize)>,
    ) -> Self {
        let by_node = ByNode::new(&instances);
        Phase {
            key,
            instances,
            made_from,
            by_node,
        }
    }

    /// `Occ` (Def. 4): the number of instances.
    pub fn occurrences(&self) -> usize {
        self.instances.len()
    }

    /// `|A|`: blocks per instance.
    pub fn blocks(&self) -> usize {
        self.instances.first().map_or(0, Vec::len)
    }

    /// `Q(A) = (Occ(A), |A|)` (Def. 4), compared lexicographically.
    pub fn quality(&self) -> (usize, usize) {
        (self.occurrences(), self.blocks())
    }

    /// The computation time its blocks cover, summed over its instances, seconds.
    pub fn seconds(&self, g: &DependencyGraph) -> f64 {
        self.instances
            .iter()
            .flatten()
            .map(|&v| g.graph[v].seconds)
            .sum()
    }

    /// Instances touching each rank (index = rank).
    pub fn per_rank(&self, g: &DependencyGraph) -> Vec<usize> {
        let mut counts = vec![0; g.ranks.len()];
        for inst in &self.instances {
            let ranks: BTreeSet<u32> = inst.iter().map(|&v| g.graph[v].rank).collect();
            for r in ranks {
                counts[r as usize] += 1;
            }
        }
        counts
    }

    fn contains_instance(&self, set: &[NodeIndex]) -> bool {
        set.first().is_some_and(|&v| {
            self.by_node
                .get(v)
                .iter()
                .any(|&i| is_subset(set, &self.instances[i as usize]))
        })
    }
}

/// One iteration of the algorithm: the pair merged and what it made.
#[derive(Debug, Clone, PartialEq)]
pub struct Merge {
    /// `A_i` and `B_i`, as indices into [`Detection::phases`].
    pub pair: (usize, usize),
    /// `Q(A_i ⊕ B_i)`.
    pub quality: (usize, usize),
    /// The phase `A_i ⊕ B_i`, added to `S` by this iteration.
    pub phase: usize,
}

/// The result of the detection: `S_I` and the merges that built it.
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// `S_I`: the atomic phases, then the phases in the order they were made.
    pub phases: Vec<Phase>,
    /// One entry per iteration `i < I`.
    pub merges: Vec<Merge>,
    /// True when the run stopped at the `|V|²` iterations §3.4 bounds it by.
    pub truncated: bool,
    /// Set when the run stopped at the budget of [`detect_within`] (the phases are then those
    /// made so far).
    pub exhausted: Option<Exhausted>,
}

/// Where a detection stopped at its budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exhausted {
    /// The candidate pairs it held.
    pub pairs: usize,
    /// About the memory it held: the pairs, the phases and the interned block sets.
    pub bytes: usize,
}

impl Detection {
    /// The valuable phases (§3.4): every phase no other phase with the same `Occ` extends (the
    /// phase at the end of each run of equal-`Occ` merges, and the atomic phases nothing with
    /// their `Occ` grew from), best quality first.
    pub fn valuable(&self) -> Vec<usize> {
        // Only phases of equal Occ can extend each other: compare within those groups.
        let mut by_occ: FxHashMap<usize, Vec<usize>> = FxHashMap::default();
        for (p, phase) in self.phases.iter().enumerate() {
            by_occ.entry(phase.occurrences()).or_default().push(p);
        }
        let mut out: Vec<usize> = (0..self.phases.len())
            .filter(|&p| {
                let phase = &self.phases[p];
                !by_occ[&phase.occurrences()].iter().any(|&q| {
                    let other = &self.phases[q];
                    q != p
                        && other.blocks() > phase.blocks()
                        && phase.instances.iter().all(|i| other.contains_instance(i))
                })
            })
            .collect();
        out.sort_by(|&a, &b| {
            self.phases[b]
                .quality()
                .cmp(&self.phases[a].quality())
                .then(a.cmp(&b))
        });
        out
    }
}

struct Candidate {
    pair: (usize, usize),
    quality: (usize, usize),
    /// The canonical form of `A ⊕ B`, as an index into the workspace's forms.
    key: u32,
    /// The instances of `A ⊕ B`, as indices into the workspace's closed sets.
    instances: Vec<u32>,
    /// Every distinct joined `a ∪ b`, to decide whether the pair lies within a phase (`U_i`):
    /// indices into the workspace's unions, in the order of the block sets.
    spans: Vec<u32>,
    /// False while `quality` is only an upper bound (`instances` empty).
    evaluated: bool,
}

impl Candidate {
    /// The memory of its vectors.
    fn bytes(&self) -> usize {
        4 * (self.instances.capacity() + self.spans.capacity())
    }
}

/// A pending pair as `U_i` first looks at it: its index in `pending`, the first block of its first
/// union and that union's size (a pair lies within a phase only if its unions fit in the phase's
/// instances).
type Live = (u32, u32, u32);

fn live_entry(k: usize, c: &Candidate, work: &Workspace) -> Live {
    let first = work.unions.get(c.spans[0]);
    (k as u32, first[0].index() as u32, first.len() as u32)
}

/// Runs the phase-detection algorithm of §3.3 (see the module documentation) on `g`.
///
/// # Cost
/// What the algorithm computes is fixed by the paper; the implementation only avoids computing
/// the same thing twice. The unions `a ∪ b` of joins are interned (a pair keeps their ids), and
/// each union is closed (⊕) and each closed set canonicalised once, however many pairs reach it;
/// scratch arrays indexed by block replace hash sets; a phase's instances by block are sorted
/// arrays; `U_i` looks only at the pairs still pending, skipping without a search those whose
/// first union is larger than the new phase or starts outside it; `T_i` marks the phases it
/// has paired in an array. What remains is the algorithm's own size: `S*` gains a pair for every
/// phase joined to each new one, and on long pipelines of identical blocks (many overlapping
/// instances per phase) that is most of `S` at every merge (study/phases.md).
pub fn detect(g: &DependencyGraph) -> Detection {
    detect_within(g, MAX_PAIRS)
}

/// The memory one candidate pair takes, about (measured on rna's traces: 0.82 million pairs in
/// 252 MB), for messages.
pub const PAIR_BYTES: usize = 300;

/// What a pending pair takes besides its own vectors: its slot and box, its `live` and queue
/// entries and its `paired` key.
const PAIR_OVERHEAD: usize = 8 + std::mem::size_of::<Candidate>() + 12 + 24 + 24;

/// The candidate pairs [`detect`] keeps at most (about [`PAIR_BYTES`] each: 1.2 GB). rna's trace at
/// 192 columns (4 ranks, 2 iterations) needs 0.8 million; at 256 columns the queue outgrew
/// 3 GB. Past the budget the run stops and says so ([`Detection::exhausted`]) rather than
/// exhausting the machine's memory. The memory is bounded as a whole too: a halo exchange
/// without a collective (a loosely coupled run) makes few pairs but many large block sets.
pub const MAX_PAIRS: usize = 4_000_000;

/// [`detect`] keeping at most `max_pairs` candidate pairs, and about `max_pairs` ×
/// [`PAIR_BYTES`] bytes of memory in all: past either the run stops, with the phases made so
/// far and [`Detection::exhausted`] set.
pub fn detect_within(g: &DependencyGraph, max_pairs: usize) -> Detection {
    let n = g.len();
    let mut work = Workspace::new(g);
    // S_0: atomic phases, one per label, in label order.
    let mut by_label: Vec<Vec<Vec<NodeIndex>>> = vec![Vec::new(); g.labels.len()];
    for v in g.graph.node_indices() {
        by_label[g.graph[v].label as usize].push(vec![v]);
    }
    let mut phases: Vec<Phase> = Vec::new();
    // The canonical forms of the phases in S, as indices into the workspace's forms.
    let mut known: FxHashSet<u32> = FxHashSet::default();
    // The (phase, instance) pairs holding each block, phases ascending.
    let mut membership: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
    for instances in by_label.into_iter().filter(|i| !i.is_empty()) {
        let key = work.canonical_form(g, &instances[0]);
        let p = phases.len() as u32;
        for (i, inst) in instances.iter().enumerate() {
            membership[inst[0].index()].push((p, i as u32));
        }
        known.insert(work.forms.intern(key.clone()));
        phases.push(Phase::new(key, instances, None));
    }
    let atomic_of: Vec<usize> = g
        .graph
        .node_indices()
        .map(|v| membership[v.index()][0].0 as usize)
        .collect();
    // S_0* := E, as pairs of atomic phases.
    // Boxed: a taken or removed pair leaves a pointer-sized hole, not a whole candidate.
    let mut pending: Vec<Option<Box<Candidate>>> = Vec::new();
    // The pairs of `pending` that may still be `Some` (compacted by U_i).
    let mut live: Vec<Live> = Vec::new();
    let mut queue: BinaryHeap<((usize, usize), Reverse<usize>)> = BinaryHeap::new();
    let mut paired: FxHashSet<(usize, usize)> = FxHashSet::default();
    // About the memory of the phases and of the candidates' own vectors (not lowered when a
    // candidate goes: a budget, not an account).
    let mut held: usize = 0;
    for e in g.graph.edge_references() {
        let pair = (atomic_of[e.source().index()], atomic_of[e.target().index()]);
        if paired.insert(pair) {
            let c = work.join(g, &phases, pair);
            if c.spans.is_empty() {
                continue;
            }
            held += c.bytes();
            queue.push((c.quality, Reverse(pending.len())));
            live.push(live_entry(pending.len(), &c, &work));
            pending.push(Some(Box::new(c)));
        }
    }
    let cap = n.saturating_mul(n).max(1);
    let mut merges = Vec::new();
    let mut truncated = false;
    let mut exhausted = None;
    let mut covered = vec![false; n];
    let mut side: Vec<u8> = Vec::new();
    // The best pending pair: the largest quality, then the earliest (a max-heap on (Q, -index)
    // with pairs removed by U_i skipped when they surface).
    while let Some((_, Reverse(chosen))) = queue.pop() {
        // The pairs, or the memory as a whole (the interned sets grow too), past the budget.
        let bytes = held + work.bytes() + pending.len() * PAIR_OVERHEAD;
        if pending.len() >= max_pairs || bytes >= max_pairs.saturating_mul(PAIR_BYTES) {
            exhausted = Some(Exhausted {
                pairs: pending.len(),
                bytes,
            });
            break;
        }
        // Lazy evaluation: a pair queued with an upper bound of its quality is evaluated when
        // the bound reaches the top, then queued again with its exact quality. Bounds are never
        // below the exact value, so the pair taken is the one eager evaluation would take.
        let Some(slot) = pending[chosen].as_mut() else {
            continue;
        };
        if !slot.evaluated {
            work.evaluate(g, slot);
            held += 4 * slot.instances.capacity();
            if slot.instances.is_empty() || known.contains(&slot.key) {
                pending[chosen] = None;
            } else {
                queue.push((slot.quality, Reverse(chosen)));
            }
            continue;
        }
        let Some(c) = pending[chosen].take() else {
            continue;
        };
        if merges.len() >= cap {
            truncated = true;
            break;
        }
        if c.instances.is_empty() {
            continue;
        }
        if known.contains(&c.key) {
            // Made since the pair was queued: nothing new, and not an iteration.
            continue;
        }
        let new = phases.len();
        let instances: Vec<Vec<NodeIndex>> = c
            .instances
            .iter()
            .map(|&i| work.closed.get(i).to_vec())
            .collect();
        for (i, inst) in instances.iter().enumerate() {
            for &v in inst {
                membership[v.index()].push((new as u32, i as u32));
            }
        }
        known.insert(c.key);
        let key = work.forms.get(c.key).to_vec();
        held += instances.iter().map(|i| 24 + 12 * i.len()).sum::<usize>();
        phases.push(Phase::new(key, instances, Some(c.pair)));
        merges.push(Merge {
            pair: c.pair,
            quality: c.quality,
            phase: new,
        });
        // U_i: pairs lying entirely within the new phase. Every union of such a pair lies in
        // the blocks the new phase covers, which rules most pairs out without a search.
        let made = &phases[new];
        for &v in &made.by_node.nodes {
            covered[v.index()] = true;
        }
        let size = made.blocks();
        live.retain(|&(k, first, len)| {
            if len as usize > size || !covered[first as usize] {
                // Cannot lie within; if it has left `pending` meanwhile, a later pass drops it.
                return true;
            }
            let k = k as usize;
            let Some(p) = pending[k].as_ref() else {
                return false;
            };
            let unions = &work.unions;
            let within = unions.get(p.spans[0]).iter().all(|v| covered[v.index()])
                && p.spans
                    .iter()
                    .all(|&s| made.contains_instance(unions.get(s)));
            if within {
                pending[k] = None;
            }
            !within
        });
        for &v in &made.by_node.nodes {
            covered[v.index()] = false;
        }
        // T_i: pairs of the new phase with the phases joined to it by an edge.
        // side[p] & 1: p joins the new phase before it; & 2: after it.
        side.resize(phases.len(), 0);
        let (mut before, mut after): (Vec<usize>, Vec<usize>) = (Vec::new(), Vec::new());
        for inst in &made.instances {
            for &u in inst {
                for (bit, direction) in [(1u8, Incoming), (2u8, Outgoing)] {
                    for w in g.graph.neighbors_directed(u, direction) {
                        if inst.binary_search(&w).is_ok() {
                            continue;
                        }
                        for &(p, i) in &membership[w.index()] {
                            let p = p as usize;
                            if side[p] & bit == 0
                                && !is_subset(&phases[p].instances[i as usize], inst)
                            {
                                side[p] |= bit;
                                if bit == 1 {
                                    before.push(p);
                                } else {
                                    after.push(p);
                                }
                            }
                        }
                    }
                }
            }
        }
        for &p in before.iter().chain(&after) {
            side[p] = 0;
        }
        before.sort_unstable();
        after.sort_unstable();
        let pairs: Vec<(usize, usize)> = before
            .into_iter()
            .map(|c| (c, new))
            .chain(after.into_iter().map(|c| (new, c)))
            .collect();
        for pair in pairs {
            if paired.insert(pair) {
                let c = work.join(g, &phases, pair);
                if !c.spans.is_empty() {
                    held += c.bytes();
                    queue.push((c.quality, Reverse(pending.len())));
                    live.push(live_entry(pending.len(), &c, &work));
                    pending.push(Some(Box::new(c)));
                }
            }
        }
    }
    Detection {
        phases,
        merges,
        truncated,
        exhausted,
    }
}

/// `A ∪ B` closed under "feeds" (Def. 5, to a fixed point): while a block of the set has a
/// predecessor inside it, all its predecessors join. The result is sorted.
pub fn concatenate(g: &DependencyGraph, union: &[NodeIndex]) -> Vec<NodeIndex> {
    let mut sorted = union.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    Workspace::new(g).close(g, sorted)
}

/// True when the set is a phase by Def. 3: connected (ignoring direction), and every block with
/// a predecessor inside has all its predecessors inside.
pub fn is_phase(g: &DependencyGraph, set: &[NodeIndex]) -> bool {
    if set.is_empty() {
        return false;
    }
    let inside: FxHashSet<NodeIndex> = set.iter().copied().collect();
    let closed = set.iter().all(|&v| {
        let mut preds = g.preds(v);
        !g.preds(v).any(|p| inside.contains(&p)) || preds.all(|p| inside.contains(&p))
    });
    let mut reached: FxHashSet<NodeIndex> = FxHashSet::from_iter([set[0]]);
    let mut work = vec![set[0]];
    while let Some(v) = work.pop() {
        for w in g.preds(v).chain(g.succs(v)) {
            if inside.contains(&w) && reached.insert(w) {
                work.push(w);
            }
        }
    }
    closed && reached.len() == inside.len()
}

/// The canonical form of an instance's labelled induced subgraph (see the module
/// documentation): equal forms mean isomorphic instances.
pub fn canonical_form(g: &DependencyGraph, set: &[NodeIndex]) -> Vec<u32> {
    Workspace::new(g).canonical_form(g, set)
}

fn is_subset(small: &[NodeIndex], big: &[NodeIndex]) -> bool {
    small.len() <= big.len() && small.iter().all(|v| big.binary_search(v).is_ok())
}
