//! Peers computed by a small user function of the rank.
//!
//! Codes that keep their layout in a struct name their neighbours through it:
//!
//! ```text
//! fn neighbour(&self, d: i32) -> i32 { (self.rank + d + self.procs) % self.procs }
//! let left = world.process_at_rank(self.neighbour(-1));
//! ```
//!
//! Written so, the peer `self.neighbour(-1)` names no rank, and the event reads as an arbitrary
//! point-to-point one. A function or method whose body is `let`s and one value is expanded in
//! the peer text with its arguments in place of its parameters (`(self.rank + (-1) +
//! self.procs) % self.procs`), so the participants show the rank arithmetic it does; the
//! `let`s are put into the value. Only a name with one such definition in the program is
//! expanded, and only in peers and in the glue definitions peers are read through (`let up =
//! g.neighbour(1)` is glue, as `let up = rank + 1` is).

use crate::diagnostics::Loc;
use crate::extent::Extent;
use crate::ir::Node;
use crate::load::Program;

/// Expands user-function calls in the peers of every call in `nodes`.
pub(super) fn expand_all(program: &Program, nodes: &mut [Node]) {
    for node in nodes {
        node.each_stmt_mut(&mut |s| {
            for call in &mut s.calls {
                for peer in &mut call.peers {
                    if let Some(expanded) = expand(program, peer) {
                        *peer = expanded;
                    }
                }
            }
        });
    }
}

/// The glue definition of `let name = e` when `e` calls a small user function (see [`called`])
/// whose expansion is glue (`let up = g.neighbour(1)`): the expansion, which peers named `name` read.
pub(super) fn glue_def(
    program: &Program,
    e: &syn::Expr,
    text: &crate::binding::Text<'_>,
) -> Option<String> {
    // Most `let`s call no such function: their text is not even looked at. Glue arguments put
    // into a glue body make glue, so the expansion need not be parsed to be judged.
    let (f, body) = called(program, e)?;
    let glue = f.block.stmts[..f.block.stmts.len() - 1]
        .iter()
        .filter_map(single_let)
        .all(|(_, init)| crate::scan::is_glue(init))
        && crate::scan::is_glue(body)
        && call_parts(e)?.1.iter().all(crate::scan::is_glue);
    if !glue {
        return None;
    }
    expand_call(program, e, &|arg| Some(text.of(arg)))
}

/// The receiver (of a method call) and the arguments of a call.
fn call_parts(
    call: &syn::Expr,
) -> Option<(
    Option<&syn::Expr>,
    &syn::punctuated::Punctuated<syn::Expr, syn::Token![,]>,
)> {
    match crate::syntax::strip_casts(call) {
        syn::Expr::MethodCall(m) => Some((Some(&*m.receiver), &m.args)),
        syn::Expr::Call(c) => Some((None, &c.args)),
        _ => None,
    }
}

/// The function `e` calls when its body is `let`s of plain names and one value, the only
/// definition of its name (a cheap test before any printing).
fn called<'p>(
    program: &'p Program,
    e: &syn::Expr,
) -> Option<(&'p crate::load::Function, &'p syn::Expr)> {
    let name = match crate::syntax::strip_casts(e) {
        syn::Expr::MethodCall(m) => &m.method,
        syn::Expr::Call(c) => match &*c.func {
            syn::Expr::Path(p) => &p.path.segments.last()?.ident,
            _ => return None,
        },
        _ => return None,
    };
    let [index] = program
        .by_name
        .get(crate::syntax::Name::of(name).as_str())?
        .as_slice()
    else {
        return None;
    };
    let f = &program.functions[*index];
    let (tail, lets) = f.block.stmts.split_last()?;
    let syn::Stmt::Expr(body, None) = tail else {
        return None;
    };
    lets.iter()
        .all(|s| single_let(s).is_some())
        .then_some((f, body))
}

/// `let name = init;` with a plain name (perhaps typed): the name and the initialiser.
fn single_let(s: &syn::Stmt) -> Option<(&syn::Ident, &syn::Expr)> {
    let syn::Stmt::Local(l) = s else { return None };
    let pat = match &l.pat {
        syn::Pat::Type(t) => &*t.pat,
        p => p,
    };
    let syn::Pat::Ident(i) = pat else { return None };
    let init = l.init.as_ref().filter(|i| i.diverge.is_none())?;
    (i.subpat.is_none()).then_some((&i.ident, &*init.expr))
}

