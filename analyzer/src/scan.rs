//! Scanning one statement's expression: what it reads and writes, which array elements it
//! indexes, which communication and I/O calls it makes, and whether it is *glue* (`glue.rs`).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use syn::visit::{self, Visit};

use crate::binding::{Env, Text};
use crate::catalogue;
use crate::config::Config;
use crate::extent::Extent;
pub use crate::glue::{is_glue, Glue};
use crate::ir::{CallSite, IndexAccess, IoCall, Stmt};

/// Macros whose arguments are plain expressions (never communication).
#[rustfmt::skip]
const KNOWN_MACROS: &[&str] = &[
    "println", "print", "eprintln", "eprint", "format", "write", "writeln", "assert", "assert_eq", "assert_ne",
    "debug_assert", "debug_assert_eq", "debug_assert_ne", "vec", "panic", "unreachable", "todo", "unimplemented",
    "dbg", "format_args", "matches", "info", "debug", "warn", "error", "trace", "concat", "stringify", "env",
    "include_str", "include_bytes", "line", "file", "column", "cfg", "compile_error", "anyhow", "bail", "ensure",
];

/// Methods that mutate their receiver.
#[rustfmt::skip]
const MUTATING_METHODS: &[&str] = &[
    "push", "pop", "insert", "remove", "clear", "fill", "copy_from_slice", "clone_from_slice", "extend",
    "extend_from_slice", "swap", "iter_mut", "as_mut_slice", "sort", "sort_by", "truncate", "resize", "append",
    "drain", "retain", "set", "write_block", "par_iter_mut", "chunks_mut", "get_mut", "fill_with", "reverse",
];

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
}

impl Scanner<'_> {
    /// Scans an expression into a statement (`bound` are the names a `let` binds).
    pub fn scan(
        &self,
        expr: Option<&syn::Expr>,
        bound: &[String],
        loc: crate::diagnostics::Loc,
    ) -> Stmt {
        let mut v = Visitor {
            s: self,
            out: Stmt {
                loc: Some(loc),
                ..Stmt::default()
            },
        };
        if let Some(e) = expr {
            v.visit_expr(e);
        }
        for b in bound {
            push_unique(&mut v.out.writes, b);
            push_unique(&mut v.out.declares, b);
        }
        let mut out = v.out;
        let glue = Glue {
            closures: self.glue_closures,
            data: self.data,
        };
        out.glue = out.calls.is_empty() && out.io.is_empty() && expr.map_or(true, |e| glue.expr(e));
        out.computes =
            !out.calls.is_empty() && expr.is_some_and(|e| computes_besides_comm(e, &glue));
        out
    }
}

fn push_unique(v: &mut Vec<String>, s: &str) {
    if !v.iter().any(|x| x == s) {
        v.push(s.to_string());
    }
}

/// The variable at the base of a place expression (`a` in `a[i].x`, `self.a` → `a`).
pub fn base_var(e: &syn::Expr) -> Option<String> {
    match e {
        syn::Expr::Path(p) => p.path.get_ident().map(|i| i.to_string()),
        syn::Expr::Index(i) => base_var(&i.expr),
        syn::Expr::Field(f) => match &f.member {
            syn::Member::Named(n) if matches!(&*f.base, syn::Expr::Path(p) if p.path.is_ident("self")) => {
                Some(n.to_string())
            }
            _ => base_var(&f.base),
        },
        syn::Expr::Reference(r) => base_var(&r.expr),
        syn::Expr::Paren(p) => base_var(&p.expr),
        syn::Expr::Unary(u) => base_var(&u.expr),
        syn::Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "as_mut_slice" | "as_slice" | "iter_mut" | "borrow_mut"
            ) =>
        {
            base_var(&m.receiver)
        }
        _ => None,
    }
}

/// `e` without parentheses and casts (`(rank as usize)` is `rank`).
pub fn strip_casts(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Cast(c) => strip_casts(&c.expr),
        syn::Expr::Paren(p) => strip_casts(&p.expr),
        other => other,
    }
}

/// Every call and method-call expression in `visit`'s scope, outer before inner, including
/// those inside closures or not (`closures`). `visit` walks a block or an expression.
pub fn calls_in<'a>(
    closures: bool,
    visit: impl FnOnce(&mut dyn syn::visit::Visit<'a>),
) -> Vec<&'a syn::Expr> {
    struct Calls<'a> {
        found: Vec<&'a syn::Expr>,
        closures: bool,
    }
    impl<'a> syn::visit::Visit<'a> for Calls<'a> {
        fn visit_expr(&mut self, e: &'a syn::Expr) {
            match e {
                syn::Expr::Closure(_) if !self.closures => {}
                syn::Expr::Call(_) | syn::Expr::MethodCall(_) => {
                    self.found.push(e);
                    syn::visit::visit_expr(self, e);
                }
                _ => syn::visit::visit_expr(self, e),
            }
        }
    }
    let mut calls = Calls {
        found: Vec::new(),
        closures,
    };
    visit(&mut calls);
    calls.found
}

/// The identifiers in a piece of source text (`recv_list[i] as i32` → `[recv_list, i, as,
/// i32]`).
pub fn idents_of(s: &str) -> Vec<String> {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty() && !w.starts_with(|c: char| c.is_ascii_digit()))
        .map(str::to_string)
        .collect()
}

/// The identifiers of a path's segments (`mpi::point_to_point::send` → `[mpi, point_to_point,
/// send]`).
pub fn path_idents(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// Whether `e` reads any of `names` (as a plain path).
pub fn mentions_any(e: &syn::Expr, names: &[String]) -> bool {
    struct Finder<'n>(&'n [String], bool);
    impl<'ast> Visit<'ast> for Finder<'_> {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            if let Some(id) = p.path.get_ident() {
                self.1 |= self.0.iter().any(|n| id == n);
            }
        }
    }
    let mut f = Finder(names, false);
    f.visit_expr(e);
    f.1
}

