//! Scanning one statement's expression: what it reads and writes, which array elements it
//! indexes, which communication and I/O calls it makes, and whether it is *glue* (`glue.rs`).

use std::collections::BTreeSet;

use syn::visit::{self, Visit};

use crate::binding::{Env, Text};
use crate::catalogue;
use crate::config::Config;
use crate::extent::Extent;
pub use crate::glue::{is_glue, Glue};
use crate::ir::{CallSite, IndexAccess, IoCall, Stmt};
use crate::syntax::{base_var, macro_args, scans_macro};

/// Methods that mutate their receiver, besides those named `*_mut` ([`mutates`]).
#[rustfmt::skip]
const MUTATING_METHODS: &[&str] = &[
    "push", "pop", "insert", "remove", "clear", "fill", "copy_from_slice", "clone_from_slice", "extend",
    "extend_from_slice", "swap", "sort", "sort_by", "truncate", "resize", "append", "drain", "retain", "set",
    "write_block", "fill_with", "reverse", "swap_with_slice", "sort_unstable", "sort_unstable_by", "sort_by_key",
    "rotate_left", "rotate_right", "dedup", "push_str", "split_off", "as_mut",
    // ndarray's in-place updates.
    "assign", "scaled_add", "zip_mut_with", "map_inplace", "mapv_inplace", "par_map_inplace",
    "par_mapv_inplace",
];

/// Whether a method call writes its receiver: a method of [`MUTATING_METHODS`], or one named
/// by Rust's convention for a mutable borrow (`iter_mut`, `get_mut`, `chunks_mut`,
/// `get_pixel_mut`), through whose result the caller writes (`*img.get_pixel_mut(x, y) = p`).
pub(crate) fn mutates(name: &str) -> bool {
    name.ends_with("_mut") || MUTATING_METHODS.contains(&name)
}

/// A call that may be of a user function.
#[derive(Clone, Copy)]
pub enum UserCall<'a> {
    /// A path call: `exchange(&world, &mut u)`.
    Call(&'a syn::ExprCall),
    /// A method call: `grid.exchange(&world)`.
    Method(&'a syn::ExprMethodCall),
}

impl<'a> UserCall<'a> {
    /// `e` as a call, if it is a path or method call.
    pub fn of(e: &'a syn::Expr) -> Option<Self> {
        match e {
            syn::Expr::Call(c) => Some(UserCall::Call(c)),
            syn::Expr::MethodCall(m) => Some(UserCall::Method(m)),
            _ => None,
        }
    }

    /// The whole call expression's span (a method call's starts at its receiver).
    pub fn span(self) -> proc_macro2::Span {
        match self {
            UserCall::Call(c) => c.extent(),
            UserCall::Method(m) => m.extent(),
        }
    }

    /// The call's arguments (a method call's receiver is not one).
    pub fn args(self) -> Vec<&'a syn::Expr> {
        match self {
            UserCall::Call(c) => c.args.iter().collect(),
            UserCall::Method(m) => m.args.iter().collect(),
        }
    }
}

/// What scanning needs from its surroundings.
pub struct Scanner<'a> {
    /// The names in scope: the communicators and I/O objects bound so far (`binding`).
    pub env: &'a Env,
    /// The source text, for locations and snippets.
    pub text: Text<'a>,
    /// mheta.toml: extra communication and I/O methods and functions.
    pub config: &'a Config,
    /// Resolves a user function call to communication calls it makes when it is a
    /// communication function (rule 2): `Some(calls)`, or `None` when it does not communicate.
    pub user_comm: &'a dyn Fn(UserCall<'_>) -> Option<Vec<CallSite>>,
    /// Local closures whose bodies are glue (`let lo = |k| k * n;`): calling them is glue.
    pub glue_closures: &'a BTreeSet<String>,
    /// Arrays holding the program's data: reading one of their elements is not glue.
    pub data: &'a BTreeSet<String>,
    /// Slice aliases: an access through one is an access of the aliased variable.
    pub aliases: &'a crate::alias::Aliases,
    /// Parameters that are `&mut` references: passing one on by name lets the callee write it.
    pub mut_refs: &'a BTreeSet<String>,
    /// Local closures that communicate, with the calls they make.
    pub comm_closures: &'a crate::hash::HashMap<String, Vec<CallSite>>,
    /// Parameters that are closures (`report: &mut dyn FnMut(..)`, `f: F` with `F: Fn(..)`).
    pub closure_params: &'a BTreeSet<String>,
}

