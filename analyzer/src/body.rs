//! Building the intermediate form of a function body (`ir.rs`) from syn.
//!
//! Statements are scanned (`scan.rs`) with the function's bindings (`binding.rs`); loops,
//! iterator chains with closures and branches that hold loops or communication become tree
//! nodes; closures that are not loops (`mpi::request::scope(|s| ..)`, `launch(|ctx| ..)`) are
//! inlined. Calls of user functions that communicate are expanded interprocedurally: a
//! communication-only function (or one marked `#[mheta::comm]` / named in mheta.toml) becomes a
//! single statement whose calls are the function's (rule 2); a function that mixes
//! communication and computation is inlined (depth-limited, recursion reported).

use std::cell::RefCell;
use std::collections::BTreeSet;

use crate::hash::HashMap;

use crate::binding::{pattern_idents, type_value, Env, Text};
use crate::catalogue::ValueKind;
use crate::diagnostics::{Diagnostics, Loc};
use crate::extent::Extent;
use crate::ir::{Branch, Loop, LoopKind, Node, Stmt};
use crate::load::{Function, Program};
use crate::scan::{is_glue, Scanner, UserCall};
use crate::syntax::base_var;

/// A variable declared in a solver (arrays and vectors).
#[derive(Debug, Clone)]
pub struct VarDecl {
    /// The variable's name.
    pub name: String,
    /// Sized by this node's partition (its rows) rather than replicated on every node.
    pub distributed: bool,
    /// The element type when the declaration shows it (`vec![0.0f64; n]`, `Vec<f64>`).
    pub elem_type: Option<String>,
    /// Where it is declared.
    pub loc: Loc,
    /// A parameter of the solver (its class is inferred from how the main loop walks it).
    pub param: bool,
}

/// Facts gathered while building, shared across inlined functions.
#[derive(Debug, Default)]
pub struct Facts {
    /// Variables that hold this process's rank (`let rank = world.rank()`).
    pub rank_vars: BTreeSet<String>,
    /// Variables that hold the number of processes (`let size = world.size()`).
    pub size_vars: BTreeSet<String>,
    /// A `let` binds the name `size` to something other than the number of processes.
    pub size_is_other: bool,
    /// Variables whose type a `let` shows: a struct literal, `Type::ctor(..)`, an annotation.
    pub var_types: HashMap<String, String>,
    /// Parameters that are `&mut` references (`u: &mut Vec<f64>`).
    pub mut_refs: BTreeSet<String>,
    /// Local closures that communicate (`let report = |v| { all_reduce(..); .. }`): the calls
    /// their body makes, made wherever they are called.
    pub comm_closures: HashMap<String, Vec<crate::ir::CallSite>>,
    /// Parameters that are closures (`report: &mut dyn FnMut(..)`): calling one runs code the
    /// analysis does not see.
    pub closure_params: BTreeSet<String>,
    /// Scalars whose value derives from this node's partition (`rows = ctx.local_rows(n)`).
    pub dist_sizes: BTreeSet<String>,
    /// The arrays and vectors declared, in declaration order.
    pub variables: Vec<VarDecl>,
    /// Glue `let`s: name → initialiser as written (for participants such as `left = rank - 1`).
    pub glue_defs: HashMap<String, String>,
    /// Local closures whose bodies are glue (`let lo = |k| k * n;`).
    pub glue_closures: BTreeSet<String>,
    /// Names of the arrays declared so far.
    pub arrays: BTreeSet<String>,
    /// The arrays among them that hold the program's data (not index tables: `Vec<usize>`).
    pub data_arrays: BTreeSet<String>,
    /// Slice aliases bound so far (`let up = &cur[(i - 1) * cols..]`).
    pub aliases: crate::alias::Aliases,
    /// Statements that are an `if rank == e { .. }` with no `else` and no communication: where
    /// each is, and the names `e` reads (the rank whose turn it is to run the block, `[i]` in
    /// `if world.rank() == i { print(..) }`).
    pub turns: Vec<(Loc, Vec<String>)>,
    /// Problems met while building (unexpanded macros, unresolved calls).
    pub diags: Diagnostics,
}

impl Facts {
    /// Whether `name` holds the number of processes: bound from `.size()`, or named `size`
    /// unless a `let` binds `size` to something else (`let size = 4096`).
    pub fn is_size(&self, name: &str) -> bool {
        self.size_vars.contains(name) || name == "size" && !self.size_is_other
    }

    /// Whether `name` holds this process's rank (`rank`, or a variable bound from `.rank()`).
    pub fn is_rank(&self, name: &str) -> bool {
        name == "rank" || self.rank_vars.contains(name)
    }

    /// Whether source text names the rank (`rank as i32 - 1`, `(me + 1) % size`).
    pub fn mentions_rank(&self, text: &str) -> bool {
        crate::syntax::idents_of(text)
            .iter()
            .any(|w| self.is_rank(w))
    }
}

/// A function body as [`build_function`] builds it.
#[derive(Debug)]
pub struct Built {
    /// The body's tree of statements, loops and branches.
    pub nodes: Vec<Node>,
    /// The facts gathered building it.
    pub facts: Facts,
    /// The user functions called directly from the body.
    pub called: BTreeSet<usize>,
}

/// Which functions communicate, directly or through callees (the inlining worklist's filter),
/// found out for a function when first asked: a function communicates when it or a function it
/// reaches through calls communicates directly. Only the functions asked about and those they
/// reach are read.
pub struct Communicating<'p> {
    program: &'p Program,
    /// Per function, once known: whether it communicates.
    known: RefCell<Vec<Option<bool>>>,
    /// Per function, once read: what its own body says (see [`Reading`]).
    read: RefCell<Vec<Option<Reading>>>,
    /// The functions whose caller is being built to find the closures they are given.
    binding: RefCell<BTreeSet<usize>>,
}

/// The calls of function `target` in a body (of function `here`), by free-function call.
struct CallsOf<'p, 'a> {
    program: &'p Program,
    here: usize,
    target: usize,
    found: Vec<&'a syn::ExprCall>,
}

impl<'a> syn::visit::Visit<'a> for CallsOf<'_, 'a> {
    fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
        if inline::resolve_call(self.program, self.here, c) == Some(self.target) {
            self.found.push(c);
        }
        syn::visit::visit_expr_call(self, c);
    }
}

/// What a function's own body says about communication, built with no callee expanded (or read
/// off its syntax, see [`BodyCalls`]).
struct Reading {
    direct: bool,
    callees: BTreeSet<usize>,
    /// The user functions building the body may have looked at.
    looked_at: BTreeSet<usize>,
    /// The body built with no callee expanded, when it was built: it is the function's
    /// [`build_function`] when no function in `looked_at` communicates.
    built: Option<Built>,
}

impl<'p> Communicating<'p> {
    /// Nothing known yet about the functions of `program`.
    pub fn new(program: &'p Program) -> Self {
        let n = program.functions.len();
        Communicating {
            program,
            known: RefCell::new(vec![None; n]),
            read: RefCell::new((0..n).map(|_| None).collect()),
            binding: RefCell::new(BTreeSet::new()),
        }
    }

