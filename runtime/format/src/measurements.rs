//! The measurements file, `mheta-measurements/1` (DESIGN §5): what one instrumented iteration
//! measured on every node, plus the microbenchmarks, the distribution and the cluster it was
//! taken under, and the identity of the structure it belongs to.
//!
//! All times are seconds *per iteration* (totals over the measured iterations divided by their
//! number; warm-up iterations are not measured, see `warm_up_iterations`), on the run's clock (wall,
//! virtual or charged).

#[cfg(feature = "read")]
use serde::Deserialize;

use super::cluster::ClusterSpec;

/// A merged run's iterations tell a node's variation where it held between a quarter and four
/// times the rows it held in the measurements ([`Measurements::merge_in_core_compute`]).
const SIZE_RATIO: u64 = 4;

/// How much longer than its node's iteration a part of it may measure: (relative, seconds), for
/// timer granularity ([`Measurements::first_outside_iteration`]).
pub const ITERATION_SLACK: (f64, f64) = (0.05, 1e-6);

/// The schema string of this version of the measurements file.
pub const MEASUREMENTS_SCHEMA: &str = "mheta-measurements/1";

/// A whole measurements file: what an instrumented run (`--instrument`) measured, per node and
/// per iteration, and the conditions it was taken under. The model's input beside the structure
/// and the cluster.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Measurements {
    /// The schema string, [`MEASUREMENTS_SCHEMA`] for this version.
    pub schema: String,
    /// The structure and solver the stage, event and section ids refer to.
    pub structure: StructureId,
    /// `wall` or `virtual`.
    pub clock: String,
    /// Total rows S of the distributed dimension.
    pub rows: u64,
    /// Number of iterations measured (the per-iteration figures are averages over them): the
    /// iterations run, less the warm-up ones.
    pub iterations: u32,
    /// The warm-up iterations left out before them (`Timings::warm_up_of`): the run ran
    /// `iterations + warm_up`. Files written before the field existed read as 0.
    #[cfg_attr(feature = "read", serde(default))]
    pub warm_up: u32,
    /// Rows held by each rank (GEN_BLOCK counts) during the measurement.
    pub distribution: Vec<u64>,
    /// The cluster the run emulated (`--cluster`); without one, `size` nodes like this machine
    /// ([`ClusterSpec::this_machine`]).
    pub cluster: ClusterSpec,
    /// Arrays the program registered (out-of-core capable or distributed), for the
    /// out-of-core heuristic of the model.
    pub arrays: Vec<ArrayInfo>,
    /// The program-independent costs measured at start-up.
    pub micro: Microbenchmarks,
    /// One entry per rank, in rank order.
    pub nodes: Vec<NodeMeasurements>,
}

