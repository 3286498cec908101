//! Communication-event formation (DESIGN §3.4, seed §5.2.1).
//!
//! Starting at each communication call, an event extends outward:
//! 1. **loop bounds** — a loop whose body holds only communication and glue is one event;
//! 2. **function boundaries** — a call of a communication-only function is one event;
//! 3. **single call** — otherwise the call statement (with its rank guard) is the event.
//!
//! Glue directly before an event belongs to it, unless an implicit stage is open (a statement
//! just before the glue): then the glue is part of that stage, as the automaton would record it.
//! Other glue stays a statement. Adjacent events with nothing but glue between them merge when
//! compatible (point-to-point with point-to-point, or the same collective). Each event then gets a pattern and symbolic
//! participants.

use mheta_format::{EventRule, Pattern};

use crate::body::Facts;
use crate::catalogue::CallKind;
use crate::diagnostics::Loc;
use crate::ir::{CallSite, Node, Stmt};

/// An event before it is numbered.
#[derive(Debug, Clone)]
pub struct EventDraft {
    /// Which of the three event rules formed it (DESIGN §3.4): one call, a communication loop, or
    /// a user function that only communicates.
    pub rule: EventRule,
    /// Its communication calls in program order.
    pub calls: Vec<CallSite>,
    /// Where it begins (its first call or the statement that holds it).
    pub loc: Loc,
    /// Loop variables of communication loops inside the event, with the range they run over.
    pub ranges: Vec<(String, String)>,
    /// Computation in the call's arguments, which runs before the event.
    pub computes: Option<Stmt>,
    /// The same event elsewhere: the other arm of an alternating branch, or the other arms of
    /// a rank-guarded branch whose arms communicate between their own computations.
    pub alt: Vec<Loc>,
    /// The `if` the event is the one communicating arm of (`if step % 10 == 0 { all_reduce(..)
    /// }`), whose condition may say how often it runs.
    pub guard: Option<Guard>,
}

/// The condition of an `if` with one communicating arm.
#[derive(Clone)]
pub struct Guard {
    /// The condition.
    pub cond: syn::Expr,
    /// The condition as written.
    pub text: String,
    /// Whether the communicating arm is the `if`'s (else the `else`'s).
    pub then_arm: bool,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("text", &self.text)
            .field("then_arm", &self.then_arm)
            .finish()
    }
}

/// Two guards are the same when their conditions are written alike (syn's own equality is not
/// compiled: `extra-traits`).
impl PartialEq for Guard {
    fn eq(&self, other: &Guard) -> bool {
        (&self.text, self.then_arm) == (&other.text, other.then_arm)
    }
}

/// Widens each of `a`'s places by the matching one of `b` (or takes `b`'s when `a` has none).
pub fn join_alts(a: &mut Vec<Loc>, b: &[Loc]) {
    if a.is_empty() {
        a.extend_from_slice(b);
    } else if a.len() == b.len() {
        for (x, y) in a.iter_mut().zip(b) {
            *x = x.to(*y);
        }
    }
}

/// A block after event formation.
#[derive(Debug, Clone)]
pub enum Item {
    /// A statement, loop or branch that is not (part of) an event.
    Node(Node),
    /// A communication event, with the calls and glue it owns.
    Event(EventDraft),
}

/// Forms the events of one block (not of nested loop bodies that stay loops).
pub fn form(nodes: Vec<Node>) -> Vec<Item> {
    let items: Vec<Item> = nodes.into_iter().map(classify).collect();
    merge(attach_glue(items))
}

/// Forms events without merging neighbours (inside a tile loop, where a receive, the stages and
/// one send are expected and a second communication must stay visible).
pub fn form_unmerged(nodes: Vec<Node>) -> Vec<Item> {
    let items = attach_glue(nodes.into_iter().map(classify).collect());
    // A completion right after the event it completes (`msg.matched_receive()` after
    // `matched_probe()`, `req.wait()` after `immediate_receive_into`) is that event's message.
    let mut out: Vec<Item> = Vec::with_capacity(items.len());
    for item in items {
        match (out.last_mut(), item) {
            (Some(Item::Event(prev)), Item::Event(next)) if completes(&next) => {
                prev.calls.extend(next.calls);
                prev.ranges.extend(next.ranges);
                prev.loc = prev.loc.to(next.loc);
                if next.rule == EventRule::Loop {
                    prev.rule = EventRule::Loop;
                }
            }
            (_, item) => out.push(item),
        }
    }
    out
}

/// Whether an event only completes communication started before it.
fn completes(e: &EventDraft) -> bool {
    e.computes.is_none()
        && e.guard.is_none()
        && e.alt.is_empty()
        && e.calls.iter().all(|c| c.kind == CallKind::Complete)
}

fn classify(node: Node) -> Item {
    if !node.has_comm() {
        return Item::Node(node);
    }
    if node.only_comm_and_glue() {
        return Item::Event(draft(&node, None));
    }
    match node {
        Node::Stmt(s) if s.computes || !s.io.is_empty() => {
            let mut compute = s.clone();
            compute.calls.clear();
            compute.function = None;
            let n = Node::Stmt(s);
            Item::Event(draft(&n, Some(compute)))
        }
        other => Item::Node(other),
    }
}

