//! The generated code's vocabulary: guard constructors through `::mheta::__private`, the
//! embedded structure, and the assembled function.

use mheta_format::{IoKind, Structure};
use proc_macro2::{Ident, TokenStream};
use quote::quote;

use crate::plan::{LoopKind, RegionKind};

/// The guard of a region.
pub fn region_guard(kind: &RegionKind) -> TokenStream {
    match kind {
        RegionKind::Section(id) => quote!(::mheta::__private::section(#id)),
        RegionKind::Stage {
            section,
            tile: None,
            stage,
        } => quote!(::mheta::__private::stage(#section, #stage)),
        RegionKind::Stage {
            section,
            tile: Some(tile),
            stage,
        } => {
            quote!(::mheta::__private::tile_stage(#section, #tile, #stage))
        }
        RegionKind::Event(id) => quote!(::mheta::__private::event(#id)),
        RegionKind::Io { var, op } => {
            let op = match op {
                IoKind::Read => quote!(Read),
                IoKind::Write => quote!(Write),
                IoKind::Prefetch => quote!(Prefetch),
                IoKind::Wait => quote!(Wait),
            };
            quote!(::mheta::__private::io(#var, ::mheta::__private::IoKind::#op))
        }
    }
}

/// The guard of one trip of the main loop, numbered by `counter`.
pub fn iteration_guard(counter: &Ident) -> TokenStream {
    quote!(::mheta::__private::iteration(#counter))
}

/// The guard of one trip of a tile loop or a nested iteration.
pub fn loop_guard(kind: LoopKind) -> TokenStream {
    match kind {
        LoopKind::Iteration => quote!(::mheta::__private::iteration(0)),
        LoopKind::Tile { section, tile } => quote!(::mheta::__private::tile(#section, #tile)),
        LoopKind::Group(id) => quote!(::mheta::__private::group(#id)),
    }
}

/// The statement that registers the embedded structure with the runtime on every call (a
/// pointer comparison once registered), plus a dependency on `mheta.toml` so that editing it
/// re-runs the macro.
pub fn registration(
    solver: &str,
    structure: &Structure,
    json: &str,
    tracked: Option<&str>,
) -> TokenStream {
    // The name the measurements carry, computed here so that the program never parses its own
    // structure (the runtime would otherwise compile a JSON deserializer of the whole format).
    let crate_name = &structure.crate_name;
    let digest = structure.digest();
    let track = tracked.map(|path| {
        quote!(
            const _: &[u8] = ::core::include_bytes!(#path);
        )
    });
    quote! {
        {
            #track
            static EMBEDDED: ::mheta::__private::Embedded =
                ::mheta::__private::Embedded {
                    solver: #solver,
                    crate_name: #crate_name,
                    digest: #digest,
                    structure_json: #json,
                };
            ::mheta::__private::register(&EMBEDDED);
        }
    }
}
