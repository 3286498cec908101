//! Reductions (seed Eq. 5.7–5.9 and their multi-node form, §5.3.3), and the patterns with the
//! same shape: every node sends to the root, the root combines and sends a result back to every
//! node in rank order.
//!
//! - `reduction` (reduce / all-reduce): messages of the measured size both ways, root compute `T_r`.
//! - `barrier`: the same exchange with empty messages and no compute.
//! - `all_gather`: a gather of every node's rows to the root, then the root sends the assembled
//!   data (all S rows) back, which is how the runtime's collectives implement it.

use super::comm::{receive_in_rank_order, star_position, CommCost};
use super::{Model, Prediction};
use mheta_runtime::format::Pattern;

/// Advances every node's clock through one rooted reduction-shaped event.
// Indexing several per-node slices by rank reads clearer than zipping them.
#[allow(clippy::needless_range_loop)]
pub(crate) fn run(model: &Model, comm: &CommCost, rows: &[u64], out: &mut Prediction) {
    let p = model.nodes;
    let r = comm.root.min(p - 1);
    if p == 1 {
        return;
    }
    // O_→(q) per node for its contribution.
    for i in 0..p {
        let bytes = comm.msg_bytes(i, rows[i]);
        out.scratch[i] = comm.o_send(model, i, bytes, &out.ooc[i]);
    }
    let t_r = if comm.pattern == Pattern::Reduction {
        comm.t_reduce
    } else {
        0.0
    };
    let back_bytes = match comm.pattern {
        Pattern::AllGather => comm.bytes[r] + comm.bytes_per_row * rows.iter().sum::<u64>() as f64,
        Pattern::Barrier => 0.0,
        _ => comm.msg_bytes(r, rows[r]),
    };
    let o_back = comm.o_send(model, r, back_bytes, &out.ooc[r]);
    let received = f64::from(comm.n_recv[r]) * comm.o_recv[r];
    // T_w(0,q): the root, which sends nothing before it has received, takes the contributions
    // in rank order (Eq. 5.12 in the order the runtime receives them). A contribution arrives
    // at T_→(i, 0) + T_{i→0}(q) (Eq. 5.11 with one recipient).
    let arrivals = (0..p).filter(|&i| i != r).map(|i| {
        out.nodes[i].total_s + out.scratch[i] + model.transfer(comm.msg_bytes(i, rows[i]))
    });
    let (t_w0, received_at) =
        receive_in_rank_order(out.nodes[r].total_s, arrivals, received / (p - 1) as f64);
    // The moment the root starts sending the result: T_τ(0) + T_w(0,q) + N_←(0,*)·O_← + T_r.
    let release = received_at + t_r;
    for i in (0..p).filter(|&i| i != r) {
        // Multi-node Eq. 5.8: T_α(i) = T_τ(0) + T_w(0,q) + [N_←(0,*)·O_←(q)] + T_r
        //                              + [N_→(0,i)·O_→(q)] + T_{0→i}(q).
        let t_alpha = release + star_position(r, i) * o_back + model.transfer(back_bytes);
        // Eq. 5.9: T_Υ^i = O_→(q) + [T_α(i) − (T_τ(i) + O_→(q))] + O_←(q).
        let sent = out.nodes[i].total_s + out.scratch[i];
        let blocked = (t_alpha - sent).max(0.0);
        out.scratch2[i] = blocked;
    }
    // Multi-node Eq. 5.7: T_Υ^0 = T_w(0,q) + [N_←(0,*)·O_←(q)] + T_r + [N_→(0,*)·O_→(q)].
    out.charge_comm(r, received + f64::from(comm.n_send[r]) * o_back, t_w0, t_r);
    for i in (0..p).filter(|&i| i != r) {
        let overhead = out.scratch[i] + comm.o_recv[i];
        let blocked = out.scratch2[i];
        out.charge_comm(i, overhead, blocked, 0.0);
    }
}