impl Measurements {
    /// The first number in these measurements that no measurement can give: every time, count,
    /// size, rate and row count a run measures is finite and non-negative. Returns the field's
    /// path (`nodes[0].events[1].blocked_s`) and its value. For the tools that read the files
    /// (feature `serde`): it walks them as serde_json values.
    #[cfg(feature = "serde")]
    pub fn first_negative(&self) -> Option<(String, f64)> {
        fn walk(value: &serde_json::Value, path: &mut String) -> Option<(String, f64)> {
            match value {
                serde_json::Value::Number(n) => n
                    .as_f64()
                    .filter(|x| !x.is_finite() || *x < 0.0)
                    .map(|x| (path.clone(), x)),
                serde_json::Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    let found = walk(v, path);
                    path.truncate(len);
                    found
                }),
                serde_json::Value::Object(fields) => fields.iter().find_map(|(k, v)| {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(k);
                    let found = walk(v, path);
                    path.truncate(len);
                    found
                }),
                _ => None,
            }
        }
        // What `json::compact` writes always parses.
        let value = serde_json::from_str(&crate::json::compact(self)).ok()?;
        walk(&value, &mut String::new())
    }

    /// The first per-iteration time of a node that does not fit in the node's iteration: one of
    /// its [`NodeMeasurements::parts`], or all of them added up
    /// ([`NodeMeasurements::parts_added_s`]), longer than `iteration_s` by more than
    /// [`ITERATION_SLACK`]. They are parts of that iteration, measured with it (over 1,464
    /// measurement files of the studies no part exceeds its iteration by 0.1 %).
    pub fn first_outside_iteration(&self) -> Option<OutsideIteration> {
        let (relative, absolute) = ITERATION_SLACK;
        self.nodes.iter().enumerate().find_map(|(node, n)| {
            let limit = n.iteration_s * (1.0 + relative) + absolute;
            let part = n.parts().find(|&(_, s)| s > limit);
            let (part, seconds) = match part {
                Some((part, s)) => (Some(part), s),
                None => (None, n.parts_added_s()),
            };
            (seconds > limit).then_some(OutsideIteration {
                node,
                part,
                seconds,
            })
        })
    }

    /// Take the in-core computation from `kept`, an instrumented run of the same program, rows
    /// and cluster made with `--keep-in-core`, under any distribution: every stage of every
    /// node that held rows gets an `in_core` sample with the rows the node held and the arrays
    /// it still moved through disk there (`out_of_core`: empty when all its arrays were in
    /// core; a node whose memory kept only some of them computes at neither the forced run's
    /// rate nor the in-core one). Only nodes that did no block I/O add to `in_core_tiles`.
    /// Every event of every node also gets the run's per-message overheads as a sample
    /// (`overheads`): one run's overheads are one draw of a figure that varies from run to run
    /// with the machine's load (an 8-rank CG all-gather's root: 3–11 ms over seven runs of one
    /// tune). Merging several such runs gives several samples. Each sample also keeps what the
    /// node sent per iteration and its rows: in-core runs last as long as the runs the model
    /// predicts, and a message that grows with the iteration (Lanczos's reorthogonalisation
    /// coefficients) has there the size it has over those iterations, not the size of a short
    /// forced run's. The run's iterations (`iteration_compute_s`) follow the measurements'
    /// own, each node's scaled to this measurements' mean computation on that node: what varies
    /// between iterations is taken from every run, relative to its own mean. Returns how many
    /// nodes got an all-in-core computation sample; fails, naming the field, when the runs do
    /// not match.
    pub fn merge_in_core_compute(&mut self, kept: &Measurements) -> Result<usize, String> {
        if kept.structure != self.structure {
            return Err("structure: the in-core run measured a different program".into());
        }
        if kept.rows != self.rows {
            return Err(format!(
                "rows: the in-core run had {} rows, the measurements {}",
                kept.rows, self.rows
            ));
        }
        if kept.nodes.len() != self.nodes.len() {
            return Err(format!(
                "nodes: the in-core run has {} nodes, the measurements {}",
                kept.nodes.len(),
                self.nodes.len()
            ));
        }
        let mut merged = 0;
        for (node, other) in self.nodes.iter_mut().zip(&kept.nodes) {
            // Communication overheads are the same work in core or not: every node's count.
            for event in &mut node.events {
                if let Some(e) = other.events.iter().find(|e| e.event == event.event) {
                    event.overheads.push(e.overhead_sample(other.rows));
                }
            }
            // The arrays this node moved through disk (a record without a block moved is an
            // in-core array's), in the order of `arrays`.
            let mut out_of_core: Vec<String> = Vec::new();
            for x in &other.io {
                let moved = x.reads + x.writes + x.prefetches + x.bytes_read + x.bytes_written;
                if moved > 0.0 && !out_of_core.contains(&x.var) {
                    out_of_core.push(x.var.clone());
                }
            }
            out_of_core.sort_by_key(|name| {
                (kept.arrays.iter().position(|a| a.name == *name)).unwrap_or(usize::MAX)
            });
            if out_of_core.is_empty() {
                merged += 1;
            } else if other.rows == 0 {
                continue;
            }
            for stage in &mut node.stages {
                let kept = other.stages.iter().find(|s| s.key == stage.key);
                stage.in_core.push(InCoreSample {
                    rows: other.rows,
                    compute_s: kept.map_or(0.0, |s| s.compute_s),
                    out_of_core: out_of_core.clone(),
                });
                if out_of_core.is_empty() {
                    add_up(
                        &mut stage.in_core_tiles,
                        kept.map_or(&[][..], |s| &s.tiles[..]),
                    );
                }
            }
        }
        self.append_iterations(kept);
        Ok(merged)
    }

    /// Appends `kept`'s measured iterations to every node's `iteration_compute_s`, scaled by
    /// the node's mean computation here over its mean there. A node that held less than a
    /// quarter or more than four times its rows here (or no computation) repeats its mean here
    /// instead: how much a computation varies depends on its size (Lanczos on hy1-8, virtual
    /// clock: 2–8 % between iterations at 494 rows, 17–58 % at 6), and a node's variation at
    /// 6 rows says nothing of it at 250. Nothing when some node of either lacks iterations (an
    /// older file): the nodes' iterations must stay the same ones.
    fn append_iterations(&mut self, kept: &Measurements) {
        let count = kept
            .nodes
            .first()
            .map_or(0, |n| n.iteration_compute_s.len());
        let recorded = |nodes: &[NodeMeasurements], n: usize| {
            nodes.iter().all(|x| x.iteration_compute_s.len() == n)
        };
        let own = self
            .nodes
            .first()
            .map_or(0, |n| n.iteration_compute_s.len());
        if count == 0 || !recorded(&kept.nodes, count) || !recorded(&self.nodes, own) {
            return;
        }
        let mean = |values: &[f64]| values.iter().sum::<f64>() / values.len().max(1) as f64;
        for (node, other) in self.nodes.iter_mut().zip(&kept.nodes) {
            let here = if own > 0 {
                mean(&node.iteration_compute_s)
            } else {
                node.stages.iter().map(|s| s.compute_s).sum()
            };
            let there = mean(&other.iteration_compute_s);
            let (few, many) = (node.rows.min(other.rows), node.rows.max(other.rows));
            let alike = there > 0.0 && many <= few.saturating_mul(SIZE_RATIO);
            node.iteration_compute_s
                .extend(other.iteration_compute_s.iter().map(|&v| {
                    if alike {
                        v * here / there
                    } else {
                        here
                    }
                }));
        }
    }
}

/// Which structure (and which solver in it) these measurements belong to; all empty when the
/// program embeds none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct StructureId {
    /// The crate name of the structure (JSON field `crate`).
    #[cfg_attr(feature = "read", serde(rename = "crate"))]
    pub crate_name: String,
    /// The solver's path in that structure (`jacobi::solve`).
    pub solver: String,
    /// `Structure::digest()` of the structure the program embedded.
    pub digest: String,
}

