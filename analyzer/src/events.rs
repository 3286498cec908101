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

use mheta_runtime::format::{EventRule, Pattern};

use crate::body::Facts;
use crate::catalogue::CallKind;
use crate::diagnostics::Loc;
use crate::ir::{CallSite, Node, Stmt};

/// An event before it is numbered.
#[derive(Debug, Clone)]
pub struct EventDraft {
    pub rule: EventRule,
    pub calls: Vec<CallSite>,
    pub loc: Loc,
    /// Loop variables of communication loops inside the event, with the range they run over.
    pub ranges: Vec<(String, String)>,
    /// Computation in the call's arguments, which runs before the event.
    pub computes: Option<Stmt>,
}

/// A block after event formation.
#[derive(Debug, Clone)]
pub enum Item {
    Node(Node),
    Event(EventDraft),
}

/// Forms the events of one block (not of nested loop bodies that stay loops).
pub fn form(nodes: Vec<Node>) -> Vec<Item> {
    let items: Vec<Item> = nodes.into_iter().map(classify).collect();
    merge(attach_glue(items))
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
    let rule = if node.has_loop() {
        EventRule::Loop
    } else if has_function_call(node) {
        EventRule::Function
    } else {
        EventRule::SingleCall
    };
    let mut ranges = Vec::new();
    loop_ranges(node, &mut ranges);
    let loc = node.loc().or_else(|| calls.first().map(|c| c.loc)).unwrap_or(Loc { file: 0, start: (0, 0), end: (0, 0) });
    EventDraft { rule, calls, loc, ranges, computes }
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
    let mut i = 0;
    while i < items.len() {
        if !is_glue_item(&items[i]) {
            out.push(items[i].clone());
            i += 1;
            continue;
        }
        let start = i;
        while i < items.len() && is_glue_item(&items[i]) {
            i += 1;
        }
        // An open implicit stage (a statement just before the glue) keeps recording the glue;
        // otherwise glue directly before an event belongs to that event.
        let stage_open = matches!(out.last(), Some(Item::Node(Node::Stmt(_))));
        let first = items[start..i].iter().find_map(|it| if let Item::Node(n) = it { n.loc() } else { None });
        match (items.get(i), stage_open) {
            (Some(Item::Event(e)), false) => {
                let mut e = e.clone();
                if let Some(first) = first {
                    e.loc = first.to(e.loc);
                }
                out.push(Item::Event(e));
                i += 1;
            }
            _ => out.extend(items[start..i].iter().cloned()),
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

fn merge(items: Vec<Item>) -> Vec<Item> {
    let mut out: Vec<Item> = Vec::new();
    for item in items {
        if let (Some(Item::Event(prev)), Item::Event(next)) = (out.last_mut(), &item) {
            if next.computes.is_none() && collective(prev) == collective(next) {
                prev.calls.extend(next.calls.iter().cloned());
                prev.ranges.extend(next.ranges.iter().cloned());
                prev.loc = prev.loc.to(next.loc);
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
    pub pattern: Pattern,
    pub participants: Vec<String>,
    pub message: Option<String>,
    pub elem_type: Option<String>,
    /// Receives only, from one peer (the lookahead that starts a tile loop).
    pub receive_like: bool,
}

pub fn describe(e: &EventDraft, facts: &Facts) -> Described {
    let mut participants: Vec<String> = Vec::new();
    let push = |p: &mut Vec<String>, s: String| {
        if !p.contains(&s) {
            p.push(s);
        }
    };
    let ranges: Vec<(String, String)> = e.ranges.iter().chain(e.calls.iter().flat_map(|c| c.ranges.iter())).cloned().collect();
    let mut over_ranks = false;
    let mut all_rank_relative = true;
    for c in e.calls.iter().filter(|c| c.kind != CallKind::Complete) {
        let Some(peer) = &c.peer else { continue };
        let (resolved, from_range) = resolve_peer(peer, &ranges, facts);
        if from_range {
            let r = &resolved;
            over_ranks |= facts.size_vars.iter().any(|s| r.contains(s.as_str())) || r.contains("size");
        }
        let rank_relative = !from_range
            && resolved != "any"
            && idents(&resolved).iter().any(|i| facts.rank_vars.contains(i) || i == "rank")
            && idents(&resolved).len() >= 1
            && resolved.chars().any(|ch| matches!(ch, '+' | '-' | '%'));
        all_rank_relative &= rank_relative || (from_range && !over_ranks);
        push(&mut participants, resolved);
    }
    let sends = e.calls.iter().any(|c| matches!(c.kind, CallKind::Send | CallKind::Exchange));
    let receives = e.calls.iter().any(|c| matches!(c.kind, CallKind::Receive | CallKind::Exchange));
    let pattern = if let Some(hint) = e.calls.iter().find_map(|c| c.pattern_hint) {
        hint
    } else if let Some(p) = collective(e) {
        push(&mut participants, "all".into());
        p
    } else if participants.is_empty() {
        Pattern::PointToPoint
    } else if over_ranks {
        match (sends, receives) {
            (true, false) => Pattern::Scatter,
            (false, true) => Pattern::Gather,
            _ => Pattern::AllToAll,
        }
    } else if all_rank_relative {
        Pattern::NearestNeighbor
    } else {
        Pattern::PointToPoint
    };
    let message = e.calls.iter().find_map(|c| c.message.clone());
    let elem_type = e.calls.iter().find_map(|c| c.elem_type.clone()).or_else(|| {
        let base: String = message.as_deref()?.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        facts.variables.iter().find(|v| v.name == base).and_then(|v| v.elem_type.clone())
    });
    let p2p: Vec<&CallSite> = e.calls.iter().filter(|c| c.kind != CallKind::Complete).collect();
    let receive_like = !p2p.is_empty() && p2p.iter().all(|c| c.kind == CallKind::Receive) && participants.len() == 1;
    Described { pattern, participants, message, elem_type, receive_like }
}

/// A peer as the participants list shows it: a loop variable becomes its range, a glue
/// variable its definition (`left` → `rank - 1`). Returns whether it came from a range.
fn resolve_peer(peer: &str, ranges: &[(String, String)], facts: &Facts) -> (String, bool) {
    let name = peer.trim();
    if let Some((_, range)) = ranges.iter().rev().find(|(v, _)| v == name) {
        return (range.clone(), true);
    }
    if let Some(def) = facts.glue_defs.get(name) {
        return (def.clone(), false);
    }
    (name.to_string(), false)
}

fn idents(s: &str) -> Vec<String> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_string)
        .collect()
}
