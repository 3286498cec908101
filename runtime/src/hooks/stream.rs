//! Stream mode: how an instrumented rank on the wall clock records its guards at close to the
//! cost of reading the clock.
//!
//! Building a region's record as its guard closes means keeping a frame per open region, the
//! stage and event context, and a 100-byte record: about 30 ns per guard pair beyond the two
//! clock reads. In stream mode a guard's open or close instead appends one 32-byte [`Tick`] to
//! a preallocated buffer: the raw clock reading ([`clock::wall_ticks`]), the sequence number,
//! and the guard's ids. I/O and communication records enter the stream too, as `Pending`
//! ticks, so that they get their context from the position they had among the guards.
//!
//! [`Recorder::flush`] replays the stream through the same [`Recorder::open_region`] and
//! [`Recorder::close_region`] the direct path uses, so both give the same records; the times
//! are converted with [`clock::wall_seconds`], which gives what [`clock::now`] would have.
//!
//! Replaying costs about what the direct path would have spent on the same guards, so where it
//! happens matters: it would lengthen whatever region is open. The stream is therefore replayed
//! when its outermost region (the main loop's iteration) closes and the stream is more than
//! half full, between two iterations; only an iteration of more than 16,384 entries is replayed
//! inside, when the stream is full. It is also replayed when recording starts or stops, and
//! when records are read.
//!
//! Stream mode is on only where the direct path does nothing more than record: on the wall
//! clock (a virtual clock hides bookkeeping from its time, [`super::bookkeeping`]) and at full
//! CPU power (a slower emulated CPU spins in stage guards and excludes bookkeeping from that
//! spin).

use super::{Record, RecordKind, Recorder, Region, CURRENT};
use crate::clock;

/// What a tick is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum What {
    /// A guard of this kind opened.
    Open(RecordKind),
    /// The innermost open guard closed.
    Close,
    /// The record `pending[id]` was made here.
    Pending,
}

/// One entry of the stream.
#[derive(Debug, Clone, Copy)]
pub(super) struct Tick {
    /// The raw clock reading ([`clock::wall_ticks`]); unused by `Pending`.
    at: u64,
    /// The sequence number taken; unused by `Pending`.
    seq: u32,
    /// The guard's ids ([`Region`]), or the index into `pending`.
    id: u32,
    aux: u32,
    tile: u32,
    what: What,
}

/// An empty stream of `capacity` whose memory has been written once, so that appending to it
/// takes no page fault inside a timed region.
pub(super) fn prefaulted(capacity: usize) -> Vec<Tick> {
    let blank = Tick {
        at: 0,
        seq: 0,
        id: 0,
        aux: 0,
        tile: 0,
        what: What::Close,
    };
    let mut ticks = vec![blank; capacity];
    ticks.clear();
    ticks
}

/// Append the opening of `region` to this thread's stream. False when the thread is not in
/// stream mode or the stream is full: the caller then takes the direct path.
#[inline(always)]
pub(super) fn open(region: Region) -> bool {
    // SAFETY: see `with_recorder`: a non-null `CURRENT` points to this thread's live recorder,
    // and no other reference to it exists while `CURRENT` is non-null. Nothing below calls out
    // of this module while the reference is held.
    match unsafe { CURRENT.get().as_mut() } {
        Some(r) => {
            let appended = r.try_tick(What::Open(region.kind), region.id, region.aux, region.tile);
            r.depth += u32::from(appended);
            appended
        }
        None => false,
    }
}

/// Append the closing of the innermost open guard to this thread's stream. False as for
/// [`open`].
#[inline(always)]
pub(super) fn close() -> bool {
    // SAFETY: as in `open`.
    match unsafe { CURRENT.get().as_mut() } {
        Some(r) => {
            if !r.try_tick(What::Close, 0, 0, 0) {
                return false;
            }
            r.depth = r.depth.saturating_sub(1);
            if r.depth == 0 && r.ticks.len() > r.ticks.capacity() / 2 {
                r.flush_between_regions();
            }
            true
        }
        None => false,
    }
}

impl Recorder {
    #[inline(always)]
    fn try_tick(&mut self, what: What, id: u32, aux: u32, tile: u32) -> bool {
        if !self.fast || self.ticks.len() == self.ticks.capacity() {
            return false;
        }
        self.seq = self.seq.wrapping_add(1);
        self.ticks.push(Tick {
            at: clock::wall_ticks(),
            seq: self.seq,
            id,
            aux,
            tile,
            what,
        });
        true
    }

    /// Append the opening of `region`, after a [`Recorder::flush`] made room.
    pub(super) fn tick_open(&mut self, region: Region) {
        let appended = self.try_tick(What::Open(region.kind), region.id, region.aux, region.tile);
        debug_assert!(appended, "a flushed stream has room");
        self.depth += 1;
    }

    /// Append a closing, after a [`Recorder::flush`] made room.
    pub(super) fn tick_close(&mut self) {
        let appended = self.try_tick(What::Close, 0, 0, 0);
        debug_assert!(appended, "a flushed stream has room");
        self.depth = self.depth.saturating_sub(1);
    }

    #[cold]
    #[inline(never)]
    fn flush_between_regions(&mut self) {
        self.flush();
    }

    /// Append `record`, an I/O or communication record whose context (stage key, `in_stage`,
    /// event) is the one at this point of the stream.
    pub(super) fn defer(&mut self, record: Record) {
        if self.ticks.len() == self.ticks.capacity() {
            self.flush();
        }
        self.ticks.push(Tick {
            at: 0,
            seq: 0,
            id: self.pending.len() as u32,
            aux: 0,
            tile: 0,
            what: What::Pending,
        });
        self.pending.push(record);
    }

    /// The last record deferred, when it is the stream's last entry (a repeat of its call may
    /// fold into it, [`Record::fold_repeat`]).
    pub(super) fn last_deferred(&mut self) -> Option<&mut Record> {
        match self.ticks.last() {
            Some(t) if t.what == What::Pending && t.id as usize + 1 == self.pending.len() => {
                self.pending.last_mut()
            }
            _ => None,
        }
    }

    /// Turn the stream into records, in order, and empty it (keeping its memory).
    pub(super) fn flush(&mut self) {
        if self.ticks.is_empty() {
            return;
        }
        let mut ticks = std::mem::take(&mut self.ticks);
        for tick in &ticks {
            let stamp = |_: &mut Recorder| (tick.seq, clock::wall_seconds(tick.at));
            match tick.what {
                What::Open(kind) => self.open_region(
                    Region {
                        kind,
                        id: tick.id,
                        aux: tick.aux,
                        tile: tick.tile,
                    },
                    stamp,
                ),
                What::Close => self.close_region(stamp),
                What::Pending => {
                    let mut record = self.pending[tick.id as usize];
                    self.in_context(&mut record);
                    self.records.push(record);
                }
            }
        }
        ticks.clear();
        self.ticks = ticks;
        self.pending.clear();
    }
}
