//! What the hook layer records: one fixed-size [`Record`] per closed guard, I/O operation or
//! communication call.

use crate::comm::Traffic;
use crate::format::{IoKind, StageKey};

/// "No id" in a record field.
pub const NONE: u32 = u32::MAX;

/// What a record describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// One trip of the main loop; `id` is the iteration index (low 32 bits).
    Iteration,
    /// A parallel section; `id` is the section id.
    Section,
    /// One trip of a tile loop; `id` is the tile loop id, `aux` its section.
    Tile,
    /// A stage; `key` is its stage key.
    Stage,
    /// A communication event; `id` is the event id.
    Event,
    /// One trip of a nested iteration (repeated group); `id` is the group id.
    Group,
    /// An out-of-core operation; `id` is the variable, `aux` the [`IoKind`] code, `bytes` its size.
    Io,
    /// The memory copy an in-core write of a block would make, timed by an instrumented block
    /// write (see `ooc::OocArray::write_block`); `id` is the variable, `bytes` its size.
    Copy,
    /// A communication call; `aux` is the [`CallKind`] code, `peer` the peer or root, and `id`
    /// the rank an exchange received from when that is not `peer` (`send_receive_into(&x,
    /// &right, &mut y, &left)` sends to `right`, its peer, and receives from `left`), else
    /// [`NONE`]; `group` names the ranks of a collective on a communicator split off the world.
    Comm,
}

impl RecordKind {
    /// Records whose `id` is an interned variable ([`crate::hooks::VarId`]).
    pub fn names_var(self) -> bool {
        matches!(self, RecordKind::Io | RecordKind::Copy)
    }
}

/// Which communication call a [`RecordKind::Comm`] record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u32)]
pub enum CallKind {
    /// [`CommExt::send`](crate::CommExt::send) and its tagged form.
    Send,
    /// [`CommExt::immediate_send`](crate::CommExt::immediate_send).
    ImmediateSend,
    /// A receive, blocking or completed from an immediate receive.
    Receive,
    /// [`CommExt::barrier`](crate::CommExt::barrier).
    Barrier,
    /// [`CommExt::broadcast`](crate::CommExt::broadcast).
    Broadcast,
    /// [`CommExt::reduce`](crate::CommExt::reduce).
    Reduce,
    /// [`CommExt::all_reduce`](crate::CommExt::all_reduce) and `all_reduce_value`.
    AllReduce,
    /// [`CommExt::gather`](crate::CommExt::gather) and its `_varcount` form.
    Gather,
    /// [`CommExt::scatter`](crate::CommExt::scatter) and its `_varcount` form.
    Scatter,
    /// [`CommExt::all_gather`](crate::CommExt::all_gather) and its `_varcount` form.
    AllGather,
    /// [`CommExt::all_to_all`](crate::CommExt::all_to_all) and its `_varcount` form.
    AllToAll,
    /// An inclusive or exclusive prefix reduction (rsmpi's `scan_into`, `exclusive_scan_into`),
    /// which the `CommExt` API does not offer: only attached programs record it.
    Scan,
}

impl CallKind {
    const ALL: [CallKind; 12] = [
        CallKind::Send,
        CallKind::ImmediateSend,
        CallKind::Receive,
        CallKind::Barrier,
        CallKind::Broadcast,
        CallKind::Reduce,
        CallKind::AllReduce,
        CallKind::Gather,
        CallKind::Scatter,
        CallKind::AllGather,
        CallKind::AllToAll,
        CallKind::Scan,
    ];

    /// The kind with this code, if any.
    pub fn from_code(code: u32) -> Option<CallKind> {
        Self::ALL.get(code as usize).copied()
    }

    /// The call's name, as in the `CommExt` API.
    pub fn name(self) -> &'static str {
        match self {
            CallKind::Send => "send",
            CallKind::ImmediateSend => "immediate_send",
            CallKind::Receive => "receive",
            CallKind::Barrier => "barrier",
            CallKind::Broadcast => "broadcast",
            CallKind::Reduce => "reduce",
            CallKind::AllReduce => "all_reduce",
            CallKind::Gather => "gather",
            CallKind::Scatter => "scatter",
            CallKind::AllGather => "all_gather",
            CallKind::AllToAll => "all_to_all",
            CallKind::Scan => "scan",
        }
    }

    /// True for calls that only send.
    pub fn is_send(self) -> bool {
        matches!(self, CallKind::Send | CallKind::ImmediateSend)
    }
}

/// The code of an I/O kind in a record's `aux`.
pub fn io_code(op: IoKind) -> u32 {
    match op {
        IoKind::Read => 0,
        IoKind::Write => 1,
        IoKind::Prefetch => 2,
        IoKind::Wait => 3,
    }
}

/// The I/O kind of a record's `aux`.
pub fn io_kind(code: u32) -> Option<IoKind> {
    match code {
        0 => Some(IoKind::Read),
        1 => Some(IoKind::Write),
        2 => Some(IoKind::Prefetch),
        3 => Some(IoKind::Wait),
        _ => None,
    }
}

