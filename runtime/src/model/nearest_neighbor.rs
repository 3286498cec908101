//! Nearest-neighbour communication and the other point-to-point patterns (seed Eq. 5.3, 5.6,
//! 5.11, 5.12): every node sends all its messages, then blocks until the slowest of its senders'
//! messages has arrived, then processes what it received.
//!
//! The same equations serve any pattern given by explicit peers: point-to-point events, a
//! pipeline event closing a section, and all-to-all (every node sends to every other; its cost
//! is O(P²), like the pattern itself).

use super::comm::CommCost;
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
