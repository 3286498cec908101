//! The structure's parallel sections against the run: where the repeating phase of the main
//! loop shows section boundaries.
//!
//! A structure file splits every iteration into sections, each closed by a communication event
//! (`Section::comm`), or by the end of the iteration or a repeated group (`comm` null, no call
//! the run can show). A tile loop's receive and send events run inside their section, once per
//! tile. In the run a boundary is a critical communication: the call closing an independent block
//! (Def. 1). So on each rank, the calls closing the main-loop phase's blocks should be, in order,
//! the calls of the sections' closing events, with tile calls between them, and nothing else.
//!
//! On each rank the closing calls are read in order: a call of a section's closing event is that
//! section's boundary (consecutive calls of one event, such as the send and the receive of one
//! halo exchange, are one boundary); a tile call is no boundary; any other call (no structure
//! event, or an event the structure lacks) is a boundary the structure lacks, reported in the
//! section that the next boundary closes. The boundaries are compared with the structure's as
//! cycles: a phase instance covers one iteration but need not start where the iteration does.
//! A rank may show fewer boundaries than the structure (a point-to-point event without a peer on
//! that rank); a section boundary run in every iteration that no rank shows is a disagreement.
//! With repeated groups the sections do not follow each other once per iteration, and the order
//! is not compared. A phase instance may cover several iterations (a chain of ranks without a
//! global synchronisation, whose ranks drift an iteration apart): its boundaries then repeat the
//! cycle, which is compared once.

use std::collections::{BTreeMap, BTreeSet};

use mheta_runtime::format::{SectionItem, Solver};

/// A call closing one block of the main-loop phase: the block's label and its call's event.
#[derive(Debug, Clone, PartialEq)]
pub struct ClosingCall {
    /// The block's label (`send +1 #0`).
    pub label: String,
    /// The structure event of the call, if it belongs to one.
    pub event: Option<u32>,
}

/// A boundary the run shows and the structure lacks.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ExtraBoundary {
    /// The rank that shows it.
    pub rank: u32,
    /// The section it falls in (the one the rank's next boundary closes), if the rank shows any.
    pub section: Option<u32>,
    /// The label of the block its call closes.
    pub call: String,
}

/// How the main-loop phase's boundaries compare with the structure's sections.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SectionAgreement {
    /// The structure's boundaries a run can show, in order: `[section, closing event]`.
    pub structure: Vec<(u32, u32)>,
    /// Per rank, the sections whose boundaries the run shows, in the order shown.
    pub run: Vec<Vec<u32>>,
    /// Boundaries the run shows that the structure lacks.
    pub run_only: Vec<ExtraBoundary>,
    /// Sections whose boundary (an event run in every iteration) no rank shows.
    pub structure_only: Vec<u32>,
    /// Ranks whose boundaries come in another order than the structure's sections.
    pub out_of_order: Vec<u32>,
    /// Whether the order was compared (not with repeated groups).
    pub order_compared: bool,
    /// Whether there is no disagreement.
    pub agree: bool,
}

/// Compares the closing calls of one instance of the main-loop phase, per rank in block order,
/// with `solver`'s sections (see the module documentation).
pub fn compare(calls: &[Vec<ClosingCall>], solver: &Solver) -> SectionAgreement {
    let mut closing: BTreeMap<u32, u32> = BTreeMap::new();
    let mut structure: Vec<(u32, u32)> = Vec::new();
    let mut every: BTreeSet<u32> = BTreeSet::new();
    let mut tiles: BTreeSet<u32> = BTreeSet::new();
    for section in &solver.sections {
        if let Some(e) = &section.comm {
            closing.insert(e.id, section.id);
            structure.push((section.id, e.id));
            if e.in_every_iteration() {
                every.insert(section.id);
            }
        }
        for item in &section.items {
            if let SectionItem::Tiles(t) = item {
                tiles.extend(t.recv.iter().chain(&t.send).map(|e| e.id));
            }
        }
    }
    let order_compared = solver.sections.iter().all(|s| s.group.is_none());
    let mut run: Vec<Vec<u32>> = Vec::new();
    let mut run_only: Vec<ExtraBoundary> = Vec::new();
    let mut out_of_order: Vec<u32> = Vec::new();
    for (rank, rank_calls) in calls.iter().enumerate() {
        let mut seq: Vec<u32> = Vec::new();
        // Extra boundaries waiting for the section the next boundary closes.
        let mut waiting: Vec<ExtraBoundary> = Vec::new();
        let mut placed: Vec<ExtraBoundary> = Vec::new();
        for call in rank_calls {
            match call.event {
                Some(e) if closing.contains_key(&e) => {
                    let s = closing[&e];
                    if seq.last() != Some(&s) {
                        seq.push(s);
                    }
                    for mut x in waiting.drain(..) {
                        x.section = Some(s);
                        placed.push(x);
                    }
                }
                Some(e) if tiles.contains(&e) => {}
                _ => waiting.push(ExtraBoundary {
                    rank: rank as u32,
                    section: None,
                    call: call.label.clone(),
                }),
            }
        }
        // The cycle: the calls after the last boundary belong to the section the first closes.
        let first = seq.first().copied();
        placed.extend(waiting.into_iter().map(|x| ExtraBoundary {
            section: first,
            ..x
        }));
        while seq.len() > 1 && seq.first() == seq.last() {
            seq.pop();
        }
        // A phase instance of several iterations (ranks of a chain with no global
        // synchronisation drift an iteration apart, and the detection joins them) shows the
        // cycle repeated: it is compared once.
        seq.truncate(period(&seq));
        if order_compared {
            let shown: BTreeSet<u32> = seq.iter().copied().collect();
            let expected: Vec<u32> = structure
                .iter()
                .map(|&(s, _)| s)
                .filter(|s| shown.contains(s))
                .collect();
            if !is_rotation(&seq, &expected) {
                out_of_order.push(rank as u32);
            }
        }
        run_only.extend(placed);
        run.push(seq);
    }
    let shown: BTreeSet<u32> = run.iter().flatten().copied().collect();
    let structure_only: Vec<u32> = every.difference(&shown).copied().collect();
    let agree = run_only.is_empty() && structure_only.is_empty() && out_of_order.is_empty();
    SectionAgreement {
        structure,
        run,
        run_only,
        structure_only,
        out_of_order,
        order_compared,
        agree,
    }
}

/// The length of the shortest prefix of `seq` that repeated makes it (`[0, 1, 0, 1]`: 2).
fn period(seq: &[u32]) -> usize {
    (1..=seq.len())
        .find(|&p| seq.len() % p == 0 && seq.chunks(p).all(|c| c == &seq[..p]))
        .unwrap_or(seq.len())
}

/// True when `a` is `b` rotated.
fn is_rotation(a: &[u32], b: &[u32]) -> bool {
    a.len() == b.len()
        && (a.is_empty() || (0..b.len()).any(|k| a[..] == [&b[k..], &b[..k]].concat()))
}
