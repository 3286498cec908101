//! The attributes the macros understand, their validation (a pass of its own), and stripping.
//!
//! Inside a solver, `#[mheta::distributed]` / `#[mheta::replicated]` go on `let` bindings and
//! `#[mheta::iterate]` on one loop; none takes arguments. Bare names (`#[iterate]`, with a
//! `use mheta::iterate`) are recognised too. Anything else is an error at the attribute.

use proc_macro2::TokenStream;
use syn::visit::{self, Visit};
use syn::visit_mut::{self, VisitMut};
use syn::{Attribute, Meta};

use crate::ctxt::Ctxt;

/// An attribute the solver consumes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Marker {
    Iterate,
    Distributed,
    Replicated,
}

impl Marker {
    pub fn name(self) -> &'static str {
        match self {
            Marker::Iterate => "iterate",
            Marker::Distributed => "distributed",
            Marker::Replicated => "replicated",
        }
    }

    /// Where the marker belongs, for error messages.
    pub fn belongs(self) -> &'static str {
        match self {
            Marker::Iterate => {
                "on the main loop (`for`, `while` or `loop`) inside a `#[mheta::solver]` function"
            }
            Marker::Distributed | Marker::Replicated => {
                "on a `let` binding inside a `#[mheta::solver]` function"
            }
        }
    }
}

/// Whether `attr` is `#[mheta::<name>]` or `#[<name>]`.
pub fn is_mheta(attr: &Attribute, name: &str) -> bool {
    let segs: Vec<String> = attr
        .path()
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    segs == ["mheta", name] || segs == [name]
}

pub fn marker_of(attr: &Attribute) -> Option<Marker> {
    [Marker::Iterate, Marker::Distributed, Marker::Replicated]
        .into_iter()
        .find(|m| is_mheta(attr, m.name()))
}

/// The one shared "takes no arguments" check for an attribute macro's own arguments.
pub fn no_args(cx: &Ctxt, name: &str, args: &TokenStream) {
    if !args.is_empty() {
        cx.error_spanned_by(args, format!("`#[mheta::{name}]` takes no arguments"));
    }
}

/// The same check for a marker written inside a solver.
fn marker_no_args(cx: &Ctxt, attr: &Attribute, marker: Marker) {
    if !matches!(attr.meta, Meta::Path(_)) {
        cx.error_spanned_by(
            &attr.meta,
            format!("`#[mheta::{}]` takes no arguments", marker.name()),
        );
    }
}

/// Checks every marker in a solver's body.
pub fn validate(cx: &Ctxt, block: &syn::Block) {
    let mut v = Validator { cx, iterate: None };
    v.visit_block(block);
}

struct Validator<'a> {
    cx: &'a Ctxt,
    /// The first `#[mheta::iterate]` seen.
    iterate: Option<proc_macro2::Span>,
}

impl Validator<'_> {
    fn on_loop(&mut self, attrs: &[Attribute]) {
        for attr in attrs {
            match marker_of(attr) {
                Some(Marker::Iterate) => {
                    marker_no_args(self.cx, attr, Marker::Iterate);
                    if self.iterate.is_some() {
                        self.cx.error_spanned_by(
                            attr,
                            "duplicate `#[mheta::iterate]`: a solver has one main loop",
                        );
                    } else {
                        self.iterate = Some(attr.pound_token.span);
                    }
                }
                Some(m) => self.misplaced(attr, m),
                None => {}
            }
        }
    }

    fn misplaced(&self, attr: &Attribute, marker: Marker) {
        self.cx.error_spanned_by(
            attr,
            format!("`#[mheta::{}]` goes {}", marker.name(), marker.belongs()),
        );
    }
}

