//! Source extents of syntax nodes without printing them.
//!
//! `syn::spanned::Spanned::span` prints a node back into a token stream and joins the spans of
//! its first and last tokens. That costs as much as the node is large, and the analysis asks for
//! the span of a statement, then of the expressions inside it, then of theirs: on nested code the
//! printing made up a quarter of the analysis. [`Extent::extent`] gives the same span from the
//! node's first and last tokens, found by walking down the edges of the tree; it prints only where
//! syn would print tokens of its own (a closure's synthesized braces, the parentheses around an
//! attributed range) or the node is rare and small (a type, a pattern).

use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{AttrStyle, Attribute, Expr};

/// A syntax node's span, equal to [`Spanned::span`]: its first token's span joined with its
/// last's.
pub trait Extent {
    /// The node's span: from the start of its first token to the end of its last.
    fn extent(&self) -> Span;
}

fn join(first: Span, last: Span) -> Span {
    first.join(last).unwrap_or(first)
}

impl Extent for Expr {
    fn extent(&self) -> Span {
        join(first(self), last(self))
    }
}

impl Extent for syn::Stmt {
    fn extent(&self) -> Span {
        match self {
            syn::Stmt::Local(l) => l.extent(),
            // A lone `;` is an empty verbatim expression and its semicolon.
            syn::Stmt::Expr(Expr::Verbatim(tokens), Some(semi)) if tokens.is_empty() => semi.span,
            syn::Stmt::Expr(e, Some(semi)) => join(first(e), semi.span),
            syn::Stmt::Expr(e, None) => e.extent(),
            syn::Stmt::Macro(m) => {
                let start = outer_attr(&m.attrs).unwrap_or_else(|| macro_first(&m.mac));
                let end = m.semi_token.map_or_else(|| macro_last(&m.mac), |s| s.span);
                join(start, end)
            }
            syn::Stmt::Item(item) => item.span(),
        }
    }
}

impl Extent for syn::Local {
    fn extent(&self) -> Span {
        let start = outer_attr(&self.attrs).unwrap_or(self.let_token.span);
        join(start, self.semi_token.span)
    }
}

impl Extent for syn::Block {
    fn extent(&self) -> Span {
        self.brace_token.span.join()
    }
}

impl Extent for syn::Macro {
    fn extent(&self) -> Span {
        join(macro_first(self), macro_last(self))
    }
}

impl Extent for syn::ExprCall {
    fn extent(&self) -> Span {
        let start = outer_attr(&self.attrs).unwrap_or_else(|| first(&self.func));
        join(start, self.paren_token.span.join())
    }
}

impl Extent for syn::ExprMethodCall {
    fn extent(&self) -> Span {
        let start = outer_attr(&self.attrs).unwrap_or_else(|| first(&self.receiver));
        join(start, self.paren_token.span.join())
    }
}

impl<T: Extent + ?Sized> Extent for &T {
    fn extent(&self) -> Span {
        (**self).extent()
    }
}

impl<T: Extent + ?Sized> Extent for Box<T> {
    fn extent(&self) -> Span {
        (**self).extent()
    }
}

/// The first outer attribute's `#`: where a node's printing starts when it has one.
fn outer_attr(attrs: &[Attribute]) -> Option<Span> {
    attrs
        .iter()
        .find(|a| matches!(a.style, AttrStyle::Outer))
        .map(|a| a.pound_token.span)
}

