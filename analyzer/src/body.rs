//! Building the intermediate form of a function body (`ir.rs`) from syn.
//!
//! Statements are scanned (`scan.rs`) with the function's bindings (`binding.rs`); loops,
//! iterator chains with closures and branches that hold loops or communication become tree
//! nodes; closures that are not loops (`mpi::request::scope(|s| ..)`, `launch(|ctx| ..)`) are
//! inlined. Calls of user functions that communicate are expanded interprocedurally: a
//! communication-only function (or one marked `#[mheta::comm]` / named in mheta.toml) becomes a
//! single statement whose calls are the function's (rule 2); a function that mixes
//! communication and computation is inlined (depth-limited, recursion reported).

use std::collections::{BTreeSet, HashMap};

use syn::spanned::Spanned;

use mheta_runtime::format::Pattern;

use crate::binding::{pattern_idents, type_value, Env, Text};
use crate::catalogue::ValueKind;
use crate::diagnostics::{Diagnostic, Diagnostics, Loc};
use crate::ir::{Branch, CallSite, Loop, LoopKind, Node, Stmt};
use crate::load::{Function, Program};
use crate::scan::{base_var, is_glue, Scanner, UserCall};

/// How deep user functions are inlined.
const MAX_INLINE_DEPTH: usize = 8;

/// Iterator adapters whose closure runs once per element (the chain is a loop).
const ITER_CLOSURE_METHODS: &[&str] = &[
    "for_each", "map", "filter", "filter_map", "flat_map", "fold", "try_for_each", "try_fold", "any", "all", "position",
    "find", "find_map", "inspect", "map_while", "scan", "take_while", "skip_while", "reduce", "for_each_init",
    "for_each_with", "max_by", "min_by", "max_by_key", "min_by_key", "sum_by",
];

/// Iterator methods that consume the whole iteration (the chain is a loop even without closures).
const CONSUMING_METHODS: &[&str] = &["sum", "product", "count", "max", "min", "collect", "fold", "for_each", "last"];

/// Methods that start an iteration over data.
const ITER_SOURCES: &[&str] = &[
    "iter", "iter_mut", "into_iter", "par_iter", "par_iter_mut", "into_par_iter", "chunks", "chunks_mut", "windows",
    "par_chunks", "par_chunks_mut", "chunks_exact", "chunks_exact_mut", "lines", "bytes", "chars", "keys", "values",
    "drain",
];

/// A variable declared in a solver (arrays and vectors).
#[derive(Debug, Clone)]
pub struct VarDecl {
    pub name: String,
    pub distributed: bool,
    pub elem_type: Option<String>,
    pub loc: Loc,
}

/// Facts gathered while building, shared across inlined functions.
#[derive(Debug, Default)]
pub struct Facts {
    pub rank_vars: BTreeSet<String>,
    pub size_vars: BTreeSet<String>,
    /// Scalars whose value derives from this node's partition (`rows = ctx.local_rows(n)`).
    pub dist_sizes: BTreeSet<String>,
    pub variables: Vec<VarDecl>,
    /// Glue `let`s: name → initialiser as written (for participants such as `left = rank - 1`).
    pub glue_defs: HashMap<String, String>,
    /// Local closures whose bodies are glue (`let lo = |k| k * n;`).
    pub glue_closures: BTreeSet<String>,
    /// Names of the data arrays declared so far.
    pub arrays: BTreeSet<String>,
    pub diags: Diagnostics,
}

/// Which functions communicate, directly or through callees (the inlining worklist's filter).
pub fn communicating_functions(program: &Program) -> Vec<bool> {
    let n = program.functions.len();
    let mut direct = vec![false; n];
    let mut callees: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for (i, f) in program.functions.iter().enumerate() {
        let mut facts = Facts::default();
        let none = vec![false; n];
        let mut b = Builder::new(program, f, &none, &mut facts, vec![i], None);
        let nodes = b.block(&f.block);
        callees[i] = b.called.clone();
        direct[i] = nodes.iter().any(Node::has_comm) || is_comm_attr(f) || program.config.is_comm_function(&f.path);
    }
    let mut comm = direct;
    loop {
        let mut changed = false;
        for i in 0..n {
            if !comm[i] && callees[i].iter().any(|&c| comm[c]) {
                comm[i] = true;
                changed = true;
            }
        }
        if !changed {
            return comm;
        }
    }
}

/// Builds the body of function `index` with full interprocedural expansion.
pub fn build_function(program: &Program, index: usize, comm_fns: &[bool], facts: &mut Facts) -> (Vec<Node>, BTreeSet<usize>) {
    let f = &program.functions[index];
    let mut b = Builder::new(program, f, comm_fns, facts, vec![index], None);
    b.declare_params(&f.sig);
    let nodes = b.block(&f.block);
    (nodes, b.called)
}

