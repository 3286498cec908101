//! Interprocedural expansion (DESIGN §3.4): calls of user functions that communicate. A
//! communication-only function (or one marked `#[mheta::comm]` / named in mheta.toml) is one
//! event per call (rule 2); a function that mixes communication and computation is inlined,
//! depth-limited, with its communicator parameters bound from the call's arguments; recursion
//! is reported.

use mheta_format::Pattern;

use super::{is_comm_attr, peel, Builder, Facts};
use crate::binding::{pattern_idents, Env};
use crate::diagnostics::{Diagnostic, Loc};
use crate::ir::{CallSite, Node};
use crate::load::Program;
use crate::scan::UserCall;

/// How deep user functions are inlined.
pub(super) const MAX_INLINE_DEPTH: usize = 8;

impl Builder<'_, '_> {
    /// Resolves a call to a user function (`f(..)`, `m::f(..)`, `x.method(..)`).
    pub(super) fn resolve(&self, call: UserCall<'_>) -> Option<usize> {
        match call {
            UserCall::Call(c) => self.resolve_call_here(c),
            UserCall::Method(_) => self.resolve_all(call).first().copied(),
        }
    }

    /// The user functions a call may run: one for a function, or a method whose receiver's
    /// type is known; for a method of a trait with several implementations, every one that
    /// communicates (`tasks[k].send(..)` on a `Box<dyn Task>`: the implementation is chosen at
    /// run time). When they disagree about communication (a trait's MPI implementation beside
    /// a serial one), those that communicate: the program runs under MPI; `user_call` says so
    /// in a warning. Not one being expanded already (`self.network.move_links(now)` in
    /// `Simulation::move_links` is another type's method of the same name), unless all are.
    pub(super) fn resolve_all(&self, call: UserCall<'_>) -> Vec<usize> {
        match call {
            UserCall::Call(c) => self.resolve_call_here(c).into_iter().collect(),
            UserCall::Method(m) => self.taken(&self.method_candidates(m).unwrap_or_default()),
        }
    }

    /// Which of a method call's `candidates` it may run (see [`Self::resolve_all`]).
    fn taken(&self, candidates: &[usize]) -> Vec<usize> {
        let Some(&first) = candidates.first() else {
            return Vec::new();
        };
        let comm: Vec<usize> = candidates
            .iter()
            .copied()
            .filter(|&i| (self.comm_fns)(i))
            .collect();
        let mut open: Vec<usize> = comm
            .iter()
            .copied()
            .filter(|i| !self.stack.contains(i))
            .collect();
        if comm.len() == candidates.len() && open.is_empty() || comm.is_empty() {
            open = vec![first];
        }
        open
    }

    fn resolve_call_here(&self, c: &syn::ExprCall) -> Option<usize> {
        resolve_call(self.program, *self.stack.last()?, c)
    }

    /// The methods of the program a method call may call: those of its name taking as many
    /// arguments; of the receiver's type when it is known (`let mut sim = Sim { .. }`,
    /// `Sim::new(..)`, `let sim: Sim`, `self`). `None` when the program has no method of that
    /// name, or the receiver is a communicator value (whose methods are rsmpi's).
    pub(super) fn method_candidates(&self, m: &syn::ExprMethodCall) -> Option<Vec<usize>> {
        let fns = &self.program.functions;
        // The crate's own methods of that name first: a method no function of the crate is
        // named after needs no look at its receiver (which walks the chain below it).
        let name = crate::syntax::Name::of(&m.method);
        let by_name = self.program.by_name.get(name.as_str())?;
        if self.env.value_of(&m.receiver, &self.text).is_some() {
            return None;
        }
        let arity = |i: usize| fns[i].sig.inputs.len() == m.args.len() + 1;
        let mut candidates: Vec<usize> = by_name
            .iter()
            .copied()
            .filter(|&i| fns[i].sig.receiver().is_some() && arity(i))
            .collect();
        if candidates.len() > 1 {
            if let Some(ty) = self.receiver_type(&m.receiver) {
                let of_type = |i: &usize| impl_type(&fns[*i].path) == Some(ty.as_str());
                if candidates.iter().any(of_type) {
                    candidates.retain(of_type);
                }
            }
        }
        // `self.inner.step()` in a method of a wrapper that delegates: a field of `self` is
        // not of `self`'s own type, so not the wrapper's own `step`.
        if candidates.len() > 1 && self.receiver_is_own_field(&m.receiver) {
            let here = self.stack.last().and_then(|&i| impl_type(&fns[i].path));
            let other = |i: &usize| here.is_none() || impl_type(&fns[*i].path) != here;
            if candidates.iter().any(other) {
                candidates.retain(other);
            }
        }
        Some(candidates)
    }

