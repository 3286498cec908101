//! Iterator chains and closures: a chain with per-element closures (`a.iter().map(..).sum()`)
//! or consuming a data iterator (`v.iter().sum()`) is a loop (DESIGN §3.5); closures passed to
//! other calls (`scope(|s| ..)`) are inlined; trip counts are read off ranges and collections.

use super::{peel, Builder};
use crate::binding::{pattern_idents, Text};
use crate::extent::Extent;
use crate::ir::{Loop, LoopKind, Node};

/// Iterator adapters whose closure runs once per element (the chain is a loop).
#[rustfmt::skip]
const ITER_CLOSURE_METHODS: &[&str] = &[
    "for_each", "map", "filter", "filter_map", "flat_map", "fold", "try_for_each", "try_fold", "any", "all",
    "position", "find", "find_map", "inspect", "map_while", "scan", "take_while", "skip_while", "reduce",
    "for_each_init", "for_each_with", "max_by", "min_by", "max_by_key", "min_by_key", "sum_by",
];

/// Iterator methods that consume the whole iteration (the chain is a loop even without closures).
const CONSUMING_METHODS: &[&str] = &[
    "sum", "product", "count", "max", "min", "collect", "fold", "for_each", "last",
];

/// Methods that start an iteration over data.
#[rustfmt::skip]
const ITER_SOURCES: &[&str] = &[
    "iter", "iter_mut", "into_iter", "par_iter", "par_iter_mut", "into_par_iter", "chunks", "chunks_mut",
    "windows", "par_chunks", "par_chunks_mut", "chunks_exact", "chunks_exact_mut", "lines", "bytes", "chars",
    "keys", "values", "drain",
];

impl Builder<'_, '_> {
    /// An iterator chain with per-element closures (`a.iter().map(|x| ..).sum()`) or consuming
    /// a data iterator (`v.iter().sum()`), anywhere in the statement, as a loop.
    pub(super) fn iterator_loop(&mut self, e: &syn::Expr, bound: &[String]) -> Option<Node> {
        let chain = find_chain(e)?;
        if self.adapts_comm_value(chain) {
            return None;
        }
        // A chain over ranks (`[rank - 1, rank + 1].into_iter().filter(..).collect()`) is glue.
        let glue = crate::glue::Glue {
            closures: &self.facts.glue_closures,
            data: &self.facts.data_arrays,
        };
        if glue.expr(e) {
            return None;
        }
        let (closures, root) = chain_parts(chain);
        let mut vars = Vec::new();
        let mut body = Vec::new();
        for c in &closures {
            for input in &c.inputs {
                vars.extend(pattern_idents(input));
            }
            let inner_loc = self.loc(c.body.extent());
            match &*c.body {
                syn::Expr::Block(b) => body.extend(self.block(&b.block)),
                other => self.expr(other, &[], inner_loc, &mut body),
            }
        }
        let mut header = self.scan(Some(e), bound, self.loc(e.extent()));
        if body.iter().any(Node::has_comm) {
            header.calls.clear();
        } else if !header.calls.is_empty() {
            // A communication statement computing its message (`all_reduce(&v.iter().sum())`).
            return None;
        }
        header.glue = false;
        Some(Node::Loop(Loop {
            loc: self.loc(e.extent()),
            kind: LoopKind::Iterator,
            bound_reads: self.scan(Some(root), &[], self.loc(root.extent())).reads,
            header_text: self.text.of(root),
            trip_count: trip_count(root, &self.text),
            vars,
            header,
            body,
            iterate: false,
            alt: None,
        }))
    }

    /// Whether a per-element closure adapter of the chain is called on a communicator or a
    /// process (`world.split_by_color(color).map(|sub| ..)`: `Option::map` of the communicator
    /// the split may give): that runs its closure once or not at all, no iteration over data.
    /// A collection of requests is iterated (`reqs.into_iter().for_each(|r| ..)`).
    fn adapts_comm_value(&self, chain: &syn::ExprMethodCall) -> bool {
        let mut cur = chain;
        loop {
            if ChainFlags::of(cur).is_iter && self.comm_value_of(&cur.receiver).is_some() {
                return true;
            }
            match &*cur.receiver {
                syn::Expr::MethodCall(inner) => cur = inner,
                _ => return false,
            }
        }
    }

