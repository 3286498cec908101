//! The preprocessor automaton (DESIGN §3.6; seed Fig. 5.3, A.1, A.2).
//!
//! An explicit [`State`] enum, the seed's variables ([`Vars`]) and one transition function,
//! [`Machine::step`], which consumes a token (with one token of lookahead) or takes an ε move.
//! The driver [`run`] feeds the lowered tokens and records a trace of every step (token, state
//! before, state after) for `mheta analyze --trace`. Rows of the design's table are cited in
//! the match arms. Nested iterations run on the same machine: a group stack replaces the
//! recursive "run the automaton on the loop body".

use std::fmt;

use mheta_format::StageKind;

use crate::diagnostics::{Diagnostic, Loc};
use crate::lower::{LoopRole, Lowered, Token};

/// A state of the automaton (DESIGN §3.6). The three ε states are left without consuming a
/// token ([`State::is_epsilon`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Between the items of a section: the next token opens a stage, a tile loop or a nested
    /// iteration, or an event closes the section.
    Section,
    /// ε: attach the pending event to the section and start the next one.
    SectionNext,
    /// Inside an implicit stage (one that began with a statement): statements and I/O are
    /// recorded until a loop, an event or the end of the iteration closes it.
    Stage,
    /// ε: count the loop just entered.
    LoopStart,
    /// Inside a stage loop, `loops` deep: every token up to its end is recorded into the stage.
    Loop,
    /// ε: leave the stage when its outermost loop ended.
    LoopEnd,
    /// A tile loop has just been opened: the next token, an event, is its receive.
    TileStart,
    /// Inside a tile loop between its stages: statements and loops open stages of the tile, an
    /// event is the tile's send, the tile loop's end closes it.
    Tile,
    /// The iteration has ended (`IterEnd`); later tokens are ignored.
    Done,
}

impl State {
    /// Whether the state is left by an ε move without consuming a token.
    pub fn is_epsilon(self) -> bool {
        matches!(self, State::SectionNext | State::LoopStart | State::LoopEnd)
    }

    /// The state's name as written in DESIGN §3.6's table (`SECTION`, `LOOP_START`, …), for
    /// traces.
    pub fn name(self) -> &'static str {
        match self {
            State::Section => "SECTION",
            State::SectionNext => "SECTION_NEXT",
            State::Stage => "STAGE",
            State::LoopStart => "LOOP_START",
            State::Loop => "LOOP",
            State::LoopEnd => "LOOP_END",
            State::TileStart => "TILE_START",
            State::Tile => "TILE",
            State::Done => "DONE",
        }
    }
}

/// The seed's automaton variables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Vars {
    /// Sections closed so far: the index of the section being built.
    pub section: u32,
    /// Stages closed so far in the current section (in the current tile loop while `in_tile`):
    /// the index of the next stage.
    pub stage: u32,
    /// Tile loops closed so far in the current section.
    pub tile: u32,
    /// Loop nesting depth inside the current stage loop; 0 outside one.
    pub loops: u32,
    /// An event has closed the current stage and is about to close the section (set on the way
    /// into `SECTION_NEXT`, cleared by its ε move).
    pub next: bool,
    /// The current stage began with a statement rather than a loop (stage kind `implicit`).
    pub implicit: bool,
    /// Inside a tile loop (the seed's `tile` flag): stages go into the tile.
    pub in_tile: bool,
}

/// A stage as the automaton delimits it: its kind and the tokens it recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct StageOut {
    /// `Loop` when the stage began with a loop, `Implicit` when it began with a statement.
    pub kind: StageKind,
    /// The tokens of the stage in order, the first one included; a loop stage also holds the
    /// `LoopStart`/`LoopEnd` tokens of its loops.
    pub tokens: Vec<Token>,
}

/// A tile loop as the automaton delimits it: a pipelined loop that receives, computes in
/// stages, then sends (DESIGN §3.6, pattern `pipeline`).
#[derive(Debug, Clone, PartialEq)]
pub struct TileOut {
    /// The tile loop, an index into [`Lowered::loops`].
    pub loop_id: usize,
    /// The receive that opens each tile, an index into [`Lowered::events`]; `None` when the
    /// loop's first token was not an event.
    pub recv: Option<usize>,
    /// The send that ends each tile, an index into [`Lowered::events`]; `None` when the tile
    /// does not send.
    pub send: Option<usize>,
    /// Communication after the send (a warning says so), whose calls join the send's event:
    /// the sends of a branch's other arms (`if from_left { send(..) } else { send(..) }`).
    pub more_sends: Vec<usize>,
    /// The stages between the receive and the send, in order.
    pub stages: Vec<StageOut>,
}