/// The span of a node's first printed token.
fn first(e: &Expr) -> Span {
    let attrs = match e {
        Expr::Verbatim(_) => &[][..],
        // Syn prints an attributed range in parentheses of its own.
        Expr::Range(r) if !r.attrs.is_empty() => return first_token(e),
        _ => attrs_of(e),
    };
    if let Some(span) = outer_attr(attrs) {
        return span;
    }
    match e {
        Expr::Array(x) => x.bracket_token.span.join(),
        Expr::Assign(x) => first(&x.left),
        Expr::Async(x) => x.async_token.span,
        Expr::Await(x) => first(&x.base),
        Expr::Binary(x) => first(&x.left),
        Expr::Block(x) => match &x.label {
            Some(label) => label.name.apostrophe,
            None => x.block.brace_token.span.join(),
        },
        Expr::Break(x) => x.break_token.span,
        Expr::Call(x) => first(&x.func),
        Expr::Cast(x) => first(&x.expr),
        Expr::Closure(x) => {
            let leading = [
                x.lifetimes.as_ref().map(|l| l.for_token.span),
                x.constness.map(|t| t.span),
                x.asyncness.map(|t| t.span),
                x.capture.map(|t| t.span),
            ];
            leading
                .into_iter()
                .flatten()
                .next()
                .unwrap_or(x.inputs_begin.span)
        }
        Expr::Const(x) => x.const_token.span,
        Expr::Continue(x) => x.continue_token.span,
        Expr::Field(x) => first(&x.base),
        Expr::ForLoop(x) => match &x.label {
            Some(label) => label.name.apostrophe,
            None => x.for_token.span,
        },
        Expr::If(x) => x.if_token.span,
        Expr::Index(x) => first(&x.expr),
        Expr::Infer(x) => x.underscore_token.spans[0],
        Expr::Let(x) => x.let_token.span,
        Expr::Lit(x) => x.lit.span(),
        Expr::Loop(x) => match &x.label {
            Some(label) => label.name.apostrophe,
            None => x.loop_token.span,
        },
        Expr::Macro(x) => macro_first(&x.mac),
        Expr::Match(x) => x.match_token.span,
        Expr::MethodCall(x) => first(&x.receiver),
        Expr::Paren(x) => x.paren_token.span.join(),
        Expr::Path(x) if x.qself.is_none() => path_first(&x.path),
        Expr::Range(x) => match &x.start {
            Some(start) => first(start),
            None => match &x.limits {
                syn::RangeLimits::HalfOpen(t) => t.spans[0],
                syn::RangeLimits::Closed(t) => t.spans[0],
            },
        },
        Expr::RawAddr(x) => x.and_token.spans[0],
        Expr::Reference(x) => x.and_token.spans[0],
        Expr::Repeat(x) => x.bracket_token.span.join(),
        Expr::Return(x) => x.return_token.span,
        Expr::Struct(x) if x.qself.is_none() => path_first(&x.path),
        Expr::Try(x) => first(&x.expr),
        Expr::TryBlock(x) => x.try_token.span,
        Expr::Tuple(x) => x.paren_token.span.join(),
        Expr::Unary(x) => match &x.op {
            syn::UnOp::Deref(t) => t.spans[0],
            syn::UnOp::Not(t) => t.spans[0],
            syn::UnOp::Neg(t) => t.spans[0],
            _ => first_token(e),
        },
        Expr::Unsafe(x) => x.unsafe_token.span,
        Expr::While(x) => match &x.label {
            Some(label) => label.name.apostrophe,
            None => x.while_token.span,
        },
        Expr::Yield(x) => x.yield_token.span,
        _ => first_token(e),
    }
}

/// The span of a node's last printed token.
fn last(e: &Expr) -> Span {
    match e {
        Expr::Array(x) => x.bracket_token.span.join(),
        Expr::Assign(x) => last(&x.right),
        Expr::Async(x) => x.block.brace_token.span.join(),
        Expr::Await(x) => x.await_token.span,
        Expr::Binary(x) => last(&x.right),
        Expr::Block(x) => x.block.brace_token.span.join(),
        Expr::Break(x) => match (&x.expr, &x.label) {
            (Some(value), _) => last(value),
            (None, Some(label)) => label.ident.span(),
            (None, None) => x.break_token.span,
        },
        Expr::Call(x) => x.paren_token.span.join(),
        Expr::Cast(x) => last_token(&x.ty),
        // Syn braces a closure body of its own when the closure names its return type.
        Expr::Closure(x)
            if matches!(x.output, syn::ReturnType::Default)
                || matches!(&*x.body, Expr::Block(b) if b.attrs.is_empty() && b.label.is_none()) =>
        {
            last(&x.body)
        }
        Expr::Const(x) => x.block.brace_token.span.join(),
        Expr::Continue(x) => match &x.label {
            Some(label) => label.ident.span(),
            None => x.continue_token.span,
        },
        Expr::Field(x) => match &x.member {
            syn::Member::Named(ident) => ident.span(),
            syn::Member::Unnamed(index) => index.span,
        },
        Expr::ForLoop(x) => x.body.brace_token.span.join(),
        Expr::If(x) => match x.else_branch.as_ref().map(|(_, e)| &**e) {
            Some(otherwise @ (Expr::If(_) | Expr::Block(_))) => last(otherwise),
            Some(_) => last_token(e),
            None => x.then_branch.brace_token.span.join(),
        },
        Expr::Index(x) => x.bracket_token.span.join(),
        Expr::Infer(x) => x.underscore_token.spans[0],
        Expr::Let(x) => last(&x.expr),
        Expr::Lit(x) => x.lit.span(),
        Expr::Loop(x) => x.body.brace_token.span.join(),
        Expr::Macro(x) => macro_last(&x.mac),
        Expr::Match(x) => x.brace_token.span.join(),
        Expr::MethodCall(x) => x.paren_token.span.join(),
        Expr::Paren(x) => x.paren_token.span.join(),
        Expr::Path(x) => path_last(&x.path).unwrap_or_else(|| last_token(e)),
        Expr::Range(x) if x.attrs.is_empty() => match (&x.end, &x.limits) {
            (Some(end), _) => last(end),
            (None, syn::RangeLimits::HalfOpen(t)) => t.spans[1],
            (None, syn::RangeLimits::Closed(t)) => t.spans[2],
        },
        Expr::RawAddr(x) => last(&x.expr),
        Expr::Reference(x) => last(&x.expr),
        Expr::Repeat(x) => x.bracket_token.span.join(),
        Expr::Return(x) => match &x.expr {
            Some(value) => last(value),
            None => x.return_token.span,
        },
        Expr::Struct(x) => x.brace_token.span.join(),
        Expr::Try(x) => x.question_token.spans[0],
        Expr::TryBlock(x) => x.block.brace_token.span.join(),
        Expr::Tuple(x) => x.paren_token.span.join(),
        Expr::Unary(x) => last(&x.expr),
        Expr::Unsafe(x) => x.block.brace_token.span.join(),
        Expr::While(x) => x.body.brace_token.span.join(),
        Expr::Yield(x) => match &x.expr {
            Some(value) => last(value),
            None => x.yield_token.span,
        },
        _ => last_token(e),
    }
}