    /// Whether function `index` communicates, directly or through the functions it calls.
    pub fn communicates(&self, index: usize) -> bool {
        if let Some(known) = self.known.borrow().get(index).copied().flatten() {
            return known;
        }
        let mut seen = BTreeSet::from([index]);
        let mut queue = vec![index];
        while let Some(k) = queue.pop() {
            let known = self.known.borrow()[k];
            match known {
                Some(true) => {
                    self.known.borrow_mut()[index] = Some(true);
                    return true;
                }
                // Nothing `k` reaches communicates.
                Some(false) => continue,
                None => {}
            }
            self.ensure_read(k);
            let read = self.read.borrow();
            let Some(reading) = &read[k] else { continue };
            if reading.direct {
                drop(read);
                self.known.borrow_mut()[index] = Some(true);
                return true;
            }
            for &c in &reading.callees {
                if seen.insert(c) {
                    queue.push(c);
                }
            }
        }
        // Every function seen reaches only functions seen, none communicating directly.
        let mut known = self.known.borrow_mut();
        for k in seen {
            known[k] = Some(false);
        }
        false
    }

    /// [`build_function`] of function `index` (with fresh facts), the body built already to
    /// find out whether it communicates when that is the same.
    pub fn build(&self, index: usize) -> Built {
        let mut facts = Facts {
            comm_closures: self.given_closures(index),
            ..Facts::default()
        };
        let reusable = facts.comm_closures.is_empty().then(|| {
            self.read.borrow_mut()[index]
                .as_mut()
                .and_then(|r| Some((r.built.take()?, std::mem::take(&mut r.looked_at))))
        });
        if let Some((built, looked_at)) = reusable.flatten() {
            // No callee it looked at communicates: the build expanded nothing the full build
            // would.
            if looked_at.iter().all(|&c| !self.communicates(c)) {
                return built;
            }
        }
        let communicates = |i: usize| self.communicates(i);
        let (nodes, called) = build_function(self.program, index, &communicates, &mut facts);
        Built {
            nodes,
            facts,
            called,
        }
    }

    /// [`build`](Self::build) of a solver whose callers pass it its block or its partition size
    /// ([`given_by_callers`]): built anew with its parameters as its callers make them.
    pub fn build_given(&self, index: usize) -> Built {
        let mut facts = Facts {
            comm_closures: self.given_closures(index),
            ..Facts::default()
        };
        let program = self.program;
        let communicates = |i: usize| self.communicates(i);
        let mut b = Builder::of_function(program, index, &communicates, &mut facts);
        b.declare_given(index);
        let mut nodes = b.block(&program.functions[index].block);
        let called = b.called;
        peer_fns::expand_all(program, &mut nodes);
        Built {
            nodes,
            facts,
            called,
        }
    }

    /// The communicating closures function `index` is given, by parameter name: where the
    /// program calls it once, from a function that passes a closure it defined and that
    /// communicates (`time_loop(&world, .., &mut report)` with `let report = |step, c| { ..;
    /// global_sum(&world, ..); .. }`). Empty when it has no closure parameter, when it is
    /// called from more than one place (each could pass another closure), and while a caller
    /// is being built for this (calls that cycle back).
    fn given_closures(&self, index: usize) -> HashMap<String, Vec<crate::ir::CallSite>> {
        let program = self.program;
        let f = &program.functions[index];
        let typed = crate::syntax::typed_params(&f.sig);
        let params: Vec<&syn::Pat> = typed.iter().map(|t| &*t.pat).collect();
        let closures: Vec<usize> = typed
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                crate::syntax::is_closure_type(&t.ty, &f.sig.generics, &program.closure_aliases)
            })
            .map(|(k, _)| k)
            .collect();
        if closures.is_empty() || !self.binding.borrow_mut().insert(index) {
            return HashMap::default();
        }
        let given = self.closures_from_caller(index, &params, &closures);
        self.binding.borrow_mut().remove(&index);
        given
    }

    /// [`Communicating::given_closures`] once `index` is known to take closures, at these
    /// positions among `params`.
    fn closures_from_caller(
        &self,
        index: usize,
        params: &[&syn::Pat],
        closures: &[usize],
    ) -> HashMap<String, Vec<crate::ir::CallSite>> {
        let program = self.program;
        let mut sites: Vec<(usize, &syn::ExprCall)> = Vec::new();
        for (k, g) in program.functions.iter().enumerate() {
            let mut calls = CallsOf {
                program,
                here: k,
                target: index,
                found: Vec::new(),
            };
            syn::visit::Visit::visit_block(&mut calls, &g.block);
            sites.extend(calls.found.into_iter().map(|c| (k, c)));
            if sites.len() > 1 {
                return HashMap::default();
            }
        }
        let [(caller, call)] = sites.as_slice() else {
            return HashMap::default();
        };
        let built = self.build(*caller);
        let mut given = HashMap::default();
        for &k in closures {
            let (Some(param), Some(arg)) = (params.get(k), call.args.iter().nth(k)) else {
                continue;
            };
            if let Some(calls) = named_closure(&built.facts.comm_closures, arg) {
                for param in pattern_idents(param) {
                    given.insert(param, calls.clone());
                }
            }
        }
        given
    }

    /// Reads function `k`'s body once.
    fn ensure_read(&self, k: usize) {
        if self.read.borrow()[k].is_none() {
            let reading = read(self.program, k);
            self.read.borrow_mut()[k] = Some(reading);
        }
    }
}

/// What function `i`'s own body says about communication.
fn read(program: &Program, i: usize) -> Reading {
    let f = &program.functions[i];
    if is_comm_attr(f) || program.config.is_comm_function(&f.path) {
        // It communicates whatever its callees do.
        return Reading {
            direct: true,
            callees: BTreeSet::new(),
            looked_at: BTreeSet::new(),
            built: None,
        };
    }
    let calls = BodyCalls::of(program, i, f);
    if !calls.may_communicate && !calls.calls_user_methods {
        // Building the body would find no communication and only these callees.
        return Reading {
            direct: false,
            callees: calls
                .all
                .iter()
                .filter_map(|u| match u {
                    UserCall::Call(c) => inline::resolve_call(program, i, c),
                    UserCall::Method(_) => None,
                })
                .collect(),
            looked_at: BTreeSet::new(),
            built: None,
        };
    }
    let mut facts = Facts::default();
    let mut b = Builder::of_function(program, i, &|_| false, &mut facts);
    let mut nodes = b.block(&f.block);
    let called = b.called.clone();
    let mut callees = called.clone();
    // Calls inside larger expressions (`dot(&w, &w).sqrt()`) are callees too; a method call,
    // every method it may call (which one is taken depends on which communicate).
    for &u in &calls.all {
        match u {
            UserCall::Method(m) => callees.extend(b.method_candidates(m).unwrap_or_default()),
            UserCall::Call(_) => callees.extend(b.resolve(u)),
        }
    }
    peer_fns::expand_all(program, &mut nodes);
    let direct = nodes.iter().any(Node::has_comm);
    let built = Some(Built {
        nodes,
        facts,
        called,
    });
    Reading {
        direct,
        callees,
        looked_at: calls.looked_at,
        built,
    }
}

