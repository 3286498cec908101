//! Solver functions and their main loops (DESIGN §3.2), and the pass pipeline per solver:
//! body → main loop → lower → automaton → classify → the structure file's `Solver`.
//!
//! A solver is marked `#[mheta::solver]` (or `#[solver]` with `use mheta::solver`), named in
//! mheta.toml, or — only when neither exists — found by the heuristic: a function with a loop
//! that communicates, which is neither communication-only nor called by another candidate.

use mheta_format::{self as format, CommCall, CommEvent, Level, Pattern, SectionItem, TileLoop};

use crate::automaton::{self, ItemOut, Outline};
use crate::body::{self, Facts};
use crate::classify;
use crate::diagnostics::{Diagnostic, Loc};
use crate::extent::Extent;
use crate::ir::{Loop, Node};
use crate::load::Program;
use crate::lower::{self, Lowered};
use crate::sources::SourceMap;

/// One analysed solver with everything the CLI may show.
#[derive(Debug, Clone)]
pub struct SolverAnalysis {
    /// The solver's name, as the structure file holds it (`crate::path`).
    pub name: String,
    /// The main loop lowered to the automaton's tokens.
    pub lowered: Lowered,
    /// What the automaton made of the tokens: sections, tiles, stages (and its trace).
    pub outline: Outline,
    /// This solver's diagnostics.
    pub diags: Vec<Diagnostic>,
}

/// A solver function of a program and how it was found.
pub struct Found {
    /// Its index in the program's functions (`Program::functions`).
    pub function: usize,
    /// How it was found: `attribute`, `config` or `heuristic` (the structure's `found_by`).
    pub found_by: &'static str,
    /// The body the heuristic built to find it, and the facts gathered building it: the
    /// analysis takes them instead of building the same body again.
    pub built: Option<(Vec<Node>, Facts)>,
}

/// Finds the solvers of a program.
pub fn find(program: &Program, comm: &body::Communicating<'_>) -> Vec<Found> {
    let mut out = Vec::new();
    for (i, f) in program.functions.iter().enumerate() {
        let attr = f.attrs.iter().any(|a| {
            let segs = crate::syntax::path_idents(a.path());
            segs == ["mheta", "solver"] || (segs == ["solver"] && f.solver_imported)
        });
        let found_by = if attr {
            "attribute"
        } else if program.config.is_solver(&f.path) {
            "config"
        } else {
            continue;
        };
        out.push(Found {
            function: i,
            found_by,
            built: None,
        });
    }
    if !out.is_empty() {
        return out;
    }
    let mut candidates = Vec::new();
    let mut callees: Vec<(usize, std::collections::BTreeSet<usize>)> = Vec::new();
    let mut wrappers = std::collections::BTreeSet::new();
    for (i, _) in program
        .functions
        .iter()
        .enumerate()
        .filter(|(i, _)| comm.communicates(*i))
    {
        // No loop syntax, no main loop: no need to build the body with its callees expanded.
        if !body::may_hold_loop(&program.functions[i].block) {
            continue;
        }
        let body::Built {
            nodes,
            facts,
            called,
        } = comm.build(i);
        let f = &program.functions[i];
        let comm_only = nodes.iter().all(Node::only_comm_and_glue) || body::is_comm_attr(f);
        let body = body_of(f);
        // The main loop must be the function's own, not one inlined from a callee, and must
        // compute: a loop that only communicates (a root collecting results once) is no solver.
        if let (false, Some(main)) = (comm_only, main_loop(&nodes, body, Some(&facts))) {
            // A loop that repeats a call of another solver (`for rep in 0..5 { solve(..) }`)
            // is a benchmark wrapper: the callee is the solver. Not when the loop also exchanges
            // data itself (a time loop with its own halo exchange that calls an output routine
            // whose loop gathers): a barrier before the timing is all a wrapper does.
            let mut solver_calls = Vec::new();
            for n in &main.body {
                foreign_solver_calls(n, body, &program.sources, &mut solver_calls);
            }
            if !solver_calls.is_empty()
                && !main
                    .body
                    .iter()
                    .any(|n| exchanges_data(n, &solver_calls, &program.sources))
                && !solver_calls.iter().any(|&c| carries_state(f, c))
            {
                wrappers.insert(i);
            }
            // The functions whose loops it holds inlined are called from it, also through
            // other functions (`main` → `sample` → `step`, whose loop is `step`'s own).
            let mut reached = called;
            let mut inlined = Vec::new();
            nodes.iter().for_each(|n| inlined_loops(n, &mut inlined));
            reached.extend(inlined.into_iter().filter_map(|l| {
                program
                    .functions
                    .iter()
                    .position(|g| g.file == l.file && within(Loc { via: 0, ..l }, body_of(g)))
            }));
            candidates.push((i, (nodes, facts)));
            callees.push((i, reached));
        }
    }
    // A candidate called by another candidate is a helper of that solver, unless the caller
    // only repeats it.
    let called_by_candidate = |i: usize| {
        callees
            .iter()
            .any(|(c, set)| *c != i && !wrappers.contains(c) && set.contains(&i))
    };
    candidates
        .into_iter()
        .filter(|(i, _)| !wrappers.contains(i) && !called_by_candidate(*i))
        .map(|(i, built)| Found {
            function: i,
            found_by: "heuristic",
            built: Some(built),
        })
        .collect()
}

