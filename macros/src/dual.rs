//! The solver's body, twice: `if hooks_active() { instrumented } else { plain }`.
//!
//! A disabled guard is one relaxed load and a rarely taken call, but that call is enough to cost
//! the kernel: a call clobbers every floating-point register (SysV), so an `f64` accumulator that
//! is live across a guard's open or drop is kept on the stack instead of in a register (measured:
//! 1.87x on the `heat` benchmark). The plain copy holds no guard but the main loop's iteration
//! guard, whose one call per trip is negligible and which the runtime's `--timings` mode records
//! in otherwise untouched runs. The choice is made once per call, from
//! `::mheta::__private::hooks_active()` (some rank of the process has hooks that time regions or
//! emulate a slower CPU). A rank's hooks are installed before its program runs and removed after
//! it returns, so on a rank whose hooks need the guards the flag is true for the whole call; a
//! rank without such hooks may take either copy, and its guards do nothing in the instrumented
//! one.
//!
//! Duplicating an expression tree is sound for everything an expression can hold: labels live
//! in their own copy, `return` and `?` leave the function from either copy, each copy's closures
//! and `async` blocks are its own values, and rustc reports each identical diagnostic (same
//! message, same span) once (`ui/tests/ui/fail/body` holds the cases). What is not an expression is an *item*, and an item duplicated is
//! two items: two `static`s (state split between the copies), two `impl`s of one trait for an
//! outer type (a conflict), two `macro_rules!` with `#[macro_export]`, two `thread_local!`s. A
//! body holding an item, or an item-making statement macro, therefore keeps one (instrumented)
//! body. `const` and `use` are the exceptions: a constant has no identity at run time (every use
//! is a fresh copy of its value) and a `use` only names things, so two copies cannot be told
//! apart; their insides are still searched. A return type with `impl Trait` also keeps one body:
//! the two copies of a returned closure or iterator chain would be two different types.

use proc_macro2::TokenStream;
use quote::quote;
use syn::visit::{self, Visit};
use syn::{Block, ItemFn, ReturnType};

use crate::attrs;
use crate::place;
use crate::plan::{LoopKind, Plan};

/// Why a solver keeps a single (instrumented) body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Single {
    /// The body holds an item other than `const` or `use`, or a statement macro that makes one.
    Item,
    /// The return type has `impl Trait`.
    OpaqueReturn,
}

/// Why `item`'s body cannot be duplicated, if it cannot.
pub fn obstacle(item: &ItemFn) -> Option<Single> {
    if let ReturnType::Type(_, ty) = &item.sig.output {
        let mut finder = OpaqueFinder(false);
        finder.visit_type(ty);
        if finder.0 {
            return Some(Single::OpaqueReturn);
        }
    }
    holds_item(&item.block).then_some(Single::Item)
}

/// The plain copy of `original`: only the main loop's iteration guard, markers stripped.
pub fn plain_body(original: &Block, plan: &Plan) -> Block {
    let iterations = Plan {
        regions: Vec::new(),
        loops: plan
            .loops
            .iter()
            .filter(|l| l.kind == LoopKind::Iteration)
            .cloned()
            .collect(),
        ..Plan::default()
    };
    let mut block = original.clone();
    place::place(&mut block, &iterations);
    attrs::strip(&mut block);
    block
}

