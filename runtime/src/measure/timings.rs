//! Turning the iteration records of a run (instrumented or `--timings`) into `mheta-timings/1`.

use crate::context::RunSettings;
use crate::error::Error;
use crate::format::{IterationSpan, NodeTimings, Timings, TIMINGS_SCHEMA};
use crate::hooks::{RankRecords, RecordKind};

/// Every rank's iteration spans (records of the main loop's iteration guards, in the order
/// they closed), and the steady-state seconds per iteration they imply. A run in which no rank
/// timed an iteration (no `#[mheta::solver]` main loop ran) is an error.
pub fn timings(settings: &RunSettings, ranks: &[RankRecords]) -> Result<Timings, Error> {
    let nodes = node_timings(ranks);
    let iteration_s = Timings::steady_iteration_s(&nodes).ok_or_else(|| {
        Error::Measurements(
            "--timings: no rank timed an iteration (the program ran no `#[mheta::solver]` main \
             loop)"
                .into(),
        )
    })?;
    Ok(Timings {
        schema: TIMINGS_SCHEMA.to_string(),
        clock: settings.clock.name().to_string(),
        rows: settings.rows,
        distribution: settings.distribution.clone(),
        iterations: settings.iterations,
        iteration_s,
        nodes,
    })
}

/// Every rank's iteration spans, in rank order.
pub(crate) fn node_timings(ranks: &[RankRecords]) -> Vec<NodeTimings> {
    ranks
        .iter()
        .enumerate()
        .map(|(rank, rr)| NodeTimings {
            rank,
            iterations: rr
                .records
                .iter()
                .filter(|r| r.kind == RecordKind::Iteration)
                .map(|r| IterationSpan {
                    begin_s: r.begin_s,
                    end_s: r.end_s,
                })
                .collect(),
        })
        .collect()
}
