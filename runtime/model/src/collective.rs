//! One-way rooted collectives, modelled in the style of Eq. 5.7–5.9 (seed §5.3.3):
//!
//! - broadcast / scatter: the root sends to every other node in rank order (scatter messages
//!   carry the receiver's rows); a receiver blocks until its message arrives,
//!   `T_α(i) = T_τ(0) + N_→(0,i)·O_→(q) + T_{0→i}(q)`, `T_w(i) = max(0, T_α(i) − T_τ(i))`,
//!   then processes it: `T_Υ^i = T_w(i) + O_←(q)`; the root spends `T_Υ^0 = N_→(0,*)·O_→(q)`.
//! - gather: every other node sends its rows to the root and goes on (sends are asynchronous,
//!   §5.1): `T_Υ^i = O_→(q)`; the root takes the messages in rank order, waiting for each that
//!   has not arrived (Eq. 5.12 in the runtime's order, [`receive_in_rank_order`]), and
//!   processes all: `T_Υ^0 = T_w(0,q) + N_←(0,*)·O_←(q)`.

use super::comm::{receive_in_rank_order, CommCost};
use super::{Model, Prediction};
use mheta_runtime::format::Pattern;

/// Broadcast and scatter.
pub(crate) fn run_broadcast(model: &Model, comm: &CommCost, rows: &[u64], out: &mut Prediction) {
    let p = model.nodes;
    let r = comm.root.min(p - 1);
    let clock_r = out.nodes[r].total_s;
    let mut root_overhead = 0.0;
    for i in (0..p).filter(|&i| i != r) {
        let bytes = if comm.pattern == Pattern::Scatter {
            comm.bytes[r] + comm.bytes_per_row * rows[i] as f64
        } else {
            comm.bytes[r]
        };
        let o = comm.o_send(model, r, bytes, &out.ooc[r]);
        root_overhead += o;
        // With per-destination sizes the root's sends are cumulative: the k-th message leaves
        // after k overheads (for equal sizes this is N_→(0,i)·O_→(q)).
        let t_alpha = clock_r + root_overhead + model.transfer(bytes);
        let blocked = (t_alpha - out.nodes[i].total_s).max(0.0);
        out.charge_comm(i, comm.o_recv[i], blocked, 0.0);
    }
    out.charge_comm(r, root_overhead, 0.0, 0.0);
}

/// Gather.
pub(crate) fn run_gather(model: &Model, comm: &CommCost, rows: &[u64], out: &mut Prediction) {
    let p = model.nodes;
    let r = comm.root.min(p - 1);
    if p == 1 {
        return;
    }
    for i in (0..p).filter(|&i| i != r) {
        let bytes = comm.msg_bytes(i, rows[i]);
        out.scratch[i] = comm.o_send(model, i, bytes, &out.ooc[i]);
        out.scratch2[i] = out.nodes[i].total_s + out.scratch[i] + model.transfer(bytes);
    }
    let received = f64::from(comm.n_recv[r]) * comm.o_recv[r];
    let arrivals = (0..p).filter(|&i| i != r).map(|i| out.scratch2[i]);
    let (t_w, _) = receive_in_rank_order(out.nodes[r].total_s, arrivals, received / (p - 1) as f64);
    for i in (0..p).filter(|&i| i != r) {
        out.charge_comm(i, out.scratch[i], 0.0, 0.0);
    }
    out.charge_comm(r, received, t_w, 0.0);
}
