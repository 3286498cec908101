//! The intermediate form between syntax and tokens: a function body as a tree of statements,
//! loops and branches, each annotated with what it reads, writes, communicates and does I/O on.
//!
//! `body.rs` builds it from syn (with binding analysis and interprocedural inlining),
//! `events.rs` groups its communication into events, `lower.rs` flattens it into tokens.

use mheta_format::{IoKind, Pattern};

use crate::catalogue::CallKind;
use crate::diagnostics::Loc;
use crate::syntax::{codes, Code};

/// One catalogued communication call (or a call of a communication function, rule 2).
#[derive(Debug, Clone, PartialEq)]
pub struct CallSite {
    /// Catalogue name: `mpi::send`, `comm::all_reduce`, or the user function's path.
    pub api: String,
    /// What the call does: send, receive, exchange, request completion or a collective.
    pub kind: CallKind,
    /// The peers of a point-to-point call (both of `send_receive_into(.., &right, .., &left)`),
    /// or the root of a rooted collective, as written.
    pub peers: Vec<String>,
    /// The message (buffer) argument as written, without its leading `&`; `None` for a request
    /// completion or when no argument is visible (an uncatalogued communication function).
    pub message: Option<String>,
    /// The element type when the call names it (`reduce_into::<f64>`); `None` otherwise.
    pub elem_type: Option<String>,
    /// Where the call is written.
    pub loc: Loc,
    /// A pattern named in mheta.toml for the user function this call belongs to.
    pub pattern_hint: Option<Pattern>,
    /// The loop variables and ranges of communication-only loops around this call inside a
    /// communication function (for participants such as `for nb in neighbours`).
    pub ranges: Vec<(String, String)>,
}

/// An array element access `var[d0][d1]…` (dimension expressions kept for classification).
#[derive(Clone)]
pub struct IndexAccess {
    /// The array indexed, after slice aliases are resolved to the array they view.
    pub var: String,
    /// The index expressions, outermost first (`d0`, `d1`, …).
    pub dims: Vec<syn::Expr>,
    /// The element is written (assigned to), not only read.
    pub write: bool,
}

impl std::fmt::Debug for IndexAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexAccess")
            .field("var", &self.var)
            .field("dims", &codes(&self.dims))
            .field("write", &self.write)
            .finish()
    }
}

/// An I/O operation on a variable's data (DESIGN §3.7): a method of the runtime's out-of-core
/// array or a function or method named in mheta.toml's `[io]`.
#[derive(Debug, Clone, PartialEq)]
pub struct IoCall {
    /// Read, write, prefetch or wait.
    pub op: IoKind,
    /// The variable whose data moves (the receiver or first argument, as written when it is
    /// not a plain variable).
    pub var: String,
    /// Where the call is written.
    pub loc: Loc,
}

/// A statement without loops inside (closures that are not loops are part of it).
#[derive(Clone, Default)]
pub struct Stmt {
    /// Where the statement is written; `None` only for a statement not scanned from source.
    pub loc: Option<Loc>,
    /// Variables the statement reads.
    pub reads: Vec<String>,
    /// Variables the statement writes: assigned, mutated through a method or a `&mut`, or
    /// declared by its `let`.
    pub writes: Vec<String>,
    /// Names this statement declares (`let`), which are local when inside a loop.
    pub declares: Vec<String>,
    /// `let name = init` with a single name: the initialiser, for index aliases such as
    /// `let c = i * cols + j; field[c - cols]`.
    pub defs: Vec<(String, syn::Expr)>,
    /// Its array element accesses, for affine index coefficients and stencil detection.
    pub accesses: Vec<IndexAccess>,
    /// Its communication calls, in source order.
    pub calls: Vec<CallSite>,
    /// Its I/O operations, in source order.
    pub io: Vec<IoCall>,
    /// Only prepares or unpacks a message envelope (DESIGN §3.4).
    pub glue: bool,
    /// The statement calls a communication function (rule 2): its path.
    pub function: Option<String>,
    /// A communication statement whose arguments also compute (`all_reduce(&dot(a, b), ..)`).
    pub computes: bool,
    /// Macros that were not expanded and might hide communication: (name, location).
    pub opaque_macros: Vec<(String, Loc)>,
    /// Calls of a closure the function was given (`report(step, &v)` with `report: &mut dyn
    /// FnMut(..)`), whose body is not seen: (parameter, location).
    pub closure_calls: Vec<(String, Loc)>,
    /// The same statement in the other arm of an alternating branch (`if it % 2 == 0 { f(a, b) }
    /// else { f(b, a) }`), measured as this one.
    pub alt: Option<Loc>,
    /// `name += <integer literal>`: the statement steps a counter.
    pub increments: Option<String>,
    /// A `let` whose value is plain element reads (`let edge = u[1]`, `let (a, b) = (u[1],
    /// u[n])`): glue when what it binds is the message of the communication that follows.
    pub copies_elements: bool,
    /// A `let` binding a message or receive target of the communication that follows: it
    /// belongs to that event even after computation.
    pub stages_message: bool,
}

