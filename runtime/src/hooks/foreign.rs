//! Recording communication calls the program makes through rsmpi directly (an attached
//! program): `#[mheta::solver]` wraps each catalogued call site in [`begin`] and [`end`], with
//! the call's peer and message size read by [`Peer`] and [`Message`].
//!
//! Both readers work on any type, so a wrapped call site always compiles: a `Process` gives its
//! rank and a buffer rsmpi can send gives its size in bytes (feature `mpi`); anything else gives
//! no peer and 0 bytes ("not known"). They use autoref specialisation: the call site writes
//! `(&Peer(&x)).peer()`, which takes the `ProcessPeer` method when `x` is a `Process` and the
//! `AnyPeer` method (one more auto-reference away) otherwise.

use super::{comm_begin, comm_end_from, CallKind, CommStart, GroupId};
use crate::comm::Traffic;

/// The start of a wrapped call.
#[inline]
pub fn begin() -> CommStart {
    #[cfg(feature = "mpi")]
    super::pmpi::wrapped_begin();
    comm_begin()
}

/// Records a wrapped call that began at `start`. A call that waits for other ranks (`blocks`:
/// blocking receives, exchanges, collectives, request completion) counts its whole duration as
/// blocked time; a send counts it as overhead. `source` is the rank an exchange received from
/// (`send_receive_into(&x, &peer, &mut y, &source)`), `None` for any other call. `group` is the
/// world ranks a collective ran among, read by [`Members`] (`None`: the whole world).
#[allow(clippy::too_many_arguments)] // One call per wrapped call site, written by the macro.
#[inline]
pub fn end(
    start: CommStart,
    call: CallKind,
    peer: Option<usize>,
    source: Option<usize>,
    group: Option<GroupId>,
    sent: u64,
    received: u64,
    blocks: bool,
) {
    let traffic = Traffic {
        messages_sent: u32::from(sent > 0),
        messages_received: u32::from(received > 0),
        bytes_sent: sent,
        bytes_received: received,
        blocked_s: 0.0,
    };
    #[cfg(feature = "mpi")]
    super::pmpi::wrapped_end();
    comm_end_from(start.blocking(blocks), call, peer, source, group, &traffic);
}

/// Reads a call's peer: see the module documentation.
pub struct Peer<'a, T: ?Sized>(pub &'a T);

/// The peer of an rsmpi `Process` (feature `mpi`).
pub trait ProcessPeer {
    /// The process's rank.
    fn peer(&self) -> Option<usize>;
}

/// No peer known.
pub trait AnyPeer {
    /// Always `None`.
    fn peer(&self) -> Option<usize>;
}

impl<T: ?Sized> AnyPeer for &Peer<'_, T> {
    fn peer(&self) -> Option<usize> {
        None
    }
}

#[cfg(feature = "mpi")]
impl ProcessPeer for Peer<'_, mpi::topology::Process<'_>> {
    fn peer(&self) -> Option<usize> {
        world_rank(self.0)
    }
}

#[cfg(feature = "mpi")]
impl ProcessPeer for Peer<'_, &mpi::topology::Process<'_>> {
    fn peer(&self) -> Option<usize> {
        world_rank(self.0)
    }
}

/// The world rank of `process`, which names a rank of its own communicator: a process of a
/// communicator split off the world (`world.split_by_color(c)`) has another rank there than in
/// the world, and the session's ranks, peers and measurements are world ranks. `None` for a
/// process outside the world's group (none in a program that never spawns), and for one of an
/// inter-communicator, whose ranks name its remote group (which rsmpi does not give for a
/// `Process`): no peer known rather than a wrong one.
#[cfg(feature = "mpi")]
fn world_rank(process: &mpi::topology::Process<'_>) -> Option<usize> {
    use mpi::raw::AsRaw;
    // SAFETY: the handle is a live rsmpi communicator's.
    unsafe { super::pmpi::world_rank(process.as_raw(), process.rank()) }
}

