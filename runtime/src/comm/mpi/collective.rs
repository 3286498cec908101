//! Collectives over MPI's non-blocking collectives (`MPI_Ibcast`, `MPI_Igatherv`, …), completed
//! by polling so that a rank waiting on a peer that finished its work does not hang.
//!
//! - Results equal the threads backend's exactly. Integer reductions use MPI's built-in
//!   operators (exact in any order, integer sums and products wrap). Floating-point reductions
//!   are not associative, so they gather the contributions and fold them in rank order,
//!   `x_0 op x_1 op … op x_{P−1}`, as the linear algorithms of `comm::collectives` do.
//! - The [`Traffic`] a call reports is that of the linear algorithms (rank 0 or the root talks
//!   to every other rank), which is what the measurements and the model assume, whatever
//!   algorithm the MPI library chooses. The time spent waiting for the operation to complete
//!   after starting it is its blocked time.

use std::os::raw::{c_int, c_void};

use mpi::ffi;

use crate::comm::collectives::{check_counts, check_gather_layout, check_scatter_layout, invalid};
use crate::comm::{check_rank, reduce_bytes, Comm, CommError, ElemKind, ReduceOp, Traffic};

/// What the collectives need of a transport: a communicator (rank and size) that starts one
/// non-blocking MPI collective at a time and waits for it to complete. The transport
/// (`super::transport::MpiComm`) implements it with its lock and its polling wait; this module
/// does not know the transport, so the two do not import each other.
pub(super) trait Nonblocking: Comm {
    /// Start a non-blocking collective: `start` makes the MPI call on the raw communicator and
    /// request.
    fn start(
        &self,
        call: &str,
        start: impl FnOnce(ffi::MPI_Comm, &mut ffi::MPI_Request) -> c_int,
    ) -> Result<ffi::MPI_Request, CommError>;

    /// Wait for `request` to complete; returns the seconds waited (blocked time).
    fn complete(
        &self,
        operation: &'static str,
        request: ffi::MPI_Request,
    ) -> Result<f64, CommError>;
}

/// A buffer length as an MPI count.
pub(super) fn count(len: usize, operation: &'static str) -> Result<c_int, CommError> {
    c_int::try_from(len).map_err(|_| CommError::InvalidArgument {
        operation,
        problem: format!("{len} bytes exceed MPI's count limit"),
    })
}

/// MPI counts and displacements of byte blocks laid out in rank order.
fn layout(
    operation: &'static str,
    counts: &[usize],
) -> Result<(Vec<c_int>, Vec<c_int>), CommError> {
    let mut displs = Vec::with_capacity(counts.len());
    let mut offset = 0usize;
    for &n in counts {
        displs.push(count(offset, operation)?);
        offset += n;
    }
    let counts = counts
        .iter()
        .map(|&n| count(n, operation))
        .collect::<Result<_, _>>()?;
    Ok((counts, displs))
}

/// `n` messages of `bytes` in total.
fn traffic(sent: (usize, usize), received: (usize, usize), blocked_s: f64) -> Traffic {
    Traffic {
        messages_sent: sent.0 as u32,
        bytes_sent: sent.1 as u64,
        messages_received: received.0 as u32,
        bytes_received: received.1 as u64,
        blocked_s,
    }
}

/// The MPI datatype of an integer kind (floating-point kinds are folded in rank order instead).
fn int_datatype(kind: ElemKind) -> Option<ffi::MPI_Datatype> {
    // SAFETY: the RSMPI_* datatype handles are constants initialised by the C shim.
    unsafe {
        Some(match kind {
            ElemKind::U8 => ffi::RSMPI_UINT8_T,
            ElemKind::I8 => ffi::RSMPI_INT8_T,
            ElemKind::U16 => ffi::RSMPI_UINT16_T,
            ElemKind::I16 => ffi::RSMPI_INT16_T,
            ElemKind::U32 => ffi::RSMPI_UINT32_T,
            ElemKind::I32 => ffi::RSMPI_INT32_T,
            ElemKind::U64 => ffi::RSMPI_UINT64_T,
            ElemKind::I64 => ffi::RSMPI_INT64_T,
            ElemKind::Usize if ElemKind::Usize.size() == 8 => ffi::RSMPI_UINT64_T,
            ElemKind::Usize => ffi::RSMPI_UINT32_T,
            ElemKind::Isize if ElemKind::Isize.size() == 8 => ffi::RSMPI_INT64_T,
            ElemKind::Isize => ffi::RSMPI_INT32_T,
            ElemKind::F32 | ElemKind::F64 => return None,
        })
    }
}