impl<'ast> Visit<'ast> for Validator<'_> {
    fn visit_local(&mut self, local: &'ast syn::Local) {
        let mut class: Option<Marker> = None;
        for attr in &local.attrs {
            match marker_of(attr) {
                Some(m @ (Marker::Distributed | Marker::Replicated)) => {
                    marker_no_args(self.cx, attr, m);
                    match class {
                        Some(c) if c == m => {
                            self.cx.error_spanned_by(attr, format!("duplicate `#[mheta::{}]`", m.name()))
                        }
                        Some(_) => self.cx.error_spanned_by(
                            attr,
                            "a binding is either `#[mheta::distributed]` or `#[mheta::replicated]`, not both",
                        ),
                        None => class = Some(m),
                    }
                }
                Some(m) => self.misplaced(attr, m),
                None => {}
            }
        }
        self.visit_pat(&local.pat);
        if let Some(init) = &local.init {
            self.visit_local_init(init);
        }
    }

    fn visit_expr_for_loop(&mut self, e: &'ast syn::ExprForLoop) {
        self.on_loop(&e.attrs);
        self.visit_pat(&e.pat);
        self.visit_expr(&e.expr);
        self.visit_block(&e.body);
    }

    fn visit_expr_while(&mut self, e: &'ast syn::ExprWhile) {
        self.on_loop(&e.attrs);
        self.visit_expr(&e.cond);
        self.visit_block(&e.body);
    }

    fn visit_expr_loop(&mut self, e: &'ast syn::ExprLoop) {
        self.on_loop(&e.attrs);
        self.visit_block(&e.body);
    }

    /// Any other attribute position: markers are misplaced here.
    fn visit_attribute(&mut self, attr: &'ast Attribute) {
        if let Some(m) = marker_of(attr) {
            self.misplaced(attr, m);
        }
        visit::visit_attribute(self, attr);
    }

    /// Nested items are other functions; their own attribute macros report misuse.
    fn visit_item(&mut self, _item: &'ast syn::Item) {}
}

/// Removes the solver's markers from a body (after validation and placement).
pub fn strip(block: &mut syn::Block) {
    Stripper.visit_block_mut(block);
}

struct Stripper;

fn retain(attrs: &mut Vec<Attribute>) {
    attrs.retain(|a| marker_of(a).is_none());
}

impl VisitMut for Stripper {
    fn visit_local_mut(&mut self, local: &mut syn::Local) {
        retain(&mut local.attrs);
        visit_mut::visit_local_mut(self, local);
    }

    fn visit_expr_for_loop_mut(&mut self, e: &mut syn::ExprForLoop) {
        retain(&mut e.attrs);
        visit_mut::visit_expr_for_loop_mut(self, e);
    }

    fn visit_expr_while_mut(&mut self, e: &mut syn::ExprWhile) {
        retain(&mut e.attrs);
        visit_mut::visit_expr_while_mut(self, e);
    }

    fn visit_expr_loop_mut(&mut self, e: &mut syn::ExprLoop) {
        retain(&mut e.attrs);
        visit_mut::visit_expr_loop_mut(self, e);
    }

    fn visit_item_mut(&mut self, _item: &mut syn::Item) {}
}

/// Removes every solver marker from a token stream, wherever it is written: the fallback output
/// of a solver with misplaced markers must not produce one more error per marker.
pub fn strip_tokens(tokens: TokenStream) -> TokenStream {
    use proc_macro2::{Group, TokenTree};
    let mut out: Vec<TokenTree> = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(t) = iter.next() {
        if let TokenTree::Punct(p) = &t {
            if p.as_char() == '#' {
                if let Some(TokenTree::Group(g)) = iter.peek() {
                    let is_marker = g.delimiter() == proc_macro2::Delimiter::Bracket
                        && syn::parse2::<syn::Meta>(g.stream()).ok().is_some_and(|m| {
                            let segs: Vec<String> = m
                                .path()
                                .segments
                                .iter()
                                .map(|s| s.ident.to_string())
                                .collect();
                            [Marker::Iterate, Marker::Distributed, Marker::Replicated]
                                .iter()
                                .any(|k| segs == ["mheta", k.name()] || segs == [k.name()])
                        });
                    if is_marker {
                        iter.next();
                        continue;
                    }
                }
            }
        }
        match t {
            TokenTree::Group(g) => {
                let mut inner = Group::new(g.delimiter(), strip_tokens(g.stream()));
                inner.set_span(g.span());
                out.push(TokenTree::Group(inner));
            }
            other => out.push(other),
        }
    }
    out.into_iter().collect()
}
