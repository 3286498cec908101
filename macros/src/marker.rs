//! `#[mheta::iterate]`, `#[mheta::distributed]` and `#[mheta::replicated]` reached as macros of
//! their own. Inside a solver the solver strips them before the compiler sees them; the compiler
//! only invokes them on items, where they are always misplaced.

use proc_macro2::{Span, TokenStream};

pub use crate::attrs::Marker;
use crate::ctxt::Ctxt;
use crate::fallback;

/// A misplaced marker: one error at the attribute, and the item unchanged.
pub fn misplaced(marker: Marker, args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    cx.error_at(
        Span::call_site(),
        format!("`#[mheta::{}]` goes {}", marker.name(), marker.belongs()),
    );
    crate::attrs::no_args(&cx, marker.name(), &args);
    fallback::with_original(cx.into_compile_errors(), input)
}
