//! Communicators (DESIGN §5): the object-safe [`Comm`] trait that backends implement, and the
//! typed, recorded [`CommExt`] API that programs call, rsmpi style.
//!
//! [`Comm`] works on bytes. A backend implements the point-to-point transport (buffered send,
//! blocking and polling receive); every collective has a default linear implementation over
//! that transport ([`collectives`]), which a backend may override with native collectives.
//! Collectives use negative tags internally, so user tags are `0..=i32::MAX`.
//!
//! [`CommExt`] is implemented for every `Comm`, trait objects included. It converts typed slices
//! to bytes, validates arguments, and records every call in the hook layer (peers, bytes,
//! begin/end, blocked time) — the role of the seed's MPI-Jack pre and post hooks. Calling the
//! byte-level [`Comm`] methods directly bypasses the hooks; programs should not.
//!
//! Semantics: sends are buffered (eager) and never block; receives are synchronous. Messages
//! between one pair of ranks with one tag arrive in the order they were sent.

pub mod collectives;
mod element;
mod ext;
#[cfg(feature = "mpi")]
pub mod mpi;
pub mod threads;

pub use element::{as_bytes, as_bytes_mut, reduce_bytes, ElemKind, Element, ReduceOp};
pub use ext::{wait_all, CommExt, Request};

/// A message tag. User tags are non-negative; negative tags are reserved for collectives.
pub type Tag = i32;

/// What one communication call moved, and how long it waited for messages that had not yet
/// arrived (blocked time, `T_w`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Traffic {
    /// Messages sent.
    pub messages_sent: u32,
    /// Messages received.
    pub messages_received: u32,
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Payload bytes received.
    pub bytes_received: u64,
    /// Seconds spent waiting for messages that had not yet arrived (`T_w`), on the rank's clock.
    pub blocked_s: f64,
}

impl Traffic {
    /// One message of `bytes` sent.
    pub fn sent(bytes: usize) -> Traffic {
        Traffic {
            messages_sent: 1,
            bytes_sent: bytes as u64,
            ..Traffic::default()
        }
    }

    /// One message of `bytes` received after blocking `blocked_s`.
    pub fn received(bytes: usize, blocked_s: f64) -> Traffic {
        Traffic {
            messages_received: 1,
            bytes_received: bytes as u64,
            blocked_s,
            ..Traffic::default()
        }
    }
}

impl std::ops::AddAssign for Traffic {
    fn add_assign(&mut self, o: Traffic) {
        self.messages_sent += o.messages_sent;
        self.messages_received += o.messages_received;
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.blocked_s += o.blocked_s;
    }
}

/// A failed communication call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CommError {
    /// A peer or root that is not a rank of the communicator.
    #[error("rank {rank} is out of range for a communicator of {size} ranks")]
    InvalidRank {
        /// The rank given.
        rank: usize,
        /// The communicator's number of ranks.
        size: usize,
    },
    /// A negative user tag; negative tags are the collectives'.
    #[error("tag {0} is reserved (user tags must be non-negative)")]
    InvalidTag(Tag),
    /// A message whose length is not the receive buffer's.
    #[error("message from rank {from} (tag {tag}) has {got} bytes but the receive buffer holds {expected}")]
    SizeMismatch {
        /// The sender.
        from: usize,
        /// The message's tag.
        tag: Tag,
        /// Bytes the receive buffer holds.
        expected: usize,
        /// Bytes the message has.
        got: usize,
    },
    /// Arguments a call cannot use (counts that do not match the buffers, and the like).
    #[error("{operation}: {problem}")]
    InvalidArgument {
        /// The call (`all_gather`, …).
        operation: &'static str,
        /// What is wrong with its arguments.
        problem: String,
    },
    /// Another rank failed, and every pending and later call of this run fails with this.
    #[error("the run was aborted because rank {rank} failed")]
    Aborted {
        /// The rank that failed first.
        rank: usize,
    },
    /// The peer's closure returned without sending the message this rank is waiting for.
    #[error("rank {peer} finished without sending the message this rank waits for (tag {tag})")]
    PeerFinished {
        /// The rank that finished.
        peer: usize,
        /// The tag of the awaited message.
        tag: Tag,
    },
    /// An MPI call waited longer than `--comm-timeout`.
    #[error(
        "{operation} waited longer than --comm-timeout ({limit:?}){}",
        match peer {
            Some(p) => format!(" for rank {p}: it is stopped, hung or far behind"),
            None => ": a rank it needs is stopped, hung or far behind".to_string(),
        }
    )]
    TimedOut {
        /// The call that waited.
        operation: &'static str,
        /// The rank it waited for, when it waited for one.
        peer: Option<usize>,
        /// The timeout.
        limit: std::time::Duration,
    },
    /// An error reported by the backend itself (MPI).
    #[error("{0}")]
    Backend(String),
}

