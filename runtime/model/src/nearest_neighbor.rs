//! Nearest-neighbour communication and the other point-to-point patterns (seed Eq. 5.3, 5.6,
//! 5.11, 5.12): every node sends all its messages, then blocks until the slowest of its senders'
//! messages has arrived, then processes what it received.
//!
//! When the measured calls interleave (a node receives before it sends, as in a halo exchange
//! written `send(up); receive(down); send(down); receive(up)`), the seed's assumption fails and
//! a message can wait for a chain of earlier ones: the event is then followed call by call
//! ([`in_order`]), which is Eq. 5.11–5.12 with `T_→(i,i')` taken at the send's own place in
//! node i's program order.
//!
//! The same equations serve any pattern given by explicit peers: point-to-point events, a
//! pipeline event closing a section, and all-to-all (every node sends to every other; its cost
//! is O(P²), like the pattern itself).

use super::comm::{CommCost, Schedule, ScheduledOp};
use super::{Model, Prediction};

/// Advances every node's clock through one point-to-point event.
// Indexing several per-node slices by rank reads clearer than zipping them.
#[allow(clippy::needless_range_loop)]
pub(crate) fn run(model: &Model, comm: &CommCost, rows: &[u64], out: &mut Prediction) {
    let p = model.nodes;
    // O_→(q) of every node (it may include reading an out-of-core message).
    for i in 0..p {
        let bytes = comm.msg_bytes(i, rows[i]);
        out.scratch[i] = comm.o_send(model, i, bytes, &out.ooc[i]);
    }
    if let Some(schedule) = &comm.schedule {
        if in_order(model, comm, schedule, rows, out) {
            return;
        }
    }
    for i in 0..p {
        out.scratch2[i] = blocked_time(model, comm, rows, &out.nodes, &out.scratch, i);
    }
    for i in 0..p {
        // Generalised Eq. 5.6: T_Υ^i = [N_→(i,*) · O_→(q)] + T_w(i,q) + [N_←(i,*) · O_←(q)].
        let overhead =
            f64::from(comm.n_send[i]) * out.scratch[i] + f64::from(comm.n_recv[i]) * comm.o_recv[i];
        let blocked = out.scratch2[i];
        out.charge_comm(i, overhead, blocked, 0.0);
    }
}

/// Eq. 5.12: `T_w(i,q) = max(0, max_{i'∈C_←(i)} [T_→(i',i) + T_{i'→i}(q) − T_→(i,i')])`, with
/// Eq. 5.11 `T_→(i,i') = T_τ(i) + N_→(i,i') · O_→(q)` where `T_τ(i)` is node i's clock (it
/// includes all earlier sections, §5.3.4).
fn blocked_time(
    model: &Model,
    comm: &CommCost,
    rows: &[u64],
    clocks: &[super::NodeBreakdown],
    o_send: &[f64],
    i: usize,
) -> f64 {
    let mut wait: f64 = 0.0;
    for e in comm.recv_edges(i) {
        let src = e.src as usize;
        let sent = clocks[src].total_s + f64::from(e.pos_at_sender) * o_send[src];
        let arrival = sent + model.transfer(comm.msg_bytes(src, rows[src]));
        let ready = clocks[i].total_s + f64::from(e.pos_at_receiver) * o_send[i];
        wait = wait.max(arrival - ready);
    }
    wait
}

/// Generalised Eq. 5.11–5.12 for calls in program order (`comm.schedule`): each node's clock
/// moves through its calls; a send costs `O_→(q)` and its message leaves at the clock; a
/// receive waits until its message has arrived (`T_→` of the send plus `T_{i'→i}(q)`) and then
/// costs `O_←(q)`. Expects `out.scratch` to hold every node's `O_→(q)`. Returns false, charging
/// nothing, when the calls cannot all complete (orders that would deadlock).
fn in_order(
    model: &Model,
    comm: &CommCost,
    schedule: &Schedule,
    rows: &[u64],
    out: &mut Prediction,
) -> bool {
    let p = model.nodes;
    let calls = &mut out.calls;
    calls.sent_at.clear();
    calls.sent_at.resize(schedule.ops.len(), f64::NAN);
    calls.next.clear();
    calls.next.extend_from_slice(&schedule.start[..p]);
    calls.runnable.clear();
    calls.runnable.extend((0..p as u32).rev());
    // The event's overheads (scratch4) and blocked time (scratch2) so far, per node; its clock
    // is the node's clock before the event plus both.
    for i in 0..p {
        out.scratch4[i] = 0.0;
        out.scratch2[i] = 0.0;
    }
    while let Some(i) = calls.runnable.pop() {
        let i = i as usize;
        while calls.next[i] < schedule.start[i + 1] {
            let k = calls.next[i] as usize;
            let clock = out.nodes[i].total_s + out.scratch4[i] + out.scratch2[i];
            match schedule.ops[k] {
                ScheduledOp::Send { to } => {
                    out.scratch4[i] += out.scratch[i];
                    calls.sent_at[k] = clock + out.scratch[i];
                    // Wake the receiver if it waits for this very message.
                    let waiting = calls.next[to as usize] as usize;
                    if schedule.ops.get(waiting)
                        == Some(&ScheduledOp::Receive {
                            from: i as u32,
                            send: k as u32,
                        })
                    {
                        calls.runnable.push(to);
                    }
                }
                ScheduledOp::Receive { from, send } => {
                    let sent = calls.sent_at[send as usize];
                    if sent.is_nan() {
                        break;
                    }
                    let from = from as usize;
                    let arrival = sent + model.transfer(comm.msg_bytes(from, rows[from]));
                    out.scratch2[i] += (arrival - clock).max(0.0);
                    out.scratch4[i] += comm.o_recv[i];
                }
            }
            calls.next[i] += 1;
        }
    }
    if (0..p).any(|i| calls.next[i] < schedule.start[i + 1]) {
        return false;
    }
    for i in 0..p {
        let (overhead, blocked) = (out.scratch4[i], out.scratch2[i]);
        out.charge_comm(i, overhead, blocked, 0.0);
    }
    true
}
