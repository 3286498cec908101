//! The MPI profiling interface (PMPI): every MPI communication call of an attached program is
//! recorded, wherever it is made — in the solver, in a helper of another module, in a method,
//! in a library crate — the way mpiP, TAU and Score-P record MPI.
//!
//! This module defines the MPI standard's C entry points (`MPI_Send`, `MPI_Allreduce`, …) that
//! rsmpi calls. The linker resolves the program's references to these definitions before
//! libmpi's, and each one calls the library's `PMPI_` entry point, which every MPI
//! implementation provides for exactly this purpose. A call is recorded when all of these hold:
//! - the process attached (`mheta::mpi::attach`): the runtime's own MPI backend records its
//!   `CommExt` calls itself, and a program that never attaches is never touched;
//! - the hooks are recording (between the session's start and its finish);
//! - the call is not inside a call `#[mheta::solver]` wrapped ([`super::foreign`]), which
//!   records it with what it reads at the call site.
//!
//! Otherwise the call goes straight to its `PMPI_` entry point: one relaxed atomic load when
//! the process did not attach. A recorded call is recorded as the wrapped call site would be
//! (the same [`CallKind`], peer, bytes and blocked time), so the measurements and the trace do
//! not depend on which of the two recorded it. Its event is the event region open around it;
//! in a callee the macro could not instrument, it is the event the call site's hint names
//! ([`site`](super::site)).
//!
//! Peers are world ranks (a split communicator's ranks are translated through its group);
//! sizes are the datatype's size times the count, and a blocking receive's are the count its
//! status gives.

use std::cell::{Cell, RefCell};
use std::os::raw::{c_int, c_void};
use std::sync::atomic::Ordering;

use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Message, MPI_Op, MPI_Request, MPI_Status};

use super::{comm_begin, comm_end_from, register_group, CallKind, GroupId};
use crate::comm::Traffic;

thread_local! {
    /// Calls of this thread that a wrapper `#[mheta::solver]` wrote is recording right now: MPI
    /// calls made inside them are theirs.
    static INSIDE: Cell<u32> = const { Cell::new(0) };
    /// The messages a matched probe of this thread returned that no matched receive has taken
    /// yet, with the communicator each was probed on.
    static PROBED: RefCell<Vec<Probed>> = const { RefCell::new(Vec::new()) };
}

/// A message a matched probe returned. Its handle does not name its communicator, and the
/// source the status of its receive gives is a rank of that communicator, so the probe's is
/// kept for the receive that takes it ([`MPI_Mrecv`], and a wrapper's `Members` of the message).
struct Probed {
    message: MPI_Message,
    comm: MPI_Comm,
}

/// How many probed messages a thread keeps: a program that probes and never receives forgets
/// its oldest.
const PROBED_KEPT: usize = 256;

/// The message handle at `message`, in a process that attached, when it names a message to
/// receive.
unsafe fn probed_message(message: *const MPI_Message) -> Option<MPI_Message> {
    unsafe {
        if !crate::attach::ATTACHED.load(Ordering::Relaxed) || message.is_null() {
            return None;
        }
        let message = *message;
        (message != ffi::RSMPI_MESSAGE_NULL && message != ffi::RSMPI_MESSAGE_NO_PROC)
            .then_some(message)
    }
}

/// Keeps the message a matched probe on `comm` returned (when the process attached and the
/// probe returned a message to receive).
unsafe fn note_probed(comm: MPI_Comm, message: *const MPI_Message) {
    unsafe {
        let Some(message) = probed_message(message) else {
            return;
        };
        PROBED.with(|p| {
            let mut p = p.borrow_mut();
            p.retain(|m| m.message != message);
            if p.len() == PROBED_KEPT {
                p.remove(0);
            }
            p.push(Probed { message, comm });
        });
    }
}

