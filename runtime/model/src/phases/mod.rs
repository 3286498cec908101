//! Program phases seen from outside (seed 003: Gehring, "Dynamic Program Description as a Basis
//! for Runtime Optimization"): independent blocks and the dependency graph of a run's Chrome
//! trace ([`graph`], Defs. 1–2), and the phases the detection algorithm of §3.3 finds in it
//! ([`detect`], Defs. 3–5). [`analyse`] does both and summarises the valuable phases;
//! [`agreement`] maps the repeating phase of the main loop onto a structure file's events and,
//! through [`sections`], its parallel sections' boundaries.
//!
//! Pure computation: the caller reads the trace and the structure.

pub mod detect;
pub mod graph;
pub mod sections;
pub mod trace;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use mheta_runtime::format::{SectionItem, Structure};

pub use detect::{detect, Detection, Merge, Phase};
pub use graph::{Block, DependencyGraph, EdgeKind};
pub use sections::{ClosingCall, ExtraBoundary, SectionAgreement};
pub use trace::Trace;

use crate::ModelError;

/// One detected phase, as `mheta phases` reports it.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct PhaseSummary {
    /// `Occ(A)`: how many times it occurs in the run.
    pub occurrences: usize,
    /// `|A|`: its independent blocks per occurrence.
    pub blocks: usize,
    /// The computation time its blocks cover, summed over its occurrences, seconds.
    pub seconds: f64,
    /// Occurrences touching each rank (index = rank); a rank it never touches has 0.
    pub ranks: Vec<usize>,
    /// The labels of one occurrence's blocks, by rank then position.
    pub labels: Vec<String>,
    /// The structure events of the calls ending its blocks.
    pub events: Vec<u32>,
    /// Blocks ended by a call that belongs to no structure event.
    pub unattributed_calls: usize,
    /// One occurrence's calls closing its blocks, per rank (index = rank) in block order.
    #[serde(skip)]
    pub closing_calls: Vec<Vec<ClosingCall>>,
}

/// What [`analyse`] finds in a trace.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The dependency graph.
    pub graph: DependencyGraph,
    /// The algorithm's run.
    pub detection: Detection,
    /// The valuable phases, best quality first.
    pub phases: Vec<PhaseSummary>,
    /// Index into `phases` of the repeating phase of the main loop ([`main_loop_of`]).
    pub main_loop: Option<usize>,
    /// Main-loop iterations each rank recorded (`cat` "iteration"), K.
    pub iterations: Vec<usize>,
}

/// Builds the dependency graph of a trace and detects its phases; `file` names the trace in
/// errors.
pub fn analyse(trace: &Trace, file: &str) -> Result<Analysis, ModelError> {
    analyse_within(trace, file, detect::MAX_PAIRS)
}

/// [`analyse`] with the detection keeping at most `max_pairs` candidate pairs
/// ([`detect::detect_within`]).
pub fn analyse_within(trace: &Trace, file: &str, max_pairs: usize) -> Result<Analysis, ModelError> {
    let graph = DependencyGraph::from_trace(trace, file)?;
    let detection = detect::detect_within(&graph, max_pairs);
    let phases: Vec<PhaseSummary> = detection
        .valuable()
        .into_iter()
        .map(|p| summarise(&graph, &detection.phases[p]))
        .collect();
    let iterations: Vec<usize> = trace.ranks.iter().map(|r| r.iterations()).collect();
    let main_loop = main_loop_of(&phases, &iterations);
    Ok(Analysis {
        graph,
        detection,
        phases,
        main_loop,
        iterations,
    })
}

/// The repeating phase of the main loop among `phases` (best quality first), given the
/// main-loop iterations each rank recorded: of the phases occurring more than once whose every
/// occurrence spans every rank once, the best by quality (Def. 4) — and, when every rank
/// recorded the same K ≥ 2 iterations and such a phase occurs exactly K times, the best of
/// those. Without the iteration count a pipeline's tiles can win: with three tiles per pass, a
/// phase of two tiles across all ranks occurs 2K times and outranks the body, which occurs K
/// times.
///
/// When some ranks recorded iterations and others none (a solver run on a communicator split
/// off the world, which the other ranks never enter), "every rank" means every rank that
/// recorded iterations: a rank without any may be in the phase or not.
pub fn main_loop_of(phases: &[PhaseSummary], iterations: &[usize]) -> Option<usize> {
    let some_loop = iterations.iter().any(|&i| i > 0);
    let looped = |r: usize| !some_loop || iterations.get(r).is_some_and(|&i| i > 0);
    let spanning = |p: &PhaseSummary| {
        p.occurrences >= 2
            && p.ranks
                .iter()
                .enumerate()
                .all(|(r, &k)| k == p.occurrences || (k == 0 && !looped(r)))
    };
    let mut looping = iterations.iter().copied().filter(|&i| !some_loop || i > 0);
    let k = looping
        .next()
        .filter(|&k| k >= 2 && looping.all(|i| i == k));
    let per_iteration = |p: &PhaseSummary| Some(p.occurrences) == k;
    let best = |keep: &dyn Fn(&PhaseSummary) -> bool| {
        phases
            .iter()
            .enumerate()
            .filter(|(_, p)| spanning(p) && keep(p))
            .max_by(|(i, a), (j, b)| {
                (a.occurrences, a.blocks)
                    .cmp(&(b.occurrences, b.blocks))
                    .then(j.cmp(i))
            })
            .map(|(i, _)| i)
    };
    best(&per_iteration).or_else(|| best(&|_| true))
}

