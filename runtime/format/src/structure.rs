//! The MHETA structure file, `mheta-structure/1` (DESIGN §3.8).
//!
//! Produced by the analyzer (and embedded by `#[mheta::solver]`), read by the runtime (to tag
//! measurements) and by the model. Ids are stable index paths: a section's `id` is its index in
//! the solver's `sections` (sections of repeated groups included, in source order); a stage's `id`
//! is its index in its container (a section's items, or a tile loop's stages); a tile loop's `id`
//! is its index among the tile loops of its section; an event's `id` is its index among the
//! solver's events in source order.

#[cfg(feature = "read")]
use serde::Deserialize;
#[cfg(feature = "serde")]
use serde::Serialize;

/// The schema string of this version of the structure file.
pub const STRUCTURE_SCHEMA: &str = "mheta-structure/1";

/// A whole structure file: every solver found in one crate or file.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Structure {
    /// The schema string, [`STRUCTURE_SCHEMA`] for this version.
    pub schema: String,
    /// The analysed crate's package name (JSON field `crate`), or the file stem for a single file.
    #[cfg_attr(feature = "serde", serde(rename = "crate"))]
    pub crate_name: String,
    /// Every solver found, in source order.
    pub solvers: Vec<Solver>,
    /// Problems not tied to one solver (unparsable files, unresolved modules, no solver found).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub diagnostics: Vec<Diagnostic>,
}

/// A source position. `file` is relative to the analysed crate root when possible.
///
/// `line` and `column` are where the item starts (1-based line, 1-based column);
/// `end_line`/`end_column` where it ends (0 when unknown). Build one with [`Span::new`] or
/// [`Span::range`] so that added fields never break callers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Span {
    /// The source file, relative to the analysed crate root when possible.
    pub file: String,
    /// The 1-based line the item starts on.
    pub line: u32,
    /// The 1-based column the item starts at.
    pub column: u32,
    /// The 1-based line the item ends on; 0 when unknown.
    #[cfg_attr(feature = "serde", serde(default))]
    pub end_line: u32,
    /// The 1-based column the item ends at; 0 when unknown.
    #[cfg_attr(feature = "serde", serde(default))]
    pub end_column: u32,
    /// Code the analysis reached by inlining a callee: the call expressions it went through,
    /// outermost (in the solver) first. Empty in the solver itself.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub via: Vec<Span>,
}

impl Span {
    /// A span that only knows where it starts.
    pub fn new(file: impl Into<String>, line: u32, column: u32) -> Self {
        Span {
            file: file.into(),
            line,
            column,
            end_line: 0,
            end_column: 0,
            via: Vec::new(),
        }
    }

    /// A span from a start to an end position.
    pub fn range(file: impl Into<String>, start: (u32, u32), end: (u32, u32)) -> Self {
        Span {
            file: file.into(),
            line: start.0,
            column: start.1,
            end_line: end.0,
            end_column: end.1,
            via: Vec::new(),
        }
    }
}

/// One solver function and the structure of its main iterative loop.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Solver {
    /// Path of the function, e.g. `jacobi::solve`.
    pub name: String,
    /// Where the solver function is defined.
    pub span: Span,
    /// How the solver was found: `attribute`, `config` (mheta.toml) or `heuristic`.
    #[cfg_attr(feature = "serde", serde(default))]
    pub found_by: String,
    /// The main iterative loop: what one iteration of the model is.
    pub main_loop: MainLoop,
    /// The solver's variables classified as distributed or replicated (DESIGN §3.7).
    pub variables: Vec<Variable>,
    /// The parallel sections of one iteration of the main loop, in execution order; index = `id`.
    pub sections: Vec<Section>,
    /// Repeated groups (nested iterations, DESIGN §3.4); their sections point at them.
    #[cfg_attr(feature = "serde", serde(default))]
    pub groups: Vec<Group>,
    /// Problems found while analysing this solver (warnings do not stop the structure being written).
    pub diagnostics: Vec<Diagnostic>,
}

/// The main iterative loop of a solver (DESIGN §3.2): the outermost loop that communicates, or the
/// one marked `#[mheta::iterate]`. Code before it is initialisation, after it finalisation; neither
/// is modelled.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct MainLoop {
    /// Where the loop is written.
    pub span: Span,
    /// `for`, `while`, `loop` or `iterator` (a `for_each`-style closure).
    pub kind: String,
}

/// How a variable's size relates to the distribution (DESIGN §3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum VarClass {
    /// Its length derives from the node's partition (`ctx.local_rows(..)`, an out-of-core array, or
    /// mheta.toml): computation over it scales with the node's rows.
    Distributed,
    /// Every node holds the whole of it: computation over it does not change with the distribution.
    Replicated,
}