fn attrs_of(e: &Expr) -> &[Attribute] {
    match e {
        Expr::Array(x) => &x.attrs,
        Expr::Assign(x) => &x.attrs,
        Expr::Async(x) => &x.attrs,
        Expr::Await(x) => &x.attrs,
        Expr::Binary(x) => &x.attrs,
        Expr::Block(x) => &x.attrs,
        Expr::Break(x) => &x.attrs,
        Expr::Call(x) => &x.attrs,
        Expr::Cast(x) => &x.attrs,
        Expr::Closure(x) => &x.attrs,
        Expr::Const(x) => &x.attrs,
        Expr::Continue(x) => &x.attrs,
        Expr::Field(x) => &x.attrs,
        Expr::ForLoop(x) => &x.attrs,
        Expr::Group(x) => &x.attrs,
        Expr::If(x) => &x.attrs,
        Expr::Index(x) => &x.attrs,
        Expr::Infer(x) => &x.attrs,
        Expr::Let(x) => &x.attrs,
        Expr::Lit(x) => &x.attrs,
        Expr::Loop(x) => &x.attrs,
        Expr::Macro(x) => &x.attrs,
        Expr::Match(x) => &x.attrs,
        Expr::MethodCall(x) => &x.attrs,
        Expr::Paren(x) => &x.attrs,
        Expr::Path(x) => &x.attrs,
        Expr::Range(x) => &x.attrs,
        Expr::RawAddr(x) => &x.attrs,
        Expr::Reference(x) => &x.attrs,
        Expr::Repeat(x) => &x.attrs,
        Expr::Return(x) => &x.attrs,
        Expr::Struct(x) => &x.attrs,
        Expr::Try(x) => &x.attrs,
        Expr::TryBlock(x) => &x.attrs,
        Expr::Tuple(x) => &x.attrs,
        Expr::Unary(x) => &x.attrs,
        Expr::Unsafe(x) => &x.attrs,
        Expr::While(x) => &x.attrs,
        Expr::Yield(x) => &x.attrs,
        _ => &[],
    }
}

fn path_first(path: &syn::Path) -> Span {
    match (&path.leading_colon, path.segments.first()) {
        (Some(colons), _) => colons.spans[0],
        (None, Some(segment)) => segment.ident.span(),
        (None, None) => path.span(),
    }
}

/// The last token of a path: its last segment's name or `>`; `None` for the rare rest (`Fn(A)
/// -> B` arguments, a trailing `::`), left to printing.
fn path_last(path: &syn::Path) -> Option<Span> {
    if path.segments.trailing_punct() {
        return None;
    }
    let segment = path.segments.last()?;
    match &segment.arguments {
        syn::PathArguments::None => Some(segment.ident.span()),
        syn::PathArguments::AngleBracketed(a) => Some(a.gt_token.spans[0]),
        syn::PathArguments::Parenthesized(_) => None,
    }
}

