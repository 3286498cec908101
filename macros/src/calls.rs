//! Recording the rsmpi calls of an attached program: every catalogued call site of the solver's
//! events (`mpi::…` in the structure) is wrapped so that the hook layer records it as it records
//! the runtime's own `CommExt` calls — call kind, peer, bytes, begin and end, inside its event.
//!
//! `world.process_at_rank(p).send(&x)` becomes
//!
//! ```text
//! {
//!     let __mheta_peer = (&Peer(&(world.process_at_rank(p)))).peer();
//!     let __mheta_sent: u64 = (&&Message(&*(&x))).bytes();
//!     let __mheta_received: u64 = 0u64;
//!     let __mheta_start = begin();
//!     let __mheta_out = world.process_at_rank(p).send(&x);   // the call as written
//!     end(__mheta_start, CallKind::Send, __mheta_peer, None, None, __mheta_sent, __mheta_received, false);
//!     __mheta_out
//! }
//! ```
//!
//! A collective also reads the ranks it runs among from its receiver, a communicator or a root
//! `Process` (`(&Members(&world)).group()`: `None` for the world, interned world ranks for a
//! communicator split off it), which `end` takes after the source (the second `None` above).
//!
//! Peer and bytes are read before the call from the same expressions, which is sound when they
//! are pure (places, references to them, literals, `process_at_rank`: [`is_pure`]). Otherwise
//! the receiver (a temporary) and the arguments are evaluated once, in order, into locals, and
//! the call is made on those. Wrapping happens after placement (which matches statements by
//! their source positions) and only in the instrumented body.

use proc_macro2::TokenStream;
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr};

use crate::position::Pos;

/// One rsmpi call site of the structure: its catalogue name and where the call expression
/// starts (a method call's receiver).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignCall {
    pub api: String,
    pub start: Pos,
    /// The structure event the call belongs to.
    pub event: u32,
}

/// How the hook layer records a call.
struct Kind {
    call: TokenStream,
    /// Waits for other ranks: its whole duration is blocked time.
    blocks: bool,
    /// A collective: it runs among its communicator's ranks.
    collective: bool,
    /// Sends its message argument.
    sends: bool,
    /// Receives into its buffer argument.
    receives: bool,
    /// Which argument is the message: rsmpi's buffers come first (`send(&x)`,
    /// `all_reduce_into(&mine, &mut all, op)`, `receive_into(&mut x)`), after the scope in the
    /// immediate forms (`immediate_send(scope, &x)`). Positional, so a buffer passed on as a
    /// reference-typed variable (`fn dot(.., a: &[f64])`, in a helper's copy) is counted too.
    message: usize,
    /// Which argument is the receive buffer (`send_receive_into(&x, &p, &mut y, &q)`: the third).
    received: usize,
    /// An exchange, a free function whose second argument is the peer it sends to
    /// (`send_receive_into(&x, &p, ..)`): which argument is the rank it receives from
    /// (`send_receive_into(&x, &p, &mut y, &q)`: the fourth), which may differ from its peer
    /// (a ring shift).
    source: Option<usize>,
    /// A probe: it waits for a message but takes none, so it names no peer (the receive that
    /// follows it does).
    probe: bool,
    /// A blocking receive: when its receiver names no peer (`any_process()`, a probed message),
    /// the peer is the source of the `Status` it returns.
    from_status: bool,
}

