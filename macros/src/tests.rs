//! Placement against every analysis fixture: each solver the analyzer finds in
//! `fixtures/analysis/*.rs` and `fixtures/analysis/idioms/*.rs` is parsed from the same text, planned and placed, and every region
//! and loop hook must find its statements (outside a proc macro, proc-macro2 gives the parsed
//! tokens their positions in the text, as the compiler does inside one).

use std::path::{Path, PathBuf};

use mheta_analyzer::{analyze_source, Options};
use quote::ToTokens;

use crate::dual;
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

/// An rsmpi call in a helper the analyzer inlines cannot be wrapped by the solver's macro: the
/// plan lists it, so the measurements can name it.
#[test]
fn rsmpi_calls_in_callees_are_listed_as_not_recorded() {
    let src = "use mpi::traits::*;\nuse mpi::collective::SystemOperation;\n\
               fn dot(world: &mpi::topology::SimpleCommunicator, a: &[f64]) -> f64 {\n \
               let local: f64 = a.iter().map(|x| x * x).sum();\n let mut sum = 0.0;\n \
               world.all_reduce_into(&local, &mut sum, SystemOperation::sum());\n sum\n}\n\
               #[mheta::solver]\nfn solve(world: &mpi::topology::SimpleCommunicator, a: &mut [f64]) {\n \
               for _ in 0..9 {\n  for x in a.iter_mut() { *x *= 0.5; }\n  let n = dot(world, a);\n  \
               world.all_reduce_into(&n, &mut a[0], SystemOperation::max());\n }\n}\n";
    let analysis = analyze_source("t.rs", src, &Options::default());
    let solver = &analysis.structure.solvers[0];
    let plan = plan::plan(solver);
    assert_eq!(
        plan.calls.len(),
        1,
        "the solver's own reduction: {:?}",
        plan.calls
    );
    assert_eq!(
        plan.calls_elsewhere,
        ["mpi::all_reduce_into at t.rs:6 (in a callee)"]
    );
}