impl Stmt {
    /// Glue that writes array elements, each read from another array (`buf[k] = u[k * nx + 1]`,
    /// never within one array: `t[i * n + j] = t[j * n + i]` transposes data).
    pub fn moves_elements(&self) -> bool {
        let mut writes = self.accesses.iter().filter(|a| a.write).peekable();
        self.glue
            && self.calls.is_empty()
            && writes.peek().is_some()
            && writes.all(|w| self.accesses.iter().all(|r| r.write || r.var != w.var))
    }
}

/// The syntax a loop is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    /// `for pat in iterable { .. }`.
    For,
    /// `while cond { .. }` or `while let pat = expr { .. }`.
    While,
    /// `loop { .. }`.
    Loop,
    /// An iterator chain with per-element closures or consuming data (`a.iter().map(..).sum()`,
    /// `par_iter().for_each(..)`).
    Iterator,
}

impl LoopKind {
    /// The kind's name in the structure file (`main_loop.kind`) and in traces: `for`, `while`,
    /// `loop` or `iterator`.
    pub fn as_str(self) -> &'static str {
        match self {
            LoopKind::For => "for",
            LoopKind::While => "while",
            LoopKind::Loop => "loop",
            LoopKind::Iterator => "iterator",
        }
    }
}

/// A loop: a loop expression or an iterator chain over a range or collection (DESIGN §3.5).
#[derive(Debug, Clone)]
pub struct Loop {
    /// Where the loop is written.
    pub loc: Loc,
    /// Which syntax it is.
    pub kind: LoopKind,
    /// Variables the loop binds (`i` in `for i in ..`, closure parameters).
    pub vars: Vec<String>,
    /// Variables the loop's bounds or condition read.
    pub bound_reads: Vec<String>,
    /// The iterable or condition as written.
    pub header_text: String,
    /// Trip count when it can be read off (`2`, `k`), else `..`.
    pub trip_count: String,
    /// The header's own effects (iterable expression, the `let` an iterator chain feeds).
    pub header: Stmt,
    /// The loop's body, in source order.
    pub body: Vec<Node>,
    /// Marked `#[mheta::iterate]`.
    pub iterate: bool,
    /// The same loop in the other arm of an alternating branch.
    pub alt: Option<Loc>,
}

impl Loop {
    /// The header and every statement of the body, in source order (see [`Node::each_stmt`]).
    fn each_stmt<'a>(&'a self, f: &mut impl FnMut(&'a Stmt)) {
        f(&self.header);
        self.body.iter().for_each(|n| n.each_stmt(f));
    }

    /// Whether any communication call is inside (see [`Node::has_comm`]).
    pub fn has_comm(&self) -> bool {
        !self.header.calls.is_empty() || self.body.iter().any(Node::has_comm)
    }

    /// Whether the loop holds only communication and glue (see [`Node::only_comm_and_glue`]).
    /// A loop that does not communicate is glue only when it only moves elements between
    /// arrays and message buffers (packing, unpacking); otherwise it computes.
    pub fn only_comm_and_glue(&self) -> bool {
        self.is_glue()
            // The header may communicate itself: `while let Some(..) = coll.wait_any()`.
            || self.has_comm()
                && (self.header.glue || !self.header.computes && self.header.io.is_empty())
                && self.body.iter().all(Node::only_comm_and_glue)
    }

