//! On error, emit the item unchanged next to the errors (as thiserror-impl's `fallback.rs`), so
//! users see the one error that matters instead of a cascade of "cannot find function" errors.

use proc_macro2::TokenStream;
use quote::quote;

/// The errors followed by the original item.
pub fn with_original(errors: TokenStream, original: TokenStream) -> TokenStream {
    quote! {
        #errors
        #original
    }
}
