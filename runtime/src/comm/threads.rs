//! The `threads` backend: ranks are OS threads of one process, the embedded default.
//!
//! Each rank owns a mailbox (a mutex-protected queue per source rank and a condition variable).
//! A send copies the message into the destination's mailbox and wakes it; a receive takes the
//! first message with the wanted tag from the source's queue, waiting on its condition variable
//! while there is none. Per (source, tag) messages are received in the order they were sent.
//!
//! Network emulation: a message of `b` bytes takes `latency + b / bandwidth`. On a wall clock the
//! receiver waits until the message's delivery instant; on a virtual clock the message carries
//! the sender's clock plus that transfer time and the receiver's clock jumps forward to it if it
//! is behind. Either wait is the receive's blocked time. There is no link contention.
//!
//! Failure: [`ThreadWorld::abort`] poisons the communicator. Every blocked or later call on any
//! rank returns [`CommError::Aborted`] naming the failed rank, so no rank waits forever on a
//! peer that died. A receive from a rank that has already finished its work, with no matching
//! message queued, fails with [`CommError::PeerFinished`] instead of deadlocking.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use super::{check_rank, Comm, CommError, Tag, Traffic};
use crate::clock::{self, ClockMode};
use crate::format::NetworkSpec;

/// The first failure of a run: which rank, and its error or panic message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub rank: usize,
    pub message: String,
}

/// The shared state of one run's ranks.
pub struct ThreadWorld {
    mailboxes: Vec<Mailbox>,
    network: NetworkSpec,
    mode: ClockMode,
    aborted: AtomicBool,
    failure: Mutex<Option<Failure>>,
    finished: Vec<AtomicBool>,
}

struct Mailbox {
    queues: Mutex<Vec<VecDeque<Message>>>,
    ready: Condvar,
}

struct Message {
    tag: Tag,
    data: Vec<u8>,
    /// Virtual clocks: the receiver's clock cannot be earlier than this after receiving.
    arrival_s: f64,
    /// Wall clock: the message may not be delivered before this instant.
    deliver_at: Option<Instant>,
}

