//! Small questions about syntax nodes that several passes ask.

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
