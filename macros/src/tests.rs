//! Placement against every analysis fixture: each solver the analyzer finds in
//! `fixtures/analysis/*.rs` and `fixtures/analysis/idioms/*.rs` is parsed from the same text, planned and placed, and every region
//! and loop hook must find its statements (outside a proc macro, proc-macro2 gives the parsed
//! tokens their positions in the text, as the compiler does inside one).

use std::path::{Path, PathBuf};

use mheta_analyzer::{analyze_source, Options};
use quote::ToTokens;

use crate::dual;
use crate::inline;
use crate::place;
use crate::plan;

fn fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/analysis");
    let mut files: Vec<PathBuf> = [root.clone(), root.join("idioms")]
        .iter()
        .flat_map(|dir| {
            std::fs::read_dir(dir)
                .map(|d| {
                    d.filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .collect();
    files.sort();
    files
}

/// Every function item of a file with the position of its name.
fn functions(file: &syn::File) -> Vec<syn::ItemFn> {
    let mut out = Vec::new();
    for item in &file.items {
        match item {
            syn::Item::Fn(f) => out.push(f.clone()),
            syn::Item::Impl(i) => {
                for it in &i.items {
                    if let syn::ImplItem::Fn(m) = it {
                        out.push(syn::ItemFn {
                            attrs: m.attrs.clone(),
                            vis: m.vis.clone(),
                            modifiers: m.modifiers.clone(),
                            sig: m.sig.clone(),
                            block: Box::new(m.block.clone()),
                        });
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// The `::mheta::__private` functions a body calls, in token order.
fn guard_calls(block: &syn::Block) -> Vec<String> {
    struct Calls(Vec<String>);
    impl<'ast> syn::visit::Visit<'ast> for Calls {
        fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
            let segs: Vec<String> = p
                .path
                .segments
                .iter()
                .map(|s| s.ident.to_string())
                .collect();
            if segs.len() == 3 && segs[0] == "mheta" && segs[1] == "__private" {
                self.0.push(segs[2].clone());
            }
        }
    }
    let mut calls = Calls(Vec::new());
    syn::visit::visit_block(&mut calls, block);
    calls.0
}

/// Also: the plain copy of every solver's body keeps the main loop's iteration guard and no
/// other guard.
#[test]
fn every_region_of_every_fixture_solver_is_placed() {
    let files = fixtures();
    assert!(
        files.len() >= 10,
        "the analysis fixtures are missing: {files:?}"
    );
    let mut failures = Vec::new();
    let mut placed_solvers = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let analysis = analyze_source(&name, &text, &Options::default());
        let Ok(file) = syn::parse_file(&text) else {
            continue;
        };
        for solver in &analysis.structure.solvers {
            if solver.main_loop.kind == "none" {
                continue;
            }
            let f = functions(&file).into_iter().find(|f| {
                let s = f.sig.ident.span().start();
                (s.line as u32, s.column as u32 + 1) == (solver.span.line, solver.span.column)
            });
            let Some(mut f) = f else {
                failures.push(format!("{name}: function of `{}` not found", solver.name));
                continue;
            };
            let plan = plan::plan(solver);
            let plain = dual::plain_body(&f.block, &plan);
            let guards = guard_calls(&plain);
            if guards != ["iteration"] {
                failures.push(format!(
                    "{name}: the plain body of `{}` calls {guards:?}, not one iteration guard",
                    solver.name
                ));
            }
            let placement = place::place(&mut f.block, &plan);
            for u in placement.unplaced {
                failures.push(format!(
                    "{name}: {} at {:?} not placed",
                    u.what, u.extent.start
                ));
            }
            // What lies in callees inlined from the main loop is placed in their copies.
            let solver_at = (solver.span.line, solver.span.column - 1);
            let copies = inline::copies(&plan, &name, Some(&path), solver_at);
            for u in &copies.unplaced {
                failures.push(format!("{name}: {u}"));
            }
            // A callee that cannot be copied (another module's function, a method) is timed
            // with its call, whose hint names its events to the MPI profiling interface.
            if copies.hints.is_empty() {
                for u in &copies.not_copied {
                    failures.push(format!("{name}: {u}"));
                }
            }
            inline::rename(&mut f.block, &copies.renames);
            inline::hint(&mut f.block, &copies.hints);
            // The output still parses as a function.
            syn::parse_str::<syn::ItemFn>(&f.to_token_stream().to_string()).unwrap();
            placed_solvers += 1;
        }
    }
    assert!(
        placed_solvers >= 10,
        "only {placed_solvers} solvers were checked"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A helper the analyzer inlines from the main loop (`dot`), and its own helper (`norm`,
/// called from `dot`), in `module` of a file: the solver's tokens, the plan and the copies.
fn helper_program(module: &str) -> (String, syn::ItemFn, plan::Plan, crate::inline::Copies) {
    let helpers = "fn norm(world: &mpi::topology::SimpleCommunicator, a: &[f64]) -> f64 {\n\
                   let local: f64 = a.iter().map(|x| x * x).sum();\n\
                   let mut sum = 0.0;\n\
                   world.all_reduce_into(&local, &mut sum, SystemOperation::sum());\n\
                   sum\n}\n\
                   fn dot(world: &mpi::topology::SimpleCommunicator, a: &[f64]) -> f64 {\n\
                   let local: f64 = a.iter().map(|x| x * 2.0).sum();\n\
                   let mut sum = 0.0;\n\
                   world.all_reduce_into(&local, &mut sum, SystemOperation::sum());\n\
                   sum + norm(world, a)\n}\n";
    let helpers = if module.is_empty() {
        helpers.to_string()
    } else {
        format!("mod {module} {{\nuse super::*;\n{helpers}}}\nuse {module}::dot;\n")
    };
    let src = format!(
        "use mpi::traits::*;\nuse mpi::collective::SystemOperation;\n{helpers}\
         #[mheta::solver]\nfn solve(world: &mpi::topology::SimpleCommunicator, a: &mut [f64]) {{\n\
         for _ in 0..9 {{\n\
         for x in a.iter_mut() {{ *x *= 0.5; }}\n\
         let n = 1.0 / dot(world, a);\n\
         world.all_reduce_into(&n, &mut a[0], SystemOperation::max());\n\
         }}\n}}\n"
    );
    let (f, plan, copies) = solve_and_copies(&src, &format!("inline-{module}"));
    (src, f, plan, copies)
}

/// The function `solve` of `src`, its plan, and the copies of its callees the macro makes,
/// with `src` written to a file of its own (`mheta-{name}-{pid}/t.rs`, removed after).
fn solve_and_copies(src: &str, name: &str) -> (syn::ItemFn, plan::Plan, crate::inline::Copies) {
    let dir = std::env::temp_dir().join(format!("mheta-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("t.rs");
    std::fs::write(&path, src).unwrap();
    let analysis = analyze_source("t.rs", src, &Options::default());
    let solver = &analysis.structure.solvers[0];
    let plan = plan::plan(solver);
    let file = syn::parse_file(src).unwrap();
    let f = functions(&file)
        .into_iter()
        .find(|f| f.sig.ident == "solve")
        .unwrap();
    let at = (solver.span.line, solver.span.column - 1);
    let copies = inline::copies(&plan, "t.rs", Some(&path), at);
    std::fs::remove_dir_all(&dir).unwrap();
    (f, plan, copies)
}

/// A call of a helper that cannot be copied, made on the result of another call
/// (`grid(a).exchange(world)`): both calls start at `grid`, and the hint goes around the
/// helper's call, the whole chain, not around `grid(a)`, which returns before the helper's
/// calls are made.
#[test]
fn a_hint_goes_around_the_whole_call_chain_it_names() {
    let src = "use mpi::traits::*;\nuse mpi::collective::SystemOperation;\n\
               mod halo {\nuse super::*;\npub struct Grid<'a>(pub &'a [f64]);\n\
               impl Grid<'_> {\npub fn exchange(&self, world: &mpi::topology::SimpleCommunicator) -> f64 {\n\
               let local: f64 = self.0.iter().sum();\nlet mut sum = 0.0;\n\
               world.all_reduce_into(&local, &mut sum, SystemOperation::sum());\nsum\n}\n}\n}\n\
               use halo::Grid;\n\
               fn grid(a: &[f64]) -> Grid<'_> {\nGrid(a)\n}\n\
               #[mheta::solver]\nfn solve(world: &mpi::topology::SimpleCommunicator, a: &mut [f64]) {\n\
               for _ in 0..9 {\n\
               for x in a.iter_mut() { *x *= 0.5; }\n\
               let n = 1.0 / grid(a).exchange(world);\n\
               world.all_reduce_into(&n, &mut a[0], SystemOperation::max());\n\
               }\n}\n";
    let (mut f, _, copies) = solve_and_copies(src, "hint-chain");
    assert_eq!(copies.hints.len(), 1, "{:?}", copies.hints);
    inline::hint(&mut f.block, &copies.hints);
    let body = f.block.to_token_stream().to_string();
    assert!(
        body.contains("let __mheta_site = :: mheta :: __private :: rsmpi :: site (__MHETA_SITE) ; grid (a) . exchange (world) }"),
        "{body}"
    );
}

/// The calls and regions of a helper inlined from the main loop go to an instrumented copy of
/// it (one per inline site, nested helpers too), and the loop's call goes to the copy.
#[test]
fn an_inlined_helper_is_instrumented_in_a_copy_that_the_main_loop_calls() {
    let (_, mut f, plan, copies) = helper_program("");
    assert_eq!(
        plan.calls.len(),
        1,
        "the solver's own reduction: {:?}",
        plan.calls
    );
    assert_eq!(
        plan.inlined.len(),
        2,
        "dot, and norm through dot: {:?}",
        plan.inlined
    );
    assert!(copies.not_copied.is_empty(), "{:?}", copies.not_copied);
    assert!(copies.unplaced.is_empty(), "{:?}", copies.unplaced);
    let copied: Vec<String> = copies
        .items
        .iter()
        .map(|i| i.to_token_stream().to_string())
        .collect();
    assert_eq!(copied.len(), 2, "{copied:#?}");
    // `dot`'s copy: its stage and event guarded, its reduction recorded, `norm` sent to the
    // second copy.
    let dot = &copied[0];
    assert!(
        dot.starts_with("# [allow (warnings , clippy :: all)] fn __mheta_inlined_0 (world"),
        "{dot}"
    );
    assert!(dot.contains("CallKind :: AllReduce"), "{dot}");
    assert!(dot.contains("__private :: stage"), "{dot}");
    assert!(dot.contains("__private :: event"), "{dot}");
    assert!(dot.contains("sum + __mheta_inlined_1 (world , a)"), "{dot}");
    let norm = &copied[1];
    assert!(norm.contains("fn __mheta_inlined_1 (world"), "{norm}");
    assert!(norm.contains("CallKind :: AllReduce"), "{norm}");
    inline::rename(&mut f.block, &copies.renames);
    let body = f.block.to_token_stream().to_string();
    assert!(
        body.contains("let n = 1.0 / __mheta_inlined_0 (world , a)"),
        "{body}"
    );
}

/// A helper outside the solver's module cannot be copied (names in it would resolve
/// differently): its regions stay timed with the call, and the call carries a hint naming the
/// events whose calls lie in it and in the helper it calls, in source order with their calls'
/// kinds, for the MPI profiling interface that records those calls.
#[test]
fn a_helper_in_another_module_is_reported_not_copied() {
    let (_, mut f, mut the_plan, copies) = helper_program("linalg");
    assert!(copies.items.is_empty());
    assert!(copies.renames.is_empty());
    let why = [
        "is not a function of the solver's module",
        "its caller is not copied",
    ];
    assert!(
        copies
            .not_copied
            .iter()
            .all(|n| why.iter().any(|w| n.contains(w))),
        "{:?}",
        copies.not_copied
    );
    assert_eq!(copies.hints.len(), 1, "{:?}", copies.hints);
    let hint = &copies.hints[0];
    let reduction = vec!["mpi::all_reduce_into".to_string()];
    assert_eq!(
        hint.events,
        [(0, reduction.clone()), (1, reduction)],
        "dot's reduction, then norm's: {hint:?}"
    );
    // The call is timed whole as the first stage that lies in it (`dot`'s sum), so the callee's
    // computation counts towards a stage; its reductions are recorded inside it.
    assert_eq!(copies.timed_calls.len(), 1, "{:?}", copies.timed_calls);
    let timed = &copies.timed_calls[0];
    assert!(
        matches!(timed.kind, plan::RegionKind::Stage { .. }),
        "{timed:?}"
    );
    assert_eq!(
        timed.extent.start, hint.start,
        "the call `dot(world, a)`: {timed:?}"
    );
    the_plan.regions.extend(copies.timed_calls.iter().cloned());
    let placement = crate::place::place(&mut f.block, &the_plan);
    assert!(
        !placement.unplaced.iter().any(|u| u.extent == timed.extent),
        "{:?}",
        placement.unplaced
    );
    let before = f.block.to_token_stream().to_string();
    inline::rename(&mut f.block, &copies.renames);
    assert_eq!(f.block.to_token_stream().to_string(), before);
    inline::hint(&mut f.block, &copies.hints);
    let body = f.block.to_token_stream().to_string();
    assert!(
        body.contains(
            "{ const __MHETA_SITE : & [(u32 , & [:: mheta :: __private :: rsmpi :: CallKind])] = & [(0u32 , & [:: mheta :: __private :: rsmpi :: CallKind :: AllReduce]) , (1u32 , & [:: mheta :: __private :: rsmpi :: CallKind :: AllReduce])] ; let __mheta_site = :: mheta :: __private :: rsmpi :: site (__MHETA_SITE) ; dot (world , a) }"
        ),
        "{body}"
    );
    assert!(
        body.contains("let n = 1.0 / { let __mheta_guard_")
            && body.contains(":: mheta :: __private :: stage ("),
        "the call inside a stage guard: {body}"
    );
}