/// What building a body may look at, read off its syntax: its function calls, the user
/// functions any of its calls may resolve to, and whether a call may communicate.
struct BodyCalls<'p, 'f> {
    program: &'p Program,
    here: usize,
    /// Resolves `use` names of free functions.
    imports: Env,
    /// The body's own calls and method calls (closures included, macro arguments not), outer
    /// before inner: what `syntax::calls_in(true, ..)` finds.
    all: Vec<UserCall<'f>>,
    /// Every user function a call may resolve to, in the macro arguments scanning reads too (a
    /// method call: every function of its name).
    looked_at: BTreeSet<usize>,
    /// A method the catalogue lists, or a catalogued free function, is called.
    may_communicate: bool,
    /// A method named like a function of the program is called.
    calls_user_methods: bool,
}

impl<'p, 'f> BodyCalls<'p, 'f> {
    fn of(program: &'p Program, here: usize, f: &'f Function) -> Self {
        let mut calls = BodyCalls::new(program, here);
        syn::visit::Visit::visit_block(&mut calls, &f.block);
        calls
    }

    fn new(program: &'p Program, here: usize) -> Self {
        BodyCalls {
            program,
            here,
            imports: Env::new(
                &Default::default(),
                &program.config,
                program.imports.clone(),
            ),
            all: Vec::new(),
            looked_at: BTreeSet::new(),
            may_communicate: false,
            calls_user_methods: false,
        }
    }
}

impl<'f> syn::visit::Visit<'f> for BodyCalls<'_, 'f> {
    fn visit_expr_call(&mut self, c: &'f syn::ExprCall) {
        if let syn::Expr::Path(p) = &*c.func {
            let segs = self
                .imports
                .resolve_path(&crate::syntax::path_idents(&p.path));
            self.may_communicate |= segs
                .last()
                .is_some_and(|l| crate::catalogue::free_function(l).is_some());
        }
        self.looked_at
            .extend(inline::resolve_call(self.program, self.here, c));
        self.all.push(UserCall::Call(c));
        syn::visit::visit_expr_call(self, c);
    }

    fn visit_expr_method_call(&mut self, m: &'f syn::ExprMethodCall) {
        use crate::catalogue::{method, Family};
        let name = crate::syntax::Name::of(&m.method);
        if let Some(same_name) = self.program.by_name.get(name.as_str()) {
            self.calls_user_methods = true;
            self.looked_at.extend(same_name);
        }
        self.may_communicate |= [Family::Mpi, Family::Runtime]
            .into_iter()
            .any(|f| method(f, &name).is_some());
        self.all.push(UserCall::Method(m));
        syn::visit::visit_expr_method_call(self, m);
    }

    fn visit_macro(&mut self, m: &'f syn::Macro) {
        if !crate::syntax::scans_macro(m) {
            return;
        }
        let args = crate::syntax::macro_args(m);
        let mut inner = BodyCalls::new(self.program, self.here);
        args.iter()
            .for_each(|e| syn::visit::Visit::visit_expr(&mut inner, e));
        // Calls in the arguments are not the body's own (`calls_in` does not see them).
        self.looked_at.extend(inner.looked_at);
        self.may_communicate |= inner.may_communicate;
        self.calls_user_methods |= inner.calls_user_methods;
    }
}

/// Whether a solver's body must be built knowing what its callers pass it
/// ([`Communicating::build_given`]): some caller passes a block or a partition size.
pub fn given_by_callers(program: &Program, index: usize) -> bool {
    layout::given_by_callers(program, index).is_some_and(|g| g.any())
}

/// Builds the body of function `index` with full interprocedural expansion.
pub fn build_function(
    program: &Program,
    index: usize,
    communicates: &dyn Fn(usize) -> bool,
    facts: &mut Facts,
) -> (Vec<Node>, BTreeSet<usize>) {
    let mut b = Builder::of_function(program, index, communicates, facts);
    let mut nodes = b.block(&program.functions[index].block);
    let called = b.called;
    peer_fns::expand_all(program, &mut nodes);
    (nodes, called)
}

/// Whether a function carries `#[mheta::comm]` (or `#[comm]`).
pub fn is_comm_attr(f: &Function) -> bool {
    f.attrs.iter().any(|a| {
        let segs = crate::syntax::path_idents(a.path());
        segs == ["mheta", "comm"] || segs == ["comm"]
    })
}

mod chains;
mod facts;
mod inline;
mod layout;
mod peel;
mod peer_fns;

pub use chains::may_hold_loop;
use chains::trip_count;

struct Builder<'p, 'f> {
    program: &'p Program,
    text: Text<'p>,
    env: Env,
    /// Whether a user function communicates (see [`Communicating`]).
    comm_fns: &'p dyn Fn(usize) -> bool,
    facts: &'f mut Facts,
    /// The inlining stack (function indices), this function last.
    stack: Vec<usize>,
    /// User functions called (directly) from this body.
    called: BTreeSet<usize>,
    /// How many blocks the statement being built is in: 1 at the body's top level.
    nesting: u32,
}

impl<'p, 'f> Builder<'p, 'f> {
    /// Peers named by a variable an arm binds itself (`match rank { _ if rank < half => { let
    /// peer = rank + half; send to peer } _ => { let peer = rank - half; .. } }`) are that arm's
    /// value, put in where the arm communicates: by name, every arm's `peer` would be the last
    /// one bound.
    fn localize_peers(&self, arm: &mut [Node]) {
        for k in 0..arm.len() {
            let Node::Stmt(s) = &arm[k] else { continue };
            if s.defs.is_empty() {
                continue;
            }
            let defs = s.defs.clone();
            for (name, e) in defs {
                // A peer that is the name alone (`rename_peer` replaces no part of one), not bound
                // again or stepped later (`to += 1`, round robin).
                let (mut named, mut changes) = (false, false);
                for n in &arm[k + 1..] {
                    n.each_stmt(&mut |s| {
                        named |= s
                            .calls
                            .iter()
                            .flat_map(|c| &c.peers)
                            .any(|p| crate::ir::peer_is(p, &name));
                        changes |= s.writes.contains(&name);
                    });
                }
                if named && !changes {
                    let value = self.text.of(&e);
                    arm[k + 1..]
                        .iter_mut()
                        .for_each(|n| n.rename_peer(&name, &value));
                }
            }
        }
    }

    /// Whether `block`'s syntax may communicate: it calls a catalogued method or free function,
    /// or a function of the program that communicates (a method: one of that name).
    fn may_communicate(&self, block: &syn::Block) -> bool {
        let here = self.stack.last().copied().unwrap_or(0);
        let mut calls = BodyCalls::new(self.program, here);
        syn::visit::Visit::visit_block(&mut calls, block);
        calls.may_communicate || calls.looked_at.iter().any(|&i| (self.comm_fns)(i))
    }