/// One item of a section, in source order.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemOut {
    /// A stage outside any tile loop.
    Stage(StageOut),
    /// A tile loop with its own stages.
    Tiles(TileOut),
}

/// A section: the stages and tile loops up to the communication event that closes it.
#[derive(Debug, Clone, PartialEq)]
pub struct SectionOut {
    /// Its stages and tile loops, in order.
    pub items: Vec<ItemOut>,
    /// The event that closes the section, an index into [`Lowered::events`]; `None` when the
    /// end of the iteration or the boundary of a nested iteration closed it instead.
    pub comm: Option<usize>,
    /// The innermost nested iteration the section belongs to, an index into
    /// [`Outline::groups`]; `None` at the main loop's top level.
    pub group: Option<u32>,
}

/// A nested iteration (DESIGN §3.4): a repeated group whose sections run once per trip of its
/// loop.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupOut {
    /// The nested loop, an index into [`Lowered::loops`].
    pub loop_id: usize,
    /// The group this one is nested in, an index into [`Outline::groups`]; `None` at the main
    /// loop's top level.
    pub parent: Option<u32>,
}

/// One step of the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStep {
    /// `None` for an ε move.
    pub token: Option<Token>,
    /// State and variables before the step.
    pub before: Snapshot,
    /// State and variables after the step.
    pub after: Snapshot,
}

/// The automaton's state and variables at one moment. `Display` writes it as in the trace:
/// `STAGE [section=0 stage=1 tile=0 loops=0 next=false implicit=true]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// The state.
    pub state: State,
    /// The variables.
    pub vars: Vars,
}

impl fmt::Display for Snapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = &self.vars;
        write!(
            f,
            "{} [section={} stage={} tile={} loops={} next={} implicit={}{}]",
            self.state.name(),
            v.section,
            v.stage,
            v.tile,
            v.loops,
            v.next,
            v.implicit,
            if v.in_tile { " in_tile" } else { "" }
        )
    }
}

/// What the automaton produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outline {
    /// The sections in the order they were closed; those of a nested iteration name its group.
    pub sections: Vec<SectionOut>,
    /// The nested iterations, numbered in the order they were entered.
    pub groups: Vec<GroupOut>,
    /// Every step, ε moves included, for `mheta analyze --trace`.
    pub trace: Vec<TraceStep>,
    /// Communication the automaton could not place (inside a stage loop, a second send in a
    /// tile) and internal inconsistencies, each reported once.
    pub diags: Vec<Diagnostic>,
}

/// What a step did with its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The token was used up: feed the next one.
    Consumed,
    /// The token must be fed again in the new state (an ε move "same token").
    Again,
}

/// The automaton over one lowered main-loop body.
pub struct Machine<'a> {
    lowered: &'a Lowered,
    /// The current state.
    pub state: State,
    /// The seed's variables as they stand.
    pub vars: Vars,
    items: Vec<ItemOut>,
    stage: Option<StageOut>,
    tile: Option<TileOut>,
    pending: Option<usize>,
    /// Open nested iterations: (group id, loop id).
    groups: Vec<(u32, usize)>,
    /// What the machine has produced so far; complete once `IterEnd` has been fed.
    pub out: Outline,
}

impl<'a> Machine<'a> {
    /// A machine at the start: state `SECTION`, all variables zero, nothing produced; tokens
    /// fed to it index `lowered`'s tables.
    pub fn new(lowered: &'a Lowered) -> Self {
        Machine {
            lowered,
            state: State::Section,
            vars: Vars::default(),
            items: vec![],
            stage: None,
            tile: None,
            pending: None,
            groups: vec![],
            out: Outline::default(),
        }
    }

    fn snapshot(&self) -> Snapshot {
        Snapshot {
            state: self.state,
            vars: self.vars,
        }
    }

    fn role(&self, t: Token) -> Option<LoopRole> {
        match t {
            Token::LoopStart(i) => self.lowered.loops.get(i).map(|l| l.role),
            _ => None,
        }
    }