/// The communicator a probed message came on, if this thread probed it.
pub(super) fn probed_comm(message: MPI_Message) -> Option<MPI_Comm> {
    PROBED.with(|p| {
        p.borrow()
            .iter()
            .find(|m| m.message == message)
            .map(|m| m.comm)
    })
}

/// Forgets a probed message a matched receive takes now, and gives its communicator.
unsafe fn take_probed(message: *const MPI_Message) -> Option<MPI_Comm> {
    unsafe {
        let message = probed_message(message)?;
        PROBED.with(|p| {
            let mut p = p.borrow_mut();
            let k = p.iter().position(|m| m.message == message)?;
            Some(p.remove(k).comm)
        })
    }
}

/// A wrapped call begins: MPI calls until [`wrapped_end`] are the wrapper's to record.
#[inline]
pub(crate) fn wrapped_begin() {
    INSIDE.with(|d| d.set(d.get() + 1));
}

/// A wrapped call ended.
#[inline]
pub(crate) fn wrapped_end() {
    INSIDE.with(|d| d.set(d.get().saturating_sub(1)));
}

/// Whether a call made now is this module's to record.
#[inline]
fn ours() -> bool {
    crate::attach::ATTACHED.load(Ordering::Relaxed) && INSIDE.with(|d| d.get() == 0)
}

/// What one call did, read after it returned.
struct Call {
    kind: CallKind,
    /// Waits for other ranks: its whole duration is blocked time.
    blocks: bool,
    peer: Option<usize>,
    source: Option<usize>,
    group: Option<GroupId>,
    sent: u64,
    received: u64,
}

impl Call {
    fn new(kind: CallKind, blocks: bool) -> Call {
        Call {
            kind,
            blocks,
            peer: None,
            source: None,
            group: None,
            sent: 0,
            received: 0,
        }
    }
}

/// Runs `pmpi`, recording it as `describe` (read after it returned) says when it is ours and
/// the hooks record.
#[inline]
fn record(pmpi: impl FnOnce() -> c_int, describe: impl FnOnce() -> Call) -> c_int {
    if !ours() {
        return pmpi();
    }
    let start = comm_begin();
    if start.0.is_none() {
        return pmpi();
    }
    let rc = pmpi();
    let call = describe();
    let traffic = Traffic {
        messages_sent: u32::from(call.sent > 0),
        messages_received: u32::from(call.received > 0),
        bytes_sent: call.sent,
        bytes_received: call.received,
        blocked_s: 0.0,
    };
    comm_end_from(
        start.blocking(call.blocks),
        call.kind,
        call.peer,
        call.source,
        call.group,
        &traffic,
    );
    rc
}

/// `count` elements of `datatype`, in bytes.
unsafe fn bytes(count: c_int, datatype: MPI_Datatype) -> u64 {
    unsafe {
        let mut size: c_int = 0;
        if ffi::PMPI_Type_size(datatype, &mut size) != 0 {
            return 0;
        }
        u64::try_from(count).unwrap_or(0) * u64::try_from(size).unwrap_or(0)
    }
}

/// The sum of `n` counts.
unsafe fn total(counts: *const c_int, n: c_int) -> c_int {
    unsafe {
        if counts.is_null() {
            return 0;
        }
        (0..n.max(0) as usize).map(|i| *counts.add(i)).sum()
    }
}

/// The size of `comm`'s group (the local group of an inter-communicator).
unsafe fn size_of(comm: MPI_Comm) -> c_int {
    unsafe {
        let mut n: c_int = 0;
        ffi::PMPI_Comm_size(comm, &mut n);
        n
    }
}

fn world() -> MPI_Comm {
    // SAFETY: rsmpi's C shim defines the constant; it is read, never written.
    unsafe { ffi::RSMPI_COMM_WORLD }
}