    /// The calls of the communicating closure `e` names (`report`, `&mut report`), if it names
    /// one.
    fn comm_closure(&self, e: &syn::Expr) -> Option<Vec<crate::ir::CallSite>> {
        named_closure(&self.facts.comm_closures, e)
    }

    /// A builder for `f`'s body; `env` carries communicator arguments bound by a caller.
    fn new(
        program: &'p Program,
        f: &Function,
        comm_fns: &'p dyn Fn(usize) -> bool,
        facts: &'f mut Facts,
        stack: Vec<usize>,
        env: Option<Env>,
    ) -> Self {
        let mut env = env.unwrap_or_else(|| {
            Env::new(
                &program.comm_fields,
                &program.config,
                program.imports.clone(),
            )
        });
        env.bind_params(&f.sig);
        // Inlined callees' too: `fill(u, m)` in a callee given `u: &mut Vec<f64>` writes it.
        for input in &f.sig.inputs {
            if let syn::FnArg::Typed(pt) = input {
                if matches!(&*pt.ty, syn::Type::Reference(r) if r.mutability.is_some()) {
                    facts.mut_refs.extend(pattern_idents(&pt.pat));
                }
                if crate::syntax::is_closure_type(&pt.ty, &f.sig.generics, &program.closure_aliases)
                {
                    facts.closure_params.extend(pattern_idents(&pt.pat));
                }
            }
        }
        Builder {
            program,
            text: Text {
                sources: &program.sources,
                file: f.file,
                via: 0,
            },
            env,
            comm_fns,
            facts,
            stack,
            called: BTreeSet::new(),
            nesting: 0,
        }
    }

    /// A builder of function `index`'s own body: its parameters and, for a method, its
    /// struct's block-holding fields declared (`declare_params`, `declare_self_fields`).
    fn of_function(
        program: &'p Program,
        index: usize,
        comm_fns: &'p dyn Fn(usize) -> bool,
        facts: &'f mut Facts,
    ) -> Self {
        let f = &program.functions[index];
        let mut b = Builder::new(program, f, comm_fns, facts, vec![index], None);
        b.declare_params(&f.sig);
        b.declare_self_fields(f);
        b
    }

    fn loc(&self, s: proc_macro2::Span) -> Loc {
        self.text.loc(s)
    }

    fn block(&mut self, b: &syn::Block) -> Vec<Node> {
        let mut out = Vec::new();
        self.nesting += 1;
        for stmt in &b.stmts {
            self.stmt(stmt, &mut out);
        }
        self.nesting -= 1;
        stage_messages(&mut out);
        out
    }

    fn stmt(&mut self, s: &syn::Stmt, out: &mut Vec<Node>) {
        match s {
            syn::Stmt::Local(l) => self.local(l, out),
            syn::Stmt::Expr(e, _) => {
                let before = out.len();
                self.expr(e, &[], self.loc(s.extent()), out);
                // A value stepped as the loop goes (`send_to += 1`, a round-robin peer) is not
                // the value its `let` gave it.
                for node in &out[before..] {
                    if let Node::Stmt(Stmt {
                        increments: Some(name),
                        ..
                    }) = node
                    {
                        self.facts.glue_defs.remove(name);
                    }
                }
            }
            syn::Stmt::Macro(m) => {
                let loc = self.loc(s.extent());
                let user_comm = |c: UserCall<'_>| self.nested_user_comm(c);
                out.push(Node::Stmt(
                    self.scanner_with(&user_comm).scan_macro(&m.mac, loc),
                ));
            }
            syn::Stmt::Item(_) => {}
        }
    }

    fn scan(&self, e: Option<&syn::Expr>, bound: &[String], loc: Loc) -> Stmt {
        let user_comm = |c: UserCall<'_>| self.nested_user_comm(c);
        let mut stmt = self.scanner_with(&user_comm).scan(e, bound, loc);
        if let (Some(e), true) = (e, stmt.calls.is_empty()) {
            self.note_self_methods(e, &mut stmt);
        }
        stmt
    }

