//! Small questions about syntax nodes that several passes ask, and helpers over syn trees that
//! know nothing of the analysis: the variable at the base of a place, casts, calls,
//! identifiers, and the arguments of function-like macros (parsed once per analysis,
//! [`with_parsed_macros`]). They use no other module of the analyzer but `hash` (which uses
//! none), so no import circle runs through them (`tests/imports.rs`).

use crate::hash::{HashMap, HashSet};
use std::cell::RefCell;
use std::rc::Rc;

use syn::visit::Visit;

/// Syntax inside a `Debug` impl, shown as its tokens: syn's own `Debug` (its feature
/// `extra-traits`) is not compiled, which saves every program that uses `#[mheta::solver]` a
/// fifth of syn's build.
pub struct Code<'a, T>(pub &'a T);

impl<T: quote::ToTokens> std::fmt::Debug for Code<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`", self.0.to_token_stream())
    }
}

/// A list of syntax nodes inside a `Debug` impl, each shown as its tokens.
pub fn codes<T>(nodes: &[T]) -> Vec<Code<'_, T>> {
    nodes.iter().map(Code).collect()
}

/// The last path segment of a type (`Grid` for `crate::grid::Grid<T>`), or its tokens.
pub fn type_name(ty: &syn::Type) -> String {
    match ty {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        syn::Type::Reference(r) => type_name(&r.elem),
        other => quote::quote!(#other).to_string(),
    }
}

/// Macros whose arguments are plain expressions (never communication).
#[rustfmt::skip]
const KNOWN_MACROS: &[&str] = &[
    "println", "print", "eprintln", "eprint", "format", "write", "writeln", "assert", "assert_eq", "assert_ne",
    "debug_assert", "debug_assert_eq", "debug_assert_ne", "vec", "panic", "unreachable", "todo", "unimplemented",
    "dbg", "format_args", "matches", "info", "debug", "warn", "error", "trace", "concat", "stringify", "env",
    "include_str", "include_bytes", "line", "file", "column", "cfg", "compile_error", "anyhow", "bail", "ensure",
    // ndarray's slicing and literal macros.
    "s", "array",
];

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
                Name::of(&m.method).as_str(),
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

/// The value of an integer or float literal, casts and parentheses aside (`10`, `2.5`,
/// `(4 as f64)`).
pub fn number(e: &syn::Expr) -> Option<f64> {
    match strip_casts(e) {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i.base10_parse::<u64>().ok().map(|v| v as f64),
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Float(f),
            ..
        }) => f.base10_parse::<f64>().ok(),
        _ => None,
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

/// The identifiers of an expression (`u[(i - 1) * n]` → `[u, i, n]`): the words [`idents_of`]
/// finds in the printed expression, keywords and `_` aside (those in macro arguments stay), read
/// off the tree without printing it. The tests hold the two sets equal on every expression of
/// the analysis fixtures.
pub fn expr_idents(e: &syn::Expr) -> Vec<String> {
    /// Pushes `i`'s words: a raw `r#type` prints as `r#type`, which [`idents_of`] splits.
    fn ident(i: &proc_macro2::Ident, out: &mut Vec<String>) {
        let text = i.to_string();
        if text.starts_with("r#") {
            out.extend(idents_of(&text));
        } else {
            out.push(text);
        }
    }
    fn tokens(stream: proc_macro2::TokenStream, out: &mut Vec<String>) {
        for t in stream {
            match t {
                proc_macro2::TokenTree::Ident(i) => ident(&i, out),
                proc_macro2::TokenTree::Group(g) => tokens(g.stream(), out),
                proc_macro2::TokenTree::Literal(l) => out.extend(idents_of(&l.to_string())),
                proc_macro2::TokenTree::Punct(_) => {}
            }
        }
    }
    struct Idents(Vec<String>);
    impl<'ast> Visit<'ast> for Idents {
        fn visit_ident(&mut self, i: &'ast proc_macro2::Ident) {
            ident(i, &mut self.0);
        }
        fn visit_lit(&mut self, l: &'ast syn::Lit) {
            // A number prints as words that start with a digit (`1_000usize`, `2.5e-3f64`):
            // none is an identifier.
            if matches!(l, syn::Lit::Int(_) | syn::Lit::Float(_)) {
                return;
            }
            let text = quote::ToTokens::to_token_stream(l).to_string();
            self.0.extend(idents_of(&text));
        }
        // A macro's, an attribute's or a verbatim expression's tokens.
        fn visit_token_stream(&mut self, t: &'ast proc_macro2::TokenStream) {
            tokens(t.clone(), &mut self.0);
        }
    }
    let mut v = Idents(Vec::new());
    v.visit_expr(e);
    v.0
}