fn draft(node: &Node, computes: Option<Stmt>) -> EventDraft {
    let calls: Vec<CallSite> = node.calls().into_iter().cloned().collect();
    // Rule 1 is a loop that communicates; a packing loop around the calls does not make one.
    let rule = if node.has_comm_loop() {
        EventRule::Loop
    } else if has_function_call(node) {
        EventRule::Function
    } else {
        EventRule::SingleCall
    };
    let mut ranges = Vec::new();
    loop_ranges(node, &mut ranges);
    let loc = node
        .loc()
        .or_else(|| calls.first().map(|c| c.loc))
        .unwrap_or(Loc {
            file: 0,
            start: (0, 0),
            end: (0, 0),
            via: 0,
        });
    EventDraft {
        rule,
        calls,
        loc,
        ranges,
        computes,
        alt: node_alt(node).into_iter().collect(),
        guard: guard_of(node),
    }
}

/// The guard of a branch of which exactly one arm communicates: an `if` (not a `match`) with at
/// most an `else`.
fn guard_of(node: &Node) -> Option<Guard> {
    let Node::Branch(b) = node else { return None };
    let communicating = |arm: &Vec<Node>| arm.iter().any(Node::has_comm);
    let cond = b.cond_expr.as_ref()?;
    if b.arms.len() > 2 {
        return None;
    }
    match b.arms.iter().filter(|a| communicating(a)).count() {
        1 => Some(Guard {
            cond: cond.clone(),
            text: b.cond_text.clone(),
            then_arm: b.arms.first().is_some_and(communicating),
        }),
        _ => None,
    }
}

/// A node's place in the other arm of an alternating branch.
pub fn node_alt(node: &Node) -> Option<Loc> {
    match node {
        Node::Stmt(s) => s.alt,
        Node::Loop(l) => l.alt,
        Node::Branch(b) => b.alt,
    }
}

fn has_function_call(node: &Node) -> bool {
    match node {
        Node::Stmt(s) => s.function.is_some(),
        Node::Loop(l) => l.body.iter().any(has_function_call),
        Node::Branch(b) => b.arms.iter().flatten().any(has_function_call),
    }
}

fn loop_ranges(node: &Node, out: &mut Vec<(String, String)>) {
    match node {
        Node::Stmt(_) => {}
        Node::Loop(l) => {
            out.extend(l.vars.iter().map(|v| (v.clone(), l.header_text.clone())));
            l.body.iter().for_each(|n| loop_ranges(n, out));
        }
        Node::Branch(b) => b.arms.iter().flatten().for_each(|n| loop_ranges(n, out)),
    }
}

fn is_glue_item(item: &Item) -> bool {
    matches!(item, Item::Node(n) if n.is_glue())
}

fn attach_glue(items: Vec<Item>) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::new();
    let mut items = items.into_iter().peekable();
    while let Some(item) = items.next() {
        if !is_glue_item(&item) {
            out.push(item);
            continue;
        }
        let mut run = vec![item];
        while let Some(glue) = items.next_if(is_glue_item) {
            run.push(glue);
        }
        // An open implicit stage (a statement just before the glue) keeps recording the glue,
        // except the event's own messages and receive targets at its end; otherwise glue
        // directly before an event belongs to that event.
        let stage_open = matches!(out.last(), Some(Item::Node(Node::Stmt(_))));
        let staging = run
            .iter()
            .rev()
            .take_while(|it| matches!(it, Item::Node(Node::Stmt(s)) if s.stages_message))
            .count();
        let stage_open = match (stage_open, items.peek()) {
            (true, Some(Item::Event(_))) if staging > 0 => {
                out.extend(run.drain(..run.len() - staging));
                false
            }
            _ => stage_open,
        };
        match (items.peek(), stage_open) {
            (Some(Item::Event(_)), false) => {
                let Some(Item::Event(mut e)) = items.next() else {
                    unreachable!("the next item is an event");
                };
                let first = run.iter().find_map(|it| match it {
                    Item::Node(n) => n.loc(),
                    Item::Event(_) => None,
                });
                if let Some(first) = first {
                    e.loc = first.to(e.loc);
                }
                let first_alt = run.iter().find_map(|it| match it {
                    Item::Node(n) => node_alt(n),
                    Item::Event(_) => None,
                });
                if let (Some(first), [alt]) = (first_alt, e.alt.as_mut_slice()) {
                    *alt = first.to(*alt);
                }
                out.push(Item::Event(e));
            }
            // Unpacking right after an event that no other event follows belongs to it
            // (`u[0] = halo[0]`, `if rank > 0 { u[..nx].clone_from_slice(&top) }`); the
            // rest of the glue stays with what follows.
            (next, _)
                if !matches!(next, Some(Item::Event(_)))
                    && matches!(out.last(), Some(Item::Event(_))) =>
            {
                let unpacking = run
                    .iter()
                    .take_while(|it| matches!(it, Item::Node(n) if n.unpacks()))
                    .count();
                let last = run[..unpacking].iter().rev().find_map(|it| match it {
                    Item::Node(n) => n.loc(),
                    Item::Event(_) => None,
                });
                if let (Some(Item::Event(e)), Some(last)) = (out.last_mut(), last) {
                    e.loc = e.loc.to(last);
                }
                out.extend(run.drain(unpacking..));
            }
            _ => out.extend(run),
        }
    }
    out
}

/// The single collective pattern of an event, or `None` for point-to-point-only events.
fn collective(e: &EventDraft) -> Option<Pattern> {
    e.calls.iter().find_map(|c| match c.kind {
        CallKind::Collective(p) => Some(p),
        _ => None,
    })
}

