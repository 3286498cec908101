//! The typed communicator API programs call (rsmpi style), implemented for every [`Comm`]
//! (trait objects included). Each call is recorded in the hook layer.

use super::{as_bytes, as_bytes_mut, check_rank, Comm, CommError, Element, ReduceOp, Tag, Traffic};
use crate::hooks::{self, CallKind, CommStart};

/// Typed point-to-point and collective operations over slices of [`Element`]s. Counts in the
/// `_varcount` forms are in elements. Zero-length slices are allowed everywhere.
///
/// Bring it into scope and call it on [`Context::comm`](crate::Context::comm):
///
/// ```
/// use mheta_runtime::{launch, Args, CommExt, ReduceOp};
///
/// let args = Args::try_parse_from(["prog", "--ranks", "4", "--rows", "4"])?;
/// let results = launch(&args, |ctx| {
///     let comm = ctx.comm();
///     let mut step = [0.0];
///     if ctx.rank() == 0 {
///         step[0] = 0.5;
///     }
///     comm.broadcast(0, &mut step)?; // every rank now has rank 0's value
///     let local = step[0] * ctx.rank() as f64;
///     comm.all_reduce_value(local, ReduceOp::Max) // 0.5 × 3 on every rank
/// })?;
/// assert_eq!(results, vec![1.5; 4]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait CommExt: Comm {
    /// Send `data` to `dest` with tag 0.
    ///
    /// A halo exchange with the rank above and the rank below. Sends are buffered and return at
    /// once, so sending before receiving cannot deadlock:
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommError, CommExt};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "3", "--rows", "3"])?;
    /// let halos = launch(&args, |ctx| {
    ///     let (rank, size, comm) = (ctx.rank(), ctx.size(), ctx.comm());
    ///     let mine = [rank as f64 * 10.0];
    ///     let (mut above, mut below) = ([-1.0], [-1.0]);
    ///     if rank > 0 {
    ///         comm.send(rank - 1, &mine)?;
    ///     }
    ///     if rank + 1 < size {
    ///         comm.send(rank + 1, &mine)?;
    ///         comm.receive_into(rank + 1, &mut below)?;
    ///     }
    ///     if rank > 0 {
    ///         comm.receive_into(rank - 1, &mut above)?;
    ///     }
    ///     Ok::<_, CommError>((above[0], below[0]))
    /// })?;
    /// assert_eq!(halos, vec![(-1.0, 10.0), (0.0, 20.0), (10.0, -1.0)]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn send<T: Element>(&self, dest: usize, data: &[T]) -> Result<(), CommError> {
        self.send_with_tag(dest, 0, data)
    }

    /// Send `data` to `dest` with `tag` (buffered: returns at once).
    ///
    /// Messages between one pair of ranks with one tag arrive in the order they were sent; a
    /// receive picks the next message with its tag, so tags keep two streams apart:
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommError, CommExt};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "2", "--rows", "2"])?;
    /// let got = launch(&args, |ctx| {
    ///     let comm = ctx.comm();
    ///     let (mut a, mut b) = ([0u32], [0u32]);
    ///     if ctx.rank() == 0 {
    ///         comm.send_with_tag(1, 7, &[70u32])?;
    ///         comm.send_with_tag(1, 8, &[80u32])?;
    ///     } else {
    ///         comm.receive_into_with_tag(0, 8, &mut b)?; // out of order: by tag
    ///         comm.receive_into_with_tag(0, 7, &mut a)?;
    ///     }
    ///     Ok::<_, CommError>((a[0], b[0]))
    /// })?;
    /// assert_eq!(got[1], (70, 80));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// A message whose length differs from `buf`'s is [`CommError::SizeMismatch`]. See
    /// [`send`](CommExt::send) for an example.
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
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommError, CommExt};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "2", "--rows", "2"])?;
    /// let got = launch(&args, |ctx| {
    ///     let comm = ctx.comm();
    ///     let peer = 1 - ctx.rank();
    ///     let mut from_peer = [0i64];
    ///     let request = comm.immediate_receive_into(peer, 0, &mut from_peer)?;
    ///     comm.send(peer, &[ctx.rank() as i64 + 100])?;
    ///     request.wait()?; // `from_peer` is borrowed until here
    ///     Ok::<_, CommError>(from_peer[0])
    /// })?;
    /// assert_eq!(got, vec![101, 100]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommExt};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "2", "--rows", "2"])?;
    /// launch(&args, |ctx| ctx.comm().barrier())?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn barrier(&self) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        let t = self.barrier_bytes()?;
        hooks::comm_end(start, CallKind::Barrier, None, &t);
        Ok(())
    }

    /// Copy root's `buf` into every rank's `buf`.
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommError, CommExt};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "3", "--rows", "3"])?;
    /// let got = launch(&args, |ctx| {
    ///     let mut params = [0.0f64; 2];
    ///     if ctx.rank() == 2 {
    ///         params = [1e-6, 0.25];
    ///     }
    ///     ctx.comm().broadcast(2, &mut params)?;
    ///     Ok::<_, CommError>(params)
    /// })?;
    /// assert_eq!(got, vec![[1e-6, 0.25]; 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn broadcast<T: Element>(&self, root: usize, buf: &mut [T]) -> Result<(), CommError> {
        let start = hooks::comm_begin();
        let t = self.broadcast_bytes(root, as_bytes_mut(buf))?;
        hooks::comm_end(start, CallKind::Broadcast, Some(root), &t);
        Ok(())
    }

    /// Element-wise `op` over every rank's `send` into root's `recv` (ignored elsewhere).
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommError, CommExt, ReduceOp};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "3", "--rows", "3"])?;
    /// let got = launch(&args, |ctx| {
    ///     let r = ctx.rank() as u64;
    ///     let mut total = [0u64; 2];
    ///     ctx.comm().reduce(0, &[r, 10 * r], &mut total, ReduceOp::Sum)?;
    ///     Ok::<_, CommError>(total)
    /// })?;
    /// assert_eq!(got[0], [3, 30]); // only the root's `recv` is written
    /// assert_eq!(got[1], [0, 0]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// Contributions are combined in rank order, so a floating-point sum is the same on every rank
    /// and in every run.
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommError, CommExt, ReduceOp};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "2", "--rows", "2"])?;
    /// let got = launch(&args, |ctx| {
    ///     let r = ctx.rank() as f64;
    ///     let mut out = [0.0; 2];
    ///     ctx.comm().all_reduce(&[r, -r], &mut out, ReduceOp::Min)?;
    ///     Ok::<_, CommError>(out)
    /// })?;
    /// assert_eq!(got, vec![[0.0, -1.0]; 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommExt, ReduceOp};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "3", "--rows", "3"])?;
    /// let got = launch(&args, |ctx| ctx.comm().all_reduce_value(ctx.rank() + 1, ReduceOp::Prod))?;
    /// assert_eq!(got, vec![6, 6, 6]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn all_reduce_value<T: Element>(&self, value: T, op: ReduceOp) -> Result<T, CommError> {
        let mut out = [value];
        self.all_reduce(&[value], &mut out, op)?;
        Ok(out[0])
    }

    /// Root receives every rank's `send` (equal lengths) in rank order; `recv` holds
    /// `size × send.len()` elements on the root and is ignored elsewhere.
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommError, CommExt};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "3", "--rows", "3"])?;
    /// let got = launch(&args, |ctx| {
    ///     let r = ctx.rank() as i32;
    ///     let mut all = vec![0; 2 * ctx.size()];
    ///     ctx.comm().gather(0, &[r, -r], &mut all)?;
    ///     Ok::<_, CommError>(all)
    /// })?;
    /// assert_eq!(got[0], [0, 0, 1, -1, 2, -2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommError, CommExt};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "3", "--rows", "3"])?;
    /// let got = launch(&args, |ctx| {
    ///     let mut all = [0u8; 3];
    ///     ctx.comm().all_gather(&[ctx.rank() as u8], &mut all)?;
    ///     Ok::<_, CommError>(all)
    /// })?;
    /// assert_eq!(got, vec![[0, 1, 2]; 3]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    fn all_gather<T: Element>(&self, send: &[T], recv: &mut [T]) -> Result<(), CommError> {
        let counts = vec![send.len(); self.size()];
        self.all_gather_varcount(send, recv, &counts)
    }

    /// Every rank receives `counts[r]` elements from each rank `r`, in rank order.
    ///
    /// A distributed vector assembled on every rank, each rank holding its own rows of it (CG's
    /// all-gather of `p`):
    ///
    /// ```
    /// use mheta_runtime::{launch, Args, CommError, CommExt};
    ///
    /// let args = Args::try_parse_from(["prog", "--ranks", "2", "--distribution", "1,3"])?;
    /// let got = launch(&args, |ctx| {
    ///     let n = ctx.rows() as usize;
    ///     let mine: Vec<f64> = ctx.partition(n).map(|i| i as f64).collect();
    ///     let counts: Vec<usize> = ctx.distribution().iter().map(|&r| r as usize).collect();
    ///     let mut whole = vec![0.0; n];
    ///     ctx.comm().all_gather_varcount(&mine, &mut whole, &counts)?;
    ///     Ok::<_, CommError>(whole)
    /// })?;
    /// assert_eq!(got, vec![vec![0.0, 1.0, 2.0, 3.0]; 2]);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
