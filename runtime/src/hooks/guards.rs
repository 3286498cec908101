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
//!
//! An enabled guard first tries the stream ([`super::stream`]): in stream mode its open and
//! close each append one entry, inline. Otherwise, or when the stream is full, it takes the
//! out-of-line path, which opens and closes frames on the recorder directly
//! ([`Recorder::open_region`], [`Recorder::close_region`]); the stream is later replayed
//! through the same two functions.

use std::marker::PhantomData;

use super::{
    active, bookkeeping, record_io, stream, with_recorder, IoKind, Record, RecordKind, Recorder,
    Region, VarId, NONE,
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
    fn open(region: Region) -> Guard {
        if active() && !stream::open(region) {
            open_installed(region);
        }
        Guard::TOKEN
    }
}

#[cold]
#[inline(never)]
fn open_installed(region: Region) {
    // Bookkeeping, not the program's computation: an enclosing stage's slowdown skips it.
    let _bookkeeping = clock::not_compute();
    bookkeeping(|| {
        with_recorder(|r| {
            if r.fast {
                r.flush();
                r.tick_open(region);
            } else {
                // Last, so that the region's time excludes the bookkeeping before it.
                r.open_region(region, |r| (r.next_seq(), clock::now()));
            }
        })
    });
}

#[cold]
#[inline(never)]
fn close_installed() {
    // Bookkeeping, not the program's computation: an enclosing stage's slowdown skips it (and
    // skips this region's own slowdown spin, which the span measures too).
    let _bookkeeping = clock::not_compute();
    bookkeeping(|| {
        with_recorder(|r| {
            if r.fast {
                r.flush();
                r.tick_close();
            } else {
                r.close_region(|r| (r.next_seq(), clock::now()));
            }
        })
    });
}

impl Recorder {
    /// Open `region`: push its frame and enter its stage or event context. `stamp` gives the
    /// region's opening sequence number and begin time, when it records; it runs last.
    pub(super) fn open_region(
        &mut self,
        region: Region,
        stamp: impl FnOnce(&mut Recorder) -> (u32, f64),
    ) {
        let (aux, own_key) = region.decode();
        let key = own_key.unwrap_or_else(|| self.context_key().0);
        let mut frame = Frame {
            kind: region.kind,
            id: region.id,
            aux,
            key,
            recording: if region.kind == RecordKind::Iteration {
                self.timing
            } else {
                self.recording
            },
            begin_s: 0.0,
            open: 0,
            compute: None,
            saved_stage: self.stage,
            saved_event: self.event,
        };
        match region.kind {
            RecordKind::Stage => {
                self.stage = Some(key);
                if self.config.slowdown {
                    frame.compute = ComputeMark::start();
                }
            }
            RecordKind::Event => self.event = region.id,
            _ => {}
        }
        if frame.recording {
            (frame.open, frame.begin_s) = stamp(self);
        }
        self.frames.push(frame);
    }

    /// Close the innermost open region: record it (when it records) and restore the context it
    /// replaced. `stamp` gives its closing sequence number and end time.
    pub(super) fn close_region(&mut self, stamp: impl FnOnce(&mut Recorder) -> (u32, f64)) {
        let Some(frame) = self.frames.pop() else {
            return; // Opened before this thread's hooks were installed.
        };
        // The emulated slowdown is part of the stage; the bookkeeping below is not.
        if let Some(mark) = frame.compute {
            mark.finish();
        }
        let end = frame.recording.then(|| stamp(self));
        let in_stage = frame.kind == RecordKind::Stage || self.stage.is_some();
        self.stage = frame.saved_stage;
        self.event = frame.saved_event;
        if frame.kind == RecordKind::Stage {
            self.last_stage = frame.key;
        }
        if let Some((close, end_s)) = end {
            let event = if frame.kind == RecordKind::Event {
                frame.id
            } else {
                self.event
            };
            self.records.push(Record {
                kind: frame.kind,
                id: frame.id,
                aux: frame.aux,
                key: frame.key,
                in_stage,
                event,
                peer: NONE,
                group: NONE,
                traffic: Traffic::default(),
                bytes: 0,
                begin_s: frame.begin_s,
                end_s,
                open: frame.open,
                close,
                repeats: 0,
            });
        }
    }
}

impl Drop for Guard {
    #[inline(always)]
    fn drop(&mut self) {
        if active() && !stream::close() {
            close_installed();
        }
    }
}

/// One trip of the main iterative loop; `index` counts from 0.
#[inline(always)]
pub fn iteration(index: u64) -> Guard {
    crate::clock::iteration_begins(index);
    Guard::open(Region::new(RecordKind::Iteration, index as u32))
}

/// A parallel section.
#[inline(always)]
pub fn section(id: u32) -> Guard {
    Guard::open(Region::new(RecordKind::Section, id))
}

/// One trip (one tile) of tile loop `tile` of section `section`.
#[inline(always)]
pub fn tile(section: u32, tile: u32) -> Guard {
    Guard::open(Region {
        aux: section,
        ..Region::new(RecordKind::Tile, tile)
    })
}

/// A stage. I/O and communication recorded while it is open belong to it.
#[inline(always)]
pub fn stage(key: StageKey) -> Guard {
    Guard::open(Region {
        aux: key.section,
        tile: key.tile.unwrap_or(NONE),
        ..Region::new(RecordKind::Stage, key.stage)
    })
}

/// A communication event. Communication calls recorded while it is open belong to it.
#[inline(always)]
pub fn event(id: u32) -> Guard {
    Guard::open(Region::new(RecordKind::Event, id))
}

/// One trip of the nested iteration (repeated group) `id`.
#[inline(always)]
pub fn group(id: u32) -> Guard {
    Guard::open(Region::new(RecordKind::Group, id))
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
