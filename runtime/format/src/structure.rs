//! The MHETA structure file, `mheta-structure/1` (DESIGN §3.8).
//!
//! Produced by the analyzer (and embedded by `#[mheta::solver]`), read by the runtime (to tag
//! measurements) and by the model. Ids are stable index paths: a section's `id` is its index in
//! the solver's `sections` (sections of repeated groups included, in source order); a stage's `id`
//! is its index in its container (a section's items, or a tile loop's stages); a tile loop's `id`
//! is its index among the tile loops of its section; an event's `id` is its index among the
//! solver's events in source order.

use serde::{Deserialize, Serialize};

/// The schema string of this version of the structure file.
pub const STRUCTURE_SCHEMA: &str = "mheta-structure/1";

/// A whole structure file: every solver found in one crate or file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Structure {
    pub schema: String,
    #[serde(rename = "crate")]
    pub crate_name: String,
    pub solvers: Vec<Solver>,
    /// Problems not tied to one solver (unparsable files, unresolved modules, no solver found).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
}

/// A source position. `file` is relative to the analysed crate root when possible.
///
/// `line` and `column` are where the item starts (1-based line, 1-based column);
/// `end_line`/`end_column` where it ends (0 when unknown). Build one with [`Span::new`] or
/// [`Span::range`] so that added fields never break callers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Span {
    pub file: String,
    pub line: u32,
    pub column: u32,
    #[serde(default)]
    pub end_line: u32,
    #[serde(default)]
    pub end_column: u32,
    /// Code the analysis reached by inlining a callee: the call expressions it went through,
    /// outermost (in the solver) first. Empty in the solver itself.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Solver {
    /// Path of the function, e.g. `jacobi::solve`.
    pub name: String,
    pub span: Span,
    /// How the solver was found: `attribute`, `config` (mheta.toml) or `heuristic`.
    #[serde(default)]
    pub found_by: String,
    pub main_loop: MainLoop,
    pub variables: Vec<Variable>,
    pub sections: Vec<Section>,
    /// Repeated groups (nested iterations, DESIGN §3.4); their sections point at them.
    #[serde(default)]
    pub groups: Vec<Group>,
    pub diagnostics: Vec<Diagnostic>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MainLoop {
    pub span: Span,
    /// `for`, `while`, `loop` or `iterator` (a `for_each`-style closure).
    pub kind: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VarClass {
    Distributed,
    Replicated,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variable {
    pub name: String,
    pub class: VarClass,
    pub elem_type: Option<String>,
    pub span: Span,
}

/// A parallel section: stages and tile loops, closed by a communication event (or by the end of
/// the iteration, when `comm` is null).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Section {
    pub id: u32,
    pub items: Vec<SectionItem>,
    pub comm: Option<CommEvent>,
    /// The repeated group this section belongs to, if any (innermost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SectionItem {
    Stage(Stage),
    Tiles(TileLoop),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StageKind {
    /// Bounded by an outermost loop.
    Loop,
    /// Began without a loop (bounded by the next loop, event or the end of the iteration).
    Implicit,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Stencil,
    Independent,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Load {
    Fixed,
    Variable,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stage {
    pub id: u32,
    pub kind: StageKind,
    pub span: Span,
    pub loop_depth: u32,
    pub reads: Vec<String>,
    pub writes: Vec<String>,
    pub representative: Option<String>,
    pub io: Vec<IoOp>,
    pub access: Access,
    pub load: Load,
    /// Affine index expressions of array accesses in the loop variables.
    #[serde(default)]
    pub affine: Vec<AffineAccess>,
    /// The same stage's code in the other arm of an alternating branch (`if it % 2 == 0 { ..a, b.. }
    /// else { ..b, a.. }`): measured as this stage.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternates: Vec<Span>,
}

/// `var[c0 + c1*i + c2*j ...]` for one array access; `coefficients` maps loop variables to
/// their coefficient, `constant` is the offset. Non-affine accesses are not listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AffineAccess {
    pub var: String,
    /// One entry per index dimension.
    pub dims: Vec<AffineIndex>,
    pub write: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AffineIndex {
    pub coefficients: Vec<(String, i64)>,
    pub constant: i64,
    /// Loop-invariant symbolic terms of the offset (`m` in `(i + 1) * m + j`), with their
    /// integer coefficients. A coefficient key in `coefficients` may likewise be a loop variable
    /// times loop-invariant symbols (`i*m`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub symbols: Vec<(String, i64)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoKind {
    Read,
    Write,
    Prefetch,
    Wait,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IoOp {
    pub op: IoKind,
    pub var: String,
    pub span: Span,
}

/// A pipelined tile loop: receive from the upstream neighbour, stages, send downstream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TileLoop {
    pub id: u32,
    pub span: Span,
    pub recv: Option<CommEvent>,
    pub send: Option<CommEvent>,
    pub stages: Vec<Stage>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Pattern {
    NearestNeighbor,
    Reduction,
    Broadcast,
    Barrier,
    Gather,
    Scatter,
    AllGather,
    AllToAll,
    Pipeline,
    PointToPoint,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventRule {
    SingleCall,
    Loop,
    Function,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommCall {
    /// Catalogue name of the call, e.g. `mpi::send_with_tag`, `mpi::all_reduce_into`, `comm::all_reduce`.
    pub api: String,
    pub span: Span,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommEvent {
    pub id: u32,
    pub pattern: Pattern,
    pub rule: EventRule,
    pub calls: Vec<CommCall>,
    /// Symbolic peers: `rank - 1`, `0`, `all`, ...
    pub participants: Vec<String>,
    pub message: Option<String>,
    #[serde(default)]
    pub elem_type: Option<String>,
    pub span: Span,
    /// The share of iterations in which the event runs: 1 unless it is guarded by the iteration
    /// counter (`if step % 10 == 0 { gather }` runs in 0.1 of them). The model charges it at
    /// this frequency.
    #[serde(default = "always", skip_serializing_if = "is_always")]
    pub frequency: f64,
    /// The guard that makes the event conditional, as written (`step % 10 == 0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub condition: Option<String>,
    /// The same event's calls in the other arm of an alternating branch: measured as this event.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alternates: Vec<Span>,
}

fn always() -> f64 {
    1.0
}

fn is_always(f: &f64) -> bool {
    *f == 1.0
}

/// A nested iteration inside the main loop, modelled as its sections repeated `trip_count` times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub id: u32,
    pub span: Span,
    /// The trip-count expression as written (`2`, `inner_iters`, `..` when unknown).
    pub trip_count: String,
    /// The enclosing group, for nested groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Warning,
    Error,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub level: Level,
    pub message: String,
    pub span: Option<Span>,
}

impl Structure {
    /// A stable identity for the structure: a hash of its canonical JSON.
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