/// A variable of the solver and its class.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Variable {
    /// The binding's name as written in the solver.
    pub name: String,
    /// Distributed or replicated.
    pub class: VarClass,
    /// The element type as written (`f64`), or `None` when the analysis cannot see it.
    pub elem_type: Option<String>,
    /// Where the variable is bound.
    pub span: Span,
}

/// A parallel section: stages and tile loops, closed by a communication event (or by the end of
/// the iteration, when `comm` is null).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Section {
    /// The section's index in the solver's `sections`; hooks and measurements use the same id.
    pub id: u32,
    /// The stages and tile loops of the section, in execution order.
    pub items: Vec<SectionItem>,
    /// The communication event that closes the section; `None` (JSON `null`) when the section ends
    /// with the iteration or before a repeated group.
    pub comm: Option<CommEvent>,
    /// The repeated group this section belongs to, if any (innermost).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub group: Option<u32>,
}

/// One item of a section: a stage, or a pipelined tile loop holding stages of its own.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum SectionItem {
    /// A stage of computation directly in the section (JSON `{"stage": {..}}`).
    Stage(Stage),
    /// A pipelined tile loop (JSON `{"tiles": {..}}`).
    Tiles(TileLoop),
}

/// How a stage's boundaries were found by the automaton (DESIGN §3.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum StageKind {
    /// Bounded by an outermost loop.
    Loop,
    /// Began without a loop (bounded by the next loop, event or the end of the iteration).
    Implicit,
}

/// Whether a stage's loop reads neighbouring rows of the distributed dimension (DESIGN §3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Access {
    /// Reads rows next to the one it writes (`a[i - 1] + a[i + 1]`).
    Stencil,
    /// Each row is computed from its own row only.
    Independent,
}

/// Whether a stage's work per row is the same for every row (DESIGN §3.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Load {
    /// Inner loop bounds do not depend on an outer loop variable: the same work for every row.
    Fixed,
    /// An inner bound depends on an outer loop variable (a triangular loop): the work per row varies.
    Variable,
}

/// A stage: a stretch of computation between communication events, measured as one unit (the
/// seed's `T_phi`, scaled by the node's rows when the stage is distributed).
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Stage {
    /// The stage's index in its container: the section's items, or its tile loop's stages.
    pub id: u32,
    /// Bounded by a loop, or implicit.
    pub kind: StageKind,
    /// The code the stage covers.
    pub span: Span,
    /// How deeply loops nest inside the stage (0 for straight-line code).
    pub loop_depth: u32,
    /// Variables the stage reads.
    pub reads: Vec<String>,
    /// Variables the stage writes.
    pub writes: Vec<String>,
    /// The variable that decides whether the stage scales with the rows: distributed first, then
    /// written, then in the deepest loop nest (DESIGN §3.7). `None` when the stage touches no
    /// variable; the model then calls the stage distributed when any variable it touches is.
    pub representative: Option<String>,
    /// The I/O calls inside the stage, in source order.
    pub io: Vec<IoOp>,
    /// Stencil or independent rows.
    pub access: Access,
    /// Fixed or variable work per row.
    pub load: Load,
    /// Affine index expressions of array accesses in the loop variables.
    #[cfg_attr(feature = "serde", serde(default))]
    pub affine: Vec<AffineAccess>,
    /// The same stage's code in the other arm of an alternating branch (`if it % 2 == 0 { ..a, b.. }
    /// else { ..b, a.. }`): measured as this stage.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub alternates: Vec<Span>,
}

/// `var[c0 + c1*i + c2*j ...]` for one array access; `coefficients` maps loop variables to
/// their coefficient, `constant` is the offset. Non-affine accesses are not listed.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct AffineAccess {
    /// The array's name.
    pub var: String,
    /// One entry per index dimension.
    pub dims: Vec<AffineIndex>,
    /// Whether the access writes the element (`true`) or reads it.
    pub write: bool,
}

/// One index dimension of an affine access: `constant + Σ coefficient · variable`.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct AffineIndex {
    /// Loop variables with their integer coefficients.
    pub coefficients: Vec<(String, i64)>,
    /// The integer offset.
    pub constant: i64,
    /// Loop-invariant symbolic terms of the offset (`m` in `(i + 1) * m + j`), with their
    /// integer coefficients. A coefficient key in `coefficients` may likewise be a loop variable
    /// times loop-invariant symbols (`i*m`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub symbols: Vec<(String, i64)>,
}