impl Scanner<'_> {
    /// Scans an expression into a statement (`bound` are the names a `let` binds).
    pub fn scan(
        &self,
        expr: Option<&syn::Expr>,
        bound: &[String],
        loc: crate::diagnostics::Loc,
    ) -> Stmt {
        let mut v = self.visitor(loc);
        if let Some(e) = expr {
            v.visit_expr(e);
        }
        for b in bound {
            push_unique(&mut v.out.writes, b);
            push_unique(&mut v.out.declares, b);
        }
        let mut out = v.out;
        let glue = self.glue();
        out.glue = out.calls.is_empty() && out.io.is_empty() && expr.map_or(true, |e| glue.expr(e));
        out.computes =
            !out.calls.is_empty() && expr.is_some_and(|e| computes_besides_comm(e, &glue));
        out
    }

    /// Scans a statement macro (`println!(..);`, `assert!(..);`) into a statement, as [`scan`]
    /// scans the same macro as an expression, without copying it into one: a copy is a
    /// different macro to [`macro_args`], whose arguments would be parsed again. Such a
    /// statement never `computes`: [`computes_besides_comm`] does not look inside macros.
    ///
    /// [`scan`]: Scanner::scan
    pub fn scan_macro(&self, m: &syn::Macro, loc: crate::diagnostics::Loc) -> Stmt {
        let mut v = self.visitor(loc);
        v.visit_macro(m);
        let mut out = v.out;
        out.glue = out.calls.is_empty() && out.io.is_empty() && self.glue().macro_call(m);
        out
    }

    fn visitor(&self, loc: crate::diagnostics::Loc) -> Visitor<'_, '_> {
        Visitor {
            s: self,
            out: Stmt {
                loc: Some(loc),
                ..Stmt::default()
            },
        }
    }

    fn glue(&self) -> Glue<'_> {
        Glue {
            closures: self.glue_closures,
            data: self.data,
        }
    }
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// Flattens `a[i][j]` into `("a", [i, j])`.
fn index_chain(e: &syn::ExprIndex) -> Option<(String, Vec<&syn::Expr>)> {
    let mut dims = vec![&*e.index];
    let mut cur = &*e.expr;
    while let syn::Expr::Index(inner) = cur {
        dims.push(&*inner.index);
        cur = &inner.expr;
    }
    let var = base_var(cur)?;
    dims.reverse();
    Some((var, dims))
}

struct Visitor<'s, 'a> {
    s: &'s Scanner<'a>,
    out: Stmt,
}

impl Visitor<'_, '_> {
    /// Records `var[dims..]`, or what it stands for when `var` is a slice alias.
    fn push_accesses(&mut self, var: &str, dims: &[&syn::Expr], write: bool) {
        for (var, dims) in crate::alias::resolve(self.s.aliases, var, dims) {
            self.out.accesses.push(IndexAccess { var, dims, write });
        }
    }

    /// The arguments of a call that is not communication: a callee given a `&mut` parameter by
    /// name may write it (`fill(u, m)` with `u: &mut Vec<f64>`). An argument `&mut u` is a write
    /// already (`visit_expr_reference`).
    fn passed_on(&mut self, args: &syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>) {
        for arg in args {
            if let syn::Expr::Path(p) = arg {
                if let Some(id) = p.path.get_ident() {
                    let name = crate::syntax::Name::of(id);
                    if self.s.mut_refs.contains(name.as_str()) {
                        push_unique(&mut self.out.writes, name.as_str());
                    }
                }
            }
        }
    }

