//! mheta analyzer: Rust SPMD source → MHETA structure (DESIGN §3).
//!
//! Passes, one module each: [`load`] (crate or file, `mod` tree, [`config`]) → [`body`] (syn →
//! [`ir`], with [`binding`] analysis against the [`catalogue`] and interprocedural inlining) →
//! [`events`] (the three rules, glue, merging, patterns) → [`lower`] (tokens) → [`automaton`]
//! (sections, tiles, stages) → [`classify`] (per-stage facts) → [`emit`] (JSON, text, DOT).
//! Analysis never fails and never panics: problems are [`diagnostics`].
//!
//! Features (both off by default, so that `#[mheta::solver]`, which needs neither, compiles
//! neither dependency): `dot` adds Graphviz DOT output (`emit::Format::Dot`, through petgraph);
//! `render` adds rustc-style diagnostics with source snippets (`Analysis::render_diagnostics`
//! and `snapshot`, through codespan-reporting). The `mheta` tool enables both.

#![warn(missing_docs)]

pub mod alias;
pub mod automaton;
pub mod binding;
pub mod body;
pub mod catalogue;
pub mod classify;
pub mod config;
pub mod diagnostics;
pub mod emit;
pub mod events;
pub mod extent;
pub mod glue;
pub mod hash;
pub mod ir;
pub mod load;
pub mod lower;
pub mod scan;
#[cfg(feature = "render")]
mod snapshot;
pub mod solver;
pub mod sources;
mod stack;
pub mod syntax;

use std::path::Path;

use mheta_format::{Structure, STRUCTURE_SCHEMA};

pub use diagnostics::{Diagnostic, Diagnostics};
#[cfg(feature = "render")]
pub use snapshot::snapshot;
pub use solver::SolverAnalysis;

/// What to analyse and collect.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Keep the automaton's step-by-step trace in each [`SolverAnalysis`].
    pub trace: bool,
}

/// The result of analysing a crate or a file.
#[derive(Debug)]
pub struct Analysis {
    /// The structure (`mheta-structure/1`): every solver that has a main loop.
    pub structure: Structure,
    /// Every diagnostic (loading, solver search and each solver's), in order.
    pub diagnostics: Vec<Diagnostic>,
    /// Per solver: tokens, automaton outline and trace.
    pub solvers: Vec<SolverAnalysis>,
    /// The text of every file read, for rendering diagnostics and traces.
    pub sources: sources::SourceMap,
}

impl Analysis {
    /// Whether some diagnostic is an error.
    pub fn has_errors(&self) -> bool {
        solver::has_errors(&self.diagnostics)
    }

    /// Whether some solver has a main loop, so the structure is worth writing.
    pub fn has_structure(&self) -> bool {
        self.structure
            .solvers
            .iter()
            .any(|s| s.main_loop.kind != "none")
    }

    /// All diagnostics, rustc-style with file:line:column and source snippets (feature
    /// `render`).
    #[cfg(feature = "render")]
    pub fn render_diagnostics(&self) -> String {
        diagnostics::render(&self.diagnostics, &self.sources)
    }

    /// The automaton traces: every token with the state before and after.
    pub fn render_trace(&self) -> String {
        let mut out = String::new();
        for s in &self.solvers {
            out.push_str(&format!("solver {}\n", s.name));
            for step in &s.outline.trace {
                let token = match step.token {
                    Some(t) => s.lowered.describe_token(t, &self.sources),
                    None => "ε".to_string(),
                };
                out.push_str(&format!(
                    "  {:<64} {}  →  {}\n",
                    token, step.before, step.after
                ));
            }
        }
        out
    }
}

/// Runs `f` on a stack of its own, as large as an analysis's (1 GiB reserved, kept per thread;
/// see the `stack` module): for code that walks syntax trees as deep as the analysis does (the
/// proc macro's expansion).
pub fn on_analysis_stack<R>(f: impl FnOnce() -> R) -> R {
    stack::run(f)
}

/// Analyses a crate directory (through its Cargo.toml) or a single `.rs` file, on a stack of
/// its own (1 GiB reserved) whatever thread calls.
pub fn analyze_path(path: &Path, options: &Options) -> Analysis {
    on_analysis_stack(|| {
        let mut diags = Diagnostics::default();
        let program = load::load_path(path, &mut diags);
        analyze_program(program, diags, options)
    })
}

