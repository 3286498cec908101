//! The `threads` backend: ranks are OS threads of one process, the embedded default.
//!
//! Each rank owns a mailbox (a mutex-protected queue per source rank and a condition variable).
//! A send copies the message into the destination's mailbox and wakes it; a receive takes the
//! first message with the wanted tag from the source's queue, waiting on its condition variable
//! while there is none. Per (source, tag) messages are received in the order they were sent.
//!
//! Network emulation: a message of `b` bytes takes `latency + b / bandwidth` from the moment the
//! send has copied it (so the send's own overhead comes before the transfer, as in the seed's
//! Eq. 5.11 and LogP). On a wall clock the receiver waits until the message's delivery instant;
//! on a virtual clock the message carries the sender's clock plus that transfer time and the
//! receiver's clock jumps forward to it if it is behind. Either wait is the receive's blocked
//! time. There is no link contention. Waking the receiver's thread is not charged to a virtual
//! clock.
//!
//! CPU gate (virtual clocks): a virtual clock counts each rank's thread CPU time, as if each rank
//! had a node of its own. When there are more ranks than cores, the OS would time-slice them,
//! and every preemption makes the preempted rank refill its caches on its own CPU time, a cost
//! no real node pays (8 ranks on 2 cores: the first tiles of a pipeline ran 2× as long as the
//! rest, every iteration). So at most as many ranks run at once as there are cores: a rank
//! holds a `Gate` permit while it runs and gives it up only while it waits for a message, or
//! when a polling receive finds none. Permits are handed out first come, first served.
//! Wall clocks are not gated: their time is the time the ranks really share the cores.
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
    /// The rank that failed first.
    pub rank: usize,
    /// Its error's message, or its panic's.
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
    gate: Option<Gate>,
}

/// A first-come, first-served counting semaphore: the cores ranks may run on at once.
///
/// A release hands its permit to the oldest waiter and wakes that one alone. (Waking every
/// waiter to let the oldest find it made each release cost one wake-up per waiting rank: a
/// virtual-clock run of 1024 ranks on 2 cores took 34 s against 1.5 s on the wall clock.)
struct Gate {
    state: Mutex<GateState>,
}

struct GateState {
    free: usize,
    /// The ranks waiting for a permit, oldest first.
    waiting: VecDeque<Arc<Waiter>>,
}

/// One waiting rank: set `granted` and notify to hand it a permit.
#[derive(Default)]
struct Waiter {
    granted: Mutex<bool>,
    wake: Condvar,
}

impl Gate {
    fn new(permits: usize) -> Gate {
        Gate {
            state: Mutex::new(GateState {
                free: permits,
                waiting: VecDeque::new(),
            }),
        }
    }

    /// Wait for a permit, after every rank that asked before.
    fn acquire(&self) {
        let waiter = {
            let mut state = lock(&self.state);
            if state.free > 0 && state.waiting.is_empty() {
                state.free -= 1;
                return;
            }
            let waiter = Arc::new(Waiter::default());
            state.waiting.push_back(Arc::clone(&waiter));
            waiter
        };
        let mut granted = lock(&waiter.granted);
        while !*granted {
            granted = waiter
                .wake
                .wait(granted)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn release(&self) {
        let next = {
            let mut state = lock(&self.state);
            let next = state.waiting.pop_front();
            if next.is_none() {
                state.free += 1;
            }
            next
        };
        if let Some(waiter) = next {
            *lock(&waiter.granted) = true;
            waiter.wake.notify_one();
        }
    }
}

/// A rank's core within one communication call of a gated world: [`Core::give_up`] releases
/// the rank's permit (once), and dropping the `Core` waits for a permit again if it was given
/// up. Without a gate both do nothing.
struct Core<'a> {
    gate: Option<&'a Gate>,
    given_up: bool,
}

impl<'a> Core<'a> {
    fn held(gate: Option<&'a Gate>) -> Self {
        Core {
            gate,
            given_up: false,
        }
    }