/// The world rank of rank `rank` of `comm`; `None` for a rank that names no process
/// (`MPI_ANY_SOURCE`, `MPI_PROC_NULL`: negative in every implementation) and for the remote
/// group of an inter-communicator.
pub(super) unsafe fn world_rank(comm: MPI_Comm, rank: c_int) -> Option<usize> {
    unsafe {
        if rank < 0 {
            return None;
        }
        if comm == world() {
            return usize::try_from(rank).ok();
        }
        let mut inter: c_int = 0;
        if ffi::PMPI_Comm_test_inter(comm, &mut inter) != 0 || inter != 0 {
            return None;
        }
        translate(comm, &[rank])?
            .first()
            .copied()
            .map(|r| r as usize)
    }
}

/// The world ranks of `ranks` of `comm`; `None` when one is not in the world.
unsafe fn translate(comm: MPI_Comm, ranks: &[c_int]) -> Option<Vec<u32>> {
    unsafe {
        let mut group = std::mem::zeroed();
        let mut world_group = std::mem::zeroed();
        if ffi::PMPI_Comm_group(comm, &mut group) != 0 {
            return None;
        }
        if ffi::PMPI_Comm_group(world(), &mut world_group) != 0 {
            ffi::PMPI_Group_free(&mut group);
            return None;
        }
        let mut out = vec![0 as c_int; ranks.len()];
        let rc = ffi::PMPI_Group_translate_ranks(
            group,
            ranks.len() as c_int,
            ranks.as_ptr(),
            world_group,
            out.as_mut_ptr(),
        );
        ffi::PMPI_Group_free(&mut group);
        ffi::PMPI_Group_free(&mut world_group);
        if rc != 0 {
            return None;
        }
        out.into_iter().map(|r| u32::try_from(r).ok()).collect()
    }
}

/// The world ranks of `comm`'s members, in the order of their ranks in `comm`, interned; `None`
/// for the world itself and for any communicator with the world's ranks in the world's order (a
/// duplicate of it), whose collectives are the world's. An inter-communicator's collectives
/// span two groups: `None` (the whole world, as before groups were recorded).
pub(super) unsafe fn members(comm: MPI_Comm) -> Option<GroupId> {
    unsafe {
        if comm == world() {
            return None;
        }
        let mut inter: c_int = 0;
        if ffi::PMPI_Comm_test_inter(comm, &mut inter) != 0 || inter != 0 {
            return None;
        }
        let ranks: Vec<c_int> = (0..size_of(comm)).collect();
        let members = translate(comm, &ranks)?;
        let whole_world = members.len() == size_of(world()) as usize
            && members.iter().enumerate().all(|(i, &r)| r as usize == i);
        (!whole_world).then(|| register_group(&members))
    }
}

fn ignored(status: *mut MPI_Status) -> bool {
    // SAFETY: as `world`.
    status.is_null() || status == unsafe { ffi::RSMPI_STATUS_IGNORE }
}

/// The world rank a completed receive on `comm` came from.
unsafe fn status_source(comm: MPI_Comm, status: *const MPI_Status) -> Option<usize> {
    unsafe { world_rank(comm, (*status).MPI_SOURCE) }
}

/// The bytes a completed receive of `datatype` elements took, from its status.
unsafe fn status_bytes(status: *const MPI_Status, datatype: MPI_Datatype, fallback: c_int) -> u64 {
    unsafe {
        let mut count: c_int = 0;
        if ffi::PMPI_Get_count(status, datatype, &mut count) != 0 || count < 0 {
            count = fallback;
        }
        bytes(count, datatype)
    }
}

/// A status to pass on when the caller ignores it: its source and count are read after.
fn own_status(status: *mut MPI_Status, mine: &mut MPI_Status) -> *mut MPI_Status {
    if ignored(status) {
        mine
    } else {
        status
    }
}

