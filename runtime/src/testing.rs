//! A recording runtime for behaviour tests (in the spirit of `tracing-mock`): run a solver on the
//! threads backend with every hook recording, then inspect what each rank recorded — guard
//! order, nesting, ids and trip counts — instead of string-matching generated code.
//!
//! ```
//! use mheta_runtime::{hooks, testing, CommExt, ReduceOp};
//! use mheta_runtime::format::StageKey;
//!
//! let (_, rec) = testing::record(2, 8, |ctx| {
//!     for i in 0..2 {
//!         let _it = hooks::iteration(i);
//!         {
//!             let _s = hooks::section(0);
//!             let _st = hooks::stage(StageKey { section: 0, tile: None, stage: 0 });
//!         }
//!         let _e = hooks::event(0);
//!         ctx.comm().all_reduce_value(1.0, ReduceOp::Sum)?;
//!     }
//!     Ok::<_, mheta_runtime::CommError>(())
//! })
//! .unwrap();
//! assert_eq!(rec.rank(1).outline_of_iteration(0),
//!     "iteration 0\n  section 0\n    stage 0.0\n  event 0\n    all_reduce\n");
//! assert_eq!(rec.rank(0).trips(hooks::RecordKind::Iteration), 2);
//! ```

use crate::args::{Args, DistributionSpec};
use crate::clock::ClockMode;
use crate::context::Context;
use crate::error::Error;
use crate::hooks::{io_kind, var_name, CallKind, Record, RecordKind, VarId, NONE};
use crate::launch::Launch;

/// Everything every rank recorded.
#[derive(Debug, Clone)]
pub struct Recording {
    /// One entry per rank, in rank order.
    pub ranks: Vec<RankRecording>,
}

/// One rank's records, in the order the regions began.
#[derive(Debug, Clone)]
pub struct RankRecording {
    /// The rank.
    pub rank: usize,
    /// Its records.
    pub records: Vec<Record>,
}

/// Run `f` on `ranks` ranks over `rows` block-distributed rows, with a charged clock (so times
/// only move with `clock::charge` and the network) and every hook recording. No files are
/// written and no microbenchmarks run.
pub fn record<R, E, F>(ranks: usize, rows: u64, f: F) -> Result<(Vec<R>, Recording), Error>
where
    F: Fn(&Context) -> Result<R, E> + Sync,
    R: Send,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let args = Args {
        ranks: Some(ranks),
        rows: Some(rows),
        distribution: DistributionSpec::Block,
        clock: ClockMode::Charged,
        instrument: true,
        ..Args::default()
    };
    record_with(&args, f)
}

/// As [`record`], with full control over the arguments (instrumentation is forced on, no
/// measurement or trace file is written).
pub fn record_with<R, E, F>(args: &Args, f: F) -> Result<(Vec<R>, Recording), Error>
where
    F: Fn(&Context) -> Result<R, E> + Sync,
    R: Send,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let args = Args {
        instrument: true,
        measurements: None,
        trace: None,
        ..args.clone()
    };
    let (results, records, _) = Launch::new(&args)
        .without_microbenchmarks()
        .run_collect(f)?;
    let ranks = records
        .into_iter()
        .enumerate()
        .map(|(rank, rr)| {
            let mut records = rr.records;
            records.sort_by_key(|r| r.open);
            RankRecording { rank, records }
        })
        .collect();
    Ok((results, Recording { ranks }))
}

impl Recording {
    /// Rank `r`'s records.
    pub fn rank(&self, r: usize) -> &RankRecording {
        &self.ranks[r]
    }
}

impl RankRecording {
    /// Records of one kind, in order.
    pub fn of_kind(&self, kind: RecordKind) -> impl Iterator<Item = &Record> {
        self.records.iter().filter(move |r| r.kind == kind)
    }

    /// How many records of `kind` (iterations, tile trips, group trips, …).
    pub fn trips(&self, kind: RecordKind) -> usize {
        self.of_kind(kind).count()
    }

    /// Records of `kind` with id `id`.
    pub fn trips_of(&self, kind: RecordKind, id: u32) -> usize {
        self.of_kind(kind).filter(|r| r.id == id).count()
    }

    /// Check that records nest properly: any two either are disjoint or one lies inside the
    /// other, and every record inside the main loop lies inside an iteration.
    pub fn check_nesting(&self) -> Result<(), String> {
        for (i, a) in self.records.iter().enumerate() {
            for b in &self.records[i + 1..] {
                let disjoint = a.close < b.open || b.close < a.open;
                if !(disjoint || a.is_inside(b) || b.is_inside(a)) {
                    return Err(format!(
                        "`{}` and `{}` overlap without nesting",
                        label(a),
                        label(b)
                    ));
                }
            }
        }
        Ok(())
    }

    /// An indented outline of every record (one line each, two spaces per nesting level).
    pub fn outline(&self) -> String {
        outline(&self.records)
    }

    /// The outline of iteration `index` and everything inside it.
    pub fn outline_of_iteration(&self, index: u32) -> String {
        let Some(it) = self.of_kind(RecordKind::Iteration).find(|r| r.id == index) else {
            return String::new();
        };
        let inside: Vec<Record> = self
            .records
            .iter()
            .filter(|r| r.open == it.open || r.is_inside(it))
            .copied()
            .collect();
        outline(&inside)
    }
}

fn outline(records: &[Record]) -> String {
    let mut out = String::new();
    let mut open: Vec<u32> = Vec::new(); // close sequence numbers of enclosing records
    for r in records {
        while open.last().is_some_and(|&c| c < r.open) {
            open.pop();
        }
        out.push_str(&"  ".repeat(open.len()));
        out.push_str(&label(r));
        out.push('\n');
        open.push(r.close);
    }
    out
}

/// A one-line description of a record: `stage 0.1`, `tile 2.0`, `read A 800B`, `send 3`, …
pub fn label(r: &Record) -> String {
    match r.kind {
        RecordKind::Iteration => format!("iteration {}", r.id),
        RecordKind::Section => format!("section {}", r.id),
        RecordKind::Tile => format!("tile {}.{}", r.aux, r.id),
        RecordKind::Stage => match r.key.tile {
            Some(t) => format!("stage {}.t{}.{}", r.key.section, t, r.key.stage),
            None => format!("stage {}.{}", r.key.section, r.key.stage),
        },
        RecordKind::Event => format!("event {}", r.id),
        RecordKind::Group => format!("group {}", r.id),
        RecordKind::Io => {
            let op = io_kind(r.aux).map_or("io".into(), |k| format!("{k:?}").to_lowercase());
            let var = var_name(VarId(r.id)).unwrap_or_else(|| format!("var{}", r.id));
            format!("{op} {var} {}B", r.bytes)
        }
        RecordKind::Copy => {
            let var = var_name(VarId(r.id)).unwrap_or_else(|| format!("var{}", r.id));
            format!("in-core copy {var} {}B", r.bytes)
        }
        RecordKind::Comm => {
            let call = CallKind::from_code(r.aux).map_or("comm", CallKind::name);
            if r.peer == NONE
                || matches!(CallKind::from_code(r.aux), Some(c) if !c.is_send() && c != CallKind::Receive)
            {
                call.to_string()
            } else {
                format!("{call} {}", r.peer)
            }
        }
    }
}
