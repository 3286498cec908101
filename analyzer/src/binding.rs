//! Binding analysis: which values are communicators (DESIGN §3.3).
//!
//! A method call is communication only when its receiver is a communicator value. This pass
//! tracks, within one function, the bindings that flow from `mpi::initialize()`,
//! `universe.world()`, `ctx.comm()`, `process_at_rank(..)`, `immediate_*` (requests), parameters
//! whose type names a communicator, struct fields of communicator type and the variables or
//! fields listed in mheta.toml. A `tx.send(x)` on a channel never qualifies: `tx` is none of these.

use crate::hash::HashMap;

use crate::catalogue::{self, CallKind, Family, ValueKind};
use crate::config::Config;
use crate::diagnostics::{FileId, Loc};
use crate::extent::Extent;
use crate::ir::CallSite;
use crate::sources::SourceMap;

/// A communicator-flavoured value: what it is, which API it belongs to, and for a process its
/// peer as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommValue {
    /// What the value is: a universe, communicator, process, request(s) or context.
    pub kind: ValueKind,
    /// The API it belongs to, which names its calls (`mpi::…` or `comm::…`).
    pub family: Family,
    /// For a process, the rank it stands for as written (`r` of `process_at_rank(r)`, `any`,
    /// `rank`); `None` for other values and for a process whose rank is not visible.
    pub peer: Option<String>,
}

impl CommValue {
    /// A value of this kind and family, with no peer.
    pub fn new(kind: ValueKind, family: Family) -> Self {
        CommValue {
            kind,
            family,
            peer: None,
        }
    }
}

/// The bindings of one function (flat: a later `let` of the same name replaces the earlier).
#[derive(Debug, Clone, Default)]
pub struct Env {
    values: HashMap<String, CommValue>,
    /// Fields (by name) whose declared type is a communicator, and config-named expressions.
    fields: HashMap<String, CommValue>,
    configured: Vec<String>,
    /// The program's `use` names (`Program::imports` of the loaded program).
    imports: std::rc::Rc<HashMap<String, String>>,
}

impl Env {
    /// An environment knowing the program's communicator fields (see [`comm_fields`]) and the
    /// config's communicators.
    pub fn new(
        fields: &HashMap<String, CommValue>,
        config: &Config,
        imports: std::rc::Rc<HashMap<String, String>>,
    ) -> Env {
        Env {
            configured: config.comm.communicators.clone(),
            fields: fields.clone(),
            imports,
            ..Env::default()
        }
    }

    /// A path with its first segment resolved through the `use` names: `p2p::send_receive_into`
    /// → `mpi::point_to_point::send_receive_into`.
    pub fn resolve_path(&self, segs: &[String]) -> Vec<String> {
        match segs.split_first() {
            Some((first, rest)) => match self.imports.get(first) {
                Some(full) => full
                    .split("::")
                    .map(str::to_string)
                    .chain(rest.iter().cloned())
                    .collect(),
                None => segs.to_vec(),
            },
            None => vec![],
        }
    }

    /// Binds `name` to a communicator value, or with `None` forgets what it was bound to (a
    /// `let` that rebinds the name to something else).
    pub fn bind(&mut self, name: &str, value: Option<CommValue>) {
        match value {
            Some(v) => self.values.insert(name.to_string(), v),
            None => self.values.remove(name),
        };
    }

    /// The communicator value bound to `name` by a `let` or a parameter, if any.
    pub fn get(&self, name: &str) -> Option<&CommValue> {
        self.values.get(name)
    }

