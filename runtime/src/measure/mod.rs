//! Turning an instrumented run's records into `mheta-measurements/1` (DESIGN §5) and Chrome trace
//! JSON, and writing files atomically.
//!
//! Every per-iteration figure is the total over the recorded iterations (records strictly inside
//! an iteration guard) divided by their number; initialisation and finalisation are not counted,
//! nor are the run's warm-up iterations (`format::Timings::warm_up_of`).

mod aggregate;
#[cfg(any(feature = "mpi", test))]
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
    ArrayInfo, Measurements, Microbenchmarks, StructureId, Timings, MEASUREMENTS_SCHEMA,
};
use crate::hooks::{io_kind, IoKind, RankRecords, RecordKind};

/// Where a finished run's outputs go, each only when asked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct Outputs<'a> {
    /// `mheta-timings/1`: the main loop's iteration times.
    pub timings: Option<&'a std::path::Path>,
    /// `mheta-measurements/1` (an instrumented run).
    pub measurements: Option<&'a std::path::Path>,
    /// The Chrome trace of an instrumented run's records.
    pub trace: Option<&'a std::path::Path>,
}

/// Writes a finished run's timings, measurements and trace from every rank's records (on the one
/// process that writes), each atomically.
pub fn write_outputs(
    settings: &RunSettings,
    structure: StructureId,
    micro: Microbenchmarks,
    ranks: &[RankRecords],
    out: Outputs<'_>,
) -> Result<(), Error> {
    if let Some(path) = out.timings {
        write_atomic(path, &pretty_json(&timings(settings, ranks)?))?;
    }
    if let Some(path) = out.measurements {
        let m = aggregate(settings, structure, micro, ranks)?;
        write_atomic(path, &pretty_json(&m))?;
    }
    if let Some(path) = out.trace {
        write_atomic(path, chrome_trace(ranks).as_bytes())?;
    }
    Ok(())
}

/// The files a person may read, pretty-printed.
fn pretty_json<T: mheta_format::json::ToJson>(value: &T) -> Vec<u8> {
    mheta_format::json::pretty(value).into_bytes()
}

/// Build the measurements of a run from every rank's records (rank order).
pub fn aggregate(
    settings: &RunSettings,
    structure: StructureId,
    micro: Microbenchmarks,
    ranks: &[RankRecords],
) -> Result<Measurements, Error> {
    // The iterations the figures average over: the run's warm-up is left out, found as
    // `--timings` finds it, so that measurements and timings describe the same steady state.
    let spans = timings::node_timings(ranks);
    let warm_up = Timings::warm_up_of(&spans);
    let mut nodes = Vec::with_capacity(ranks.len());
    for (rank, rr) in ranks.iter().enumerate() {
        let rows = settings.distribution.get(rank).copied().unwrap_or(0);
        let node =
            aggregate_node(rank, settings.size, rows, rr, warm_up).map_err(Error::Measurements)?;
        nodes.push(node);
    }
    let recorded = spans.first().map_or(0, |n| n.iterations.len());
    let iterations = recorded.saturating_sub(warm_up) as u32;
    Ok(Measurements {
        schema: MEASUREMENTS_SCHEMA.to_string(),
        structure,
        clock: settings.clock.name().to_string(),
        rows: settings.rows,
        iterations,
        warm_up: warm_up as u32,
        distribution: settings.distribution.clone(),
        cluster: settings.cluster.clone(),
        arrays: arrays(ranks),
        micro,
        nodes,
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