/// The first item [`merge`] makes of `items` when it is an event: the leading events that
/// merge, merged (only they are copied).
pub fn first_merged_event(items: &[Item]) -> Option<EventDraft> {
    let leading: Vec<Item> = items
        .iter()
        .take_while(|it| matches!(it, Item::Event(_)))
        .cloned()
        .collect();
    match merge(leading).into_iter().next() {
        Some(Item::Event(d)) => Some(d),
        _ => None,
    }
}

/// Merges neighbouring events: an event that computes nothing joins the event before it when
/// both are the same collective (or neither is one). [`form`] is [`form_unmerged`] merged.
pub fn merge(items: Vec<Item>) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::new();
    for item in items {
        if let (Some(Item::Event(prev)), Item::Event(next)) = (out.last_mut(), &item) {
            if next.computes.is_none() && collective(prev) == collective(next) {
                prev.calls.extend(next.calls.iter().cloned());
                prev.ranges.extend(next.ranges.iter().cloned());
                prev.loc = prev.loc.to(next.loc);
                join_alts(&mut prev.alt, &next.alt);
                // One event runs as often as its parts run together: only parts under the
                // same guard keep it.
                if prev.guard != next.guard {
                    prev.guard = None;
                }
                if next.rule == EventRule::Loop {
                    prev.rule = EventRule::Loop;
                }
                continue;
            }
        }
        out.push(item);
    }
    out
}

/// An event's pattern, participants, message and element type.
#[derive(Debug, Clone, PartialEq)]
pub struct Described {
    /// The communication pattern the model prices (nearest neighbour, reduction, pipeline, …).
    pub pattern: Pattern,
    /// The peers as written, symbolic where they depend on the rank (`rank + 1`, `all`).
    pub participants: Vec<String>,
    /// The message's expression as written (the buffer sent), when the calls name one.
    pub message: Option<String>,
    /// The element type of the message (`f64`), when the facts know the buffer's.
    pub elem_type: Option<String>,
    /// Receives only, from one peer (the lookahead that starts a tile loop).
    pub receive_like: bool,
}

/// The pattern, participants, message and element type of `e`, from its calls and the facts
/// gathered while building the solver's body.
pub fn describe(e: &EventDraft, facts: &Facts) -> Described {
    let mut participants: Vec<String> = Vec::new();
    let push = |p: &mut Vec<String>, s: String| {
        if !p.contains(&s) {
            p.push(s);
        }
    };
    let ranges: Vec<(String, String)> = e
        .ranges
        .iter()
        .chain(e.calls.iter().flat_map(|c| c.ranges.iter()))
        .cloned()
        .collect();
    // Peers classified: ranged over the ranks (`for w in 1..size`), relative to the rank
    // (`rank - 1`, a neighbour list), literal (`0`), or anything else (`any`, a computed peer).
    let mut ranged_sends = false;
    let mut ranged_receives = false;
    let mut fixed_other = false;
    let mut relative = 0;
    let mut other = false;
    let peers = e
        .calls
        .iter()
        .filter(|c| c.kind != CallKind::Complete)
        .flat_map(|c| c.peers.iter().map(move |p| (c.kind, p)));
    let peers = peers.flat_map(|(kind, peer)| {
        let (resolved, from_range) = resolve_peer(peer, &ranges, facts);
        // A loop over a neighbour list (`for nb in &nbrs`, `nbrs` built from `[rank - 1,
        // rank + 1]`): its elements.
        match from_range
            .then(|| neighbour_list(&resolved, facts))
            .flatten()
        {
            Some(list) => list.into_iter().map(|p| (kind, p, false)).collect(),
            None => vec![(kind, resolved, from_range)],
        }
    });
    for (kind, resolved, from_range) in peers {
        // A name with `size` in it (`world_size`) is the size too, unless a `let` binds `size`
        // itself to something else.
        let over_ranks = from_range
            && (facts
                .size_vars
                .iter()
                .any(|s| resolved.contains(s.as_str()))
                || !facts.size_is_other && resolved.contains("size"));
        let words = crate::syntax::idents_of(&resolved);
        let literal =
            words.is_empty() && resolved.chars().all(|ch| ch.is_ascii_digit() || ch == '_');
        let rank_relative = !from_range
            && words.iter().any(|i| facts.is_rank(i))
            && resolved.chars().any(|ch| matches!(ch, '+' | '-' | '%'));
        if over_ranks {
            ranged_sends |= matches!(kind, CallKind::Send | CallKind::Exchange);
            ranged_receives |= matches!(kind, CallKind::Receive | CallKind::Exchange);
        } else if rank_relative || from_range {
            relative += 1;
        } else if literal {
            fixed_other = true;
        } else {
            other = true;
        }
        push(&mut participants, resolved);
    }
    let pattern = if let Some(hint) = e.calls.iter().find_map(|c| c.pattern_hint) {
        hint
    } else if let Some(p) = collective(e) {
        push(&mut participants, "all".into());
        p
    } else if participants.is_empty() || other {
        Pattern::PointToPoint
    } else if ranged_sends || ranged_receives {
        // One rank talks to all others in a loop; the others talk to it once.
        match (ranged_sends, ranged_receives) {
            (true, false) => Pattern::Scatter,
            (false, true) => Pattern::Gather,
            _ => Pattern::AllToAll,
        }
    } else if relative > 0 {
        // Neighbours by rank arithmetic (a literal peer is the neighbour of an edge rank).
        let _ = fixed_other;
        Pattern::NearestNeighbor
    } else {
        Pattern::PointToPoint
    };
    let message = e.calls.iter().find_map(|c| c.message.clone());
    let elem_type = e
        .calls
        .iter()
        .find_map(|c| c.elem_type.clone())
        .or_else(|| {
            let base: String = message
                .as_deref()?
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            facts
                .variables
                .iter()
                .find(|v| v.name == base)
                .and_then(|v| v.elem_type.clone())
        });
    let p2p: Vec<&CallSite> = e
        .calls
        .iter()
        .filter(|c| c.kind != CallKind::Complete)
        .collect();
    // A non-blocking probe polls: a loop that starts with one waits for no predecessor, so it
    // is no pipeline's tile loop (`for _ in 0..t { if let Some(_) = any.immediate_probe() {
    // receive; answer } }`).
    let polls = |c: &&CallSite| {
        let name = c.api.rsplit("::").next().unwrap_or(&c.api);
        name.starts_with("immediate_") && name.contains("probe")
    };
    let receive_like = !p2p.is_empty()
        && p2p.iter().all(|c| c.kind == CallKind::Receive)
        && !p2p.iter().any(polls)
        && participants.len() == 1;
    Described {
        pattern,
        participants,
        message,
        elem_type,
        receive_like,
    }
}