/// Flattens `a[i][j]` into `("a", [i, j])`.
fn index_chain(e: &syn::ExprIndex) -> Option<(String, Vec<syn::Expr>)> {
    let mut dims = vec![(*e.index).clone()];
    let mut cur = &*e.expr;
    while let syn::Expr::Index(inner) = cur {
        dims.push((*inner.index).clone());
        cur = &inner.expr;
    }
    dims.reverse();
    Some((base_var(cur)?, dims))
}

struct Visitor<'s, 'a> {
    s: &'s Scanner<'a>,
    out: Stmt,
}

impl Visitor<'_, '_> {
    /// Records `var[dims..]`, or what it stands for when `var` is a slice alias.
    fn push_accesses(&mut self, var: &str, dims: &[syn::Expr], write: bool) {
        for (var, dims) in crate::alias::resolve(self.s.aliases, var, dims) {
            self.out.accesses.push(IndexAccess { var, dims, write });
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
            self.out.calls.push(call);
            m.args.iter().for_each(|a| self.visit_expr(a));
            return;
        }
        let name = m.method.to_string();
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
        if MUTATING_METHODS.contains(&name.as_str()) {
            if let Some(var) = base_var(&m.receiver) {
                push_unique(&mut self.out.writes, &var);
            }
        }
        visit::visit_expr_method_call(self, m);
    }

    fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
        if let Some(call) = self.s.env.free_comm_call(c, &self.s.text) {
            self.out.calls.push(call);
        } else if let Some(calls) = (self.s.user_comm)(UserCall::Call(c)) {
            self.out.calls.extend(calls);
        } else if let syn::Expr::Path(p) = &*c.func {
            let name = p
                .path
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
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
            self.visit_expr(e);
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

/// Whether scanning reads a macro's arguments (a macro it knows takes plain expressions).
pub fn scans_macro(m: &syn::Macro) -> bool {
    m.path
        .segments
        .last()
        .is_some_and(|s| KNOWN_MACROS.iter().any(|k| s.ident == k))
}

/// The expressions inside a function-like macro invocation (`vec![x; n]`, `println!("{}", a)`).
///
/// Passes ask for the same macro's arguments many times (scanning, facts, glue); while
/// [`with_parsed_macros`] runs, each macro of the program is parsed once.
pub fn macro_args(m: &syn::Macro) -> Rc<[syn::Expr]> {
    let key: *const syn::Macro = m;
    let cached = PARSED_MACROS.with(|memo| {
        let memo = memo.borrow();
        let memo = memo.as_ref()?;
        memo.owned
            .contains(&key)
            .then(|| memo.parsed.get(&key).cloned())
    });
    match cached {
        Some(Some(args)) => args,
        Some(None) => {
            let args = parse_macro_args(m);
            PARSED_MACROS.with(|memo| {
                if let Some(memo) = memo.borrow_mut().as_mut() {
                    // Macros nested in the arguments live as long as the memo holds them.
                    args.iter().for_each(|e| memo.own(|v| v.visit_expr(e)));
                    memo.parsed.insert(key, args.clone());
                }
            });
            args
        }
        None => parse_macro_args(m),
    }
}

fn parse_macro_args(m: &syn::Macro) -> Rc<[syn::Expr]> {
    use syn::parse::Parser;
    let tokens = m.tokens.clone();
    if m.path.is_ident("vec") {
        if let Ok(e) = syn::parse2::<syn::Expr>(quote::quote!([#tokens])) {
            return Rc::new([e]);
        }
    }
    syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated
        .parse2(tokens)
        .map(|p| p.into_iter().collect())
        .unwrap_or_else(|_| Rc::from(Vec::new()))
}

/// The arguments of the program's macros parsed so far, by the macro's address. Only macros
/// that stay alive and unchanged until the memo is dropped are recorded (`owned`): those of the
/// program's function bodies and those nested in arguments held here. A temporary copy of a
/// syntax tree is not among them, so no address is ever reused for another macro.
#[derive(Default)]
struct MacroMemo {
    owned: HashSet<*const syn::Macro>,
    parsed: HashMap<*const syn::Macro, Rc<[syn::Expr]>>,
}

impl MacroMemo {
    /// Records every macro `walk` visits as owned.
    fn own<'a>(&mut self, walk: impl FnOnce(&mut dyn Visit<'a>)) {
        struct Macros<'m>(&'m mut HashSet<*const syn::Macro>);
        impl<'a> Visit<'a> for Macros<'_> {
            fn visit_macro(&mut self, m: &'a syn::Macro) {
                self.0.insert(m);
            }
        }
        walk(&mut Macros(&mut self.owned));
    }
}

thread_local! {
    static PARSED_MACROS: RefCell<Option<MacroMemo>> = const { RefCell::new(None) };
}

/// Runs `f` with [`macro_args`] parsing each macro of `functions` once. The functions must not
/// change while `f` runs (they are borrowed for it).
pub fn with_parsed_macros<R>(functions: &[crate::load::Function], f: impl FnOnce() -> R) -> R {
    /// Drops the memo however `f` ends, so no later analysis sees its addresses.
    struct Reset(Option<MacroMemo>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            PARSED_MACROS.with(|memo| *memo.borrow_mut() = previous);
        }
    }
    let mut memo = MacroMemo::default();
    for function in functions {
        memo.own(|v| v.visit_block(&function.block));
    }
    let previous = PARSED_MACROS.with(|m| m.borrow_mut().replace(memo));
    let _reset = Reset(previous);
    f()
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
            let name = m.method.to_string();
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
