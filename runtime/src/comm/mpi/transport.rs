//! [`MpiComm`]: the point-to-point transport over MPI, and the polling machinery the collectives
//! share.
//!
//! - **Buffered sends.** The `Comm` contract says sends never block. `MPI_Send` may (rendezvous
//!   for large messages), so a send copies the data into a buffer the communicator owns, starts
//!   `MPI_Isend` on it and returns; completed sends are reaped on later calls and at the end.
//! - **Receives poll.** A receive polls `MPI_Improbe` for the wanted (source, tag); once matched,
//!   `MPI_Mrecv` takes it. The time spent polling before the match is the receive's blocked time.
//!   While it waits it also watches for *finish notices*: when a rank's work returns it sends an
//!   empty message with the reserved control tag to every other rank. MPI delivers a sender's
//!   messages in order, so once the notice from `source` has arrived and the wanted message still
//!   has not, it never will: the receive fails with [`CommError::PeerFinished`] instead of
//!   hanging, as on the threads backend.
//! - **Locking.** Every MPI call of a communicator is made under its state lock, never while
//!   waiting (waits are polling loops), so the communicator is `Send + Sync` under
//!   `MPI_THREAD_SERIALIZED`.

use std::os::raw::{c_int, c_void};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use mpi::ffi;

use super::collective::{self, count, Nonblocking};
use crate::clock;
use crate::comm::{check_rank, Comm, CommError, Tag, Traffic};

/// How long a rank keeps waiting on an operation after a peer it needs has finished its work,
/// before the run is declared broken (data in flight may still arrive during this time).
const FINISHED_PEER_GRACE: Duration = Duration::from_secs(20);

/// One rank's MPI communicator (a duplicate of `MPI_COMM_WORLD`); clones share it.
#[derive(Clone)]
pub struct MpiComm {
    inner: Arc<Inner>,
    /// The longest one operation may wait (`--comm-timeout`); `None` waits forever.
    timeout: Option<Duration>,
}

/// The watchdog of one waiting operation.
struct Deadline {
    start: Instant,
    limit: Option<Duration>,
}

impl Deadline {
    fn new(limit: Option<Duration>) -> Deadline {
        Deadline {
            start: Instant::now(),
            limit,
        }
    }

    /// `Some(the limit)` once the operation has waited longer than it.
    fn passed(&self) -> Option<Duration> {
        self.limit.filter(|&l| self.start.elapsed() > l)
    }
}

struct Inner {
    raw: ffi::MPI_Comm,
    rank: usize,
    size: usize,
    /// The reserved tag of finish notices: the implementation's largest tag. User tags are below.
    control_tag: c_int,
    state: Mutex<State>,
}

// SAFETY: `raw` is an MPI handle; MPI is initialised with at least MPI_THREAD_SERIALIZED and
// every call that uses the handle is made while holding `state`'s lock, so calls never overlap.
unsafe impl Send for Inner {}
// SAFETY: as above: shared access only ever reaches MPI through the lock.
unsafe impl Sync for Inner {}

pub(super) struct State {
    sends: Vec<PendingSend>,
    /// Ranks whose finish notice has arrived.
    finished: Vec<bool>,
}

struct PendingSend {
    request: ffi::MPI_Request,
    dest: usize,
    tag: Tag,
    /// The message's bytes, owned until the send completes.
    data: Box<[u8]>,
}

/// Fail unless an MPI call returned `MPI_SUCCESS`.
pub(super) fn check(rc: c_int, call: &str) -> Result<(), CommError> {
    if rc == ffi::MPI_SUCCESS as c_int {
        Ok(())
    } else {
        Err(CommError::Backend(format!(
            "{call} failed with MPI error code {rc}"
        )))
    }
}

/// Spin, then yield, then sleep briefly: a polling loop's pause after `round` unsuccessful polls
/// (ranks are often oversubscribed, so waiting must give the CPU away).
pub(super) fn pause(round: u32) {
    if round < 64 {
        std::hint::spin_loop();
    } else if round < 2048 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(Duration::from_micros(50));
    }
}