/// A peer as the participants list shows it: a loop variable becomes its range, a glue
/// variable its definition (`left` → `rank - 1`). Returns whether it came from a range.
fn resolve_peer(peer: &str, ranges: &[(String, String)], facts: &Facts) -> (String, bool) {
    // `*nb`, `&nb`: the value named.
    let name = peer.trim().trim_start_matches(['&', '*']).trim();
    if let Some((_, range)) = ranges.iter().rev().find(|(v, _)| v == name) {
        return (collection_of(range), true);
    }
    if let Some(def) = facts.glue_defs.get(name) {
        return (
            without_self(&without_casts(&fold_edge_cases(def, facts))),
            false,
        );
    }
    (
        without_self(&without_casts(&fold_edge_cases(name, facts))),
        false,
    )
}

/// A peer without `self.` before the fields it reads: in a method of the solver's struct,
/// `self.rank - 1` is `rank - 1`, as the participants name ranks.
fn without_self(peer: &str) -> String {
    let mut out = String::with_capacity(peer.len());
    let mut rest = peer;
    while let Some(at) = rest.find("self.") {
        let starts_word = rest[..at]
            .chars()
            .next_back()
            .map_or(true, |c| !(c.is_alphanumeric() || c == '_'));
        out.push_str(&rest[..at]);
        if !starts_word {
            out.push_str("self.");
        }
        rest = &rest[at + "self.".len()..];
    }
    out.push_str(rest);
    out
}

/// A peer without its integer conversions: `rank as i32 - 1` is `rank - 1`, as written
/// otherwise (`matrix.neighbors[i] as i32` is `matrix.neighbors[i]`).
fn without_casts(peer: &str) -> String {
    let mut out = peer.to_string();
    while let Some(at) = out.find(" as ") {
        let rest = &out[at + 4..];
        let ty = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        if ty == 0 {
            break;
        }
        out.replace_range(at..at + 4 + ty, "");
    }
    out
}