impl StructureId {
    /// `solver` of `structure`.
    #[cfg(feature = "serde")]
    pub fn of(structure: &super::Structure, solver: &str) -> StructureId {
        StructureId {
            crate_name: structure.crate_name.clone(),
            solver: solver.to_string(),
            digest: structure.digest(),
        }
    }
}

/// An array the program registered, as the model's out-of-core heuristic needs it.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct ArrayInfo {
    /// The name the array was registered under (`ctx.array(name, ..)`).
    pub name: String,
    /// Bytes one row of this array occupies (for distributed arrays), or the whole array's size
    /// in bytes for replicated ones.
    pub bytes_per_row: u64,
    /// Whether the array's length scales with the node's rows.
    pub distributed: bool,
    /// Never written during an iteration (CG's matrix, Lanczos's matrix).
    pub read_only: bool,
}

/// Costs that do not depend on the program (seed §5.2): measured by microbenchmarks at start-up.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Microbenchmarks {
    /// O_S: fixed cost to prepare and send one message, seconds.
    pub send_overhead_s: f64,
    /// O_←: cost to process one incoming message, seconds.
    pub recv_overhead_s: f64,
    /// One-way network latency per message, seconds.
    pub latency_s: f64,
    /// Transfer time per byte, seconds.
    pub per_byte_s: f64,
}

/// What one node (rank) measured, per iteration.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct NodeMeasurements {
    /// The rank, equal to the entry's index in `nodes`.
    pub rank: u32,
    /// Rows of the distributed dimension this rank held.
    pub rows: u64,
    /// Whole-iteration time on this node.
    pub iteration_s: f64,
    /// O_r: per-read-call overhead (seek), seconds.
    pub read_overhead_s: f64,
    /// O_w: per-write-call overhead, seconds.
    pub write_overhead_s: f64,
    /// O_A: extra overhead of issuing an asynchronous read, seconds.
    pub async_overhead_s: f64,
    /// r: seconds to read one byte from this node's disk.
    pub read_per_byte_s: f64,
    /// w: seconds to write one byte to this node's disk.
    pub write_per_byte_s: f64,
    /// Seconds per byte of a block write to an in-core array (a memory copy) at this node's
    /// CPU power: what an in-core array's writes cost, which the instrumented run (arrays
    /// forced out of core) does not see. Absent in older files: zero.
    #[cfg_attr(feature = "read", serde(default))]
    pub copy_per_byte_s: f64,
    /// Computation per stage, one entry per stage that ran on this node.
    pub stages: Vec<StageMeasurement>,
    /// Out-of-core I/O per stage and array.
    pub io: Vec<IoMeasurement>,
    /// Communication per event.
    pub events: Vec<EventMeasurement>,
    /// Trips of each tile loop per iteration.
    #[cfg_attr(feature = "read", serde(default))]
    pub tiles: Vec<TileMeasurement>,
    /// Trips of each repeated group (nested iteration) per iteration.
    #[cfg_attr(feature = "read", serde(default))]
    pub groups: Vec<GroupMeasurement>,
    /// The computation of each measured iteration in turn (the stages' computation, as
    /// `stages[].compute_s` counts it, whose per-iteration mean this is). Iterations vary, and
    /// every node waits at the iteration's communication for the slowest node *of that
    /// iteration*: the model replays these (`mheta_model`, "measured variation"). Absent in
    /// older files and in files written without it: the model then predicts from the means.
    #[cfg_attr(feature = "read", serde(default))]
    pub iteration_compute_s: Vec<f64>,
}

impl NodeMeasurements {
    /// The node's per-iteration times that are parts of its iteration, each named: a stage's
    /// computation, I/O and tiles, an array's read, write and overlapped time, an event's
    /// overheads, blocking and total.
    pub fn parts(&self) -> impl Iterator<Item = (IterationPart, f64)> + '_ {
        let stages = self.stages.iter().enumerate().flat_map(|(k, s)| {
            [("compute_s", s.compute_s), ("io_s", s.io_s)]
                .map(|(field, v)| (IterationPart::Stage(k, field), v))
                .into_iter()
                .chain(
                    (s.tiles.iter().enumerate()).map(move |(j, &v)| (IterationPart::Tile(k, j), v)),
                )
        });
        let io = self.io.iter().enumerate().flat_map(|(k, x)| {
            [
                ("read_s", x.read_s),
                ("write_s", x.write_s),
                ("overlap_s", x.overlap_s),
            ]
            .map(|(field, v)| (IterationPart::Io(k, field), v))
        });
        let events = self.events.iter().enumerate().flat_map(|(k, e)| {
            [
                ("send_overhead_s", e.send_overhead_s),
                ("recv_overhead_s", e.recv_overhead_s),
                ("blocked_s", e.blocked_s),
                ("total_s", e.total_s),
            ]
            .map(|(field, v)| (IterationPart::Event(k, field), v))
        });
        stages.chain(io).chain(events)
    }

    /// The node's stages (computation and I/O) and events one after another, seconds per
    /// iteration: what its iteration takes when it never waits outside them.
    pub fn parts_added_s(&self) -> f64 {
        (self.stages.iter().map(|s| s.compute_s + s.io_s))
            .chain(self.events.iter().map(|e| e.total_s))
            .sum()
    }
}

