//! Linear collective algorithms over a backend's point-to-point transport: the default
//! implementations of the collective methods of [`Comm`].
//!
//! Rooted operations exchange one message between the root and every other rank; `all_*`
//! operations are a rooted operation to rank 0 followed by a broadcast, except all-to-all, which
//! sends directly between every pair. Reductions combine contributions in rank order, so their
//! result equals the sequential fold `x_0 op x_1 op … op x_{P−1}` exactly. Because sends are
//! buffered, no ordering of sends before receives can deadlock.

use super::{check_rank, reduce_bytes, Comm, CommError, ElemKind, ReduceOp, Tag, Traffic};

const TAG_BARRIER: Tag = -1;
const TAG_BROADCAST: Tag = -2;
const TAG_REDUCE: Tag = -3;
const TAG_GATHER: Tag = -4;
const TAG_SCATTER: Tag = -5;
const TAG_ALL_TO_ALL: Tag = -6;

/// Every rank sends an empty message to rank 0, which then releases everyone.
pub fn barrier<C: Comm + ?Sized>(c: &C) -> Result<Traffic, CommError> {
    let mut t = Traffic::default();
    if c.rank() == 0 {
        for r in 1..c.size() {
            t += c.receive_bytes(r, TAG_BARRIER, &mut [])?;
        }
        for r in 1..c.size() {
            t += c.send_bytes(r, TAG_BARRIER, &[])?;
        }
    } else {
        t += c.send_bytes(0, TAG_BARRIER, &[])?;
        t += c.receive_bytes(0, TAG_BARRIER, &mut [])?;
    }
    Ok(t)
}

/// Root sends `buf` to every other rank, one message each; the others receive into `buf`.
pub fn broadcast<C: Comm + ?Sized>(
    c: &C,
    root: usize,
    buf: &mut [u8],
) -> Result<Traffic, CommError> {
    check_rank(root, c.size())?;
    let mut t = Traffic::default();
    if c.rank() == root {
        for r in (0..c.size()).filter(|&r| r != root) {
            t += c.send_bytes(r, TAG_BROADCAST, buf)?;
        }
    } else {
        t += c.receive_bytes(root, TAG_BROADCAST, buf)?;
    }
    Ok(t)
}

/// Every rank but the root sends `send` to the root, which combines the contributions in rank
/// order into `recv`.
pub fn reduce<C: Comm + ?Sized>(
    c: &C,
    root: usize,
    kind: ElemKind,
    op: ReduceOp,
    send: &[u8],
    recv: &mut [u8],
) -> Result<Traffic, CommError> {
    check_rank(root, c.size())?;
    if send.len() % kind.size() != 0 {
        return Err(invalid(
            "reduce",
            format!("{} bytes is not a whole number of elements", send.len()),
        ));
    }
    let mut t = Traffic::default();
    if c.rank() != root {
        t += c.send_bytes(root, TAG_REDUCE, send)?;
        return Ok(t);
    }
    if recv.len() != send.len() {
        return Err(invalid(
            "reduce",
            format!(
                "root's receive buffer has {} bytes, the contributions {}",
                recv.len(),
                send.len()
            ),
        ));
    }
    let mut part = vec![0u8; send.len()];
    for r in 0..c.size() {
        let contribution: &[u8] = if r == root {
            send
        } else {
            t += c.receive_bytes(r, TAG_REDUCE, &mut part)?;
            &part
        };
        if r == 0 {
            recv.copy_from_slice(contribution);
        } else {
            reduce_bytes(kind, op, recv, contribution);
        }
    }
    Ok(t)
}

/// A [`reduce`] to rank 0, then a [`broadcast`] of the result.
pub fn all_reduce<C: Comm + ?Sized>(
    c: &C,
    kind: ElemKind,
    op: ReduceOp,
    send: &[u8],
    recv: &mut [u8],
) -> Result<Traffic, CommError> {
    if recv.len() != send.len() {
        return Err(invalid(
            "all_reduce",
            format!(
                "receive buffer has {} bytes, send buffer {}",
                recv.len(),
                send.len()
            ),
        ));
    }
    let mut t = reduce(c, 0, kind, op, send, recv)?;
    t += broadcast(c, 0, recv)?;
    Ok(t)
}

/// Every rank but the root sends its `send` to the root, which places rank `r`'s at offset
/// `sum(counts[..r])` of `recv`.
pub fn gather<C: Comm + ?Sized>(
    c: &C,
    root: usize,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
) -> Result<Traffic, CommError> {
    check_rank(root, c.size())?;
    let mut t = Traffic::default();
    if c.rank() != root {
        t += c.send_bytes(root, TAG_GATHER, send)?;
        return Ok(t);
    }
    check_gather_layout(c.size(), root, counts, recv.len(), send.len())?;
    let mut offset = 0;
    for (r, &n) in counts.iter().enumerate() {
        let slot = &mut recv[offset..offset + n];
        if r == root {
            slot.copy_from_slice(send);
        } else {
            t += c.receive_bytes(r, TAG_GATHER, slot)?;
        }
        offset += n;
    }
    Ok(t)
}

