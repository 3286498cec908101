//! The communication catalogue: which calls are communication, and what they do (DESIGN §3.3).
//!
//! A method only counts when its receiver is a communicator value (see `binding.rs`); the
//! catalogue says, for a method name on such a receiver, what kind of call it is. Entries cover
//! the mheta runtime's `Comm` API (`comm::…`) and the rsmpi API (`mpi::…`): point-to-point on
//! a `Process` (`world.process_at_rank(r).send(..)`), collectives on a communicator or a root
//! process, and completion of requests.

use mheta_runtime::format::Pattern;

/// What a catalogued call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Send,
    Receive,
    /// A combined send and receive (`send_receive_into`).
    Exchange,
    /// Completion of a non-blocking request (`wait`, `test`, `wait_all`).
    Complete,
    Collective(Pattern),
}

/// Which API a communicator value comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// rsmpi, the `mpi` crate.
    Mpi,
    /// The mheta runtime's `Comm`.
    Runtime,
}

impl Family {
    pub fn prefix(self) -> &'static str {
        match self {
            Family::Mpi => "mpi",
            Family::Runtime => "comm",
        }
    }
}

/// One catalogued method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub name: &'static str,
    pub kind: CallKind,
    /// For runtime point-to-point calls: the peer is the first argument.
    pub peer_arg: bool,
}

use CallKind::*;
use Pattern::*;

const fn e(name: &'static str, kind: CallKind) -> Entry {
    Entry {
        name,
        kind,
        peer_arg: false,
    }
}

const fn p(name: &'static str, kind: CallKind) -> Entry {
    Entry {
        name,
        kind,
        peer_arg: true,
    }
}

/// rsmpi methods on a `Process` (point-to-point, rooted collectives) and on a communicator.
const MPI: &[Entry] = &[
    e("send", Send),
    e("send_with_tag", Send),
    e("ready_send", Send),
    e("ready_send_with_tag", Send),
    e("synchronous_send", Send),
    e("synchronous_send_with_tag", Send),
    e("buffered_send", Send),
    e("buffered_send_with_tag", Send),
    e("immediate_send", Send),
    e("immediate_send_with_tag", Send),
    e("immediate_ready_send", Send),
    e("immediate_ready_send_with_tag", Send),
    e("immediate_synchronous_send", Send),
    e("immediate_synchronous_send_with_tag", Send),
    e("immediate_buffered_send", Send),
    e("immediate_buffered_send_with_tag", Send),
    e("receive", Receive),
    e("receive_with_tag", Receive),
    e("receive_into", Receive),
    e("receive_into_with_tag", Receive),
    e("receive_vec", Receive),
    e("receive_vec_with_tag", Receive),
    e("immediate_receive", Receive),
    e("immediate_receive_with_tag", Receive),
    e("immediate_receive_into", Receive),
    e("immediate_receive_into_with_tag", Receive),
    e("matched_probe", Receive),
    e("matched_probe_with_tag", Receive),
    e("probe", Receive),
    e("probe_with_tag", Receive),
    e("barrier", Collective(Barrier)),
    e("immediate_barrier", Collective(Barrier)),
    e("broadcast_into", Collective(Broadcast)),
    e("immediate_broadcast_into", Collective(Broadcast)),
    e("reduce_into", Collective(Reduction)),
    e("reduce_into_root", Collective(Reduction)),
    e("immediate_reduce_into", Collective(Reduction)),
    e("immediate_reduce_into_root", Collective(Reduction)),
    e("all_reduce_into", Collective(Reduction)),
    e("immediate_all_reduce_into", Collective(Reduction)),
    e("scan_into", Collective(Reduction)),
    e("immediate_scan_into", Collective(Reduction)),
    e("exclusive_scan_into", Collective(Reduction)),
    e("immediate_exclusive_scan_into", Collective(Reduction)),
    e("gather_into", Collective(Gather)),
    e("gather_into_root", Collective(Gather)),
    e("gather_varcount_into", Collective(Gather)),
    e("gather_varcount_into_root", Collective(Gather)),
    e("immediate_gather_into", Collective(Gather)),
    e("immediate_gather_into_root", Collective(Gather)),
    e("immediate_gather_varcount_into", Collective(Gather)),
    e("immediate_gather_varcount_into_root", Collective(Gather)),
    e("scatter_into", Collective(Scatter)),
    e("scatter_into_root", Collective(Scatter)),
    e("scatter_varcount_into", Collective(Scatter)),
    e("scatter_varcount_into_root", Collective(Scatter)),
    e("immediate_scatter_into", Collective(Scatter)),
    e("immediate_scatter_into_root", Collective(Scatter)),
    e("immediate_scatter_varcount_into", Collective(Scatter)),
    e("immediate_scatter_varcount_into_root", Collective(Scatter)),
    e("all_gather_into", Collective(AllGather)),
    e("all_gather_varcount_into", Collective(AllGather)),
    e("immediate_all_gather_into", Collective(AllGather)),
    e("immediate_all_gather_varcount_into", Collective(AllGather)),
    e("all_to_all_into", Collective(AllToAll)),
    e("all_to_all_varcount_into", Collective(AllToAll)),
    e("immediate_all_to_all_into", Collective(AllToAll)),
    e("immediate_all_to_all_varcount_into", Collective(AllToAll)),
    e("reduce_scatter_block_into", Collective(Reduction)),
    e("wait", Complete),
    e("wait_without_status", Complete),
    e("test", Complete),
];

