//! The memory and scratch space of [`detect`](super::detect): the unions of joins, their
//! closures (⊕) and the canonical forms of closed sets, each computed once and named by an index
//! (see the *Cost* section there), and per-block arrays reused by every closure and canonical
//! form.

use std::hash::{Hash, Hasher as _};

use petgraph::graph::NodeIndex;
use petgraph::visit::EdgeRef as _;
use rustc_hash::{FxHashMap, FxHashSet, FxHasher};

use super::{is_subset, Candidate, Phase};
use crate::phases::graph::DependencyGraph;

/// The sorted union of two sorted block sets.
fn union(a: &[NodeIndex], b: &[NodeIndex]) -> Vec<NodeIndex> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push(a[i]);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Block sets or forms, each stored once and named by its index; found by hash, so a set is
/// not kept twice (as a map key and as the item).
pub(super) struct Interner<T> {
    items: Vec<Vec<T>>,
    /// Hash → the last item with it; `next` chains items sharing a hash.
    by_hash: FxHashMap<u64, u32>,
    next: Vec<u32>,
    /// About the memory the items and their indexes take.
    bytes: usize,
}

impl<T: Hash + Eq> Interner<T> {
    fn new() -> Self {
        Interner {
            items: Vec::new(),
            by_hash: FxHashMap::default(),
            next: Vec::new(),
            bytes: 0,
        }
    }

    /// About the memory the interned items take, with their vectors' headers and the index.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(super) fn hash(item: &[T]) -> u64 {
        let mut h = FxHasher::default();
        item.hash(&mut h);
        h.finish()
    }

    pub(super) fn find(&self, item: &[T], hash: u64) -> Option<u32> {
        let mut at = *self.by_hash.get(&hash)?;
        while at != u32::MAX {
            if self.items[at as usize] == item {
                return Some(at);
            }
            at = self.next[at as usize];
        }
        None
    }

    /// The index of `item`, stored if new.
    pub(super) fn intern(&mut self, item: Vec<T>) -> u32 {
        self.intern_new(item).0
    }

    /// The index of `item` and whether it is new.
    fn intern_new(&mut self, item: Vec<T>) -> (u32, bool) {
        let hash = Self::hash(&item);
        if let Some(id) = self.find(&item, hash) {
            return (id, false);
        }
        let id = self.items.len() as u32;
        let previous = self.by_hash.insert(hash, id).unwrap_or(u32::MAX);
        self.next.push(previous);
        // The item's elements, its Vec in `items`, its `next` entry and a hash-map slot.
        self.bytes += item.capacity() * std::mem::size_of::<T>() + 24 + 4 + 16;
        self.items.push(item);
        (id, true)
    }

    pub(super) fn get(&self, id: u32) -> &[T] {
        &self.items[id as usize]
    }
}

/// Scratch space and memory of [`detect`]: per-block arrays (reset after each use) and the
/// unions, closures and canonical forms already computed.
pub(super) struct Workspace {
    inside: Vec<bool>,
    position: Vec<u32>,
    stack: Vec<NodeIndex>,
    /// The unions of joins.
    pub(super) unions: Interner<NodeIndex>,
    /// The closure (⊕) of each union, as an index into `closed`, once computed.
    closures: Vec<u32>,
    /// Closed sets, with the index of each one's canonical form in `forms`.
    pub(super) closed: Interner<NodeIndex>,
    closed_form: Vec<u32>,
    pub(super) forms: Interner<u32>,
}

impl Workspace {
    /// About the memory the interned unions, closed sets and forms take.
    pub(super) fn bytes(&self) -> usize {
        self.unions.bytes()
            + self.closed.bytes()
            + self.forms.bytes()
            + 4 * (self.closures.len() + self.closed_form.len())
    }

    pub(super) fn new(g: &DependencyGraph) -> Self {
        Workspace {
            inside: vec![false; g.len()],
            position: vec![u32::MAX; g.len()],
            stack: Vec::new(),
            unions: Interner::new(),
            closures: Vec::new(),
            closed: Interner::new(),
            closed_form: Vec::new(),
            forms: Interner::new(),
        }
    }

    /// `A ⊕ B` over instances: every `a ⊕ b` for instances joined by an edge from `a` to `b`
    /// (neither inside the other), grouped by canonical form; the pair's result is the group of
    /// best quality (ties: the smaller canonical form). This gathers the distinct unions `a ∪ b`;
    /// [`Workspace::evaluate`] closes and groups them.
    pub(super) fn join(
        &mut self,
        g: &DependencyGraph,
        phases: &[Phase],
        pair: (usize, usize),
    ) -> Candidate {
        let (a, b) = (&phases[pair.0], &phases[pair.1]);
        // seen[ib] == ia + 1: the instance pair (ia, ib) has been looked at.
        let mut seen: Vec<u32> = vec![0; b.instances.len()];
        let mut spans: Vec<u32> = Vec::new();
        for (ia, inst_a) in a.instances.iter().enumerate() {
            let stamp = ia as u32 + 1;
            for &u in inst_a {
                for v in g.succs(u) {
                    for &ib in b.by_node.get(v) {
                        if std::mem::replace(&mut seen[ib as usize], stamp) == stamp {
                            continue;
                        }
                        let inst_b = &b.instances[ib as usize];
                        if is_subset(inst_a, inst_b) || is_subset(inst_b, inst_a) {
                            continue;
                        }
                        spans.push(self.intern_union(union(inst_a, inst_b)));
                    }
                }
            }
        }
        let unions = &self.unions;
        spans.sort_unstable_by(|&x, &y| unions.get(x).cmp(unions.get(y)));
        spans.dedup();
        // Each instance of A ⊕ B comes from at least one distinct union: an upper bound on Occ.
        Candidate {
            pair,
            quality: (spans.len(), g.len()),
            key: u32::MAX,
            instances: Vec::new(),
            spans,
            evaluated: false,
        }
    }