    /// A call of a method of `self` that computes only (`self.sweep()`) reads and writes the
    /// arrays among the fields its body touches (`self.u`, `self.next`): the statement does.
    fn note_self_methods(&self, e: &syn::Expr, stmt: &mut Stmt) {
        use syn::visit::Visit;
        struct Calls<'a>(Vec<&'a syn::ExprMethodCall>);
        impl<'a> Visit<'a> for Calls<'a> {
            fn visit_expr_method_call(&mut self, m: &'a syn::ExprMethodCall) {
                if matches!(&*m.receiver, syn::Expr::Path(p) if p.path.is_ident("self")) {
                    self.0.push(m);
                }
                syn::visit::visit_expr_method_call(self, m);
            }
            fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
        }
        // Only a method's body (or one inlined into the solver) names `self`.
        let in_method = self
            .stack
            .iter()
            .any(|&i| self.program.functions[i].sig.receiver().is_some());
        if !in_method || self.facts.arrays.is_empty() {
            return;
        }
        let mut calls = Calls(Vec::new());
        calls.visit_expr(e);
        for m in calls.0 {
            for i in self.method_candidates(m).unwrap_or_default() {
                let fields = layout::self_fields(self.program, i);
                let (reads, writes) = &*fields;
                let arrays = |v: &&String| self.facts.arrays.contains(v.as_str());
                for r in reads.iter().filter(arrays) {
                    if !stmt.reads.contains(r) {
                        stmt.reads.push(r.clone());
                    }
                }
                for w in writes.iter().filter(arrays) {
                    if !stmt.writes.contains(w) {
                        stmt.writes.push(w.clone());
                    }
                }
            }
        }
    }

    /// A scanner of this body's statements that resolves calls of communication functions
    /// through `user_comm`.
    fn scanner_with<'s>(
        &'s self,
        user_comm: &'s dyn Fn(UserCall<'_>) -> Option<Vec<crate::ir::CallSite>>,
    ) -> Scanner<'s> {
        Scanner {
            env: &self.env,
            text: self.text,
            config: &self.program.config,
            user_comm,
            glue_closures: &self.facts.glue_closures,
            data: &self.facts.data_arrays,
            aliases: &self.facts.aliases,
            mut_refs: &self.facts.mut_refs,
            comm_closures: &self.facts.comm_closures,
            closure_params: &self.facts.closure_params,
        }
    }

    /// The neighbours a Cartesian shift binds (`let (src, dst) = cart.shift(0, d)`, also
    /// `shift_unchecked`), named by rank arithmetic: `rank - d` and `rank + d` along the shifted
    /// dimension (`MPI_Cart_shift`'s source and destination). Only on a communicator.
    fn cartesian_shift(&self, pat: &syn::Pat, init: &syn::Expr) -> Option<Vec<(String, String)>> {
        let syn::Pat::Tuple(t) = pat else { return None };
        let mut call = init;
        while let syn::Expr::Unsafe(u) = call {
            call = match u.block.stmts.as_slice() {
                [syn::Stmt::Expr(e, None)] => e,
                _ => return None,
            };
        }
        let syn::Expr::MethodCall(m) = call else {
            return None;
        };
        let on_communicator = self
            .env
            .value_of(&m.receiver, &self.text)
            .is_some_and(|v| v.kind == crate::catalogue::ValueKind::Communicator);
        if !(matches!(m.method.to_string().as_str(), "shift" | "shift_unchecked")
            && m.args.len() == 2
            && t.elems.len() == 2
            && on_communicator)
        {
            return None;
        }
        let displacement = self.text.of(&m.args[1]);
        let displacement = if displacement.contains(|c: char| !(c.is_alphanumeric() || c == '_')) {
            format!("({displacement})")
        } else {
            displacement
        };
        Some(
            t.elems
                .iter()
                .zip(["-", "+"])
                .filter_map(|(p, sign)| {
                    let name = match p {
                        syn::Pat::Ident(i) => i.ident.to_string(),
                        _ => return None,
                    };
                    Some((name, format!("rank {sign} {displacement}")))
                })
                .collect(),
        )
    }

    /// A `let`: bindings (communicator values, rank/size/partition facts, variables), then the
    /// initialiser lowered like an expression statement.
    fn local(&mut self, l: &syn::Local, out: &mut Vec<Node>) {
        let names = pattern_idents(&l.pat);
        let loc = self.loc(l.extent());
        let init = l.init.as_ref().map(|i| &*i.expr);
        let annotated = match &l.pat {
            syn::Pat::Type(t) => type_value(&t.ty),
            _ => None,
        };
        // Element-wise for `let (rank, size) = (world.rank(), world.size())`.
        let parts: Vec<Option<&syn::Expr>> = match (&l.pat, init) {
            (syn::Pat::Tuple(pt), Some(syn::Expr::Tuple(t))) if pt.elems.len() == t.elems.len() => {
                t.elems.iter().map(Some).collect()
            }
            _ => vec![init; names.len()],
        };
        let alias_targets = match (names.as_slice(), init) {
            ([_], Some(e)) => {
                let arrays = &self.facts.arrays;
                crate::alias::targets(&self.facts.aliases, e, &|v| arrays.contains(v))
            }
            _ => vec![],
        };
        let mut binds_comm = false;
        let mut rank_arithmetic = false;
        // `let (below, above) = cart.shift(dim, 1)`: the ranks `1` below and above this one
        // along `dim` of a Cartesian communicator, as rank arithmetic would name them.
        if let Some(peers) = init.and_then(|e| self.cartesian_shift(&l.pat, e)) {
            for (name, peer) in peers {
                self.facts.glue_defs.insert(name, peer);
            }
            rank_arithmetic = true;
        }
        for (name, part) in names.iter().zip(parts) {
            let value = annotated
                .clone()
                .or_else(|| part.and_then(|e| self.env.value_of(e, &self.text)));
            binds_comm |= value.is_some();
            self.env.bind(name, value);
            if let Some(e) = part {
                rank_arithmetic |= self.note_facts(name, e, loc, l);
            }
        }
        if !self.facts.comm_closures.is_empty() {
            // `let mut report = report;` passes a communicating closure on under a new name.
            let renamed = match (names.as_slice(), init) {
                ([_], Some(e)) => self.comm_closure(e),
                _ => None,
            };
            for name in &names {
                self.facts.comm_closures.remove(name);
            }
            if let (Some(calls), [name]) = (renamed, names.as_slice()) {
                self.facts.comm_closures.insert(name.clone(), calls);
            }
        }
        match init {
            Some(e) => {
                let before = out.len();
                self.expr(e, &names, loc, out);
                if out.len() == before + 1 {
                    if let Some(Node::Stmt(s)) = out.last_mut() {
                        // Defining a closure that communicates communicates nothing: its calls
                        // are made where it is called.
                        if let ([name], syn::Expr::Closure(_)) = (names.as_slice(), peel(e)) {
                            if !s.calls.is_empty() {
                                let calls = std::mem::take(&mut s.calls);
                                self.facts.comm_closures.insert(name.clone(), calls);
                            }
                        }
                        // Binding a communicator (`let up = comm.process_at_rank(r)`) is glue.
                        // So is rank arithmetic in a small function (`let up = g.neighbour(1)`).
                        if (binds_comm || rank_arithmetic) && s.calls.is_empty() {
                            s.glue = true;
                        }
                        // Only a `let` inside some loop's body can be in a main loop's, where
                        // classification reads definitions: not one at this body's top level,
                        // unless the body is a callee's, inlined wherever its call is.
                        let in_loop_body = self.nesting > 1 || self.stack.len() > 1;
                        if let ([name], true) = (names.as_slice(), in_loop_body) {
                            s.defs.push((name.clone(), e.clone()));
                        }
                        s.copies_elements = s.calls.is_empty() && element_reads(e);
                    }
                }
            }
            None => {
                // `let mut ps: Vec<P>;`, assigned later: its type still declares an array.
                if matches!(l.pat, syn::Pat::Type(_)) {
                    let nothing = syn::Expr::Verbatim(proc_macro2::TokenStream::new());
                    for name in &names {
                        self.note_facts(name, &nothing, loc, l);
                    }
                }
                out.push(Node::Stmt(self.scan(None, &names, loc)))
            }
        }
        for name in &names {
            self.facts.aliases.remove(name);
        }
        if let ([name], false) = (names.as_slice(), alias_targets.is_empty()) {
            self.facts.aliases.insert(name.clone(), alias_targets);
        }
    }

    /// Lowers an expression statement (or a `let` initialiser binding `bound`).
    fn expr(&mut self, e: &syn::Expr, bound: &[String], loc: Loc, out: &mut Vec<Node>) {
        use syn::Expr;
        match e {
            Expr::ForLoop(f) => {
                let iterable = self.env.value_of(&f.expr, &self.text);
                let vars = pattern_idents(&f.pat);
                if iterable
                    .as_ref()
                    .is_some_and(|v| v.kind == ValueKind::Requests)
                {
                    for v in &vars {
                        self.env.bind(
                            v,
                            Some(crate::binding::CommValue {
                                kind: ValueKind::Request,
                                family: iterable
                                    .clone()
                                    .map(|v| v.family)
                                    .unwrap_or(crate::catalogue::Family::Mpi),
                                peer: None,
                            }),
                        );
                    }
                }
                let mut header = self.scan(Some(&f.expr), bound, self.loc(f.expr.extent()));
                // Iterating over a list of ranks built by glue (`for (k, &nb) in
                // nbrs.iter().enumerate()`) is envelope work like iterating over a range.
                if !header.glue && header.calls.is_empty() {
                    let mut base = &*f.expr;
                    while let Expr::MethodCall(m) = peel(base) {
                        base = &m.receiver;
                    }
                    header.glue =
                        base_var(base).is_some_and(|v| self.facts.glue_defs.contains_key(&v));
                }
                let mut body = self.block(&f.body);
                // The header's bounds are read only when a branch in the body communicates.
                let range = peel::may_peel(&body)
                    .then(|| peel::index_range(&f.pat, &f.expr))
                    .flatten();
                let (before, after) = match range {
                    Some(range) => peel::peel(&mut body, &range),
                    None => (vec![], vec![]),
                };
                out.extend(before);
                out.push(Node::Loop(Loop {
                    loc: self.loc(e.extent()),
                    kind: LoopKind::For,
                    bound_reads: header.reads.clone(),
                    header_text: self.text.of(&*f.expr),
                    trip_count: trip_count(&f.expr, &self.text),
                    vars,
                    header,
                    body,
                    iterate: has_iterate_attr(&f.attrs),
                    alt: None,
                }));
                out.extend(after);
            }
            Expr::While(w) => {
                let header = self.scan(Some(&w.cond), bound, self.loc(w.cond.extent()));
                self.bind_let_condition(&w.cond);
                let body = self.block(&w.body);
                let vars = match &*w.cond {
                    Expr::Let(l) => pattern_idents(&l.pat),
                    // A counted `while i <= n { ..; i += 1 }`: the counter indexes like a
                    // `for` variable.
                    _ => header
                        .reads
                        .iter()
                        .filter(|v| {
                            body.iter().any(
                                |n| matches!(n, Node::Stmt(s) if s.increments.as_ref() == Some(v)),
                            )
                        })
                        .cloned()
                        .collect(),
                };
                out.push(Node::Loop(Loop {
                    loc: self.loc(e.extent()),
                    kind: LoopKind::While,
                    bound_reads: header.reads.clone(),
                    header_text: self.text.of(&*w.cond),
                    trip_count: "..".into(),
                    vars,
                    header,
                    body,
                    iterate: has_iterate_attr(&w.attrs),
                    alt: None,
                }));
            }
            Expr::Loop(l) => {
                let body = self.block(&l.body);
                out.push(Node::Loop(Loop {
                    loc: self.loc(e.extent()),
                    kind: LoopKind::Loop,
                    vars: vec![],
                    bound_reads: vec![],
                    header_text: String::new(),
                    trip_count: "..".into(),
                    header: Stmt {
                        loc: Some(loc),
                        glue: true,
                        ..Stmt::default()
                    },
                    body,
                    iterate: has_iterate_attr(&l.attrs),
                    alt: None,
                }));
            }
            Expr::If(i) => out.extend(self.if_expr(e, i, bound, loc)),
            Expr::Match(m) => out.extend(self.match_expr(e, m, bound, loc)),
            Expr::Block(b) if bound.is_empty() => out.extend(self.block(&b.block)),
            Expr::Unsafe(u) if bound.is_empty() => out.extend(self.block(&u.block)),
            // `let go = { let root = world.process_at_rank(0); root.broadcast_into(&mut g); g };`:
            // a block that communicates is its statements, then the binding of its value.
            Expr::Block(syn::ExprBlock { block, .. })
            | Expr::Unsafe(syn::ExprUnsafe { block, .. })
                if self.may_communicate(block) =>
            {
                out.extend(self.block(block));
                out.push(Node::Stmt(self.scan(None, bound, loc)));
            }
            Expr::Paren(p) => self.expr(&p.expr, bound, loc, out),
            _ => {
                if let Some(node) = self.iterator_loop(e, bound) {
                    out.push(node);
                } else if let Some(nodes) = self.closure_bodies(e) {
                    out.extend(nodes);
                } else if let Some(nodes) = self.user_call(e, bound, loc) {
                    out.extend(nodes);
                } else if let Some(nodes) = self.nested_inline(e, bound, loc) {
                    out.extend(nodes);
                } else {
                    self.note_request_push(e);
                    let mut s = self.scan(Some(e), bound, loc);
                    s.increments = increments(e);
                    out.push(Node::Stmt(s));
                }
            }
        }
    }

    /// `reqs.push(world.process_at_rank(r).immediate_send(..))` makes `reqs` a request collection.
    fn note_request_push(&mut self, e: &syn::Expr) {
        if let syn::Expr::MethodCall(m) = e {
            if m.method == "push" {
                if let (Some(var), Some(arg)) = (base_var(&m.receiver), m.args.first()) {
                    if let Some(v) = self
                        .env
                        .value_of(arg, &self.text)
                        .filter(|v| v.kind == ValueKind::Request)
                    {
                        self.env.bind(
                            &var,
                            Some(crate::binding::CommValue {
                                kind: ValueKind::Requests,
                                ..v
                            }),
                        );
                    }
                }
            }
        }
    }

    /// An `if` and its `else if` chain, walked as a list so that a chain of n branches costs
    /// O(n) (recursing on `else if` rescanned and retokenized the rest of the chain at every
    /// level: 2000 branches took seconds). The arms are lowered in source order, then the levels
    /// are joined from the last: a level whose arms hold no loop, communication or branch is one
    /// statement, scanned only when it is the outermost or the level above it is a branch.
    fn if_expr(
        &mut self,
        whole: &syn::Expr,
        i: &syn::ExprIf,
        bound: &[String],
        loc: Loc,
    ) -> Vec<Node> {
        let mut levels: Vec<(&syn::Expr, &syn::ExprIf)> = vec![(whole, i)];
        let last_else = loop {
            let (_, current) = levels[levels.len() - 1];
            match current.else_branch.as_ref().map(|(_, e)| &**e) {
                Some(e @ syn::Expr::If(next)) => levels.push((e, next)),
                other => break other,
            }
        };
        // Every level after the first spans from its `if` to the chain's last token.
        let end = match last_else {
            Some(e) => e.extent(),
            None => levels[levels.len() - 1]
                .1
                .then_branch
                .brace_token
                .span
                .close(),
        };
        let level_loc = |k: usize, ifx: &syn::ExprIf| {
            if k == 0 {
                loc
            } else {
                let start = ifx.if_token.span;
                self.loc(start.join(end).unwrap_or(start))
            }
        };
        let locs: Vec<Loc> = levels
            .iter()
            .enumerate()
            .map(|(k, (_, x))| level_loc(k, x))
            .collect();
        let mut thens = Vec::with_capacity(levels.len());
        for (_, level) in &levels {
            self.bind_let_condition(&level.cond);
            let mut then = self.block(&level.then_branch);
            self.localize_peers(&mut then);
            // `if let Some(p) = up { .. process_at_rank(p) .. }`: the peer is what `up` holds.
            if let Some((inner, outer)) = unwrapped_binding(&level.cond) {
                then.iter_mut().for_each(|n| n.rename_peer(&inner, &outer));
            }
            thens.push(then);
        }
        let mut below: Option<Vec<Node>> = last_else.map(|e| {
            let mut arm = Vec::new();
            self.expr(e, &[], self.loc(e.extent()), &mut arm);
            arm
        });
        // The level below, when it is one statement not scanned yet, and whether its
        // conditions (all of its chain's) communicate.
        let mut unscanned: Option<(usize, bool)> = None;
        for k in (0..levels.len()).rev() {
            let (expr, level) = levels[k];
            let then = thens.pop().unwrap_or_default();
            let mut arms = vec![then];
            arms.extend(below.take());
            let below_comm = unscanned.is_some_and(|(_, comm)| comm);
            let structured = below_comm || holds_structure(&arms);
            if !structured {
                let cond_comm = !self
                    .scan(Some(&level.cond), bound, locs[k])
                    .calls
                    .is_empty();
                unscanned = Some((k, cond_comm || below_comm));
                continue;
            }
            if let Some((j, _)) = unscanned.take() {
                let below_bound: &[String] = if j == 0 { bound } else { &[] };
                arms.push(vec![Node::Stmt(self.scan(
                    Some(levels[j].0),
                    below_bound,
                    locs[j],
                ))]);
            }
            let level_bound: &[String] = if k == 0 { bound } else { &[] };
            below = Some(self.branch(expr, &level.cond, arms, level_bound, locs[k]));
        }
        match (unscanned, below) {
            (Some((j, _)), _) => {
                let turn = self.turn_of(levels[j].0);
                if !turn.is_empty() {
                    self.facts.turns.push((locs[j], turn));
                }
                vec![Node::Stmt(self.scan(Some(levels[j].0), bound, locs[j]))]
            }
            (None, Some(top)) => top,
            (None, None) => unreachable!("the first level is a branch or a statement"),
        }
    }

    fn match_expr(
        &mut self,
        whole: &syn::Expr,
        m: &syn::ExprMatch,
        bound: &[String],
        loc: Loc,
    ) -> Vec<Node> {
        // `match rank { r if r == last => .. }`: the arm's binding is the rank.
        if let syn::Expr::Path(p) = &*m.expr {
            if p.path
                .get_ident()
                .is_some_and(|i| self.facts.rank_vars.contains(&i.to_string()))
            {
                for arm in &m.arms {
                    let names = pattern_idents(&arm.pat);
                    self.facts.rank_vars.extend(names);
                }
            }
        }
        let mut arms = Vec::new();
        for arm in &m.arms {
            self.bind_comm_pattern(&arm.pat, &m.expr);
            let mut nodes = Vec::new();
            self.expr(&arm.body, &[], self.loc(arm.body.extent()), &mut nodes);
            self.localize_peers(&mut nodes);
            arms.push(nodes);
        }
        self.branch_or_stmt(whole, &m.expr, arms, bound, loc)
    }

    /// `if let Some(sub) = world.split_by_color(c) { .. }` (also in a `&&` chain, and `while let`):
    /// what the pattern binds holds the communicator or process the scrutinee gives.
    fn bind_let_condition(&mut self, cond: &syn::Expr) {
        match cond {
            syn::Expr::Let(l) => self.bind_comm_pattern(&l.pat, &l.expr),
            syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::And(_)) => {
                self.bind_let_condition(&b.left);
                self.bind_let_condition(&b.right);
            }
            syn::Expr::Paren(p) => self.bind_let_condition(&p.expr),
            _ => {}
        }
    }

    /// Binds the names `pat` binds to the communicator or process `scrutinee` gives, if it gives
    /// one (`Some(sub)` matched against `world.split_by_color(c)`, a closure's input on it).
    fn bind_comm_pattern(&mut self, pat: &syn::Pat, scrutinee: &syn::Expr) {
        if let Some(value) = self.comm_value_of(scrutinee) {
            for name in pattern_idents(pat) {
                self.env.bind(&name, Some(value.clone()));
            }
        }
    }

    /// The communicator or process `e` gives (`world.split_by_color(c)`,
    /// `sub.process_at_rank(r)`), if it gives one; not a collection of requests.
    fn comm_value_of(&self, e: &syn::Expr) -> Option<crate::binding::CommValue> {
        use crate::catalogue::ValueKind;
        self.env
            .value_of(e, &self.text)
            .filter(|v| matches!(v.kind, ValueKind::Communicator | ValueKind::Process))
    }

    /// A branch whose arms hold loops or communication stays a branch; otherwise the whole
    /// `if`/`match` is one statement.
    fn branch_or_stmt(
        &mut self,
        whole: &syn::Expr,
        cond_expr: &syn::Expr,
        arms: Vec<Vec<Node>>,
        bound: &[String],
        loc: Loc,
    ) -> Vec<Node> {
        if !holds_structure(&arms) {
            return vec![Node::Stmt(self.scan(Some(whole), bound, loc))];
        }
        self.branch(whole, cond_expr, arms, bound, loc)
    }

    /// For `if rank == e { .. }` with no `else`: the names `e` reads (`[i]`), the rank whose
    /// turn it is to run the block.
    fn turn_of(&self, whole: &syn::Expr) -> Vec<String> {
        let syn::Expr::If(ifx) = whole else {
            return Vec::new();
        };
        let syn::Expr::Binary(b) = &*ifx.cond else {
            return Vec::new();
        };
        if ifx.else_branch.is_some() || !matches!(b.op, syn::BinOp::Eq(_)) {
            return Vec::new();
        }
        let is_rank = |e: &syn::Expr| self.facts.mentions_rank(&self.text.of(e));
        match (is_rank(&b.left), is_rank(&b.right)) {
            (true, false) => crate::syntax::expr_idents(&b.right),
            (false, true) => crate::syntax::expr_idents(&b.left),
            _ => Vec::new(),
        }
    }

    /// The branch node of `whole` (an `if` or a `match` on `cond_expr`) with its lowered arms,
    /// after the statement its condition is when that communicates (`if let Some(s) =
    /// any.immediate_probe()`, `match coll.test_any()`): the condition runs before either arm.
    fn branch(
        &mut self,
        whole: &syn::Expr,
        cond_expr: &syn::Expr,
        arms: Vec<Vec<Node>>,
        bound: &[String],
        loc: Loc,
    ) -> Vec<Node> {
        let mut cond = self.scan(Some(cond_expr), bound, self.loc(cond_expr.extent()));
        let mut out = Vec::with_capacity(2);
        if !cond.calls.is_empty() {
            let mut test = cond.clone();
            test.calls.clear();
            test.glue = true;
            test.computes = false;
            out.push(Node::Stmt(std::mem::replace(&mut cond, test)));
        }
        // `if let Some(l) = nb.left()` with a small function of the rank (`if self.rank > 0 {
        // Some(self.rank - 1) } else { None }`): envelope work, and `l` is what it computes.
        if !cond.glue && cond.calls.is_empty() {
            let (value, bound_name) = match cond_expr {
                syn::Expr::Let(l) => (&*l.expr, unwrapped_name(&l.pat)),
                other => (other, None),
            };
            if let Some(def) = peer_fns::glue_def(self.program, value, &self.text) {
                cond.glue = true;
                if let Some(name) = bound_name {
                    self.facts.glue_defs.insert(name, def);
                }
            } else if let (Some(name), Some(def)) = (
                bound_name,
                match value {
                    syn::Expr::Path(p) => p
                        .path
                        .get_ident()
                        .and_then(|v| self.facts.glue_defs.get(&v.to_string()).cloned()),
                    _ => None,
                },
            ) {
                // `if let Some(up) = above` with `above` a neighbour that may be missing (a
                // Cartesian shift's at the edge): `up` is that neighbour.
                cond.glue = true;
                self.facts.glue_defs.insert(name, def);
            }
        }
        if let syn::Expr::Match(m) = whole {
            cond.glue &= m.arms.iter().all(|a| match &a.pat {
                // syn 3 keeps an arm's guard in its pattern: `Some(x) if x > 0`.
                syn::Pat::Guard(g) => is_glue(&g.guard),
                _ => true,
            });
        }
        out.push(Node::Branch(Branch {
            loc,
            alt: None,
            cond,
            cond_expr: match whole {
                syn::Expr::If(_) => Some(cond_expr.clone()),
                _ => None,
            },
            cond_text: self.text.of(cond_expr),
            arms,
        }));
        out
    }
}

