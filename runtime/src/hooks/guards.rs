//! RAII guards: created where a region of the solver begins, recorded when dropped.
//!
//! Disabled (no rank of the process records or emulates), creating a guard is one relaxed load
//! and a branch, and dropping it one branch on a field of the guard.

use super::{active, record_io, with_recorder, IoKind, Record, RecordKind, VarId, NONE};
use crate::clock::{self, ComputeMark};
use crate::comm::Traffic;
use crate::format::StageKey;

/// A region being timed. Dropping it records the region (when recording) and restores the
/// enclosing stage and event context.
#[must_use = "a guard records its region when dropped: bind it with `let _g = ...`"]
pub struct Guard {
    live: bool,
    recording: bool,
    kind: RecordKind,
    id: u32,
    aux: u32,
    key: StageKey,
    begin_s: f64,
    open: u32,
    compute: Option<ComputeMark>,
    saved_stage: Option<StageKey>,
    saved_event: u32,
}

const ZERO_KEY: StageKey = StageKey {
    section: 0,
    tile: None,
    stage: 0,
};

impl Guard {
    const INERT: Guard = Guard {
        live: false,
        recording: false,
        kind: RecordKind::Section,
        id: 0,
        aux: 0,
        key: ZERO_KEY,
        begin_s: 0.0,
        open: 0,
        compute: None,
        saved_stage: None,
        saved_event: NONE,
    };

    #[inline]
    fn open(kind: RecordKind, id: u32, aux: u32, key: Option<StageKey>) -> Guard {
        if !active() {
            return Guard::INERT;
        }
        Guard::open_installed(kind, id, aux, key)
    }

    #[inline(never)]
    fn open_installed(kind: RecordKind, id: u32, aux: u32, key: Option<StageKey>) -> Guard {
        with_recorder(|r| {
            let mut g = Guard {
                live: true,
                kind,
                id,
                aux,
                ..Guard::INERT
            };
            g.saved_stage = r.stage;
            g.saved_event = r.event;
            g.key = key.unwrap_or_else(|| r.context_key().0);
            match kind {
                RecordKind::Stage => {
                    r.stage = Some(g.key);
                    if r.config.slowdown {
                        g.compute = ComputeMark::start();
                    }
                }
                RecordKind::Event => r.event = id,
                _ => {}
            }
            g.recording = r.recording;
            if g.recording {
                g.open = r.next_seq();
                g.begin_s = clock::now();
            }
            g
        })
        .unwrap_or(Guard::INERT)
    }

    #[inline(never)]
    fn close(&mut self) {
        if let Some(mark) = self.compute.take() {
            mark.finish();
        }
        let end_s = if self.recording { clock::now() } else { 0.0 };
        let g = &*self;
        with_recorder(|r| {
            let in_stage = g.kind == RecordKind::Stage || r.stage.is_some();
            r.stage = g.saved_stage;
            r.event = g.saved_event;
            if g.kind == RecordKind::Stage {
                r.last_stage = g.key;
            }
            if g.recording {
                let close = r.next_seq();
                let event = if g.kind == RecordKind::Event {
                    g.id
                } else {
                    r.event
                };
                r.records.push(Record {
                    kind: g.kind,
                    id: g.id,
                    aux: g.aux,
                    key: g.key,
                    in_stage,
                    event,
                    peer: NONE,
                    traffic: Traffic::default(),
                    bytes: 0,
                    begin_s: g.begin_s,
                    end_s,
                    open: g.open,
                    close,
                });
            }
        });
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        if self.live {
            self.close();
        }
    }
}

/// One trip of the main iterative loop; `index` counts from 0.
#[inline]
pub fn iteration(index: u64) -> Guard {
    Guard::open(RecordKind::Iteration, index as u32, 0, None)
}

/// A parallel section.
#[inline]
pub fn section(id: u32) -> Guard {
    Guard::open(RecordKind::Section, id, 0, None)
}

/// One trip (one tile) of tile loop `tile` of section `section`.
#[inline]
pub fn tile(section: u32, tile: u32) -> Guard {
    Guard::open(
        RecordKind::Tile,
        tile,
        section,
        Some(StageKey {
            section,
            tile: Some(tile),
            stage: 0,
        }),
    )
}

/// A stage. I/O and communication recorded while it is open belong to it.
#[inline]
pub fn stage(key: StageKey) -> Guard {
    Guard::open(RecordKind::Stage, key.stage, 0, Some(key))
}

/// A communication event. Communication calls recorded while it is open belong to it.
#[inline]
pub fn event(id: u32) -> Guard {
    Guard::open(RecordKind::Event, id, 0, None)
}

/// One trip of the nested iteration (repeated group) `id`.
#[inline]
pub fn group(id: u32) -> Guard {
    Guard::open(RecordKind::Group, id, 0, None)
}

/// An I/O operation timed by a guard (an alternative to [`super::record_io`]).
#[must_use = "an I/O guard records the operation when dropped"]
pub struct IoGuard {
    begin_s: Option<f64>,
    var: VarId,
    op: IoKind,
    bytes: u64,
}

/// Time an I/O operation of `bytes` on `var` until the guard is dropped.
#[inline]
pub fn io(var: VarId, op: IoKind, bytes: u64) -> IoGuard {
    let begin_s = if active() { Some(clock::now()) } else { None };
    IoGuard {
        begin_s,
        var,
        op,
        bytes,
    }
}

impl Drop for IoGuard {
    #[inline]
    fn drop(&mut self) {
        if let Some(begin_s) = self.begin_s {
            record_io(self.var, self.op, self.bytes, begin_s, clock::now());
        }
    }
}