    fn intern_union(&mut self, set: Vec<NodeIndex>) -> u32 {
        let (id, new) = self.unions.intern_new(set);
        if new {
            self.closures.push(u32::MAX);
        }
        id
    }

    /// The closed set of a union, by its index into `closed`: computed once per union.
    fn closure_of(&mut self, g: &DependencyGraph, union: u32) -> u32 {
        let known = self.closures[union as usize];
        if known != u32::MAX {
            return known;
        }
        let set = self.concatenate_id(g, union);
        let hash = Interner::hash(&set);
        let id = match self.closed.find(&set, hash) {
            Some(id) => id,
            None => {
                let form = self.canonical_form(g, &set);
                let form_id = self.forms.intern(form);
                let id = self.closed.intern(set);
                debug_assert_eq!(id as usize, self.closed_form.len());
                self.closed_form.push(form_id);
                id
            }
        };
        self.closures[union as usize] = id;
        id
    }

    /// Closes every union of a [`join`] (⊕) and keeps the best isomorphism class: its quality,
    /// canonical form and instances.
    pub(super) fn evaluate(&mut self, g: &DependencyGraph, c: &mut Candidate) {
        // Canonical form → the distinct closed sets in it, in the order first reached.
        let mut groups: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        let mut distinct: FxHashSet<u32> = FxHashSet::default();
        for &union in &c.spans {
            let id = self.closure_of(g, union);
            if distinct.insert(id) {
                groups
                    .entry(self.closed_form[id as usize])
                    .or_default()
                    .push(id);
            }
        }
        let closed = &self.closed;
        let forms = &self.forms;
        let best = groups.into_iter().max_by(|(fa, ia), (fb, ib)| {
            let size = |i: &Vec<u32>| closed.get(i[0]).len();
            (ia.len(), size(ia))
                .cmp(&(ib.len(), size(ib)))
                .then_with(|| forms.get(*fb).cmp(forms.get(*fa)))
        });
        if let Some((form, ids)) = best {
            c.quality = (ids.len(), closed.get(ids[0]).len());
            c.instances = ids;
            c.key = form;
        } else {
            c.quality = (0, 0);
        }
        c.evaluated = true;
    }

    fn concatenate_id(&mut self, g: &DependencyGraph, union: u32) -> Vec<NodeIndex> {
        let set = self.unions.get(union).to_vec();
        self.close(g, set)
    }

    /// See [`concatenate`]; `set` is sorted.
    pub(super) fn close(&mut self, g: &DependencyGraph, mut set: Vec<NodeIndex>) -> Vec<NodeIndex> {
        let inside = &mut self.inside;
        let stack = &mut self.stack;
        for &v in &set {
            inside[v.index()] = true;
        }
        stack.clear();
        stack.extend_from_slice(&set);
        while let Some(v) = stack.pop() {
            if g.preds(v).any(|p| inside[p.index()]) {
                for p in g.preds(v) {
                    if !inside[p.index()] {
                        inside[p.index()] = true;
                        set.push(p);
                        stack.push(p);
                    }
                }
            }
            // A block that just joined may make a block already in the set need its feeders.
            for s in g.succs(v) {
                if inside[s.index()] && g.preds(s).any(|p| !inside[p.index()]) {
                    stack.push(s);
                }
            }
        }
        for &v in &set {
            inside[v.index()] = false;
        }
        set.sort_unstable();
        set
    }

    /// See [`canonical_form`].
    pub(super) fn canonical_form(&mut self, g: &DependencyGraph, set: &[NodeIndex]) -> Vec<u32> {
        let mut nodes = set.to_vec();
        nodes.sort_by_key(|&v| (g.graph[v].rank, g.graph[v].index));
        let mut key = Vec::with_capacity(nodes.len() * 3 + 1);
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
            self.position[v.index()] = i as u32;
        }
        key.push(u32::MAX);
        let mut edges: Vec<(u32, u32, u32)> = Vec::new();
        for &v in &nodes {
            for e in g.graph.edges(v) {
                let to = self.position[e.target().index()];
                if to != u32::MAX {
                    edges.push((self.position[v.index()], to, *e.weight() as u32));
                }
            }
        }
        for &v in &nodes {
            self.position[v.index()] = u32::MAX;
        }
        edges.sort_unstable();
        key.extend(edges.into_iter().flat_map(|(a, b, k)| [a, b, k]));
        key
    }
}