/// Whether a branch with these arms stays a branch: an arm holds a loop, communication or a
/// branch. Otherwise the whole `if`/`match` is one statement.
fn holds_structure(arms: &[Vec<Node>]) -> bool {
    arms.iter()
        .flatten()
        .any(|n| n.has_loop() || n.has_comm() || matches!(n, Node::Branch(_)))
}

/// Strips `?`, `.unwrap()`, `.expect(..)`, `.await`, parentheses and references.
/// Marks each `let` of glue or plain element reads whose names are all used by the
/// communication that follows it, past glue only, as staging that communication's messages:
/// `let mut edge = u[1];` then `send_receive_replace_into(&mut edge, ..)` stages one element as
/// the message (and is glue), `let mut sum = 0.0;` binds a receive target (its unpacking, `u[0] =
/// edge`, is glue already).
fn stage_messages(nodes: &mut [Node]) {
    // One pass from the end: `uses` holds the names the communication after the current node
    // uses, up to the first computation.
    let mut uses: Vec<String> = Vec::new();
    for node in nodes.iter_mut().rev() {
        if let Node::Stmt(s) = node {
            let candidate = (s.glue || s.copies_elements)
                && s.calls.is_empty()
                && !s.declares.is_empty()
                && s.declares.iter().all(|d| uses.contains(d));
            if candidate {
                s.glue = true;
                s.stages_message = true;
            }
        }
        if node.has_comm() && node.only_comm_and_glue() {
            uses.extend(node.comm_uses().into_iter().map(str::to_string));
        } else if !node.is_glue() && !matches!(node, Node::Stmt(s) if s.copies_elements) {
            uses.clear();
        }
    }
}

