//! RAII guards: created where a region of the solver begins, recorded when dropped.
//!
//! A [`Guard`] is a zero-sized token: the state of an open region (its kind, ids, begin time,
//! the context it replaced) lives in a [`Frame`] on the rank's recorder, pushed when the guard is
//! created and popped when it is dropped. Guards of one thread therefore close in the reverse
//! order of their creation, which scoping guarantees for `let` bindings and early exits alike.
//!
//! Keeping no state in the guard is what makes a disabled guard free: creating it is one relaxed
//! load and a branch, and dropping it is the same load and branch. In particular, the unwinding
//! path of a region (a bounds check or a `?` inside it) needs no value from the guard, so the
//! compiler keeps the region's loops exactly as it would without instrumentation.

use std::marker::PhantomData;

use super::{
    active, bookkeeping, record_io, with_recorder, IoKind, Record, RecordKind, VarId, NONE,
};
use crate::clock::{self, ComputeMark};
use crate::comm::Traffic;
use crate::format::StageKey;

/// A region being timed. Dropping it records the region (when recording) and restores the
/// enclosing stage and event context.
///
/// The guard refers to the current thread's innermost open region, so it is neither `Send` nor
/// `Sync`; guards must be dropped in the reverse order of their creation (as scopes do).
#[must_use = "a guard records its region when dropped: bind it with `let _g = ...`"]
pub struct Guard {
    _thread_bound: PhantomData<*const ()>,
}

/// An open region, kept on the recorder's stack until its guard is dropped.
#[derive(Debug, Clone, Copy)]
pub(super) struct Frame {
    kind: RecordKind,
    id: u32,
    aux: u32,
    key: StageKey,
    recording: bool,
    begin_s: f64,
    open: u32,
    compute: Option<ComputeMark>,
    saved_stage: Option<StageKey>,
    saved_event: u32,
}

impl Guard {
    const TOKEN: Guard = Guard {
        _thread_bound: PhantomData,
    };

    #[inline(always)]
    fn open(kind: RecordKind, id: u32, aux: u32, key: Option<StageKey>) -> Guard {
        if active() {
            open_installed(kind, id, aux, key);
        }
        Guard::TOKEN
    }
}

#[cold]
#[inline(never)]
fn open_installed(kind: RecordKind, id: u32, aux: u32, key: Option<StageKey>) {
    // Bookkeeping, not the program's computation: an enclosing stage's slowdown skips it.
    let _bookkeeping = clock::not_compute();
    bookkeeping(|| open_frame(kind, id, aux, key));
}

fn open_frame(kind: RecordKind, id: u32, aux: u32, key: Option<StageKey>) {
    with_recorder(|r| {
        let key = key.unwrap_or_else(|| r.context_key().0);
        let mut frame = Frame {
            kind,
            id,
            aux,
            key,
            recording: if kind == RecordKind::Iteration {
                r.timing
            } else {
                r.recording
            },
            begin_s: 0.0,
            open: 0,
            compute: None,
            saved_stage: r.stage,
            saved_event: r.event,
        };
        match kind {
            RecordKind::Stage => {
                r.stage = Some(key);
                if r.config.slowdown {
                    frame.compute = ComputeMark::start();
                }
            }
            RecordKind::Event => r.event = id,
            _ => {}
        }
        if frame.recording {
            frame.open = r.next_seq();
            // Last, so that the region's time excludes the bookkeeping above.
            frame.begin_s = clock::now();
        }
        r.frames.push(frame);
    });
}

#[cold]
#[inline(never)]
fn close_installed() {
    // Bookkeeping, not the program's computation: an enclosing stage's slowdown skips it (and
    // skips this region's own slowdown spin, which the span measures too).
    let _bookkeeping = clock::not_compute();
    bookkeeping(close_frame);
}

fn close_frame() {
    with_recorder(|r| {
        let Some(frame) = r.frames.pop() else {
            return; // Opened before this thread's hooks were installed.
        };
        // The emulated slowdown is part of the stage; the bookkeeping below is not.
        if let Some(mark) = frame.compute {
            mark.finish();
        }
        let end_s = if frame.recording { clock::now() } else { 0.0 };
        let in_stage = frame.kind == RecordKind::Stage || r.stage.is_some();
        r.stage = frame.saved_stage;
        r.event = frame.saved_event;
        if frame.kind == RecordKind::Stage {
            r.last_stage = frame.key;
        }
        if frame.recording {
            let close = r.next_seq();
            let event = if frame.kind == RecordKind::Event {
                frame.id
            } else {
                r.event
            };
            r.records.push(Record {
                kind: frame.kind,
                id: frame.id,
                aux: frame.aux,
                key: frame.key,
                in_stage,
                event,
                peer: NONE,
                traffic: Traffic::default(),
                bytes: 0,
                begin_s: frame.begin_s,
                end_s,
                open: frame.open,
                close,
            });
        }
    });
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        if active() {
            close_installed();
        }
    }
}

/// One trip of the main iterative loop; `index` counts from 0.
#[inline(always)]
pub fn iteration(index: u64) -> Guard {
    Guard::open(RecordKind::Iteration, index as u32, 0, None)
}

/// A parallel section.
#[inline(always)]
pub fn section(id: u32) -> Guard {
    Guard::open(RecordKind::Section, id, 0, None)
}

/// One trip (one tile) of tile loop `tile` of section `section`.
#[inline(always)]
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
#[inline(always)]
pub fn stage(key: StageKey) -> Guard {
    Guard::open(RecordKind::Stage, key.stage, 0, Some(key))
}

/// A communication event. Communication calls recorded while it is open belong to it.
#[inline(always)]
pub fn event(id: u32) -> Guard {
    Guard::open(RecordKind::Event, id, 0, None)
}

/// One trip of the nested iteration (repeated group) `id`.
#[inline(always)]
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