fn macro_first(m: &syn::Macro) -> Span {
    path_first(&m.path)
}

fn macro_last(m: &syn::Macro) -> Span {
    match &m.delimiter {
        syn::MacroDelimiter::Paren(p) => p.span.join(),
        syn::MacroDelimiter::Brace(b) => b.span.join(),
        syn::MacroDelimiter::Bracket(b) => b.span.join(),
    }
}

/// The first token's span, by printing (the rare cases).
fn first_token(node: &impl ToTokens) -> Span {
    node.to_token_stream()
        .into_iter()
        .next()
        .map_or_else(Span::call_site, |t| t.span())
}

/// The last token's span, by printing (the rare cases).
fn last_token(node: &impl ToTokens) -> Span {
    node.to_token_stream()
        .into_iter()
        .last()
        .map_or_else(Span::call_site, |t| t.span())
}

#[cfg(test)]
mod tests {
    use super::*;
    use syn::visit::Visit;

    /// Every expression, statement, `let`, block, macro and call of `source` has the extent syn's
    /// printing gives it.
    fn check(source: &str) {
        struct V(usize);
        fn same(what: &str, fast: Span, slow: Span) {
            let key = |s: Span| (s.start(), s.end());
            assert_eq!(key(fast), key(slow), "{what}: {:?}", slow.source_text());
        }
        impl<'ast> Visit<'ast> for V {
            fn visit_expr(&mut self, e: &'ast Expr) {
                self.0 += 1;
                same("expr", e.extent(), e.span());
                match e {
                    Expr::Call(c) => same("call", c.extent(), c.span()),
                    Expr::MethodCall(m) => same("method call", m.extent(), m.span()),
                    _ => {}
                }
                syn::visit::visit_expr(self, e);
            }
            fn visit_stmt(&mut self, s: &'ast syn::Stmt) {
                same("stmt", s.extent(), s.span());
                syn::visit::visit_stmt(self, s);
            }
            fn visit_local(&mut self, l: &'ast syn::Local) {
                same("let", l.extent(), l.span());
                syn::visit::visit_local(self, l);
            }
            fn visit_block(&mut self, b: &'ast syn::Block) {
                same("block", b.extent(), b.span());
                syn::visit::visit_block(self, b);
            }
            fn visit_macro(&mut self, m: &'ast syn::Macro) {
                same("macro", m.extent(), m.span());
            }
        }
        let file = syn::parse_file(source).expect("parses");
        let mut v = V(0);
        v.visit_file(&file);
        assert!(v.0 > 0, "no expression in {source}");
    }

    #[test]
    fn every_kind_of_expression() {
        check(
            r#"
            fn f() {
                #[mheta::iterate]
                for it in 0..n { 'outer: loop { break 'outer; } }
                let x: Vec<f64> = vec![0.0; n];
                let y = <T as Tr>::f(a)?.b.0[i] as u64;
                let z = a..=b; let w = ..; let v = x..; let r = &mut *p;
                let c = move |a: u8| -> u8 { a + 1 };
                let d = |a| a * 2; let e = async move { 1 }.await;
                m!(a, b); m! { a } ;
                if a { b } else if c { d } else { e }
                match x { Some(y) if y > 0 => y, _ => 0 }
                while let Some(v) = it.next() { continue; }
                S { a: 1, ..Default::default() };;
                [1, 2, 3]; (1, 2); -x; !y; return x; break 'a v;
                unsafe { f() }; const { 3 }; 'b: { 1 };
                x = f::<u8>(1) + g(2).h(3);
                std::mem::swap(&mut a, &mut b);
                let () = #[allow(unused)] { () };
                let g = #[cfg(a)] 0..1;
                let h = |x| -> u8 { x }; let k = || -> Vec<u8> { vec![] }.len();
                let q = a as Vec<u8>; let t = a as fn(u8) -> u8; let u = a as dyn Fn(u8);
                let p = std::ops::Range::<u8> { start: 0, end: 1 };
            }
            "#,
        );
    }

    #[test]
    fn the_analysis_fixtures() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/analysis");
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("readable");
                if syn::parse_file(&text).is_ok() {
                    check(&text);
                }
            }
        }
    }
}