/// One per-iteration time of a node ([`NodeMeasurements::parts`]), shown as its field's path
/// below the node (`stages[1].compute_s`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum IterationPart {
    /// A field of `stages[k]`.
    Stage(usize, &'static str),
    /// `stages[k].tiles[j]`.
    Tile(usize, usize),
    /// A field of `io[k]`.
    Io(usize, &'static str),
    /// A field of `events[k]`.
    Event(usize, &'static str),
}

impl std::fmt::Display for IterationPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IterationPart::Stage(k, field) => write!(f, "stages[{k}].{field}"),
            IterationPart::Tile(k, j) => write!(f, "stages[{k}].tiles[{j}]"),
            IterationPart::Io(k, field) => write!(f, "io[{k}].{field}"),
            IterationPart::Event(k, field) => write!(f, "events[{k}].{field}"),
        }
    }
}

/// What [`Measurements::first_outside_iteration`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct OutsideIteration {
    /// The node's index in `nodes`.
    pub node: usize,
    /// The part longer than the iteration; `None` when each part fits and their sum does not.
    pub part: Option<IterationPart>,
    /// Its time (or the sum), seconds per iteration.
    pub seconds: f64,
}

/// Identifies a stage: section id, tile loop id (for stages inside a tile loop), stage id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct StageKey {
    /// The section's id (`Section::id` in the structure).
    pub section: u32,
    /// The tile loop's id within the section, or `None` for a stage directly in the section.
    #[cfg_attr(feature = "read", serde(default))]
    pub tile: Option<u32>,
    /// The stage's id within its section or tile loop.
    pub stage: u32,
}

/// The computation of one stage on one node (the seed's `T_phi`).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct StageMeasurement {
    /// Which stage (flattened into this object in JSON: `section`, `tile`, `stage`).
    #[cfg_attr(feature = "read", serde(flatten))]
    pub key: StageKey,
    /// How many times the stage ran per iteration (tiles × group trips).
    pub count: f64,
    /// T_φ: computation time (the stage's time less its I/O and the communication made while it
    /// is open), seconds per iteration: the sum over the stage's `count` runs in one iteration.
    pub compute_s: f64,
    /// I/O time inside the stage, seconds per iteration.
    pub io_s: f64,
    /// A stage inside a tile loop: its computation in the `j`-th tile of a pass of the loop,
    /// seconds per iteration (summed over the passes), for each `j`; they add up to
    /// `compute_s`. Empty for stages outside tile loops.
    #[cfg_attr(feature = "read", serde(default))]
    pub tiles: Vec<f64>,
    /// `tiles` of the in-core runs merged into `in_core`, added up tile by tile (only their
    /// shape is used: see `model::pipeline`).
    #[cfg_attr(feature = "read", serde(default))]
    pub in_core_tiles: Vec<f64>,
    /// T_φ of the stage on this node in runs that kept in core what the node's memory could
    /// hold (`--keep-in-core`; see [`Measurements::merge_in_core_compute`]), one sample per
    /// such run, with the rows the node held and the arrays it still moved through disk.
    /// Computation runs at a different rate in core than between block reads and writes (the
    /// I/O changes what the caches and TLB hold), and per-row cost changes with the rows
    /// (caches, allocations), so the model interpolates these for nodes it places with the
    /// same arrays out of core.
    #[cfg_attr(feature = "read", serde(default))]
    pub in_core: Vec<InCoreSample>,
}

/// One measurement of a stage on a node in a `--keep-in-core` run: its T_φ when the node held
/// `rows` rows with the arrays `out_of_core` moved through disk and the others in core.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct InCoreSample {
    /// Rows the node held in that run.
    pub rows: u64,
    /// The stage's computation in that run, seconds per iteration.
    pub compute_s: f64,
    /// The arrays the node moved through disk in that run (its memory could not keep them), in
    /// the order of [`Measurements::arrays`]; empty when it held all of them in core.
    #[cfg_attr(feature = "read", serde(default))]
    pub out_of_core: Vec<String>,
}

/// Out-of-core I/O of one array inside one stage on one node, per iteration.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct IoMeasurement {
    /// The stage the I/O happened in (flattened into this object in JSON).
    #[cfg_attr(feature = "read", serde(flatten))]
    pub key: StageKey,
    /// The array moved.
    pub var: String,
    /// Synchronous block reads (`read_block`) per iteration.
    pub reads: f64,
    /// Block writes per iteration.
    pub writes: f64,
    /// Prefetches (`prefetch_block`) per iteration; not counted in `reads`.
    pub prefetches: f64,
    /// Bytes read per iteration, by reads and prefetches.
    pub bytes_read: f64,
    /// Bytes written per iteration.
    pub bytes_written: f64,
    /// Time inside read calls (prefetches are synchronous reads when instrumented, Fig. 5.6).
    pub read_s: f64,
    /// Time inside write calls, seconds per iteration.
    pub write_s: f64,
    /// T_A: compute overlapped between a prefetch issue and its wait.
    pub overlap_s: f64,
}