/// The kind of an I/O call: an out-of-core array's (DESIGN §5), or a user I/O function named
/// in mheta.toml under the same four kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum IoKind {
    /// A synchronous read (`read_block`).
    Read,
    /// A write (`write_block`).
    Write,
    /// The start of an asynchronous read (`prefetch_block`).
    Prefetch,
    /// The wait for a prefetch to complete (`wait`).
    Wait,
}

/// An I/O call inside a stage.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct IoOp {
    /// What the call does.
    pub op: IoKind,
    /// The variable it moves: an out-of-core array, or the one a user I/O call names.
    pub var: String,
    /// Where the call is written.
    pub span: Span,
}

/// A pipelined tile loop: receive from the upstream neighbour, stages, send downstream.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct TileLoop {
    /// The tile loop's index among the tile loops of its section.
    pub id: u32,
    /// The loop as written.
    pub span: Span,
    /// The receive from the upstream neighbour at the start of each tile; `None` when there is none.
    pub recv: Option<CommEvent>,
    /// The send downstream at the end of each tile; `None` when there is none.
    pub send: Option<CommEvent>,
    /// The stages inside one tile, numbered from 0 within the tile loop.
    pub stages: Vec<Stage>,
}

/// The communication pattern of an event (DESIGN §3.4): which of the model's equations prices it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Pattern {
    /// Exchanges with neighbouring ranks (halo exchange; seed Eq. 5.11–5.12).
    NearestNeighbor,
    /// A reduction to one rank or to all (seed Eq. 5.7–5.9).
    Reduction,
    /// One rank sends the same message to every other.
    Broadcast,
    /// A barrier: no data, every rank waits for all.
    Barrier,
    /// Every rank sends its part to one root.
    Gather,
    /// One root sends each rank its part.
    Scatter,
    /// Every rank receives every rank's part.
    AllGather,
    /// Every rank sends a distinct part to every other.
    AllToAll,
    /// A tile boundary of a pipelined loop (seed Eq. 5.4–5.5).
    Pipeline,
    /// Point-to-point messages that fit no pattern above.
    PointToPoint,
}

impl Pattern {
    /// Every pattern, in declaration order.
    pub const ALL: [Pattern; 10] = [
        Pattern::NearestNeighbor,
        Pattern::Reduction,
        Pattern::Broadcast,
        Pattern::Barrier,
        Pattern::Gather,
        Pattern::Scatter,
        Pattern::AllGather,
        Pattern::AllToAll,
        Pattern::Pipeline,
        Pattern::PointToPoint,
    ];

    /// The pattern's name in the files (`nearest_neighbor`), as serialised.
    pub fn name(self) -> &'static str {
        match self {
            Pattern::NearestNeighbor => "nearest_neighbor",
            Pattern::Reduction => "reduction",
            Pattern::Broadcast => "broadcast",
            Pattern::Barrier => "barrier",
            Pattern::Gather => "gather",
            Pattern::Scatter => "scatter",
            Pattern::AllGather => "all_gather",
            Pattern::AllToAll => "all_to_all",
            Pattern::Pipeline => "pipeline",
            Pattern::PointToPoint => "point_to_point",
        }
    }

    /// The pattern named `name` in the files.
    pub fn named(name: &str) -> Option<Pattern> {
        Pattern::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Which rule of DESIGN §3.4 formed an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum EventRule {
    /// Rule 3: the call statement (with its rank guard) is the event.
    SingleCall,
    /// Rule 1: a loop holding only communication and glue is the event.
    Loop,
    /// Rule 2: each call of a communication-only user function (or `#[mheta::comm]`) is the event.
    Function,
}

/// One communication call of an event.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct CommCall {
    /// Catalogue name of the call, e.g. `mpi::send_with_tag`, `mpi::all_reduce_into`, `comm::all_reduce`.
    pub api: String,
    /// Where the call is written.
    pub span: Span,
}

/// A communication event (DESIGN §3.4): one or more calls measured and modelled together.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct CommEvent {
    /// The event's index among the solver's events, in source order.
    pub id: u32,
    /// The pattern, which selects the model's equations.
    pub pattern: Pattern,
    /// The rule that formed the event.
    pub rule: EventRule,
    /// The calls of the event, in source order.
    pub calls: Vec<CommCall>,
    /// Symbolic peers: `rank - 1`, `0`, `all`, ...
    pub participants: Vec<String>,
    /// The message expression as written (`u[1..2]`), or `None` when the analysis cannot see one.
    pub message: Option<String>,
    /// The message's element type (`f64`), or `None` when not visible.
    #[cfg_attr(feature = "serde", serde(default))]
    pub elem_type: Option<String>,
    /// The whole event: its calls and the glue it owns.
    pub span: Span,
    /// The share of iterations in which the event runs: 1 unless it is guarded by the iteration
    /// counter (`if step % 10 == 0 { gather }` runs in 0.1 of them). The model charges it at
    /// this frequency.
    #[cfg_attr(
        feature = "serde",
        serde(default = "always", skip_serializing_if = "is_always")
    )]
    pub frequency: f64,
    /// The guard that makes the event conditional, as written (`step % 10 == 0`).
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub condition: Option<String>,
    /// The same event's calls in the other arm of an alternating branch: measured as this event.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Vec::is_empty")
    )]
    pub alternates: Vec<Span>,
}