    /// Binds the parameters of a signature from their types (`&SimpleCommunicator`,
    /// `&impl Communicator`, `C` with `C: CommunicatorCollectives`, `&dyn Comm`, `&Context`).
    pub fn bind_params(&mut self, sig: &syn::Signature) {
        let mut generic: HashMap<String, (ValueKind, Family)> = HashMap::default();
        let bounds_of =
            |bounds: &syn::punctuated::Punctuated<syn::TypeParamBound, syn::Token![+]>| {
                bounds.iter().find_map(|b| match b {
                    syn::TypeParamBound::Trait(t) => t
                        .path
                        .segments
                        .last()
                        .and_then(|s| catalogue::type_kind(&s.ident.to_string())),
                    _ => None,
                })
            };
        for param in &sig.generics.params {
            if let syn::GenericParam::Type(tp) = param {
                if let Some(k) = bounds_of(&tp.bounds) {
                    generic.insert(tp.ident.to_string(), k);
                }
            }
        }
        if let Some(wc) = &sig.generics.where_clause {
            for pred in &wc.predicates {
                if let syn::WherePredicate::Type(pt) = pred {
                    if let (Some(k), syn::Type::Path(p)) = (bounds_of(&pt.bounds), &pt.bounded_ty) {
                        if let Some(id) = p.path.get_ident() {
                            generic.insert(id.to_string(), k);
                        }
                    }
                }
            }
        }
        for input in &sig.inputs {
            if let syn::FnArg::Typed(pt) = input {
                let value = type_value(&pt.ty).or_else(|| {
                    let name = crate::syntax::type_name(&pt.ty);
                    generic.get(&name).map(|&(k, f)| CommValue::new(k, f))
                });
                for name in pattern_idents(&pt.pat) {
                    // Bound already from an inlined call's argument: a process with its peer
                    // says more than the parameter's type.
                    if self.values.contains_key(&name) {
                        continue;
                    }
                    self.bind(&name, value.clone());
                }
            }
        }
    }

    /// The communicator value an expression evaluates to, if any.
    pub fn value_of(&self, expr: &syn::Expr, text: &Text<'_>) -> Option<CommValue> {
        use syn::Expr;
        match expr {
            Expr::Path(p) => {
                let name = p.path.get_ident()?.to_string();
                if self.configured.contains(&name) {
                    return Some(CommValue::new(ValueKind::Communicator, Family::Mpi));
                }
                self.values.get(&name).cloned()
            }
            Expr::Field(f) => {
                let member = match &f.member {
                    syn::Member::Named(id) => id.to_string(),
                    // `mpi::initialize_with_threading(..).unwrap().0`: the universe of the
                    // (universe, threading) pair.
                    syn::Member::Unnamed(i) => {
                        return (i.index == 0)
                            .then(|| self.value_of(&f.base, text))
                            .flatten()
                            .filter(|v| v.kind == ValueKind::Universe);
                    }
                };
                let written = text.of(expr).replace(' ', "");
                if self
                    .configured
                    .iter()
                    .any(|c| c.replace(' ', "") == written || *c == member)
                {
                    return Some(CommValue::new(ValueKind::Communicator, Family::Mpi));
                }
                self.fields.get(&member).cloned()
            }
            Expr::Reference(r) => self.value_of(&r.expr, text),
            Expr::Paren(p) => self.value_of(&p.expr, text),
            Expr::Group(g) => self.value_of(&g.expr, text),
            Expr::Try(t) => self.value_of(&t.expr, text),
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => self.value_of(&u.expr, text),
            Expr::Call(c) => {
                let Expr::Path(p) = &*c.func else { return None };
                let segs: Vec<String> = crate::syntax::path_idents(&p.path);
                let last = segs.last()?.as_str();
                if crate::syntax::starts_mpi(&segs) {
                    return Some(CommValue::new(ValueKind::Universe, Family::Mpi));
                }
                // `SimpleCommunicator::world()`, and `SystemCommunicator::world()` as rsmpi
                // before 0.7 named the world's type (programs made in its time still do).
                if segs.len() >= 2
                    && last == "world"
                    && crate::catalogue::type_kind(&segs[segs.len() - 2])
                        == Some((ValueKind::Communicator, Family::Mpi))
                {
                    return Some(CommValue::new(ValueKind::Communicator, Family::Mpi));
                }
                // A guard around the universe (`UniverseGuard::new(mpi::initialize().unwrap())`)
                // hands out its world; a shared pointer (`Rc::new(world)`) is its communicator.
                if c.args.len() != 1 {
                    return None;
                }
                let inner = self.value_of(c.args.first()?, text)?;
                let pointer = segs.len() == 2
                    && matches!(segs[0].as_str(), "Rc" | "Arc" | "Box")
                    && last == "new";
                (inner.kind == ValueKind::Universe || pointer).then_some(inner)
            }
            Expr::MethodCall(m) => self.method_value(m, text),
            // `if rank > 0 { world.process_at_rank(rank - 1) } else { world.process_at_rank(size
            // - 1) }`: a process either way, whose peer is the `if` over the arms' peers (the
            // participants fold its edge case as they fold a rank chosen by `if`).
            // An arm that leaves (`else { return; }`) gives no value: the other arm's is it.
            Expr::If(i) => {
                let (_, otherwise) = i.else_branch.as_ref()?;
                let then_leaves = diverges(&i.then_branch);
                let else_leaves = matches!(&**otherwise, Expr::Block(b) if diverges(&b.block));
                if else_leaves && !then_leaves {
                    // `if let Some(u) = &self.universe { u.world() } else { return }`: the
                    // arm sees what the pattern binds.
                    if let Expr::Let(l) = &*i.cond {
                        if let Some(v) = self.value_of(&l.expr, text) {
                            let mut inner = self.clone();
                            for name in pattern_idents(&l.pat) {
                                inner.bind(&name, Some(v.clone()));
                            }
                            return inner.value_of(tail(&i.then_branch)?, text);
                        }
                    }
                    return self.value_of(tail(&i.then_branch)?, text);
                }
                if then_leaves && !else_leaves {
                    return self.value_of(otherwise, text);
                }
                let then = self.value_of(tail(&i.then_branch)?, text)?;
                let otherwise = self.value_of(otherwise, text)?;
                if (then.kind, then.family) != (otherwise.kind, otherwise.family) {
                    return None;
                }
                let peer = match (then.peer, otherwise.peer) {
                    (Some(a), Some(b)) if a == b => Some(a),
                    (Some(a), Some(b)) => {
                        Some(format!("if {} {{ {a} }} else {{ {b} }}", text.of(&i.cond)))
                    }
                    _ => None,
                };
                Some(CommValue { peer, ..then })
            }
            Expr::Block(b) if b.label.is_none() => self.value_of(tail(&b.block)?, text),
            _ => None,
        }
    }