/// The calls of the closure among `closures` that `e` names (`report`, `&mut report`).
fn named_closure(
    closures: &HashMap<String, Vec<crate::ir::CallSite>>,
    e: &syn::Expr,
) -> Option<Vec<crate::ir::CallSite>> {
    let syn::Expr::Path(p) = peel(e) else {
        return None;
    };
    let name = p.path.get_ident()?;
    closures
        .get(crate::syntax::Name::of(name).as_str())
        .cloned()
}

/// The name `Some(p)` or `Ok(p)` binds.
fn unwrapped_name(pat: &syn::Pat) -> Option<String> {
    let syn::Pat::TupleStruct(ts) = pat else {
        return None;
    };
    let wrapper = ts.path.get_ident()?;
    if wrapper != "Some" && wrapper != "Ok" {
        return None;
    }
    match ts.elems.iter().collect::<Vec<_>>()[..] {
        [syn::Pat::Ident(inner)] => Some(inner.ident.to_string()),
        _ => None,
    }
}

/// `let Some(p) = up` (or `Ok`): `(p, up)`, when both are plain names.
fn unwrapped_binding(cond: &syn::Expr) -> Option<(String, String)> {
    let syn::Expr::Let(l) = cond else { return None };
    let inner = unwrapped_name(&l.pat)?;
    let syn::Expr::Path(outer) = peel(&l.expr) else {
        return None;
    };
    Some((inner, outer.path.get_ident()?.to_string()))
}