/// `peer` with its call of a one-expression user function replaced by that expression as
/// written, its parameters by the arguments as written (in parentheses unless a name, field or
/// literal) and `self` by the call's receiver, when it is such a call.
fn expand(program: &Program, peer: &str) -> Option<String> {
    // Most peers are plain names and arithmetic: nothing to parse.
    if !peer.contains('(') {
        return None;
    }
    let call = syn::parse_str::<syn::Expr>(peer).ok()?;
    expand_call(program, &call, &|arg| written(peer, arg))
}

/// [`expand`] of a parsed call, `text` giving each argument's (and the receiver's) text.
fn expand_call(
    program: &Program,
    call: &syn::Expr,
    text: &dyn Fn(&syn::Expr) -> Option<String>,
) -> Option<String> {
    let (f, body) = called(program, call)?;
    let (receiver, args) = call_parts(call)?;
    let mut params = vec![];
    let mut has_self = false;
    for input in &f.sig.inputs {
        match input {
            syn::FnArg::Receiver(_) => has_self = true,
            syn::FnArg::Typed(t) => match &*t.pat {
                syn::Pat::Ident(i) => params.push(i.ident.to_string()),
                _ => return None,
            },
        }
    }
    if params.len() != args.len() || has_self != receiver.is_some() {
        return None;
    }
    // The texts to put in: each argument as written in the peer, `self` as the receiver.
    let mut values: Vec<(String, String)> = Vec::with_capacity(params.len() + 1);
    for (param, arg) in params.into_iter().zip(args) {
        let text = text(arg)?;
        let simple = matches!(
            arg,
            syn::Expr::Path(_) | syn::Expr::Lit(_) | syn::Expr::Field(_)
        );
        values.push((param, if simple { text } else { format!("({text})") }));
    }
    if let Some(r) = receiver {
        values.push(("self".into(), text(r)?));
    }
    // `let`s before the value are put into what follows them, in order.
    let source = |e: &syn::Expr| program.sources.snippet(Loc::of(f.file, e.extent()));
    for stmt in &f.block.stmts[..f.block.stmts.len() - 1] {
        let (name, init) = single_let(stmt)?;
        let (name, text) = (
            name.to_string(),
            format!("({})", replace_words(&source(init)?, &values)),
        );
        values.retain(|(k, _)| *k != name);
        values.push((name, text));
    }
    Some(replace_words(&source(body)?, &values))
}

/// The text of `node` inside `text`, which it was parsed from (one line: peers are collapsed).
fn written(text: &str, node: &syn::Expr) -> Option<String> {
    let span = node.extent();
    let (start, end) = (span.start(), span.end());
    if start.line != 1 || end.line != 1 {
        return None;
    }
    let byte = |column: usize| {
        text.char_indices()
            .map(|(b, _)| b)
            .chain(std::iter::once(text.len()))
            .nth(column)
    };
    text.get(byte(start.column)?..byte(end.column)?)
        .map(str::to_string)
}

