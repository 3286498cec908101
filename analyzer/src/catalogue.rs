//! The communication catalogue: which calls are communication, and what they do (DESIGN §3.3).
//!
//! A method only counts when its receiver is a communicator value (see `binding.rs`); the
//! catalogue says, for a method name on such a receiver, what kind of call it is. Entries cover
//! the mheta runtime's `Comm` API (`comm::…`) and the rsmpi API (`mpi::…`): point-to-point on
//! a `Process` (`world.process_at_rank(r).send(..)`), collectives on a communicator or a root
//! process, and completion of requests.

use mheta_format::Pattern;

/// What a catalogued call does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// A point-to-point send, blocking or not (`send`, `immediate_send`, …).
    Send,
    /// A point-to-point receive, blocking or not (`receive_into`, `immediate_receive_into`, …).
    Receive,
    /// A combined send and receive (`send_receive_into`).
    Exchange,
    /// Completion of a non-blocking request (`wait`, `test`, `wait_all`), or the receive of
    /// a message a matched probe took (`msg.matched_receive()`: the probe waited for it).
    Complete,
    /// A collective operation, with its pattern (reduction, broadcast, barrier, gather, …).
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
    /// The prefix of the family's call names in [`CallSite::api`](crate::ir::CallSite::api):
    /// `mpi` or `comm`.
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
    /// The method or free function's name.
    pub name: &'static str,
    /// What a call of it does.
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
    e("immediate_probe", Receive),
    e("immediate_probe_with_tag", Receive),
    e("immediate_matched_probe", Receive),
    e("immediate_matched_probe_with_tag", Receive),
    // On the message a matched probe took: they receive it (MPI_Mrecv).
    e("matched_receive", Complete),
    e("matched_receive_into", Complete),
    e("matched_receive_vec", Complete),
    e("immediate_matched_receive_into", Receive),
    e("barrier", Collective(Barrier)),
    e("immediate_barrier", Collective(Barrier)),
    // Communicator constructors are collective over the communicator they are called on; they
    // exchange a few integers (colours, keys, a context id), so they count as a barrier.
    e("duplicate", Collective(Barrier)),
    e("split_by_color", Collective(Barrier)),
    e("split_by_color_with_key", Collective(Barrier)),
    e("split_shared", Collective(Barrier)),
    e("split_by_subgroup_collective", Collective(Barrier)),
    e("create_cartesian_communicator", Collective(Barrier)),
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
    // `RequestCollection` (from `mpi::request::multiple_scope`).
    e("wait_all", Complete),
    e("wait_any", Complete),
    e("wait_some", Complete),
    e("test_all", Complete),
    e("test_any", Complete),
    e("test_some", Complete),
];

/// The mheta runtime's communicator methods: every method of `CommExt` (typed) and of `Comm`
/// (bytes) in `runtime/src/comm/`, plus `Request`'s completions. Peers are explicit arguments.
/// The test `runtime_catalogue_covers_the_runtime_api` keeps this list complete.
const RUNTIME: &[Entry] = &[
    // `CommExt`, point-to-point.
    p("send", Send),
    p("send_with_tag", Send),
    p("immediate_send", Send),
    p("receive_into", Receive),
    p("receive_into_with_tag", Receive),
    p("immediate_receive_into", Receive),
    // `CommExt`, collectives.
    e("barrier", Collective(Barrier)),
    e("broadcast", Collective(Broadcast)),
    e("reduce", Collective(Reduction)),
    e("all_reduce", Collective(Reduction)),
    e("all_reduce_value", Collective(Reduction)),
    e("gather", Collective(Gather)),
    e("gather_varcount", Collective(Gather)),
    e("scatter", Collective(Scatter)),
    e("scatter_varcount", Collective(Scatter)),
    e("all_gather", Collective(AllGather)),
    e("all_gather_varcount", Collective(AllGather)),
    e("all_to_all", Collective(AllToAll)),
    e("all_to_all_varcount", Collective(AllToAll)),
    // `Comm`, the byte-level core a backend implements (callable by programs too).
    p("send_bytes", Send),
    p("receive_bytes", Receive),
    p("try_receive_bytes", Receive),
    e("barrier_bytes", Collective(Barrier)),
    e("broadcast_bytes", Collective(Broadcast)),
    e("reduce_bytes", Collective(Reduction)),
    e("all_reduce_bytes", Collective(Reduction)),
    e("gather_bytes", Collective(Gather)),
    e("scatter_bytes", Collective(Scatter)),
    e("all_gather_bytes", Collective(AllGather)),
    e("all_to_all_bytes", Collective(AllToAll)),
    // `Request` completions.
    e("wait", Complete),
    e("test", Complete),
];