    fn write_place(&mut self, place: &syn::Expr) {
        if let Some(var) = base_var(place) {
            push_unique(&mut self.out.writes, &var);
        }
        match place {
            syn::Expr::Index(ix) => {
                if let Some((var, dims)) = index_chain(ix) {
                    self.push_accesses(&var, &dims, true);
                    dims.iter().for_each(|d| self.visit_expr(d));
                }
            }
            syn::Expr::Path(_) => {}
            other => self.visit_expr(other),
        }
    }
}

impl<'ast> Visit<'ast> for Visitor<'_, '_> {
    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(id) = p.path.get_ident() {
            if !self.out.reads.iter().any(|r| id == r) {
                self.out.reads.push(id.to_string());
            }
        }
    }

    fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
        self.write_place(&a.left);
        self.visit_expr(&a.right);
    }

    fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
        use syn::BinOp::*;
        let compound = matches!(
            b.op,
            AddAssign(_)
                | SubAssign(_)
                | MulAssign(_)
                | DivAssign(_)
                | RemAssign(_)
                | BitXorAssign(_)
                | BitAndAssign(_)
                | BitOrAssign(_)
                | ShlAssign(_)
                | ShrAssign(_)
        );
        if compound {
            if let Some(var) = base_var(&b.left) {
                push_unique(&mut self.out.reads, &var);
            }
            self.write_place(&b.left);
            self.visit_expr(&b.right);
        } else {
            visit::visit_expr_binary(self, b);
        }
    }

    fn visit_expr_reference(&mut self, r: &'ast syn::ExprReference) {
        if r.mutability.is_some() {
            self.write_place(&r.expr);
        } else {
            self.visit_expr(&r.expr);
        }
    }

    fn visit_expr_index(&mut self, ix: &'ast syn::ExprIndex) {
        if let Some((var, dims)) = index_chain(ix) {
            push_unique(&mut self.out.reads, &var);
            self.push_accesses(&var, &dims, false);
            dims.iter().for_each(|d| self.visit_expr(d));
        } else {
            visit::visit_expr_index(self, ix);
        }
    }

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        if let Some(call) = self.s.env.comm_call(m, &self.s.text) {
            // A receiver that communicates itself runs first: `p.matched_probe()` in
            // `p.matched_probe().matched_receive_vec()`.
            if let syn::Expr::MethodCall(inner) = &*m.receiver {
                if self.s.env.comm_call(inner, &self.s.text).is_some() {
                    self.visit_expr_method_call(inner);
                }
            }
            self.out.calls.push(call);
            m.args.iter().for_each(|a| self.visit_expr(a));
            return;
        }
        let name = crate::syntax::Name::of(&m.method);
        let io = catalogue::io_method(&name).or_else(|| self.s.config.io_op(&name));
        if let Some(op) = io {
            let var = base_var(&m.receiver).unwrap_or_else(|| self.s.text.of(&*m.receiver));
            self.out.io.push(IoCall {
                op,
                var,
                loc: self.s.text.loc(m.extent()),
            });
        } else if let Some(op) = catalogue::io_wait_method(&name, m.args.len()) {
            // Completing a prefetch (`a.wait()`) is I/O when `a` is one of the data arrays.
            if let Some(var) = base_var(&m.receiver).filter(|v| self.s.data.contains(v)) {
                let loc = self.s.text.loc(m.extent());
                self.out.io.push(IoCall { op, var, loc });
            }
        }
        if let Some(calls) = (self.s.user_comm)(UserCall::Method(m)) {
            self.out.calls.extend(calls);
        }
        self.passed_on(&m.args);
        if mutates(&name) {
            if let Some(var) = base_var(&m.receiver) {
                push_unique(&mut self.out.writes, &var);
            }
        }
        visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        // A call of a plain name may call a closure: a local one that communicates, or one the
        // function was given.
        let callee = match &*c.func {
            syn::Expr::Path(p) => p.path.get_ident().map(crate::syntax::Name::of),
            _ => None,
        };
        let closure = callee
            .as_ref()
            .and_then(|name| self.s.comm_closures.get(name.as_str()));
        // A closure parameter bound at the function's one call site is a communicating closure.
        let given =
            callee.filter(|n| closure.is_none() && self.s.closure_params.contains(n.as_str()));
        if let Some(name) = given {
            let loc = self.s.text.loc(c.extent());
            self.out.closure_calls.push((name.to_string(), loc));
        }
        if let Some(call) = self.s.env.free_comm_call(c, &self.s.text) {
            self.out.calls.push(call);
        } else if let Some(calls) = closure {
            self.out.calls.extend(calls.iter().cloned());
        } else if let Some(calls) = (self.s.user_comm)(UserCall::Call(c)) {
            self.out.calls.extend(calls);
            self.passed_on(&c.args);
        } else if let syn::Expr::Path(p) = &*c.func {
            let name = p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            self.passed_on(&c.args);
            if let (Some(op), Some(first)) = (self.s.config.io_op(&name), c.args.first()) {
                let var = base_var(first).unwrap_or_else(|| self.s.text.of(first));
                self.out.io.push(IoCall {
                    op,
                    var,
                    loc: self.s.text.loc(c.extent()),
                });
            }
            // `std::mem::swap(u, &mut next)` with `u: &mut Vec<_>` writes `u` (a `&mut`
            // argument is a write wherever it appears).
            if matches!(name.as_str(), "swap" | "replace" | "take") {
                for arg in &c.args {
                    if let syn::Expr::Path(p) = arg {
                        if let Some(v) = p.path.get_ident() {
                            push_unique(&mut self.out.writes, &v.to_string());
                        }
                    }
                }
            }
        }
        // The callee's path is not a variable read.
        c.args.iter().for_each(|a| self.visit_expr(a));
    }

    fn visit_macro(&mut self, m: &'ast syn::Macro) {
        if !scans_macro(m) {
            let name = m
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            let loc = self.s.text.loc(m.extent());
            self.out.opaque_macros.push((name, loc));
            return;
        }
        for e in macro_args(m).iter() {
            match e {
                // A named argument (`format!("{x}", x = v)`, `debug!(iteration = it)`) names a
                // value: it reads `v` and writes nothing.
                syn::Expr::Assign(a) if matches!(&*a.left, syn::Expr::Path(_)) => {
                    self.visit_expr(&a.right)
                }
                other => self.visit_expr(other),
            }
        }
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        for name in crate::binding::pattern_idents(&l.pat) {
            push_unique(&mut self.out.writes, &name);
            push_unique(&mut self.out.declares, &name);
        }
        if let Some(init) = &l.init {
            self.visit_expr(&init.expr);
        }
    }
}

