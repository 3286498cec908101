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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Section,
    /// ε: attach the pending event to the section and start the next one.
    SectionNext,
    Stage,
    /// ε: count the loop just entered.
    LoopStart,
    Loop,
    /// ε: leave the stage when its outermost loop ended.
    LoopEnd,
    TileStart,
    Tile,
    Done,
}

impl State {
    /// Whether the state is left by an ε move without consuming a token.
    pub fn is_epsilon(self) -> bool {
        matches!(self, State::SectionNext | State::LoopStart | State::LoopEnd)
    }

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
    pub section: u32,
    pub stage: u32,
    pub tile: u32,
    pub loops: u32,
    pub next: bool,
    pub implicit: bool,
    /// Inside a tile loop (the seed's `tile` flag): stages go into the tile.
    pub in_tile: bool,
}

/// A stage as the automaton delimits it: its kind and the tokens it recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct StageOut {
    pub kind: StageKind,
    pub tokens: Vec<Token>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TileOut {
    pub loop_id: usize,
    pub recv: Option<usize>,
    pub send: Option<usize>,
    pub stages: Vec<StageOut>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ItemOut {
    Stage(StageOut),
    Tiles(TileOut),
}

#[derive(Debug, Clone, PartialEq)]
pub struct SectionOut {
    pub items: Vec<ItemOut>,
    pub comm: Option<usize>,
    pub group: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct GroupOut {
    pub loop_id: usize,
    pub parent: Option<u32>,
}

/// One step of the trace.
#[derive(Debug, Clone, PartialEq)]
pub struct TraceStep {
    /// `None` for an ε move.
    pub token: Option<Token>,
    pub before: Snapshot,
    pub after: Snapshot,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    pub state: State,
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
    pub sections: Vec<SectionOut>,
    pub groups: Vec<GroupOut>,
    pub trace: Vec<TraceStep>,
    pub diags: Vec<Diagnostic>,
}

/// What a step did with its token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Consumed,
    /// The token must be fed again in the new state (an ε move "same token").
    Again,
}

/// The automaton over one lowered main-loop body.
pub struct Machine<'a> {
    lowered: &'a Lowered,
    pub state: State,
    pub vars: Vars,
    items: Vec<ItemOut>,
    stage: Option<StageOut>,
    tile: Option<TileOut>,
    pending: Option<usize>,
    /// Open nested iterations: (group id, loop id).
    groups: Vec<(u32, usize)>,
    pub out: Outline,
}

impl<'a> Machine<'a> {
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
                    .with_label("second communication in this tile");
                    self.diag(d);
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