/// One rank's handle on a [`ThreadWorld`].
#[derive(Clone)]
pub struct ThreadComm {
    world: Arc<ThreadWorld>,
    rank: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ThreadWorld {
    /// A world of `size` ranks with the given emulated network and clock mode.
    pub fn new(size: usize, network: NetworkSpec, mode: ClockMode) -> Arc<ThreadWorld> {
        Arc::new(ThreadWorld {
            mailboxes: (0..size)
                .map(|_| Mailbox {
                    queues: Mutex::new((0..size).map(|_| VecDeque::new()).collect()),
                    ready: Condvar::new(),
                })
                .collect(),
            network,
            mode,
            aborted: AtomicBool::new(false),
            failure: Mutex::new(None),
            finished: (0..size).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    /// The communicator of `rank`.
    pub fn comm(self: &Arc<Self>, rank: usize) -> ThreadComm {
        assert!(rank < self.mailboxes.len(), "rank {rank} out of range");
        ThreadComm {
            world: Arc::clone(self),
            rank,
        }
    }

    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.mailboxes.len()
    }

    /// Record that `rank` failed and wake every blocked rank. Only the first failure is kept
    /// (later ones are usually consequences); returns whether this one was the first.
    pub fn abort(&self, rank: usize, message: String) -> bool {
        let first = {
            let mut f = lock(&self.failure);
            if f.is_none() {
                *f = Some(Failure { rank, message });
                true
            } else {
                false
            }
        };
        self.aborted.store(true, Ordering::SeqCst);
        self.wake_all();
        first
    }

    /// The first failure, if any rank failed.
    pub fn failure(&self) -> Option<Failure> {
        lock(&self.failure).clone()
    }

    /// Record that `rank` returned from its work, waking ranks that wait on it.
    pub fn finish(&self, rank: usize) {
        self.finished[rank].store(true, Ordering::SeqCst);
        self.wake_all();
    }

    fn wake_all(&self) {
        for mailbox in &self.mailboxes {
            let _guard = lock(&mailbox.queues);
            mailbox.ready.notify_all();
        }
    }

    fn aborted_error(&self) -> CommError {
        let rank = lock(&self.failure).as_ref().map_or(usize::MAX, |f| f.rank);
        CommError::Aborted { rank }
    }

    /// Emulated seconds to move `bytes` over the network.
    fn transfer_s(&self, bytes: usize) -> f64 {
        let bw = self.network.bandwidth_bps;
        let per_byte = if bw.is_finite() && bw > 0.0 && bw < f64::MAX {
            1.0 / bw
        } else {
            0.0
        };
        self.network.latency_s.max(0.0) + bytes as f64 * per_byte
    }
}

impl ThreadComm {
    fn take(
        &self,
        source: usize,
        tag: Tag,
        into: &mut [u8],
        block: bool,
    ) -> Result<Option<Traffic>, CommError> {
        check_rank(source, self.world.size())?;
        let world = &*self.world;
        let mailbox = &world.mailboxes[self.rank];
        let mut queues = lock(&mailbox.queues);
        let mut waiting_since: Option<Instant> = None;
        loop {
            if world.aborted.load(Ordering::SeqCst) {
                return Err(world.aborted_error());
            }
            if let Some(pos) = queues[source].iter().position(|m| m.tag == tag) {
                let now = Instant::now();
                let undelivered = queues[source][pos].deliver_at.is_some_and(|d| d > now);
                if !block && undelivered {
                    return Ok(None);
                }
                let message = queues[source].remove(pos).expect("position is in range");
                drop(queues);
                if message.data.len() != into.len() {
                    return Err(CommError::SizeMismatch {
                        from: source,
                        tag,
                        expected: into.len(),
                        got: message.data.len(),
                    });
                }
                let blocked_s = match world.mode {
                    ClockMode::Wall => {
                        let delivery = message.deliver_at.map_or(Duration::ZERO, |d| {
                            d.saturating_duration_since(Instant::now())
                        });
                        if !delivery.is_zero() {
                            clock::wait_wall(delivery);
                        }
                        match waiting_since {
                            Some(w) => w.elapsed().as_secs_f64(),
                            None => delivery.as_secs_f64(),
                        }
                    }
                    ClockMode::Virtual | ClockMode::Charged => clock::advance_to(message.arrival_s),
                };
                into.copy_from_slice(&message.data);
                return Ok(Some(Traffic::received(into.len(), blocked_s)));
            }
            if !block {
                return Ok(None);
            }
            if world.finished[source].load(Ordering::SeqCst) {
                return Err(CommError::PeerFinished { peer: source, tag });
            }
            waiting_since.get_or_insert_with(Instant::now);
            queues = mailbox
                .ready
                .wait(queues)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl Comm for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.world.size()
    }

    fn send_bytes(&self, dest: usize, tag: Tag, data: &[u8]) -> Result<Traffic, CommError> {
        check_rank(dest, self.world.size())?;
        let world = &*self.world;
        if world.aborted.load(Ordering::SeqCst) {
            return Err(world.aborted_error());
        }
        let transfer = world.transfer_s(data.len());
        let (arrival_s, deliver_at) = match world.mode {
            ClockMode::Wall if transfer > 0.0 => (
                0.0,
                Some(Instant::now() + Duration::from_secs_f64(transfer)),
            ),
            ClockMode::Wall => (0.0, None),
            ClockMode::Virtual | ClockMode::Charged => (clock::now() + transfer, None),
        };
        let message = Message {
            tag,
            data: data.to_vec(),
            arrival_s,
            deliver_at,
        };
        let mailbox = &world.mailboxes[dest];
        lock(&mailbox.queues)[self.rank].push_back(message);
        mailbox.ready.notify_all();
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
}
