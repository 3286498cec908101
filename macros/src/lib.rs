//! mheta procedural macros (DESIGN §4).
//!
//! `#[mheta::solver]` runs the analyzer library on the enclosing crate, finds the annotated
//! function in the structure it extracts, and rewrites the body so every main-loop iteration,
//! parallel section, tile, stage, communication event, repeated-group trip and user I/O call runs
//! inside a runtime hook guard carrying the analyzer's ids (that body runs when hooks are
//! active; otherwise a copy with only the iteration guards runs). It also embeds the structure so the
//! program can write it (`--emit-structure`). `#[mheta::comm]` marks a communication-pattern
//! function; `#[mheta::distributed]`, `#[mheta::replicated]` and `#[mheta::iterate]` annotate the
//! inside of a solver and are stripped by it.
//!
//! Each macro is parse → analyze → expand, with errors collected in a `ctxt::Ctxt`; on error
//! the original item is still emitted (`fallback`) so users see one error, not twenty.
//! Generated code reaches the runtime only through `::mheta::__private`.

#![warn(missing_docs)]

mod analysis;
mod attrs;
mod calls;
mod comm;
mod ctxt;
mod dual;
mod expand;
mod fallback;
mod inline;
mod marker;
mod place;
mod plan;
mod position;
mod solver;
mod warnings;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Instruments a solver function: hook guards at the boundaries the analyzer finds, with the ids
/// `mheta analyze` assigns, and the structure embedded for `--emit-structure`.
///
/// ```ignore
/// #[mheta::solver]
/// fn solve(ctx: &mheta::Context) -> Result<f64, mheta::CommError> {
///     let comm = ctx.comm();
///     let mut residual = 0.0;
///     for _ in 0..ctx.iterations() {
///         let local = work();
///         residual = comm.all_reduce_value(local, mheta::ReduceOp::Sum)?;
///     }
///     Ok(residual)
/// }
/// ```
#[proc_macro_attribute]
pub fn solver(args: TokenStream, input: TokenStream) -> TokenStream {
    on_big_stack(|| solver::expand(args.into(), input.into())).into()
}

/// Runs an expansion on a stack of its own, the analysis's ([`mheta_analyzer::on_analysis_stack`]):
/// parsing, analysing and rewriting a solver recurse once per level of nesting, with frames far
/// larger than rustc's own for the same source in an unoptimised proc macro, and rustc gives a
/// proc macro the stack of its own thread.
fn on_big_stack(expand: impl FnOnce() -> proc_macro2::TokenStream) -> proc_macro2::TokenStream {
    mheta_analyzer::on_analysis_stack(expand)
}

/// Marks a user communication-pattern function (DESIGN §3.4, rule 2): each call of it is one
/// communication event. The function is emitted unchanged.
#[proc_macro_attribute]
pub fn comm(args: TokenStream, input: TokenStream) -> TokenStream {
    on_big_stack(|| comm::expand(args.into(), input.into())).into()
}

/// Names the main iterative loop of a solver when the heuristic should not choose. Only valid on
/// a loop inside a `#[mheta::solver]` function, which strips it.
#[proc_macro_attribute]
pub fn iterate(args: TokenStream, input: TokenStream) -> TokenStream {
    marker::misplaced(marker::Marker::Iterate, args.into(), input.into()).into()
}

/// Forces a `let` binding inside a solver to be classified as distributed. Only valid on a `let`
/// inside a `#[mheta::solver]` function, which strips it.
#[proc_macro_attribute]
pub fn distributed(args: TokenStream, input: TokenStream) -> TokenStream {
    marker::misplaced(marker::Marker::Distributed, args.into(), input.into()).into()
}

/// Forces a `let` binding inside a solver to be classified as replicated. Only valid on a `let`
/// inside a `#[mheta::solver]` function, which strips it.
#[proc_macro_attribute]
pub fn replicated(args: TokenStream, input: TokenStream) -> TokenStream {
    marker::misplaced(marker::Marker::Replicated, args.into(), input.into()).into()
}