/// The mheta runtime's `Comm` methods (peers are explicit arguments).
const RUNTIME: &[Entry] = &[
    p("send", Send),
    p("send_with_tag", Send),
    p("send_bytes", Send),
    p("immediate_send", Send),
    p("receive", Receive),
    p("receive_into", Receive),
    p("receive_with_tag", Receive),
    p("receive_bytes", Receive),
    p("recv", Receive),
    p("recv_into", Receive),
    p("immediate_receive", Receive),
    p("send_receive", Exchange),
    p("exchange", Exchange),
    e("wait", Complete),
    e("wait_all", Complete),
    e("test", Complete),
    e("barrier", Collective(Barrier)),
    e("broadcast", Collective(Broadcast)),
    e("broadcast_bytes", Collective(Broadcast)),
    e("reduce", Collective(Reduction)),
    e("all_reduce", Collective(Reduction)),
    e("all_reduce_bytes", Collective(Reduction)),
    e("gather", Collective(Gather)),
    e("gather_bytes", Collective(Gather)),
    e("gather_varcount", Collective(Gather)),
    e("scatter", Collective(Scatter)),
    e("scatter_varcount", Collective(Scatter)),
    e("all_gather", Collective(AllGather)),
    e("all_gather_varcount", Collective(AllGather)),
    e("all_to_all", Collective(AllToAll)),
    e("all_to_all_varcount", Collective(AllToAll)),
];

/// Free functions of rsmpi that communicate (`mpi::request::wait_all(&mut reqs)`, …).
const MPI_FREE: &[Entry] = &[
    e("wait_all", Complete),
    e("wait_any", Complete),
    e("wait_some", Complete),
    e("test_all", Complete),
    e("test_any", Complete),
    e("test_some", Complete),
    e("send_receive", Exchange),
    e("send_receive_into", Exchange),
    e("send_receive_replace_into", Exchange),
    e("send_receive_with_tags", Exchange),
    e("send_receive_into_with_tags", Exchange),
];

/// The catalogue entry of method `name` called on a communicator value of `family`.
pub fn method(family: Family, name: &str) -> Option<Entry> {
    let table = match family {
        Family::Mpi => MPI,
        Family::Runtime => RUNTIME,
    };
    table.iter().find(|e| e.name == name).copied()
}

/// The catalogue entry of an rsmpi free function (`mpi::…::name`).
pub fn free_function(name: &str) -> Option<Entry> {
    MPI_FREE.iter().find(|e| e.name == name).copied()
}

/// Methods that turn a communicator value into another: `(method, result)`.
pub fn derived_value(name: &str) -> Option<ValueKind> {
    Some(match name {
        "world" => ValueKind::Communicator,
        "comm" => ValueKind::Communicator,
        "duplicate"
        | "split_by_color"
        | "split_by_color_with_key"
        | "split_shared"
        | "split_by_subgroup"
        | "split_by_subgroup_collective"
        | "create_cartesian_communicator"
        | "cartesian_communicator" => ValueKind::Communicator,
        "process_at_rank" | "any_process" | "this_process" | "root_process" | "process_at" => {
            ValueKind::Process
        }
        _ => return None,
    })
}

