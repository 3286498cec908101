//! `#[mheta::solver]`: parse → analyze → expand.
//!
//! 1. Parse the function and validate the attribute, the signature and the markers inside.
//! 2. Analyze ([`crate::analysis`]) and find this solver; its analyzer diagnostics, errors
//!    included, become compile-time warnings: the attribute never breaks a build that rustc
//!    accepts (a solver the analysis cannot find is left uninstrumented, with a warning).
//! 3. Plan the guards from the solver's structure ([`crate::plan`]), place them
//!    ([`crate::place`]), strip the markers, and prepend the registration of the embedded
//!    structure. The instrumented body runs only when hooks are active; otherwise a plain copy
//!    with iteration guards alone runs ([`crate::dual`]). A misused attribute is a compile error
//!    emitted next to the original function (markers stripped).

use mheta_format::Level;
use proc_macro2::{Span, TokenStream};
use quote::{quote, ToTokens};
use syn::ItemFn;

use crate::analysis::{self, FnSite, Scope};
use crate::attrs;
use crate::ctxt::Ctxt;
use crate::dual;
use crate::expand;
use crate::fallback;
use crate::inline;
use crate::place;
use crate::plan;
use crate::position::{self, from_span, Pos};
use crate::warnings;

pub fn expand(args: TokenStream, input: TokenStream) -> TokenStream {
    let cx = Ctxt::new();
    attrs::no_args(&cx, "solver", &args);
    let item: ItemFn = match syn::parse2(input.clone()) {
        Ok(f) => f,
        Err(_) => {
            cx.error_at(
                Span::call_site(),
                "`#[mheta::solver]` goes on a function with a body",
            );
            return fallback::with_original(cx.into_compile_errors(), input);
        }
    };
    validate_signature(&cx, &item);
    attrs::validate(&cx, &item.block);
    if cx.has_errors() {
        return fallback::with_original(cx.into_compile_errors(), stripped(item));
    }
    match instrument(&cx, &item, &input) {
        Some(out) if !cx.has_errors() => out,
        _ => fallback::with_original(cx.into_compile_errors(), stripped(item)),
    }
}

fn validate_signature(cx: &Ctxt, item: &ItemFn) {
    for attr in &item.attrs {
        if attrs::is_mheta(attr, "solver") {
            cx.error_spanned_by(attr, "duplicate `#[mheta::solver]`");
        } else if attrs::is_mheta(attr, "comm") {
            cx.error_spanned_by(
                attr,
                "a function is either `#[mheta::solver]` or `#[mheta::comm]`, not both",
            );
        } else if let Some(m) = attrs::marker_of(attr) {
            cx.error_spanned_by(
                attr,
                format!("`#[mheta::{}]` goes {}", m.name(), m.belongs()),
            );
        }
    }
    if let Some(c) = &item.sig.constness {
        cx.error_spanned_by(
            c,
            "a solver runs the program's main loop: it cannot be a `const fn`",
        );
    }
    for input in &item.sig.inputs {
        let attrs = match input {
            syn::FnArg::Receiver(r) => &r.attrs,
            syn::FnArg::Typed(t) => &t.attrs,
        };
        for attr in attrs {
            if let Some(m) = attrs::marker_of(attr) {
                cx.error_spanned_by(
                    attr,
                    format!("`#[mheta::{}]` goes {}", m.name(), m.belongs()),
                );
            }
        }
    }
}

/// The original function with the solver's markers removed (the fallback output).
fn stripped(item: ItemFn) -> TokenStream {
    attrs::strip_tokens(item.into_token_stream())
}