/// Whether a function carries `#[mheta::comm]` (or `#[comm]`).
pub fn is_comm_attr(f: &Function) -> bool {
    f.attrs.iter().any(|a| {
        let segs: Vec<String> = a.path().segments.iter().map(|s| s.ident.to_string()).collect();
        segs == ["mheta", "comm"] || segs == ["comm"]
    })
}

struct Builder<'p, 'f> {
    program: &'p Program,
    text: Text<'p>,
    env: Env,
    comm_fns: &'p [bool],
    facts: &'f mut Facts,
    /// The inlining stack (function indices), this function last.
    stack: Vec<usize>,
    /// User functions called (directly) from this body.
    called: BTreeSet<usize>,
}

impl<'p, 'f> Builder<'p, 'f> {
    /// A builder for `f`'s body; `env` carries communicator arguments bound by a caller.
    fn new(
        program: &'p Program,
        f: &Function,
        comm_fns: &'p [bool],
        facts: &'f mut Facts,
        stack: Vec<usize>,
        env: Option<Env>,
    ) -> Self {
        let mut env = env.unwrap_or_else(|| Env::new(&program.fields, &program.config));
        env.bind_params(&f.sig);
        Builder {
            program,
            text: Text { sources: &program.sources, file: f.file },
            env,
            comm_fns,
            facts,
            stack,
            called: BTreeSet::new(),
        }
    }

    fn loc(&self, s: proc_macro2::Span) -> Loc {
        self.text.loc(s)
    }