/// `text` with every whole word that is a key of `values` replaced by its value (`d` in `self.d`
/// is a field, not the parameter: words after a `.` are kept).
fn replace_words(text: &str, values: &[(String, String)]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(|c: char| c.is_alphanumeric() || c == '_') {
        out.push_str(&rest[..at]);
        let word_len = rest[at..]
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len() - at);
        let word = &rest[at..at + word_len];
        let after_dot = out.trim_end().ends_with('.');
        match values.iter().find(|(k, _)| k == word) {
            Some((_, v)) if !after_dot => out.push_str(v),
            _ => out.push_str(word),
        }
        rest = &rest[at + word_len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    /// The participants of the only event of `src`.
    fn participants(src: &str) -> String {
        let analysis = crate::analyze_source("t.rs", src, &crate::Options::default());
        let text = crate::emit::render(&analysis.structure, crate::emit::Format::Text);
        let line = text
            .lines()
            .find(|l| l.contains("comm event 0"))
            .unwrap_or_else(|| panic!("no event: {text}"));
        line.to_string()
    }

    const PROGRAM: &str = "use mpi::traits::*;\nuse mpi::point_to_point as p2p;\n\
        struct Grid { rank: i32, procs: i32 }\n\
        impl Grid {\n fn neighbour(&self, d: i32) -> i32 { (self.rank + d + self.procs) % self.procs }\n}\n\
        fn wrap(r: i32, p: i32) -> i32 { (r + p) % p }\n\
        fn main() {\n let universe = mpi::initialize().unwrap();\n let world = universe.world();\n \
        let g = Grid { rank: world.rank(), procs: world.size() };\n let rank = world.rank();\n \
        let size = world.size();\n let mut u = vec![0.0f64; 34];\n let mut v = u.clone();\n \
        for _ in 0..100 {\n EXCHANGE\n for i in 1..33 { v[i] = 0.5 * (u[i - 1] + u[i + 1]); }\n \
        std::mem::swap(&mut u, &mut v);\n }\n}\n";

    #[test]
    fn a_peer_from_a_one_expression_method_shows_its_rank_arithmetic() {
        let exchange = "let left = world.process_at_rank(g.neighbour(-1)); \
            let right = world.process_at_rank(g.neighbour(1)); \
            let (a, b) = (u[32], u[1]); \
            p2p::send_receive_into(&a, &right, &mut u[0], &left); \
            p2p::send_receive_into(&b, &left, &mut u[33], &right);";
        let line = participants(&PROGRAM.replace("EXCHANGE", exchange));
        assert!(line.contains("nearest_neighbor"), "{line}");
        assert!(
            line.contains("(g.rank + 1 + g.procs) % g.procs")
                && line.contains("(g.rank + (-1) + g.procs) % g.procs"),
            "{line}"
        );
    }

    #[test]
    fn a_peer_from_a_one_expression_function() {
        let exchange = "world.process_at_rank(wrap(rank + 1, size)).send(&u[32]); \
            world.process_at_rank(wrap(rank - 1, size)).receive_into(&mut u[0]);";
        let line = participants(&PROGRAM.replace("EXCHANGE", exchange));
        assert!(line.contains("nearest_neighbor"), "{line}");
        assert!(line.contains("((rank + 1) + size) % size"), "{line}");
    }

    #[test]
    fn a_glue_variable_bound_by_a_one_expression_method() {
        let exchange = "let up = g.neighbour(1); let down = g.neighbour(-1); \
            world.process_at_rank(up).send(&u[32]); \
            world.process_at_rank(down).receive_into(&mut u[0]);";
        let src = PROGRAM.replace("EXCHANGE", exchange);
        let line = participants(&src);
        assert!(line.contains("nearest_neighbor"), "{line}");
        assert!(line.contains("(g.rank + 1 + g.procs) % g.procs"), "{line}");
        // The two `let`s are glue of the event, not a stage of their own.
        let analysis = crate::analyze_source("t.rs", &src, &crate::Options::default());
        let text = crate::emit::render(&analysis.structure, crate::emit::Format::Text);
        assert!(!text.contains("writes [up, down]"), "{text}");
    }

    /// `let`s before the value are put into it.
    #[test]
    fn lets_before_the_value_are_put_into_it() {
        let lets = PROGRAM.replace(
            "{ (r + p) % p }",
            "{ let s: i32 = r + p; let t = s % p; t }",
        );
        let exchange = "world.process_at_rank(wrap(rank + 1, size)).send(&u[32]);";
        let line = participants(&lets.replace("EXCHANGE", exchange));
        assert!(line.contains("[(((rank + 1) + size) % size)]"), "{line}");
    }

    /// A name defined twice, or a body with anything but `let`s before its value, is left as
    /// written.
    #[test]
    fn ambiguous_or_longer_functions_are_not_expanded() {
        let twice = PROGRAM.replace(
            "fn wrap(",
            "struct Other;\nimpl Other { fn neighbour(&self, d: i32) -> i32 { d } }\nfn wrap(",
        );
        let exchange = "world.process_at_rank(g.neighbour(1)).send(&u[32]);";
        let line = participants(&twice.replace("EXCHANGE", exchange));
        assert!(line.contains("[g.neighbour(1)]"), "{line}");
        let longer = PROGRAM.replace("{ (r + p) % p }", "{ let s = (r + p) % p; println!(); s }");
        let exchange = "world.process_at_rank(wrap(rank + 1, size)).send(&u[32]);";
        let line = participants(&longer.replace("EXCHANGE", exchange));
        assert!(line.contains("[wrap(rank + 1, size)]"), "{line}");
    }
}
