//! Instrumented copies of inlined callees.
//!
//! The analyzer inlines a user function that mixes communication and computation (`let rho =
//! ddot(world, &r, &r);`), and a communication-only function is one event whose calls lie in
//! it; either way their stages, events and rsmpi calls lie in the callee, which this macro
//! cannot rewrite. So the instrumented body gets its own copy of the callee for every inline
//! site the analysis went through, with that site's guards placed and its calls wrapped, and
//! the call in the main loop goes to the copy:
//!
//! ```text
//! fn solve(..) {                     // instrumented body
//!     #[allow(warnings, clippy::all)]
//!     fn __mheta_inlined_0(world: &SimpleCommunicator, a: &[f64], b: &[f64]) -> f64 {
//!         let local: f64 = { let g = stage(1, 1); a.iter()..sum() };
//!         let e = event(1); ..wrapped all_reduce_into..; drop(e);
//!         ..
//!     }
//!     ..
//!     rho = __mheta_inlined_0(world, &r, &r);   // was `ddot(world, &r, &r)`
//! }
//! ```
//!
//! A copy is a nested `fn` item, so names in it resolve as in the callee only when the callee
//! is a free function of the solver's own module (same file): that is required, as are a call
//! by its bare name (or `self::name`) and a body without items of its own (a `static` copied
//! would be a second one). A callee that fails these keeps running as written: its regions are
//! timed as part of the call that reaches them (the call guarded as the first stage in it) and
//! its MPI calls are recorded by the profiling interface, in the events a hint names. The
//! plain body (hooks inactive) always calls the original.

use std::collections::HashMap;
use std::path::Path;

use mheta_format::Span;
use proc_macro2::Ident;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::visit::{self, Visit};
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, Item, ItemFn};

use crate::plan::{Inlined, Plan, RegionKind};
use crate::position::{from_span, Pos};

/// What copying did.
#[derive(Default)]
pub struct Copies {
    /// The copies, as item statements for the top of the instrumented body.
    pub items: Vec<syn::Stmt>,
    /// Calls in the main loop that go to a copy.
    pub renames: Vec<Rename>,
    /// Regions and loop hooks not placed in their copy.
    pub unplaced: Vec<String>,
    /// Callees not copied, and why: their regions are timed as part of the call.
    pub not_copied: Vec<String>,
    /// Calls in the main loop of callees not copied, whose events the runtime is told.
    pub hints: Vec<Hint>,
    /// Calls in the main loop of callees not copied, each timed as the first stage that lies in
    /// it (or in what it calls): the call is guarded whole, and the communication recorded
    /// inside it is not counted as the stage's computation (`measure::aggregate`). Without it,
    /// the callee's computation would count towards no stage.
    pub timed_calls: Vec<crate::plan::Region>,
}

/// A call of a callee that is not copied, with the events whose calls lie in it (or in the
/// callees it reaches), in source order, each with the rsmpi calls it makes. Its MPI calls are
/// recorded by the runtime's MPI profiling interface; this tells it their events
/// (`mheta::__private::rsmpi::site`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hint {
    /// Where the call starts and ends: in a chain (`grid(a).exchange(world)`) the calls all
    /// start at the receiver, and the end tells them apart.
    pub start: Pos,
    pub end: Pos,
    pub events: Vec<(u32, Vec<String>)>,
}

/// A call of a user function, found by where it starts and its name, sent to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    pub start: Pos,
    pub name: String,
    pub to: String,
}

/// One inline site chain with what lies in its callee (nothing for a chain that only leads to
/// deeper ones).
struct Site<'a> {
    chain: Vec<Span>,
    inlined: Option<&'a Inlined>,
    name: String,
}