    /// Records slice and vector parameters as variables of the solver.
    fn declare_params(&mut self, sig: &syn::Signature) {
        for input in &sig.inputs {
            if let syn::FnArg::Typed(pt) = input {
                let ty = &pt.ty;
                let ty_text = quote::quote!(#ty).to_string();
                if ty_text.contains('[') || ty_text.contains("Vec") || ty_text.contains("DistArray") {
                    for name in pattern_idents(&pt.pat) {
                        let distributed = ty_text.contains("DistArray");
                        let elem_type = elem_of_type(&pt.ty);
                        self.facts.variables.push(VarDecl { name, distributed, elem_type, loc: self.loc(pt.span()) });
                    }
                }
            }
        }
    }

    fn block(&mut self, b: &syn::Block) -> Vec<Node> {
        let mut out = Vec::new();
        for stmt in &b.stmts {
            self.stmt(stmt, &mut out);
        }
        out
    }

    fn stmt(&mut self, s: &syn::Stmt, out: &mut Vec<Node>) {
        match s {
            syn::Stmt::Local(l) => self.local(l, out),
            syn::Stmt::Expr(e, _) => self.expr(e, &[], self.loc(s.span()), out),
            syn::Stmt::Macro(m) => {
                let e = syn::Expr::Macro(syn::ExprMacro { attrs: m.attrs.clone(), mac: m.mac.clone() });
                out.push(Node::Stmt(self.scan(Some(&e), &[], self.loc(s.span()))));
            }
            syn::Stmt::Item(_) => {}
        }
    }

    fn scan(&self, e: Option<&syn::Expr>, bound: &[String], loc: Loc) -> Stmt {
        let user_comm = |c: UserCall<'_>| self.nested_user_comm(c);
        let scanner = Scanner {
            env: &self.env,
            text: self.text,
            config: &self.program.config,
            user_comm: &user_comm,
            glue_closures: &self.facts.glue_closures,
            data: &self.facts.arrays,
        };
        scanner.scan(e, bound, loc)
    }

    /// A `let`: bindings (communicator values, rank/size/partition facts, variables), then the
    /// initialiser lowered like an expression statement.
    fn local(&mut self, l: &syn::Local, out: &mut Vec<Node>) {
        let names = pattern_idents(&l.pat);
        let loc = self.loc(l.span());
        let init = l.init.as_ref().map(|i| &*i.expr);
        let annotated = match &l.pat {
            syn::Pat::Type(t) => type_value(&t.ty),
            _ => None,
        };
        // Element-wise for `let (rank, size) = (world.rank(), world.size())`.
        let parts: Vec<Option<&syn::Expr>> = match (&l.pat, init) {
            (syn::Pat::Tuple(pt), Some(syn::Expr::Tuple(t))) if pt.elems.len() == t.elems.len() => t.elems.iter().map(Some).collect(),
            _ => vec![init; names.len()],
        };
        let mut binds_comm = false;
        for (name, part) in names.iter().zip(parts) {
            let value = annotated.clone().or_else(|| part.and_then(|e| self.env.value_of(e, &self.text)));
            binds_comm |= value.is_some();
            self.env.bind(name, value);
            if let Some(e) = part {
                self.note_facts(name, e, loc, l);
            }
        }
        match init {
            Some(e) => {
                let before = out.len();
                self.expr(e, &names, loc, out);
                // Binding a communicator (`let up = comm.process_at_rank(r)`) is glue.
                if binds_comm && out.len() == before + 1 {
                    if let Some(Node::Stmt(s)) = out.last_mut() {
                        if s.calls.is_empty() {
                            s.glue = true;
                        }
                    }
                }
            }
            None => out.push(Node::Stmt(self.scan(None, &names, loc))),
        }
    }

    fn note_facts(&mut self, name: &str, e: &syn::Expr, loc: Loc, l: &syn::Local) {
        let m = mentions(e);
        if m.methods.iter().any(|x| x == "rank") && !m.is_array {
            self.facts.rank_vars.insert(name.to_string());
        }
        if m.methods.iter().any(|x| x == "size") && !m.is_array && m.idents.iter().all(|i| !self.facts.rank_vars.contains(i)) {
            self.facts.size_vars.insert(name.to_string());
        }
        let distributed_arrays: BTreeSet<&str> =
            self.facts.variables.iter().filter(|v| v.distributed).map(|v| v.name.as_str()).collect();
        let partition_marker = m.methods.iter().any(|x| matches!(x.as_str(), "local_rows" | "partition" | "array"))
            || m.idents.iter().any(|i| self.facts.dist_sizes.contains(i) || i == "DistArray")
            || m.idents.iter().any(|i| distributed_arrays.contains(i.as_str()))
            || m.divisors.iter().any(|d| self.facts.size_vars.contains(d) || d == "size");
        let forced_dist = self.program.config.variables.distributed.iter().any(|v| v == name);
        let forced_repl = self.program.config.variables.replicated.iter().any(|v| v == name);
        let annotated_array = match &l.pat {
            syn::Pat::Type(t) => {
                let ty = &t.ty;
                let text = quote::quote!(#ty).to_string();
                text.contains("Vec") || text.starts_with('[') || text.contains("DistArray")
            }
            _ => false,
        };
        // A copy of an array is an array (`let scratch = field.clone()`), as is a literal one.
        let copies_array = match e {
            syn::Expr::MethodCall(mc) => {
                matches!(mc.method.to_string().as_str(), "clone" | "to_vec" | "to_owned")
                    && crate::scan::base_var(&mc.receiver).is_some_and(|v| self.facts.arrays.contains(&v))
            }
            syn::Expr::Array(_) | syn::Expr::Repeat(_) => true,
            _ => false,
        };
        let copied_elem = match e {
            syn::Expr::MethodCall(mc) => crate::scan::base_var(&mc.receiver)
                .and_then(|v| self.facts.variables.iter().find(|x| x.name == v).and_then(|x| x.elem_type.clone())),
            syn::Expr::Array(a) => a.elems.first().and_then(literal_type),
            syn::Expr::Repeat(r) => literal_type(&r.expr),
            _ => None,
        };
        if m.is_array || annotated_array || copies_array {
            self.facts.arrays.insert(name.to_string());
            let elem_type = match &l.pat {
                syn::Pat::Type(t) => elem_of_type(&t.ty),
                _ => None,
            }
            .or(m.elem_type.clone())
            .or(copied_elem);
            let distributed = (partition_marker || forced_dist) && !forced_repl;
            self.facts.variables.retain(|v| v.name != name);
            self.facts.variables.push(VarDecl { name: name.to_string(), distributed, elem_type, loc });
        } else if partition_marker && !m.methods.iter().any(|x| x == "rank") {
            self.facts.dist_sizes.insert(name.to_string());
        }
        if let syn::Expr::Closure(c) = e {
            let glue = crate::scan::Glue { closures: &self.facts.glue_closures, data: &self.facts.arrays };
            if glue.expr(&c.body) {
                self.facts.glue_closures.insert(name.to_string());
            }
        } else if is_glue(e) {
            self.facts.glue_defs.insert(name.to_string(), self.text.of(e));
        }
    }

    /// Lowers an expression statement (or a `let` initialiser binding `bound`).
    fn expr(&mut self, e: &syn::Expr, bound: &[String], loc: Loc, out: &mut Vec<Node>) {
        use syn::Expr;
        match e {
            Expr::ForLoop(f) => {
                let iterable = self.env.value_of(&f.expr, &self.text);
                let vars = pattern_idents(&f.pat);
                if iterable.as_ref().is_some_and(|v| v.kind == ValueKind::Requests) {
                    for v in &vars {
                        self.env.bind(v, Some(crate::binding::CommValue { kind: ValueKind::Request, family: iterable.clone().map(|v| v.family).unwrap_or(crate::catalogue::Family::Mpi), peer: None }));
                    }
                }
                let header = self.scan(Some(&f.expr), bound, self.loc(f.expr.span()));
                let body = self.block(&f.body);
                out.push(Node::Loop(Loop {
                    loc: self.loc(e.span()),
                    kind: LoopKind::For,
                    bound_reads: header.reads.clone(),
                    header_text: self.text.of(&*f.expr),
                    trip_count: trip_count(&f.expr, &self.text),
                    vars,
                    header,
                    body,
                    iterate: has_iterate_attr(&f.attrs),
                }));
            }
            Expr::While(w) => {
                let header = self.scan(Some(&w.cond), bound, self.loc(w.cond.span()));
                let body = self.block(&w.body);
                let vars = match &*w.cond {
                    Expr::Let(l) => pattern_idents(&l.pat),
                    _ => vec![],
                };
                out.push(Node::Loop(Loop {
                    loc: self.loc(e.span()),
                    kind: LoopKind::While,
                    bound_reads: header.reads.clone(),
                    header_text: self.text.of(&*w.cond),
                    trip_count: "..".into(),
                    vars,
                    header,
                    body,
                    iterate: has_iterate_attr(&w.attrs),
                }));
            }
            Expr::Loop(l) => {
                let body = self.block(&l.body);
                out.push(Node::Loop(Loop {
                    loc: self.loc(e.span()),
                    kind: LoopKind::Loop,
                    vars: vec![],
                    bound_reads: vec![],
                    header_text: String::new(),
                    trip_count: "..".into(),
                    header: Stmt { loc: Some(loc), glue: true, ..Stmt::default() },
                    body,
                    iterate: has_iterate_attr(&l.attrs),
                }));
            }
            Expr::If(i) => out.push(self.if_expr(e, i, bound, loc)),
            Expr::Match(m) => out.push(self.match_expr(e, m, bound, loc)),
            Expr::Block(b) if bound.is_empty() => out.extend(self.block(&b.block)),
            Expr::Unsafe(u) if bound.is_empty() => out.extend(self.block(&u.block)),
            Expr::Paren(p) => self.expr(&p.expr, bound, loc, out),
            _ => {
                if let Some(node) = self.iterator_loop(e, bound) {
                    out.push(node);
                } else if let Some(nodes) = self.closure_bodies(e) {
                    out.extend(nodes);
                } else if let Some(nodes) = self.user_call(e, bound, loc) {
                    out.extend(nodes);
                } else {
                    self.note_request_push(e);
                    out.push(Node::Stmt(self.scan(Some(e), bound, loc)));
                }
            }
        }
    }

    /// `reqs.push(world.process_at_rank(r).immediate_send(..))` makes `reqs` a request collection.
    fn note_request_push(&mut self, e: &syn::Expr) {
        if let syn::Expr::MethodCall(m) = e {
            if m.method == "push" {
                if let (Some(var), Some(arg)) = (base_var(&m.receiver), m.args.first()) {
                    if let Some(v) = self.env.value_of(arg, &self.text).filter(|v| v.kind == ValueKind::Request) {
                        self.env.bind(&var, Some(crate::binding::CommValue { kind: ValueKind::Requests, ..v }));
                    }
                }
            }
        }
    }

    fn if_expr(&mut self, whole: &syn::Expr, i: &syn::ExprIf, bound: &[String], loc: Loc) -> Node {
        let mut arms = vec![self.block(&i.then_branch)];
        if let Some((_, els)) = &i.else_branch {
            let mut arm = Vec::new();
            self.expr(els, &[], self.loc(els.span()), &mut arm);
            arms.push(arm);
        }
        self.branch_or_stmt(whole, &i.cond, arms, bound, loc)
    }

    fn match_expr(&mut self, whole: &syn::Expr, m: &syn::ExprMatch, bound: &[String], loc: Loc) -> Node {
        // `match rank { r if r == last => .. }`: the arm's binding is the rank.
        if let syn::Expr::Path(p) = &*m.expr {
            if p.path.get_ident().is_some_and(|i| self.facts.rank_vars.contains(&i.to_string())) {
                for arm in &m.arms {
                    let names = pattern_idents(&arm.pat);
                    self.facts.rank_vars.extend(names);
                }
            }
        }
        let mut arms = Vec::new();
        for arm in &m.arms {
            let mut nodes = Vec::new();
            self.expr(&arm.body, &[], self.loc(arm.body.span()), &mut nodes);
            arms.push(nodes);
        }
        self.branch_or_stmt(whole, &m.expr, arms, bound, loc)
    }

    /// A branch whose arms hold loops or communication stays a branch; otherwise the whole
    /// `if`/`match` is one statement.
    fn branch_or_stmt(&mut self, whole: &syn::Expr, cond: &syn::Expr, arms: Vec<Vec<Node>>, bound: &[String], loc: Loc) -> Node {
        let structured = arms.iter().flatten().any(|n| n.has_loop() || n.has_comm() || matches!(n, Node::Branch(_)));
        if !structured {
            return Node::Stmt(self.scan(Some(whole), bound, loc));
        }
        let mut cond = self.scan(Some(cond), bound, self.loc(cond.span()));
        if let syn::Expr::Match(m) = whole {
            cond.glue &= m.arms.iter().all(|a| a.guard.as_ref().map_or(true, |(_, g)| is_glue(g)));
        }
        Node::Branch(Branch { loc, cond, arms })
    }

    /// An iterator chain with per-element closures (`a.iter().map(|x| ..).sum()`) or consuming
    /// a data iterator (`v.iter().sum()`), anywhere in the statement, as a loop.
    fn iterator_loop(&mut self, e: &syn::Expr, bound: &[String]) -> Option<Node> {
        let chain = find_chain(e)?;
        let (closures, root) = chain_parts(chain);
        let mut vars = Vec::new();
        let mut body = Vec::new();
        for c in &closures {
            for input in &c.inputs {
                vars.extend(pattern_idents(input));
            }
            let inner_loc = self.loc(c.body.span());
            match &*c.body {
                syn::Expr::Block(b) => body.extend(self.block(&b.block)),
                other => self.expr(other, &[], inner_loc, &mut body),
            }
        }
        let mut header = self.scan(Some(e), bound, self.loc(e.span()));
        if body.iter().any(Node::has_comm) {
            header.calls.clear();
        } else if !header.calls.is_empty() {
            // A communication statement computing its message (`all_reduce(&v.iter().sum())`).
            return None;
        }
        header.glue = false;
        Some(Node::Loop(Loop {
            loc: self.loc(e.span()),
            kind: LoopKind::Iterator,
            bound_reads: self.scan(Some(root), &[], self.loc(root.span())).reads,
            header_text: self.text.of(root),
            trip_count: trip_count(root, &self.text),
            vars,
            header,
            body,
            iterate: false,
        }))
    }

    /// Closures passed to a non-iterator call (`scope(|s| { .. })`) are inlined.
    fn closure_bodies(&mut self, e: &syn::Expr) -> Option<Vec<Node>> {
        let args: Vec<&syn::Expr> = match peel(e) {
            syn::Expr::Call(c) => c.args.iter().collect(),
            syn::Expr::MethodCall(m) => m.args.iter().collect(),
            _ => return None,
        };
        let closures: Vec<&syn::ExprClosure> = args
            .into_iter()
            .filter_map(|a| match a {
                syn::Expr::Closure(c) if matches!(&*c.body, syn::Expr::Block(_)) => Some(c),
                _ => None,
            })
            .collect();
        if closures.is_empty() {
            return None;
        }
        let mut out = Vec::new();
        for c in closures {
            if let syn::Expr::Block(b) = &*c.body {
                out.extend(self.block(&b.block));
            }
        }
        Some(out)
    }

    /// Resolves a call to a user function (`f(..)`, `m::f(..)`, `x.method(..)`).
    fn resolve(&self, call: UserCall<'_>) -> Option<usize> {
        let fns = &self.program.functions;
        match call {
            UserCall::Call(c) => {
                let syn::Expr::Path(p) = &*c.func else { return None };
                let segs: Vec<String> = p
                    .path
                    .segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .filter(|s| !matches!(s.as_str(), "crate" | "self" | "super" | "Self"))
                    .collect();
                let wanted = segs.join("::");
                let here = self.program.functions.get(*self.stack.last()?).map(|f| f.file);
                let mut candidates: Vec<usize> =
                    (0..fns.len()).filter(|&i| crate::config::names(&wanted, &fns[i].path) && fns[i].sig.receiver().is_none() || (segs.len() >= 2 && crate::config::names(&wanted, &fns[i].path))).collect();
                candidates.sort_by_key(|&i| Some(fns[i].file) != here);
                candidates.first().copied()
            }
            UserCall::Method(m) => {
                if self.env.value_of(&m.receiver, &self.text).is_some() {
                    return None;
                }
                let name = m.method.to_string();
                let candidates: Vec<usize> =
                    (0..fns.len()).filter(|&i| fns[i].name == name && fns[i].sig.receiver().is_some()).collect();
                // Only when unambiguous about communication: every candidate agrees.
                let first = *candidates.first()?;
                candidates.iter().all(|&i| self.comm_fns.get(i) == self.comm_fns.get(first)).then_some(first)
            }
        }
    }

    /// Expands a top-level call of a communicating user function.
    fn user_call(&mut self, e: &syn::Expr, bound: &[String], loc: Loc) -> Option<Vec<Node>> {
        let call = UserCall::of(peel(e))?;
        let index = self.resolve(call)?;
        self.called.insert(index);
        if !self.comm_fns.get(index).copied().unwrap_or(false) {
            return None;
        }
        let expanded = self.expand(call, index, loc)?;
        match expanded {
            Expansion::Event(calls, path) => {
                let mut stmt = self.scan(Some(e), bound, loc);
                stmt.calls = calls;
                stmt.function = Some(path);
                stmt.glue = false;
                stmt.computes = false;
                Some(vec![Node::Stmt(stmt)])
            }
            Expansion::Inline(nodes) => Some(nodes),
        }
    }

    /// Communication calls of a user function called inside a larger expression.
    fn nested_user_comm(&self, call: UserCall<'_>) -> Option<Vec<CallSite>> {
        let index = self.resolve(call)?;
        if !self.comm_fns.get(index).copied().unwrap_or(false) || self.stack.contains(&index) {
            return None;
        }
        let f = &self.program.functions[index];
        let mut facts = Facts::default();
        let mut b = Builder::new(self.program, f, self.comm_fns, &mut facts, self.stack.iter().copied().chain([index]).collect(), None);
        if b.stack.len() > MAX_INLINE_DEPTH {
            return None;
        }
        let nodes = b.block(&f.block);
        let path = f.path.clone();
        let hint = self.program.config.comm_pattern(&path);
        Some(collect_calls(&nodes, &path, hint))
    }

    fn expand(&mut self, call: UserCall<'_>, index: usize, loc: Loc) -> Option<Expansion> {
        let f = &self.program.functions[index];
        if let Some(pos) = self.stack.iter().position(|&i| i == index) {
            let cycle: Vec<&str> = self.stack[pos..].iter().chain([&index]).map(|&i| self.program.functions[i].path.as_str()).collect();
            let msg = format!("recursion through communicating function `{}`", f.path);
            let d = Diagnostic::error(msg, Some(loc)).with_label("recursive call").with_note(format!("call cycle: {}", cycle.join(" → ")));
            self.facts.diags.push(d);
            return None;
        }
        if self.stack.len() >= MAX_INLINE_DEPTH {
            let msg = format!("`{}` is not inlined: calls nest deeper than {MAX_INLINE_DEPTH}", f.path);
            self.facts.diags.push(Diagnostic::warning(msg, Some(loc)));
            return None;
        }
        // Communicator arguments bind the callee's parameters.
        let args = call.args();
        let mut env = Env::new(&self.program.fields, &self.program.config);
        let params: Vec<&syn::Pat> = f.sig.inputs.iter().filter_map(|i| match i {
            syn::FnArg::Typed(t) => Some(&*t.pat),
            syn::FnArg::Receiver(_) => None,
        }).collect();
        for (param, arg) in params.iter().zip(&args) {
            if let Some(v) = self.env.value_of(arg, &self.text) {
                for name in pattern_idents(param) {
                    env.bind(&name, Some(v.clone()));
                }
            }
        }
        let stack: Vec<usize> = self.stack.iter().copied().chain([index]).collect();
        let comm_fns = self.comm_fns;
        let program = self.program;
        let mut child = Builder::new(program, f, comm_fns, self.facts, stack, Some(env));
        let nodes = child.block(&f.block);
        let path = f.path.clone();
        let rule2 = is_comm_attr(f) || program.config.is_comm_function(&path);
        if !rule2 && !nodes.iter().any(Node::has_comm) {
            return None;
        }
        if rule2 || nodes.iter().all(Node::only_comm_and_glue) {
            let hint = program.config.comm_pattern(&path);
            let mut calls = collect_calls(&nodes, &path, hint);
            if calls.is_empty() {
                // A communication function over a transport no catalogue knows (mheta.toml).
                calls.push(CallSite {
                    api: path.clone(),
                    kind: match hint {
                        Some(
                            p @ (Pattern::Reduction
                            | Pattern::Broadcast
                            | Pattern::Barrier
                            | Pattern::Gather
                            | Pattern::Scatter
                            | Pattern::AllGather
                            | Pattern::AllToAll),
                        ) => crate::catalogue::CallKind::Collective(p),
                        _ => crate::catalogue::CallKind::Exchange,
                    },
                    peer: None,
                    message: None,
                    elem_type: None,
                    loc: Loc::of(f.file, f.sig.ident.span()),
                    pattern_hint: hint,
                    ranges: vec![],
                });
            }
            Some(Expansion::Event(calls, path))
        } else {
            Some(Expansion::Inline(nodes))
        }
    }
}

enum Expansion {
    Event(Vec<CallSite>, String),
    Inline(Vec<Node>),
}

/// The calls inside a communication function, with the loop ranges around each.
fn collect_calls(nodes: &[Node], path: &str, hint: Option<mheta_runtime::format::Pattern>) -> Vec<CallSite> {
    fn walk(n: &Node, ranges: &mut Vec<(String, String)>, out: &mut Vec<CallSite>) {
        match n {
            Node::Stmt(s) => out.extend(s.calls.iter().map(|c| {
                let mut c = c.clone();
                c.ranges.extend(ranges.iter().cloned());
                c
            })),
            Node::Loop(l) => {
                let pushed = l.vars.len();
                ranges.extend(l.vars.iter().map(|v| (v.clone(), l.header_text.clone())));
                l.body.iter().for_each(|b| walk(b, ranges, out));
                ranges.truncate(ranges.len() - pushed);
            }
            Node::Branch(b) => b.arms.iter().flatten().for_each(|x| walk(x, ranges, out)),
        }
    }
    let mut out = Vec::new();
    nodes.iter().for_each(|n| walk(n, &mut vec![], &mut out));
    for c in &mut out {
        c.pattern_hint = hint;
        if c.api.starts_with("mpi::") || c.api.starts_with("comm::") {
            continue;
        }
        c.api = path.to_string();
    }
    out
}

/// Whether a method-call chain is an iteration over data: a per-element closure adapter, or a
/// consuming method on an iterator source (and not a glue chain over a range of ranks).
fn is_chain(m: &syn::ExprMethodCall) -> bool {
    let mut is_iter = false;
    let mut consumes = false;
    let mut from_source = false;
    let mut cur = m;
    loop {
        let name = cur.method.to_string();
        consumes |= CONSUMING_METHODS.contains(&name.as_str());
        from_source |= ITER_SOURCES.contains(&name.as_str());
        is_iter |= ITER_CLOSURE_METHODS.contains(&name.as_str()) && cur.args.iter().any(|a| matches!(a, syn::Expr::Closure(_)));
        match &*cur.receiver {
            syn::Expr::MethodCall(inner) => cur = inner,
            _ => break,
        }
    }
    let no_closures = std::collections::BTreeSet::new();
    let glue = crate::scan::Glue { closures: &no_closures, data: &no_closures };
    (is_iter || consumes && from_source) && !glue.method_call(m)
}

/// The outermost iterator chain in an expression (closures are not searched).
fn find_chain(e: &syn::Expr) -> Option<&syn::ExprMethodCall> {
    use syn::Expr;
    match e {
        Expr::MethodCall(m) if is_chain(m) => Some(m),
        Expr::MethodCall(m) => find_chain(&m.receiver).or_else(|| m.args.iter().find_map(find_chain)),
        Expr::Binary(b) => find_chain(&b.left).or_else(|| find_chain(&b.right)),
        Expr::Unary(u) => find_chain(&u.expr),
        Expr::Paren(p) => find_chain(&p.expr),
        Expr::Cast(c) => find_chain(&c.expr),
        Expr::Try(t) => find_chain(&t.expr),
        Expr::Reference(r) => find_chain(&r.expr),
        Expr::Assign(a) => find_chain(&a.right),
        Expr::Call(c) => c.args.iter().find_map(find_chain),
        Expr::Tuple(t) => t.elems.iter().find_map(find_chain),
        Expr::Array(a) => a.elems.iter().find_map(find_chain),
        _ => None,
    }
}

/// The per-element closures of a chain (in call order) and its root expression.
fn chain_parts(m: &syn::ExprMethodCall) -> (Vec<&syn::ExprClosure>, &syn::Expr) {
    let mut closures = Vec::new();
    let mut cur: &syn::ExprMethodCall = m;
    loop {
        let name = cur.method.to_string();
        if ITER_CLOSURE_METHODS.contains(&name.as_str()) {
            closures.extend(cur.args.iter().filter_map(|a| if let syn::Expr::Closure(c) = a { Some(c) } else { None }));
        }
        match &*cur.receiver {
            syn::Expr::MethodCall(inner) => cur = inner,
            root => {
                closures.reverse();
                return (closures, root);
            }
        }
    }
}

/// Strips `?`, `.unwrap()`, `.expect(..)`, `.await`, parentheses and references.
fn peel(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Try(t) => peel(&t.expr),
        syn::Expr::Paren(p) => peel(&p.expr),
        syn::Expr::Reference(r) => peel(&r.expr),
        syn::Expr::Await(a) => peel(&a.base),
        syn::Expr::Assign(a) => peel(&a.right),
        syn::Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "unwrap" | "expect" | "map_err" | "unwrap_or_else") => {
            peel(&m.receiver)
        }
        other => other,
    }
}

