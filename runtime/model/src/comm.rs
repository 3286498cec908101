//! What every communication pattern shares (seed §5.3.2): the send overhead `O_→(q)` (including
//! reading an out-of-core message), the receive overhead `O_←(q)`, message sizes and the peers
//! each node sends to and receives from.

use super::out_of_core::OocState;
use super::Model;
use mheta_runtime::format::{Pattern, PeerOp};

/// A receive edge of node `i` in a point-to-point pattern: a message from `src`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RecvEdge {
    pub src: u32,
    /// `N_→(src, i)`: messages `src` has sent up to and including the one to `i`.
    pub pos_at_sender: u32,
    /// `N_→(i, src)`: messages `i` has sent up to and including the one to `src` (all of `i`'s
    /// messages, `N_→(i, *)`, when `i` sends nothing to `src`).
    pub pos_at_receiver: u32,
}

/// One communication event, compiled.
#[derive(Debug, Clone)]
pub(crate) struct CommCost {
    pub pattern: Pattern,
    /// Root of rooted collectives (reduction, broadcast, gather, scatter, barrier, all-gather).
    pub root: usize,
    /// `O_S(q)` per message, per node (measured: time in send calls / messages sent).
    pub o_send: Vec<f64>,
    /// `O_←(q)` per message, per node.
    pub o_recv: Vec<f64>,
    /// Bytes of one message node `i` sends: `bytes[i] + bytes_per_row · rows` (the second term
    /// for patterns whose messages carry the sender's rows: gather, all-gather; for scatter the
    /// rows are the receiver's).
    pub bytes: Vec<f64>,
    pub bytes_per_row: f64,
    /// The distributed array the message is read from, when known (`O_→` then includes reading
    /// it from disk if the array is out of core on the sender).
    pub msg_array: Option<usize>,
    /// `T_r`: the root's computation of the reduced value, seconds.
    pub t_reduce: f64,
    /// `N_→(i, *)` and `N_←(i, *)` per node.
    pub n_send: Vec<u32>,
    pub n_recv: Vec<u32>,
    /// Point-to-point patterns: receive edges of node `i` are
    /// `recv_edges[recv_start[i]..recv_start[i + 1]]`.
    pub recv_start: Vec<u32>,
    pub recv_edges: Vec<RecvEdge>,
    /// Point-to-point patterns whose calls were measured in an order the seed's equations do
    /// not describe (a send issued after a receive): every node's calls in program order.
    pub schedule: Option<Schedule>,
    /// The share of iterations the event runs in (1 unless it is conditional); the costs
    /// above are per run of the event.
    pub frequency: f64,
}

impl CommCost {
    /// Bytes of the message node `i` (holding `rows` rows) sends.
    pub fn msg_bytes(&self, i: usize, rows: u64) -> f64 {
        self.bytes[i] + self.bytes_per_row * rows as f64
    }

    /// `O_→(q) = O_S(q) + (O_r + r(M_q) if q ∈ β)` (§5.3.2): node `i`'s overhead to send one
    /// message of `bytes` bytes.
    pub fn o_send(&self, model: &Model, i: usize, bytes: f64, state: &OocState) -> f64 {
        let mut o = self.o_send[i];
        if let Some(m) = self.msg_array {
            if state.is_out_of_core(m) {
                let memory = &model.memory[i];
                o += memory.o_r + memory.read_per_byte[m] * bytes;
            }
        }
        o
    }

    /// The communication part of the seed's `f_i(x_i)` (§4.2): overheads only, no blocking.
    pub fn node_overheads(&self, model: &Model, i: usize, rows: u64, state: &OocState) -> f64 {
        let bytes = match self.pattern {
            // The root of a scatter sends rows of the receivers; charge its mean message.
            Pattern::Scatter if i == self.root => {
                self.bytes[i]
                    + self.bytes_per_row * model.total_rows as f64 / (model.nodes.max(2) - 1) as f64
            }
            Pattern::AllGather if i == self.root => {
                self.bytes[i] + self.bytes_per_row * model.total_rows as f64
            }
            _ => self.msg_bytes(i, rows),
        };
        let overhead = f64::from(self.n_send[i]) * self.o_send(model, i, bytes, state)
            + f64::from(self.n_recv[i]) * self.o_recv[i];
        if self.pattern == Pattern::Reduction && i == self.root {
            overhead + self.t_reduce
        } else {
            overhead
        }
    }

    pub fn recv_edges(&self, i: usize) -> &[RecvEdge] {
        &self.recv_edges[self.recv_start[i] as usize..self.recv_start[i + 1] as usize]
    }
}