    /// Whether a method's receiver is a field of `self` (`self.inner`, `&mut self.grid`).
    fn receiver_is_own_field(&self, receiver: &syn::Expr) -> bool {
        matches!(peel(receiver), syn::Expr::Field(f)
            if matches!(peel(&f.base), syn::Expr::Path(p) if p.path.is_ident("self")))
    }

    /// The type a method's receiver has, when the body says: a variable bound to a struct
    /// literal, a `Type::ctor(..)` call or annotated with a type, `self` in a method, or a unit
    /// struct's value.
    fn receiver_type(&self, receiver: &syn::Expr) -> Option<String> {
        let syn::Expr::Path(p) = peel(receiver) else {
            return None;
        };
        let name = p.path.get_ident()?;
        if name == "self" {
            let here = &self.program.functions[*self.stack.last()?];
            return impl_type(&here.path).map(str::to_string);
        }
        let name = name.to_string();
        match self.facts.var_types.get(&name) {
            Some(ty) => Some(ty.clone()),
            // A unit struct is its own value: `Halo.exchange(..)`.
            None => name.starts_with(char::is_uppercase).then_some(name),
        }
    }

    /// Expands a top-level call of a communicating user function.
    pub(super) fn user_call(
        &mut self,
        e: &syn::Expr,
        bound: &[String],
        loc: Loc,
    ) -> Option<Vec<Node>> {
        let call = UserCall::of(peel(e))?;
        let (all, candidates) = match call {
            UserCall::Method(m) => {
                let candidates = self.method_candidates(m).unwrap_or_default();
                (self.taken(&candidates), candidates)
            }
            UserCall::Call(_) => (self.resolve_all(call), Vec::new()),
        };
        let &index = all.first()?;
        self.called.extend(&all);
        if !(self.comm_fns)(index) {
            return None;
        }
        if let UserCall::Method(m) = call {
            self.warn_serial_candidates(m, &candidates, &all, loc);
        }
        let mut arms = Vec::with_capacity(all.len());
        for &index in &all {
            let arm = match self.expand(call, index, loc) {
                Some(Expansion::Event(calls, path)) => {
                    let mut stmt = self.scan(Some(e), bound, loc);
                    stmt.calls = calls;
                    stmt.function = Some(path);
                    stmt.glue = false;
                    stmt.computes = false;
                    vec![Node::Stmt(stmt)]
                }
                Some(Expansion::Inline(nodes)) => nodes,
                None => continue,
            };
            arms.push(arm);
        }
        match (call, arms.len()) {
            (_, 0) => None,
            (_, 1) => arms.pop(),
            // One implementation runs, chosen by the receiver's type at run time: a branch
            // on the receiver, one arm per implementation. Choosing one computes nothing.
            (UserCall::Method(m), _) => {
                let mut nodes = self.branch(e, &m.receiver, arms, bound, loc);
                if let Some(Node::Branch(b)) = nodes.last_mut() {
                    b.cond.glue = true;
                }
                Some(nodes)
            }
            (UserCall::Call(_), _) => unreachable!("a function call resolves to one function"),
        }
    }

