//! Placing the plan's guards in the annotated function's body.
//!
//! A region is placed on the *run of statements* of one block that starts exactly where the
//! region starts and whose statements all start before the region ends (`let g = guard;` before
//! the run, `drop(g);` after it — no new block, so `let` bindings keep their scope; early exits
//! drop the guard as any RAII value). A region that is not a statement run but exactly one
//! expression (a call inside a `let`, an I/O call) wraps that expression: `{ let g = guard; e }`.
//! Loop hooks open their guard as the first statement of the loop body, so every trip is one
//! record; the main loop also gets a trip counter (`iteration(n)`). Regions of one block that
//! overlap without nesting cannot be RAII guards: the later one is left unplaced.
//!
//! Placement is decided on the original statements' positions before anything is inserted, and
//! generated statements carry no source positions, so they can never be matched.

use proc_macro2::{Ident, Span};
use quote::format_ident;
use syn::visit_mut::{self, VisitMut};
use syn::{Block, Expr, Stmt};

use crate::expand;
use crate::plan::{LoopHook, LoopKind, Plan, Region, RegionKind};
use crate::position::{extent, Extent};

/// What could not be placed (and why), for the warnings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unplaced {
    pub what: String,
    pub extent: Extent,
}

/// What placement did.
#[derive(Debug, Default)]
pub struct Placement {
    pub unplaced: Vec<Unplaced>,
}

/// Inserts the plan's guards into `block` (the solver's body).
pub fn place(block: &mut Block, plan: &Plan) -> Placement {
    let mut placer = Placer {
        plan,
        regions_done: vec![false; plan.regions.len()],
        loops_done: vec![false; plan.loops.len()],
        next_guard: 0,
    };
    placer.visit_block_mut(block);
    let mut unplaced = Vec::new();
    for (r, done) in plan.regions.iter().zip(&placer.regions_done) {
        if !done {
            unplaced.push(Unplaced {
                what: r.kind.describe(),
                extent: r.extent,
            });
        }
    }
    for (l, done) in plan.loops.iter().zip(&placer.loops_done) {
        if !done {
            unplaced.push(Unplaced {
                what: l.kind.describe(),
                extent: Extent {
                    start: l.start,
                    end: l.start,
                },
            });
        }
    }
    Placement { unplaced }
}

struct Placer<'a> {
    plan: &'a Plan,
    regions_done: Vec<bool>,
    loops_done: Vec<bool>,
    next_guard: usize,
}

/// One region placed on statements `first..=last` of a block, bound to `name`.
struct Run {
    region: usize,
    first: usize,
    last: usize,
    name: Ident,
}