/// Copies the callees of `plan.inlined`. `file` is the solver's file as the structure names
/// it, `path` where to read it, `solver` where the solver's name starts.
pub fn copies(plan: &Plan, file: &str, path: Option<&Path>, solver: Pos) -> Copies {
    let mut sites: Vec<Site<'_>> = Vec::new();
    for inlined in &plan.inlined {
        for n in 1..=inlined.chain.len() {
            let chain = &inlined.chain[..n];
            let here = n == inlined.chain.len();
            match sites.iter_mut().find(|s| s.chain == chain) {
                Some(s) if here => s.inlined = Some(inlined),
                Some(_) => {}
                None => sites.push(Site {
                    chain: chain.to_vec(),
                    inlined: here.then_some(inlined),
                    name: String::new(),
                }),
            }
        }
    }
    // Callers before callees.
    sites.sort_by_key(|s| s.chain.len());
    for (k, s) in sites.iter_mut().enumerate() {
        s.name = format!("__mheta_inlined_{k}");
    }
    let mut out = Copies::default();
    if sites.is_empty() {
        return out;
    }
    let text = path.and_then(|p| std::fs::read_to_string(p).ok());
    // A panic while copying is an error like the others (`guarded` also forces positions).
    let made = crate::analysis::guarded(|| match &text {
        Some(text) => make(&sites, file, text, solver),
        None => Err("the solver's file could not be read".to_string()),
    })
    .and_then(std::convert::identity);
    let (rendered, decided) = match made {
        Ok(m) => m,
        Err(why) => (Vec::new(), sites.iter().map(|_| Err(why.clone())).collect()),
    };
    for (i, site) in sites.iter().enumerate() {
        if site.chain.len() == 1 && decided[i].is_err() {
            out.hints.extend(hint_for(&sites, i));
            let first_stage = sites
                .iter()
                .filter(|s| s.chain.starts_with(&site.chain))
                .filter_map(|s| s.inlined)
                .flat_map(|inlined| &inlined.regions)
                .find(|r| matches!(r.kind, RegionKind::Stage { .. }));
            if let Some(stage) = first_stage {
                out.timed_calls.push(crate::plan::Region {
                    kind: stage.kind.clone(),
                    extent: from_span(&site.chain[0]),
                });
            }
        }
    }
    for (site, decision) in sites.iter().zip(&decided) {
        let at = site.chain.last().expect("chains are not empty");
        match decision {
            Ok(callee) => {
                if site.chain.len() == 1 {
                    out.renames.push(Rename {
                        start: from_span(at).start,
                        name: callee.name.clone(),
                        to: site.name.clone(),
                    });
                }
                let copy = format!("the copy of `{}` called at line {}", callee.name, at.line);
                out.unplaced
                    .extend(callee.unplaced.iter().map(|u| format!("{u} ({copy})")));
            }
            Err(why) => {
                let Some(inlined) = site.inlined else {
                    continue;
                };
                let of_file = inlined
                    .file
                    .as_ref()
                    .map_or(String::new(), |f| format!(" of {f}"));
                let what = inlined
                    .regions
                    .iter()
                    .map(|r| format!("{} (line {}{of_file})", r.kind.describe(), r.extent.start.0))
                    .chain(inlined.loops.iter().map(|l| l.kind.describe()));
                out.not_copied.extend(
                    what.map(|w| format!("{w}, in the callee called at line {} ({why})", at.line)),
                );
                // Its calls are recorded by the MPI profiling interface, in the events the
                // hint around the call that reaches them names.
            }
        }
    }
    for text in rendered {
        match syn::parse_str::<syn::Stmt>(&text) {
            Ok(stmt) => out.items.push(stmt),
            Err(e) => out.not_copied.push(format!("a copy did not parse: {e}")),
        }
    }
    out
}

/// A callee that was copied.
struct Copied {
    name: String,
    unplaced: Vec<String>,
}

type Made = (Vec<String>, Vec<Result<Copied, String>>);

