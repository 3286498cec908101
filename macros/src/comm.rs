//! `#[mheta::comm]`: marks a user communication-pattern function (DESIGN §3.4, rule 2). The
//! analyzer reads the attribute from source; the macro validates its use and emits the function
//! unchanged.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;

use crate::attrs::{is_mheta, no_args};
use crate::ctxt::Ctxt;
use crate::fallback;

pub fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    no_args(&cx, "comm", &args);
    match syn::parse2::<syn::ItemFn>(input.clone()) {
        Ok(f) => {
            if let Some(attr) = f.attrs.iter().find(|a| is_mheta(a, "solver")) {
                cx.error_spanned_by(
                    attr,
                    "a function is either `#[mheta::comm]` or `#[mheta::solver]`, not both",
                );
            }
            if let Some(attr) = f.attrs.iter().find(|a| is_mheta(a, "comm")) {
                cx.error_spanned_by(attr, "duplicate `#[mheta::comm]`");
            }
            if let Some(c) = &f.sig.constness {
                cx.error_spanned_by(
                    c,
                    "a `#[mheta::comm]` function communicates at run time: it cannot be `const`",
                );
            }
            let item = f.into_token_stream();
            fallback::with_original(cx.into_compile_errors(), item)
        }
        Err(_) => {
            cx.error_at(
                Span::call_site(),
                "`#[mheta::comm]` goes on a function with a body",
            );
            fallback::with_original(cx.into_compile_errors(), input)
        }
    }
}