/// What a communicator-flavoured value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ValueKind {
    /// `mpi::initialize()`'s result; only `.world()` leads to communication.
    Universe,
    Communicator,
    /// A peer (`world.process_at_rank(r)`).
    Process,
    /// A pending non-blocking operation.
    Request,
    /// A collection of requests (`Vec<Request>`).
    Requests,
    /// A `mheta::Context`: `ctx.comm()` is the communicator, and re-exported calls count.
    Context,
}

/// Classifies a type named in a signature or annotation: the value kind and API family it
/// carries, if any (`&SimpleCommunicator`, `&impl Communicator`, `&dyn Comm`, `Process<'_>`…).
pub fn type_kind(type_name: &str) -> Option<(ValueKind, Family)> {
    Some(match type_name {
        "SimpleCommunicator"
        | "UserCommunicator"
        | "SystemCommunicator"
        | "Communicator"
        | "CommunicatorCollectives"
        | "AnyCommunicator"
        | "CartesianCommunicator"
        | "InterCommunicator" => (ValueKind::Communicator, Family::Mpi),
        "Process" | "AnyProcess" | "Root" | "Destination" | "Source" => {
            (ValueKind::Process, Family::Mpi)
        }
        "Universe" => (ValueKind::Universe, Family::Mpi),
        "Request" => (ValueKind::Request, Family::Mpi),
        "Comm" | "ThreadComm" | "MpiComm" => (ValueKind::Communicator, Family::Runtime),
        "Context" => (ValueKind::Context, Family::Runtime),
        _ => return None,
    })
}

/// Method names that are I/O on an out-of-core array (the runtime's `DistArray`).
pub fn io_method(name: &str) -> Option<mheta_runtime::format::IoKind> {
    use mheta_runtime::format::IoKind;
    Some(match name {
        "read_block" | "read_rows" => IoKind::Read,
        "write_block" | "write_rows" => IoKind::Write,
        "prefetch_block" | "prefetch_rows" => IoKind::Prefetch,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsmpi_point_to_point_and_collectives() {
        assert_eq!(
            method(Family::Mpi, "send_with_tag").map(|e| e.kind),
            Some(Send)
        );
        assert_eq!(
            method(Family::Mpi, "receive_into").map(|e| e.kind),
            Some(Receive)
        );
        assert_eq!(
            method(Family::Mpi, "all_reduce_into").map(|e| e.kind),
            Some(Collective(Reduction))
        );
        assert_eq!(
            method(Family::Mpi, "gather_varcount_into_root").map(|e| e.kind),
            Some(Collective(Gather))
        );
        assert_eq!(
            method(Family::Mpi, "immediate_all_to_all_into").map(|e| e.kind),
            Some(Collective(AllToAll))
        );
        assert_eq!(method(Family::Mpi, "len"), None);
    }

    #[test]
    fn runtime_point_to_point_takes_the_peer_as_argument() {
        let send = method(Family::Runtime, "send").unwrap();
        assert!(send.peer_arg);
        assert_eq!(
            method(Family::Runtime, "all_gather_varcount").map(|e| e.kind),
            Some(Collective(AllGather))
        );
        // rsmpi names are not runtime names and vice versa.
        assert_eq!(method(Family::Runtime, "all_reduce_into"), None);
        assert_eq!(method(Family::Mpi, "all_reduce"), None);
    }

    #[test]
    fn communicator_types_and_derivations() {
        assert_eq!(
            type_kind("SimpleCommunicator"),
            Some((ValueKind::Communicator, Family::Mpi))
        );
        assert_eq!(
            type_kind("Comm"),
            Some((ValueKind::Communicator, Family::Runtime))
        );
        assert_eq!(type_kind("Sender"), None);
        assert_eq!(derived_value("process_at_rank"), Some(ValueKind::Process));
        assert_eq!(derived_value("send"), None);
        assert_eq!(free_function("wait_all").map(|e| e.kind), Some(Complete));
    }
}