/// Plain element reads, alone, in a tuple or array, or chosen by an envelope guard: `u[1]`,
/// `(u[1], u[n])`, `[u[n], u[n + 1]]`, `v[i][j]`, `if nb < rank { u[1] } else { u[n] }`.
fn element_reads(e: &syn::Expr) -> bool {
    let tail = |b: &syn::Block| match b.stmts.as_slice() {
        [syn::Stmt::Expr(e, None)] => element_reads(e),
        _ => false,
    };
    match peel(e) {
        syn::Expr::If(i) => {
            crate::glue::is_glue(&i.cond)
                && tail(&i.then_branch)
                && i.else_branch.as_ref().is_some_and(|(_, e)| match &**e {
                    syn::Expr::Block(b) => tail(&b.block),
                    other => element_reads(other),
                })
        }
        syn::Expr::Index(i) => {
            matches!(
                peel(&i.expr),
                syn::Expr::Path(_) | syn::Expr::Index(_) | syn::Expr::Field(_)
            ) && !matches!(peel(&i.index), syn::Expr::Range(_))
                && crate::glue::is_glue(&i.index)
        }
        syn::Expr::Tuple(t) => !t.elems.is_empty() && t.elems.iter().all(element_reads),
        syn::Expr::Array(a) => !a.elems.is_empty() && a.elems.iter().all(element_reads),
        _ => false,
    }
}

fn peel(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Try(t) => peel(&t.expr),
        syn::Expr::Paren(p) => peel(&p.expr),
        syn::Expr::Reference(r) => peel(&r.expr),
        syn::Expr::Await(a) => peel(&a.base),
        syn::Expr::Assign(a) => peel(&a.right),
        syn::Expr::MethodCall(m)
            if matches!(
                crate::syntax::Name::of(&m.method).as_str(),
                "unwrap"
                    | "expect"
                    | "map_err"
                    | "unwrap_or_else"
                    | "unwrap_or"
                    | "unwrap_or_default"
            ) =>
        {
            peel(&m.receiver)
        }
        other => other,
    }
}

/// `name += <integer literal>`: the name of the counter it steps.
fn increments(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Binary(b) if matches!(b.op, syn::BinOp::AddAssign(_)) => {
            match (&*b.left, &*b.right) {
                (
                    syn::Expr::Path(p),
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(_),
                        ..
                    }),
                ) => p.path.get_ident().map(|i| i.to_string()),
                _ => None,
            }
        }
        _ => None,
    }
}

fn has_iterate_attr(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path()
            .segments
            .last()
            .is_some_and(|s| s.ident == "iterate")
    })
}
