//! Turning an instrumented run's records into `mheta-measurements/1` (DESIGN §5) and Chrome trace
//! JSON, and writing files atomically.
//!
//! Every per-iteration figure is the total over the recorded iterations (records strictly inside
//! an iteration guard) divided by their number; initialisation and finalisation are not counted,
//! nor are the warm-up iterations (`format::warm_up_iterations`).

mod aggregate;
pub mod pack;
mod timings;
mod trace;
mod write;

pub use aggregate::{aggregate_node, call_peers};
pub use timings::timings;
pub use trace::chrome_trace;
pub use write::write_atomic;

use crate::context::RunSettings;
use crate::error::Error;
use crate::format::{
    warm_up_iterations, ArrayInfo, Measurements, Microbenchmarks, StructureId, MEASUREMENTS_SCHEMA,
};
use crate::hooks::{io_kind, IoKind, RankRecords, RecordKind};

/// Build the measurements of a run from every rank's records (rank order).
pub fn aggregate(
    settings: &RunSettings,
    structure: StructureId,
    micro: Microbenchmarks,
    ranks: &[RankRecords],
) -> Result<Measurements, Error> {
    let mut nodes = Vec::with_capacity(ranks.len());
    for (rank, rr) in ranks.iter().enumerate() {
        let rows = settings.distribution.get(rank).copied().unwrap_or(0);
        let node = aggregate_node(rank, settings.size, rows, rr).map_err(Error::Measurements)?;
        nodes.push(node);
    }
    // The iterations the figures average over: the warm-up iterations are left out.
    let recorded = ranks
        .first()
        .map(|r| {
            r.records
                .iter()
                .filter(|x| x.kind == RecordKind::Iteration)
                .count() as u32
        })
        .unwrap_or(0);
    let iterations = recorded - warm_up_iterations(recorded as usize) as u32;
    Ok(Measurements {
        schema: MEASUREMENTS_SCHEMA.to_string(),
        structure,
        clock: settings.clock.name().to_string(),
        rows: settings.rows,
        iterations,
        distribution: settings.distribution.clone(),
        cluster: settings.cluster.clone(),
        arrays: arrays(ranks),
        micro,
        nodes,
        unrecorded_calls: crate::embedded::first()
            .map(|e| e.unrecorded_calls.iter().map(|c| c.to_string()).collect())
            .unwrap_or_default(),
    })
}

/// The arrays any rank registered; an array no rank wrote during the run is read-only.
fn arrays(ranks: &[RankRecords]) -> Vec<ArrayInfo> {
    let mut arrays: Vec<ArrayInfo> = Vec::new();
    for rr in ranks {
        for a in &rr.arrays {
            if !arrays.iter().any(|b| b.name == a.name) {
                arrays.push(a.clone());
            }
        }
    }
    for a in &mut arrays {
        let var = crate::hooks::register_var(&a.name);
        a.read_only = !ranks.iter().flat_map(|r| &r.records).any(|r| {
            r.kind == RecordKind::Io && r.id == var.0 && io_kind(r.aux) == Some(IoKind::Write)
        });
    }
    arrays
}