fn kind(api: &str) -> Kind {
    let name = api.rsplit("::").next().unwrap_or(api);
    let message = usize::from(name.starts_with("immediate_"));
    // rsmpi's exchanges: (message, destination, [send tag,] [buffer,] source, [receive tag]).
    let (received, source) = match name {
        "send_receive" | "send_receive_replace_into" => (0, Some(2)),
        "send_receive_with_tags" | "send_receive_replace_into_with_tags" => (0, Some(3)),
        "send_receive_into" => (2, Some(3)),
        "send_receive_into_with_tags" => (3, Some(4)),
        _ => (message, None),
    };
    let base = name.strip_prefix("immediate_");
    let blocks = base.is_none();
    let probe = name.contains("probe");
    let from_status = blocks && !probe && source.is_none() && name.contains("receive");
    let k = |call: &str, blocks: bool, sends: bool, receives: bool| Kind {
        call: {
            let ident = format_ident!("{}", call);
            quote!(::mheta::__private::rsmpi::CallKind::#ident)
        },
        blocks,
        collective: !matches!(call, "Send" | "ImmediateSend" | "Receive"),
        sends,
        receives,
        message,
        received,
        source,
        probe,
        from_status,
    };
    // Collectives: this rank's contribution is the message. An immediate one
    // (`immediate_all_reduce_into`) is recorded as its collective, not blocking: it only posts.
    match base.unwrap_or(name) {
        _ if source.is_some() => k("Receive", true, true, true),
        n if n.contains("barrier") => k("Barrier", blocks, true, false),
        // Communicator constructors: collective, with no buffer of the caller's.
        "duplicate"
        | "split_by_color"
        | "split_by_color_with_key"
        | "split_shared"
        | "split_by_subgroup_collective"
        | "create_cartesian_communicator" => k("Barrier", true, false, false),
        n if n.contains("broadcast") => k("Broadcast", blocks, true, false),
        n if n.contains("scan") => k("Scan", blocks, true, false),
        n if n.starts_with("all_reduce") => k("AllReduce", blocks, true, false),
        n if n.contains("reduce") => k("Reduce", blocks, true, false),
        n if n.starts_with("all_gather") => k("AllGather", blocks, true, false),
        n if n.contains("gather") => k("Gather", blocks, true, false),
        n if n.contains("scatter") => k("Scatter", blocks, true, false),
        n if n.contains("all_to_all") => k("AllToAll", blocks, true, false),
        n if !blocks && n.contains("send") => k("ImmediateSend", false, true, false),
        // Only the `_into` receives have a buffer of the caller's; the others' arguments are a
        // scope and a tag (`immediate_receive_with_tag(scope, 7)`).
        n if !blocks => k("Receive", false, false, n.contains("_into")),
        // Request completion (`wait`, `wait_all`, `test_any`): no message of its own, and its
        // arguments are result lists, not buffers.
        n if n.starts_with("wait") || n.starts_with("test") => k("Receive", true, false, false),
        n if n.contains("send") => k("Send", false, true, false),
        // Receives and probes: the bytes are those of the buffer an `_into` receive fills; a
        // tag is no buffer (`receive_with_tag::<f64>(7)`, `matched_probe_with_tag(7)`).
        n => k("Receive", true, false, n.contains("_into")),
    }
}

/// The `CallKind` the hook layer records a call of `api` as (a path expression).
pub fn call_kind(api: &str) -> TokenStream {
    kind(api).call
}

/// Wraps the calls of `calls` found in `block`; returns the calls not found.
pub fn wrap(block: &mut Block, calls: &[ForeignCall]) -> Vec<ForeignCall> {
    let mut w = Wrapper {
        calls,
        done: vec![false; calls.len()],
    };
    w.visit_block_mut(block);
    calls
        .iter()
        .zip(&w.done)
        .filter(|(_, done)| !**done)
        .map(|(c, _)| c.clone())
        .collect()
}

struct Wrapper<'a> {
    calls: &'a [ForeignCall],
    done: Vec<bool>,
}

impl Wrapper<'_> {
    /// The listed call that starts at `start` and calls `name` (a chain's calls all start at
    /// its receiver: `world.process_at_rank(p).send(&x)`).
    fn find(&mut self, start: proc_macro2::LineColumn, name: &str) -> Option<&ForeignCall> {
        let pos = (start.line as u32, start.column as u32);
        let i = self
            .calls
            .iter()
            .position(|c| c.start == pos && c.api.rsplit("::").next() == Some(name))?;
        if std::mem::replace(&mut self.done[i], true) {
            return None;
        }
        Some(&self.calls[i])
    }
}

impl VisitMut for Wrapper<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        // Where this call starts, read before its inner calls are wrapped: wrapping the
        // receiver of a chain (`p.matched_probe().matched_receive_vec()`) moves its start.
        let key = match &*e {
            Expr::MethodCall(m) => Some((m.span().start(), m.method.to_string())),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) => p
                    .path
                    .segments
                    .last()
                    .map(|s| (c.span().start(), s.ident.to_string())),
                _ => None,
            },
            _ => None,
        };
        // Inner calls first (`coll.add(p.immediate_send(..))`), then this one.
        visit_mut::visit_expr_mut(self, e);
        let found = key.and_then(|(start, name)| self.find(start, &name).cloned());
        if let Some(call) = found {
            *e = wrapped(e, &kind(&call.api));
        }
    }
}

