//! The hook plan: which guard goes where, read off one solver of the structure file.
//!
//! *Regions* are guarded for as long as they run: parallel sections, stages (inside or outside
//! tile loops), communication events and user I/O calls. *Loop hooks* open a guard at the top of
//! every trip of a loop: the main loop (one `iteration` per trip, numbered from 0), tile loops
//! (one `tile` per tile) and nested iterations (one `group` trip each), so trip counts are
//! measured. Positions come from the structure's spans, so placement never depends on how the
//! analyzer represents its internals.

use mheta_runtime::format::{IoKind, SectionItem, Solver, Span, Stage};

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
    /// The rsmpi calls of its events that lie in callees: not recorded as calls
    /// (`api at file:line (why)`).
    pub calls_elsewhere: Vec<String>,
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
                    if plan.is_own(file, &stage.span) {
                        cover(from_span(&stage.span));
                    }
                    push_stage(&mut plan, file, section.id, None, stage);
                }
                SectionItem::Tiles(tiles) => {
                    cover(from_span(&tiles.span));
                    plan.loops.push(LoopHook {
                        kind: LoopKind::Tile {
                            section: section.id,
                            tile: tiles.id,
                        },
                        start: from_span(&tiles.span).start,
                    });
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
            if plan.is_own(file, &event.span) {
                cover(from_span(&event.span));
            }
            plan.push(file, RegionKind::Event(event.id), &event.span);
            plan.foreign_calls(file, event);
            // The same event in another arm (alternating arms, rank-guarded arms).
            for alt in &event.alternates {
                plan.push(file, RegionKind::Event(event.id), alt);
            }
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
    /// Notes the rsmpi calls of an event that lie in the solver's main loop.
    fn foreign_calls(&mut self, file: &str, event: &mheta_runtime::format::CommEvent) {
        for call in event.calls.iter().filter(|c| c.api.starts_with("mpi::")) {
            if self.is_own(file, &call.span) {
                self.calls.push(crate::calls::ForeignCall {
                    api: call.api.clone(),
                    start: from_span(&call.span).start,
                });
            } else {
                self.calls_elsewhere.push(format!(
                    "{} at {}:{} (in a callee)",
                    call.api, call.span.file, call.span.line
                ));
            }
        }
    }

    /// Whether a span lies in the solver's own main loop (not in an inlined callee).
    fn is_own(&self, file: &str, span: &Span) -> bool {
        let e = from_span(span);
        span.file == file
            && self
                .own
                .map_or(true, |own| own.start <= e.start && e.end <= own.end)
    }

    /// Adds a region if it lies in the solver's main loop.
    fn push(&mut self, file: &str, kind: RegionKind, span: &Span) {
        if self.is_own(file, span) {
            self.regions.push(Region {
                kind,
                extent: from_span(span),
            });
        } else {
            self.elsewhere
                .push(format!("{} ({}:{})", kind.describe(), span.file, span.line));
        }
    }
}