/// When the heuristic found no solver: the first loop that communicates in a function of the
/// program, and why it was passed over (it only communicates, or it visits the ranks once).
pub fn passed_over(
    program: &Program,
    comm: &body::Communicating<'_>,
) -> Option<(Loc, &'static str)> {
    fn first(nodes: &[Node], body: Loc) -> Option<&Loop> {
        nodes.iter().find_map(|n| match n {
            Node::Loop(l) if within(l.loc, body) && n.has_comm() => Some(l),
            Node::Loop(l) => first(&l.body, body),
            Node::Branch(b) => b.arms.iter().find_map(|a| first(a, body)),
            Node::Stmt(_) => None,
        })
    }
    (0..program.functions.len())
        .filter(|&i| comm.communicates(i) && body::may_hold_loop(&program.functions[i].block))
        .find_map(|i| {
            let built = comm.build(i);
            let l = first(&built.nodes, body_of(&program.functions[i]))?;
            let why = if l.only_comm_and_glue() {
                "this loop communicates but computes nothing between its calls: a loop of communication only (a benchmark, a collection) is not taken for a main loop"
            } else {
                "this loop visits the ranks in turn or collects from them: a loop over the ranks (set-up, collection, ordered output) is not taken for a main loop"
            };
            Some((l.loc, why))
        })
}

/// The loops inlined from callees in `n` (their locations carry an inline site).
fn inlined_loops(n: &Node, out: &mut Vec<Loc>) {
    match n {
        Node::Stmt(_) => {}
        Node::Loop(l) => {
            if l.loc.via != 0 {
                out.push(l.loc);
            }
            l.body.iter().for_each(|c| inlined_loops(c, out));
        }
        Node::Branch(b) => b.arms.iter().flatten().for_each(|c| inlined_loops(c, out)),
    }
}

/// Where a function's body is.
fn body_of(f: &crate::load::Function) -> Loc {
    Loc::of(f.file, f.block.extent())
}

fn within(loc: Loc, body: Loc) -> bool {
    loc.file == body.file && loc.start >= body.start && loc.end <= body.end
}

/// The calls, written in the function whose body is `body`, through which `n` holds loops
/// inlined from another solver (loops that communicate and compute).
fn foreign_solver_calls(n: &Node, body: Loc, sources: &SourceMap, out: &mut Vec<Loc>) {
    match n {
        Node::Stmt(_) => {}
        Node::Loop(l) if !within(l.loc, body) && n.has_comm() && !n.only_comm_and_glue() => {
            out.extend(sources.outermost_call(l.loc.via));
        }
        Node::Loop(l) => l
            .body
            .iter()
            .for_each(|c| foreign_solver_calls(c, body, sources, out)),
        Node::Branch(b) => b
            .arms
            .iter()
            .flatten()
            .for_each(|c| foreign_solver_calls(c, body, sources, out)),
    }
}