    /// Warns when a method call's `candidates` disagree about communication and `taken` are
    /// those that communicate (the receiver's type not known).
    fn warn_serial_candidates(
        &mut self,
        m: &syn::ExprMethodCall,
        candidates: &[usize],
        taken: &[usize],
        loc: Loc,
    ) {
        let name = |i: usize| self.program.functions[i].path.as_str();
        let others: Vec<&str> = candidates
            .iter()
            .copied()
            .filter(|&i| !taken.contains(&i) && !(self.comm_fns)(i))
            .map(name)
            .collect();
        if others.is_empty() {
            return;
        }
        let taken: Vec<&str> = taken.iter().map(|&i| name(i)).collect();
        let msg = format!(
            "`{}` {} taken for this call, the implementation{} of `{}` that communicate{}; `{}` would not",
            taken.join("`, `"),
            if taken.len() == 1 { "is" } else { "are" },
            if taken.len() == 1 { "" } else { "s" },
            m.method,
            if taken.len() == 1 { "s" } else { "" },
            others.join("`, `")
        );
        self.facts.diags.push(
            Diagnostic::warning(msg, Some(loc))
                .with_label("receiver's type not known")
                .with_note("mark the solver or the calls (mheta.toml) if another implementation runs under MPI"),
        );
    }

    /// A call of a user function that mixes communication and computation inside a larger
    /// expression (`let alpha = rtrans / ddot(&world, &p, &ap);`, `dot(&w, &w).sqrt()`): the
    /// callee inlined, then the expression with the call's value in its place. `None` unless
    /// exactly one such call is nested (not the expression itself, not inside a closure).
    pub(super) fn nested_inline(
        &mut self,
        e: &syn::Expr,
        bound: &[String],
        loc: Loc,
    ) -> Option<Vec<Node>> {
        // Not the calls in closures: those run when the closure is called.
        let calls = crate::syntax::calls_in(false, |v| v.visit_expr(e));
        let mixed: Vec<&syn::Expr> = calls
            .into_iter()
            .filter(|c| !std::ptr::eq(*c, e) && !std::ptr::eq(*c, peel(e)))
            .filter(|c| {
                let Some(index) = UserCall::of(c).and_then(|u| self.resolve(u)) else {
                    return false;
                };
                let f = &self.program.functions[index];
                (self.comm_fns)(index)
                    && !self.stack.contains(&index)
                    && !is_comm_attr(f)
                    && !self.program.config.is_comm_function(&f.path)
            })
            .collect();
        let [call] = mixed.as_slice() else {
            return None;
        };
        let mut nodes = self.user_call(call, &[], loc)?;
        // A communication-only callee is one event per call: the statement keeps it.
        if matches!(nodes.as_slice(), [Node::Stmt(s)] if s.function.is_some()) {
            return None;
        }
        let rest = replace_expr(e, call, &syn::parse_quote!(__mheta_call_value));
        let mut s = self.scan(Some(&rest), bound, loc);
        s.reads.retain(|r| r != "__mheta_call_value");
        nodes.push(Node::Stmt(s));
        Some(nodes)
    }