fn has_iterate_attr(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| a.path().segments.last().is_some_and(|s| s.ident == "iterate"))
}

/// `2` for `0..2`, `k` for `0..k`, `hi - lo` for `lo..hi`, `..` otherwise.
fn trip_count(e: &syn::Expr, text: &Text<'_>) -> String {
    let lit = |e: &syn::Expr| match e {
        syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. }) => i.base10_parse::<i64>().ok(),
        _ => None,
    };
    match e {
        syn::Expr::Paren(p) => trip_count(&p.expr, text),
        syn::Expr::Range(r) => {
            let (Some(start), Some(end)) = (&r.start, &r.end) else { return "..".into() };
            let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
            match (lit(start), lit(end)) {
                (Some(a), Some(b)) => (b - a + i64::from(inclusive)).max(0).to_string(),
                (Some(0), None) if !inclusive => text.of(&**end),
                _ => {
                    let base = format!("{} - {}", text.of(&**end), text.of(&**start));
                    if inclusive { format!("{base} + 1") } else { base }
                }
            }
        }
        // `for q in &basis`, `basis.iter()`: once per element.
        syn::Expr::Reference(r) => trip_count(&r.expr, text),
        syn::Expr::Path(p) if p.path.get_ident().is_some() => format!("{}.len()", text.of(e)),
        syn::Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "iter" | "iter_mut" | "into_iter") => {
            trip_count(&m.receiver, text)
        }
        _ => "..".into(),
    }
}

