//! The typed communicator API programs call (rsmpi style), implemented for every [`Comm`]
//! (trait objects included). Each call is recorded in the hook layer.

use super::{as_bytes, as_bytes_mut, check_rank, Comm, CommError, Element, ReduceOp, Tag, Traffic};
use crate::hooks::{self, CallKind, CommStart};

/// Typed point-to-point and collective operations over slices of [`Element`]s. Counts in the
/// `_varcount` forms are in elements. Zero-length slices are allowed everywhere.
pub trait CommExt: Comm {
    /// Send `data` to `dest` with tag 0.
    fn send<T: Element>(&self, dest: usize, data: &[T]) -> Result<(), CommError> {
        self.send_with_tag(dest, 0, data)
    }

    /// Send `data` to `dest` with `tag` (buffered: returns at once).
    fn send_with_tag<T: Element>(
        &self,
        dest: usize,
        tag: Tag,
        data: &[T],
    ) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        check_user(dest, tag, self.size())?;
        let t = self.send_bytes(dest, tag, as_bytes(data))?;
        hooks::comm_end(start, CallKind::Send, Some(dest), &t);
        Ok(())
    }

    /// Receive the next tag-0 message from `source` into `buf` (lengths must match).
    fn receive_into<T: Element>(&self, source: usize, buf: &mut [T]) -> Result<(), CommError> {
        self.receive_into_with_tag(source, 0, buf)
    }

    /// Receive the next message from `source` with `tag` into `buf`.
    fn receive_into_with_tag<T: Element>(
        &self,
        source: usize,
        tag: Tag,
        buf: &mut [T],
    ) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        check_user(source, tag, self.size())?;
        let t = self.receive_bytes(source, tag, as_bytes_mut(buf))?;
        hooks::comm_end(start, CallKind::Receive, Some(source), &t);
        Ok(())
    }

    /// Start a send; `data` stays borrowed until the request completes.
    fn immediate_send<'a, T: Element>(
        &'a self,
        dest: usize,
        tag: Tag,
        data: &'a [T],
    ) -> Result<Request<'a, Self>, CommError> {
        let start = hooks::comm_begin();
        check_user(dest, tag, self.size())?;
        let t = self.send_bytes(dest, tag, as_bytes(data))?;
        hooks::comm_end(start, CallKind::ImmediateSend, Some(dest), &t);
        Ok(Request { pending: None })
    }

    /// Start a receive into `buf`; it completes in [`Request::wait`] or a successful
    /// [`Request::test`].
    fn immediate_receive_into<'a, T: Element>(
        &'a self,
        source: usize,
        tag: Tag,
        buf: &'a mut [T],
    ) -> Result<Request<'a, Self>, CommError> {
        check_user(source, tag, self.size())?;
        Ok(Request {
            pending: Some(PendingReceive {
                comm: self,
                source,
                tag,
                buf: as_bytes_mut(buf),
            }),
        })
    }

    /// Wait until every rank has reached the barrier.
    fn barrier(&self) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        let t = self.barrier_bytes()?;
        hooks::comm_end(start, CallKind::Barrier, None, &t);
        Ok(())
    }

    /// Copy root's `buf` into every rank's `buf`.
    fn broadcast<T: Element>(&self, root: usize, buf: &mut [T]) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        let t = self.broadcast_bytes(root, as_bytes_mut(buf))?;
        hooks::comm_end(start, CallKind::Broadcast, Some(root), &t);
        Ok(())
    }

    /// Element-wise `op` over every rank's `send` into root's `recv` (ignored elsewhere).
    fn reduce<T: Element>(
        &self,
        root: usize,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        let t = self.reduce_bytes(root, T::KIND, op, as_bytes(send), as_bytes_mut(recv))?;
        hooks::comm_end(start, CallKind::Reduce, Some(root), &t);
        Ok(())
    }

    /// Element-wise `op` over every rank's `send`, result on every rank.
    fn all_reduce<T: Element>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        let t = self.all_reduce_bytes(T::KIND, op, as_bytes(send), as_bytes_mut(recv))?;
        hooks::comm_end(start, CallKind::AllReduce, None, &t);
        Ok(())
    }

    /// All-reduce of one value.
    fn all_reduce_value<T: Element>(&self, value: T, op: ReduceOp) -> Result<T, CommError> {
        let mut out = [value];
        self.all_reduce(&[value], &mut out, op)?;
        Ok(out[0])
    }

    /// Root receives every rank's `send` (equal lengths) in rank order; `recv` holds
    /// `size × send.len()` elements on the root and is ignored elsewhere.
    fn gather<T: Element>(&self, root: usize, send: &[T], recv: &mut [T]) -> Result<(), CommError> {
        let counts = vec![send.len(); self.size()];
        gather_impl(self, root, send, recv, &counts, self.rank() == root)
    }

    /// Root receives `counts[r]` elements from each rank `r`, in rank order.
    fn gather_varcount<T: Element>(
        &self,
        root: usize,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
    ) -> Result<(), CommError> {
        gather_impl(self, root, send, recv, counts, self.rank() == root)
    }

    /// Rank `r` receives the `r`-th `recv.len()`-element block of root's `send`.
    fn scatter<T: Element>(
        &self,
        root: usize,
        send: &[T],
        recv: &mut [T],
    ) -> Result<(), CommError> {
        let counts = vec![recv.len(); self.size()];
        self.scatter_varcount(root, send, &counts, recv)
    }

    /// Rank `r` receives `counts[r]` elements of root's `send`, blocks laid out in rank order.
    fn scatter_varcount<T: Element>(
        &self,
        root: usize,
        send: &[T],
        counts: &[usize],
        recv: &mut [T],
    ) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        let bytes = byte_counts(counts, std::mem::size_of::<T>());
        let t = self.scatter_bytes(root, as_bytes(send), &bytes, as_bytes_mut(recv))?;
        hooks::comm_end(start, CallKind::Scatter, Some(root), &t);
        Ok(())
    }

    /// Every rank receives every rank's `send` (equal lengths), concatenated in rank order.
    fn all_gather<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<(), CommError> {
        let counts = vec![send.len(); self.size()];
        self.all_gather_varcount(send, recv, &counts)
    }

    /// Every rank receives `counts[r]` elements from each rank `r`, in rank order.
    fn all_gather_varcount<T: Element>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
    ) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        let bytes = byte_counts(counts, std::mem::size_of::<T>());
        let t = self.all_gather_bytes(as_bytes(send), as_bytes_mut(recv), &bytes)?;
        hooks::comm_end(start, CallKind::AllGather, None, &t);
        Ok(())
    }

    /// Block `q` of `send` (all blocks `send.len() / size` long) goes to rank `q`; block `q` of
    /// `recv` comes from rank `q`.
    fn all_to_all<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<(), CommError> {
        let p = self.size();
        if send.len() % p != 0 || recv.len() != send.len() {
            return Err(CommError::InvalidArgument {
                operation: "all_to_all",
                problem: format!(
                    "send ({}) and receive ({}) must be equal multiples of the {p} ranks",
                    send.len(),
                    recv.len()
                ),
            });
        }
        let counts = vec![send.len() / p; p];
        self.all_to_all_varcount(send, &counts, recv, &counts)
    }

    /// `send_counts[q]` elements go to rank `q`; `recv_counts[q]` elements come from rank `q`.
    fn all_to_all_varcount<T: Element>(
        &self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        let size = std::mem::size_of::<T>();
        let (sc, rc) = (
            byte_counts(send_counts, size),
            byte_counts(recv_counts, size),
        );
        let t = self.all_to_all_bytes(as_bytes(send), &sc, as_bytes_mut(recv), &rc)?;
        hooks::comm_end(start, CallKind::AllToAll, None, &t);
        Ok(())
    }
}