/// Methods of the runtime's communicator types that do not communicate: queries and the
/// request's non-blocking state check. Together with the runtime's entries ([`method`] with
/// [`Family::Runtime`]) this covers the runtime API.
pub const RUNTIME_NON_COMMUNICATION: &[&str] = &["rank", "size", "is_complete", "emulated_network"];

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
        | "cartesian_communicator"
        | "subgroup"
        | "subgroup_unchecked" => ValueKind::Communicator,
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
    /// A communicator (`universe.world()`, `ctx.comm()`, a `&SimpleCommunicator` parameter):
    /// catalogued methods on it are communication.
    Communicator,
    /// A peer (`world.process_at_rank(r)`).
    Process,
    /// A pending non-blocking operation.
    Request,
    /// A collection of requests (`Vec<Request>`).
    Requests,
    /// A `mheta::Context`: `ctx.comm()` is the communicator, and re-exported calls count.
    Context,
    /// A message a matched probe took (`let (msg, status) = p.matched_probe()`): only its
    /// `matched_receive*` methods communicate, receiving it from the probe's peer.
    Message,
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
        "Message" => (ValueKind::Message, Family::Mpi),
        "RequestCollection" => (ValueKind::Requests, Family::Mpi),
        "Comm" | "ThreadComm" | "MpiComm" => (ValueKind::Communicator, Family::Runtime),
        "Context" => (ValueKind::Context, Family::Runtime),
        _ => return None,
    })
}

/// The I/O methods of the runtime's out-of-core array (`OocArray`, `runtime/src/ooc/array.rs`).
/// `wait` (completing a prefetch) is I/O only on an array, so it is looked up separately with
/// [`io_wait_method`]. The test `io_catalogue_covers_the_out_of_core_array` keeps this complete.
const IO: &[(&str, mheta_format::IoKind)] = {
    use mheta_format::IoKind;
    &[
        ("read_block", IoKind::Read),
        ("read_block_into", IoKind::Read),
        ("read_rows", IoKind::Read),
        ("write_block", IoKind::Write),
        // Rewrites every block for the array's new rows (it reads its own kept rows too).
        ("reshape", IoKind::Write),
        ("prefetch_block", IoKind::Prefetch),
    ]
};

/// The method that completes a prefetch on an out-of-core array.
const IO_WAIT: &str = "wait";

/// Public methods of the out-of-core array that do no I/O (queries, construction, testing).
pub const IO_NON_IO: &[&str] = &[
    "new",
    "name",
    "rows",
    "row_len",
    "placement",
    "is_out_of_core",
    "block_rows",
    "num_blocks",
    "block_range",
    "block_len",
    "stats",
    "inject_write_fault",
    "block_path",
];

/// Method names that are I/O on an out-of-core array whatever the receiver (the names are the
/// runtime's own and unambiguous).
pub fn io_method(name: &str) -> Option<mheta_format::IoKind> {
    IO.iter().find(|(n, _)| *n == name).map(|&(_, k)| k)
}