impl Placer<'_> {
    fn guard_name(&mut self) -> Ident {
        self.next_guard += 1;
        format_ident!(
            "__mheta_guard_{}",
            self.next_guard,
            span = Span::mixed_site()
        )
    }

    /// The statement runs of this block, nested or disjoint.
    fn runs(&mut self, extents: &[Option<Extent>]) -> Vec<Run> {
        let mut runs: Vec<Run> = Vec::new();
        for (r, region) in self.plan.regions.iter().enumerate() {
            if self.regions_done[r] || matches!(region.kind, RegionKind::Io { .. }) {
                continue;
            }
            let (rs, re) = (region.extent.start, region.extent.end);
            let exact = extents
                .iter()
                .position(|e| e.is_some_and(|e| e.start == rs));
            // A section begins with its first item, which may be an expression inside a
            // statement (`let s: f64 = v.iter().sum();`): the section takes the whole statement.
            // A statement holding the whole region (the loop around it) is a container instead.
            let snapped = || match region.kind {
                RegionKind::Section(_) => extents
                    .iter()
                    .position(|e| e.is_some_and(|e| e.start < rs && rs < e.end && e.end <= re)),
                _ => None,
            };
            let Some(first) = exact.or_else(snapped) else {
                continue; // Maybe exactly one expression (visit_expr_mut).
            };
            // Every statement that starts inside the region belongs to the run; the last one may
            // end after the region (its `;`, or the rest of a statement holding the region's
            // last call), and the guard then covers it whole.
            let mut last = first;
            while last + 1 < extents.len() && extents[last + 1].is_some_and(|e| e.start < re) {
                last += 1;
            }
            let crosses = runs.iter().any(|o| {
                let disjoint = o.last < first || last < o.first;
                let nested =
                    (o.first <= first && last <= o.last) || (first <= o.first && o.last <= last);
                !(disjoint || nested)
            });
            if crosses {
                continue;
            }
            self.regions_done[r] = true;
            let name = self.guard_name();
            runs.push(Run {
                region: r,
                first,
                last,
                name,
            });
        }
        runs
    }

    fn region(&self, run: &Run) -> &Region {
        &self.plan.regions[run.region]
    }

    /// Which loop hook starts at `start`, if any is still open.
    fn loop_hook_at(&self, start: (u32, u32)) -> Option<(usize, LoopHook)> {
        self.plan
            .loops
            .iter()
            .enumerate()
            .find(|(i, l)| !self.loops_done[*i] && l.start == start)
            .map(|(i, l)| (i, l.clone()))
    }

    /// Adds the hook's guard at the top of a loop body; returns the main loop's counter.
    fn hook_body(&mut self, body: &mut Block, hook: &LoopHook) -> Option<Ident> {
        let (stmts, counter) = self.trip_statements(hook);
        let old = std::mem::take(&mut body.stmts);
        body.stmts = stmts;
        body.stmts.extend(old);
        counter
    }

    fn trip_statements(&mut self, hook: &LoopHook) -> (Vec<Stmt>, Option<Ident>) {
        let name = self.guard_name();
        match hook.kind {
            LoopKind::Iteration => {
                let counter = format_ident!("__mheta_iteration", span = Span::mixed_site());
                let guard = expand::iteration_guard(&counter);
                let stmts: Block = syn::parse_quote!({
                    let #name = #guard;
                    // Not `+= 1`: clippy would suggest `enumerate` for the user's loop.
                    #counter = #counter.wrapping_add(1);
                });
                (stmts.stmts, Some(counter))
            }
            kind => {
                let guard = expand::loop_guard(kind);
                let stmt: Stmt = syn::parse_quote!(let #name = #guard;);
                (vec![stmt], None)
            }
        }
    }

    /// Applies a loop hook to a loop expression or an iterator chain's closure.
    fn hook_loop(&mut self, expr: &mut Expr, index: usize, hook: &LoopHook) {
        let counter = match expr {
            Expr::ForLoop(l) => self.hook_body(&mut l.body, hook),
            Expr::While(l) => self.hook_body(&mut l.body, hook),
            Expr::Loop(l) => self.hook_body(&mut l.body, hook),
            Expr::MethodCall(call) => {
                let Some(closure) = call.args.iter_mut().rev().find_map(|a| match a {
                    Expr::Closure(c) => Some(c),
                    _ => None,
                }) else {
                    return; // An inner call of the chain may hold the closure.
                };
                let (stmts, counter) = self.trip_statements(hook);
                let body = &closure.body;
                *closure.body = syn::parse_quote!({ #(#stmts)* #body });
                counter
            }
            _ => return,
        };
        self.loops_done[index] = true;
        if let Some(counter) = counter {
            let inner = expr.clone();
            *expr = syn::parse_quote!({
                let mut #counter: u64 = 0;
                #inner
            });
        }
    }

    /// The regions at exactly this expression (an I/O call; an event, or a section of only that
    /// event, that is one expression: a call inside a `let`, the condition of an `if let`):
    /// wrap it, nested by rank, unless the runtime records the call.
    fn wrap_expression(&mut self, expr: &mut Expr, here: Extent) {
        let mut regions: Vec<usize> = (0..self.plan.regions.len())
            .filter(|&i| !self.regions_done[i] && self.plan.regions[i].extent == here)
            .collect();
        // The out-of-core array records its own I/O.
        let array_io = matches!(&*expr, Expr::MethodCall(call)
            if mheta_analyzer::catalogue::io_method(&call.method.to_string()).is_some());
        regions.retain(|&i| {
            let recorded = array_io && matches!(self.plan.regions[i].kind, RegionKind::Io { .. });
            self.regions_done[i] |= recorded;
            !recorded
        });
        if regions.is_empty() {
            return;
        }
        regions.sort_by_key(|&i| self.plan.regions[i].kind.rank());
        // `if let Some(s) = any.immediate_probe()`: the region is the `let`, which no block
        // can hold; its value is what runs.
        let expr = match expr {
            Expr::Let(l) => &mut *l.expr,
            other => other,
        };
        let guards: Vec<proc_macro2::TokenStream> = regions
            .iter()
            .map(|&i| {
                let name = self.guard_name();
                let guard = expand::region_guard(&self.plan.regions[i].kind);
                quote::quote!(let #name = #guard;)
            })
            .collect();
        let inner = &*expr;
        // Left as written, and reported unplaced, if that does not parse.
        if let Ok(wrapped) = syn::parse2(quote::quote!({ #(#guards)* #inner })) {
            *expr = wrapped;
            for i in regions {
                self.regions_done[i] = true;
            }
        }
    }
}

impl VisitMut for Placer<'_> {
    fn visit_block_mut(&mut self, block: &mut Block) {
        let extents: Vec<Option<Extent>> = block.stmts.iter().map(extent).collect();
        let runs = self.runs(&extents);
        visit_mut::visit_block_mut(self, block);
        if runs.is_empty() {
            return;
        }
        let count = block.stmts.len();
        let old = std::mem::take(&mut block.stmts);
        for (i, stmt) in old.into_iter().enumerate() {
            let mut opening: Vec<&Run> = runs.iter().filter(|r| r.first == i).collect();
            opening.sort_by_key(|r| (std::cmp::Reverse(r.last), self.region(r).kind.rank()));
            for run in opening {
                let (name, guard) = (&run.name, expand::region_guard(&self.region(run).kind));
                block.stmts.push(syn::parse_quote!(let #name = #guard;));
            }
            let is_tail = i + 1 == count && matches!(stmt, Stmt::Expr(_, None));
            block.stmts.push(stmt);
            if is_tail {
                continue; // The guards drop at the end of the block, after the tail value.
            }
            let mut closing: Vec<&Run> = runs.iter().filter(|r| r.last == i).collect();
            closing.sort_by_key(|r| {
                (
                    std::cmp::Reverse(r.first),
                    std::cmp::Reverse(self.region(r).kind.rank()),
                )
            });
            for run in closing {
                let name = &run.name;
                block
                    .stmts
                    .push(syn::parse_quote!(::core::mem::drop(#name);));
            }
        }
    }

    fn visit_expr_mut(&mut self, expr: &mut Expr) {
        let here = extent(&*expr);
        visit_mut::visit_expr_mut(self, expr);
        let Some(here) = here else {
            return;
        };
        if let Some((index, hook)) = self.loop_hook_at(here.start) {
            self.hook_loop(expr, index, &hook);
        }
        self.wrap_expression(expr, here);
    }

    /// Nested items are other functions: their bodies are not this solver's.
    fn visit_item_mut(&mut self, _item: &mut syn::Item) {}
}