/// The communication of one event on one node, per iteration.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct EventMeasurement {
    /// The event's id (`CommEvent::id` in the structure).
    pub event: u32,
    /// Messages this node sent in the event, per iteration.
    pub messages_sent: f64,
    /// Messages this node received in the event, per iteration.
    pub messages_received: f64,
    /// Bytes this node sent, per iteration.
    pub bytes_sent: f64,
    /// Bytes this node received, per iteration.
    pub bytes_received: f64,
    /// O_→ total: time spent in send calls (excluding blocking), seconds per iteration.
    pub send_overhead_s: f64,
    /// O_← total: time spent processing received messages (excluding blocking).
    pub recv_overhead_s: f64,
    /// T_w: time blocked waiting for messages.
    pub blocked_s: f64,
    /// Total time inside the event.
    pub total_s: f64,
    /// Ranks this node actually sent to.
    pub sent_to: Vec<u32>,
    /// Ranks this node actually received from.
    pub received_from: Vec<u32>,
    /// This node's point-to-point calls of one run of the event, in program order, each where
    /// it completes (a receive where it waits): the model's generalised Eq. 5.11 lets a send
    /// that follows a receive leave only once that receive is done. Empty when the steady
    /// iterations made different calls, or when the event holds any other call (collectives,
    /// combined send-receives, receives completed by a separate wait).
    #[cfg_attr(feature = "read", serde(default))]
    pub order: Vec<PeerOp>,
    /// The same event's per-message overheads in other instrumented runs (see
    /// [`Measurements::merge_in_core_compute`]), one sample per run. The model takes each
    /// overhead as the median over these and this run's own.
    #[cfg_attr(feature = "read", serde(default))]
    pub overheads: Vec<OverheadSample>,
}

/// One point-to-point call of an event on one node: `{"send": 3}` or `{"receive": 1}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "read", serde(rename_all = "snake_case"))]
pub enum PeerOp {
    /// A (buffered) send to this rank.
    Send(u32),
    /// A receive from this rank, where it blocks until the message is there.
    Receive(u32),
}

/// One event on one node in another instrumented run: per-message send and receive overheads
/// (`None` where the node sent (received) no message in that event), and what the node sent
/// per iteration with the rows it held (absent in files written before they were kept).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct OverheadSample {
    /// Seconds per message sent (O_→), or `None` when the node sent none.
    pub send_s: Option<f64>,
    /// Seconds per message received (O_←), or `None` when the node received none.
    pub recv_s: Option<f64>,
    /// Messages sent per iteration.
    #[cfg_attr(feature = "read", serde(default))]
    pub messages_sent: Option<f64>,
    /// Bytes sent per iteration.
    #[cfg_attr(feature = "read", serde(default))]
    pub bytes_sent: Option<f64>,
    /// The rows the node held in that run.
    #[cfg_attr(feature = "read", serde(default))]
    pub rows: Option<u64>,
}

impl EventMeasurement {
    /// This run's per-message overheads and what the node sent, which held `rows` rows.
    pub fn overhead_sample(&self, rows: u64) -> OverheadSample {
        OverheadSample {
            send_s: per_message(self.send_overhead_s, self.messages_sent),
            recv_s: per_message(self.recv_overhead_s, self.messages_received),
            messages_sent: Some(self.messages_sent),
            bytes_sent: Some(self.bytes_sent),
            rows: Some(rows),
        }
    }
}

/// Adds `seconds` to `sum` position by position, growing `sum` as needed (tile profiles).
pub fn add_up(sum: &mut Vec<f64>, seconds: &[f64]) {
    if sum.len() < seconds.len() {
        sum.resize(seconds.len(), 0.0);
    }
    for (s, t) in sum.iter_mut().zip(seconds) {
        *s += t;
    }
}

/// `total` per message over `count` messages; `None` without messages or when `total` is not a
/// finite non-negative number.
pub fn per_message(total: f64, count: f64) -> Option<f64> {
    (count > 0.0 && total.is_finite() && total >= 0.0).then(|| total / count)
}

/// How often a tile loop ran on one node.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct TileMeasurement {
    /// The section holding the tile loop.
    pub section: u32,
    /// The tile loop's id within the section.
    pub tile: u32,
    /// Tiles (trips of the tile loop) per iteration.
    pub count: f64,
}

/// How often a repeated group (nested iteration) ran on one node.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct GroupMeasurement {
    /// The group's id (`Group::id` in the structure).
    pub group: u32,
    /// Trips of the nested iteration per main-loop iteration.
    pub trips: f64,
}