/// The object-safe core of a communicator: what a backend implements.
///
/// All buffers are bytes; element types matter only for reductions, which receive the
/// [`ElemKind`]. Every method returns the [`Traffic`] it caused.
pub trait Comm: Send + Sync {
    /// This rank, `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;

    /// Buffered send of `data` to `dest`: returns as soon as `data` may be reused.
    fn send_bytes(&self, dest: usize, tag: Tag, data: &[u8]) -> Result<Traffic, CommError>;
    /// Blocking receive of the next message from `source` with `tag`; its length must equal
    /// `into.len()`.
    fn receive_bytes(&self, source: usize, tag: Tag, into: &mut [u8])
        -> Result<Traffic, CommError>;
    /// Receive if the message has arrived, else `Ok(None)` without waiting.
    fn try_receive_bytes(
        &self,
        source: usize,
        tag: Tag,
        into: &mut [u8],
    ) -> Result<Option<Traffic>, CommError>;

    /// The network this communicator emulates, when it emulates one (the threads backend
    /// applies exactly this latency and bandwidth to every message); `None` for a real one.
    fn emulated_network(&self) -> Option<crate::format::NetworkSpec> {
        None
    }

    /// Wait until every rank has entered the barrier.
    fn barrier_bytes(&self) -> Result<Traffic, CommError> {
        collectives::barrier(self)
    }
    /// Root's `buf` is copied into every rank's `buf` (equal lengths).
    fn broadcast_bytes(&self, root: usize, buf: &mut [u8]) -> Result<Traffic, CommError> {
        collectives::broadcast(self, root, buf)
    }
    /// Element-wise reduction of every rank's `send` into root's `recv` (combined in rank
    /// order); `recv` is ignored on other ranks.
    fn reduce_bytes(
        &self,
        root: usize,
        kind: ElemKind,
        op: ReduceOp,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<Traffic, CommError> {
        collectives::reduce(self, root, kind, op, send, recv)
    }
    /// Reduction whose result every rank receives.
    fn all_reduce_bytes(
        &self,
        kind: ElemKind,
        op: ReduceOp,
        send: &[u8],
        recv: &mut [u8],
    ) -> Result<Traffic, CommError> {
        collectives::all_reduce(self, kind, op, send, recv)
    }
    /// Root receives rank `r`'s `send` (`counts[r]` bytes) at offset `sum(counts[..r])` of
    /// `recv`; `counts` and `recv` are ignored on other ranks.
    fn gather_bytes(
        &self,
        root: usize,
        send: &[u8],
        recv: &mut [u8],
        counts: &[usize],
    ) -> Result<Traffic, CommError> {
        collectives::gather(self, root, send, recv, counts)
    }
    /// Rank `r` receives `counts[r]` bytes of root's `send` from offset `sum(counts[..r])`.
    fn scatter_bytes(
        &self,
        root: usize,
        send: &[u8],
        counts: &[usize],
        recv: &mut [u8],
    ) -> Result<Traffic, CommError> {
        collectives::scatter(self, root, send, counts, recv)
    }
    /// Every rank receives every rank's `send`, concatenated in rank order (`counts` bytes each).
    fn all_gather_bytes(
        &self,
        send: &[u8],
        recv: &mut [u8],
        counts: &[usize],
    ) -> Result<Traffic, CommError> {
        collectives::all_gather(self, send, recv, counts)
    }
    /// Rank `r` sends `send_counts[q]` bytes to each rank `q` and receives `recv_counts[q]` from
    /// each, both laid out in rank order.
    fn all_to_all_bytes(
        &self,
        send: &[u8],
        send_counts: &[usize],
        recv: &mut [u8],
        recv_counts: &[usize],
    ) -> Result<Traffic, CommError> {
        collectives::all_to_all(self, send, send_counts, recv, recv_counts)
    }
}

/// Check that `rank` names a rank of a communicator of `size`.
pub fn check_rank(rank: usize, size: usize) -> Result<(), CommError> {
    if rank < size {
        Ok(())
    } else {
        Err(CommError::InvalidRank { rank, size })
    }
}
