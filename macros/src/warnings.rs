//! Compile-time warnings from a proc macro on stable Rust. `proc_macro::Diagnostic` is unstable,
//! so a warning is the `deprecated` lint fired by using a deprecated constant whose note is the
//! message, at a span chosen by the macro (the technique of the `proc-macro-warning` crate).

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

/// A warning `message` reported at `span`; `index` keeps the names of several warnings apart.
pub fn warning(message: &str, span: Span, index: usize) -> TokenStream {
    let note = format!("mheta: {message}");
    let name = format_ident!("mheta_analysis_warning_{}", index, span = span);
    let use_site = quote_spanned!(span=> #name);
    quote! {
        const _: () = {
            #[deprecated(note = #note)]
            #[allow(non_upper_case_globals)]
            const #name: () = ();
            #use_site
        };
    }
}
