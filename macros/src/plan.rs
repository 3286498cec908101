//! The hook plan: which guard goes where, read off one solver of the structure file.
//!
//! *Regions* are guarded for as long as they run: parallel sections, stages (inside or outside
//! tile loops), communication events and user I/O calls. *Loop hooks* open a guard at the top of
//! every trip of a loop: the main loop (one `iteration` per trip, numbered from 0), tile loops
//! (one `tile` per tile) and nested iterations (one `group` trip each), so trip counts are
//! measured. Positions come from the structure's spans, so placement never depends on how the
//! analyzer represents its internals.
//!
//! What the analyzer reached by inlining a callee called from the main loop (a span with `via`)
//! is planned per inline site chain ([`Inlined`]) and placed in an instrumented copy of the
//! callee ([`crate::inline`]); the section it belongs to is anchored at the call in the main
//! loop.

use mheta_format::{IoKind, SectionItem, Solver, Span, Stage};

use crate::position::{from_span, Extent};

/// What a region's guard records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionKind {
    Section(u32),
    Stage {
        section: u32,
        tile: Option<u32>,
        stage: u32,
    },
    Event(u32),
    /// An I/O call; calls the runtime's out-of-core arrays record themselves are skipped when
    /// the call is found ([`crate::place`]).
    Io {
        var: String,
        op: IoKind,
    },
}

impl RegionKind {
    /// Guards with equal extents nest in this order (smaller rank outside).
    pub fn rank(&self) -> u8 {
        match self {
            RegionKind::Section(_) => 0,
            RegionKind::Stage { .. } => 1,
            RegionKind::Event(_) => 2,
            RegionKind::Io { .. } => 3,
        }
    }

