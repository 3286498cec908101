//! Lowering the main loop's body to tokens (DESIGN §3.5).
//!
//! The body is flattened depth-first in source order into `LoopStart`, `LoopEnd`, `Comm`, `Io`
//! and `Stmt` tokens, ending with `IterEnd`. Communication events are formed block by block
//! (`events.rs`) and numbered in token order, so ids are the same however the solver is reached.
//! A loop that still holds communication after event formation is lifted: a *tile loop* when its
//! first token is a receive-like event (the automaton's lookahead), otherwise a *nested
//! iteration* (a repeated group). Inside tiles and stage loops nothing is lifted: communication
//! there reaches the automaton, which reports it.

use mheta_format::Level;

use crate::body::Facts;
use crate::diagnostics::{Diagnostic, Loc};
use crate::events::{self, Described, EventDraft, Item};
use crate::ir::{IoCall, LoopKind, Node, Stmt};

mod branch;

/// One token of the flattened main-loop body; the index points into [`Lowered`]'s tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Token {
    /// A loop begins: an index into [`Lowered::loops`].
    LoopStart(usize),
    /// The loop with this index into [`Lowered::loops`] ends.
    LoopEnd(usize),
    /// A communication event: an index into [`Lowered::events`].
    Comm(usize),
    /// An I/O operation on a variable: an index into [`Lowered::io`]. It comes right after the
    /// `Stmt` token of the statement that performs it.
    Io(usize),
    /// A statement without loops inside: an index into [`Lowered::stmts`].
    Stmt(usize),
    /// The end of one iteration of the main loop; always the last token.
    IterEnd,
}

/// How the automaton treats a loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopRole {
    /// A stage loop (or a loop nested in one).
    Plain,
    /// A pipelined tile loop: receive, compute, send.
    Tile,
    /// A nested iteration with communication: a repeated group.
    Nested,
}

/// A loop of the lowered body: what the automaton, classification and the structure need of
/// an [`ir::Loop`](crate::ir::Loop), with the role lowering gave it.
#[derive(Debug, Clone)]
pub struct LoopInfo {
    /// Where the loop is written.
    pub loc: Loc,
    /// Which syntax it is: `for`, `while`, `loop` or an iterator chain.
    pub kind: LoopKind,
    /// Variables the loop binds (`i` in `for i in ..`, closure parameters).
    pub vars: Vec<String>,
    /// Variables the loop's bounds or condition read.
    pub bound_reads: Vec<String>,
    /// The iterable or condition as written.
    pub header_text: String,
    /// Trip count when it can be read off (`2`, `k`), else `..`; the repeat count of a nested
    /// iteration's group.
    pub trip_count: String,
    /// The header's own effects (iterable expression, the `let` an iterator chain feeds); its
    /// communication, if any, has become an event of its own.
    pub header: Stmt,
    /// How the automaton treats the loop.
    pub role: LoopRole,
    /// The same loop in the other arm of an alternating branch.
    pub alt: Option<Loc>,
}

/// A communication event of the lowered body, indexed by [`Token::Comm`].
#[derive(Debug, Clone)]
pub struct Event {
    /// The calls that form the event, the rule that formed it and where it is written.
    pub draft: EventDraft,
    /// Its pattern, participants, message and element type.
    pub described: Described,
    /// The share of iterations the event runs in (below 1 under an iteration-counter guard).
    pub frequency: f64,
    /// The iteration-counter guards around it, as written, joined with `&&`.
    pub condition: Option<String>,
}