    fn loc(&self, t: Token) -> Option<Loc> {
        match t {
            Token::LoopStart(i) | Token::LoopEnd(i) => self.lowered.loops.get(i).map(|l| l.loc),
            Token::Comm(i) => self.lowered.events.get(i).map(|e| e.draft.loc),
            Token::Io(i) => self.lowered.io.get(i).map(|o| o.loc),
            Token::Stmt(i) => self.lowered.stmts.get(i).and_then(|s| s.loc),
            Token::IterEnd => None,
        }
    }

    fn diag(&mut self, d: Diagnostic) {
        if !self.out.diags.contains(&d) {
            self.out.diags.push(d);
        }
    }

    fn open_stage(&mut self, kind: StageKind, first: Token) {
        self.vars.implicit = kind == StageKind::Implicit;
        self.stage = Some(StageOut {
            kind,
            tokens: vec![first],
        });
    }

    fn record(&mut self, t: Token) {
        if let Some(s) = &mut self.stage {
            s.tokens.push(t);
        }
    }

    fn close_stage(&mut self) {
        if let Some(stage) = self.stage.take() {
            match &mut self.tile {
                Some(tile) if self.vars.in_tile => tile.stages.push(stage),
                _ => self.items.push(ItemOut::Stage(stage)),
            }
        }
        self.vars.stage += 1;
    }

    /// Closes the current section with `comm` (null at a group boundary or the end).
    fn close_section(&mut self, comm: Option<usize>) {
        let items = std::mem::take(&mut self.items);
        if items.is_empty() && comm.is_none() {
            return;
        }
        let group = self.groups.last().map(|g| g.0);
        self.out.sections.push(SectionOut { items, comm, group });
        self.vars.section += 1;
        self.vars.stage = 0;
        self.vars.tile = 0;
    }

    fn is_group_end(&self, t: Token) -> bool {
        matches!(t, Token::LoopEnd(i) if self.groups.last().is_some_and(|g| g.1 == i))
    }

    fn is_tile_end(&self, t: Token) -> bool {
        matches!((t, &self.tile), (Token::LoopEnd(i), Some(tile)) if tile.loop_id == i)
    }