crate::json_object!(Measurements {
    field schema, field structure, field clock, field rows, field iterations, field warm_up,
    field distribution, field cluster, field arrays, field micro, field nodes,
});
crate::serialize_by_hand!(Measurements);
crate::json_object!(StructureId { field "crate" = crate_name, field solver, field digest });
crate::json_object!(ArrayInfo { field name, field bytes_per_row, field distributed, field read_only });
crate::json_object!(Microbenchmarks {
    field send_overhead_s, field recv_overhead_s, field latency_s, field per_byte_s,
});
crate::json_object!(NodeMeasurements {
    field rank, field rows, field iteration_s, field read_overhead_s, field write_overhead_s,
    field async_overhead_s, field read_per_byte_s, field write_per_byte_s, field copy_per_byte_s,
    field stages, field io, field events, field tiles, field groups,
    optional iteration_compute_s,
});
crate::json_object!(StageKey { field section, optional tile, field stage });
crate::json_object!(StageMeasurement {
    flatten key, field count, field compute_s, field io_s, optional tiles, optional in_core_tiles,
    optional in_core,
});
crate::json_object!(InCoreSample { field rows, field compute_s, optional out_of_core });
crate::json_object!(IoMeasurement {
    flatten key, field var, field reads, field writes, field prefetches, field bytes_read,
    field bytes_written, field read_s, field write_s, field overlap_s,
});
crate::json_object!(EventMeasurement {
    field event, field messages_sent, field messages_received, field bytes_sent,
    field bytes_received, field send_overhead_s, field recv_overhead_s, field blocked_s,
    field total_s, field sent_to, field received_from, optional order, optional overheads,
});
crate::json_object!(OverheadSample {
    field send_s, field recv_s, optional messages_sent, optional bytes_sent, optional rows,
});
crate::json_object!(TileMeasurement { field section, field tile, field count });
crate::json_object!(GroupMeasurement { field group, field trips });