/// Reads the rank a receive from any rank received from, from what the call returned: rsmpi's
/// receives return a `Status`, alone or after the message (`(msg, status)`, also a matched
/// probe's message), whose source is a rank of the communicator received on (`within`, read
/// by [`Members`] before the call: `None` for the world). The call site writes `(&Received(&out))
/// .source(within)`, which takes the [`StatusSource`] method for those (feature `mpi`) and the
/// [`AnySource`] method, none, for anything else.
pub struct Received<'a, T: ?Sized>(pub &'a T);

/// The source of an rsmpi receive's `Status` (feature `mpi`).
pub trait StatusSource {
    /// The world rank the message came from.
    fn source(&self, within: Option<GroupId>) -> Option<usize>;
}

/// No source known.
pub trait AnySource {
    /// Always `None`.
    fn source(&self, within: Option<GroupId>) -> Option<usize>;
}

impl<T: ?Sized> AnySource for &Received<'_, T> {
    fn source(&self, _within: Option<GroupId>) -> Option<usize> {
        None
    }
}

#[cfg(feature = "mpi")]
impl StatusSource for Received<'_, mpi::point_to_point::Status> {
    fn source(&self, within: Option<GroupId>) -> Option<usize> {
        status_source(self.0, within)
    }
}

#[cfg(feature = "mpi")]
impl<T> StatusSource for Received<'_, (T, mpi::point_to_point::Status)> {
    fn source(&self, within: Option<GroupId>) -> Option<usize> {
        status_source(&self.0 .1, within)
    }
}

/// The world rank of a status's source: its rank in the communicator whose world ranks are
/// `within` (the world itself when `None`).
#[cfg(feature = "mpi")]
fn status_source(status: &mpi::point_to_point::Status, within: Option<GroupId>) -> Option<usize> {
    let rank = usize::try_from(status.source_rank()).ok()?;
    match within {
        None => Some(rank),
        Some(group) => super::group_members(group)?.get(rank).map(|&r| r as usize),
    }
}

/// Reads which ranks a collective runs among, from the communicator it is called on (or the
/// root `Process` of a rooted one): the call site writes `(&Members(&comm)).group()`, which takes
/// the [`CommMembers`] method for an rsmpi communicator or process (feature `mpi`) and the
/// [`AnyMembers`] method, the whole world, for anything else.
pub struct Members<'a, T: ?Sized>(pub &'a T);

/// The members of an rsmpi communicator (feature `mpi`).
pub trait CommMembers {
    /// The communicator's ranks as world ranks, interned; `None` when they are the whole world.
    fn group(&self) -> Option<GroupId>;
}

/// The whole world, or not known.
pub trait AnyMembers {
    /// Always `None`.
    fn group(&self) -> Option<GroupId>;
}

impl<T: ?Sized> AnyMembers for &Members<'_, T> {
    fn group(&self) -> Option<GroupId> {
        None
    }
}

/// [`CommMembers`] for rsmpi's communicators and processes, and references to them (one impl
/// per type: an impl for every `Communicator` and another for references to them would
/// overlap, as far as the compiler knows).
#[cfg(feature = "mpi")]
macro_rules! comm_members {
    ($($t:ty),*) => {$(
        impl CommMembers for Members<'_, $t> {
            fn group(&self) -> Option<GroupId> {
                members(self.0)
            }
        }
        impl CommMembers for Members<'_, &$t> {
            fn group(&self) -> Option<GroupId> {
                members(*self.0)
            }
        }
    )*};
}

#[cfg(feature = "mpi")]
comm_members!(
    mpi::topology::SimpleCommunicator,
    mpi::topology::CartesianCommunicator,
    mpi::topology::Process<'_>,
    mpi::topology::AnyProcess<'_>
);