/// What a rank of a scatter with counts counts as its message: the root every count, the
/// others their part.
unsafe fn scattered(
    comm: MPI_Comm,
    root: c_int,
    sendcounts: *const c_int,
    sendtype: MPI_Datatype,
    recvcount: c_int,
    recvtype: MPI_Datatype,
) -> u64 {
    unsafe {
        let mut rank: c_int = 0;
        ffi::PMPI_Comm_rank(comm, &mut rank);
        if rank == root {
            bytes(total(sendcounts, size_of(comm)), sendtype)
        } else {
            bytes(recvcount, recvtype)
        }
    }
}

/// A point-to-point send.
unsafe fn sending(
    kind: CallKind,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    comm: MPI_Comm,
) -> Call {
    unsafe {
        Call {
            peer: world_rank(comm, dest),
            sent: bytes(count, datatype),
            ..Call::new(kind, false)
        }
    }
}

/// A collective on `comm` that contributes `sent` bytes.
unsafe fn collective(kind: CallKind, blocks: bool, comm: MPI_Comm, sent: u64) -> Call {
    unsafe {
        Call {
            group: members(comm),
            sent,
            ..Call::new(kind, blocks)
        }
    }
}

macro_rules! sends {
    ($($name:ident => $pmpi:ident, $kind:ident;)*) => {$(
        /// Interposed (see the module documentation).
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
        ) -> c_int {
            unsafe {
                record(
                    || ffi::$pmpi(buf, count, datatype, dest, tag, comm),
                    || sending(CallKind::$kind, count, datatype, dest, comm),
                )
            }
        }
    )*};
}

sends! {
    MPI_Send => PMPI_Send, Send;
    MPI_Ssend => PMPI_Ssend, Send;
    MPI_Rsend => PMPI_Rsend, Send;
    MPI_Bsend => PMPI_Bsend, Send;
}

macro_rules! immediate_sends {
    ($($name:ident => $pmpi:ident;)*) => {$(
        /// Interposed (see the module documentation).
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            buf: *const c_void,
            count: c_int,
            datatype: MPI_Datatype,
            dest: c_int,
            tag: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            unsafe {
                record(
                    || ffi::$pmpi(buf, count, datatype, dest, tag, comm, request),
                    || sending(CallKind::ImmediateSend, count, datatype, dest, comm),
                )
            }
        }
    )*};
}

immediate_sends! {
    MPI_Isend => PMPI_Isend;
    MPI_Issend => PMPI_Issend;
    MPI_Irsend => PMPI_Irsend;
    MPI_Ibsend => PMPI_Ibsend;
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Recv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        let mut mine: MPI_Status = std::mem::zeroed();
        let status = own_status(status, &mut mine);
        record(
            || ffi::PMPI_Recv(buf, count, datatype, source, tag, comm, status),
            || Call {
                peer: world_rank(comm, source).or_else(|| status_source(comm, status)),
                received: status_bytes(status, datatype, count),
                ..Call::new(CallKind::Receive, true)
            },
        )
    }
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Irecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Irecv(buf, count, datatype, source, tag, comm, request),
            || Call {
                peer: world_rank(comm, source),
                received: bytes(count, datatype),
                ..Call::new(CallKind::Receive, false)
            },
        )
    }
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        let mut mine: MPI_Status = std::mem::zeroed();
        let status = own_status(status, &mut mine);
        record(
            || {
                ffi::PMPI_Sendrecv(
                    sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype,
                    source, recvtag, comm, status,
                )
            },
            || Call {
                peer: world_rank(comm, dest),
                source: world_rank(comm, source).or_else(|| status_source(comm, status)),
                sent: bytes(sendcount, sendtype),
                received: status_bytes(status, recvtype, recvcount),
                ..Call::new(CallKind::Receive, true)
            },
        )
    }
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Sendrecv_replace(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    dest: c_int,
    sendtag: c_int,
    source: c_int,
    recvtag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        let mut mine: MPI_Status = std::mem::zeroed();
        let status = own_status(status, &mut mine);
        record(
            || {
                ffi::PMPI_Sendrecv_replace(
                    buf, count, datatype, dest, sendtag, source, recvtag, comm, status,
                )
            },
            || Call {
                peer: world_rank(comm, dest),
                source: world_rank(comm, source).or_else(|| status_source(comm, status)),
                sent: bytes(count, datatype),
                received: status_bytes(status, datatype, count),
                ..Call::new(CallKind::Receive, true)
            },
        )
    }
}