/// Tokens plus the tables they index.
#[derive(Debug, Clone, Default)]
pub struct Lowered {
    /// The main loop's body, depth first in source order, ending with [`Token::IterEnd`].
    pub tokens: Vec<Token>,
    /// The loops, in the order they start; indexed by `LoopStart` and `LoopEnd`.
    pub loops: Vec<LoopInfo>,
    /// The communication events, numbered in token order; indexed by `Comm`.
    pub events: Vec<Event>,
    /// The statements, computing branch conditions and the computation taken out of an
    /// event's arguments included; indexed by `Stmt`.
    pub stmts: Vec<Stmt>,
    /// The I/O operations; indexed by `Io`.
    pub io: Vec<IoCall>,
    /// Warnings from lowering: unexpanded macros, a tile loop inside a tile loop, and how a
    /// branch that both communicates and computes was read.
    pub diags: Vec<Diagnostic>,
    /// The main loop's iteration counters (its loop variables, `it += 1` counters).
    counters: Vec<String>,
    /// The program's numeric constants, for guards such as `step % OUTPUT_EVERY == 0`.
    consts: crate::hash::HashMap<String, Option<f64>>,
    /// The iteration-counter guards being lowered: (frequency, condition as written).
    guards: Vec<(f64, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Context {
    /// The main loop's body or a nested iteration's body: comm-bearing loops are lifted.
    Sections,
    /// A tile loop's body.
    Tile,
    /// Inside a stage loop.
    StageLoop,
}

/// Lowers the main loop's body; `counters` are its iteration counters, `consts` the program's
/// numeric constants.
pub fn lower(
    body: Vec<Node>,
    facts: &Facts,
    counters: Vec<String>,
    consts: &crate::hash::HashMap<String, Option<f64>>,
) -> Lowered {
    let mut l = Lowered {
        counters,
        consts: consts.clone(),
        ..Lowered::default()
    };
    l.block(body, Context::Sections, facts);
    l.tokens.push(Token::IterEnd);
    l
}

impl Lowered {
    fn block(&mut self, nodes: Vec<Node>, ctx: Context, facts: &Facts) {
        for item in events::form(nodes) {
            self.item(item, ctx, facts);
        }
    }

    fn item(&mut self, item: Item, ctx: Context, facts: &Facts) {
        match item {
            Item::Event(mut draft) => {
                if let Some(compute) = draft.computes.take() {
                    self.stmt(compute);
                }
                let described = events::describe(&draft, facts);
                // A communicating arm guarded by the iteration counter runs in its share of the
                // iterations, as the arms of a branch that also computes do.
                let own = draft.guard.as_ref().and_then(|g| self.guard_share(g));
                let guarded = own.is_some();
                self.guards.extend(own);
                let frequency = self.guards.iter().map(|g| g.0).product();
                let condition = (!self.guards.is_empty()).then(|| {
                    let conds: Vec<&str> = self.guards.iter().map(|g| g.1.as_str()).collect();
                    conds.join(" && ")
                });
                if guarded {
                    self.guards.pop();
                }
                self.events.push(Event {
                    draft,
                    described,
                    frequency,
                    condition,
                });
                self.tokens.push(Token::Comm(self.events.len() - 1));
            }
            Item::Node(Node::Stmt(s)) => self.stmt(s),
            Item::Node(Node::Loop(mut lp)) => {
                // Communication in a loop header (`while { all_reduce(..); worst > tol } {..}`)
                // cannot be lifted: the loop stays a stage loop and the automaton reports it.
                let header_comm = !lp.header.calls.is_empty();
                let header_event = header_comm.then(|| {
                    let draft = match events::form(vec![Node::Stmt(lp.header.clone())]).pop() {
                        Some(Item::Event(d)) => d,
                        _ => unreachable_event(&lp.header),
                    };
                    lp.header.calls.clear();
                    draft
                });
                let has_comm = !header_comm && lp.body.iter().any(Node::has_comm);
                // A tile loop's body stays unmerged; any other's is merged. Which one it is
                // depends on the merged body's first event, formed alone.
                let unmerged = events::form_unmerged(std::mem::take(&mut lp.body));
                let first = has_comm
                    .then(|| events::first_merged_event(&unmerged))
                    .flatten();
                let receive_like = |d: &events::EventDraft| events::describe(d, facts).receive_like;
                let role = match (ctx, &first) {
                    (Context::Sections, Some(d)) if d.computes.is_none() && receive_like(d) => {
                        LoopRole::Tile
                    }
                    (Context::Sections, _) if has_comm => LoopRole::Nested,
                    (Context::Tile, Some(d)) if receive_like(d) => {
                        self.diags.push(
                            Diagnostic::warning(
                                "a tile loop may not contain another tile loop",
                                Some(lp.loc),
                            )
                            .with_label("inner tile loop, analysed as a stage loop"),
                        );
                        LoopRole::Plain
                    }
                    _ => LoopRole::Plain,
                };
                let id = self.loops.len();
                self.loops.push(LoopInfo {
                    loc: lp.loc,
                    kind: lp.kind,
                    vars: lp.vars,
                    bound_reads: lp.bound_reads,
                    header_text: lp.header_text,
                    trip_count: lp.trip_count,
                    header: lp.header,
                    role,
                    alt: lp.alt,
                });
                self.tokens.push(Token::LoopStart(id));
                if let Some(draft) = header_event {
                    self.item(Item::Event(draft), Context::StageLoop, facts);
                }
                let inner = match role {
                    LoopRole::Nested => Context::Sections,
                    LoopRole::Tile => Context::Tile,
                    LoopRole::Plain => Context::StageLoop,
                };
                let body_items = match role {
                    LoopRole::Tile => unmerged,
                    _ => events::merge(unmerged),
                };
                for it in body_items {
                    self.item(it, inner, facts);
                }
                self.tokens.push(Token::LoopEnd(id));
            }
            Item::Node(Node::Branch(b)) => {
                if b.arms.iter().flatten().any(Node::has_comm) {
                    self.comm_branch(b, ctx, facts);
                    return;
                }
                if !b.cond.glue {
                    self.stmt(b.cond);
                }
                for arm in b.arms {
                    self.block(arm, ctx, facts);
                }
            }
        }
    }

    fn stmt(&mut self, s: Stmt) {
        for (name, loc) in &s.opaque_macros {
            let msg = format!("macro `{name}!` is not expanded; it may hide communication");
            self.diags.push(Diagnostic {
                level: Level::Warning,
                message: msg,
                loc: Some(*loc),
                label: "not analysed".into(),
                notes: vec![],
            });
        }
        for (name, loc) in &s.closure_calls {
            self.diags.push(
                Diagnostic::warning(
                    format!("`{name}` is a closure this function is given: what it does is not analysed, and it may hide communication"),
                    Some(*loc),
                )
                .with_label("not analysed"),
            );
        }
        let io = s.io.clone();
        self.stmts.push(s);
        self.tokens.push(Token::Stmt(self.stmts.len() - 1));
        for op in io {
            self.io.push(op);
            self.tokens.push(Token::Io(self.io.len() - 1));
        }
    }

    /// A short description of a token for traces.
    pub fn describe_token(&self, t: Token, sources: &crate::sources::SourceMap) -> String {
        let at = |loc: Option<Loc>| {
            loc.map(|l| format!(" @{}:{}", l.start.0, l.start.1 + 1))
                .unwrap_or_default()
        };
        match t {
            Token::LoopStart(i) => {
                let l = &self.loops[i];
                let role = match l.role {
                    LoopRole::Plain => "",
                    LoopRole::Tile => " tile",
                    LoopRole::Nested => " nested",
                };
                format!(
                    "LoopStart(L{i}{role} {} {}){}",
                    l.kind.as_str(),
                    l.header_text,
                    at(Some(l.loc))
                )
            }
            Token::LoopEnd(i) => format!("LoopEnd(L{i})"),
            Token::Comm(i) => {
                let e = &self.events[i];
                let apis: Vec<&str> = e.draft.calls.iter().map(|c| c.api.as_str()).collect();
                format!(
                    "Comm(E{i} {} [{}]){}",
                    pattern_name(e.described.pattern),
                    apis.join(", "),
                    at(Some(e.draft.loc))
                )
            }
            Token::Io(i) => format!(
                "Io({:?} {}){}",
                self.io[i].op,
                self.io[i].var,
                at(Some(self.io[i].loc))
            ),
            Token::Stmt(i) => {
                let s = &self.stmts[i];
                let text = s.loc.and_then(|l| sources.snippet(l)).unwrap_or_default();
                let short: String = text.chars().take(48).collect();
                let more = if text.chars().count() > 48 { "…" } else { "" };
                format!("Stmt(S{i} `{short}{more}`){}", at(s.loc))
            }
            Token::IterEnd => "IterEnd".into(),
        }
    }
}

/// An event for a header whose calls did not form one (cannot happen: a statement with calls
/// always forms an event); kept total so lowering never panics.
fn unreachable_event(header: &Stmt) -> EventDraft {
    EventDraft {
        rule: mheta_format::EventRule::SingleCall,
        calls: header.calls.clone(),
        loc: header.loc.unwrap_or(Loc {
            file: 0,
            start: (0, 0),
            end: (0, 0),
            via: 0,
        }),
        ranges: vec![],
        computes: None,
        alt: vec![],
        guard: None,
    }
}

/// The snake_case name of a pattern (as in the structure file).
pub fn pattern_name(p: mheta_format::Pattern) -> String {
    serde_json::to_value(p)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}