/// An identifier's text, for comparing and looking up, without a heap allocation for the short
/// names code is made of (`Name::of(&m.method)` where `m.method.to_string()` allocated).
pub struct Name {
    len: usize,
    short: [u8; Name::SHORT],
    long: Option<String>,
}

impl Name {
    const SHORT: usize = 40;

    /// The text of `ident` (a raw identifier keeps its `r#`, as `to_string` gives it).
    pub fn of(ident: &proc_macro2::Ident) -> Name {
        use std::fmt::Write;
        let mut name = Name::new("");
        // Writing to a `Name` does not fail.
        let _ = write!(name, "{ident}");
        name
    }

    /// A name of the given text.
    pub fn new(text: &str) -> Name {
        use std::fmt::Write;
        let mut name = Name {
            len: 0,
            short: [0; Name::SHORT],
            long: None,
        };
        let _ = name.write_str(text);
        name
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.long {
            Some(long) => long,
            // SAFETY: `write_str` copies in only whole `&str`s, one after another, so the
            // first `len` bytes are UTF-8. (Checking them on every call was a percent of an
            // analysis.)
            None => unsafe { std::str::from_utf8_unchecked(&self.short[..self.len]) },
        }
    }
}

impl std::fmt::Write for Name {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        match &mut self.long {
            Some(long) => long.push_str(s),
            None if self.len + s.len() <= Name::SHORT => {
                self.short[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
                self.len += s.len();
            }
            None => {
                let mut long = String::with_capacity(self.len + s.len());
                long.push_str(self.as_str());
                long.push_str(s);
                self.long = Some(long);
            }
        }
        Ok(())
    }
}