/// Whether the call at `call`, written in `f`, hands the callee state by a mutable borrow of a
/// variable the loops around it do not declare (`step(&model, &mut ensemble, &mut rng, ..)`):
/// the loop carries that state from one call to the next, so it iterates; a benchmark's
/// repetitions (`solve(&world, n, iters)`, `let mut u = ..; solve(&mut u)`) each start afresh.
fn carries_state(f: &crate::load::Function, call: Loc) -> bool {
    struct Find {
        file: crate::sources::FileId,
        call: Loc,
        /// The names each enclosing loop's body declared so far, innermost last.
        loops: Vec<Vec<String>>,
        carries: bool,
    }
    impl Find {
        fn check<'a>(
            &mut self,
            extent: proc_macro2::Span,
            mut args: impl Iterator<Item = &'a syn::Expr>,
        ) {
            let at = Loc::of(self.file, extent);
            if (at.start, at.end) != (self.call.start, self.call.end) {
                return;
            }
            let loops = &self.loops;
            self.carries |= args.any(|a| match a {
                syn::Expr::Reference(r) if r.mutability.is_some() => {
                    crate::syntax::base_var(&r.expr)
                        .is_some_and(|v| !loops.iter().flatten().any(|d| *d == v))
                }
                _ => false,
            });
        }
        fn in_loop(&mut self, body: &syn::Block) {
            self.loops.push(Vec::new());
            syn::visit::Visit::visit_block(self, body);
            self.loops.pop();
        }
    }
    impl<'ast> syn::visit::Visit<'ast> for Find {
        fn visit_local(&mut self, l: &'ast syn::Local) {
            if let Some(names) = self.loops.last_mut() {
                names.extend(crate::binding::pattern_idents(&l.pat));
            }
            syn::visit::visit_local(self, l);
        }
        fn visit_expr_for_loop(&mut self, l: &'ast syn::ExprForLoop) {
            self.visit_expr(&l.expr);
            self.in_loop(&l.body);
        }
        fn visit_expr_while(&mut self, l: &'ast syn::ExprWhile) {
            self.visit_expr(&l.cond);
            self.in_loop(&l.body);
        }
        fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
            self.in_loop(&l.body);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            self.check(c.extent(), c.args.iter());
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            self.check(m.extent(), m.args.iter());
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut find = Find {
        file: f.file,
        call,
        loops: Vec::new(),
        carries: false,
    };
    syn::visit::Visit::visit_block(&mut find, &f.block);
    find.carries
}

/// Whether `n` communicates other than by a barrier, outside the code inlined through
/// `solver_calls` (calls of another solver, whose setup and loop are that solver's).
fn exchanges_data(n: &Node, solver_calls: &[Loc], sources: &SourceMap) -> bool {
    let barrier = crate::catalogue::CallKind::Collective(Pattern::Barrier);
    let the_solvers = |l: Loc| {
        sources
            .outermost_call(l.via)
            .is_some_and(|c| solver_calls.contains(&c))
    };
    match n {
        Node::Stmt(s) => {
            !s.loc.is_some_and(the_solvers) && s.calls.iter().any(|c| c.kind != barrier)
        }
        Node::Loop(l) => {
            !the_solvers(l.loc)
                && l.body
                    .iter()
                    .any(|c| exchanges_data(c, solver_calls, sources))
        }
        Node::Branch(b) => b
            .arms
            .iter()
            .flatten()
            .any(|c| exchanges_data(c, solver_calls, sources)),
    }
}