/// The element type named in `Vec<T>`, `&[T]`, `DistArray<T>`.
fn elem_of_type(ty: &syn::Type) -> Option<String> {
    match ty {
        syn::Type::Reference(r) => elem_of_type(&r.elem),
        syn::Type::Slice(s) => Some(type_text(&s.elem)),
        syn::Type::Array(a) => Some(type_text(&a.elem)),
        syn::Type::Path(p) => {
            let last = p.path.segments.last()?;
            match &last.arguments {
                syn::PathArguments::AngleBracketed(a) => a.args.iter().find_map(|g| match g {
                    syn::GenericArgument::Type(t) => Some(type_text(t)),
                    _ => None,
                }),
                _ => None,
            }
        }
        _ => None,
    }
}

/// The type of a literal as Rust infers it without context (`1.0` → `f64`).
fn literal_type(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Lit(l) => match &l.lit {
            syn::Lit::Float(f) => Some(if f.suffix().is_empty() { "f64".into() } else { f.suffix().into() }),
            syn::Lit::Int(i) if !i.suffix().is_empty() => Some(i.suffix().into()),
            syn::Lit::Bool(_) => Some("bool".into()),
            _ => None,
        },
        syn::Expr::Unary(u) => literal_type(&u.expr),
        _ => None,
    }
}