impl MpiComm {
    /// A communicator over a duplicate of `MPI_COMM_WORLD` (MPI must be initialised).
    pub fn duplicate_world() -> Result<MpiComm, CommError> {
        // SAFETY: reading a constant handle initialised by rsmpi's C shim.
        let mut raw = unsafe { ffi::RSMPI_COMM_NULL };
        // SAFETY: MPI is initialised (the caller obtained the world through `super::world`);
        // `raw` is a valid out-pointer.
        check(
            unsafe { ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, &mut raw) },
            "MPI_Comm_dup",
        )?;
        let (mut rank, mut size) = (0, 0);
        let mut tag_ub: *mut c_int = std::ptr::null_mut();
        let mut flag = 0;
        // SAFETY: `raw` is the communicator just created; the out-pointers are valid. For
        // MPI_TAG_UB, MPI stores a pointer to an int in `attribute_val`.
        unsafe {
            check(ffi::MPI_Comm_rank(raw, &mut rank), "MPI_Comm_rank")?;
            check(ffi::MPI_Comm_size(raw, &mut size), "MPI_Comm_size")?;
            check(
                ffi::MPI_Comm_get_attr(
                    raw,
                    ffi::MPI_TAG_UB as c_int,
                    (&mut tag_ub as *mut *mut c_int).cast::<c_void>(),
                    &mut flag,
                ),
                "MPI_Comm_get_attr(MPI_TAG_UB)",
            )?;
        }
        // The standard guarantees tags up to at least 32767.
        let control_tag = if flag != 0 && !tag_ub.is_null() {
            // SAFETY: MPI returned a valid pointer to the attribute's value.
            unsafe { *tag_ub }.max(32767)
        } else {
            32767
        };
        let size = size as usize;
        Ok(MpiComm {
            inner: Arc::new(Inner {
                raw,
                rank: rank as usize,
                size,
                control_tag,
                state: Mutex::new(State {
                    sends: Vec::new(),
                    finished: vec![false; size],
                }),
            }),
            timeout: None,
        })
    }

    /// This communicator with a watchdog: an operation that waits longer than `limit` ends the
    /// run naming the rank and the operation (`--comm-timeout`).
    pub fn with_timeout(mut self, limit: Option<Duration>) -> MpiComm {
        self.timeout = limit;
        self
    }

    /// Lock the communicator: every MPI call on it happens under this lock.
    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn check_tag(&self, tag: Tag) -> Result<(), CommError> {
        if tag < 0 {
            return Err(CommError::InvalidTag(tag));
        }
        if tag >= self.inner.control_tag {
            return Err(CommError::Backend(format!(
                "tag {tag} is beyond this MPI implementation's tags (below {})",
                self.inner.control_tag
            )));
        }
        Ok(())
    }

    /// Free the buffers of completed sends.
    fn reap(&self, state: &mut State) -> Result<(), CommError> {
        let mut result = Ok(());
        state.sends.retain_mut(|s| {
            let mut done = 0;
            // SAFETY: `s.request` is an active request of this communicator (completed requests
            // are removed right here), tested under the lock.
            let rc = unsafe { ffi::MPI_Test(&mut s.request, &mut done, ffi::RSMPI_STATUS_IGNORE) };
            if let Err(e) = check(rc, "MPI_Test") {
                result = Err(e);
            }
            done == 0
        });
        result
    }

    /// Take every finish notice that has arrived.
    fn poll_notices(&self, state: &mut State) -> Result<(), CommError> {
        loop {
            let Some((mut message, status)) =
                // SAFETY: reading a constant initialised by rsmpi's C shim.
                self.improbe(unsafe { ffi::RSMPI_ANY_SOURCE }, self.inner.control_tag)?
            else {
                return Ok(());
            };
            // SAFETY: `message` was matched by MPI_Improbe on this communicator; the notice is
            // empty, so a zero-length receive into a null buffer is valid.
            check(
                unsafe {
                    ffi::MPI_Mrecv(
                        std::ptr::null_mut(),
                        0,
                        ffi::RSMPI_UINT8_T,
                        &mut message,
                        ffi::RSMPI_STATUS_IGNORE,
                    )
                },
                "MPI_Mrecv",
            )?;
            if let Some(f) = state.finished.get_mut(status.MPI_SOURCE as usize) {
                *f = true;
            }
        }
    }

    /// `MPI_Improbe`: the matched message and its status, if one has arrived.
    fn improbe(
        &self,
        source: c_int,
        tag: c_int,
    ) -> Result<Option<(ffi::MPI_Message, ffi::MPI_Status)>, CommError> {
        let mut flag = 0;
        // SAFETY: reading a constant handle initialised by rsmpi's C shim.
        let mut message = unsafe { ffi::RSMPI_MESSAGE_NULL };
        // SAFETY: an all-zero MPI_Status is a valid value of the plain C struct.
        let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
        // SAFETY: valid communicator and out-pointers; called under the lock.
        check(
            unsafe {
                ffi::MPI_Improbe(
                    source,
                    tag,
                    self.inner.raw,
                    &mut flag,
                    &mut message,
                    &mut status,
                )
            },
            "MPI_Improbe",
        )?;
        Ok((flag != 0).then_some((message, status)))
    }

    fn take(
        &self,
        source: usize,
        tag: Tag,
        into: &mut [u8],
        block: bool,
    ) -> Result<Option<Traffic>, CommError> {
        check_rank(source, self.inner.size)?;
        self.check_tag(tag)?;
        // Polling for a message is waiting, not computation: a wall-clock CPU slowdown must not
        // multiply the CPU time it burns (the threads backend waits without using the CPU).
        let _waiting = clock::not_compute();
        let start = clock::now();
        let deadline = Deadline::new(self.timeout);
        let mut round = 0;
        loop {
            let mut state = self.lock();
            if let Some((mut message, status)) = self.improbe(source as c_int, tag)? {
                let mut got = 0;
                // SAFETY: `status` was filled by the successful probe.
                check(
                    unsafe { ffi::MPI_Get_count(&status, ffi::RSMPI_UINT8_T, &mut got) },
                    "MPI_Get_count",
                )?;
                let got = got.max(0) as usize;
                let mut scratch = Vec::new();
                let buf: &mut [u8] = if got == into.len() {
                    into
                } else {
                    // Take the message off the queue anyway, then report the mismatch.
                    scratch.resize(got, 0);
                    &mut scratch
                };
                // SAFETY: `message` was matched on this communicator and `buf` holds exactly
                // `got` bytes.
                check(
                    unsafe {
                        ffi::MPI_Mrecv(
                            buf.as_mut_ptr().cast::<c_void>(),
                            got as c_int,
                            ffi::RSMPI_UINT8_T,
                            &mut message,
                            ffi::RSMPI_STATUS_IGNORE,
                        )
                    },
                    "MPI_Mrecv",
                )?;
                if got != into.len() {
                    return Err(CommError::SizeMismatch {
                        from: source,
                        tag,
                        expected: into.len(),
                        got,
                    });
                }
                let blocked_s = if round == 0 {
                    0.0
                } else {
                    clock::now() - start
                };
                return Ok(Some(Traffic::received(got, blocked_s)));
            }
            if !block {
                return Ok(None);
            }
            if state.finished[source] {
                return Err(CommError::PeerFinished { peer: source, tag });
            }
            if let Some(limit) = deadline.passed() {
                return Err(CommError::TimedOut {
                    operation: "receive",
                    peer: Some(source),
                    limit,
                });
            }
            self.poll_notices(&mut state)?;
            self.reap(&mut state)?;
            drop(state);
            pause(round);
            round = round.saturating_add(1);
        }
    }

    /// End of this rank's work: tell every other rank, then wait until every send has completed
    /// and every other rank has finished too. A send still pending once every rank has finished
    /// was never received: that is an error naming it.
    pub fn finish(&self) -> Result<(), CommError> {
        for dest in (0..self.inner.size).filter(|&d| d != self.inner.rank) {
            self.start_send(dest, self.inner.control_tag, &[])?;
        }
        let mut round = 0;
        let mut all_finished_at: Option<Instant> = None;
        let deadline = Deadline::new(self.timeout);
        loop {
            let mut state = self.lock();
            self.reap(&mut state)?;
            self.poll_notices(&mut state)?;
            let others_done =
                (0..self.inner.size).all(|r| r == self.inner.rank || state.finished[r]);
            if others_done && state.sends.is_empty() {
                return Ok(());
            }
            if let Some(limit) = deadline.passed() {
                let peer =
                    (0..self.inner.size).find(|&r| r != self.inner.rank && !state.finished[r]);
                return Err(CommError::TimedOut {
                    operation: "the end of the run",
                    peer,
                    limit,
                });
            }
            if others_done {
                let since = *all_finished_at.get_or_insert_with(Instant::now);
                if since.elapsed() > FINISHED_PEER_GRACE {
                    let s = &state.sends[0];
                    return Err(CommError::Backend(format!(
                        "{} sent message(s) were never received (the first: to rank {}, tag {}, \
                         {} bytes)",
                        state.sends.len(),
                        s.dest,
                        s.tag,
                        s.data.len()
                    )));
                }
            }
            drop(state);
            pause(round);
            round = round.saturating_add(1);
        }
    }

    fn start_send(&self, dest: usize, tag: c_int, data: &[u8]) -> Result<(), CommError> {
        let len = count(data.len(), "send")?;
        let data: Box<[u8]> = data.into();
        let mut state = self.lock();
        self.reap(&mut state)?;
        // SAFETY: reading a constant handle initialised by rsmpi's C shim.
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        // SAFETY: `data` is heap memory owned by the pending send until MPI reports completion
        // (moving the box does not move its contents); valid communicator and out-pointer.
        check(
            unsafe {
                ffi::MPI_Isend(
                    data.as_ptr().cast::<c_void>(),
                    len,
                    ffi::RSMPI_UINT8_T,
                    dest as c_int,
                    tag,
                    self.inner.raw,
                    &mut request,
                )
            },
            "MPI_Isend",
        )?;
        state.sends.push(PendingSend {
            request,
            dest,
            tag,
            data,
        });
        Ok(())
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        let mut finalized = 0;
        // SAFETY: MPI_Finalized may be called at any time; MPI_Comm_free on our own duplicate
        // is valid while MPI is not finalised. Pending sends (only after a failed run) are left
        // to MPI's clean-up.
        unsafe {
            ffi::MPI_Finalized(&mut finalized);
            if finalized == 0 {
                ffi::MPI_Comm_free(&mut self.raw);
            }
        }
    }
}