    /// Communication calls of a user function called inside a larger expression.
    pub(super) fn nested_user_comm(&self, call: UserCall<'_>) -> Option<Vec<CallSite>> {
        let index = self.resolve(call)?;
        if !(self.comm_fns)(index) || self.stack.contains(&index) {
            return None;
        }
        let f = &self.program.functions[index];
        let mut facts = Facts::default();
        let mut b = Builder::new(
            self.program,
            f,
            self.comm_fns,
            &mut facts,
            self.stack.iter().copied().chain([index]).collect(),
            None,
        );
        b.text.via = self.program.sources.inline_site(self.loc(call.span()));
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
            let cycle: Vec<&str> = self.stack[pos..]
                .iter()
                .chain([&index])
                .map(|&i| self.program.functions[i].path.as_str())
                .collect();
            let msg = format!("recursion through communicating function `{}`", f.path);
            let d = Diagnostic::error(msg, Some(loc))
                .with_label("recursive call")
                .with_note(format!("call cycle: {}", cycle.join(" → ")));
            self.facts.diags.push(d);
            return None;
        }
        if self.stack.len() >= MAX_INLINE_DEPTH {
            let msg = format!(
                "`{}` is not inlined: calls nest deeper than {MAX_INLINE_DEPTH}",
                f.path
            );
            self.facts.diags.push(Diagnostic::warning(msg, Some(loc)));
            return None;
        }
        // Communicator arguments bind the callee's parameters.
        let args = call.args();
        let mut env = Env::new(
            &self.program.comm_fields,
            &self.program.config,
            self.program.imports.clone(),
        );
        let params: Vec<&syn::Pat> = crate::syntax::typed_params(&f.sig)
            .into_iter()
            .map(|t| &*t.pat)
            .collect();
        // A communicating closure passed on (`time_loop(.., &mut report)`) makes its calls where
        // the callee calls its parameter; what the names held before comes back afterwards.
        let mut shadowed = Vec::new();
        for (param, arg) in params.iter().zip(&args) {
            if let Some(v) = self.env.value_of(arg, &self.text) {
                for name in pattern_idents(param) {
                    env.bind(&name, Some(v.clone()));
                }
            }
            if let Some(calls) = self.comm_closure(arg) {
                for name in pattern_idents(param) {
                    let before = self.facts.comm_closures.insert(name.clone(), calls.clone());
                    shadowed.push((name, before));
                }
            }
        }
        let stack: Vec<usize> = self.stack.iter().copied().chain([index]).collect();
        let comm_fns = self.comm_fns;
        let program = self.program;
        let site = program.sources.inline_site(self.loc(call.span()));
        let mut child = Builder::new(program, f, comm_fns, self.facts, stack, Some(env));
        child.text.via = site;
        let mut nodes = child.block(&f.block);
        // A rank the caller passes is the peer the callee names by its parameter
        // (`halo(&mut u, rank - 1, rank + 1, &world)` sends to `left`: to `rank - 1`).
        for (param, arg) in params.iter().zip(&args) {
            let syn::Pat::Ident(p) = param else {
                continue;
            };
            let name = p.ident.to_string();
            if !nodes.iter().any(|n| n.has_peer(&name)) {
                continue;
            }
            let given = self.text.of(*arg);
            let given = given
                .trim_start_matches('&')
                .trim_start_matches("mut ")
                .trim();
            for n in &mut nodes {
                n.rename_peer(&name, given);
            }
        }
        for (name, before) in shadowed.into_iter().rev() {
            match before {
                Some(calls) => self.facts.comm_closures.insert(name, calls),
                None => self.facts.comm_closures.remove(&name),
            };
        }
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
                    peers: vec![],
                    message: None,
                    elem_type: None,
                    loc: Loc::of(f.file, f.sig.ident.span()),
                    pattern_hint: hint,
                    ranges: vec![],
                });
            }
            Some(Expansion::Event(calls, path))
        } else {
            // The callee's parameters are the caller's arguments: a stage inside reads and writes
            // the caller's arrays (`ddot(&r, &p)`: `r` and `p`, not `lhs` and `rhs`).
            let renames: Vec<(String, String)> = params
                .iter()
                .zip(&args)
                .filter_map(|(param, arg)| match (param, crate::syntax::base_var(arg)) {
                    (syn::Pat::Ident(p), Some(var)) if p.ident != var => {
                        Some((p.ident.to_string(), var))
                    }
                    _ => None,
                })
                .collect();
            let mut nodes = nodes;
            for n in &mut nodes {
                n.rename_vars(&renames);
            }
            Some(Expansion::Inline(nodes))
        }
    }
}