    fn method_value(&self, m: &syn::ExprMethodCall, text: &Text<'_>) -> Option<CommValue> {
        let name = crate::syntax::Name::of(&m.method);
        // Only the methods below pass on or derive a communicator value; for any other the
        // receiver need not be evaluated. Without this cut every call of a chain of n methods
        // (`x.abs().abs()…`) evaluated its whole receiver chain: quadratic in n.
        if !carries_value(&name) {
            return None;
        }
        // `mpi::initialize_with_threading(..).map(|x| x.0)` or `.map(|(u, _)| u)`: the
        // universe of the (universe, threading) pair. Any other `map` carries no value, and
        // its receiver is not evaluated.
        if name == "map" {
            let first = m.args.len() == 1 && m.args.first().is_some_and(takes_first_of_pair);
            return first
                .then(|| self.value_of(&m.receiver, text))
                .flatten()
                .filter(|v| v.kind == ValueKind::Universe);
        }
        let receiver = self.value_of(&m.receiver, text);
        if matches!(
            name.as_str(),
            "unwrap" | "expect" | "clone" | "as_ref" | "borrow" | "unwrap_or_else"
        ) {
            return receiver;
        }
        if name == "comm" && m.args.is_empty() {
            let ctx_like = match &receiver {
                Some(v) => v.kind == ValueKind::Context,
                None => {
                    matches!(&*m.receiver, syn::Expr::Path(p) if p.path.get_ident().is_some_and(|i| i == "ctx" || i == "context"))
                }
            };
            if ctx_like {
                return Some(CommValue::new(ValueKind::Communicator, Family::Runtime));
            }
        }
        let receiver = receiver?;
        match receiver.kind {
            ValueKind::Universe if name == "world" => {
                Some(CommValue::new(ValueKind::Communicator, receiver.family))
            }
            ValueKind::Communicator => {
                if let Some(kind) = catalogue::derived_value(&name) {
                    let peer = match name.as_str() {
                        "any_process" => Some("any".to_string()),
                        "this_process" => Some("rank".to_string()),
                        _ => m.args.first().map(|a| text.of(a)),
                    };
                    return Some(CommValue {
                        kind,
                        family: receiver.family,
                        peer,
                    });
                }
                immediate(&name, receiver.family)
            }
            // `p.matched_probe()` and its `(Message, Status)`: the message, from `p`'s peer.
            ValueKind::Process if name.contains("matched_probe") => Some(CommValue {
                kind: ValueKind::Message,
                ..receiver
            }),
            ValueKind::Process => immediate(&name, receiver.family),
            ValueKind::Requests
                if matches!(name.as_str(), "into_iter" | "iter_mut" | "drain" | "pop") =>
            {
                Some(CommValue::new(ValueKind::Request, receiver.family))
            }
            _ => None,
        }
    }

