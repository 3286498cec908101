//! Error collection, in the style of serde_derive's `internals::ctxt`: passes push
//! `syn::Error`s and carry on; the expansion finishes by combining them into one
//! `compile_error!` stream (each error keeps its own span).

use std::cell::RefCell;
use std::fmt::Display;

use proc_macro2::TokenStream;
use quote::ToTokens;

/// A sink for errors found while expanding one item.
#[derive(Default)]
pub struct Ctxt {
    errors: RefCell<Vec<syn::Error>>,
}

impl Ctxt {
    pub fn new() -> Ctxt {
        Ctxt::default()
    }

    /// An error at the span of `tokens` (the whole node when the compiler can join spans,
    /// otherwise its first token).
    pub fn error_spanned_by<T: ToTokens, M: Display>(&self, tokens: T, message: M) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new_spanned(tokens, message));
    }

    /// An error at one span.
    pub fn error_at<M: Display>(&self, span: proc_macro2::Span, message: M) {
        self.errors
            .borrow_mut()
            .push(syn::Error::new(span, message));
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.borrow().is_empty()
    }

    /// All errors combined, or `Ok` when there were none.
    pub fn check(self) -> Result<(), syn::Error> {
        let mut errors = self.errors.into_inner().into_iter();
        let Some(mut combined) = errors.next() else {
            return Ok(());
        };
        for rest in errors {
            combined.combine(rest);
        }
        Err(combined)
    }

    /// The errors as `compile_error!` invocations (empty when there were none).
    pub fn into_compile_errors(self) -> TokenStream {
        match self.check() {
            Ok(()) => TokenStream::new(),
            Err(e) => e.into_compile_error(),
        }
    }
}