/// The rank-relative elements a neighbour list is built from: `[rank - 1, rank + 1]` or
/// `vec![..]` at the root of the chain that defines `name` (`.into_iter().filter(..).collect()`).
fn neighbour_list(name: &str, facts: &Facts) -> Option<Vec<String>> {
    let def = facts.glue_defs.get(name)?;
    let mut e = syn::parse_str::<syn::Expr>(def).ok()?;
    while let syn::Expr::MethodCall(m) = e {
        e = *m.receiver;
    }
    let elems: Vec<syn::Expr> = match e {
        syn::Expr::Array(a) => a.elems.into_iter().collect(),
        // `vec![a, b]` reads as the array `[a, b]`.
        syn::Expr::Macro(m) if m.mac.path.is_ident("vec") => {
            match &*crate::syntax::macro_args(&m.mac) {
                [syn::Expr::Array(a)] => a.elems.iter().cloned().collect(),
                _ => return None,
            }
        }
        _ => return None,
    };
    let relative = |e: &syn::Expr| {
        let text = quote::quote!(#e).to_string();
        facts.mentions_rank(&text) && text.contains(['+', '-'])
    };
    (!elems.is_empty() && elems.iter().all(relative)).then(|| {
        elems
            .iter()
            .map(|e| fold_edge_cases(&quote::quote!(#e).to_string(), facts))
            .collect()
    })
}

/// A peer whose edge ranks are special-cased (`if rank == 0 { size - 1 } else { rank - 1 }`,
/// `if rank + 1 < size { Some(rank + 1) } else { None }`) is the neighbour the other ranks
/// talk to: `rank - 1`.
fn fold_edge_cases(peer: &str, facts: &Facts) -> String {
    // Only an `if` or a block (perhaps after attributes, a label or comments) is folded: any
    // other peer needs no parsing.
    let start =
        peer.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{200e}' || c == '\u{200f}');
    let then = peer.contains(".then_some(") || peer.contains(".then(");
    if !(start.starts_with("if") || start.starts_with(['{', '\'', '#', '/']) || then) {
        return peer.to_string();
    }
    let Ok(e) = syn::parse_str::<syn::Expr>(peer) else {
        return peer.to_string();
    };
    fn relative(e: &syn::Expr, facts: &Facts) -> Option<String> {
        match e {
            syn::Expr::If(i) => {
                let then = i.then_branch.stmts.last().and_then(|s| match s {
                    syn::Stmt::Expr(e, None) => relative(e, facts),
                    _ => None,
                });
                let els = i.else_branch.as_ref().and_then(|(_, e)| relative(e, facts));
                then.or(els)
            }
            syn::Expr::Block(b) => b.block.stmts.last().and_then(|s| match s {
                syn::Stmt::Expr(e, None) => relative(e, facts),
                _ => None,
            }),
            syn::Expr::Paren(p) => relative(&p.expr, facts),
            syn::Expr::Cast(c) => relative(&c.expr, facts),
            syn::Expr::Call(c) if matches!(&*c.func, syn::Expr::Path(p) if p.path.is_ident("Some")) => {
                c.args.first().and_then(|a| relative(a, facts))
            }
            // `(rank + 1 < size).then_some(rank + 1)`, `(rank > 0).then(|| rank - 1)`.
            syn::Expr::MethodCall(m) if m.method == "then_some" => {
                m.args.first().and_then(|a| relative(a, facts))
            }
            syn::Expr::MethodCall(m) if m.method == "then" => match m.args.first() {
                Some(syn::Expr::Closure(c)) => relative(&c.body, facts),
                _ => None,
            },
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::Add(_) | syn::BinOp::Sub(_)) => {
                // Tokens print `self . rank`; a field reads as written.
                let text = quote::quote!(#e).to_string().replace(" . ", ".");
                facts.mentions_rank(&text).then_some(text)
            }
            _ => None,
        }
    }
    match &e {
        syn::Expr::If(_) | syn::Expr::Block(_) | syn::Expr::MethodCall(_) => {
            relative(&e, facts).unwrap_or_else(|| peer.to_string())
        }
        _ => peer.to_string(),
    }
}

/// The collection an iteration runs over: `halo.neighbours` for
/// `halo.neighbours.iter().enumerate()`, `1..size` for `(1..size)`.
fn collection_of(range: &str) -> String {
    let mut r = range.trim().trim_start_matches('&').trim().to_string();
    for suffix in [
        ".enumerate()",
        ".copied()",
        ".cloned()",
        ".rev()",
        ".iter()",
        ".into_iter()",
        ".iter_mut()",
    ]
    .iter()
    .cycle()
    .take(14)
    {
        if let Some(stripped) = r.strip_suffix(suffix) {
            r = stripped.to_string();
        }
    }
    if r.starts_with('(')
        && r.ends_with(')')
        && r[1..r.len() - 1].matches('(').count() == r[1..r.len() - 1].matches(')').count()
    {
        r = r[1..r.len() - 1].to_string();
    }
    r
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_peer_read_from_self_is_named_without_it() {
        assert_eq!(super::without_self("self.rank - 1"), "rank - 1");
        assert_eq!(
            super::without_self("(self.rank + 1) % self.size"),
            "(rank + 1) % size"
        );
        assert_eq!(super::without_self("myself.rank + 1"), "myself.rank + 1");
        assert_eq!(super::without_self("rank + 1"), "rank + 1");
    }
    use mheta_format::{CommEvent, EventRule, Pattern, SectionItem};

    /// The closing events of every section of the only solver in `src` (a `main` with rsmpi).
    fn events(body: &str) -> Vec<CommEvent> {
        let src = format!(
            "use mpi::traits::*;\nfn main() {{\n let universe = mpi::initialize().unwrap();\n let world = universe.world();\n \
             let rank = world.rank();\n let size = world.size();\n let mut a = vec![0.0f64; 100];\n {body}\n}}\n\
             fn halo(world: &SimpleCommunicator, rank: i32, a: &mut [f64]) {{\n let left = rank - 1;\n \
             world.process_at_rank(left).send(&a[1..2]);\n world.process_at_rank(left).receive_into(&mut a[0..1]);\n}}\n"
        );
        let analysis = crate::analyze_source("t.rs", &src, &crate::Options::default());
        assert!(!analysis.has_errors(), "{}", analysis.render_diagnostics());
        let solver = &analysis.structure.solvers[0];
        let mut out = Vec::new();
        for s in &solver.sections {
            for item in &s.items {
                if let SectionItem::Tiles(t) = item {
                    out.extend(t.recv.clone());
                    out.extend(t.send.clone());
                }
            }
            out.extend(s.comm.clone());
        }
        out
    }

    #[test]
    fn rule_single_call_with_its_rank_guard() {
        let e = events("for _ in 0..9 { for i in 0..100 { a[i] += 1.0; } if rank > 0 { world.process_at_rank(rank - 1).send(&a[0..1]); } }");
        assert_eq!(e.len(), 1);
        assert_eq!(
            (e[0].rule, e[0].pattern),
            (EventRule::SingleCall, Pattern::NearestNeighbor)
        );
        assert_eq!(e[0].participants, ["rank - 1"]);
        assert_eq!(e[0].message.as_deref(), Some("a[0..1]"));
        assert_eq!(e[0].elem_type.as_deref(), Some("f64"));
    }

    #[test]
    fn rule_loop_bounds_a_loop_of_communication_and_glue() {
        let e = events(
            "for _ in 0..9 { for i in 0..100 { a[i] += 1.0; } for r in 0..size { let tag = r * 2; if r != rank { world.process_at_rank(r).send_with_tag(&a[..], tag); } } }",
        );
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].rule, EventRule::Loop);
        assert_eq!(e[0].participants, ["0..size"]);
        assert_eq!(e[0].pattern, Pattern::Scatter);
    }

    #[test]
    fn rule_function_boundary_for_a_communication_only_function() {
        let e = events(
            "for _ in 0..9 { for i in 0..100 { a[i] += 1.0; } halo(&world, rank, &mut a); }",
        );
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].rule, EventRule::Function);
        assert_eq!(e[0].calls.len(), 2);
        assert_eq!(
            e[0].participants,
            ["rank - 1"],
            "the glue `left` resolves to its definition"
        );
        assert_eq!(e[0].pattern, Pattern::NearestNeighbor);
    }

    #[test]
    fn adjacent_guarded_calls_with_glue_between_merge() {
        let e = events(
            "for _ in 0..9 { for i in 0..100 { a[i] += 1.0; } if rank > 0 { world.process_at_rank(rank - 1).send(&a[1..2]); } \
             let up = rank + 1; if up < size { world.process_at_rank(up).receive_into(&mut a[99..]); } }",
        );
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].calls.len(), 2);
        assert_eq!(e[0].participants, ["rank - 1", "rank + 1"]);
    }

    #[test]
    fn point_to_point_and_collective_do_not_merge() {
        let e = events(
            "for _ in 0..9 { for i in 0..100 { a[i] += 1.0; } world.process_at_rank(0).send(&a[..]); let mut s = 0.0; \
             world.all_reduce_into(&a[0], &mut s, mpi::collective::SystemOperation::sum()); }",
        );
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].pattern, e[1].pattern),
            (Pattern::PointToPoint, Pattern::Reduction)
        );
        assert_eq!(e[1].participants, ["all"]);
    }

    #[test]
    fn same_collectives_merge() {
        let e = events(
            "for _ in 0..9 { for i in 0..100 { a[i] += 1.0; } let mut s = 0.0; let mut t = 0.0; \
             world.all_reduce_into(&a[0], &mut s, op); world.all_reduce_into(&a[1], &mut t, op); }",
        );
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].calls.len(), 2);
    }

    #[test]
    fn glue_after_a_loop_belongs_to_the_event() {
        let body =
            "for _ in 0..9 { for i in 0..100 { a[i] += 1.0; } let s = a.len(); world.barrier(); }";
        let e = events(body);
        assert_eq!(e[0].pattern, Pattern::Barrier);
        assert_eq!(e[0].span.column as usize, body.find("let s").unwrap() + 2);
    }

    #[test]
    fn glue_after_a_statement_stays_in_the_stage() {
        let body =
            "for _ in 0..9 { a.sort_by(|x, y| x.total_cmp(y)); let s = a.len(); world.barrier(); }";
        let e = events(body);
        assert_eq!(
            e[0].span.column as usize,
            body.find("world.barrier").unwrap() + 2
        );
    }

    #[test]
    fn a_receive_target_after_a_statement_belongs_to_the_event() {
        let body = "for _ in 0..9 { a.sort_by(|x, y| x.total_cmp(y)); let mut s = 0.0; \
                    world.all_reduce_into(&a[0], &mut s, mpi::collective::SystemOperation::sum()); }";
        let e = events(body);
        assert_eq!(
            e[0].span.column as usize,
            body.find("let mut s").unwrap() + 2
        );
    }

    #[test]
    fn send_receive_through_a_use_alias_names_both_process_arguments() {
        let src = "use mpi::point_to_point as p2p;\nuse mpi::traits::*;\nfn main() {\n let u = mpi::initialize().unwrap();\n \
                   let world = u.world();\n let rank = world.rank();\n let size = world.size();\n let mut a = vec![0.0f64; 10];\n \
                   for _ in 0..9 {\n  for i in 1..9 { a[i] *= 0.5; }\n  let right = if rank == size - 1 { 0 } else { rank + 1 };\n  \
                   let left = if rank == 0 { size - 1 } else { rank - 1 };\n  let mut ghost = 0.0;\n  \
                   p2p::send_receive_into(&a[8], &world.process_at_rank(right), &mut ghost, &world.process_at_rank(left));\n  a[0] = ghost;\n }\n}\n";
        let analysis = crate::analyze_source("t.rs", src, &crate::Options::default());
        assert!(!analysis.has_errors(), "{}", analysis.render_diagnostics());
        let e = analysis.structure.solvers[0].sections[0]
            .comm
            .clone()
            .expect("the exchange is an event");
        assert_eq!(e.calls[0].api, "mpi::send_receive_into");
        assert_eq!(e.pattern, Pattern::NearestNeighbor);
        assert_eq!(
            e.participants,
            ["rank + 1", "rank - 1"],
            "both Process arguments, their edge cases folded"
        );
    }

    /// The only solver of a `main` with rsmpi whose body is `body`.
    fn solver_of(body: &str) -> mheta_format::Solver {
        let src = format!(
            "use mpi::traits::*;\nuse mpi::point_to_point::send_receive_replace_into;\nfn main() {{\n \
             let universe = mpi::initialize().unwrap();\n let world = universe.world();\n \
             let rank = world.rank();\n let size = world.size();\n let n = 8;\n let mut a = vec![0.0f64; n + 2];\n \
             let mut b = vec![0.0f64; n + 2];\n {body}\n}}\n"
        );
        let analysis = crate::analyze_source("t.rs", &src, &crate::Options::default());
        assert!(!analysis.has_errors(), "{}", analysis.render_diagnostics());
        analysis.structure.solvers[0].clone()
    }

    #[test]
    fn an_element_staged_as_the_message_is_glue_and_guarded_exchanges_form_one_event() {
        let s = solver_of(
            "for _ in 0..9 {\n \
             if rank > 0 { let left = world.process_at_rank(rank - 1); let mut edge = a[1]; \
             send_receive_replace_into(&mut edge, &left, &left); a[0] = edge; }\n \
             if rank < size - 1 { let right = world.process_at_rank(rank + 1); let mut edge = a[n]; \
             send_receive_replace_into(&mut edge, &right, &right); a[n + 1] = edge; }\n \
             for i in 1..=n { b[i] = 0.5 * (a[i - 1] + a[i + 1]); }\n std::mem::swap(&mut a, &mut b);\n}",
        );
        let e = s.sections[0]
            .comm
            .as_ref()
            .expect("the exchange is an event");
        assert_eq!(e.pattern, Pattern::NearestNeighbor);
        assert_eq!(e.participants, ["rank - 1", "rank + 1"]);
        assert!(
            s.sections[0].items.is_empty(),
            "no stage before the exchange: {:?}",
            s.sections[0].items
        );
    }

    #[test]
    fn an_element_read_that_no_communication_sends_is_computation() {
        let s = solver_of(
            "for _ in 0..9 {\n let mut edge = a[1];\n world.barrier();\n \
             for i in 1..=n { b[i] = edge * a[i]; edge += 1.0; }\n std::mem::swap(&mut a, &mut b);\n}",
        );
        assert_eq!(
            s.sections[0].items.len(),
            1,
            "`let mut edge = a[1]` is a stage"
        );
    }

    /// A peer stepped as the loop goes (round robin over the workers) is not its first value;
    /// a peer reassigned at the edges (`if left < 0 { left = size - 1 }`) still is.
    #[test]
    fn a_peer_stepped_in_the_loop_is_not_its_initial_value() {
        let s = solver_of(
            "let mut to = 1;\n for _ in 0..9 {\n world.process_at_rank(to).send(&a[1]);\n \
             to += 1;\n if to == size { to = 1; }\n for i in 1..=n { b[i] = 0.5 * a[i]; }\n}",
        );
        let e = s.sections[0].comm.as_ref().expect("the send is an event");
        assert_eq!(e.participants, ["to"]);
        let s = solver_of(
            "let mut left = rank - 1;\n if left < 0 { left = size - 1; }\n for _ in 0..9 {\n \
             world.process_at_rank(left).send(&a[1]);\n for i in 1..=n { b[i] = 0.5 * a[i]; }\n}",
        );
        let e = s.sections[0].comm.as_ref().expect("the send is an event");
        assert_eq!(e.participants, ["rank - 1"]);
    }

    #[test]
    fn a_peer_unwrapped_by_if_let_is_what_the_option_holds() {
        let s = solver_of(
            "let up = if rank > 0 { Some(rank - 1) } else { None };\n \
             let down = if rank < size - 1 { Some(rank + 1) } else { None };\n \
             for _ in 0..9 {\n \
             if let Some(p) = up { let peer = world.process_at_rank(p); let mut x = a[1]; send_receive_replace_into(&mut x, &peer, &peer); a[0] = x; }\n \
             if let Some(p) = down { let peer = world.process_at_rank(p); let mut x = a[n]; send_receive_replace_into(&mut x, &peer, &peer); a[n + 1] = x; }\n \
             for i in 1..=n { b[i] = 0.5 * (a[i - 1] + a[i + 1]); }\n std::mem::swap(&mut a, &mut b);\n}",
        );
        let e = s.sections[0]
            .comm
            .as_ref()
            .expect("the exchange is an event");
        assert_eq!(
            (e.pattern, e.participants.as_slice()),
            (
                Pattern::NearestNeighbor,
                &["rank - 1".to_string(), "rank + 1".to_string()][..]
            )
        );
    }

    #[test]
    fn a_counted_while_loop_indexes_like_a_for_loop() {
        let s = solver_of(
            "for _ in 0..9 {\n world.barrier();\n let mut i = 1;\n \
             while i <= n { b[i] = 0.5 * (a[i - 1] + a[i + 1]); i += 1; }\n std::mem::swap(&mut a, &mut b);\n}",
        );
        let stages: Vec<_> = s
            .sections
            .iter()
            .flat_map(|sec| &sec.items)
            .filter_map(|item| match item {
                SectionItem::Stage(st) if st.kind == mheta_format::StageKind::Loop => Some(st),
                _ => None,
            })
            .collect();
        assert_eq!(stages.len(), 1);
        assert_eq!(stages[0].access, mheta_format::Access::Stencil);
    }

    #[test]
    fn a_packing_loop_under_envelope_guards_is_glue_and_makes_no_loop_rule() {
        let body = "for _ in 0..9 { let mut buf = vec![0.0f64; 4]; \
                    for k in 0..4 { if k % 2 == 0 { buf[k] = a[k * 10]; } } \
                    if rank + 1 < size { world.process_at_rank(rank + 1).send(&buf[..]); } \
                    for i in 0..100 { a[i] += 1.0; } }";
        let s = solver_of(body);
        let e = s.sections[0].comm.as_ref().expect("the send is an event");
        assert_eq!(e.rule, EventRule::SingleCall);
        assert!(s.sections[0].items.is_empty(), "{:?}", s.sections[0].items);
        assert_eq!(
            e.span.column as usize,
            body.find("let mut buf").unwrap() + 2,
            "the event begins with its buffer and packing loop"
        );
    }

    #[test]
    fn unpacking_right_after_an_event_belongs_to_it_and_other_glue_does_not() {
        let body = "for _ in 0..9 { let mut ghost = [0.0f64; 2]; \
                    mpi::point_to_point::send_receive_into(&a[1], &world.process_at_rank(rank - 1), &mut ghost[0], &world.process_at_rank(rank - 1)); \
                    if rank > 0 { a[0] = ghost[0]; } a[n + 1] = ghost[1]; let mut local = 0.0; \
                    for i in 1..=n { b[i] = a[i - 1] + a[i + 1]; local += b[i]; } std::mem::swap(&mut a, &mut b); }";
        let s = solver_of(body);
        let e = s.sections[0]
            .comm
            .as_ref()
            .expect("the exchange is an event");
        // Its end: just past `a[n + 1] = ghost[1];` (1-based, exclusive; the body sits one
        // column in).
        let unpack_end = body.find("ghost[1]; let").unwrap() + "ghost[1];".len() + 2;
        assert_eq!(
            (e.span.line, e.span.end_column as usize),
            (e.span.end_line, unpack_end),
            "the event ends after `a[n + 1] = ghost[1];`"
        );
        let SectionItem::Stage(first) = &s.sections[1].items[0] else {
            panic!("a stage follows: {:?}", s.sections[1]);
        };
        assert_eq!(
            first.span.column as usize,
            body.find("let mut local").unwrap() + 2
        );
    }

    #[test]
    fn loops_over_a_neighbour_list_are_one_event_with_its_elements_as_participants() {
        let e = events(
            "let nbrs: Vec<i32> = vec![rank - 1, rank + 1].into_iter().filter(|r| (0..size).contains(r)).collect();\n \
             for _ in 0..9 {\n \
             for &nb in &nbrs { let edge = if nb < rank { a[1] } else { a[98] }; world.process_at_rank(nb).send(&edge); }\n \
             for nb in nbrs.iter() { world.process_at_rank(*nb).receive_into(&mut a[0]); }\n \
             for i in 1..99 { a[i] += 1.0; }\n}",
        );
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(
            (e[0].rule, e[0].pattern, e[0].participants.as_slice()),
            (
                EventRule::Loop,
                Pattern::NearestNeighbor,
                &["rank - 1".to_string(), "rank + 1".to_string()][..]
            )
        );
    }

    #[test]
    fn a_mixed_callee_inside_an_expression_is_inlined_at_that_call() {
        let src = "use mpi::traits::*;\nuse mpi::collective::SystemOperation;\n\
                   fn dot(world: &mpi::topology::SimpleCommunicator, a: &[f64], b: &[f64]) -> f64 {\n \
                   let local: f64 = a.iter().zip(b).map(|(x, y)| x * y).sum();\n let mut sum = 0.0;\n \
                   world.all_reduce_into(&local, &mut sum, SystemOperation::sum());\n sum\n}\n\
                   fn main() {\n let u = mpi::initialize().unwrap();\n let world = u.world();\n \
                   let mut a = vec![1.0f64; 10];\n let mut norm = 0.0;\n \
                   for _ in 0..9 {\n  for i in 1..9 { a[i] = 0.5 * (a[i - 1] + a[i + 1]); }\n  \
                   norm = dot(&world, &a, &a).sqrt();\n  let scale = 2.0 / dot(&world, &a, &a);\n  \
                   for i in 0..10 { a[i] *= scale; }\n }\n}\n";
        let analysis = crate::analyze_source("t.rs", src, &crate::Options::default());
        assert!(!analysis.has_errors(), "{}", analysis.render_diagnostics());
        let solver = &analysis.structure.solvers[0];
        let events: Vec<_> = solver
            .sections
            .iter()
            .filter_map(|s| s.comm.as_ref())
            .collect();
        assert_eq!(events.len(), 2, "one reduction per call");
        // From the receive target `let mut sum` (line 5) to the reduction (line 6).
        assert!(events
            .iter()
            .all(|e| e.span.line == 5 && e.calls[0].api == "mpi::all_reduce_into"));
        // Each call's local dot product is a loop stage of the section its reduction closes.
        for s in &solver.sections[..2] {
            assert!(s
                .items
                .iter()
                .any(|item| matches!(item, SectionItem::Stage(st) if st.span.line == 4)));
        }
    }

    #[test]
    fn participants_lose_their_casts_and_keep_their_spelling() {
        assert_eq!(super::without_casts("rank as i32 - 1"), "rank - 1");
        assert_eq!(
            super::without_casts("matrix.neighbors[i] as i32"),
            "matrix.neighbors[i]"
        );
        assert_eq!(
            super::without_casts("(r as usize + 1) % size"),
            "(r + 1) % size"
        );
        assert_eq!(super::without_casts("rank + 1"), "rank + 1");
    }

    #[test]
    fn a_channel_send_never_forms_an_event() {
        let e = events(
            "let (tx, rx) = std::sync::mpsc::channel(); for _ in 0..9 { for i in 0..100 { a[i] += 1.0; tx.send(i).unwrap(); } world.barrier(); }",
        );
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].calls[0].api, "mpi::barrier");
    }
}
