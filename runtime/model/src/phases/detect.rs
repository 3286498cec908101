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
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};

use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef as _;

use super::graph::DependencyGraph;

/// One phase: an isomorphism class of connected subgraphs, with its instances.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// The canonical form of its instances ([`canonical_form`]).
    pub key: Vec<u32>,
    /// Its instances: sorted block sets, distinct, in the order found.
    pub instances: Vec<Vec<NodeIndex>>,
    /// The phases it was made from (`A ⊕ B`), or `None` for an atomic phase.
    pub made_from: Option<(usize, usize)>,
    by_node: HashMap<NodeIndex, Vec<usize>>,
}

impl Phase {
    fn new(
        key: Vec<u32>,
        instances: Vec<Vec<NodeIndex>>,
        made_from: Option<(usize, usize)>,
    ) -> Self {
        let mut by_node: HashMap<NodeIndex, Vec<usize>> = HashMap::new();
        for (i, inst) in instances.iter().enumerate() {
            for &v in inst {
                by_node.entry(v).or_default().push(i);
            }
        }
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
        set.first().is_some_and(|v| {
            self.by_node
                .get(v)
                .is_some_and(|list| list.iter().any(|&i| is_subset(set, &self.instances[i])))
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
}

impl Detection {
    /// The valuable phases (§3.4): every phase no other phase with the same `Occ` extends (the
    /// phase at the end of each run of equal-`Occ` merges, and the atomic phases nothing with
    /// their `Occ` grew from), best quality first.
    pub fn valuable(&self) -> Vec<usize> {
        let mut out: Vec<usize> = (0..self.phases.len())
            .filter(|&p| {
                let phase = &self.phases[p];
                !self.phases.iter().enumerate().any(|(q, other)| {
                    q != p
                        && other.occurrences() == phase.occurrences()
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
    key: Vec<u32>,
    instances: Vec<Vec<NodeIndex>>,
    /// Every distinct joined `a ∪ b`, to decide whether the pair lies within a phase (`U_i`).
    spans: Vec<Vec<NodeIndex>>,
    /// False while `quality` is only an upper bound (`instances` and `key` empty).
    evaluated: bool,
}

/// Runs the phase-detection algorithm of §3.3 (see the module documentation) on `g`.
pub fn detect(g: &DependencyGraph) -> Detection {
    let n = g.len();
    // S_0: atomic phases, one per label, in label order.
    let mut by_label: Vec<Vec<Vec<NodeIndex>>> = vec![Vec::new(); g.labels.len()];
    for v in g.graph.node_indices() {
        by_label[g.graph[v].label as usize].push(vec![v]);
    }
    let mut phases: Vec<Phase> = Vec::new();
    let mut known: HashMap<Vec<u32>, usize> = HashMap::new();
    let mut membership: Vec<Vec<(usize, usize)>> = vec![Vec::new(); n];
    for instances in by_label.into_iter().filter(|i| !i.is_empty()) {
        let key = canonical_form(g, &instances[0]);
        let p = phases.len();
        for (i, inst) in instances.iter().enumerate() {
            membership[inst[0].index()].push((p, i));
        }
        known.insert(key.clone(), p);
        phases.push(Phase::new(key, instances, None));
    }
    let atomic_of: Vec<usize> = g
        .graph
        .node_indices()
        .map(|v| membership[v.index()][0].0)
        .collect();
    // S_0* := E, as pairs of atomic phases.
    let mut pending: Vec<Option<Candidate>> = Vec::new();
    let mut queue: BinaryHeap<((usize, usize), Reverse<usize>)> = BinaryHeap::new();
    let mut paired: HashSet<(usize, usize)> = HashSet::new();
    for e in g.graph.edge_references() {
        let pair = (atomic_of[e.source().index()], atomic_of[e.target().index()]);
        if paired.insert(pair) {
            let c = join(g, &phases, pair);
            if c.spans.is_empty() {
                continue;
            }
            queue.push((c.quality, Reverse(pending.len())));
            pending.push(Some(c));
        }
    }
    let cap = n.saturating_mul(n).max(1);
    let mut merges = Vec::new();
    let mut truncated = false;
    // The best pending pair: the largest quality, then the earliest (a max-heap on (Q, -index)
    // with pairs removed by U_i skipped when they surface).
    while let Some((_, Reverse(chosen))) = queue.pop() {
        // Lazy evaluation: a pair queued with an upper bound of its quality is evaluated when
        // the bound reaches the top, then queued again with its exact quality. Bounds are never
        // below the exact value, so the pair taken is the one eager evaluation would take.
        let Some(slot) = pending[chosen].as_mut() else {
            continue;
        };
        if !slot.evaluated {
            evaluate(g, slot);
            if slot.instances.is_empty() || known.contains_key(&slot.key) {
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
        if known.contains_key(&c.key) {
            // Made since the pair was queued: nothing new, and not an iteration.
            continue;
        }
        let new = phases.len();
        for (i, inst) in c.instances.iter().enumerate() {
            for &v in inst {
                membership[v.index()].push((new, i));
            }
        }
        known.insert(c.key.clone(), new);
        phases.push(Phase::new(c.key, c.instances, Some(c.pair)));
        merges.push(Merge {
            pair: c.pair,
            quality: c.quality,
            phase: new,
        });
        // U_i: pairs lying entirely within the new phase.
        let made = &phases[new];
        for slot in pending.iter_mut() {
            if slot
                .as_ref()
                .is_some_and(|p| p.spans.iter().all(|s| made.contains_instance(s)))
            {
                *slot = None;
            }
        }
        // T_i: pairs of the new phase with the phases joined to it by an edge.
        let mut before: BTreeSet<usize> = BTreeSet::new();
        let mut after: BTreeSet<usize> = BTreeSet::new();
        for inst in &made.instances {
            for &u in inst {
                for (side, outside) in [
                    (&mut before, g.preds(u).collect::<Vec<_>>()),
                    (&mut after, g.succs(u).collect::<Vec<_>>()),
                ] {
                    for w in outside {
                        if inst.binary_search(&w).is_ok() {
                            continue;
                        }
                        for &(p, i) in &membership[w.index()] {
                            if !is_subset(&phases[p].instances[i], inst) {
                                side.insert(p);
                            }
                        }
                    }
                }
            }
        }
        let pairs: Vec<(usize, usize)> = before
            .into_iter()
            .map(|c| (c, new))
            .chain(after.into_iter().map(|c| (new, c)))
            .collect();
        for pair in pairs {
            if paired.insert(pair) {
                let c = join(g, &phases, pair);
                if !c.spans.is_empty() {
                    queue.push((c.quality, Reverse(pending.len())));
                    pending.push(Some(c));
                }
            }
        }
    }
    Detection {
        phases,
        merges,
        truncated,
    }
}

/// `A ⊕ B` over instances: every `a ⊕ b` for instances joined by an edge from `a` to `b` (neither
/// inside the other), grouped by canonical form; the pair's result is the group of best quality
/// (ties: the smaller canonical form).
fn join(g: &DependencyGraph, phases: &[Phase], pair: (usize, usize)) -> Candidate {
    let (a, b) = (&phases[pair.0], &phases[pair.1]);
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    let mut spans: BTreeSet<Vec<NodeIndex>> = BTreeSet::new();
    for (ia, inst_a) in a.instances.iter().enumerate() {
        for &u in inst_a {
            for v in g.succs(u) {
                let Some(list) = b.by_node.get(&v) else {
                    continue;
                };
                for &ib in list {
                    if !seen.insert((ia, ib)) {
                        continue;
                    }
                    let inst_b = &b.instances[ib];
                    if is_subset(inst_a, inst_b) || is_subset(inst_b, inst_a) {
                        continue;
                    }
                    let mut union: Vec<NodeIndex> = inst_a.iter().chain(inst_b).copied().collect();
                    union.sort_unstable();
                    union.dedup();
                    spans.insert(union);
                }
            }
        }
    }
    // Each instance of A ⊕ B comes from at least one distinct union: an upper bound on Occ.
    Candidate {
        pair,
        quality: (spans.len(), g.len()),
        key: Vec::new(),
        instances: Vec::new(),
        spans: spans.into_iter().collect(),
        evaluated: false,
    }
}

/// Closes every union of a [`join`] (⊕) and keeps the best isomorphism class: its quality,
/// canonical form and instances.
fn evaluate(g: &DependencyGraph, c: &mut Candidate) {
    let mut groups: HashMap<Vec<u32>, Vec<Vec<NodeIndex>>> = HashMap::new();
    let mut distinct: HashSet<Vec<NodeIndex>> = HashSet::new();
    for union in &c.spans {
        let closed = concatenate(g, union);
        if distinct.insert(closed.clone()) {
            groups
                .entry(canonical_form(g, &closed))
                .or_default()
                .push(closed);
        }
    }
    let best = groups.into_iter().max_by(|(ka, ia), (kb, ib)| {
        (ia.len(), ia[0].len())
            .cmp(&(ib.len(), ib[0].len()))
            .then_with(|| kb.cmp(ka))
    });
    if let Some((key, instances)) = best {
        c.quality = (instances.len(), instances[0].len());
        c.key = key;
        c.instances = instances;
    } else {
        c.quality = (0, 0);
    }
    c.evaluated = true;
}

/// `A ∪ B` closed under "feeds" (Def. 5, to a fixed point): while a block of the set has a
/// predecessor inside it, all its predecessors join. The result is sorted.
pub fn concatenate(g: &DependencyGraph, union: &[NodeIndex]) -> Vec<NodeIndex> {
    let mut set: BTreeSet<NodeIndex> = union.iter().copied().collect();
    let mut work: Vec<NodeIndex> = set.iter().copied().collect();
    while let Some(v) = work.pop() {
        let preds: Vec<NodeIndex> = g.preds(v).collect();
        if preds.iter().any(|p| set.contains(p)) {
            for p in preds {
                if set.insert(p) {
                    work.push(p);
                }
            }
        }
        // A block that just joined may make a block already in the set need its feeders.
        for s in g.succs(v).collect::<Vec<_>>() {
            if set.contains(&s) && g.preds(s).any(|p| !set.contains(&p)) {
                work.push(s);
            }
        }
    }
    set.into_iter().collect()
}

/// True when the set is a phase by Def. 3: connected (ignoring direction), and every block with
/// a predecessor inside has all its predecessors inside.
pub fn is_phase(g: &DependencyGraph, set: &[NodeIndex]) -> bool {
    if set.is_empty() {
        return false;
    }
    let inside: HashSet<NodeIndex> = set.iter().copied().collect();
    let closed = set.iter().all(|&v| {
        let mut preds = g.preds(v);
        !g.preds(v).any(|p| inside.contains(&p)) || preds.all(|p| inside.contains(&p))
    });
    let mut reached: HashSet<NodeIndex> = HashSet::from([set[0]]);
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
    let mut nodes = set.to_vec();
    nodes.sort_by_key(|&v| (g.graph[v].rank, g.graph[v].index));
    let mut key = Vec::with_capacity(nodes.len() * 3 + 1);
    let mut position: HashMap<NodeIndex, u32> = HashMap::new();
    let (mut local, mut current, mut base) = (0u32, None, 0u32);
    for (i, &v) in nodes.iter().enumerate() {
        let b = &g.graph[v];
        if current != Some(b.rank) {
            if current.is_some() {
                local += 1;
            }
            (current, base) = (Some(b.rank), b.index);
        }
        key.extend([local, b.index - base, b.label]);
        position.insert(v, i as u32);
    }
    key.push(u32::MAX);
    let mut edges: Vec<(u32, u32, u32)> = Vec::new();
    for &v in &nodes {
        for e in g.graph.edges(v) {
            if let Some(&to) = position.get(&e.target()) {
                edges.push((position[&v], to, *e.weight() as u32));
            }
        }
    }
    edges.sort_unstable();
    key.extend(edges.into_iter().flat_map(|(a, b, k)| [a, b, k]));
    key
}

fn is_subset(small: &[NodeIndex], big: &[NodeIndex]) -> bool {
    small.len() <= big.len() && small.iter().all(|v| big.binary_search(v).is_ok())
}