    /// The communication call a method call is, if its receiver is a communicator value.
    pub fn comm_call(&self, m: &syn::ExprMethodCall, text: &Text<'_>) -> Option<CallSite> {
        let name = crate::syntax::Name::of(&m.method);
        // Only a catalogued method can be a communication call: any other is answered without
        // evaluating its receiver (every call of a chain of n `.clone()`s did: quadratic).
        if [Family::Mpi, Family::Runtime]
            .into_iter()
            .all(|f| catalogue::method(f, &name).is_none())
        {
            return None;
        }
        let receiver = self.value_of(&m.receiver, text)?;
        let entry = match receiver.kind {
            ValueKind::Communicator | ValueKind::Process | ValueKind::Context => {
                catalogue::method(receiver.family, &name)
            }
            ValueKind::Request | ValueKind::Requests => {
                catalogue::method(receiver.family, &name).filter(|e| e.kind == CallKind::Complete)
            }
            ValueKind::Message => catalogue::method(receiver.family, &name)
                .filter(|e| e.name.contains("matched_receive")),
            ValueKind::Universe => None,
        }?;
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let (peer, rest) = if entry.peer_arg && !args.is_empty() && entry.kind != CallKind::Complete
        {
            (Some(text.of(args[0])), &args[1..])
        } else if matches!(receiver.kind, ValueKind::Process | ValueKind::Message) {
            (receiver.peer.clone(), &args[..])
        } else if receiver.family == Family::Runtime && ROOTED.contains(&name.as_str()) {
            // `comm.broadcast(0, &mut buf)`: the root is the plain (non-reference) argument.
            let root = args
                .iter()
                .find(|a| matches!(a, syn::Expr::Lit(_) | syn::Expr::Path(_)));
            (root.map(|r| text.of(*r)), &args[..])
        } else {
            (None, &args[..])
        };
        let message = rest
            .iter()
            .find(|a| matches!(a, syn::Expr::Reference(_)))
            .or_else(|| {
                rest.iter()
                    .find(|a| !matches!(a, syn::Expr::Path(p) if p.path.is_ident("scope")))
            })
            .map(|a| strip_ref(&text.of(a)));
        let elem_type = m
            .turbofish
            .as_ref()
            .and_then(|t| t.args.first())
            .map(|a| quote::quote!(#a).to_string());
        Some(CallSite {
            api: format!("{}::{}", receiver.family.prefix(), name),
            kind: entry.kind,
            peers: peer.into_iter().collect(),
            message: if matches!(entry.kind, CallKind::Complete) {
                None
            } else {
                message
            },
            elem_type,
            loc: text.loc(m.method.span()).to(text.loc(m.extent())),
            pattern_hint: None,
            ranges: vec![],
        })
    }

    /// The rsmpi free function a call is (`mpi::request::wait_all(..)`), when not a user function.
    pub fn free_comm_call(&self, c: &syn::ExprCall, text: &Text<'_>) -> Option<CallSite> {
        let syn::Expr::Path(p) = &*c.func else {
            return None;
        };
        let segs: Vec<String> = crate::syntax::path_idents(&p.path);
        let segs = self.resolve_path(&segs);
        let entry = catalogue::free_function(segs.last()?)?;
        if segs.len() > 1 && segs[0] != "mpi" {
            return None;
        }
        // The peers are the `Process` arguments (`send_receive_into(&x, &right, &mut y, &left)`).
        let peers = c
            .args
            .iter()
            .filter_map(|a| {
                self.value_of(a, text)
                    .filter(|v| v.kind == ValueKind::Process)
                    .and_then(|v| v.peer)
            })
            .collect();
        Some(CallSite {
            api: format!("mpi::{}", segs.last()?),
            kind: entry.kind,
            peers,
            message: c.args.first().map(|a| strip_ref(&text.of(a))),
            elem_type: None,
            loc: text.loc(c.extent()),
            pattern_hint: None,
            ranges: vec![],
        })
    }
}

/// Runtime collectives with a root.
const ROOTED: &[&str] = &[
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "gather_varcount",
    "scatter_varcount",
    "broadcast_bytes",
    "reduce_bytes",
    "gather_bytes",
    "scatter_bytes",
];

/// The value of a block: its tail expression.
/// Whether a block ends by leaving: `return`, `break`, `continue`, `panic!`, `unreachable!`,
/// `std::process::exit(..)`.
fn diverges(block: &syn::Block) -> bool {
    let panics = |m: &syn::Macro| {
        m.path.segments.last().is_some_and(|s| {
            matches!(
                crate::syntax::Name::of(&s.ident).as_str(),
                "panic" | "unreachable" | "todo"
            )
        })
    };
    match block.stmts.last() {
        Some(syn::Stmt::Macro(m)) => panics(&m.mac),
        Some(syn::Stmt::Expr(e, _)) => match e {
            syn::Expr::Return(_) | syn::Expr::Break(_) | syn::Expr::Continue(_) => true,
            syn::Expr::Macro(m) => panics(&m.mac),
            syn::Expr::Call(c) => matches!(&*c.func, syn::Expr::Path(p)
                if p.path.segments.last().is_some_and(|s| s.ident == "exit")),
            _ => false,
        },
        _ => false,
    }
}

fn tail(block: &syn::Block) -> Option<&syn::Expr> {
    match block.stmts.last()? {
        syn::Stmt::Expr(e, None) => Some(e),
        _ => None,
    }
}

/// Whether `e` is a closure of one argument returning the first of a pair: `|x| x.0` or
/// `|(u, _)| u`.
fn takes_first_of_pair(e: &syn::Expr) -> bool {
    let syn::Expr::Closure(c) = e else {
        return false;
    };
    let (Some(input), 1) = (c.inputs.first(), c.inputs.len()) else {
        return false;
    };
    match (input, &*c.body) {
        (syn::Pat::Ident(x), syn::Expr::Field(f)) => {
            matches!(&f.member, syn::Member::Unnamed(i) if i.index == 0)
                && matches!(&*f.base, syn::Expr::Path(p) if p.path.is_ident(&x.ident))
        }
        (syn::Pat::Tuple(t), syn::Expr::Path(p)) => {
            t.elems.len() == 2
                && matches!(t.elems.first(), Some(syn::Pat::Ident(u)) if p.path.is_ident(&u.ident))
        }
        _ => false,
    }
}

/// Whether a method can return a communicator value, given one as receiver (`method_value`).
fn carries_value(name: &str) -> bool {
    matches!(
        name,
        "unwrap"
            | "expect"
            | "clone"
            | "as_ref"
            | "borrow"
            | "unwrap_or_else"
            | "comm"
            | "world"
            | "matched_probe"
            | "matched_probe_with_tag"
            | "into_iter"
            | "iter_mut"
            | "drain"
            | "pop"
            | "map"
    ) || catalogue::derived_value(name).is_some()
        || name.starts_with("immediate_")
}

fn immediate(name: &str, family: Family) -> Option<CommValue> {
    (name.starts_with("immediate_") && catalogue::method(family, name).is_some())
        .then(|| CommValue::new(ValueKind::Request, family))
}

fn strip_ref(s: &str) -> String {
    s.trim_start_matches("&mut ")
        .trim_start_matches('&')
        .trim()
        .to_string()
}

/// The struct fields (by name) whose declared type is a communicator, computed once per program.
pub fn comm_fields(fields: &[(String, syn::Type)]) -> HashMap<String, CommValue> {
    fields
        .iter()
        .filter_map(|(name, ty)| type_value(ty).map(|v| (name.clone(), v)))
        .collect()
}

/// The value kind a written type carries (`&SimpleCommunicator`, `&impl Communicator`, …).
pub fn type_value(ty: &syn::Type) -> Option<CommValue> {
    let (kind, family) = match ty {
        syn::Type::Reference(r) => return type_value(&r.elem),
        syn::Type::Paren(p) => return type_value(&p.elem),
        syn::Type::Path(p) => {
            let last = p.path.segments.last()?;
            let name = crate::syntax::Name::of(&last.ident);
            if matches!(name.as_str(), "Vec" | "VecDeque") {
                // A vector of requests is a collection of requests.
                if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(inner)) = a.args.first() {
                        let v = type_value(inner)?;
                        return (v.kind == ValueKind::Request)
                            .then(|| CommValue::new(ValueKind::Requests, v.family));
                    }
                }
                return None;
            }
            // `Option<Universe>` held in a struct and taken out with `if let Some(u)`.
            if matches!(name.as_str(), "Arc" | "Rc" | "Box" | "Option") {
                if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(inner)) = a.args.first() {
                        return type_value(inner);
                    }
                }
            }
            catalogue::type_kind(&name)?
        }
        syn::Type::ImplTrait(t) => t.bounds.iter().find_map(trait_kind)?,
        syn::Type::TraitObject(t) => t.bounds.iter().find_map(trait_kind)?,
        _ => return None,
    };
    Some(CommValue::new(kind, family))
}