/// A type as Rust prints it (`Vec<f64>`, not `Vec < f64 >`).
pub fn type_text(t: &syn::Type) -> String {
    quote::quote!(#t).to_string().replace(" < ", "<").replace("< ", "<").replace(" >", ">").replace(" ,", ",").replace("& ", "&")
}

/// What an initialiser mentions: identifiers, method names, divisors, whether it allocates an
/// array and the element type it shows.
#[derive(Default)]
struct Mentions {
    idents: Vec<String>,
    methods: Vec<String>,
    divisors: Vec<String>,
    is_array: bool,
    elem_type: Option<String>,
}

fn mentions(e: &syn::Expr) -> Mentions {
    use syn::visit::Visit;
    struct V(Mentions);
    impl<'ast> Visit<'ast> for V {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            self.0.idents.extend(p.path.segments.iter().map(|s| s.ident.to_string()));
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let name = m.method.to_string();
            if name == "array" || name == "with_capacity" {
                self.0.is_array = true;
                if let Some(syn::GenericArgument::Type(t)) = m.turbofish.as_ref().and_then(|t| t.args.first()) {
                    self.0.elem_type = Some(type_text(t));
                }
            }
            self.0.methods.push(name);
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            if matches!(b.op, syn::BinOp::Div(_)) {
                let mut inner = V(Mentions::default());
                inner.visit_expr(&b.right);
                self.0.divisors.extend(inner.0.idents);
                self.0.divisors.extend(inner.0.methods);
            }
            syn::visit::visit_expr_binary(self, b);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if let syn::Expr::Path(p) = &*c.func {
                let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                if segs.iter().any(|s| s == "Vec" || s == "DistArray") && segs.last().is_some_and(|l| l == "with_capacity" || l == "new" || l == "from") {
                    self.0.is_array = true;
                }
                self.0.idents.extend(segs);
            }
            c.args.iter().for_each(|a| self.visit_expr(a));
        }
        fn visit_macro(&mut self, m: &'ast syn::Macro) {
            if m.path.is_ident("vec") {
                self.0.is_array = true;
                for e in crate::scan::macro_args(m) {
                    if let syn::Expr::Repeat(r) = &e {
                        self.0.elem_type = literal_type(&r.expr);
                    }
                    self.visit_expr(&e);
                }
            }
        }
    }
    let mut v = V(Mentions::default());
    v.visit_expr(e);
    v.0
}