/// Whether evaluating `e` twice is the same as once and moves nothing (a place expression).
fn is_place(e: &Expr) -> bool {
    match e {
        Expr::Path(_) => true,
        Expr::Field(f) => is_place(&f.base),
        Expr::Paren(p) => is_place(&p.expr),
        Expr::Index(i) => is_place(&i.expr) && matches!(&*i.index, Expr::Path(_) | Expr::Lit(_)),
        _ => false,
    }
}

/// Whether evaluating `e` again after the call reads the same values and does nothing else:
/// places, references to places (`&x`, `&mut u[lo..hi]`), literals, reduction operators
/// (`SystemOperation::sum()`) and `world.process_at_rank(p)`.
fn is_pure(e: &Expr) -> bool {
    match e {
        Expr::Path(_) | Expr::Lit(_) => true,
        Expr::Paren(p) => is_pure(&p.expr),
        Expr::Field(f) => is_pure(&f.base),
        Expr::Reference(r) => is_pure(&r.expr),
        // An index variable may be a range, which indexing moves: only indices built in place.
        Expr::Index(i) => {
            is_pure(&i.expr) && !matches!(&*i.index, Expr::Path(_)) && is_pure(&i.index)
        }
        Expr::Range(r) => {
            r.start.as_deref().map_or(true, is_pure) && r.end.as_deref().map_or(true, is_pure)
        }
        Expr::Binary(b) => is_pure(&b.left) && is_pure(&b.right),
        Expr::Cast(c) => is_pure(&c.expr),
        Expr::Unary(u) => is_pure(&u.expr),
        Expr::Call(c) => {
            matches!(&*c.func, Expr::Path(p) if p.path.segments.iter().any(|s| s.ident == "SystemOperation"))
                && c.args.iter().all(is_pure)
        }
        Expr::MethodCall(m) => {
            matches!(
                m.method.to_string().as_str(),
                "process_at_rank" | "any_process" | "this_process"
            ) && is_pure(&m.receiver)
                && m.args.iter().all(is_pure)
        }
        _ => false,
    }
}