fn mpi_op(op: ReduceOp) -> ffi::MPI_Op {
    // SAFETY: the RSMPI_* operator handles are constants initialised by the C shim.
    unsafe {
        match op {
            ReduceOp::Sum => ffi::RSMPI_SUM,
            ReduceOp::Prod => ffi::RSMPI_PROD,
            ReduceOp::Min => ffi::RSMPI_MIN,
            ReduceOp::Max => ffi::RSMPI_MAX,
        }
    }
}

/// Distinct addresses for empty buffers: empty slices may share one dangling address, and MPI
/// rejects a send buffer equal to the receive buffer. Nothing is read or written through them.
static EMPTY_SEND: u8 = 0;
static EMPTY_RECV: u8 = 0;

fn send_ptr(buf: &[u8]) -> *const c_void {
    if buf.is_empty() {
        std::ptr::addr_of!(EMPTY_SEND).cast()
    } else {
        buf.as_ptr().cast()
    }
}

fn recv_ptr(buf: &mut [u8]) -> *mut c_void {
    if buf.is_empty() {
        std::ptr::addr_of!(EMPTY_RECV).cast_mut().cast()
    } else {
        buf.as_mut_ptr().cast()
    }
}

fn bytes() -> ffi::MPI_Datatype {
    // SAFETY: a constant handle initialised by the C shim.
    unsafe { ffi::RSMPI_UINT8_T }
}

pub fn barrier(c: &impl Nonblocking) -> Result<Traffic, CommError> {
    // SAFETY (closure): valid communicator and request pointer.
    let request = c.start("MPI_Ibarrier", |comm, req| unsafe {
        ffi::MPI_Ibarrier(comm, req)
    })?;
    let blocked = c.complete("barrier", request)?;
    let others = c.size() - 1;
    Ok(if c.rank() == 0 {
        traffic((others, 0), (others, 0), blocked)
    } else {
        traffic((1, 0), (1, 0), blocked)
    })
}

pub fn broadcast(c: &impl Nonblocking, root: usize, buf: &mut [u8]) -> Result<Traffic, CommError> {
    check_rank(root, c.size())?;
    let n = count(buf.len(), "broadcast")?;
    let ptr = recv_ptr(buf);
    // SAFETY (closure): `buf` stays borrowed until `complete` returns.
    let request = c.start("MPI_Ibcast", |comm, req| unsafe {
        ffi::MPI_Ibcast(ptr, n, bytes(), root as c_int, comm, req)
    })?;
    let blocked = c.complete("broadcast", request)?;
    let others = c.size() - 1;
    Ok(if c.rank() == root {
        traffic((others, others * buf.len()), (0, 0), blocked)
    } else {
        traffic((0, 0), (1, buf.len()), blocked)
    })
}

/// Every rank's `send` (equal lengths) concatenated in rank order, on `root` (`Some`) or on
/// every rank (`None`). Returns the blocked time.
fn collect_equal(
    c: &impl Nonblocking,
    root: Option<usize>,
    send: &[u8],
    all: &mut [u8],
) -> Result<f64, CommError> {
    let n = count(send.len(), "reduce")?;
    let (sp, rp) = (send_ptr(send), recv_ptr(all));
    // SAFETY (closures): `send` and `all` (size × send.len() bytes where written) stay borrowed
    // until `complete` returns.
    let request = match root {
        Some(root) => c.start("MPI_Igather", |comm, req| unsafe {
            ffi::MPI_Igather(sp, n, bytes(), rp, n, bytes(), root as c_int, comm, req)
        })?,
        None => c.start("MPI_Iallgather", |comm, req| unsafe {
            ffi::MPI_Iallgather(sp, n, bytes(), rp, n, bytes(), comm, req)
        })?,
    };
    c.complete("reduce", request)
}