/// Interposed (see the module documentation). A probe waits for a message but takes none: it
/// names no peer (the receive that follows it does).
#[no_mangle]
pub unsafe extern "C" fn MPI_Probe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Probe(source, tag, comm, status),
            || Call::new(CallKind::Receive, true),
        )
    }
}

/// Interposed (see [`MPI_Probe`]). The message it returns is kept with its communicator, for
/// the matched receive that takes it ([`MPI_Mrecv`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Mprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        let rc = record(
            || ffi::PMPI_Mprobe(source, tag, comm, message, status),
            || Call::new(CallKind::Receive, true),
        );
        if rc == 0 {
            note_probed(comm, message);
        }
        rc
    }
}

/// Interposed (see the module documentation). A matched receive names its sender through its
/// status, a rank of the communicator the message was probed on ([`MPI_Mprobe`]); a message
/// this thread did not probe is taken to be the world's.
#[no_mangle]
pub unsafe extern "C" fn MPI_Mrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        let mut mine: MPI_Status = std::mem::zeroed();
        let status = own_status(status, &mut mine);
        let comm = take_probed(message).unwrap_or_else(world);
        record(
            || ffi::PMPI_Mrecv(buf, count, datatype, message, status),
            || Call {
                peer: status_source(comm, status),
                received: status_bytes(status, datatype, count),
                ..Call::new(CallKind::Receive, true)
            },
        )
    }
}

/// Interposed (see the module documentation): request completion, recorded as the wrapped
/// `wait` is (blocked time, no message of its own).
#[no_mangle]
pub unsafe extern "C" fn MPI_Wait(request: *mut MPI_Request, status: *mut MPI_Status) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Wait(request, status),
            || Call::new(CallKind::Receive, true),
        )
    }
}

/// Interposed (see [`MPI_Wait`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitall(
    count: c_int,
    requests: *mut MPI_Request,
    statuses: *mut MPI_Status,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Waitall(count, requests, statuses),
            || Call::new(CallKind::Receive, true),
        )
    }
}

/// Interposed (see [`MPI_Wait`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Waitany(count, requests, index, status),
            || Call::new(CallKind::Receive, true),
        )
    }
}

/// Interposed (see [`MPI_Wait`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Waitsome(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Waitsome(incount, requests, outcount, indices, statuses),
            || Call::new(CallKind::Receive, true),
        )
    }
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Barrier(comm: MPI_Comm) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Barrier(comm),
            || collective(CallKind::Barrier, true, comm, 0),
        )
    }
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibarrier(comm: MPI_Comm, request: *mut MPI_Request) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Ibarrier(comm, request),
            || collective(CallKind::Barrier, false, comm, 0),
        )
    }
}

/// Interposed (see the module documentation). The root's buffer is what it sends; the others'
/// is what they receive, which the wrapped call counts as sent too (its message argument).
#[no_mangle]
pub unsafe extern "C" fn MPI_Bcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Bcast(buffer, count, datatype, root, comm),
            || collective(CallKind::Broadcast, true, comm, bytes(count, datatype)),
        )
    }
}

/// Interposed (see [`MPI_Bcast`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ibcast(
    buffer: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Ibcast(buffer, count, datatype, root, comm, request),
            || collective(CallKind::Broadcast, false, comm, bytes(count, datatype)),
        )
    }
}