/// Whether a loop visits peers rather than iterating: every point-to-point call names its peer
/// by the loop's variable (`for i in 0..num_neighbors { send to recv_list[i] }`), or receives
/// from any rank (collecting messages until all have come; with `from_any_collects`), or the
/// loop only polls requests (`while coll.incomplete() > 0 { coll.test_some(..) }`); no
/// collective is inside.
fn over_peers(l: &Loop, from_any_collects: bool) -> bool {
    use crate::catalogue::CallKind;
    let all = l.calls();
    let calls: Vec<_> = all
        .iter()
        .filter(|c| c.kind != CallKind::Complete)
        .collect();
    if all.is_empty()
        || all
            .iter()
            .any(|c| matches!(c.kind, CallKind::Collective(_)))
    {
        return false;
    }
    let from_any = |c: &&&crate::ir::CallSite| c.kind == CallKind::Receive && c.peers == ["any"];
    calls.is_empty()
        || from_any_collects && calls.iter().all(from_any)
        || calls
            .iter()
            .all(|c| !c.peers.is_empty() && c.peers.iter().all(|p| by_loop_var(l, p)))
}

/// Whether each pass of a loop over the ranks has one rank compute, the one whose turn it is:
/// everything but communication and glue sits under `if rank == i` (`for i in 0..size { if
/// rank == i { print(..) } barrier() }`, the ranks printing in order). That serialises the
/// ranks; it is output or set-up, not an iteration.
fn takes_turns(l: &Loop, facts: &Facts) -> bool {
    let turn = |n: &Node| match n {
        Node::Stmt(s) => facts
            .turns
            .iter()
            .any(|(at, names)| s.loc == Some(*at) && names.iter().any(|w| l.vars.contains(w))),
        _ => false,
    };
    l.body.iter().any(turn) && l.body.iter().all(|n| turn(n) || n.only_comm_and_glue())
}

/// Whether a peer names one of the loop's variables (`src` of `for src in 1..size`).
fn by_loop_var(l: &Loop, peer: &str) -> bool {
    crate::syntax::idents_of(peer)
        .iter()
        .any(|w| l.vars.iter().any(|v| v == w))
}

/// The main iterative loop among the function's own loops (inside `body`): the one marked
/// `#[mheta::iterate]`, else the outermost loop that mixes communication with computation,
/// else (not for the heuristic) the communication-only loop with most calls.
pub fn main_loop<'n>(nodes: &'n [Node], body: Loc, heuristic: Option<&Facts>) -> Option<&'n Loop> {
    choose(&candidates(nodes, body, heuristic), heuristic.is_some())
}

/// [`main_loop`] among its `candidates`; `heuristic` when the solver was found by the heuristic.
fn choose<'n>(all: &[&'n Loop], heuristic: bool) -> Option<&'n Loop> {
    if let Some(marked) = all.iter().find(|l| l.iterate) {
        return Some(marked);
    }
    let mixed = all.iter().find(|l| !l.only_comm_and_glue());
    if let Some(l) = mixed {
        return Some(l);
    }
    if heuristic {
        return None;
    }
    all.iter()
        .copied()
        .max_by_key(|l| (l.calls().len(), std::cmp::Reverse(l.loc.start)))
}

/// The loops [`main_loop`] chooses among: outermost loops that communicate (or are marked), not
/// those over the ranks or peers when the solver was found by the heuristic.
fn candidates<'n>(nodes: &'n [Node], body: Loc, heuristic: Option<&Facts>) -> Vec<&'n Loop> {
    // A loop over the ranks that only communicates, or talks to the rank it is at (`for src in
    // 1..size { receive from src; unpack }`, `for root in 0..size { broadcast from root; push }`)
    // visits peers once: in a program without a marked solver it is set-up or collection, not an
    // iteration. Likewise a loop that visits peers (see `over_peers`). A loop over the ranks that
    // computes is an iteration (`for phase in 0..size { all_reduce(..); relax(..) }`: a ring's
    // or a pivot's steps).
    let over_ranks = |l: &Loop| {
        heuristic.is_some_and(|f| {
            let by_size = l.kind == crate::ir::LoopKind::For
                && l.header_text.contains("..")
                && (l.bound_reads.iter().any(|r| f.is_size(r))
                    || l.header_text.contains(".size()"));
            let visits = || {
                l.calls()
                    .iter()
                    .any(|c| c.peers.iter().any(|p| by_loop_var(l, p)))
            };
            // A counted loop not over the ranks that computes (`for tick in 0..steps { relax;
            // any.receive() }`) iterates, whoever it hears from.
            let counted = l.kind == crate::ir::LoopKind::For
                && l.header_text.contains("..")
                && !by_size
                && !l.only_comm_and_glue();
            by_size && (l.only_comm_and_glue() || visits() || takes_turns(l, f))
                || over_peers(l, !counted)
        })
    };
    fn loops<'a>(
        nodes: &'a [Node],
        outermost: bool,
        body: Loc,
        skip: &dyn Fn(&Loop) -> bool,
        out: &mut Vec<&'a Loop>,
    ) {
        for n in nodes {
            match n {
                Node::Loop(l) if !within(l.loc, body) || skip(l) => {}
                Node::Loop(l) => {
                    if l.iterate || (outermost && n.has_comm()) {
                        out.push(l);
                    }
                    loops(&l.body, outermost && !n.has_comm(), body, skip, out);
                }
                Node::Branch(b) => b
                    .arms
                    .iter()
                    .for_each(|a| loops(a, outermost, body, skip, out)),
                Node::Stmt(_) => {}
            }
        }
    }
    let mut all = Vec::new();
    loops(nodes, true, body, &over_ranks, &mut all);
    all
}