/// Fold rank-ordered contributions of `part` bytes each into `recv`.
fn fold(kind: ElemKind, op: ReduceOp, all: &[u8], recv: &mut [u8]) {
    let part = recv.len();
    recv.copy_from_slice(&all[..part]);
    if part > 0 {
        for contribution in all.chunks_exact(part).skip(1) {
            reduce_bytes(kind, op, recv, contribution);
        }
    }
}

pub fn reduce(
    c: &impl Nonblocking,
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
    let is_root = c.rank() == root;
    if is_root && recv.len() != send.len() {
        return Err(invalid(
            "reduce",
            format!(
                "root's receive buffer has {} bytes, the contributions {}",
                recv.len(),
                send.len()
            ),
        ));
    }
    let blocked = match int_datatype(kind) {
        Some(datatype) => {
            let n = count(send.len() / kind.size(), "reduce")?;
            let sp = send_ptr(send);
            let rp = recv_ptr(recv);
            // SAFETY (closure): both buffers stay borrowed until `complete` returns; MPI only
            // writes `recv` on the root, where it holds `send.len()` bytes.
            let request = c.start("MPI_Ireduce", |comm, req| unsafe {
                ffi::MPI_Ireduce(sp, rp, n, datatype, mpi_op(op), root as c_int, comm, req)
            })?;
            c.complete("reduce", request)?
        }
        None => {
            let mut all = vec![0u8; if is_root { send.len() * c.size() } else { 0 }];
            let blocked = collect_equal(c, Some(root), send, &mut all)?;
            if is_root {
                fold(kind, op, &all, recv);
            }
            blocked
        }
    };
    let others = c.size() - 1;
    Ok(if is_root {
        traffic((0, 0), (others, others * send.len()), blocked)
    } else {
        traffic((1, send.len()), (0, 0), blocked)
    })
}

pub fn all_reduce(
    c: &impl Nonblocking,
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
    if send.len() % kind.size() != 0 {
        return Err(invalid(
            "reduce",
            format!("{} bytes is not a whole number of elements", send.len()),
        ));
    }
    let blocked = match int_datatype(kind) {
        Some(datatype) => {
            let n = count(send.len() / kind.size(), "all_reduce")?;
            let sp = send_ptr(send);
            let rp = recv_ptr(recv);
            // SAFETY (closure): both buffers stay borrowed until `complete` returns.
            let request = c.start("MPI_Iallreduce", |comm, req| unsafe {
                ffi::MPI_Iallreduce(sp, rp, n, datatype, mpi_op(op), comm, req)
            })?;
            c.complete("all_reduce", request)?
        }
        None => {
            let mut all = vec![0u8; send.len() * c.size()];
            let blocked = collect_equal(c, None, send, &mut all)?;
            fold(kind, op, &all, recv);
            blocked
        }
    };
    let (others, len) = (c.size() - 1, send.len());
    Ok(if c.rank() == 0 {
        traffic((others, others * len), (others, others * len), blocked)
    } else {
        traffic((1, len), (1, len), blocked)
    })
}

pub fn gather(
    c: &impl Nonblocking,
    root: usize,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
) -> Result<Traffic, CommError> {
    check_rank(root, c.size())?;
    let is_root = c.rank() == root;
    let (rcounts, displs) = if is_root {
        check_gather_layout(c.size(), root, counts, recv.len(), send.len())?;
        layout("gather", counts)?
    } else {
        (Vec::new(), Vec::new())
    };
    let n = count(send.len(), "gather")?;
    let (sp, rp) = (send_ptr(send), recv_ptr(recv));
    // SAFETY (closure): buffers and layouts stay alive until `complete` returns; the receive
    // layout is only read on the root, where it was checked against `recv`.
    let request = c.start("MPI_Igatherv", |comm, req| unsafe {
        ffi::MPI_Igatherv(
            sp,
            n,
            bytes(),
            rp,
            rcounts.as_ptr(),
            displs.as_ptr(),
            bytes(),
            root as c_int,
            comm,
            req,
        )
    })?;
    let blocked = c.complete("gather", request)?;
    Ok(if is_root {
        let total: usize = counts.iter().sum();
        traffic((0, 0), (c.size() - 1, total - counts[root]), blocked)
    } else {
        traffic((1, send.len()), (0, 0), blocked)
    })
}