impl<C: Comm + ?Sized> CommExt for C {}

fn gather_impl<C: Comm + ?Sized, T: Element>(
    c: &C,
    root: usize,
    send: &[T],
    recv: &mut [T],
    counts: &[usize],
    is_root: bool,
) -> Result<(), CommError> {
    let start = hooks::comm_begin();
    let bytes = byte_counts(counts, std::mem::size_of::<T>());
    let recv: &mut [u8] = if is_root { as_bytes_mut(recv) } else { &mut [] };
    let t = c.gather_bytes(root, as_bytes(send), recv, &bytes)?;
    hooks::comm_end(start, CallKind::Gather, Some(root), &t);
    Ok(())
}

fn byte_counts(counts: &[usize], size: usize) -> Vec<usize> {
    counts.iter().map(|&n| n * size).collect()
}

fn check_user(peer: usize, tag: Tag, size: usize) -> Result<(), CommError> {
    check_rank(peer, size)?;
    if tag < 0 {
        return Err(CommError::InvalidTag(tag));
    }
    Ok(())
}

/// A non-blocking operation in flight. Sends are buffered, so a send request is complete from the
/// start; a receive request completes in [`wait`](Request::wait) or a successful
/// [`test`](Request::test).
#[must_use = "a receive request must be waited on"]
pub struct Request<'a, C: Comm + ?Sized> {
    pending: Option<PendingReceive<'a, C>>,
}

struct PendingReceive<'a, C: Comm + ?Sized> {
    comm: &'a C,
    source: usize,
    tag: Tag,
    buf: &'a mut [u8],
}

impl<C: Comm + ?Sized> Request<'_, C> {
    /// Block until the operation completes.
    pub fn wait(mut self) -> Result<(), CommError> {
        if let Some(p) = self.pending.take() {
            let start = hooks::comm_begin();
            let t = p.comm.receive_bytes(p.source, p.tag, p.buf)?;
            hooks::comm_end(start, CallKind::Receive, Some(p.source), &t);
        }
        Ok(())
    }

    /// Complete the operation if possible without waiting; true once it has completed.
    pub fn test(&mut self) -> Result<bool, CommError> {
        let Some(p) = self.pending.as_mut() else {
            return Ok(true);
        };
        let start: CommStart = hooks::comm_begin();
        match p.comm.try_receive_bytes(p.source, p.tag, p.buf)? {
            Some(t) => {
                hooks::comm_end(start, CallKind::Receive, Some(p.source), &t);
                self.pending = None;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// True once the operation has completed.
    pub fn is_complete(&self) -> bool {
        self.pending.is_none()
    }
}

/// Wait for every request, in order.
pub fn wait_all<C: Comm + ?Sized>(requests: Vec<Request<'_, C>>) -> Result<(), CommError> {
    requests.into_iter().try_for_each(Request::wait)
}

impl Traffic {
    /// True when nothing moved (a zero-rank or self-only operation).
    pub fn is_empty(&self) -> bool {
        self.messages_sent == 0 && self.messages_received == 0
    }
}