/// Whether a communication statement also computes in its arguments (a call that is neither
/// glue nor communication, e.g. `all_reduce_into(&dot(&r, &r), ..)`).
fn computes_besides_comm(e: &syn::Expr, glue: &Glue<'_>) -> bool {
    struct Finder<'g, 'a>(bool, &'g Glue<'a>);
    impl<'ast> Visit<'ast> for Finder<'_, '_> {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            // A wrapper of the communication (`Some(WaitGuard::from(p.immediate_receive_into(..)))`)
            // computes only if its other arguments do, which the visit below finds.
            if !self.1.call(c) && !crate::glue::wraps(c) {
                let is_op = matches!(&*c.func, syn::Expr::Path(p) if p.path.segments.iter().any(|s| s.ident == "SystemOperation" || s.ident == "ReduceOp"));
                let is_comm_free = matches!(&*c.func, syn::Expr::Path(p) if p.path.segments.last().is_some_and(|s| catalogue::free_function(&s.ident.to_string()).is_some()));
                if !is_op && !is_comm_free {
                    self.0 = true;
                }
            }
            visit::visit_expr_call(self, c);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let name = crate::syntax::Name::of(&m.method);
            if matches!(name.as_str(), "sum" | "product" | "fold" | "dot" | "norm") {
                self.0 = true;
            }
            visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    }
    let mut f = Finder(false, glue);
    f.visit_expr(e);
    f.0
}