macro_rules! reductions {
    ($($name:ident => $pmpi:ident, $kind:ident;)*) => {$(
        /// Interposed (see the module documentation).
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void,
            recvbuf: *mut c_void,
            count: c_int,
            datatype: MPI_Datatype,
            op: MPI_Op,
            comm: MPI_Comm,
        ) -> c_int {
    unsafe {
            record(
                || ffi::$pmpi(sendbuf, recvbuf, count, datatype, op, comm),
                || collective(CallKind::$kind, true, comm, bytes(count, datatype)),
            )
    }
}
    )*};
}

reductions! {
    MPI_Allreduce => PMPI_Allreduce, AllReduce;
    MPI_Scan => PMPI_Scan, Scan;
    MPI_Exscan => PMPI_Exscan, Scan;
    MPI_Reduce_scatter_block => PMPI_Reduce_scatter_block, Reduce;
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iallreduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request),
            || collective(CallKind::AllReduce, false, comm, bytes(count, datatype)),
        )
    }
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Reduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm),
            || collective(CallKind::Reduce, true, comm, bytes(count, datatype)),
        )
    }
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ireduce(
    sendbuf: *const c_void,
    recvbuf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    op: MPI_Op,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Ireduce(sendbuf, recvbuf, count, datatype, op, root, comm, request),
            || collective(CallKind::Reduce, false, comm, bytes(count, datatype)),
        )
    }
}

macro_rules! rooted {
    ($($name:ident => $pmpi:ident, $kind:ident;)*) => {$(
        /// Interposed (see the module documentation): this rank's contribution is what it
        /// sends.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: MPI_Datatype,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: MPI_Datatype,
            root: c_int,
            comm: MPI_Comm,
        ) -> c_int {
    unsafe {
            record(
                || ffi::$pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm),
                || collective(CallKind::$kind, true, comm, bytes(sendcount, sendtype)),
            )
    }
}
    )*};
}

rooted! {
    MPI_Gather => PMPI_Gather, Gather;
    MPI_Scatter => PMPI_Scatter, Scatter;
}

macro_rules! all_to_all {
    ($($name:ident => $pmpi:ident, $kind:ident;)*) => {$(
        /// Interposed (see the module documentation): this rank's contribution is what it
        /// sends.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: MPI_Datatype,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: MPI_Datatype,
            comm: MPI_Comm,
        ) -> c_int {
    unsafe {
            record(
                || ffi::$pmpi(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm),
                || collective(CallKind::$kind, true, comm, bytes(sendcount, sendtype)),
            )
    }
}
    )*};
}

all_to_all! {
    MPI_Allgather => PMPI_Allgather, AllGather;
    MPI_Alltoall => PMPI_Alltoall, AllToAll;
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Gatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    unsafe {
        record(
            || {
                ffi::PMPI_Gatherv(
                    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm,
                )
            },
            || collective(CallKind::Gather, true, comm, bytes(sendcount, sendtype)),
        )
    }
}

/// Interposed (see the module documentation): the root sends every count; the others send
/// nothing and receive their part, which counts as their message as for [`MPI_Scatter`].
#[no_mangle]
pub unsafe extern "C" fn MPI_Scatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
) -> c_int {
    unsafe {
        record(
            || {
                ffi::PMPI_Scatterv(
                    sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm,
                )
            },
            || {
                let sent = scattered(comm, root, sendcounts, sendtype, recvcount, recvtype);
                collective(CallKind::Scatter, true, comm, sent)
            },
        )
    }
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Allgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    unsafe {
        record(
            || {
                ffi::PMPI_Allgatherv(
                    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                )
            },
            || collective(CallKind::AllGather, true, comm, bytes(sendcount, sendtype)),
        )
    }
}

/// Interposed (see the module documentation).
#[no_mangle]
pub unsafe extern "C" fn MPI_Alltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
) -> c_int {
    unsafe {
        record(
            || {
                ffi::PMPI_Alltoallv(
                    sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                    comm,
                )
            },
            || {
                let sent = bytes(total(sendcounts, size_of(comm)), sendtype);
                collective(CallKind::AllToAll, true, comm, sent)
            },
        )
    }
}