    /// The transition function. `input` is a token (with lookahead `la`) or `None` for an ε move.
    pub fn step(&mut self, input: Option<Token>, la: Option<Token>) -> Outcome {
        use State as S;
        use Token as T;
        let Some(t) = input else {
            self.epsilon();
            return Outcome::Consumed;
        };
        match (self.state, t) {
            // SECTION | Stmt or Io | open stage, implicit ← true | STAGE
            (S::Section, T::Stmt(_) | T::Io(_)) => {
                self.open_stage(StageKind::Implicit, t);
                self.state = S::Stage;
            }
            // SECTION | LoopStart, la is a receive-like Comm | open tile loop | TILE_START
            (S::Section, T::LoopStart(i))
                if self.role(t) == Some(LoopRole::Tile) && matches!(la, Some(T::Comm(_))) =>
            {
                self.tile = Some(TileOut {
                    loop_id: i,
                    recv: None,
                    send: None,
                    more_sends: vec![],
                    stages: vec![],
                });
                self.vars.in_tile = true;
                self.vars.stage = 0;
                self.state = S::TileStart;
            }
            // SECTION | LoopStart of a nested iteration | close section; run the body as a group
            (S::Section, T::LoopStart(i)) if self.role(t) == Some(LoopRole::Nested) => {
                self.close_section(None);
                let id = self.out.groups.len() as u32;
                self.out.groups.push(GroupOut {
                    loop_id: i,
                    parent: self.groups.last().map(|g| g.0),
                });
                self.groups.push((id, i));
            }
            // (group end) SECTION | LoopEnd of the open nested iteration | close section; pop group
            (S::Section, T::LoopEnd(_)) if self.is_group_end(t) => {
                self.close_section(None);
                self.groups.pop();
            }
            // SECTION | LoopStart (any other) | open stage, implicit ← false | LOOP_START
            (S::Section, T::LoopStart(_)) => {
                self.open_stage(StageKind::Loop, t);
                self.state = S::LoopStart;
            }
            // SECTION | Comm | next ← true | SECTION_NEXT
            (S::Section, T::Comm(e)) => {
                self.vars.next = true;
                self.pending = Some(e);
                self.state = S::SectionNext;
            }
            // SECTION | IterEnd | drop section if empty | DONE
            (S::Section, T::IterEnd) => {
                self.close_section(None);
                self.state = S::Done;
            }
            (S::Section, T::LoopEnd(_)) => {
                self.diag(Diagnostic::error(
                    "internal: loop end without a loop start",
                    self.loc(t),
                ));
            }
            // STAGE | Stmt or Io | record | STAGE
            (S::Stage, T::Stmt(_) | T::Io(_)) => self.record(t),
            // STAGE | LoopStart of a tile loop or nested iteration | close stage | ε SECTION, same token
            (S::Stage, T::LoopStart(_))
                if !self.vars.in_tile
                    && matches!(self.role(t), Some(LoopRole::Tile | LoopRole::Nested)) =>
            {
                self.close_stage();
                self.state = S::Section;
                return Outcome::Again;
            }
            // STAGE | LoopStart, implicit | close stage; open stage, implicit ← false | LOOP_START
            (S::Stage, T::LoopStart(_)) => {
                self.close_stage();
                self.open_stage(StageKind::Loop, t);
                self.state = S::LoopStart;
            }
            // STAGE | Comm | close stage; next ← true | SECTION_NEXT (in a tile: the tile's send)
            (S::Stage, T::Comm(e)) => {
                self.close_stage();
                if self.vars.in_tile {
                    self.state = S::Tile;
                    return Outcome::Again;
                }
                self.vars.next = true;
                self.pending = Some(e);
                self.state = S::SectionNext;
            }
            // (tile or group end) STAGE | LoopEnd | close stage | ε TILE / SECTION, same token
            (S::Stage, T::LoopEnd(_)) if self.is_tile_end(t) || self.is_group_end(t) => {
                self.close_stage();
                self.state = if self.vars.in_tile {
                    S::Tile
                } else {
                    S::Section
                };
                return Outcome::Again;
            }
            // STAGE | IterEnd | close stage | DONE
            (S::Stage, T::IterEnd) => {
                self.close_stage();
                self.state = if self.vars.in_tile {
                    S::Tile
                } else {
                    S::Section
                };
                return Outcome::Again;
            }
            (S::Stage, T::LoopEnd(_)) => {
                self.diag(Diagnostic::error(
                    "internal: loop end without a loop start",
                    self.loc(t),
                ));
            }
            // LOOP | Stmt, Io | record | LOOP
            (S::Loop, T::Stmt(_) | T::Io(_)) => self.record(t),
            // LOOP | LoopStart | — | LOOP_START
            (S::Loop, T::LoopStart(_)) => {
                self.record(t);
                self.state = S::LoopStart;
            }
            // LOOP | LoopEnd | loops-- | LOOP_END
            (S::Loop, T::LoopEnd(_)) => {
                self.record(t);
                self.vars.loops = self.vars.loops.saturating_sub(1);
                self.state = S::LoopEnd;
            }
            // LOOP | Comm | diagnostic: communication inside a stage loop; record | LOOP
            (S::Loop, T::Comm(_)) => {
                let d = Diagnostic::warning("communication inside a stage loop", self.loc(t))
                    .with_label("this communication cannot be lifted out of the loop")
                    .with_note("the loop mixes computation and communication in a way that is neither a tile loop nor a nested iteration");
                self.diag(d);
                self.record(t);
            }
            (S::Loop, T::IterEnd) => {
                self.diag(Diagnostic::error(
                    "internal: iteration ended inside a loop",
                    None,
                ));
                self.close_stage();
                self.state = S::Section;
                return Outcome::Again;
            }
            // TILE_START | Comm | record as the tile's receive | TILE
            (S::TileStart, T::Comm(e)) => {
                if let Some(tile) = &mut self.tile {
                    tile.recv = Some(e);
                }
                self.state = S::Tile;
            }
            (S::TileStart, _) => {
                self.state = S::Tile;
                return Outcome::Again;
            }
            // TILE | Stmt/Io/LoopStart | stages inside the tile, as in SECTION | TILE
            (S::Tile, T::Stmt(_) | T::Io(_)) => {
                self.check_after_send(t);
                self.open_stage(StageKind::Implicit, t);
                self.state = S::Stage;
            }
            (S::Tile, T::LoopStart(_)) => {
                self.check_after_send(t);
                self.open_stage(StageKind::Loop, t);
                self.state = S::LoopStart;
            }
            // TILE | Comm | record as the tile's send (a second send: diagnostic) | TILE
            (S::Tile, T::Comm(e)) => {
                let second = self.tile.as_ref().is_some_and(|tile| tile.send.is_some());
                if second {
                    let d = Diagnostic::warning(
                        "a tile loop may send only once, at its end",
                        self.loc(t),
                    )
                    .with_label("second communication in this tile")
                    .with_note("its calls are counted with the tile's send");
                    self.diag(d);
                    if let Some(tile) = &mut self.tile {
                        tile.more_sends.push(e);
                    }
                } else if let Some(tile) = &mut self.tile {
                    tile.send = Some(e);
                }
            }
            // TILE | LoopEnd of the tile loop | close tile loop; tile++ | SECTION
            (S::Tile, T::LoopEnd(_)) if self.is_tile_end(t) => {
                self.close_tile();
                self.state = S::Section;
            }
            (S::Tile, T::LoopEnd(_)) => {
                self.diag(Diagnostic::error(
                    "internal: loop end inside a tile",
                    self.loc(t),
                ));
            }
            (S::Tile, T::IterEnd) => {
                self.close_tile();
                self.state = S::Section;
                return Outcome::Again;
            }
            // ε states never see tokens: take the ε move first, then the token.
            (S::SectionNext | S::LoopStart | S::LoopEnd, _) => {
                self.epsilon();
                return Outcome::Again;
            }
            (S::Done, _) => {}
        }
        Outcome::Consumed
    }