pub fn scatter(
    c: &impl Nonblocking,
    root: usize,
    send: &[u8],
    counts: &[usize],
    recv: &mut [u8],
) -> Result<Traffic, CommError> {
    check_rank(root, c.size())?;
    let is_root = c.rank() == root;
    let (scounts, displs) = if is_root {
        check_scatter_layout(c.size(), root, counts, send.len(), recv.len())?;
        layout("scatter", counts)?
    } else {
        (Vec::new(), Vec::new())
    };
    let n = count(recv.len(), "scatter")?;
    let (sp, rp) = (send_ptr(send), recv_ptr(recv));
    // SAFETY (closure): as in `gather`, with the roles of the buffers swapped.
    let request = c.start("MPI_Iscatterv", |comm, req| unsafe {
        ffi::MPI_Iscatterv(
            sp,
            scounts.as_ptr(),
            displs.as_ptr(),
            bytes(),
            rp,
            n,
            bytes(),
            root as c_int,
            comm,
            req,
        )
    })?;
    let blocked = c.complete("scatter", request)?;
    Ok(if is_root {
        let total: usize = counts.iter().sum();
        traffic((c.size() - 1, total - counts[root]), (0, 0), blocked)
    } else {
        traffic((0, 0), (1, recv.len()), blocked)
    })
}

pub fn all_gather(
    c: &impl Nonblocking,
    send: &[u8],
    recv: &mut [u8],
    counts: &[usize],
) -> Result<Traffic, CommError> {
    check_counts("all_gather", c.size(), counts, recv.len())?;
    let me = c.rank();
    if counts[me] != send.len() {
        return Err(invalid(
            "all_gather",
            format!(
                "this rank contributes {} bytes but counts[{me}] is {}",
                send.len(),
                counts[me]
            ),
        ));
    }
    let (rcounts, displs) = layout("all_gather", counts)?;
    let n = count(send.len(), "all_gather")?;
    let (sp, rp) = (send_ptr(send), recv_ptr(recv));
    // SAFETY (closure): buffers and layouts stay alive until `complete` returns; the layout was
    // checked against `recv`.
    let request = c.start("MPI_Iallgatherv", |comm, req| unsafe {
        ffi::MPI_Iallgatherv(
            sp,
            n,
            bytes(),
            rp,
            rcounts.as_ptr(),
            displs.as_ptr(),
            bytes(),
            comm,
            req,
        )
    })?;
    let blocked = c.complete("all_gather", request)?;
    let (others, total) = (c.size() - 1, recv.len());
    Ok(if me == 0 {
        traffic(
            (others, others * total),
            (others, total - counts[0]),
            blocked,
        )
    } else {
        traffic((1, send.len()), (1, total), blocked)
    })
}

pub fn all_to_all(
    c: &impl Nonblocking,
    send: &[u8],
    send_counts: &[usize],
    recv: &mut [u8],
    recv_counts: &[usize],
) -> Result<Traffic, CommError> {
    check_counts("all_to_all (send)", c.size(), send_counts, send.len())?;
    check_counts("all_to_all (receive)", c.size(), recv_counts, recv.len())?;
    let me = c.rank();
    if send_counts[me] != recv_counts[me] {
        return Err(invalid(
            "all_to_all",
            format!(
                "rank {me} sends itself {} bytes but expects {}",
                send_counts[me], recv_counts[me]
            ),
        ));
    }
    let (sc, sd) = layout("all_to_all", send_counts)?;
    let (rc, rd) = layout("all_to_all", recv_counts)?;
    let (sp, rp) = (send_ptr(send), recv_ptr(recv));
    // SAFETY (closure): buffers and layouts stay alive until `complete` returns; both layouts
    // were checked against their buffers.
    let request = c.start("MPI_Ialltoallv", |comm, req| unsafe {
        ffi::MPI_Ialltoallv(
            sp,
            sc.as_ptr(),
            sd.as_ptr(),
            bytes(),
            rp,
            rc.as_ptr(),
            rd.as_ptr(),
            bytes(),
            comm,
            req,
        )
    })?;
    let blocked = c.complete("all_to_all", request)?;
    let others = c.size() - 1;
    let sent: usize = send_counts.iter().sum::<usize>() - send_counts[me];
    let received: usize = recv_counts.iter().sum::<usize>() - recv_counts[me];
    Ok(traffic((others, sent), (others, received), blocked))
}