/// `wait` with no arguments is the out-of-core array's prefetch completion (an I/O `wait`) when
/// its receiver is a data array; on anything else (a request, a thread handle) it is not I/O.
pub fn io_wait_method(name: &str, args: usize) -> Option<mheta_format::IoKind> {
    (name == IO_WAIT && args == 0).then_some(mheta_format::IoKind::Wait)
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

    /// The public method names of the runtime's communicator API, read from its source: the
    /// items of traits `CommExt` and `Comm`, the public methods of `impl .. Request ..` blocks.
    fn runtime_api_methods() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/src/comm");
        let mut out = Vec::new();
        for file in ["ext.rs", "mod.rs"] {
            let path = dir.join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for item in &ast.items {
                match item {
                    syn::Item::Trait(t) if t.ident == "CommExt" || t.ident == "Comm" => {
                        out.extend(t.items.iter().filter_map(|i| match i {
                            syn::TraitItem::Fn(f) => Some(f.sig.ident.to_string()),
                            _ => None,
                        }));
                    }
                    syn::Item::Impl(im) if crate::syntax::type_name(&im.self_ty) == "Request" => {
                        out.extend(im.items.iter().filter_map(|i| match i {
                            syn::ImplItem::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) => {
                                Some(f.sig.ident.to_string())
                            }
                            _ => None,
                        }));
                    }
                    _ => {}
                }
            }
        }
        out
    }

    #[test]
    fn runtime_catalogue_covers_the_runtime_api() {
        let api = runtime_api_methods();
        // The source reading itself must have worked: the traits and `Request` were found.
        for known in ["send_with_tag", "all_to_all_bytes", "rank", "is_complete"] {
            assert!(
                api.iter().any(|m| m == known),
                "{known} not read from the runtime"
            );
        }
        let missing: Vec<&String> = api
            .iter()
            .filter(|m| {
                method(Family::Runtime, m).is_none()
                    && !RUNTIME_NON_COMMUNICATION.contains(&m.as_str())
            })
            .collect();
        assert!(
            missing.is_empty(),
            "runtime communicator methods neither catalogued nor listed as non-communication: {missing:?}"
        );
        // And the catalogue names nothing the runtime does not have.
        let stale: Vec<&str> = RUNTIME
            .iter()
            .map(|e| e.name)
            .chain(RUNTIME_NON_COMMUNICATION.iter().copied())
            .filter(|n| !api.iter().any(|m| m == n))
            .collect();
        assert!(
            stale.is_empty(),
            "catalogued but not in the runtime: {stale:?}"
        );
        assert_eq!(
            method(Family::Runtime, "all_reduce_value").map(|e| e.kind),
            Some(Collective(Reduction))
        );
    }

    #[test]
    fn io_catalogue_covers_the_out_of_core_array() {
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../runtime/src/ooc/array.rs");
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let methods: Vec<String> = ast
            .items
            .iter()
            .filter_map(|i| match i {
                syn::Item::Impl(im) if crate::syntax::type_name(&im.self_ty) == "OocArray" => {
                    Some(im)
                }
                _ => None,
            })
            .flat_map(|im| &im.items)
            .filter_map(|i| match i {
                syn::ImplItem::Fn(f) if matches!(f.vis, syn::Visibility::Public(_)) => {
                    Some(f.sig.ident.to_string())
                }
                _ => None,
            })
            .collect();
        assert!(
            methods.iter().any(|m| m == "prefetch_block"),
            "OocArray not read"
        );
        let known = |m: &str| io_method(m).is_some() || m == IO_WAIT || IO_NON_IO.contains(&m);
        let missing: Vec<&String> = methods.iter().filter(|m| !known(m)).collect();
        assert!(
            missing.is_empty(),
            "OocArray methods not classified: {missing:?}"
        );
        let stale: Vec<&str> = IO
            .iter()
            .map(|(n, _)| *n)
            .chain([IO_WAIT])
            .chain(IO_NON_IO.iter().copied())
            .filter(|n| !methods.iter().any(|m| m == n))
            .collect();
        assert!(
            stale.is_empty(),
            "catalogued but not on OocArray: {stale:?}"
        );
        assert_eq!(io_wait_method("wait", 0), Some(mheta_format::IoKind::Wait));
        assert_eq!(io_wait_method("wait", 1), None);
        assert_eq!(io_method("wait"), None);
    }
}