impl Nonblocking for MpiComm {
    /// Start a non-blocking collective under the lock: `start` makes the MPI call on the raw
    /// communicator and request.
    fn start(
        &self,
        call: &str,
        start: impl FnOnce(ffi::MPI_Comm, &mut ffi::MPI_Request) -> c_int,
    ) -> Result<ffi::MPI_Request, CommError> {
        let _state = self.lock();
        // SAFETY: reading a constant handle initialised by rsmpi's C shim.
        let mut request = unsafe { ffi::RSMPI_REQUEST_NULL };
        check(start(self.inner.raw, &mut request), call)?;
        Ok(request)
    }

    /// Wait for a started collective `request`, polling; returns the seconds waited (the
    /// operation's blocked time). A collective cannot complete if a rank it needs has finished
    /// its work: after a grace period with a finished peer, the job is aborted instead of hanging.
    fn complete(
        &self,
        operation: &'static str,
        mut request: ffi::MPI_Request,
    ) -> Result<f64, CommError> {
        // Waiting, not computation (as in `take`).
        let _waiting = clock::not_compute();
        let start = clock::now();
        let deadline = Deadline::new(self.timeout);
        let mut round = 0;
        let mut finished_seen: Option<(usize, Instant)> = None;
        loop {
            let mut state = self.lock();
            let mut done = 0;
            // SAFETY: `request` is the active request the caller just started, tested under
            // the lock; MPI sets it to MPI_REQUEST_NULL once complete.
            check(
                unsafe { ffi::MPI_Test(&mut request, &mut done, ffi::RSMPI_STATUS_IGNORE) },
                "MPI_Test",
            )?;
            if done != 0 {
                return Ok(clock::now() - start);
            }
            self.poll_notices(&mut state)?;
            self.reap(&mut state)?;
            if finished_seen.is_none() {
                if let Some(peer) = state.finished.iter().position(|&f| f) {
                    finished_seen = Some((peer, Instant::now()));
                }
            }
            drop(state);
            if let Some(limit) = deadline.passed() {
                // As below: the request still refers to the caller's buffers.
                let e = CommError::TimedOut {
                    operation,
                    peer: None,
                    limit,
                };
                super::abort(self.inner.rank, &e.to_string());
            }
            if let Some((peer, since)) = finished_seen {
                if since.elapsed() > FINISHED_PEER_GRACE {
                    // The request still refers to the caller's buffers, so this rank cannot
                    // return; it ends the job instead.
                    super::abort(
                        self.inner.rank,
                        &format!(
                            "{operation} cannot complete: rank {peer} finished its work without \
                             taking part"
                        ),
                    );
                }
            }
            pause(round);
            round = round.saturating_add(1);
        }
    }
}