fn trait_kind(b: &syn::TypeParamBound) -> Option<(ValueKind, Family)> {
    match b {
        syn::TypeParamBound::Trait(t) => {
            catalogue::type_kind(&t.path.segments.last()?.ident.to_string())
        }
        _ => None,
    }
}

/// The identifiers a pattern binds.
pub fn pattern_idents(pat: &syn::Pat) -> Vec<String> {
    let mut out = Vec::new();
    fn walk(p: &syn::Pat, out: &mut Vec<String>) {
        match p {
            syn::Pat::Ident(i) => out.push(i.ident.to_string()),
            syn::Pat::Tuple(t) => t.elems.iter().for_each(|e| walk(e, out)),
            syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|e| walk(e, out)),
            syn::Pat::Struct(s) => s.fields.iter().for_each(|f| walk(&f.pat, out)),
            syn::Pat::Reference(r) => walk(&r.pat, out),
            syn::Pat::Type(t) => walk(&t.pat, out),
            syn::Pat::Slice(s) => s.elems.iter().for_each(|e| walk(e, out)),
            syn::Pat::Or(o) => o.cases.iter().take(1).for_each(|e| walk(e, out)),
            syn::Pat::Paren(p) => walk(&p.pat, out),
            // A match arm's pattern with its guard (`r if r == last`).
            syn::Pat::Guard(g) => walk(&g.pat, out),
            _ => {}
        }
    }
    walk(pat, &mut out);
    out
}