/// Resolves a call of a free function or an associated function (`f(..)`, `m::f(..)`) made in
/// function `here` (functions of its own file first).
pub(super) fn resolve_call(program: &Program, here: usize, c: &syn::ExprCall) -> Option<usize> {
    let fns = &program.functions;
    let syn::Expr::Path(p) = &*c.func else {
        return None;
    };
    let is_named = |s: &str| !matches!(s, "crate" | "self" | "super" | "Self");
    // Most calls are of no function of the program: their last name says so.
    let last = p
        .path
        .segments
        .iter()
        .rev()
        .map(|s| crate::syntax::Name::of(&s.ident))
        .find(|s| is_named(s))?;
    let here = fns.get(here).map(|f| f.file);
    if let Some(i) = imported_call(program, here, &p.path) {
        return Some(i);
    }
    let by_name = program.by_name.get(last.as_str())?;
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .filter(|s| is_named(s))
        .collect();
    let wanted = segs.join("::");
    let mut candidates: Vec<usize> = by_name
        .iter()
        .copied()
        .filter(|&i| {
            crate::config::names(&wanted, &fns[i].path) && fns[i].sig.receiver().is_none()
                || (segs.len() >= 2 && crate::config::names(&wanted, &fns[i].path))
        })
        .collect();
    candidates.sort_by_key(|&i| Some(fns[i].file) != here);
    candidates.first().copied()
}

/// The free function a call names through its file's `use` items (`use halo::step;` then
/// `step(..)`, `use physics::energy as e;` then `e(..)`, `use a::b;` then `b::f(..)`): the one whose
/// path ends the imported path (which may start with the crate's own name).
fn imported_call(
    program: &Program,
    file: Option<crate::sources::FileId>,
    path: &syn::Path,
) -> Option<usize> {
    let imports = program.file_imports.get(&file?)?;
    let first = crate::syntax::Name::of(&path.segments.first()?.ident);
    let full = imports.get(first.as_str())?;
    let mut wanted = full.clone();
    for s in path.segments.iter().skip(1) {
        wanted.push_str("::");
        wanted.push_str(&s.ident.to_string());
    }
    let last = wanted.rsplit("::").next()?;
    let fns = &program.functions;
    let mut candidates: Vec<usize> = program
        .by_name
        .get(last)?
        .iter()
        .copied()
        .filter(|&i| {
            fns[i].sig.receiver().is_none()
                && (wanted == fns[i].path || wanted.ends_with(&format!("::{}", fns[i].path)))
        })
        .collect();
    candidates.sort_by_key(|&i| Some(fns[i].file) != file);
    candidates.first().copied()
}

/// The type a method is implemented on, from its path (`Type` of `module::Type::name`); `None`
/// for a free function's path, whose second-to-last segment is a module (lowercase).
pub(super) fn impl_type(path: &str) -> Option<&str> {
    let mut segs = path.rsplit("::");
    segs.next()?;
    segs.next()
        .filter(|t| t.starts_with(|c: char| c.is_uppercase()))
}

enum Expansion {
    Event(Vec<CallSite>, String),
    Inline(Vec<Node>),
}

/// The calls inside a communication function, with the loop ranges around each.
fn collect_calls(nodes: &[Node], path: &str, hint: Option<mheta_format::Pattern>) -> Vec<CallSite> {
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

/// `e` with the subexpression `target` (found by its source position) replaced.
fn replace_expr(e: &syn::Expr, target: &syn::Expr, with: &syn::Expr) -> syn::Expr {
    use crate::extent::Extent;
    use syn::visit_mut::VisitMut;
    let place = |x: &syn::Expr| {
        let s = x.extent();
        let (a, b) = (s.start(), s.end());
        (a.line, a.column, b.line, b.column)
    };
    struct Replace<'w> {
        at: (usize, usize, usize, usize),
        place: &'w dyn Fn(&syn::Expr) -> (usize, usize, usize, usize),
        with: &'w syn::Expr,
        done: bool,
    }
    impl VisitMut for Replace<'_> {
        fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
            if self.done {
                return;
            }
            if (self.place)(e) == self.at {
                *e = self.with.clone();
                self.done = true;
                return;
            }
            syn::visit_mut::visit_expr_mut(self, e);
        }
    }
    let mut out = e.clone();
    Replace {
        at: place(target),
        place: &place,
        with,
        done: false,
    }
    .visit_expr_mut(&mut out);
    out
}