/// Decides and renders every copy (inside [`crate::analysis::guarded`]: positions are the
/// file's).
fn make(sites: &[Site<'_>], file: &str, text: &str, solver: Pos) -> Result<Made, String> {
    let ast =
        syn::parse_file(text).map_err(|e| format!("the solver's file does not parse: {e}"))?;
    let module = module_of(&ast.items, solver)
        .ok_or_else(|| "the solver was not found in its file".to_string())?;
    let fns: HashMap<String, &ItemFn> = module
        .iter()
        .filter_map(|i| match i {
            Item::Fn(f) => Some((f.sig.ident.to_string(), f)),
            _ => None,
        })
        .collect();
    // First which callees can be copied (a callee's copy needs its caller's).
    let mut callees: Vec<Result<&ItemFn, String>> = Vec::new();
    for site in sites {
        let parent = sites[..callees.len()]
            .iter()
            .position(|p| p.chain[..] == site.chain[..site.chain.len() - 1]);
        let decided = match parent.map(|p| &callees[p]) {
            Some(Err(_)) => Err("its caller is not copied".to_string()),
            _ => callee(site, file, &ast, &fns),
        };
        callees.push(decided);
    }
    let mut rendered = Vec::new();
    let mut decided = Vec::new();
    for (site, callee) in sites.iter().zip(&callees) {
        let f = match callee {
            Ok(f) => *f,
            Err(why) => {
                decided.push(Err(why.clone()));
                continue;
            }
        };
        let mut copy = f.clone();
        copy.sig.ident = Ident::new(&site.name, f.sig.ident.span());
        copy.vis = syn::Visibility::Inherited;
        copy.attrs
            .retain(|a| !a.path().is_ident("doc") && !is_ours(a));
        copy.attrs
            .push(syn::parse_quote!(#[allow(warnings, clippy::all)]));
        let unplaced = match site.inlined {
            Some(inlined) => {
                let sub = Plan {
                    regions: inlined.regions.clone(),
                    loops: inlined.loops.clone(),
                    ..Plan::default()
                };
                let placed = crate::place::place(&mut copy.block, &sub);
                // A call not found is recorded by the MPI profiling interface.
                crate::calls::wrap(&mut copy.block, &inlined.calls);
                let unplaced = placed
                    .unplaced
                    .iter()
                    .map(|u| format!("{} (line {})", u.what, u.extent.start.0))
                    .collect();
                unplaced
            }
            None => Vec::new(),
        };
        // Calls of deeper inline sites go to their copies.
        let renames: Vec<Rename> = sites
            .iter()
            .zip(&callees)
            .filter(|(s, c)| {
                c.is_ok()
                    && s.chain.len() == site.chain.len() + 1
                    && s.chain[..site.chain.len()] == site.chain[..]
            })
            .map(|(s, c)| Rename {
                start: from_span(s.chain.last().expect("not empty")).start,
                name: c
                    .as_ref()
                    .map(|f| f.sig.ident.to_string())
                    .unwrap_or_default(),
                to: s.name.clone(),
            })
            .collect();
        rename(&mut copy.block, &renames);
        let hints: Vec<Hint> = (0..sites.len())
            .filter(|&j| {
                callees[j].is_err()
                    && sites[j].chain.len() == site.chain.len() + 1
                    && sites[j].chain[..site.chain.len()] == site.chain[..]
            })
            .filter_map(|j| hint_for(sites, j))
            .collect();
        hint(&mut copy.block, &hints);
        crate::attrs::strip(&mut copy.block);
        rendered.push(copy.to_token_stream().to_string());
        decided.push(Ok(Copied {
            name: f.sig.ident.to_string(),
            unplaced,
        }));
    }
    Ok((rendered, decided))
}

/// The free function an inline site calls, if it can be copied.
fn callee<'a>(
    site: &Site<'_>,
    file: &str,
    ast: &syn::File,
    fns: &HashMap<String, &'a ItemFn>,
) -> Result<&'a ItemFn, String> {
    let at = site.chain.last().expect("chains are not empty");
    if site.chain.iter().any(|s| s.file != file) {
        return Err("it is in another file".into());
    }
    let mut finder = FindCall {
        at: from_span(at).start,
        found: None,
    };
    finder.visit_file(ast);
    let name = match finder.found {
        Some(Found::Path(name)) => name,
        Some(Found::Method) => return Err("it is a method".into()),
        Some(Found::Other) => return Err("it is called through a path".into()),
        None => return Err("its call was not found".into()),
    };
    let f = fns
        .get(&name)
        .copied()
        .ok_or_else(|| format!("`{name}` is not a function of the solver's module"))?;
    if crate::dual::holds_item(&f.block) {
        return Err(format!(
            "`{name}` holds an item, which a copy would duplicate"
        ));
    }
    if let Some(inlined) = site.inlined {
        let body = crate::position::extent(&f.block).ok_or("the callee has no positions")?;
        let inside = |p: Pos| body.start <= p && p <= body.end;
        let all_inside = inlined.regions.iter().all(|r| inside(r.extent.start))
            && inlined.calls.iter().all(|c| inside(c.start))
            && inlined.file.is_none();
        if !all_inside {
            return Err(format!("the analysis did not find its code in `{name}`"));
        }
    }
    Ok(f)
}

/// `#[mheta::..]`, `#[comm]`, `#[solver]`: not for the copy.
fn is_ours(attr: &syn::Attribute) -> bool {
    attr.path()
        .segments
        .first()
        .is_some_and(|s| s.ident == "mheta")
        || crate::attrs::is_mheta(attr, "comm")
        || crate::attrs::is_mheta(attr, "solver")
}

/// The items of the module (inline `mod` blocks included) that defines the function or
/// method whose name starts at `at`.
fn module_of(items: &[Item], at: Pos) -> Option<&[Item]> {
    let starts_here = |ident: &Ident| {
        let s = ident.span().start();
        (s.line as u32, s.column as u32) == at
    };
    for item in items {
        match item {
            Item::Fn(f) if starts_here(&f.sig.ident) => return Some(items),
            Item::Impl(i) => {
                let here = i.items.iter().any(|m| match m {
                    syn::ImplItem::Fn(f) => starts_here(&f.sig.ident),
                    _ => false,
                });
                if here {
                    return Some(items);
                }
            }
            Item::Mod(m) => {
                if let Some((_, inner)) = &m.content {
                    if let Some(found) = module_of(inner, at) {
                        return Some(found);
                    }
                }
            }
            _ => {}
        }
    }
    None
}

enum Found {
    /// A call by the bare name (or `self::name`).
    Path(String),
    Method,
    Other,
}

/// Finds the call expression that starts at `at`.
struct FindCall {
    at: Pos,
    found: Option<Found>,
}

impl<'ast> Visit<'ast> for FindCall {
    fn visit_expr(&mut self, e: &'ast Expr) {
        if self.found.is_some() {
            return;
        }
        let start = |s: proc_macro2::Span| {
            let s = s.start();
            (s.line as u32, s.column as u32)
        };
        // Inner expressions first: a chain's calls all start at its receiver, and in
        // `dot(..).sqrt()` the inlined call is `dot(..)`.
        visit::visit_expr(self, e);
        if self.found.is_some() {
            return;
        }
        match e {
            Expr::Call(c) if start(c.span()) == self.at => {
                self.found = Some(match bare_name(&c.func) {
                    Some(name) => Found::Path(name),
                    None => Found::Other,
                });
            }
            Expr::MethodCall(m) if start(m.span()) == self.at => self.found = Some(Found::Method),
            _ => {}
        }
    }
}

/// `name` of a call `name(..)`, `name::<T>(..)` or `self::name(..)`.
fn bare_name(func: &Expr) -> Option<String> {
    let Expr::Path(p) = func else { return None };
    if p.qself.is_some() {
        return None;
    }
    let segments: Vec<&syn::PathSegment> = p.path.segments.iter().collect();
    match segments.as_slice() {
        [only] => Some(only.ident.to_string()),
        [first, last] if first.ident == "self" => Some(last.ident.to_string()),
        _ => None,
    }
}

/// The hint for the call of site `i`, whose callee is not copied: the events of it and of the
/// sites below it; `None` when none lies there.
fn hint_for(sites: &[Site<'_>], i: usize) -> Option<Hint> {
    let chain = &sites[i].chain;
    let mut events: Vec<(u32, Vec<String>)> = Vec::new();
    for site in sites.iter().filter(|s| s.chain.starts_with(chain)) {
        let Some(inlined) = site.inlined else {
            continue;
        };
        // Each event where its region or first call starts.
        let mut ids: Vec<(Pos, u32)> = inlined
            .regions
            .iter()
            .filter_map(|r| match r.kind {
                RegionKind::Event(id) => Some((r.extent.start, id)),
                _ => None,
            })
            .chain(inlined.calls.iter().map(|c| (c.start, c.event)))
            .collect();
        ids.sort();
        for (_, id) in ids {
            let at = match events.iter().position(|(e, _)| *e == id) {
                Some(at) => at,
                None => {
                    events.push((id, Vec::new()));
                    events.len() - 1
                }
            };
            for c in inlined.calls.iter().filter(|c| c.event == id) {
                if !events[at].1.contains(&c.api) {
                    events[at].1.push(c.api.clone());
                }
            }
        }
    }
    let at = from_span(chain.last().expect("chains are not empty"));
    (!events.is_empty()).then_some(Hint {
        start: at.start,
        end: at.end,
        events,
    })
}

/// Puts each hint's guard around the call it names (matched by where it starts and ends: in a
/// chain, the calls inside it start where it does).
pub fn hint(block: &mut Block, hints: &[Hint]) {
    if hints.is_empty() {
        return;
    }
    Hinter {
        hints,
        done: vec![false; hints.len()],
    }
    .visit_block_mut(block);
}

struct Hinter<'a> {
    hints: &'a [Hint],
    done: Vec<bool>,
}

impl VisitMut for Hinter<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        let start = match &*e {
            Expr::Call(c) => c.span().start(),
            Expr::MethodCall(m) => m.span().start(),
            _ => {
                visit_mut::visit_expr_mut(self, e);
                return;
            }
        };
        let start = (start.line as u32, start.column as u32);
        // The end only of a call that starts where a hint's does (reading it prints the call),
        // and before the calls inside are wrapped.
        let here = (0..self.hints.len())
            .any(|i| !self.done[i] && self.hints[i].start == start)
            .then(|| crate::position::extent(&*e))
            .flatten();
        visit_mut::visit_expr_mut(self, e);
        let Some(here) = here else { return };
        let Some(i) = (0..self.hints.len()).find(|&i| {
            !self.done[i] && self.hints[i].start == here.start && self.hints[i].end == here.end
        }) else {
            return;
        };
        self.done[i] = true;
        let events = self.hints[i].events.iter().map(|(id, apis)| {
            let kinds = apis.iter().map(|a| crate::calls::call_kind(a));
            quote::quote!((#id, &[#(#kinds),*]))
        });
        let call = &*e;
        *e = syn::parse_quote!({
            const __MHETA_SITE: &[(u32, &[::mheta::__private::rsmpi::CallKind])] = &[#(#events),*];
            let __mheta_site = ::mheta::__private::rsmpi::site(__MHETA_SITE);
            #call
        });
    }
}

/// Sends the calls listed in `renames` to their copies (matched by start and name).
pub fn rename(block: &mut Block, renames: &[Rename]) {
    if renames.is_empty() {
        return;
    }
    Renamer { renames }.visit_block_mut(block);
}

struct Renamer<'a> {
    renames: &'a [Rename],
}

impl VisitMut for Renamer<'_> {
    fn visit_expr_mut(&mut self, e: &mut Expr) {
        visit_mut::visit_expr_mut(self, e);
        let Expr::Call(c) = e else { return };
        let start = c.span().start();
        let start = (start.line as u32, start.column as u32);
        let Some(name) = bare_name(&c.func) else {
            return;
        };
        let Some(r) = self
            .renames
            .iter()
            .find(|r| r.start == start && r.name == name)
        else {
            return;
        };
        let Expr::Path(p) = &mut *c.func else { return };
        let last = p.path.segments.pop().expect("a bare name");
        let segment = syn::PathSegment {
            ident: Ident::new(&r.to, last.ident.span()),
            arguments: last.arguments,
        };
        p.path.segments.clear();
        p.path.leading_colon = None;
        p.path.segments.push(segment);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_by_its_bare_name_goes_to_the_copy_with_its_type_arguments() {
        let mut block: Block =
            syn::parse_str("{\n    let a = dot::<f64>(x, y);\n    let b = self::dot(x, y);\n}")
                .unwrap();
        let renames = [
            Rename {
                start: (2, 12),
                name: "dot".into(),
                to: "__mheta_inlined_0".into(),
            },
            Rename {
                start: (3, 12),
                name: "dot".into(),
                to: "__mheta_inlined_1".into(),
            },
        ];
        rename(&mut block, &renames);
        assert_eq!(
            block.to_token_stream().to_string(),
            "{ let a = __mheta_inlined_0 :: < f64 > (x , y) ; let b = __mheta_inlined_1 (x , y) ; }"
        );
    }

    #[test]
    fn a_call_elsewhere_or_by_another_name_is_left() {
        let mut block: Block = syn::parse_str("{\n    let a = dot(x, y);\n}").unwrap();
        let before = block.to_token_stream().to_string();
        rename(
            &mut block,
            &[
                Rename {
                    start: (2, 13),
                    name: "dot".into(),
                    to: "c".into(),
                },
                Rename {
                    start: (2, 12),
                    name: "norm".into(),
                    to: "c".into(),
                },
            ],
        );
        assert_eq!(block.to_token_stream().to_string(), before);
    }
}