/// `N_→(root, i)`: position of `i` among the root's recipients when the root sends to every
/// other node in rank order.
pub(crate) fn star_position(root: usize, i: usize) -> f64 {
    if i < root {
        (i + 1) as f64
    } else {
        i as f64
    }
}

/// The root of a gather-shaped event (reduction, gather, all-gather, barrier) receives one
/// message from every other node, in rank order, as the runtime's collectives do, spending
/// `per_message_s` on each once it has arrived. `arrivals` are the messages' arrival times in
/// that order and `clock` the root's clock when it starts receiving. Returns the time the root
/// waits in all and the moment it has processed the last message.
///
/// Seed Eq. 5.12 instead waits for the last arrival and then processes all `N_←(0,*)` messages:
/// `clock + T_w(0,q) + N_←(0,*)·O_←(q)`. That is the same when the messages arrive together,
/// and later by up to `(N − 1)·O_←(q)` when they arrive one after another, as they do in the
/// steady state after a broadcast in rank order: the root processes each while the next is
/// still on its way.
pub(crate) fn receive_in_rank_order(
    clock: f64,
    arrivals: impl Iterator<Item = f64>,
    per_message_s: f64,
) -> (f64, f64) {
    arrivals.fold((0.0, clock), |(waited, clock), arrival| {
        let wait = (arrival - clock).max(0.0);
        (waited + wait, clock + wait + per_message_s)
    })
}

/// Every node's point-to-point calls of one run of an event, in program order, each receive
/// matched with the send of its message (generalised Eq. 5.11: a node sends a message only
/// after the calls before it, including receives, have completed).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Schedule {
    /// Node `i`'s calls are `ops[start[i]..start[i + 1]]`.
    pub start: Vec<u32>,
    pub ops: Vec<ScheduledOp>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScheduledOp {
    Send {
        to: u32,
    },
    /// The receive of the message that `ops[send]`, a call of node `from`, sent.
    Receive {
        from: u32,
        send: u32,
    },
}

impl Schedule {
    /// The schedule of measured call orders, one per node, or `None` when the seed's own
    /// assumption holds (every node sends all its messages before its first receive) or the
    /// orders are unusable: a node that talked to a peer without an order, a peer out of
    /// range or twice in one direction, or a receive without its send (and the reverse).
    pub fn from_orders(orders: &[&[PeerOp]], talked: impl Fn(usize) -> bool) -> Option<Schedule> {
        let p = orders.len();
        let interleaved = orders.iter().any(|order| {
            order
                .iter()
                .skip_while(|op| matches!(op, PeerOp::Send(_)))
                .any(|op| matches!(op, PeerOp::Send(_)))
        });
        if !interleaved {
            return None;
        }
        let mut start = Vec::with_capacity(p + 1);
        let mut ops = Vec::new();
        // sends[from * p + to] = the index of `from`'s send to `to`.
        let mut sends = vec![u32::MAX; p * p];
        for (i, order) in orders.iter().enumerate() {
            if order.is_empty() && talked(i) {
                return None;
            }
            start.push(ops.len() as u32);
            for &op in *order {
                let (PeerOp::Send(peer) | PeerOp::Receive(peer)) = op;
                let peer = peer as usize;
                if peer >= p || peer == i {
                    return None;
                }
                match op {
                    PeerOp::Send(_) => {
                        let slot = &mut sends[i * p + peer];
                        if *slot != u32::MAX {
                            return None;
                        }
                        *slot = ops.len() as u32;
                        ops.push(ScheduledOp::Send { to: peer as u32 });
                    }
                    // Matched below, once every send has its index.
                    PeerOp::Receive(_) => ops.push(ScheduledOp::Receive {
                        from: peer as u32,
                        send: u32::MAX,
                    }),
                }
            }
        }
        start.push(ops.len() as u32);
        let mut received = vec![false; p * p];
        for i in 0..p {
            for op in &mut ops[start[i] as usize..start[i + 1] as usize] {
                if let ScheduledOp::Receive { from, send } = op {
                    let pair = *from as usize * p + i;
                    if sends[pair] == u32::MAX || received[pair] {
                        return None;
                    }
                    received[pair] = true;
                    *send = sends[pair];
                }
            }
        }
        // Every message sent is received.
        let unreceived = (0..p * p).any(|pair| sends[pair] != u32::MAX && !received[pair]);
        (!unreceived).then_some(Schedule { start, ops })
    }
}