/// The statements of the generated body after the registration: both copies behind the flag,
/// or the instrumented one alone (also when the copies are the same: a solver whose only guards
/// are its iterations).
pub fn body(instrumented: &Block, plain: Option<&Block>) -> TokenStream {
    let guarded = &instrumented.stmts;
    let guarded = quote!(#(#guarded)*);
    let plain = match plain {
        Some(plain) => {
            let plain = &plain.stmts;
            quote!(#(#plain)*)
        }
        None => return guarded,
    };
    if plain.to_string() == guarded.to_string() {
        return guarded;
    }
    quote! {
        if ::mheta::__private::hooks_active() {
            #guarded
        } else {
            #plain
        }
    }
}

/// Finds an item that cannot be duplicated.
struct ItemFinder(bool);

impl<'ast> Visit<'ast> for ItemFinder {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        match item {
            syn::Item::Use(_) => {}
            syn::Item::Const(c) => visit::visit_item_const(self, c),
            _ => self.0 = true,
        }
    }

    /// `thread_local! { .. }`, `macro_rules!` and brace-delimited statement macros in general
    /// expand to items. Expression macros (`vec![..]`, `println!(..)`) are duplicated like the
    /// expressions they are.
    fn visit_stmt_macro(&mut self, m: &'ast syn::StmtMacro) {
        let name = m.mac.path.segments.last().map(|s| s.ident.to_string());
        let item_like = matches!(name.as_deref(), Some("thread_local" | "macro_rules"))
            || matches!(m.mac.delimiter, syn::MacroDelimiter::Brace(_));
        if item_like {
            self.0 = true;
        }
    }
}

/// Whether a block holds an item a copy would duplicate (as [`obstacle`] judges them).
pub fn holds_item(block: &Block) -> bool {
    let mut finder = ItemFinder(false);
    finder.visit_block(block);
    finder.0
}

/// Finds `impl Trait` in a type.
struct OpaqueFinder(bool);

impl<'ast> Visit<'ast> for OpaqueFinder {
    fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
        self.0 = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obstacle_of(src: &str) -> Option<Single> {
        obstacle(&syn::parse_str(src).unwrap())
    }

    #[test]
    fn expressions_of_every_kind_are_duplicated() {
        let src = r#"
            fn solve(ctx: &Context) -> Result<f64, E> {
                let f = |x: f64| x * 2.0;
                let fut = async move { 1 };
                'outer: for i in 0..3 {
                    loop { if i > 1 { break 'outer; } break; }
                }
                let v = vec![1.0, 2.0];
                println!("{}", v.len());
                if v.is_empty() { return Err(E); }
                let r = fallible()?;
                Ok(f(r))
            }"#;
        assert_eq!(obstacle_of(src), None);
    }

    #[test]
    fn const_and_use_are_duplicated_but_searched() {
        assert_eq!(
            obstacle_of("fn s() { use std::mem::swap; const N: usize = 4; for _ in 0..N {} }"),
            None
        );
        assert_eq!(
            obstacle_of("fn s() { const N: usize = { static S: u8 = 0; 4 }; }"),
            Some(Single::Item)
        );
    }

    #[test]
    fn items_anywhere_keep_one_body() {
        for body in [
            "static CALLS: AtomicUsize = AtomicUsize::new(0);",
            "fn helper() {}",
            "struct Local;",
            "impl Outer { fn f(&self) {} }",
            "macro_rules! m { () => {} }",
            "for _ in 0..2 { let c = || { static S: u8 = 0; }; }",
            "thread_local!(static T: u8 = 0);",
            "my_items! { struct A; }",
        ] {
            let src = format!("fn s() {{ {body} }}");
            assert_eq!(obstacle_of(&src), Some(Single::Item), "{body}");
        }
    }

    #[test]
    fn the_flag_chooses_between_different_copies_only() {
        let guarded: Block = syn::parse_quote!({
            let g = ::mheta::__private::section(0u32);
            work();
        });
        let plain: Block = syn::parse_quote!({
            work();
        });
        let both = body(&guarded, Some(&plain)).to_string();
        assert!(
            both.starts_with("if :: mheta :: __private :: hooks_active ()"),
            "{both}"
        );
        assert_eq!(
            body(&plain, Some(&plain)).to_string(),
            quote!(work();).to_string()
        );
        assert_eq!(
            body(&guarded, None).to_string(),
            quote!(let g = ::mheta::__private::section(0u32); work();).to_string()
        );
    }

    #[test]
    fn an_opaque_return_type_keeps_one_body() {
        assert_eq!(
            obstacle_of("fn s() -> Box<impl Fn()> { Box::new(|| {}) }"),
            Some(Single::OpaqueReturn)
        );
        assert_eq!(
            obstacle_of("fn s() -> Box<dyn Fn()> { Box::new(|| {}) }"),
            None
        );
    }
}