    /// Closures passed to a non-iterator call (`scope(|s| { .. })`) are inlined.
    pub(super) fn closure_bodies(&mut self, e: &syn::Expr) -> Option<Vec<Node>> {
        let (args, name) = match peel(e) {
            syn::Expr::Call(c) => (
                &c.args,
                match &*c.func {
                    syn::Expr::Path(p) => p.path.segments.last().map(|s| &s.ident),
                    _ => None,
                },
            ),
            syn::Expr::MethodCall(m) => (&m.args, Some(&m.method)),
            _ => return None,
        };
        let closures: Vec<&syn::ExprClosure> = args
            .iter()
            .filter_map(|a| match a {
                syn::Expr::Closure(c) if matches!(&*c.body, syn::Expr::Block(_)) => Some(c),
                _ => None,
            })
            .collect();
        if closures.is_empty() {
            return None;
        }
        // A communicating function of the program given a closure that does not communicate
        // itself (`comm.send_receive_vehicles(out, now, |msg| { Self::handle(msg, ..) })`) is
        // expanded as a call: the closure is what it does with each message.
        let callee = crate::scan::UserCall::of(peel(e)).and_then(|u| self.resolve(u));
        if callee.is_some_and(|i| (self.comm_fns)(i))
            && !closures.iter().any(|c| match &*c.body {
                syn::Expr::Block(b) => self.may_communicate(&b.block),
                _ => false,
            })
        {
            return None;
        }
        let name = name.map(|n| n.to_string()).unwrap_or_default();
        let receiver = match peel(e) {
            syn::Expr::MethodCall(m) => Some(&*m.receiver),
            _ => None,
        };
        let mut out = Vec::new();
        for c in closures {
            // `world.split_by_color(color).map(|sub| { .. })`: `sub` is the communicator.
            if let (Some(receiver), Some(input)) = (receiver, c.inputs.first()) {
                self.bind_comm_pattern(input, receiver);
            }
            // `mpi::request::multiple_scope(n, |scope, coll| ..)`: `coll` collects requests.
            if name == "multiple_scope" {
                if let Some(coll) = c.inputs.iter().nth(1) {
                    for v in pattern_idents(coll) {
                        self.env.bind(
                            &v,
                            Some(crate::binding::CommValue::new(
                                crate::catalogue::ValueKind::Requests,
                                crate::catalogue::Family::Mpi,
                            )),
                        );
                    }
                }
            }
            if let syn::Expr::Block(b) = &*c.body {
                out.extend(self.block(&b.block));
            }
        }
        // A request scope that holds only its exchange is that exchange, call and all.
        let scope = matches!(name.as_str(), "scope" | "multiple_scope");
        if scope && !out.is_empty() && out.iter().all(Node::only_comm_and_glue) {
            let whole = self.text.loc(e.extent());
            if let Some(first) = out.first_mut() {
                first.widen(Some(whole.start), None);
            }
            if let Some(last) = out.last_mut() {
                last.widen(None, Some(whole.end));
            }
        }
        Some(out)
    }
}

/// What one method of a chain says about the chain from it down to its root.
#[derive(Clone, Copy, Default)]
struct ChainFlags {
    /// A per-element closure adapter (`map(|x| ..)`).
    is_iter: bool,
    /// A consuming method (`sum`, `collect`, ...).
    consumes: bool,
    /// A method that starts an iteration over data (`iter`, `chunks`, ...).
    from_source: bool,
}

impl ChainFlags {
    fn of(m: &syn::ExprMethodCall) -> ChainFlags {
        let name = crate::syntax::Name::of(&m.method);
        ChainFlags {
            is_iter: ITER_CLOSURE_METHODS.contains(&name.as_str())
                && m.args.iter().any(|a| matches!(a, syn::Expr::Closure(_))),
            consumes: CONSUMING_METHODS.contains(&name.as_str()),
            from_source: ITER_SOURCES.contains(&name.as_str()),
        }
    }

    fn or(self, other: ChainFlags) -> ChainFlags {
        ChainFlags {
            is_iter: self.is_iter || other.is_iter,
            consumes: self.consumes || other.consumes,
            from_source: self.from_source || other.from_source,
        }
    }

    /// Whether the methods seen make an iteration over data.
    fn iterates(self) -> bool {
        self.is_iter || self.consumes && self.from_source
    }
}

/// Whether a block may build a loop node: it holds `for`, `while` or `loop`, or a call of an
/// iterator adapter or consumer (the only methods an iterator chain is made of), anywhere,
/// closures, nested items and the arguments of scanned macros included. A block for which this
/// is false builds no [`Node::Loop`] of its own, so it holds no main loop.
pub fn may_hold_loop(block: &syn::Block) -> bool {
    use syn::visit::Visit;
    struct Finder(bool);
    impl<'a> Visit<'a> for Finder {
        fn visit_expr(&mut self, e: &'a syn::Expr) {
            if self.0 {
                return;
            }
            match e {
                syn::Expr::ForLoop(_) | syn::Expr::While(_) | syn::Expr::Loop(_) => self.0 = true,
                syn::Expr::MethodCall(m) => {
                    let name = crate::syntax::Name::of(&m.method);
                    self.0 = ITER_CLOSURE_METHODS.contains(&name.as_str())
                        || CONSUMING_METHODS.contains(&name.as_str());
                    if !self.0 {
                        syn::visit::visit_expr(self, e);
                    }
                }
                _ => syn::visit::visit_expr(self, e),
            }
        }

        fn visit_macro(&mut self, m: &'a syn::Macro) {
            if !self.0 && crate::syntax::scans_macro(m) {
                crate::syntax::macro_args(m)
                    .iter()
                    .for_each(|e| self.visit_expr(e));
            }
        }
    }
    let mut finder = Finder(false);
    finder.visit_block(block);
    finder.0
}