    /// One loop level that moves elements from one array into another, perhaps under envelope
    /// guards (`for &(k, _, data) in &done { if k < 2 { halo[k] = data[0] } }`); see
    /// [`Node::is_glue`].
    pub fn is_glue(&self) -> bool {
        fn packs(n: &Node) -> bool {
            match n {
                Node::Stmt(s) => s.glue && s.calls.is_empty(),
                Node::Branch(b) => b.cond.glue && b.arms.iter().flatten().all(packs),
                Node::Loop(_) => false,
            }
        }
        fn moves(n: &Node) -> bool {
            match n {
                Node::Stmt(s) => s.moves_elements() || n.unpacks(),
                Node::Branch(b) => b.arms.iter().flatten().any(moves),
                Node::Loop(_) => false,
            }
        }
        self.kind != LoopKind::Iterator
            && self.header.glue
            && self.header.calls.is_empty()
            && self.body.iter().all(packs)
            && self.body.iter().any(moves)
    }

    /// Every communication call inside, in source order.
    pub fn calls(&self) -> Vec<&CallSite> {
        let mut out = Vec::new();
        self.each_stmt(&mut |s| out.extend(&s.calls));
        out
    }
}

impl std::fmt::Debug for Stmt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Destructured, so that a new field cannot be left out.
        let Stmt {
            loc,
            reads,
            writes,
            declares,
            defs,
            accesses,
            calls,
            io,
            glue,
            function,
            computes,
            opaque_macros,
            closure_calls,
            alt,
            increments,
            copies_elements,
            stages_message,
        } = self;
        let defs: Vec<_> = defs.iter().map(|(n, e)| (n, Code(e))).collect();
        f.debug_struct("Stmt")
            .field("loc", loc)
            .field("reads", reads)
            .field("writes", writes)
            .field("declares", declares)
            .field("defs", &defs)
            .field("accesses", accesses)
            .field("calls", calls)
            .field("io", io)
            .field("glue", glue)
            .field("function", function)
            .field("computes", computes)
            .field("opaque_macros", opaque_macros)
            .field("closure_calls", closure_calls)
            .field("alt", alt)
            .field("increments", increments)
            .field("copies_elements", copies_elements)
            .field("stages_message", stages_message)
            .finish()
    }
}

/// An `if`/`else if`/`else` chain level or a `match` whose arms hold loops, communication or
/// further branches (any other is one [`Stmt`]).
#[derive(Clone)]
pub struct Branch {
    /// Where the whole `if` or `match` is written.
    pub loc: Loc,
    /// The same branch in the other arm of an alternating branch.
    pub alt: Option<Loc>,
    /// The effects of the condition (or of the `match` scrutinee).
    pub cond: Stmt,
    /// The condition of an `if` (not of a `match`), for guards on the iteration counter.
    pub cond_expr: Option<syn::Expr>,
    /// The condition as written.
    pub cond_text: String,
    /// The arms in source order: for an `if`, the then-block and the `else` if there is one;
    /// for a `match`, one per arm.
    pub arms: Vec<Vec<Node>>,
}

impl std::fmt::Debug for Branch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Branch {
            loc,
            alt,
            cond,
            cond_expr,
            cond_text,
            arms,
        } = self;
        f.debug_struct("Branch")
            .field("loc", loc)
            .field("alt", alt)
            .field("cond", cond)
            .field("cond_expr", &cond_expr.as_ref().map(Code))
            .field("cond_text", cond_text)
            .field("arms", arms)
            .finish()
    }
}

/// A node of a function body's tree.
#[derive(Debug, Clone)]
pub enum Node {
    /// A statement without loops inside.
    Stmt(Stmt),
    /// A loop, with its body.
    Loop(Loop),
    /// A branch whose arms hold structure.
    Branch(Branch),
}

/// [`Node::rename_vars`] of one statement.
fn rename_stmt<'r>(
    s: &mut Stmt,
    to: &impl Fn(&str) -> Option<&'r String>,
    rename_all: &impl Fn(&mut Vec<String>),
) {
    rename_all(&mut s.reads);
    rename_all(&mut s.writes);
    for a in &mut s.accesses {
        if let Some(t) = to(&a.var) {
            a.var = t.clone();
        }
    }
    for io in &mut s.io {
        if let Some(t) = to(&io.var) {
            io.var = t.clone();
        }
    }
}