impl crate::json::ToJson for PeerOp {
    /// `{"send": 3}` or `{"receive": 1}`.
    fn write_json(&self, w: &mut crate::json::Writer) {
        w.object(|o| match self {
            PeerOp::Send(rank) => o.field("send", rank),
            PeerOp::Receive(rank) => o.field("receive", rank),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClusterSpec, LoadAt, LoadStep, NetworkSpec, NodeSpec};

    fn measurements(io_on: &[bool], compute: f64) -> Measurements {
        let node = |rank: usize| NodeMeasurements {
            rank: rank as u32,
            rows: 10,
            iteration_s: 1.0,
            read_overhead_s: 0.0,
            write_overhead_s: 0.0,
            async_overhead_s: 0.0,
            read_per_byte_s: 0.0,
            write_per_byte_s: 0.0,
            copy_per_byte_s: 0.0,
            stages: vec![StageMeasurement {
                key: StageKey {
                    section: 0,
                    tile: None,
                    stage: 0,
                },
                count: 1.0,
                compute_s: compute,
                io_s: 0.0,
                tiles: Vec::new(),
                in_core_tiles: Vec::new(),
                in_core: Vec::new(),
            }],
            io: if io_on[rank] {
                vec![IoMeasurement {
                    key: StageKey {
                        section: 0,
                        tile: None,
                        stage: 0,
                    },
                    var: "a".into(),
                    reads: 1.0,
                    writes: 0.0,
                    prefetches: 0.0,
                    bytes_read: 8.0,
                    bytes_written: 0.0,
                    read_s: 0.1,
                    write_s: 0.0,
                    overlap_s: 0.0,
                }]
            } else {
                Vec::new()
            },
            events: Vec::new(),
            tiles: Vec::new(),
            groups: Vec::new(),
            iteration_compute_s: Vec::new(),
        };
        Measurements {
            schema: MEASUREMENTS_SCHEMA.into(),
            structure: StructureId {
                crate_name: "c".into(),
                solver: "c::solve".into(),
                digest: "0".into(),
            },
            clock: "virtual".into(),
            rows: 10 * io_on.len() as u64,
            iterations: 2,
            warm_up: 0,
            distribution: vec![10; io_on.len()],
            cluster: ClusterSpec {
                network: NetworkSpec {
                    latency_s: 0.0,
                    bandwidth_bps: 1e9,
                },
                nodes: vec![
                    NodeSpec {
                        cpu: 1.0,
                        memory_bytes: 1 << 20,
                        disk_read_bps: 1e8,
                        disk_write_bps: 1e8,
                        disk_latency_s: 1e-3,
                    };
                    io_on.len()
                ],
                loads: Vec::new(),
            },
            arrays: Vec::new(),
            micro: Microbenchmarks::default(),
            nodes: (0..io_on.len()).map(node).collect(),
        }
    }

    /// A part of a node's iteration may measure up to `ITERATION_SLACK` longer than the
    /// iteration (timer granularity); beyond, the first such part is named, and the parts
    /// added up are held to the same bound.
    #[test]
    fn parts_of_an_iteration_fit_in_it() {
        let (relative, absolute) = ITERATION_SLACK;
        let within = 1.0 * (1.0 + relative) + absolute;
        let m = measurements(&[true, false], within);
        assert_eq!(m.first_outside_iteration(), None);
        let mut m = measurements(&[true, false], 0.5);
        m.nodes[1].stages[0].compute_s = within * 1.001;
        let found = m.first_outside_iteration().expect("outside");
        assert_eq!((found.node, found.seconds), (1, within * 1.001));
        assert_eq!(
            found.part.map(|p| p.to_string()).as_deref(),
            Some("stages[0].compute_s")
        );
        let mut m = measurements(&[true, false], 0.5);
        m.nodes[0].stages[0].tiles = vec![0.25, 1.5];
        let found = m.first_outside_iteration().expect("outside");
        assert_eq!((found.node, found.seconds), (0, 1.5));
        assert_eq!(
            found.part.map(|p| p.to_string()).as_deref(),
            Some("stages[0].tiles[1]")
        );
        let mut m = measurements(&[true, false], 0.5);
        m.nodes[0].io[0].overlap_s = 2.0;
        let found = m.first_outside_iteration().expect("outside");
        assert_eq!((found.node, found.seconds), (0, 2.0));
        assert_eq!(
            found.part.map(|p| p.to_string()).as_deref(),
            Some("io[0].overlap_s")
        );
        // Each part fits, their sum does not: 0.75 s of stage and 0.5 s of event in 1 s.
        let mut m = measurements(&[false, false], 0.75);
        m.nodes[1].events.push(EventMeasurement {
            event: 0,
            messages_sent: 1.0,
            messages_received: 0.0,
            bytes_sent: 8.0,
            bytes_received: 0.0,
            send_overhead_s: 0.5,
            recv_overhead_s: 0.0,
            blocked_s: 0.0,
            total_s: 0.5,
            sent_to: vec![0],
            received_from: Vec::new(),
            order: Vec::new(),
            overheads: Vec::new(),
        });
        assert_eq!(
            m.first_outside_iteration(),
            Some(OutsideIteration {
                node: 1,
                part: None,
                seconds: 1.25
            })
        );
    }

    /// Every field away from its default, every optional field present: what `json` writes
    /// reads back with serde as the same measurements.
    #[test]
    fn written_by_hand_reads_back_with_serde() {
        let mut m = measurements(&[true, false], 0.25);
        m.warm_up = 3;
        m.arrays = vec![ArrayInfo {
            name: "a".into(),
            bytes_per_row: 8,
            distributed: true,
            read_only: false,
        }];
        m.micro = Microbenchmarks {
            send_overhead_s: 1e-6,
            recv_overhead_s: 2e-6,
            latency_s: 5e-5,
            per_byte_s: 1e-9,
        };
        m.cluster.loads = vec![
            vec![
                LoadStep {
                    at: LoadAt::Seconds(0.5),
                    cpu_share: Some(0.5),
                    memory_bytes: None,
                },
                LoadStep {
                    at: LoadAt::Iteration(4),
                    cpu_share: None,
                    memory_bytes: Some(1 << 30),
                },
            ],
            Vec::new(),
        ];
        let n = &mut m.nodes[0];
        n.copy_per_byte_s = 1e-10;
        n.stages[0].key.tile = Some(2);
        n.stages[0].tiles = vec![0.1, 0.15];
        n.stages[0].in_core_tiles = vec![0.05, 0.05];
        n.stages[0].in_core = vec![
            InCoreSample {
                rows: 7,
                compute_s: 0.2,
                out_of_core: vec!["a".into()],
            },
            InCoreSample {
                rows: 9,
                compute_s: 0.3,
                out_of_core: Vec::new(),
            },
        ];
        n.events = vec![EventMeasurement {
            event: 1,
            messages_sent: 2.0,
            messages_received: 2.0,
            bytes_sent: 16.0,
            bytes_received: 16.0,
            send_overhead_s: 1e-6,
            recv_overhead_s: 1e-6,
            blocked_s: 0.0,
            total_s: 3e-6,
            sent_to: vec![1],
            received_from: vec![1],
            order: vec![PeerOp::Send(1), PeerOp::Receive(1)],
            overheads: vec![OverheadSample {
                send_s: Some(5e-7),
                recv_s: None,
                messages_sent: Some(2.0),
                bytes_sent: Some(16.0),
                rows: Some(3),
            }],
        }];
        n.tiles = vec![TileMeasurement {
            section: 0,
            tile: 2,
            count: 2.0,
        }];
        n.groups = vec![GroupMeasurement {
            group: 0,
            trips: 3.0,
        }];
        n.iteration_compute_s = vec![0.5, 0.25];
        for text in [crate::json::pretty(&m), crate::json::compact(&m)] {
            let back: Measurements = serde_json::from_str(&text).unwrap();
            assert_eq!(back, m);
        }
        // The names of the contract, as the readers see them.
        let value: serde_json::Value = serde_json::from_str(&crate::json::pretty(&m)).unwrap();
        assert_eq!(value["structure"]["crate"], "c");
        assert_eq!(value["nodes"][0]["stages"][0]["tile"], 2);
        assert_eq!(value["nodes"][0]["events"][0]["order"][1]["receive"], 1);
        assert_eq!(value["cluster"]["loads"][0][1]["at"]["iteration"], 4);
        assert!(value["nodes"][1]["stages"][0].get("tile").is_none());
        assert!(value["nodes"][1]["stages"][0].get("in_core").is_none());
    }

    #[test]
    fn kept_runs_iterations_follow_scaled_to_the_measurements_means() {
        // Forced: node 0 computed 2.0 then 4.0 (mean 3), node 1 1.0 and 1.0. Kept: node 0 1.0
        // then 2.0 (mean 1.5: ×2), node 1 0.5 then 1.5 (mean 1: ×1), then a node without
        // computation.
        let mut forced = measurements(&[true, true], 2.0);
        forced.nodes[0].iteration_compute_s = vec![2.0, 4.0];
        forced.nodes[1].iteration_compute_s = vec![1.0, 1.0];
        let mut kept = measurements(&[false, false], 1.5);
        kept.nodes[0].iteration_compute_s = vec![1.0, 2.0];
        kept.nodes[1].iteration_compute_s = vec![0.5, 1.5];
        forced.merge_in_core_compute(&kept).unwrap();
        assert_eq!(forced.nodes[0].iteration_compute_s, [2.0, 4.0, 2.0, 4.0]);
        assert_eq!(forced.nodes[1].iteration_compute_s, [1.0, 1.0, 0.5, 1.5]);
        kept.nodes[1].iteration_compute_s = vec![0.0, 0.0];
        forced.merge_in_core_compute(&kept).unwrap();
        assert_eq!(forced.nodes[1].iteration_compute_s[4..], [1.0, 1.0]);
        // A kept run whose nodes recorded different counts adds none.
        kept.nodes[1].iteration_compute_s = vec![1.0];
        forced.merge_in_core_compute(&kept).unwrap();
        assert_eq!(forced.nodes[0].iteration_compute_s.len(), 6);
        // A node that held more than four times its rows there (or under a quarter) repeats
        // its mean: node 1 held 10 rows here and 41 there.
        kept.nodes[1].iteration_compute_s = vec![0.5, 1.5];
        kept.nodes[1].rows = 41;
        forced.merge_in_core_compute(&kept).unwrap();
        assert_eq!(forced.nodes[1].iteration_compute_s[6..], [1.0, 1.0]);
        kept.nodes[1].rows = 40;
        forced.merge_in_core_compute(&kept).unwrap();
        assert_eq!(forced.nodes[1].iteration_compute_s[8..], [0.5, 1.5]);
        kept.nodes[1].rows = 10;
        // Forced measurements without iterations: the scale is the stages' computation (2.0).
        let mut old = measurements(&[true, true], 2.0);
        kept.nodes[1].iteration_compute_s = vec![1.0, 3.0];
        old.merge_in_core_compute(&kept).unwrap();
        assert_eq!(old.nodes[0].iteration_compute_s, [4.0 / 3.0, 8.0 / 3.0]);
        assert_eq!(old.nodes[1].iteration_compute_s, [1.0, 3.0]);
    }

    #[test]
    fn kept_runs_sample_every_node_with_the_arrays_it_moved() {
        let mut forced = measurements(&[true, true], 2.0);
        let kept = measurements(&[false, true], 1.5);
        assert_eq!(forced.merge_in_core_compute(&kept), Ok(1));
        let sample = InCoreSample {
            rows: 10,
            compute_s: 1.5,
            out_of_core: Vec::new(),
        };
        // Node 1 still moved `a` through disk: its sample says so.
        let partly = InCoreSample {
            out_of_core: vec!["a".into()],
            ..sample.clone()
        };
        assert_eq!(forced.nodes[0].stages[0].in_core, vec![sample.clone()]);
        assert_eq!(forced.nodes[0].stages[0].compute_s, 2.0);
        assert_eq!(forced.nodes[1].stages[0].in_core, vec![partly.clone()]);
        // A second in-core run adds a second sample.
        assert_eq!(forced.merge_in_core_compute(&kept), Ok(1));
        assert_eq!(
            forced.nodes[0].stages[0].in_core,
            vec![sample.clone(), sample]
        );
        assert_eq!(
            forced.nodes[1].stages[0].in_core,
            vec![partly.clone(), partly]
        );
        assert!(forced.nodes[0].stages[0].in_core_tiles.is_empty());
        // The kept runs' tile profiles add up position by position, only where in core.
        let mut tiled = kept.clone();
        for node in &mut tiled.nodes {
            node.stages[0].tiles = vec![1.0, 0.5];
        }
        forced.merge_in_core_compute(&tiled).unwrap();
        forced.merge_in_core_compute(&tiled).unwrap();
        assert_eq!(forced.nodes[0].stages[0].in_core_tiles, vec![2.0, 1.0]);
        assert!(forced.nodes[1].stages[0].in_core_tiles.is_empty());
        let other = measurements(&[false], 1.0);
        assert!(forced
            .merge_in_core_compute(&other)
            .unwrap_err()
            .starts_with("rows"));
    }

    #[test]
    fn every_nodes_events_get_the_runs_per_message_overheads() {
        // Node 0 did no I/O in the kept run, node 1 did: both get a sample.
        let mut forced = measurements(&[true, true], 2.0);
        let mut kept = measurements(&[false, true], 1.5);
        for (i, (f, k)) in forced.nodes.iter_mut().zip(&mut kept.nodes).enumerate() {
            let event = EventMeasurement {
                event: 7,
                messages_sent: 2.0,
                messages_received: 0.0,
                bytes_sent: 16.0,
                bytes_received: 0.0,
                send_overhead_s: 0.5 * (i + 1) as f64,
                recv_overhead_s: 0.0,
                blocked_s: 0.0,
                total_s: 0.5 * (i + 1) as f64,
                sent_to: vec![],
                received_from: vec![],
                order: vec![],
                overheads: vec![],
            };
            f.events.push(event.clone());
            k.events.push(event);
        }
        forced.merge_in_core_compute(&kept).unwrap();
        for (i, node) in forced.nodes.iter().enumerate() {
            let want = OverheadSample {
                send_s: Some(0.25 * (i + 1) as f64),
                recv_s: None,
                messages_sent: Some(2.0),
                bytes_sent: Some(16.0),
                rows: Some(kept.nodes[i].rows),
            };
            assert_eq!(node.events[0].overheads, vec![want], "node {i}");
        }
    }
}