    fn check_after_send(&mut self, t: Token) {
        if self.tile.as_ref().is_some_and(|tile| tile.send.is_some()) {
            let d = Diagnostic::warning("communication in the middle of a tile loop", self.loc(t))
                .with_label("computation after the tile's send");
            self.diag(d);
        }
    }

    fn close_tile(&mut self) {
        if let Some(tile) = self.tile.take() {
            self.items.push(ItemOut::Tiles(tile));
        }
        self.vars.in_tile = false;
        self.vars.tile += 1;
        self.vars.stage = self.items.len() as u32;
    }

    fn epsilon(&mut self) {
        match self.state {
            // SECTION_NEXT | ε | attach event; section++; stage ← 0; tile ← 0; next ← false | SECTION
            State::SectionNext => {
                let comm = self.pending.take();
                self.close_section(comm);
                self.vars.next = false;
                self.state = State::Section;
            }
            // LOOP_START | ε | loops++ | LOOP
            State::LoopStart => {
                self.vars.loops += 1;
                self.state = State::Loop;
            }
            // LOOP_END | loops = 0 | close stage; stage++ | SECTION (TILE inside a tile)
            State::LoopEnd if self.vars.loops == 0 => {
                self.close_stage();
                self.state = if self.vars.in_tile {
                    State::Tile
                } else {
                    State::Section
                };
            }
            // LOOP_END | loops > 0 | — | LOOP
            State::LoopEnd => self.state = State::Loop,
            _ => {}
        }
    }
}

/// Runs the automaton over all tokens, with a trace of every step.
pub fn run(lowered: &Lowered) -> Outline {
    let mut m = Machine::new(lowered);
    let tokens = &lowered.tokens;
    // Every token is consumed after at most a few `Again`s; the bound makes that a guarantee.
    let mut budget = tokens.len() * 8 + 16;
    for (i, &t) in tokens.iter().enumerate() {
        let la = tokens.get(i + 1).copied();
        loop {
            let before = m.snapshot();
            let eps = m.state.is_epsilon();
            let outcome = m.step(if eps { None } else { Some(t) }, la);
            m.out.trace.push(TraceStep {
                token: (!eps).then_some(t),
                before,
                after: m.snapshot(),
            });
            budget = budget.saturating_sub(1);
            if budget == 0 {
                m.out.diags.push(Diagnostic::error(
                    "internal: the automaton did not terminate",
                    None,
                ));
                return m.out;
            }
            if !eps && outcome == Outcome::Consumed {
                break;
            }
        }
        while m.state.is_epsilon() {
            let before = m.snapshot();
            m.step(None, la);
            m.out.trace.push(TraceStep {
                token: None,
                before,
                after: m.snapshot(),
            });
        }
    }
    m.out
}

#[cfg(test)]
mod tests;