    fn give_up(&mut self) {
        if let (Some(gate), false) = (self.gate, self.given_up) {
            // Handing the core on is the emulator's work, not the node's: off a virtual
            // clock's time, like waking a receiver (`send_bytes`).
            clock::unclocked(|| gate.release());
            self.given_up = true;
        }
    }
}

impl Drop for Core<'_> {
    fn drop(&mut self) {
        if let (Some(gate), true) = (self.gate, self.given_up) {
            // Waiting for a core of this machine is not the emulated node's time either.
            clock::unclocked(|| gate.acquire());
        }
    }
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
    /// A world of `size` ranks with the given emulated network and clock mode. On a virtual
    /// clock, at most as many ranks as this machine has cores run at once (module docs).
    pub fn new(size: usize, network: NetworkSpec, mode: ClockMode) -> Arc<ThreadWorld> {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let gated = mode == ClockMode::Virtual && size > cores;
        Self::with_gate(size, network, mode, gated.then_some(cores))
    }

    /// [`ThreadWorld::new`] with an explicit gate: `Some(n)` lets at most `n` ranks run at once.
    fn with_gate(
        size: usize,
        network: NetworkSpec,
        mode: ClockMode,
        cores: Option<usize>,
    ) -> Arc<ThreadWorld> {
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
            gate: cores.map(|n| Gate::new(n.max(1))),
        })
    }

    /// Called by a rank's thread before it starts its work: waits for a core (gated worlds).
    pub fn start(&self) {
        if let Some(gate) = &self.gate {
            gate.acquire();
        }
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

    /// Record that `rank` returned from its work, waking ranks that wait on it, and give up its
    /// core. Every [`ThreadWorld::start`] must be matched by one `finish`.
    pub fn finish(&self, rank: usize) {
        self.finished[rank].store(true, Ordering::SeqCst);
        if let Some(gate) = &self.gate {
            gate.release();
        }
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
    /// Receive from `source`. In a gated world the rank gives up its core while it waits, and
    /// when a poll finds nothing (so that a rank polling for a message cannot keep the sender
    /// from running), and waits for one again before it returns.
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
        // Declared before the lock, so that the lock is released before the core is taken back.
        let mut core = Core::held(world.gate.as_ref());
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
                    core.give_up();
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
                core.give_up();
                return Ok(None);
            }
            if world.finished[source].load(Ordering::SeqCst) {
                return Err(CommError::PeerFinished { peer: source, tag });
            }
            waiting_since.get_or_insert_with(Instant::now);
            // Handing the core on, blocking and being woken cost this machine's scheduler CPU
            // time, which is not the node's: a virtual clock takes the wait from the message's
            // arrival instead.
            queues = clock::unclocked(|| {
                core.give_up();
                mailbox
                    .ready
                    .wait(queues)
                    .unwrap_or_else(PoisonError::into_inner)
            });
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

    fn emulated_network(&self) -> Option<NetworkSpec> {
        Some(self.world.network)
    }

    fn send_bytes(&self, dest: usize, tag: Tag, data: &[u8]) -> Result<Traffic, CommError> {
        check_rank(dest, self.world.size())?;
        let world = &*self.world;
        if world.aborted.load(Ordering::SeqCst) {
            return Err(world.aborted_error());
        }
        // The message leaves once the send has copied it (the send overhead O_S, seed §5.3.2),
        // and takes the transfer time from then on.
        let copy = data.to_vec();
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
            data: copy,
            arrival_s,
            deliver_at,
        };
        let mailbox = &world.mailboxes[dest];
        lock(&mailbox.queues)[self.rank].push_back(message);
        // Waking the receiver's thread is the emulator's work, not the sender's: a node's send
        // does not pay for the receiving node's scheduler. Off a virtual clock's time.
        clock::unclocked(|| mailbox.ready.notify_all());
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

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::mpsc;

    use super::*;

    const NETWORK: NetworkSpec = NetworkSpec {
        latency_s: 0.0,
        bandwidth_bps: f64::INFINITY,
    };

    #[test]
    fn the_gate_hands_each_released_permit_to_the_oldest_waiter() {
        let gate = Arc::new(Gate::new(1));
        gate.acquire();
        let (order_tx, order_rx) = mpsc::channel();
        let mut threads = Vec::new();
        for k in 0..4 {
            let (mine, order_tx) = (Arc::clone(&gate), order_tx.clone());
            threads.push(std::thread::spawn(move || {
                mine.acquire();
                order_tx.send(k).unwrap();
            }));
            // Queued before the next one asks.
            while lock(&gate.state).waiting.len() < k + 1 {
                std::thread::yield_now();
            }
        }
        for k in 0..4 {
            gate.release();
            assert_eq!(order_rx.recv().unwrap(), k);
            // The permit went to waiter k, not back to the pool.
            assert_eq!(lock(&gate.state).free, 0);
        }
        gate.release();
        assert_eq!(lock(&gate.state).free, 1);
        threads.into_iter().for_each(|t| t.join().unwrap());
    }

    #[test]
    fn a_gated_world_runs_no_more_ranks_at_once_than_its_cores() {
        const RANKS: usize = 6;
        let world = ThreadWorld::with_gate(RANKS, NETWORK, ClockMode::Virtual, Some(2));
        let (running, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|s| {
            for rank in 0..RANKS {
                let (world, running, most) = (&world, &running, &most);
                s.spawn(move || {
                    world.start();
                    let comm = world.comm(rank);
                    let mut token = [0u8; 8];
                    for _ in 0..20 {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        // Sleeping, not spinning: the OS would not keep more than 2 spinning
                        // threads running on 2 cores anyway, but sleepers it runs all at once.
                        std::thread::sleep(Duration::from_millis(1));
                        running.fetch_sub(1, Ordering::SeqCst);
                        // A ring: every rank waits for its left neighbour each round.
                        comm.send_bytes((rank + 1) % RANKS, 0, &token).unwrap();
                        comm.receive_bytes((rank + RANKS - 1) % RANKS, 0, &mut token)
                            .unwrap();
                    }
                    world.finish(rank);
                });
            }
        });
        let most = most.load(Ordering::SeqCst);
        assert!((1..=2).contains(&most), "{most} ranks computed at once");
    }

    #[test]
    fn a_rank_polling_for_a_message_lets_the_sender_run() {
        // One core: rank 0 takes it first and polls for rank 1's message without ever
        // blocking. Unless a poll that finds nothing gives the core up, rank 1 never runs.
        let world = ThreadWorld::with_gate(2, NETWORK, ClockMode::Virtual, Some(1));
        let (done_tx, done_rx) = mpsc::channel();
        let (started_tx, started_rx) = mpsc::channel();
        let poller = {
            let world = Arc::clone(&world);
            std::thread::spawn(move || {
                world.start();
                started_tx.send(()).unwrap();
                let comm = world.comm(0);
                let mut got = [0u8; 4];
                let mut polls = 0u64;
                while comm.try_receive_bytes(1, 7, &mut got).unwrap().is_none() {
                    polls += 1;
                }
                world.finish(0);
                done_tx.send((got, polls)).unwrap();
            })
        };
        started_rx.recv().unwrap();
        let sender = {
            let world = Arc::clone(&world);
            std::thread::spawn(move || {
                world.start();
                world.comm(1).send_bytes(0, 7, &[1, 2, 3, 4]).unwrap();
                world.finish(1);
            })
        };
        let (got, polls) = done_rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the polling rank kept the only core: the sender never ran");
        assert_eq!(got, [1, 2, 3, 4]);
        assert!(polls > 0, "rank 0 polled before rank 1 could send");
        poller.join().unwrap();
        sender.join().unwrap();
    }

    #[test]
    fn a_virtual_clock_does_not_charge_a_rank_for_blocking_and_being_woken() {
        // Two ranks on one core, over a network that costs nothing. First each sends all its
        // messages and then receives the other's, which are mostly there already: the clock
        // per message is the node's own send and receive. Then they play ping-pong, so each
        // waits for the other at every message. Blocking on the mailbox, being woken and
        // taking the core back cost this machine's scheduler several microseconds of CPU each
        // time (6.1–7.8 µs per message when they were charged, against about 1 µs); none of
        // it is the node's, so ping-pong costs the clock about what the first phase did.
        const ROUNDS: usize = 2_000;
        let world = ThreadWorld::with_gate(2, NETWORK, ClockMode::Virtual, Some(1));
        let per_message: Vec<(f64, f64)> = std::thread::scope(|s| {
            let ranks: Vec<_> = (0..2)
                .map(|rank| {
                    let world = &world;
                    s.spawn(move || {
                        world.start();
                        clock::install(ClockMode::Virtual, 1.0);
                        let comm = world.comm(rank);
                        let other = 1 - rank;
                        let mut ball = [0u8; 8];
                        for _ in 0..ROUNDS {
                            comm.send_bytes(other, 4, &ball).unwrap();
                        }
                        for _ in 0..ROUNDS {
                            comm.receive_bytes(other, 4, &mut ball).unwrap();
                        }
                        let queued = clock::now();
                        for _ in 0..ROUNDS {
                            if rank == 0 {
                                comm.send_bytes(1, 5, &ball).unwrap();
                                comm.receive_bytes(1, 5, &mut ball).unwrap();
                            } else {
                                comm.receive_bytes(0, 5, &mut ball).unwrap();
                                comm.send_bytes(0, 5, &ball).unwrap();
                            }
                        }
                        let waited = clock::now() - queued;
                        world.finish(rank);
                        let messages = (2 * ROUNDS) as f64;
                        (queued / messages, waited / messages)
                    })
                })
                .collect();
            ranks.into_iter().map(|r| r.join().unwrap()).collect()
        });
        for (rank, (queued, waited)) in per_message.iter().enumerate() {
            assert!(
                *waited < 4.0 * queued,
                "rank {rank}: {:.2} µs of clock per message when waiting at each, {:.2} µs when \
                 not",
                waited * 1e6,
                queued * 1e6
            );
        }
    }

    #[test]
    fn a_message_leaves_when_its_send_has_copied_it() {
        // Virtual clocks: a 64 MiB send on a node of CPU power 0.01 spends a long time copying
        // (the receiver, at full power, copies it 100 times as fast). The message's transfer
        // time (1 ms latency) starts after the sender's copy, so the receiver's clock ends at
        // least a latency past the sender's clock after the send.
        const LATENCY_S: f64 = 1e-3;
        let network = NetworkSpec {
            latency_s: LATENCY_S,
            bandwidth_bps: f64::INFINITY,
        };
        let world = ThreadWorld::new(2, network, ClockMode::Virtual);
        let (sent_at, received_at) = std::thread::scope(|s| {
            let sender = s.spawn(|| {
                world.start();
                clock::install(ClockMode::Virtual, 0.01);
                let data = vec![7u8; 64 << 20];
                world.comm(0).send_bytes(1, 3, &data).unwrap();
                let sent_at = clock::now();
                world.finish(0);
                sent_at
            });
            let receiver = s.spawn(|| {
                world.start();
                clock::install(ClockMode::Virtual, 1.0);
                let mut into = vec![0u8; 64 << 20];
                world.comm(1).receive_bytes(0, 3, &mut into).unwrap();
                let received_at = clock::now();
                world.finish(1);
                received_at
            });
            (sender.join().unwrap(), receiver.join().unwrap())
        });
        assert!(sent_at > 1e-3, "the copy took CPU time: {sent_at}");
        assert!(
            received_at >= sent_at + LATENCY_S,
            "sent at {sent_at}, received at {received_at}"
        );
    }

    #[test]
    fn only_virtual_clocks_with_more_ranks_than_cores_are_gated() {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        let many = cores + 1;
        let gated = |size, mode| ThreadWorld::new(size, NETWORK, mode).gate.is_some();
        assert!(gated(many, ClockMode::Virtual));
        assert!(!gated(cores, ClockMode::Virtual));
        assert!(!gated(many, ClockMode::Wall));
        assert!(!gated(many, ClockMode::Charged));
    }
}