impl std::ops::Deref for Name {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Name {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Name {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// The identifiers of a path's segments (`mpi::point_to_point::send` → `[mpi, point_to_point,
/// send]`).
pub fn path_idents(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// Whether `segments` (a call's path) name MPI's start: `mpi::initialize`,
/// `initialize_with_threading`, alone or under `mpi::`.
pub fn starts_mpi<S: AsRef<str>>(segments: &[S]) -> bool {
    match segments {
        [.., last] => {
            matches!(last.as_ref(), "initialize" | "initialize_with_threading")
                && (segments.len() == 1 || segments[0].as_ref() == "mpi")
        }
        [] => false,
    }
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
        if let Ok(e) = vec_elements.parse2(tokens.clone()) {
            return Rc::new([e]);
        }
    }
    syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated
        .parse2(tokens)
        .map(|p| p.into_iter().collect())
        .unwrap_or_else(|_| Rc::from(Vec::new()))
}

/// A `vec!` macro's tokens as the array expression they stand for: `x; n` as `[x; n]`, `a, b`
/// as `[a, b]`. Read in place: wrapping the tokens in brackets to parse them as an expression
/// copied every token and cost twice the parse.
fn vec_elements(input: syn::parse::ParseStream<'_>) -> syn::Result<syn::Expr> {
    let bracket_token = syn::token::Bracket::default();
    let mut elems = syn::punctuated::Punctuated::new();
    if !input.is_empty() {
        let first: syn::Expr = input.parse()?;
        if input.peek(syn::Token![;]) {
            return Ok(syn::Expr::Repeat(syn::ExprRepeat {
                attrs: Vec::new(),
                bracket_token,
                expr: Box::new(first),
                semi_token: input.parse()?,
                len: Box::new(input.parse()?),
            }));
        }
        elems.push_value(first);
        while !input.is_empty() {
            elems.push_punct(input.parse()?);
            if input.is_empty() {
                break;
            }
            elems.push_value(input.parse()?);
        }
    }
    Ok(syn::Expr::Array(syn::ExprArray {
        attrs: Vec::new(),
        bracket_token,
        elems,
    }))
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

/// Runs `f` with [`macro_args`] parsing each macro of `blocks` (the program's function bodies)
/// once. The blocks must not change while `f` runs (they are borrowed for it).
pub fn with_parsed_macros<'a, R>(
    blocks: impl IntoIterator<Item = &'a syn::Block>,
    f: impl FnOnce() -> R,
) -> R {
    /// Drops the memo however `f` ends, so no later analysis sees its addresses.
    struct Reset(Option<MacroMemo>);
    impl Drop for Reset {
        fn drop(&mut self) {
            let previous = self.0.take();
            PARSED_MACROS.with(|memo| *memo.borrow_mut() = previous);
        }
    }
    let mut memo = MacroMemo::default();
    for block in blocks {
        memo.own(|v| v.visit_block(block));
    }
    let previous = PARSED_MACROS.with(|m| m.borrow_mut().replace(memo));
    let _reset = Reset(previous);
    f()
}

/// A signature's parameters other than its receiver, in order.
pub fn typed_params(sig: &syn::Signature) -> Vec<&syn::PatType> {
    sig.inputs
        .iter()
        .filter_map(|i| match i {
            syn::FnArg::Typed(t) => Some(t),
            syn::FnArg::Receiver(_) => None,
        })
        .collect()
}

/// Whether a parameter's type is a closure: `&mut dyn FnMut(..)`, `impl Fn(..)`, `Box<dyn
/// Fn(..)>`, a type parameter bounded by one of the `Fn` traits, or a type alias among
/// `aliases` (the program's aliases of closure types).
pub fn is_closure_type(
    ty: &syn::Type,
    generics: &syn::Generics,
    aliases: &crate::hash::HashSet<String>,
) -> bool {
    let fn_bound = |b: &syn::TypeParamBound| match b {
        syn::TypeParamBound::Trait(t) => t
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Fn" || s.ident == "FnMut" || s.ident == "FnOnce"),
        _ => false,
    };
    match ty {
        syn::Type::Reference(r) => is_closure_type(&r.elem, generics, aliases),
        syn::Type::Paren(p) => is_closure_type(&p.elem, generics, aliases),
        syn::Type::TraitObject(t) => t.bounds.iter().any(fn_bound),
        syn::Type::ImplTrait(t) => t.bounds.iter().any(fn_bound),
        syn::Type::Path(p) => {
            let Some(last) = p.path.segments.last() else {
                return false;
            };
            if last.ident == "Box" {
                if let syn::PathArguments::AngleBracketed(a) = &last.arguments {
                    if let Some(syn::GenericArgument::Type(inner)) = a.args.first() {
                        return is_closure_type(inner, generics, aliases);
                    }
                }
            }
            if aliases.contains(last.ident.to_string().as_str()) {
                return true;
            }
            let Some(name) = p.path.get_ident() else {
                return false;
            };
            let bounded = generics.params.iter().any(|g| {
                matches!(g, syn::GenericParam::Type(t) if t.ident == *name && t.bounds.iter().any(fn_bound))
            });
            bounded
                || generics.where_clause.as_ref().is_some_and(|w| {
                    w.predicates.iter().any(|pr| match pr {
                        syn::WherePredicate::Type(pt) => {
                            matches!(&pt.bounded_ty, syn::Type::Path(b) if b.path.is_ident(name))
                                && pt.bounds.iter().any(fn_bound)
                        }
                        _ => false,
                    })
                })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `vec!` reads as the array it builds, as `syn` parses `[..]`: a repeat, a list (with or
    /// without a trailing comma), an empty list; tokens that are no array are no expression.
    #[test]
    fn a_vec_macro_reads_as_its_array() {
        let args = |src: &str| {
            let m: syn::Macro = syn::parse_str(src).expect("a macro");
            parse_macro_args(&m)
        };
        let printed = |e: &syn::Expr| quote::quote!(#e).to_string();
        for (src, array) in [
            ("vec![0.0f64; n * size]", "[0.0f64 ; n * size]"),
            ("vec![a, b.len(), c]", "[a , b . len () , c]"),
            ("vec![a, b,]", "[a , b ,]"),
            ("vec![]", "[]"),
        ] {
            let parsed = args(src);
            assert_eq!(parsed.len(), 1, "{src}");
            assert_eq!(printed(&parsed[0]), array, "{src}");
            let whole: syn::Expr = syn::parse_str(array).expect("an array");
            assert_eq!(
                printed(&parsed[0]),
                printed(&whole),
                "{src} parses as {array} does"
            );
            assert_eq!(
                matches!(parsed[0], syn::Expr::Repeat(_)),
                matches!(whole, syn::Expr::Repeat(_)),
                "{src}"
            );
        }
        // Not an array: read as a list of expressions where it is one, else nothing.
        assert_eq!(args("vec![a; b; c]").len(), 0);
    }

    #[rustfmt::skip]
    const KEYWORDS: &[&str] = &[
        "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
        "false", "fn", "for", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut", "pub",
        "ref", "return", "static", "struct", "super", "trait", "true", "type", "unsafe", "use",
        "where", "while", "_",
    ];

    /// `expr_idents` finds the words `idents_of` finds in the printed expression, keywords
    /// aside, for every expression of `source`.
    fn check(source: &str) -> usize {
        struct V(usize);
        impl<'ast> Visit<'ast> for V {
            fn visit_expr(&mut self, e: &'ast syn::Expr) {
                self.0 += 1;
                let words = |v: Vec<String>| {
                    v.into_iter()
                        .filter(|w| !KEYWORDS.contains(&w.as_str()))
                        .collect::<std::collections::BTreeSet<_>>()
                };
                let printed = words(idents_of(&quote::quote!(#e).to_string()));
                assert_eq!(words(expr_idents(e)), printed, "{}", quote::quote!(#e));
                syn::visit::visit_expr(self, e);
            }
        }
        let file = syn::parse_file(source).expect("parses");
        let mut v = V(0);
        v.visit_file(&file);
        v.0
    }

    #[test]
    fn a_name_is_the_identifiers_text() {
        let long = "a_name_longer_than_the_forty_bytes_kept_inline_by_name";
        for text in [
            "x",
            "all_reduce_into",
            "r#type",
            long,
            &long[..40],
            &long[..41],
        ] {
            let ident: proc_macro2::Ident = syn::parse_str(text).expect("an identifier");
            let name = Name::of(&ident);
            assert_eq!(name.as_str(), ident.to_string());
            assert!(name == text && *name == *text);
        }
    }

    #[test]
    fn expr_idents_are_the_printed_expressions_idents() {
        let n = check(
            r##"
            fn f() {
                let y = <T as Tr>::f(a)?.b.0[i] as u64;
                u[(i - 1) * cols + j] = r#type + b"x"[0] as f64 + 1e-3 + 2usize as f64;
                let c = move |a: u8| -> u8 { a + 1 };
                m!(a, "b c", 'd'); vec![0.0f64; n]; s.field.1;
                let g = #[cfg(feature = "x")] 0..1; let l = 'a: loop { break 'a 'c'; };
                S { a: 1, ..Default::default() }; std::mem::swap(&mut a, &mut b);
                let k = 0xFF_u8 + 0o17 + 0b1010i64 + 1_000usize + 2.5e+10f32 + 1. + 3E5 + 7f64;
            }
            "##,
        );
        assert!(n > 20);
    }

    #[test]
    fn expr_idents_on_the_analysis_fixtures() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/analysis");
        let mut n = 0;
        for entry in std::fs::read_dir(dir).expect("fixtures") {
            let path = entry.expect("entry").path();
            if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("readable");
                if syn::parse_file(&text).is_ok() {
                    n += check(&text);
                }
            }
        }
        assert!(n > 1000, "{n} expressions");
    }
}