/// The report line of one phase.
pub fn summarise(g: &DependencyGraph, phase: &Phase) -> PhaseSummary {
    let mut one = phase.instances.first().cloned().unwrap_or_default();
    one.sort_by_key(|&v| (g.graph[v].rank, g.graph[v].index));
    let mut closing_calls: Vec<Vec<ClosingCall>> = vec![Vec::new(); g.ranks.len()];
    for &v in &one {
        let b = &g.graph[v];
        if b.has_call {
            closing_calls[b.rank as usize].push(ClosingCall {
                label: g.label(v).to_string(),
                event: b.event,
            });
        }
    }
    let events: BTreeSet<u32> = phase
        .instances
        .iter()
        .flatten()
        .filter_map(|&v| g.graph[v].event)
        .collect();
    PhaseSummary {
        occurrences: phase.occurrences(),
        blocks: phase.blocks(),
        seconds: phase.seconds(g),
        ranks: phase.per_rank(g),
        labels: one
            .iter()
            .map(|&v| format!("r{}: {}", g.graph[v].rank, g.label(v)))
            .collect(),
        events: events.into_iter().collect(),
        unattributed_calls: one
            .iter()
            .filter(|&&v| g.graph[v].has_call && g.graph[v].event.is_none())
            .count(),
        closing_calls,
    }
}

/// How the repeating phase of the main loop compares with a structure file.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Agreement {
    /// The solver compared with (the one sharing the most events with the phase).
    pub solver: String,
    /// Events the run shows in the phase that the solver's structure lacks.
    pub run_only: Vec<u32>,
    /// Events of the structure (run in every iteration) the phase does not show.
    pub structure_only: Vec<u32>,
    /// Conditional events of the structure (`frequency` < 1) the phase does not show: not a
    /// disagreement, they need not run in every iteration.
    pub conditional_absent: Vec<u32>,
    /// Communication calls in the phase that belong to no structure event (an analyzer miss).
    pub unattributed_calls: usize,
    /// The solver's section boundaries against the phase's ([`sections`]); `None` without a
    /// main-loop phase or a solver.
    pub sections: Option<SectionAgreement>,
    /// Whether there is no disagreement, in events or in section boundaries.
    pub agree: bool,
}

/// Maps the main-loop phase onto the structure's events and lists every disagreement: an event
/// the run shows that the structure lacks, an event (run every iteration) the structure has
/// that the run does not show, a call in the phase outside any event; then compares the
/// solver's section boundaries with the phase's ([`sections::compare`]). Without a main-loop
/// phase every structure event is missing from the run.
pub fn agreement(phase: Option<&PhaseSummary>, structure: &Structure) -> Agreement {
    let seen: BTreeSet<u32> = phase
        .map(|p| p.events.iter().copied().collect())
        .unwrap_or_default();
    let mut best: Option<(usize, Agreement)> = None;
    for solver in &structure.solvers {
        let mut every: BTreeSet<u32> = BTreeSet::new();
        let mut conditional: BTreeSet<u32> = BTreeSet::new();
        for section in &solver.sections {
            let tiles = section.items.iter().flat_map(|item| match item {
                SectionItem::Tiles(t) => vec![t.recv.as_ref(), t.send.as_ref()],
                SectionItem::Stage(_) => Vec::new(),
            });
            for e in section.comm.as_ref().into_iter().chain(tiles.flatten()) {
                if !e.in_every_iteration() {
                    conditional.insert(e.id);
                } else {
                    every.insert(e.id);
                }
            }
        }
        let shared = seen
            .iter()
            .filter(|e| every.contains(e) || conditional.contains(e))
            .count();
        let run_only: Vec<u32> = seen
            .iter()
            .filter(|e| !every.contains(e) && !conditional.contains(e))
            .copied()
            .collect();
        let structure_only: Vec<u32> = every.difference(&seen).copied().collect();
        let conditional_absent: Vec<u32> = conditional.difference(&seen).copied().collect();
        let unattributed_calls = phase.map_or(0, |p| p.unattributed_calls);
        let sections = phase.map(|p| sections::compare(&p.closing_calls, solver));
        let agree = phase.is_some()
            && run_only.is_empty()
            && structure_only.is_empty()
            && unattributed_calls == 0
            && sections.as_ref().is_some_and(|s| s.agree);
        let a = Agreement {
            solver: solver.name.clone(),
            run_only,
            structure_only,
            conditional_absent,
            unattributed_calls,
            sections,
            agree,
        };
        if best.as_ref().map_or(true, |(s, _)| shared > *s) {
            best = Some((shared, a));
        }
    }
    best.map(|(_, a)| a).unwrap_or(Agreement {
        solver: String::new(),
        run_only: seen.into_iter().collect(),
        structure_only: Vec::new(),
        conditional_absent: Vec::new(),
        unattributed_calls: phase.map_or(0, |p| p.unattributed_calls),
        sections: None,
        agree: false,
    })
}