    /// How the region is named in messages: `section 1`, `stage 0.2`, `stage 1.t0.0`, `event 3`.
    pub fn describe(&self) -> String {
        match self {
            RegionKind::Section(s) => format!("section {s}"),
            RegionKind::Stage {
                section,
                tile: None,
                stage,
            } => format!("stage {section}.{stage}"),
            RegionKind::Stage {
                section,
                tile: Some(t),
                stage,
            } => format!("stage {section}.t{t}.{stage}"),
            RegionKind::Event(e) => format!("event {e}"),
            RegionKind::Io { var, op } => {
                format!("{} of `{var}`", format!("{op:?}").to_lowercase())
            }
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Region {
    pub kind: RegionKind,
    pub extent: Extent,
}

/// What a loop hook records on each trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    Iteration,
    Tile { section: u32, tile: u32 },
    Group(u32),
}

impl LoopKind {
    pub fn describe(&self) -> String {
        match self {
            LoopKind::Iteration => "the main loop".into(),
            LoopKind::Tile { section, tile } => format!("tile loop {section}.{tile}"),
            LoopKind::Group(g) => format!("nested iteration (group) {g}"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoopHook {
    pub kind: LoopKind,
    /// Where the loop expression starts (its label or attributes included).
    pub start: (u32, u32),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub regions: Vec<Region>,
    pub loops: Vec<LoopHook>,
    /// Regions outside the solver's main loop (in inlined callees, in this file or another):
    /// not guarded by this macro.
    pub elsewhere: Vec<String>,
    /// The main loop's extent: regions inside it are this function's.
    pub own: Option<Extent>,
    /// The rsmpi calls of the solver's own events, to be recorded ([`crate::calls`]).
    pub calls: Vec<crate::calls::ForeignCall>,
    /// What lies in callees inlined from the main loop, by chain of call sites.
    pub inlined: Vec<Inlined>,
}

/// The regions, loop hooks and rsmpi calls of one inlined copy of a callee.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inlined {
    /// The call expressions the analysis went through, outermost (in the main loop) first.
    pub chain: Vec<Span>,
    pub regions: Vec<Region>,
    pub loops: Vec<LoopHook>,
    pub calls: Vec<crate::calls::ForeignCall>,
    /// The other file than the solver's that some of it lies in.
    pub file: Option<String>,
}

/// Where a span's region goes.
enum Target {
    Own,
    Inlined(usize),
    Elsewhere,
}

/// The plan for one solver. A solver without a main loop (an analysis error) has an empty plan.
pub fn plan(solver: &Solver) -> Plan {
    let mut plan = Plan::default();
    let file = solver.span.file.as_str();
    if solver.main_loop.kind == "none" {
        return plan;
    }
    plan.own = Some(from_span(&solver.main_loop.span));
    plan.loops.push(LoopHook {
        kind: LoopKind::Iteration,
        start: from_span(&solver.main_loop.span).start,
    });
    for group in &solver.groups {
        plan.loops.push(LoopHook {
            kind: LoopKind::Group(group.id),
            start: from_span(&group.span).start,
        });
    }
    for section in &solver.sections {
        let mut covered: Option<Extent> = None;
        let mut cover = |e: Extent| {
            covered = Some(match covered {
                None => e,
                Some(c) => Extent {
                    start: c.start.min(e.start),
                    end: c.end.max(e.end),
                },
            });
        };
        for item in &section.items {
            match item {
                SectionItem::Stage(stage) => {
                    if let Some(anchor) = plan.anchor(file, &stage.span) {
                        cover(anchor);
                    }
                    push_stage(&mut plan, file, section.id, None, stage);
                }
                SectionItem::Tiles(tiles) => {
                    if let Some(anchor) = plan.anchor(file, &tiles.span) {
                        cover(anchor);
                    }
                    let hook = LoopHook {
                        kind: LoopKind::Tile {
                            section: section.id,
                            tile: tiles.id,
                        },
                        start: from_span(&tiles.span).start,
                    };
                    match plan.target(file, &tiles.span) {
                        Target::Own => plan.loops.push(hook),
                        Target::Inlined(i) => plan.inlined[i].loops.push(hook),
                        Target::Elsewhere => plan.elsewhere.push(format!(
                            "{} ({}:{})",
                            hook.kind.describe(),
                            tiles.span.file,
                            tiles.span.line
                        )),
                    }
                    for stage in &tiles.stages {
                        push_stage(&mut plan, file, section.id, Some(tiles.id), stage);
                    }
                    for event in tiles.recv.iter().chain(tiles.send.iter()) {
                        plan.push(file, RegionKind::Event(event.id), &event.span);
                        plan.foreign_calls(file, event);
                    }
                }
            }
        }
        if let Some(event) = &section.comm {
            if let Some(anchor) = plan.anchor(file, &event.span) {
                cover(anchor);
            }
            plan.push(file, RegionKind::Event(event.id), &event.span);
            plan.foreign_calls(file, event);
            // The same event in another arm (alternating arms, rank-guarded arms).
            for alt in &event.alternates {
                plan.push(file, RegionKind::Event(event.id), alt);
            }
        }
        // A section that begins inside an inlined callee (`let alpha = rho / dot(..)`, after
        // `dot`'s reduction) has no statement of the main loop to begin at; nothing measured
        // depends on its guard but the counting of its tile trips, so without tiles it has none.
        let first = section
            .items
            .first()
            .map(|item| match item {
                SectionItem::Stage(stage) => &stage.span,
                SectionItem::Tiles(tiles) => &tiles.span,
            })
            .or(section.comm.as_ref().map(|e| &e.span));
        let has_tiles = section
            .items
            .iter()
            .any(|i| matches!(i, SectionItem::Tiles(_)));
        if first.is_some_and(|s| !s.via.is_empty()) && !has_tiles {
            covered = None;
        }
        if let Some(extent) = covered {
            plan.regions.push(Region {
                kind: RegionKind::Section(section.id),
                extent,
            });
        }
    }
    plan
}

fn push_stage(plan: &mut Plan, file: &str, section: u32, tile: Option<u32>, stage: &Stage) {
    let kind = RegionKind::Stage {
        section,
        tile,
        stage: stage.id,
    };
    plan.push(file, kind.clone(), &stage.span);
    // The same stage in the other arm of an alternating branch.
    for alt in &stage.alternates {
        plan.push(file, kind.clone(), alt);
    }
    for io in &stage.io {
        plan.push(
            file,
            RegionKind::Io {
                var: io.var.clone(),
                op: io.op,
            },
            &io.span,
        );
    }
}

impl Plan {
    /// Notes the rsmpi calls of an event: the main loop's and inlined callees' are recorded.
    fn foreign_calls(&mut self, file: &str, event: &mheta_format::CommEvent) {
        for call in event.calls.iter().filter(|c| c.api.starts_with("mpi::")) {
            let foreign = crate::calls::ForeignCall {
                api: call.api.clone(),
                start: from_span(&call.span).start,
                event: event.id,
            };
            match self.target(file, &call.span) {
                Target::Own => self.calls.push(foreign),
                Target::Inlined(i) => self.inlined[i].calls.push(foreign),
                // The MPI profiling interface records it, in the event region open then.
                Target::Elsewhere => {}
            }
        }
    }

    /// Whether a span lies in the solver's own main loop (not in an inlined callee).
    fn is_own(&self, file: &str, span: &Span) -> bool {
        let e = from_span(span);
        span.via.is_empty()
            && span.file == file
            && self
                .own
                .map_or(true, |own| own.start <= e.start && e.end <= own.end)
    }

    /// Where a span's region goes: the main loop, a callee inlined from it, or elsewhere.
    fn target(&mut self, file: &str, span: &Span) -> Target {
        match span.via.first() {
            None if self.is_own(file, span) => Target::Own,
            Some(root) if self.is_own(file, root) => {
                let i = match self.inlined.iter().position(|c| c.chain == span.via) {
                    Some(i) => i,
                    None => {
                        self.inlined.push(Inlined {
                            chain: span.via.clone(),
                            ..Inlined::default()
                        });
                        self.inlined.len() - 1
                    }
                };
                if span.file != file {
                    self.inlined[i].file = Some(span.file.clone());
                }
                Target::Inlined(i)
            }
            _ => Target::Elsewhere,
        }
    }

    /// What a section covers for a span in the main loop: the span itself, or the call that
    /// reaches it in an inlined callee.
    fn anchor(&self, file: &str, span: &Span) -> Option<Extent> {
        match span.via.first() {
            None => self.is_own(file, span).then(|| from_span(span)),
            Some(root) => self.is_own(file, root).then(|| from_span(root)),
        }
    }

    /// Adds a region where its span lies.
    fn push(&mut self, file: &str, kind: RegionKind, span: &Span) {
        let region = Region {
            kind,
            extent: from_span(span),
        };
        match self.target(file, span) {
            Target::Own => self.regions.push(region),
            Target::Inlined(i) => self.inlined[i].regions.push(region),
            Target::Elsewhere => self.elsewhere.push(format!(
                "{} ({}:{})",
                region.kind.describe(),
                span.file,
                span.line
            )),
        }
    }
}