/// Analyses one in-memory file (`mod x;` declarations are not followed), on a stack of its own
/// like [`analyze_path`].
pub fn analyze_source(file_name: &str, source: &str, options: &Options) -> Analysis {
    on_analysis_stack(|| {
        let mut diags = Diagnostics::default();
        let program = load::load_source(file_name, source, &mut diags);
        analyze_program(program, diags, options)
    })
}

fn analyze_program(
    mut program: load::Program,
    mut diags: Diagnostics,
    options: &Options,
) -> Analysis {
    program.comm_fields = binding::comm_fields(&program.fields);
    for (i, f) in program.functions.iter().enumerate() {
        program.by_name.entry(f.name.clone()).or_default().push(i);
    }
    let (structure_diags, solvers, structures) =
        syntax::with_parsed_macros(program.functions.iter().map(|f| &f.block), || {
            analyze_solvers(&program, &mut diags, options)
        });
    let structure = Structure {
        schema: STRUCTURE_SCHEMA.to_string(),
        crate_name: program.crate_name.clone(),
        solvers: structures,
        diagnostics: structure_diags
            .iter()
            .map(|d| d.to_format(&program.sources))
            .collect(),
    };
    Analysis {
        structure,
        diagnostics: diags.0,
        solvers,
        sources: program.sources,
    }
}

/// The first `mpi::initialize()` or `mpi::initialize_with_threading(..)` call of the program's
/// functions, in the order they were loaded.
fn mpi_start(program: &load::Program) -> Option<diagnostics::Loc> {
    use syn::visit::Visit;
    struct Find(Option<proc_macro2::Span>);
    impl<'ast> Visit<'ast> for Find {
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            if self.0.is_some() {
                return;
            }
            if let syn::Expr::Path(p) = &*c.func {
                if crate::syntax::starts_mpi(&crate::syntax::path_idents(&p.path)) {
                    self.0 = Some(crate::extent::Extent::extent(c));
                    return;
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
    }
    program.functions.iter().find_map(|f| {
        let mut find = Find(None);
        find.visit_block(&f.block);
        find.0.map(|span| diagnostics::Loc::of(f.file, span))
    })
}

/// Finds the solvers of a loaded program and analyses each: the structure's diagnostics, and
/// the solvers' analyses with their structures (their diagnostics also go to `diags`).
fn analyze_solvers(
    program: &load::Program,
    diags: &mut Diagnostics,
    options: &Options,
) -> (
    Vec<Diagnostic>,
    Vec<SolverAnalysis>,
    Vec<mheta_format::Solver>,
) {
    let mut structure_diags: Vec<Diagnostic> = diags.0.clone();
    let comm = body::Communicating::new(program);
    let found = solver::find(program, &comm);
    if found.is_empty() && !diags.has_errors() {
        // Where the program starts MPI, else the start of the first file loaded (in a crate
        // with a library, its `src/lib.rs`, which may hold no MPI code at all).
        let loc = mpi_start(program).or_else(|| {
            program.sources.files().first().map(|_| diagnostics::Loc {
                file: 0,
                start: (1, 0),
                end: (1, 0),
                via: 0,
            })
        });
        const MARK: &str = "mark the solver function with #[mheta::solver], name it in mheta.toml ([solver] functions = [..]), or give it a loop that communicates through a catalogued API";
        let d = match solver::passed_over(program, &comm) {
            Some((at, why)) => Diagnostic::error(
                "no solver found: no loop that communicates also iterates",
                Some(at),
            )
            .with_label("passed over")
            .with_note(why)
            .with_note(MARK),
            None => Diagnostic::error("no solver found: no iterative loop that communicates", loc)
                .with_note(MARK),
        };
        structure_diags.push(d.clone());
        diags.push(d);
    }
    let mut solvers = Vec::new();
    let mut structures = Vec::new();
    for found in found {
        let (analysis, structure) = solver::analyze(program, found, &comm, options);
        for d in &analysis.diags {
            diags.push(d.clone());
        }
        solvers.push(analysis);
        structures.push(structure);
    }
    (structure_diags, solvers, structures)
}