/// Analyzes and instruments; `None` (with errors in `cx`) when that is impossible.
fn instrument(cx: &Ctxt, item: &ItemFn, input: &TokenStream) -> Option<TokenStream> {
    let ident = &item.sig.ident;
    let start = ident.span().start();
    if start.line == 0 {
        cx.error_at(ident.span(), "mheta needs source positions from the compiler (Rust 1.88 or later) to match the analyzer's structure to this function");
        return None;
    }
    let site = FnSite {
        name: ident.to_string(),
        ident: (start.line as u32, start.column as u32),
        file: ident.span().local_file().map(absolute),
    };
    // What the analysis cannot read never breaks a build that rustc accepts: the function is
    // then left as written, with a warning.
    let found = match analysis::analyze(&site, || position::layout_text(input.clone())) {
        Ok(found) => found,
        Err(message) => {
            let warning = warnings::warning(
                &format!("{message}; the function is not instrumented"),
                ident.span(),
                0,
            );
            // Inside the body: a method's `impl` block takes no unnamed `const` item.
            let mut warned = item.clone();
            if let Ok(stmt) = syn::parse2::<syn::Stmt>(warning) {
                warned.block.stmts.insert(0, stmt);
            }
            return Some(stripped(warned));
        }
    };
    let solver = found.solver();
    let mut leaves = Vec::new();
    position::leaf_positions(input.clone(), &mut leaves);
    let span_at = |pos: Pos| span_at(&leaves, pos).unwrap_or_else(|| ident.span());
    let mut plan = plan::plan(solver);
    let mut block = (*item.block).clone();
    // Instrumented copies of the callees inlined from the main loop, and the calls sent to them.
    let mut copies = inline::copies(&plan, &solver.span.file, site.file.as_deref(), site.ident);
    // A callee that is not copied is timed whole at its call, as its first stage.
    plan.regions.append(&mut copies.timed_calls);
    let placement = place::place(&mut block, &plan);
    // After placement, which matches statements by their source positions.
    inline::rename(&mut block, &copies.renames);
    inline::hint(&mut block, &copies.hints);
    // A call not found keeps running as written: the MPI profiling interface records it, in
    // the event region placed around it.
    crate::calls::wrap(&mut block, &plan.calls);
    attrs::strip(&mut block);
    block.stmts.splice(0..0, copies.items.iter().cloned());

    // Analysis errors are warnings here: what the analysis could read is instrumented (a
    // solver without a main loop keeps its iteration-free body), the rest counts towards the
    // enclosing region.
    let mut messages: Vec<(String, Span)> = Vec::new();
    for d in &solver.diagnostics {
        let span = d
            .span
            .as_ref()
            .filter(|s| s.file == solver.span.file)
            .map(|s| span_at(from_span(s).start));
        let message = match d.level {
            Level::Error => format!("{} (not instrumented)", d.message),
            Level::Warning => d.message.clone(),
        };
        messages.push((message, span.unwrap_or_else(|| ident.span())));
    }
    for u in &placement.unplaced {
        let message = format!(
            "no hook for {} (line {}): it is not a run of statements or one expression of this function, so its time counts towards the enclosing region",
            u.what, u.extent.start.0
        );
        messages.push((message, span_at(u.extent.start)));
    }
    for u in &copies.unplaced {
        let message = format!(
            "no hook for {u}: it is not a run of statements or one expression there, so its time counts towards the enclosing region"
        );
        messages.push((message, ident.span()));
    }
    let elsewhere: Vec<&String> = plan.elsewhere.iter().chain(&copies.not_copied).collect();
    if !elsewhere.is_empty() {
        let message = format!(
            "regions of callees are timed as part of the call that reaches them (their MPI calls are recorded through the MPI profiling interface): {}",
            elsewhere
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        messages.push((message, ident.span()));
    }
    if found.scope == Scope::Tokens {
        let message = "the crate and this function's file could not be analysed; ids come from the function's own tokens and may differ from `mheta analyze`".to_string();
        messages.push((message, ident.span()));
    }
    let warnings = messages
        .iter()
        .enumerate()
        .map(|(i, (m, s))| warnings::warning(m, *s, i));

    let tracked = found.config.as_ref().map(|p| p.display().to_string());
    let registration = expand::registration(
        &solver.name,
        &found.structure,
        &found.json,
        tracked.as_deref(),
    );
    // Both copies when that is sound (see `dual`), so a disabled run executes the plain body.
    let plain = match dual::obstacle(item) {
        None => Some(dual::plain_body(&item.block, &plan)),
        Some(_) => None,
    };
    let body = dual::body(&block, plain.as_ref());
    let (attrs, vis, sig) = (&item.attrs, &item.vis, &item.sig);
    // The warnings go inside the body: a method's `impl` block takes no unnamed `const` item.
    Some(quote! {
        #(#attrs)*
        #vis #sig {
            #(#warnings)*
            #registration
            #body
        }
    })
}

/// The compiler names files relative to its working directory, which is this process's.
fn absolute(path: std::path::PathBuf) -> std::path::PathBuf {
    if path.is_absolute() {
        return path;
    }
    std::env::current_dir()
        .map(|cwd| cwd.join(&path))
        .unwrap_or(path)
}

/// The span of the first token at or after `pos` on the same line, else the last token before it.
fn span_at(leaves: &[(Pos, Span)], pos: Pos) -> Option<Span> {
    leaves
        .iter()
        .find(|(p, _)| p.0 == pos.0 && p.1 >= pos.1)
        .or_else(|| leaves.iter().rev().find(|(p, _)| *p <= pos))
        .map(|(_, s)| *s)
}