/// Whether a method-call chain whose methods (from `m` down to the root) say `flags` is an
/// iteration over data: a per-element closure adapter, or a consuming method on an iterator
/// source (and not a glue chain over a range of ranks).
fn is_chain(m: &syn::ExprMethodCall, flags: ChainFlags) -> bool {
    let no_closures = std::collections::BTreeSet::new();
    let glue = crate::scan::Glue {
        closures: &no_closures,
        data: &no_closures,
    };
    flags.iterates() && !glue.method_call(m)
}

/// The outermost iterator chain in an expression (closures are not searched).
///
/// A method chain `r.a().b().c()` is visited once, outermost call first: each call's flags are
/// those of the calls below it, gathered in one pass from the root (testing each call on its own
/// walked the chain below it again: quadratic in the chain's length). Then the root, then the
/// calls' arguments, innermost first, as the recursive search did.
pub(super) fn find_chain(e: &syn::Expr) -> Option<&syn::ExprMethodCall> {
    use syn::Expr;
    match e {
        Expr::MethodCall(m) => {
            // Each call with the flags of the calls from it down to the root.
            let mut calls = vec![(m, ChainFlags::default())];
            while let Expr::MethodCall(inner) = &*calls[calls.len() - 1].0.receiver {
                calls.push((inner, ChainFlags::default()));
            }
            let mut acc = ChainFlags::default();
            for (call, below) in calls.iter_mut().rev() {
                acc = acc.or(ChainFlags::of(call));
                *below = acc;
            }
            if let Some(&(call, _)) = calls.iter().find(|(call, below)| is_chain(call, *below)) {
                return Some(call);
            }
            find_chain(&calls[calls.len() - 1].0.receiver).or_else(|| {
                calls
                    .iter()
                    .rev()
                    .find_map(|(call, _)| call.args.iter().find_map(find_chain))
            })
        }
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
pub(super) fn chain_parts(m: &syn::ExprMethodCall) -> (Vec<&syn::ExprClosure>, &syn::Expr) {
    let mut closures = Vec::new();
    let mut cur: &syn::ExprMethodCall = m;
    loop {
        let name = crate::syntax::Name::of(&cur.method);
        if ITER_CLOSURE_METHODS.contains(&name.as_str()) {
            closures.extend(cur.args.iter().filter_map(|a| {
                if let syn::Expr::Closure(c) = a {
                    Some(c)
                } else {
                    None
                }
            }));
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

/// `2` for `0..2`, `k` for `0..k`, `hi - lo` for `lo..hi`, `..` otherwise.
pub(super) fn trip_count(e: &syn::Expr, text: &Text<'_>) -> String {
    let lit = |e: &syn::Expr| match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse::<i64>().ok(),
        _ => None,
    };
    match e {
        syn::Expr::Paren(p) => trip_count(&p.expr, text),
        syn::Expr::Range(r) => {
            let (Some(start), Some(end)) = (&r.start, &r.end) else {
                return "..".into();
            };
            let inclusive = matches!(r.limits, syn::RangeLimits::Closed(_));
            match (lit(start), lit(end)) {
                (Some(a), Some(b)) => (b - a + i64::from(inclusive)).max(0).to_string(),
                (Some(0), None) if !inclusive => text.of(&**end),
                _ => {
                    let base = format!("{} - {}", text.of(&**end), text.of(&**start));
                    if inclusive {
                        format!("{base} + 1")
                    } else {
                        base
                    }
                }
            }
        }
        // `for q in &basis`, `basis.iter()`: once per element.
        syn::Expr::Reference(r) => trip_count(&r.expr, text),
        syn::Expr::Path(p) if p.path.get_ident().is_some() => format!("{}.len()", text.of(e)),
        syn::Expr::MethodCall(m)
            if matches!(
                crate::syntax::Name::of(&m.method).as_str(),
                "iter" | "iter_mut" | "into_iter"
            ) =>
        {
            trip_count(&m.receiver, text)
        }
        _ => "..".into(),
    }
}