/// A probed message's communicator (`pmpi::probed_comm`), whose ranks the source of the matched
/// receive that takes it names: `msg.matched_receive_into(..)` and, on the probe's result,
/// `probed.matched_receive_vec()`.
#[cfg(feature = "mpi")]
macro_rules! message_members {
    ($($t:ty => |$m:ident| $message:expr),*) => {$(
        impl CommMembers for Members<'_, $t> {
            fn group(&self) -> Option<GroupId> {
                let $m = self.0;
                message_group($message)
            }
        }
        impl CommMembers for Members<'_, &$t> {
            fn group(&self) -> Option<GroupId> {
                let $m = *self.0;
                message_group($message)
            }
        }
    )*};
}

#[cfg(feature = "mpi")]
message_members!(
    mpi::point_to_point::Message => |m| m,
    (mpi::point_to_point::Message, mpi::point_to_point::Status) => |m| &m.0
);

/// The world ranks of the members of the communicator `message` was probed on; `None` for the
/// world and for a message this thread did not probe.
#[cfg(feature = "mpi")]
fn message_group(message: &mpi::point_to_point::Message) -> Option<GroupId> {
    use mpi::raw::AsRaw;
    let comm = super::pmpi::probed_comm(message.as_raw())?;
    // SAFETY: the communicator the message was probed on is alive while the message is.
    unsafe { super::pmpi::members(comm) }
}

/// The world ranks of `comm`'s members, interned (`pmpi::members`).
#[cfg(feature = "mpi")]
fn members<C: mpi::topology::Communicator + ?Sized>(comm: &C) -> Option<GroupId> {
    // SAFETY: the handle is a live rsmpi communicator's.
    unsafe { super::pmpi::members(comm.as_raw()) }
}

/// Reads a message's size: see the module documentation. The call site writes
/// `(&&Message(&*buf)).bytes()`; method lookup tries, in order, [`BufferBytes`] (an `f64`, a
/// slice of them: impls on `&Message`), [`VecBytes`] (a `Vec` or an array: on `&&Message`) and
/// [`AnyBytes`] (anything else, 0: on `Message`).
pub struct Message<'a, T: ?Sized>(pub &'a T);

/// The size of an rsmpi scalar or slice message (feature `mpi`).
pub trait BufferBytes {
    /// The buffer's size in bytes.
    fn bytes(&self) -> u64;
}

/// The size of a `Vec` or array message (feature `mpi`).
pub trait VecBytes {
    /// The contents in bytes.
    fn bytes(&self) -> u64;
}

/// Size not known.
pub trait AnyBytes {
    /// Always 0.
    fn bytes(&self) -> u64;
}

impl<T: ?Sized> AnyBytes for Message<'_, T> {
    #[inline]
    fn bytes(&self) -> u64 {
        0
    }
}

// The sizes come from the element type, not from MPI (`MPI_Type_size`): a call into MPI with
// the buffer's address would make the address escape and keep a message accumulated in a loop
// (`local += ..`) in memory instead of a register (measured: Jacobi sweeps 3× slower).
#[cfg(feature = "mpi")]
impl<T: mpi::datatype::Equivalence> BufferBytes for &Message<'_, T> {
    #[inline]
    fn bytes(&self) -> u64 {
        std::mem::size_of::<T>() as u64
    }
}

#[cfg(feature = "mpi")]
impl<T: mpi::datatype::Equivalence> BufferBytes for &Message<'_, [T]> {
    #[inline]
    fn bytes(&self) -> u64 {
        std::mem::size_of_val(self.0) as u64
    }
}

// On `&&Message`, a step after `BufferBytes`: rsmpi may one day make arrays `Equivalence`,
// which an impl beside `BufferBytes`'s first would then overlap.
#[cfg(feature = "mpi")]
impl<T: mpi::datatype::Equivalence, const N: usize> VecBytes for &&Message<'_, [T; N]> {
    #[inline]
    fn bytes(&self) -> u64 {
        std::mem::size_of::<[T; N]>() as u64
    }
}

#[cfg(feature = "mpi")]
impl<T: mpi::datatype::Equivalence> VecBytes for &&Message<'_, Vec<T>> {
    #[inline]
    fn bytes(&self) -> u64 {
        (self.0.len() * std::mem::size_of::<T>()) as u64
    }
}