/// Whether a call's peer is the variable `name` alone (`p`, `&p`, `*p`).
pub(crate) fn peer_is(peer: &str, name: &str) -> bool {
    peer.trim().trim_start_matches(['&', '*']).trim() == name
}

impl Node {
    /// Every statement inside, loop headers and branch conditions included, in source order.
    pub(crate) fn each_stmt<'a>(&'a self, f: &mut impl FnMut(&'a Stmt)) {
        match self {
            Node::Stmt(s) => f(s),
            Node::Loop(l) => l.each_stmt(f),
            Node::Branch(b) => {
                f(&b.cond);
                b.arms.iter().flatten().for_each(|n| n.each_stmt(f));
            }
        }
    }

    /// [`Node::each_stmt`], mutably.
    pub(crate) fn each_stmt_mut(&mut self, f: &mut impl FnMut(&mut Stmt)) {
        match self {
            Node::Stmt(s) => f(s),
            Node::Loop(l) => {
                f(&mut l.header);
                l.body.iter_mut().for_each(|n| n.each_stmt_mut(f));
            }
            Node::Branch(b) => {
                f(&mut b.cond);
                b.arms.iter_mut().flatten().for_each(|n| n.each_stmt_mut(f));
            }
        }
    }

    /// The names the communication statements inside use (buffers, peers, tags; `&mut edge`
    /// counts as a use).
    pub fn comm_uses(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.each_stmt(&mut |s| {
            if !s.calls.is_empty() {
                out.extend(s.reads.iter().chain(&s.writes).map(String::as_str));
            }
        });
        out
    }

    /// Renames variables throughout (reads, writes, element accesses, I/O targets and loop
    /// bounds), each `(from, to)` at most once per name, merging what becomes a repeat: a
    /// callee's parameters as the caller's arguments (`dot(lhs, rhs)` inlined for `dot(&r, &r)`
    /// reads `r`).
    pub fn rename_vars(&mut self, renames: &[(String, String)]) {
        if renames.is_empty() {
            return;
        }
        let to = |name: &str| {
            renames
                .iter()
                .find(|(from, _)| from == name)
                .map(|(_, to)| to)
        };
        let rename_all = |names: &mut Vec<String>| {
            if names.iter().any(|n| to(n).is_some()) {
                let mut renamed: Vec<String> = Vec::with_capacity(names.len());
                for n in names.drain(..) {
                    let n = to(&n).cloned().unwrap_or(n);
                    if !renamed.contains(&n) {
                        renamed.push(n);
                    }
                }
                *names = renamed;
            }
        };
        match self {
            Node::Stmt(s) => rename_stmt(s, &to, &rename_all),
            Node::Loop(l) => {
                rename_all(&mut l.bound_reads);
                rename_stmt(&mut l.header, &to, &rename_all);
                l.body.iter_mut().for_each(|n| n.rename_vars(renames));
            }
            Node::Branch(b) => {
                rename_stmt(&mut b.cond, &to, &rename_all);
                b.arms
                    .iter_mut()
                    .flatten()
                    .for_each(|n| n.rename_vars(renames));
            }
        }
    }

    /// Whether a call inside has the variable `name` for a peer (through `*`/`&`).
    pub fn has_peer(&self, name: &str) -> bool {
        let mut found = false;
        self.each_stmt(&mut |s| {
            found |= s
                .calls
                .iter()
                .flat_map(|c| &c.peers)
                .any(|p| peer_is(p, name));
        });
        found
    }

    /// Renames a peer of the calls inside (`p` → `up` under `if let Some(p) = up`), through
    /// `*`/`&`.
    pub fn rename_peer(&mut self, from: &str, to: &str) {
        self.each_stmt_mut(&mut |s| {
            for peer in s.calls.iter_mut().flat_map(|c| c.peers.iter_mut()) {
                if peer_is(peer, from) {
                    *peer = to.to_string();
                }
            }
        });
    }