/// A warning for every other loop that communicates and computes beside the main loop `main`
/// (the workers' loop of a master/worker split: each rank runs one of them), which the
/// structure does not describe.
fn other_loops(candidates: &[&Loop], main: &Loop) -> Vec<Diagnostic> {
    candidates
        .iter()
        .filter(|l| !std::ptr::eq(**l, main) && !l.only_comm_and_glue())
        .map(|l| not_the_main_loop(l, main, "this loop"))
        .collect()
}

/// The warning for `l` (`what`, as the message names it), a loop that communicates and
/// computes beside the main loop `main`.
fn not_the_main_loop(l: &Loop, main: &Loop, what: &str) -> Diagnostic {
    Diagnostic::warning(
        format!(
            "{what} also communicates and computes, but the main loop is the one at line {}: it is not analysed",
            main.loc.start.0
        ),
        Some(l.loc),
    )
    .with_label("not the main loop")
    .with_note("a structure describes one main loop per solver; ranks that run different loops (a master and its workers) are outside the model")
}

/// The loops of callees that the other arms of a branch on the rank call, when one arm holds
/// the main loop (`if rank == 0 { master loop } else { worker(&world) }`), that communicate and
/// compute: a master/worker split's other loop, which [`other_loops`] does not see (it is no
/// loop of the solver's own). Rank branches before or after the main loop (a collection on
/// rank 0) are not looked into.
fn rank_arm_loops<'n>(nodes: &'n [Node], main: &Loop, facts: &Facts, out: &mut Vec<&'n Loop>) {
    fn holds(nodes: &[Node], main: &Loop) -> bool {
        nodes.iter().any(|n| match n {
            Node::Loop(l) => std::ptr::eq(l, main) || holds(&l.body, main),
            Node::Branch(b) => b.arms.iter().any(|a| holds(a, main)),
            Node::Stmt(_) => false,
        })
    }
    fn loops<'n>(nodes: &'n [Node], out: &mut Vec<&'n Loop>) {
        for n in nodes {
            match n {
                Node::Loop(l) if l.loc.via != 0 && n.has_comm() && !l.only_comm_and_glue() => {
                    out.push(l);
                }
                Node::Branch(b) => b.arms.iter().for_each(|a| loops(a, out)),
                _ => {}
            }
        }
    }
    for n in nodes {
        match n {
            Node::Loop(l) if !std::ptr::eq(l, main) && holds(&l.body, main) => {
                rank_arm_loops(&l.body, main, facts, out);
            }
            Node::Branch(b) if b.arms.iter().any(|a| holds(a, main)) => {
                let on_rank = facts.mentions_rank(&b.cond_text);
                for arm in &b.arms {
                    if holds(arm, main) {
                        rank_arm_loops(arm, main, facts, out);
                    } else if on_rank {
                        loops(arm, out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Moves the body out of the loop `main` points to, one of the loops in `nodes` (the main loop
/// [`main_loop`] found: lowering takes the body, and nothing reads the tree after it).
fn take_body(nodes: &mut [Node], main: *const Loop) -> Vec<Node> {
    fn find(nodes: &mut [Node], main: *const Loop) -> Option<Vec<Node>> {
        nodes.iter_mut().find_map(|n| match n {
            Node::Loop(l) if std::ptr::eq(l, main) => Some(std::mem::take(&mut l.body)),
            Node::Loop(l) => find(&mut l.body, main),
            Node::Branch(b) => b.arms.iter_mut().find_map(|arm| find(arm, main)),
            Node::Stmt(_) => None,
        })
    }
    find(nodes, main).unwrap_or_default()
}

/// The main loop's iteration counters: its own variables and the names its body steps by a
/// constant at the top level (`it += 1`).
fn counters(main: &Loop) -> Vec<String> {
    let mut out = main.vars.clone();
    for n in &main.body {
        if let Node::Stmt(s) = n {
            if let Some(c) = &s.increments {
                if !out.contains(c) {
                    out.push(c.clone());
                }
            }
        }
    }
    out
}

/// Analyses one solver function: what the CLI may show, and the solver as the structure file
/// holds it.
pub fn analyze(
    program: &Program,
    found: Found,
    comm: &body::Communicating<'_>,
    options: &crate::Options,
) -> (SolverAnalysis, format::Solver) {
    let Found {
        function: index,
        found_by,
        built,
    } = found;
    let f = &program.functions[index];
    let name_loc = Loc::of(f.file, f.sig.ident.span());
    // A solver its callers hand its block (`solve(&world, &b, rows)`) is built knowing so.
    let (mut nodes, facts) = match built {
        _ if body::given_by_callers(program, index) => {
            let built = comm.build_given(index);
            (built.nodes, built.facts)
        }
        Some(built) => built,
        None => {
            let built = comm.build(index);
            (built.nodes, built.facts)
        }
    };
    let name = if program.crate_name.is_empty() {
        f.path.clone()
    } else {
        format!("{}::{}", program.crate_name, f.path)
    };
    let mut diags: Vec<Diagnostic> = facts.diags.0.clone();
    let body = body_of(f);
    let heuristic = (found_by == "heuristic").then_some(&facts);
    let all = candidates(&nodes, body, heuristic);
    let found = choose(&all, heuristic.is_some()).map(|main| {
        diags.extend(other_loops(&all, main));
        let mut elsewhere = Vec::new();
        rank_arm_loops(&nodes, main, &facts, &mut elsewhere);
        diags.extend(elsewhere.into_iter().map(|l| {
            not_the_main_loop(
                l,
                main,
                "this loop, which another arm of a branch on the rank calls,",
            )
        }));
        (main as *const Loop, main.loc, main.kind, counters(main))
    });
    let (lowered, outline, main) = match found {
        Some((main, loc, kind, counters)) => {
            let lowered = lower::lower(
                take_body(&mut nodes, main),
                &facts,
                counters,
                &program.consts,
            );
            let outline = automaton::run(&lowered);
            (lowered, outline, Some((loc, kind)))
        }
        None => {
            let d = Diagnostic::error(format!("solver `{}` has no loop that communicates", f.path), Some(name_loc))
                .with_label("no main iterative loop found in this function")
                .with_note("the main loop is the outermost loop containing a communication event, or the loop marked #[mheta::iterate]");
            diags.push(d);
            (Lowered::default(), Outline::default(), None)
        }
    };
    diags.extend(lowered.diags.iter().cloned());
    diags.extend(outline.diags.iter().cloned());
    let mut outline = outline;
    if !options.trace {
        outline.trace.clear();
    }
    let solver = assemble(
        program, &name, found_by, name_loc, main, &facts, &lowered, &outline, &diags,
    );
    (
        SolverAnalysis {
            name: solver.name.clone(),
            lowered,
            outline,
            diags,
        },
        solver,
    )
}

#[allow(clippy::too_many_arguments)]
fn assemble(
    program: &Program,
    name: &str,
    found_by: &str,
    name_loc: Loc,
    main: Option<(Loc, crate::ir::LoopKind)>,
    facts: &Facts,
    lowered: &Lowered,
    outline: &Outline,
    diags: &[Diagnostic],
) -> format::Solver {
    let sources = &program.sources;
    let classes = classify::variable_classes(facts, &program.config, lowered);
    let event = |id: usize, pipeline: bool| -> Option<CommEvent> {
        let e = lowered.events.get(id)?;
        Some(CommEvent {
            id: id as u32,
            pattern: if pipeline {
                Pattern::Pipeline
            } else {
                e.described.pattern
            },
            rule: e.draft.rule,
            calls: e
                .draft
                .calls
                .iter()
                .map(|c| CommCall {
                    api: c.api.clone(),
                    span: sources.span(c.loc),
                })
                .collect(),
            participants: e.described.participants.clone(),
            message: e.described.message.clone(),
            elem_type: e.described.elem_type.clone(),
            span: sources.span(e.draft.loc),
            frequency: e.frequency,
            condition: e.condition.clone(),
            alternates: e.draft.alt.iter().map(|l| sources.span(*l)).collect(),
        })
    };
    let sections = outline
        .sections
        .iter()
        .enumerate()
        .map(|(sid, s)| {
            let mut tile_id = 0;
            let items = s
                .items
                .iter()
                .enumerate()
                .map(|(k, item)| match item {
                    ItemOut::Stage(st) => SectionItem::Stage(classify::stage(
                        k as u32, st, lowered, &classes, sources,
                    )),
                    ItemOut::Tiles(t) => {
                        let tile = TileLoop {
                            id: tile_id,
                            span: lowered
                                .loops
                                .get(t.loop_id)
                                .map(|l| sources.span(l.loc))
                                .unwrap_or_default(),
                            recv: t.recv.and_then(|e| event(e, true)),
                            send: t.send.and_then(|e| event(e, true)).map(|mut send| {
                                // The sends after the first (a warning says so) join it.
                                for more in t.more_sends.iter().filter_map(|&e| event(e, true)) {
                                    send.calls.extend(more.calls);
                                    for p in more.participants {
                                        if !send.participants.contains(&p) {
                                            send.participants.push(p);
                                        }
                                    }
                                }
                                send
                            }),
                            stages: t
                                .stages
                                .iter()
                                .enumerate()
                                .map(|(j, st)| {
                                    classify::stage(j as u32, st, lowered, &classes, sources)
                                })
                                .collect(),
                        };
                        tile_id += 1;
                        SectionItem::Tiles(tile)
                    }
                })
                .collect();
            format::Section {
                id: sid as u32,
                items,
                comm: s.comm.and_then(|e| event(e, false)),
                group: s.group,
            }
        })
        .collect();
    let groups = outline
        .groups
        .iter()
        .enumerate()
        .map(|(g, grp)| {
            let l = lowered.loops.get(grp.loop_id);
            format::Group {
                id: g as u32,
                span: l.map(|l| sources.span(l.loc)).unwrap_or_default(),
                trip_count: l
                    .map(|l| l.trip_count.clone())
                    .unwrap_or_else(|| "..".into()),
                parent: grp.parent,
            }
        })
        .collect();
    let variables = facts
        .variables
        .iter()
        .map(|v| format::Variable {
            name: v.name.clone(),
            class: classes
                .get(&v.name)
                .copied()
                .unwrap_or(format::VarClass::Replicated),
            elem_type: v.elem_type.clone(),
            span: sources.span(v.loc),
        })
        .collect();
    let main_loop = match main {
        Some((loc, kind)) => format::MainLoop {
            span: sources.span(loc),
            kind: kind.as_str().into(),
        },
        None => format::MainLoop {
            span: sources.span(name_loc),
            kind: "none".into(),
        },
    };
    format::Solver {
        name: name.to_string(),
        span: sources.span(name_loc),
        found_by: found_by.to_string(),
        main_loop,
        variables,
        sections,
        groups,
        diagnostics: diags.iter().map(|d| d.to_format(sources)).collect(),
    }
}

/// Whether any diagnostic is an error.
pub fn has_errors(diags: &[Diagnostic]) -> bool {
    diags.iter().any(|d| d.level == Level::Error)
}

#[cfg(test)]
mod tests {
    /// A time loop with its own halo exchange that calls an output routine every 100 steps,
    /// whose loop gathers and prints, is the solver; a loop that only repeats another solver's
    /// call (with a barrier and timing around it) is a benchmark wrapper, and the callee is the
    /// solver.
    #[test]
    fn a_time_loop_that_exchanges_is_no_benchmark_wrapper() {
        let src = |own: &str| {
            format!(
                "use mpi::traits::*;\nuse mpi::topology::SimpleCommunicator;\n\
                 fn save(u: &[f64], world: &SimpleCommunicator) {{\n \
                 let root = world.process_at_rank(0);\n let mut all = vec![0.0; 64];\n \
                 for i in 0..4 {{\n if world.rank() == 0 {{ println!(\"{{}}\", u[i]); \
                 root.gather_into_root(&u[i], &mut all[..]); }} else {{ root.gather_into(&u[i]); }}\n }}\n}}\n\
                 fn main() {{\n let universe = mpi::initialize().unwrap();\n let world = universe.world();\n \
                 let rank = world.rank();\n let size = world.size();\n let mut u = vec![0.0f64; 8];\n \
                 for step in 0..1000 {{\n {own}\n for x in u.iter_mut() {{ *x *= 0.5; }}\n \
                 if step % 100 == 0 {{ save(&u, &world); }}\n }}\n}}\n"
            )
        };
        let solver = |own: &str| {
            let analysis = crate::analyze_source("t.rs", &src(own), &crate::Options::default());
            analysis
                .structure
                .solvers
                .iter()
                .map(|s| s.name.clone())
                .collect::<Vec<_>>()
        };
        let exchange = "let right = world.process_at_rank((rank + 1) % size); \
                        right.send(&u[7]); let mut g = 0.0; \
                        world.process_at_rank((rank + size - 1) % size).receive_into(&mut g); u[0] = g;";
        assert_eq!(solver(exchange), ["t::main"]);
        assert_eq!(solver("world.barrier();"), ["t::save"]);
    }

    /// A master and its workers in one function, each rank group with a loop of its own: the
    /// first is the main loop, and the other is named in a warning rather than left out in
    /// silence. One loop, or a loop that only communicates beside it, gives no warning.
    #[test]
    fn a_second_loop_that_communicates_and_computes_is_named() {
        let program = |workers: &str| {
            format!(
                "use mpi::traits::*;\nfn main() {{\n let u = mpi::initialize().unwrap();\n \
                 let world = u.world();\n let rank = world.rank();\n let size = world.size();\n \
                 let mut a = vec![0.0f64; 8];\n if rank == 0 {{\n  for t in 0..100 {{\n   \
                 for w in 1..size {{ world.process_at_rank(w).send(&a[..]); }}\n   \
                 for x in a.iter_mut() {{ *x += 1.0; }}\n  }}\n }} else {{\n{workers}\n }}\n}}\n"
            )
        };
        let warnings = |src: &str| {
            let analysis = crate::analyze_source("t.rs", src, &crate::Options::default());
            assert!(
                analysis.has_structure(),
                "{}",
                analysis.render_diagnostics()
            );
            analysis
                .diagnostics
                .iter()
                .filter(|d| d.message.contains("but the main loop is the one at line 9"))
                .map(|d| d.loc.map(|l| l.start.0))
                .collect::<Vec<_>>()
        };
        let worker_loop = "  loop {\n   world.process_at_rank(0).receive_into(&mut a[..]);\n   \
                           for x in a.iter_mut() { *x *= 2.0; }\n  }";
        assert_eq!(warnings(&program(worker_loop)), vec![Some(14)]);
        let receive_only =
            "  for _ in 0..100 { world.process_at_rank(0).receive_into(&mut a[..]); }";
        assert!(warnings(&program(receive_only)).is_empty());
        assert!(warnings(&program("")).is_empty());
    }
}