/// One recorded interval on one rank.
///
/// `open` and `close` are per-rank sequence numbers taken when the interval began and ended:
/// they order records exactly (even when a charged clock gives equal times) and give nesting:
/// `a` is inside `b` iff `b.open < a.open && a.close < b.close`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Record {
    /// What the record describes; it says what `id` and `aux` hold.
    pub kind: RecordKind,
    /// The iteration index, or the section, tile loop, event or group id, or the variable; see
    /// [`RecordKind`].
    pub id: u32,
    /// A second id: a tile loop's section, an I/O kind's code ([`io_code`]) or a [`CallKind`] code.
    pub aux: u32,
    /// The stage this record belongs to: the stage itself, the enclosing stage of an I/O or
    /// communication record, or (outside any stage) the last stage that ran.
    pub key: StageKey,
    /// Whether the record lies inside the stage `key` (its time is part of the stage's time).
    pub in_stage: bool,
    /// The enclosing communication event, or [`NONE`].
    pub event: u32,
    /// Peer (point-to-point) or root (rooted collectives), or [`NONE`].
    pub peer: u32,
    /// The ranks a collective call ran among when they are not the whole world (a communicator
    /// split off it): a [`GroupId`](crate::hooks::GroupId) of interned world ranks, else
    /// [`NONE`].
    pub group: u32,
    /// Messages and bytes a communication call moved, and its blocked time.
    pub traffic: Traffic,
    /// Bytes of an I/O operation.
    pub bytes: u64,
    /// When the interval began, seconds on the rank's clock.
    pub begin_s: f64,
    /// When the interval ended, seconds on the rank's clock.
    pub end_s: f64,
    /// The rank's sequence number when the interval began.
    pub open: u32,
    /// The rank's sequence number when the interval ended.
    pub close: u32,
    /// How many more calls a communication record stands for: the same call made again at
    /// once, with nothing recorded between, moving no message (a poll: `MPI_Test`,
    /// `MPI_Iprobe` finding nothing, in a loop), folds into the record before it
    /// ([`Record::fold_repeat`]), whose duration and blocked time become the calls' sums.
    /// 0 for a single call and for every other kind of record.
    pub repeats: u32,
}

impl Record {
    /// The group a collective ran among, when not the whole world.
    pub fn group_id(&self) -> Option<crate::hooks::GroupId> {
        (self.group != NONE).then_some(crate::hooks::GroupId(self.group))
    }

    /// Seconds between begin and end.
    pub fn duration_s(&self) -> f64 {
        self.end_s - self.begin_s
    }

    /// True if `self` lies strictly inside `outer` (by sequence numbers).
    pub fn is_inside(&self, outer: &Record) -> bool {
        outer.open < self.open && self.close < outer.close
    }

    /// Folds `next` into `self` when it repeats the same communication call right after it
    /// (see [`Record::repeats`]), and says whether it did. Both must be the same call (kind,
    /// peer, source, group, event and stage context), neither may have moved a message, both
    /// block or neither does, and no sequence number was taken between them (no guard opened
    /// or closed, no other record was made). The folded record keeps its start and lasts as
    /// long as the calls together: what the measurements count is the time spent in calls,
    /// not the time between them, which stays the computation's.
    pub fn fold_repeat(&mut self, next: &Record) -> bool {
        let moved = |r: &Record| {
            let t = &r.traffic;
            t.messages_sent > 0
                || t.messages_received > 0
                || t.bytes_sent > 0
                || t.bytes_received > 0
        };
        let same = |r: &Record| (r.aux, r.id, r.peer, r.group, r.event, r.key, r.in_stage);
        let repeats = self.kind == RecordKind::Comm
            && next.kind == RecordKind::Comm
            && self.close.wrapping_add(1) == next.open
            && same(self) == same(next)
            && !moved(self)
            && !moved(next)
            && (self.traffic.blocked_s > 0.0) == (next.traffic.blocked_s > 0.0);
        if repeats {
            self.end_s += next.duration_s();
            self.traffic.blocked_s += next.traffic.blocked_s;
            self.close = next.close;
            self.repeats = self.repeats.saturating_add(1).saturating_add(next.repeats);
        }
        repeats
    }
}

/// A guard's ids, as the stream stores them: `aux` is a tile's section, or a stage's section;
/// `tile` is a stage's tile loop, or [`NONE`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Region {
    pub(super) kind: RecordKind,
    pub(super) id: u32,
    pub(super) aux: u32,
    pub(super) tile: u32,
}

impl Region {
    pub(super) fn new(kind: RecordKind, id: u32) -> Region {
        Region {
            kind,
            id,
            aux: 0,
            tile: NONE,
        }
    }

    /// The record's `aux`, and the region's own stage key (a stage's or a tile's; other regions
    /// take the enclosing context's).
    pub(super) fn decode(self) -> (u32, Option<StageKey>) {
        match self.kind {
            RecordKind::Stage => (
                0,
                Some(StageKey {
                    section: self.aux,
                    tile: (self.tile != NONE).then_some(self.tile),
                    stage: self.id,
                }),
            ),
            RecordKind::Tile => (
                self.aux,
                Some(StageKey {
                    section: self.aux,
                    tile: Some(self.id),
                    stage: 0,
                }),
            ),
            _ => (self.aux, None),
        }
    }
}