/// Source text and locations for one file's syntax.
#[derive(Clone, Copy)]
pub struct Text<'a> {
    /// The loaded sources that locations point into.
    pub sources: &'a SourceMap,
    /// The file the syntax was parsed from.
    pub file: FileId,
    /// The inline site this text was reached through (0: not inlined).
    pub via: u32,
}

impl Text<'_> {
    /// The location of a span of this file, reached through this text's inline site.
    pub fn loc(&self, span: proc_macro2::Span) -> Loc {
        Loc::of(self.file, span).via(self.via)
    }

    /// The source text of a node as written (whitespace collapsed), or its tokens.
    pub fn of<T: Extent + quote::ToTokens>(&self, node: &T) -> String {
        self.sources
            .snippet(self.loc(node.extent()))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| node.to_token_stream().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(src: &str) -> (SourceMap, syn::File) {
        let mut map = SourceMap::default();
        map.add("t.rs".into(), src.into());
        (map, syn::parse_file(src).unwrap())
    }

    /// Runs the `let`s of `fn f`'s body through the env and returns the calls found in
    /// expression statements.
    fn calls_in(src: &str) -> Vec<CallSite> {
        let (map, file) = setup(src);
        let text = Text {
            sources: &map,
            file: 0,
            via: 0,
        };
        let syn::Item::Fn(f) = &file.items[0] else {
            panic!()
        };
        let mut env = Env::default();
        env.bind_params(&f.sig);
        let mut out = vec![];
        for stmt in &f.block.stmts {
            match stmt {
                syn::Stmt::Local(l) => {
                    let v = l.init.as_ref().and_then(|i| env.value_of(&i.expr, &text));
                    for n in pattern_idents(&l.pat) {
                        env.bind(&n, v.clone());
                    }
                }
                syn::Stmt::Expr(syn::Expr::MethodCall(m), _) => out.extend(env.comm_call(m, &text)),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn channel_send_is_not_communication() {
        let calls =
            calls_in("fn f() { let (tx, rx) = std::sync::mpsc::channel(); tx.send(1).unwrap(); }");
        assert!(calls.is_empty());
        let calls = calls_in("fn f() { let (tx, rx) = std::sync::mpsc::channel(); tx.send(1); }");
        assert!(calls.is_empty());
    }

    #[test]
    fn process_at_rank_send_is_communication_with_its_peer() {
        let calls = calls_in(
            "fn f() { let u = mpi::initialize().unwrap(); let world = u.world(); \
             world.process_at_rank(rank - 1).send(&a[1..2]); }",
        );
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].api, "mpi::send");
        assert_eq!(calls[0].peers, ["rank - 1"]);
        assert_eq!(calls[0].message.as_deref(), Some("a[1..2]"));
    }

    /// `initialize_with_threading` gives a (universe, threading) pair: its first is the universe
    /// however the program takes it out; its second is none.
    #[test]
    fn the_universe_of_a_threaded_initialisation() {
        for init in [
            "let (u, _level) = mpi::initialize_with_threading(t).unwrap();",
            "let u = mpi::initialize_with_threading(t).unwrap().0;",
            "let u = mpi::initialize_with_threading(t).map(|x| x.0).unwrap();",
            "let u = mpi::initialize_with_threading(t).map(|(u, _)| u).expect(\"mpi\");",
        ] {
            let calls = calls_in(&format!(
                "fn f() {{ {init} let w = u.world(); w.barrier(); }}"
            ));
            assert_eq!(calls.len(), 1, "{init}");
        }
        for init in [
            "let u = mpi::initialize_with_threading(t).unwrap().1;",
            "let u = mpi::initialize_with_threading(t).map(|x| x.1).unwrap();",
            "let u = mpi::initialize_with_threading(t).map(|(_, l)| l).unwrap();",
            "let u = mpi::initialize_with_threading(t).map(|x| x).unwrap().world();",
        ] {
            let calls = calls_in(&format!(
                "fn f() {{ {init} let w = u.world(); w.barrier(); }}"
            ));
            assert!(calls.is_empty(), "{init}");
        }
    }

    /// A process chosen by `if` is a process either way; its peer is the `if` over the arms'
    /// peers, which the participants fold as they fold a rank chosen by `if`.
    #[test]
    fn a_process_chosen_by_if() {
        let calls = calls_in(
            "fn f() { let u = mpi::initialize().unwrap(); let world = u.world(); \
             let left = if rank > 0 { world.process_at_rank(rank - 1) } else { world.process_at_rank(size - 1) }; \
             left.send(&x); }",
        );
        assert_eq!(calls.len(), 1);
        assert_eq!(
            calls[0].peers,
            ["if rank > 0 { rank - 1 } else { size - 1 }"]
        );
        // The same process either way, or a process on one side only.
        let calls = calls_in(
            "fn f() { let u = mpi::initialize().unwrap(); let world = u.world(); \
             let p = if odd { world.process_at_rank(0) } else { world.process_at_rank(0) }; \
             let q = if odd { world.process_at_rank(0) } else { other }; \
             p.send(&x); q.send(&x); }",
        );
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].peers, ["0"]);
    }

    #[test]
    fn communicator_parameter_types() {
        let calls = calls_in("fn f(w: &SimpleCommunicator) { w.all_reduce_into(&x, &mut y, op); }");
        assert_eq!(
            calls[0].kind,
            CallKind::Collective(mheta_format::Pattern::Reduction)
        );
        let calls = calls_in("fn f<C: CommunicatorCollectives>(w: &C) { w.barrier(); }");
        assert_eq!(calls.len(), 1);
        let calls = calls_in("fn f(c: &impl Communicator) { c.barrier(); }");
        assert_eq!(calls.len(), 1);
        let calls = calls_in("fn f(c: &dyn Comm) { c.send(1, &x); }");
        assert_eq!(
            (calls[0].api.as_str(), calls[0].peers.as_slice()),
            ("comm::send", ["1".to_string()].as_slice())
        );
        let calls = calls_in("fn f(c: &dyn Comm) { c.all_reduce_value(x, ReduceOp::Sum); }");
        assert_eq!(
            (calls[0].api.as_str(), calls[0].message.as_deref()),
            ("comm::all_reduce_value", Some("x"))
        );
        let calls = calls_in("fn f(w: &Widget) { w.barrier(); }");
        assert!(calls.is_empty());
    }

    /// The world made by its type's constructor, unbound or bound, as rsmpi 0.8 names the type
    /// and as earlier versions did (`SystemCommunicator`, which real programs still use).
    #[test]
    fn the_world_from_its_type() {
        for ty in [
            "SimpleCommunicator",
            "SystemCommunicator",
            "mpi::topology::SystemCommunicator",
        ] {
            let calls = calls_in(&format!(
                "fn f(x: f64) {{ let mut y = 0.0; \
                 {ty}::world().all_reduce_into(&x, &mut y, SystemOperation::sum()); \
                 let world = {ty}::world(); let rank = world.rank(); \
                 world.process_at_rank(rank + 1).send(&x); }}"
            ));
            let found: Vec<(&str, &[String])> = calls
                .iter()
                .map(|c| (c.api.as_str(), c.peers.as_slice()))
                .collect();
            assert_eq!(
                found,
                [
                    ("mpi::all_reduce_into", [].as_slice()),
                    ("mpi::send", ["rank + 1".to_string()].as_slice())
                ],
                "{ty}"
            );
        }
        // A type that is no communicator makes none.
        assert!(calls_in("fn f() { Widget::world().barrier(); }").is_empty());
    }

    /// A Cartesian communicator's sub-grid (`subgroup`) is a communicator too.
    #[test]
    fn a_cartesian_subgroup_communicates() {
        let calls = calls_in(
            "fn f(grid: &CartesianCommunicator) { let row = grid.subgroup(&[false, true]); \
             row.all_reduce_into(&x, &mut y, SystemOperation::sum()); }",
        );
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].api, "mpi::all_reduce_into");
    }

    #[test]
    fn ctx_comm_and_requests() {
        let calls = calls_in(
            "fn f(ctx: &Context) { let comm = ctx.comm(); let r = comm.immediate_send(1, &x); r.wait(); comm.len(); }",
        );
        let apis: Vec<&str> = calls.iter().map(|c| c.api.as_str()).collect();
        assert_eq!(apis, ["comm::wait"]);
        assert_eq!(calls[0].kind, CallKind::Complete);
    }
}