/// Root sends rank `r` the `counts[r]` bytes of `send` at offset `sum(counts[..r])`.
pub fn scatter<C: Comm + ?Sized>(
    c: &C,
    root: usize,
    send: &[u8],
    counts: &[usize],
    recv: &mut [u8],
) -> Result<Traffic, CommError> {
    check_rank(root, c.size())?;
    let mut t = Traffic::default();
    if c.rank() != root {
        t += c.receive_bytes(root, TAG_SCATTER, recv)?;
        return Ok(t);
    }
    check_scatter_layout(c.size(), root, counts, send.len(), recv.len())?;
    let mut offset = 0;
    for (r, &n) in counts.iter().enumerate() {
        let part = &send[offset..offset + n];
        if r == root {
            recv.copy_from_slice(part);
        } else {
            t += c.send_bytes(r, TAG_SCATTER, part)?;
        }
        offset += n;
    }
    Ok(t)
}

/// A [`gather`] to rank 0, then a [`broadcast`] of the whole buffer.
pub fn all_gather<C: Comm + ?Sized>(
    c: &C,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
) -> Result<Traffic, CommError> {
    check_counts("all_gather", c.size(), counts, recv.len())?;
    if counts[c.rank()] != send.len() {
        return Err(invalid(
            "all_gather",
            format!(
                "this rank contributes {} bytes but counts[{}] is {}",
                send.len(),
                c.rank(),
                counts[c.rank()]
            ),
        ));
    }
    let mut t = gather(c, 0, send, recv, counts)?;
    t += broadcast(c, 0, recv)?;
    Ok(t)
}

/// Every rank sends its block for rank `q` directly to `q`, and receives one block from each.
pub fn all_to_all<C: Comm + ?Sized>(
    c: &C,
    send: &[u8],
    send_counts: &[usize],
    recv: &mut [u8],
    recv_counts: &[usize],
) -> Result<Traffic, CommError> {
    check_counts("all_to_all (send)", c.size(), send_counts, send.len())?;
    check_counts("all_to_all (receive)", c.size(), recv_counts, recv.len())?;
    let me = c.rank();
    let mut t = Traffic::default();
    let mut offset = 0;
    let mut own: &[u8] = &[];
    for (r, &n) in send_counts.iter().enumerate() {
        let part = &send[offset..offset + n];
        if r == me {
            own = part;
        } else {
            t += c.send_bytes(r, TAG_ALL_TO_ALL, part)?;
        }
        offset += n;
    }
    let mut offset = 0;
    for (r, &n) in recv_counts.iter().enumerate() {
        let slot = &mut recv[offset..offset + n];
        if r == me {
            if own.len() != n {
                return Err(invalid(
                    "all_to_all",
                    format!("rank {me} sends itself {} bytes but expects {n}", own.len()),
                ));
            }
            slot.copy_from_slice(own);
        } else {
            t += c.receive_bytes(r, TAG_ALL_TO_ALL, slot)?;
        }
        offset += n;
    }
    Ok(t)
}

/// The root's layout of a gather: one count per rank summing to its receive buffer, and its
/// own contribution of `counts[root]` bytes. Shared by every backend so errors read the same.
pub(crate) fn check_gather_layout(
    size: usize,
    root: usize,
    counts: &[usize],
    recv_len: usize,
    send_len: usize,
) -> Result<(), CommError> {
    check_counts("gather", size, counts, recv_len)?;
    if counts[root] != send_len {
        return Err(invalid(
            "gather",
            format!(
                "root contributes {send_len} bytes but counts[{root}] is {}",
                counts[root]
            ),
        ));
    }
    Ok(())
}

/// The root's layout of a scatter: one count per rank summing to its send buffer, and its own
/// receive buffer of `counts[root]` bytes.
pub(crate) fn check_scatter_layout(
    size: usize,
    root: usize,
    counts: &[usize],
    send_len: usize,
    recv_len: usize,
) -> Result<(), CommError> {
    check_counts("scatter", size, counts, send_len)?;
    if counts[root] != recv_len {
        return Err(invalid(
            "scatter",
            format!(
                "root's receive buffer has {recv_len} bytes but counts[{root}] is {}",
                counts[root]
            ),
        ));
    }
    Ok(())
}

/// One count per rank, summing to the buffer length.
pub(crate) fn check_counts(
    operation: &'static str,
    size: usize,
    counts: &[usize],
    len: usize,
) -> Result<(), CommError> {
    if counts.len() != size {
        return Err(invalid(
            operation,
            format!("{} counts for {size} ranks", counts.len()),
        ));
    }
    let total: usize = counts.iter().sum();
    if total != len {
        return Err(invalid(
            operation,
            format!("counts sum to {total} but the buffer holds {len}"),
        ));
    }
    Ok(())
}

pub(crate) fn invalid(operation: &'static str, problem: String) -> CommError {
    CommError::InvalidArgument { operation, problem }
}