fn wrapped(e: &Expr, kind: &Kind) -> Expr {
    let rsmpi = quote!(::mheta::__private::rsmpi);
    let (args, receiver): (Vec<&Expr>, Option<&Expr>) = match e {
        Expr::MethodCall(m) => (m.args.iter().collect(), Some(&*m.receiver)),
        Expr::Call(c) => (c.args.iter().collect(), None),
        _ => return e.clone(),
    };
    let mut lets = Vec::new();
    // What the records read the receiver and the arguments from, and the call to make.
    let (recv, operands, call): (Option<TokenStream>, Vec<TokenStream>, TokenStream) =
        if receiver.map_or(true, is_pure) && args.iter().all(|a| is_pure(a)) {
            // Pure: read again from the same expressions; the call stays as written.
            (
                receiver.map(|r| quote!((#r))),
                args.iter().map(|a| quote!((#a))).collect(),
                e.to_token_stream(),
            )
        } else {
            // The receiver as written when it is a place, else (a temporary) evaluated once;
            // the arguments evaluated once, in order.
            let recv = receiver.map(|r| {
                if is_place(r) {
                    r.to_token_stream()
                } else {
                    lets.push(quote! {
                        #[allow(unused_mut)]
                        let mut __mheta_recv = #r;
                    });
                    quote!(__mheta_recv)
                }
            });
            let names: Vec<_> = (0..args.len())
                .map(|i| format_ident!("__mheta_a{}", i))
                .collect();
            for (name, arg) in names.iter().zip(&args) {
                lets.push(quote!(let #name = #arg;));
            }
            let call = match (e, &recv) {
                (Expr::MethodCall(m), Some(r)) => {
                    let (method, turbofish) = (&m.method, &m.turbofish);
                    quote!(#r.#method #turbofish(#(#names),*))
                }
                (Expr::Call(c), _) => {
                    let func = &c.func;
                    quote!(#func(#(#names),*))
                }
                _ => unreachable!("only calls are wrapped"),
            };
            (recv, names.iter().map(|n| quote!(#n)).collect(), call)
        };
    let message = (kind.message < args.len()).then_some(kind.message);
    let received = (kind.received < args.len()).then_some(kind.received);
    let bytes = |wanted: bool, at: Option<usize>| match at.map(|i| &operands[i]) {
        Some(o) if wanted => quote!((&&#rsmpi::Message(&*#o)).bytes()),
        _ => quote!(0u64),
    };
    let (sent, got) = (bytes(kind.sends, message), bytes(kind.receives, received));
    let peer = match (&recv, kind.source.is_some(), operands.get(1)) {
        _ if kind.probe => quote!(::core::option::Option::None),
        (_, true, Some(p)) => quote!((&#rsmpi::Peer(&*#p)).peer()),
        (Some(r), false, _) => quote!((&#rsmpi::Peer(&#r)).peer()),
        _ => quote!(::core::option::Option::None),
    };
    let source = match kind.source.and_then(|i| operands.get(i)) {
        Some(s) => quote!((&#rsmpi::Peer(&*#s)).peer()),
        None => quote!(::core::option::Option::None),
    };
    // The ranks a collective runs among, from its communicator or root process.
    let group = match &recv {
        Some(r) if kind.collective => quote!((&#rsmpi::Members(&#r)).group()),
        _ => quote!(::core::option::Option::None),
    };
    // A receive from any rank: the communicator received on, read before the call (which may
    // consume its receiver, `msg.matched_receive()`) and only when the peer is not known, and
    // the source its status names after.
    let (within, from_status) = match &recv {
        Some(r) if kind.from_status => (
            quote!(let __mheta_within = match __mheta_peer {
                ::core::option::Option::None => (&#rsmpi::Members(&#r)).group(),
                ::core::option::Option::Some(_) => ::core::option::Option::None,
            };),
            quote!(let __mheta_peer = __mheta_peer.or_else(|| (&#rsmpi::Received(&__mheta_out)).source(__mheta_within));),
        ),
        _ => (quote!(), quote!()),
    };
    let (call_kind, blocks) = (&kind.call, kind.blocks);
    let out = quote! {{
        #[allow(unused_imports)]
        use #rsmpi::{AnyBytes as _, AnyMembers as _, AnyPeer as _, AnySource as _, BufferBytes as _, CommMembers as _, ProcessPeer as _, StatusSource as _, VecBytes as _};
        #(#lets)*
        // Read before the call: it may consume its receiver (`req.wait()`) or keep its buffers
        // borrowed (`immediate_receive_into` returns a request holding `&mut buf`).
        let __mheta_peer = #peer;
        let __mheta_source = #source;
        let __mheta_group = #group;
        #within
        let __mheta_sent: u64 = #sent;
        let __mheta_received: u64 = #got;
        let __mheta_start = #rsmpi::begin();
        let __mheta_out = #call;
        #from_status
        #rsmpi::end(__mheta_start, #call_kind, __mheta_peer, __mheta_source, __mheta_group, __mheta_sent, __mheta_received, #blocks);
        __mheta_out
    }};
    syn::parse2(out).expect("the wrapper is an expression")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `statement` (one line, in a block, at line 2 column 4) with its call `api` wrapped.
    fn wrapped_statement(statement: &str, api: &str) -> String {
        let mut block: Block = syn::parse_str(&format!("{{\n    {statement}\n}}")).unwrap();
        let calls = [ForeignCall {
            event: 0,
            api: api.into(),
            start: (2, 4),
        }];
        let left = wrap(&mut block, &calls);
        let out = block.to_token_stream().to_string();
        assert!(left.is_empty(), "{api} was not wrapped: {out}");
        out
    }

    #[test]
    fn a_call_with_pure_arguments_stays_as_written_between_its_records() {
        // The chain and its `process_at_rank` both start at the listed position.
        let out = wrapped_statement("world.process_at_rank(p).send(&x);", "mpi::send");
        assert!(
            out.contains("let __mheta_out = world . process_at_rank (p) . send (& x)"),
            "{out}"
        );
        assert!(out.contains("CallKind :: Send"), "{out}");
        assert!(
            out.contains("Peer (& (world . process_at_rank (p)))"),
            "{out}"
        );
        assert!(out.contains("Message (& * (& x))"), "{out}");
    }

    #[test]
    fn both_calls_of_a_chain_are_wrapped() {
        let mut block: Block =
            syn::parse_str("{\n    p.matched_probe_with_tag(7).matched_receive_vec::<f64>();\n}")
                .unwrap();
        let calls =
            ["mpi::matched_probe_with_tag", "mpi::matched_receive_vec"].map(|api| ForeignCall {
                event: 0,
                api: api.into(),
                start: (2, 4),
            });
        let left = wrap(&mut block, &calls);
        let out = block.to_token_stream().to_string();
        assert!(left.is_empty(), "{left:?} not wrapped: {out}");
        assert_eq!(out.matches("rsmpi :: begin ()").count(), 2, "{out}");
    }

    #[test]
    fn a_receive_from_any_rank_names_the_source_its_status_gives_and_a_probe_no_peer() {
        let out = wrapped_statement("world.any_process().receive::<f64>();", "mpi::receive");
        assert!(
            out.contains("Members (& (world . any_process ()))) . group ()"),
            "{out}"
        );
        assert!(
            out.contains("Received (& __mheta_out)) . source (__mheta_within)"),
            "{out}"
        );
        let out = wrapped_statement("world.any_process().matched_probe();", "mpi::matched_probe");
        assert!(
            out.contains("let __mheta_peer = :: core :: option :: Option :: None"),
            "{out}"
        );
        assert!(!out.contains("Received"), "{out}");
        // A send's peer is its process, as before.
        let out = wrapped_statement("world.process_at_rank(p).send(&x);", "mpi::send");
        assert!(!out.contains("Received"), "{out}");
    }

    #[test]
    fn a_tag_is_no_receive_buffer() {
        for (statement, api) in [
            ("p.receive_with_tag::<f64>(7);", "mpi::receive_with_tag"),
            (
                "p.matched_probe_with_tag(TAG);",
                "mpi::matched_probe_with_tag",
            ),
            (
                "p.immediate_receive_with_tag::<f64>(scope, 7);",
                "mpi::immediate_receive_with_tag",
            ),
        ] {
            let out = wrapped_statement(statement, api);
            assert!(!out.contains("Message (& *"), "{out}");
        }
        let out = wrapped_statement(
            "msg.matched_receive_into(&mut buf[..]);",
            "mpi::matched_receive_into",
        );
        assert!(out.contains("Message (& * (& mut buf [..]))"), "{out}");
    }

    #[test]
    fn a_collective_on_a_place_keeps_its_receiver() {
        let out = wrapped_statement(
            "world.all_reduce_into(&a, &mut b, op);",
            "mpi::all_reduce_into",
        );
        assert!(
            out.contains("world . all_reduce_into (& a , & mut b , op)"),
            "{out}"
        );
        assert!(out.contains("CallKind :: AllReduce"), "{out}");
    }

    #[test]
    fn a_collective_reads_the_ranks_it_runs_among_from_its_receiver() {
        let out = wrapped_statement(
            "sub.all_reduce_into(&a, &mut b, op);",
            "mpi::all_reduce_into",
        );
        assert!(
            out.contains("let __mheta_group = (& :: mheta :: __private :: rsmpi :: Members (& (sub))) . group ()"),
            "{out}"
        );
        // A rooted one reads them from its root process, which names its communicator.
        let out = wrapped_statement(
            "sub.process_at_rank(0).broadcast_into(&mut x);",
            "mpi::broadcast_into",
        );
        assert!(
            out.contains("Members (& (sub . process_at_rank (0)))"),
            "{out}"
        );
        // A point-to-point call has its peer instead.
        let out = wrapped_statement("sub.process_at_rank(p).send(&x);", "mpi::send");
        assert!(
            out.contains("let __mheta_group = :: core :: option :: Option :: None"),
            "{out}"
        );
    }

    #[test]
    fn scans_and_immediate_collectives_are_recorded_as_collectives() {
        // A scan is a collective, not a receive (which would need a peer).
        for api in ["scan_into", "exclusive_scan_into"] {
            let out = wrapped_statement(
                &format!("world.{api}(&a, &mut b, op);"),
                &format!("mpi::{api}"),
            );
            assert!(out.contains("CallKind :: Scan"), "{out}");
            assert!(out.contains("Members"), "{out}");
            assert!(
                out.ends_with("__mheta_received , true) ; __mheta_out } ; }"),
                "{out}"
            );
        }
        // An immediate collective only posts: its kind, not blocking.
        for (api, kind) in [
            ("immediate_all_reduce_into(s, &a, &mut b, op)", "AllReduce"),
            ("immediate_barrier()", "Barrier"),
            ("immediate_scan_into(s, &a, &mut b, op)", "Scan"),
            ("immediate_all_gather_into(s, &a, &mut b)", "AllGather"),
        ] {
            let name = api.split('(').next().unwrap();
            let out = wrapped_statement(&format!("world.{api};"), &format!("mpi::{name}"));
            assert!(out.contains(&format!("CallKind :: {kind}")), "{out}");
            assert!(
                out.ends_with("__mheta_received , false) ; __mheta_out } ; }"),
                "{out}"
            );
        }
        // Immediate point-to-point calls are as before.
        let out = wrapped_statement(
            "world.process_at_rank(p).immediate_send(s, &x);",
            "mpi::immediate_send",
        );
        assert!(out.contains("CallKind :: ImmediateSend"), "{out}");
        let out = wrapped_statement(
            "world.process_at_rank(p).immediate_receive_into(s, &mut x);",
            "mpi::immediate_receive_into",
        );
        assert!(out.contains("CallKind :: Receive"), "{out}");
    }

    #[test]
    fn communicator_constructors_are_blocking_collectives_without_a_message() {
        // Before, `split_by_color(color)` fell through to a receive into its colour.
        for api in [
            "duplicate()",
            "split_by_color(Color::with_value(c))",
            "split_by_color_with_key(color, key)",
        ] {
            let name = api.split('(').next().unwrap();
            let out = wrapped_statement(&format!("world.{api};"), &format!("mpi::{name}"));
            assert!(out.contains("CallKind :: Barrier"), "{out}");
            assert!(out.contains("Members"), "{out}");
            assert!(!out.contains("Message"), "{out}");
            assert!(
                out.ends_with("__mheta_received , true) ; __mheta_out } ; }"),
                "{out}"
            );
        }
    }

    #[test]
    fn a_free_exchange_takes_its_peer_from_the_second_argument() {
        let out = wrapped_statement(
            "send_receive_into(&a, &right, &mut b, &left);",
            "mpi::send_receive_into",
        );
        assert!(out.contains("Peer (& * (& right))"), "{out}");
        assert!(out.contains("Message (& * (& mut b))"), "{out}");
        // The source, which a ring shift's exchange receives from instead of its peer.
        assert!(
            out.contains(
                "let __mheta_source = (& :: mheta :: __private :: rsmpi :: Peer (& * (& left)))"
            ),
            "{out}"
        );
    }

    #[test]
    fn a_tagged_exchange_takes_its_buffer_and_source_after_the_tags() {
        // (message, destination, send tag, buffer, source, receive tag)
        let out = wrapped_statement(
            "send_receive_into_with_tags(&a, &right, 1, &mut b, &left, 2);",
            "mpi::send_receive_into_with_tags",
        );
        assert!(out.contains("Message (& * (& mut b))"), "{out}");
        assert!(out.contains("Peer (& * (& left))"), "{out}");
        // A replace exchange sends and receives in its one buffer.
        let out = wrapped_statement(
            "send_receive_replace_into(&mut b, &right, &left);",
            "mpi::send_receive_replace_into",
        );
        assert!(out.contains("Message (& * (& mut b))"), "{out}");
        assert!(out.contains("Peer (& * (& left))"), "{out}");
    }

    #[test]
    fn a_call_that_is_no_exchange_names_no_source() {
        let out = wrapped_statement("world.process_at_rank(p).send(&x);", "mpi::send");
        assert!(
            out.contains("let __mheta_source = :: core :: option :: Option :: None"),
            "{out}"
        );
    }

    #[test]
    fn arguments_that_cannot_be_read_twice_are_evaluated_once_in_order() {
        // `next()` may have effects and `k` may be a range that indexing moves.
        let out = wrapped_statement("world.process_at_rank(next()).send(&buf[k]);", "mpi::send");
        assert!(
            out.contains("let mut __mheta_recv = world . process_at_rank (next ()) ; let __mheta_a0 = & buf [k] ;"),
            "{out}"
        );
        assert!(out.contains("__mheta_recv . send (__mheta_a0)"), "{out}");
        assert!(out.contains("Message (& * __mheta_a0)"), "{out}");
    }

    #[test]
    fn a_call_not_at_a_listed_position_is_left_and_reported() {
        let mut block: Block = syn::parse_str("{\n    world.barrier();\n}").unwrap();
        let calls = [ForeignCall {
            event: 0,
            api: "mpi::barrier".into(),
            start: (3, 4),
        }];
        let left = wrap(&mut block, &calls);
        assert_eq!(left, calls);
        assert_eq!(
            block.to_token_stream().to_string(),
            "{ world . barrier () ; }"
        );
    }
}