impl CommEvent {
    /// Whether the event runs in every iteration, the first ones included: not guarded by the
    /// iteration counter (a guarded event has a frequency below 1, or, when it runs in all but
    /// the first iterations, a `condition` at frequency 1).
    pub fn in_every_iteration(&self) -> bool {
        self.frequency >= 1.0 && self.condition.is_none()
    }
}

#[cfg(feature = "read")]
fn always() -> f64 {
    1.0
}

#[cfg(feature = "serde")]
fn is_always(f: &f64) -> bool {
    *f == 1.0
}

/// A nested iteration inside the main loop, modelled as its sections repeated `trip_count` times.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Group {
    /// The group's index in the solver's `groups`.
    pub id: u32,
    /// The nested loop as written.
    pub span: Span,
    /// The trip-count expression as written (`2`, `inner_iters`, `..` when unknown).
    pub trip_count: String,
    /// The enclosing group, for nested groups.
    #[cfg_attr(
        feature = "serde",
        serde(default, skip_serializing_if = "Option::is_none")
    )]
    pub parent: Option<u32>,
}

/// The severity of a [`Diagnostic`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "snake_case"))]
pub enum Level {
    /// The structure is written and usable; something may be measured or modelled less precisely.
    Warning,
    /// The analysis could not do what was asked (`mheta analyze` exits with 1).
    Error,
}

/// A problem the analysis found, rustc-style.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(Serialize))]
#[cfg_attr(feature = "read", derive(Deserialize))]
pub struct Diagnostic {
    /// Warning or error.
    pub level: Level,
    /// What is wrong, as one sentence.
    pub message: String,
    /// Where, or `None` for a problem with no position (no solver found).
    pub span: Option<Span>,
}

impl Structure {
    /// A stable identity for the structure: a hash of its canonical JSON (feature `serde`: the
    /// analyzer and the tools; a program reads the digest the macro wrote).
    #[cfg(feature = "serde")]
    pub fn digest(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("{:016x}", fnv1a64(json.as_bytes()))
    }

    /// The solver that measurements naming `name` (`StructureId::solver`) belong to: the one of
    /// that name, or the only one when the name is empty (a program that embeds no structure).
    pub fn solver_named(&self, name: &str) -> Option<&Solver> {
        match self.solvers.iter().find(|s| s.name == name) {
            Some(s) => Some(s),
            None => match self.solvers.as_slice() {
                [only] if name.is_empty() => Some(only),
                _ => None,
            },
        }
    }
}

impl Section {
    /// Every stage of the section, in order, with the tile loop it lies in.
    pub fn stages(&self) -> impl Iterator<Item = (&Stage, Option<u32>)> {
        self.items.iter().flat_map(|item| {
            let (stages, tile) = match item {
                SectionItem::Stage(s) => (std::slice::from_ref(s), None),
                SectionItem::Tiles(t) => (t.stages.as_slice(), Some(t.id)),
            };
            stages.iter().map(move |s| (s, tile))
        })
    }

    /// The ids of the section's events: its closing event, then its tile loops' receives and
    /// sends.
    pub fn event_ids(&self) -> impl Iterator<Item = u32> + '_ {
        let tiles = self.items.iter().flat_map(|item| match item {
            SectionItem::Tiles(t) => [t.recv.as_ref(), t.send.as_ref()],
            SectionItem::Stage(_) => [None, None],
        });
        self.comm
            .as_ref()
            .into_iter()
            .chain(tiles.flatten())
            .map(|e| e.id)
    }
}

/// 64-bit FNV-1a: a small, dependency-free, stable hash for identities (not for security).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_names_are_the_serialised_ones() {
        for pattern in Pattern::ALL {
            let json = serde_json::to_string(&pattern).unwrap();
            assert_eq!(json, format!("\"{}\"", pattern.name()));
            assert_eq!(Pattern::named(pattern.name()), Some(pattern));
        }
        assert_eq!(Pattern::named("ring"), None);
    }
}