/// Interposed (see [`MPI_Wait`]): a test completes requests as a wait does, when they are
/// done; it is recorded as the wrapped `test` is.
#[no_mangle]
pub unsafe extern "C" fn MPI_Test(
    request: *mut MPI_Request,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Test(request, flag, status),
            || Call::new(CallKind::Receive, true),
        )
    }
}

/// Interposed (see [`MPI_Test`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Testall(
    count: c_int,
    requests: *mut MPI_Request,
    flag: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Testall(count, requests, flag, statuses),
            || Call::new(CallKind::Receive, true),
        )
    }
}

/// Interposed (see [`MPI_Test`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Testany(
    count: c_int,
    requests: *mut MPI_Request,
    index: *mut c_int,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Testany(count, requests, index, flag, status),
            || Call::new(CallKind::Receive, true),
        )
    }
}

/// Interposed (see [`MPI_Test`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Testsome(
    incount: c_int,
    requests: *mut MPI_Request,
    outcount: *mut c_int,
    indices: *mut c_int,
    statuses: *mut MPI_Status,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Testsome(incount, requests, outcount, indices, statuses),
            || Call::new(CallKind::Receive, true),
        )
    }
}

/// Interposed (see [`MPI_Probe`]): a poll for a message, recorded as the wrapped
/// `immediate_probe` is (not blocking, no peer).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iprobe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        record(
            || ffi::PMPI_Iprobe(source, tag, comm, flag, status),
            || Call::new(CallKind::Receive, false),
        )
    }
}

/// Interposed (see [`MPI_Iprobe`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Improbe(
    source: c_int,
    tag: c_int,
    comm: MPI_Comm,
    flag: *mut c_int,
    message: *mut MPI_Message,
    status: *mut MPI_Status,
) -> c_int {
    unsafe {
        let rc = record(
            || ffi::PMPI_Improbe(source, tag, comm, flag, message, status),
            || Call::new(CallKind::Receive, false),
        );
        if rc == 0 && !flag.is_null() && *flag != 0 {
            note_probed(comm, message);
        }
        rc
    }
}

/// Interposed (see the module documentation): an immediate matched receive, its buffer's
/// size; its sender is known only when it completes. The probed message is forgotten.
#[no_mangle]
pub unsafe extern "C" fn MPI_Imrecv(
    buf: *mut c_void,
    count: c_int,
    datatype: MPI_Datatype,
    message: *mut MPI_Message,
    request: *mut MPI_Request,
) -> c_int {
    unsafe {
        take_probed(message);
        record(
            || ffi::PMPI_Imrecv(buf, count, datatype, message, request),
            || Call {
                received: bytes(count, datatype),
                ..Call::new(CallKind::Receive, false)
            },
        )
    }
}

macro_rules! immediate_reductions {
    ($($name:ident => $pmpi:ident, $kind:ident;)*) => {$(
        /// Interposed (see the module documentation).
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void,
            recvbuf: *mut c_void,
            count: c_int,
            datatype: MPI_Datatype,
            op: MPI_Op,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            unsafe {
                record(
                    || ffi::$pmpi(sendbuf, recvbuf, count, datatype, op, comm, request),
                    || collective(CallKind::$kind, false, comm, bytes(count, datatype)),
                )
            }
        }
    )*};
}

immediate_reductions! {
    MPI_Iscan => PMPI_Iscan, Scan;
    MPI_Iexscan => PMPI_Iexscan, Scan;
    MPI_Ireduce_scatter_block => PMPI_Ireduce_scatter_block, Reduce;
}