impl Comm for MpiComm {
    fn rank(&self) -> usize {
        self.inner.rank
    }

    fn size(&self) -> usize {
        self.inner.size
    }

    fn send_bytes(&self, dest: usize, tag: Tag, data: &[u8]) -> Result<Traffic, CommError> {
        check_rank(dest, self.inner.size)?;
        self.check_tag(tag)?;
        self.start_send(dest, tag, data)?;
        Ok(Traffic::sent(data.len()))
    }

    fn receive_bytes(
        &self,
        source: usize,
        tag: Tag,
        into: &mut [u8],
    ) -> Result<Traffic, CommError> {
        Ok(self
            .take(source, tag, into, true)?
            .expect("a blocking receive returns a message"))
    }

    fn try_receive_bytes(
        &self,
        source: usize,
        tag: Tag,
        into: &mut [u8],
    ) -> Result<Option<Traffic>, CommError> {
        self.take(source, tag, into, false)
    }

    fn barrier_bytes(&self) -> Result<Traffic, CommError> {
        collective::barrier(self)
    }

    fn broadcast_bytes(&self, root: usize, buf: &mut [u8]) -> Result<Traffic, CommError> {
        collective::broadcast(self, root, buf)
    }

    fn reduce_bytes(
        &self,
        root: usize,
        kind: crate::comm::ElemKind,
        op: crate::comm::ReduceOp,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<Traffic, CommError> {
        collective::reduce(self, root, kind, op, send, recv)
    }

    fn all_reduce_bytes(
        &self,
        kind: crate::comm::ElemKind,
        op: crate::comm::ReduceOp,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<Traffic, CommError> {
        collective::all_reduce(self, kind, op, send, recv)
    }

    fn gather_bytes(
        &self,
        root: usize,
        send: &[u8],
        recv: &mut [u8],
        counts: &[usize],
    ) -> Result<Traffic, CommError> {
        collective::gather(self, root, send, recv, counts)
    }

    fn scatter_bytes(
        &self,
        root: usize,
        send: &[u8],
        counts: &[usize],
        recv: &mut [u8],
    ) -> Result<Traffic, CommError> {
        collective::scatter(self, root, send, counts, recv)
    }

    fn all_gather_bytes(
        &self,
        send: &[u8],
        recv: &mut [u8],
        counts: &[usize],
    ) -> Result<Traffic, CommError> {
        collective::all_gather(self, send, recv, counts)
    }

    fn all_to_all_bytes(
        &self,
        send: &[u8],
        send_counts: &[usize],
        recv: &mut [u8],
        recv_counts: &[usize],
    ) -> Result<Traffic, CommError> {
        collective::all_to_all(self, send, send_counts, recv, recv_counts)
    }
}