    /// Whether any communication call is inside.
    pub fn has_comm(&self) -> bool {
        match self {
            Node::Stmt(s) => !s.calls.is_empty(),
            Node::Loop(l) => l.has_comm(),
            Node::Branch(b) => {
                !b.cond.calls.is_empty() || b.arms.iter().flatten().any(Node::has_comm)
            }
        }
    }

    /// Whether the node holds only communication and glue (and no computing arguments).
    pub fn only_comm_and_glue(&self) -> bool {
        match self {
            Node::Stmt(s) => s.glue || (!s.calls.is_empty() && !s.computes && s.io.is_empty()),
            Node::Loop(l) => l.only_comm_and_glue(),
            Node::Branch(b) => b.cond.glue && b.arms.iter().flatten().all(Node::only_comm_and_glue),
        }
    }

    /// Glue is a statement, or a loop (not an iterator chain) that only packs or unpacks a
    /// message: `for i in 0..ny { buf[i] = u[i * nx + 1]; }`.
    pub fn is_glue(&self) -> bool {
        match self {
            Node::Stmt(s) => s.glue && s.calls.is_empty(),
            Node::Loop(l) => l.is_glue(),
            // Guarded glue: `if rank > 0 { u[..nx].clone_from_slice(&top_in) }`.
            Node::Branch(b) => {
                b.cond.glue && b.cond.calls.is_empty() && b.arms.iter().flatten().all(Node::is_glue)
            }
        }
    }

    /// Glue that stores received values into the program's arrays: `u[0] = halo[0]`,
    /// `u[..nx].clone_from_slice(&top_in)`, an unpacking loop, or such under envelope guards.
    pub fn unpacks(&self) -> bool {
        match self {
            Node::Stmt(s) => {
                s.glue
                    && s.calls.is_empty()
                    && s.declares.is_empty()
                    && s.writes
                        .iter()
                        .any(|w| s.accesses.iter().any(|a| a.var == *w))
            }
            Node::Loop(_) => self.is_glue(),
            Node::Branch(b) => {
                self.is_glue()
                    && !b.arms.iter().all(Vec::is_empty)
                    && b.arms.iter().flatten().all(Node::unpacks)
            }
        }
    }

    /// Widens the node's location to begin no later than `start` and end no earlier than `end`,
    /// where given (a request scope's call around the exchange inside it).
    pub fn widen(&mut self, start: Option<(u32, u32)>, end: Option<(u32, u32)>) {
        let loc = match self {
            Node::Stmt(s) => match s.loc.as_mut() {
                Some(l) => l,
                None => return,
            },
            Node::Loop(l) => &mut l.loc,
            Node::Branch(b) => &mut b.loc,
        };
        if let Some(start) = start {
            loc.start = loc.start.min(start);
        }
        if let Some(end) = end {
            loc.end = loc.end.max(end);
        }
    }

    /// Where the node is written (`None` only for a statement not scanned from source).
    pub fn loc(&self) -> Option<Loc> {
        match self {
            Node::Stmt(s) => s.loc,
            Node::Loop(l) => Some(l.loc),
            Node::Branch(b) => Some(b.loc),
        }
    }

    /// Every communication call inside, in source order.
    pub fn calls(&self) -> Vec<&CallSite> {
        let mut out = Vec::new();
        self.each_stmt(&mut |s| out.extend(&s.calls));
        out
    }

    /// Whether a loop that communicates is inside (or this is one).
    pub fn has_comm_loop(&self) -> bool {
        match self {
            Node::Stmt(_) => false,
            Node::Loop(_) => self.has_comm(),
            Node::Branch(b) => b.arms.iter().flatten().any(Node::has_comm_loop),
        }
    }

    /// Whether a loop is inside (or this is one).
    pub fn has_loop(&self) -> bool {
        match self {
            Node::Stmt(_) => false,
            Node::Loop(_) => true,
            Node::Branch(b) => b.arms.iter().flatten().any(Node::has_loop),
        }
    }
}

/// The fields of a struct its constructor sizes by this node's partition (`body::layout`).
#[derive(Debug, Default)]
pub struct Layout {
    /// Array fields holding this node's block, with their element type when known.
    pub distributed: Vec<(String, Option<String>)>,
    /// Scalar fields that are partition sizes (this node's rows, its first row).
    pub sizes: Vec<String>,
}