macro_rules! immediate_rooted {
    ($($name:ident => $pmpi:ident, $kind:ident;)*) => {$(
        /// Interposed (see the module documentation): this rank's contribution is what it
        /// sends.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: MPI_Datatype,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: MPI_Datatype,
            root: c_int,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            unsafe {
                record(
                    || {
                        ffi::$pmpi(
                            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                            comm, request,
                        )
                    },
                    || collective(CallKind::$kind, false, comm, bytes(sendcount, sendtype)),
                )
            }
        }
    )*};
}

immediate_rooted! {
    MPI_Igather => PMPI_Igather, Gather;
    MPI_Iscatter => PMPI_Iscatter, Scatter;
}

macro_rules! immediate_all_to_all {
    ($($name:ident => $pmpi:ident, $kind:ident;)*) => {$(
        /// Interposed (see the module documentation): this rank's contribution is what it
        /// sends.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            sendbuf: *const c_void,
            sendcount: c_int,
            sendtype: MPI_Datatype,
            recvbuf: *mut c_void,
            recvcount: c_int,
            recvtype: MPI_Datatype,
            comm: MPI_Comm,
            request: *mut MPI_Request,
        ) -> c_int {
            unsafe {
                record(
                    || {
                        ffi::$pmpi(
                            sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                            request,
                        )
                    },
                    || collective(CallKind::$kind, false, comm, bytes(sendcount, sendtype)),
                )
            }
        }
    )*};
}

immediate_all_to_all! {
    MPI_Iallgather => PMPI_Iallgather, AllGather;
    MPI_Ialltoall => PMPI_Ialltoall, AllToAll;
}

/// Interposed (see [`MPI_Gatherv`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Igatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    unsafe {
        record(
            || {
                ffi::PMPI_Igatherv(
                    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root,
                    comm, request,
                )
            },
            || collective(CallKind::Gather, false, comm, bytes(sendcount, sendtype)),
        )
    }
}

/// Interposed (see [`MPI_Scatterv`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iscatterv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    displs: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcount: c_int,
    recvtype: MPI_Datatype,
    root: c_int,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    unsafe {
        record(
            || {
                ffi::PMPI_Iscatterv(
                    sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root,
                    comm, request,
                )
            },
            || {
                let sent = scattered(comm, root, sendcounts, sendtype, recvcount, recvtype);
                collective(CallKind::Scatter, false, comm, sent)
            },
        )
    }
}

/// Interposed (see [`MPI_Allgatherv`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Iallgatherv(
    sendbuf: *const c_void,
    sendcount: c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    displs: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    unsafe {
        record(
            || {
                ffi::PMPI_Iallgatherv(
                    sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm,
                    request,
                )
            },
            || collective(CallKind::AllGather, false, comm, bytes(sendcount, sendtype)),
        )
    }
}

/// Interposed (see [`MPI_Alltoallv`]).
#[no_mangle]
pub unsafe extern "C" fn MPI_Ialltoallv(
    sendbuf: *const c_void,
    sendcounts: *const c_int,
    sdispls: *const c_int,
    sendtype: MPI_Datatype,
    recvbuf: *mut c_void,
    recvcounts: *const c_int,
    rdispls: *const c_int,
    recvtype: MPI_Datatype,
    comm: MPI_Comm,
    request: *mut MPI_Request,
) -> c_int {
    unsafe {
        record(
            || {
                ffi::PMPI_Ialltoallv(
                    sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                    comm, request,
                )
            },
            || {
                let sent = bytes(total(sendcounts, size_of(comm)), sendtype);
                collective(CallKind::AllToAll, false, comm, sent)
            },
        )
    }
}

/// Keeps the interposed entry points in every program that links the runtime: referenced
/// from `attach`, so the linker cannot leave out the object that defines them.
pub(crate) fn link() {
    let entries: [*const (); 6] = [
        MPI_Send as *const (),
        MPI_Recv as *const (),
        MPI_Allreduce as *const (),
        MPI_Wait as *const (),
        MPI_Barrier as *const (),
        MPI_Alltoallv as *const (),
    ];
    std::hint::black_box(entries);
}
