//! The library API on small in-memory programs: solver discovery, interprocedural inlining,
//! recursion, classification, traces, and robustness against arbitrary input.

use mheta_analyzer::{analyze_source, Options};
use mheta_format::{Access, Load, SectionItem, Stage, StageKind, VarClass};

const PRELUDE: &str = "use mpi::traits::*;\n";

fn analyze(src: &str) -> mheta_analyzer::Analysis {
    analyze_source("t.rs", &format!("{PRELUDE}{src}"), &Options::default())
}

fn stages(a: &mheta_analyzer::Analysis) -> Vec<Stage> {
    let mut out = Vec::new();
    for s in &a.structure.solvers[0].sections {
        for item in &s.items {
            match item {
                SectionItem::Stage(st) => out.push(st.clone()),
                SectionItem::Tiles(t) => out.extend(t.stages.iter().cloned()),
            }
        }
    }
    out
}

#[test]
fn attribute_solver_wins_over_the_heuristic() {
    let a = analyze(
        "#[mheta::solver]\nfn solve(w: &SimpleCommunicator) { for _ in 0..3 { let x = 1.0; w.barrier(); } }\n\
         fn other(w: &SimpleCommunicator) { for _ in 0..3 { let y = 2.0; w.barrier(); } }",
    );
    let names: Vec<(&str, &str)> = a
        .structure
        .solvers
        .iter()
        .map(|s| (s.name.as_str(), s.found_by.as_str()))
        .collect();
    assert_eq!(names, [("t::solve", "attribute")]);
}

#[test]
fn bare_solver_attribute_needs_the_mheta_import() {
    let src = "fn solve(w: &SimpleCommunicator, v: &mut [f64]) { for _ in 0..3 { v.reverse(); w.barrier(); } }";
    let with_import = analyze_source(
        "t.rs",
        &format!("use mheta::solver;\n#[solver]\n{src}"),
        &Options::default(),
    );
    assert_eq!(with_import.structure.solvers[0].found_by, "attribute");
    let without = analyze_source("t.rs", &format!("#[solver]\n{src}"), &Options::default());
    assert_eq!(without.structure.solvers[0].found_by, "heuristic");
}

#[test]
fn heuristic_prefers_the_function_that_owns_the_loop() {
    let a = analyze(
        "fn main() { let u = mpi::initialize().unwrap(); let w = u.world(); run(&w); }\n\
         fn run(w: &SimpleCommunicator) { let mut v = vec![0.0; 9]; for _ in 0..3 { v.sort_by(|a, b| a.total_cmp(b)); w.barrier(); } }",
    );
    let s = &a.structure.solvers;
    assert_eq!(s.len(), 1);
    assert_eq!(
        (s[0].name.as_str(), s[0].found_by.as_str()),
        ("t::run", "heuristic")
    );
}

#[test]
fn mixed_helpers_are_inlined_with_their_communicator_argument() {
    let a = analyze(
        "fn main() { let u = mpi::initialize().unwrap(); let w = u.world(); let mut v = vec![0.0f64; 9];\n\
         for _ in 0..3 { step(&w, &mut v); } }\n\
         fn step<C: Communicator>(c: &C, v: &mut [f64]) { for x in v.iter_mut() { *x += 1.0; } c.barrier(); for x in v.iter_mut() { *x *= 0.5; } }",
    );
    assert!(!a.has_errors(), "{}", a.render_diagnostics());
    let solver = &a.structure.solvers[0];
    assert_eq!(solver.name, "t::main");
    assert_eq!(
        solver.sections.len(),
        2,
        "the barrier inside `step` splits the iteration"
    );
    let comm = solver.sections[0]
        .comm
        .as_ref()
        .expect("the barrier closes section 0");
    assert_eq!(comm.calls[0].api, "mpi::barrier");
    assert_eq!(comm.span.line, 4, "spans point into the inlined function");
}

#[test]
fn recursion_between_communicating_functions_is_reported() {
    let a = analyze(
        "fn main() { let u = mpi::initialize().unwrap(); let w = u.world(); let mut v = vec![0.0f64; 9];\n\
         for _ in 0..3 { ping(&w, &mut v); } }\n\
         fn ping(w: &SimpleCommunicator, v: &mut [f64]) { v[0] += 1.0; w.barrier(); pong(w, v); }\n\
         fn pong(w: &SimpleCommunicator, v: &mut [f64]) { v[1] += 1.0; w.barrier(); ping(w, v); }",
    );
    assert!(a.has_errors());
    let rendered = a.render_diagnostics();
    assert!(
        rendered.contains("recursion through communicating function"),
        "{rendered}"
    );
    assert!(
        rendered.contains("ping → pong → ping") || rendered.contains("pong → ping → pong"),
        "{rendered}"
    );
}

#[test]
fn stage_classification_stencil_variable_load_and_representative() {
    let a = analyze(
        "fn main() { let u = mpi::initialize().unwrap(); let w = u.world(); let size = w.size();\n\
         let rows = 1000 / size as usize; let n = 64;\n\
         let a = vec![0.0f64; rows * n]; let mut b = vec![0.0f64; rows * n]; let mut t = vec![0.0f64; n * n];\n\
         for _ in 0..3 {\n\
           for i in 1..rows - 1 { for j in 0..n { b[i * n + j] = a[(i - 1) * n + j] + a[(i + 1) * n + j]; } }\n\
           for i in 0..n { for j in 0..i { t[i * n + j] = t[j * n + i]; } }\n\
           w.barrier(); } }",
    );
    assert!(!a.has_errors(), "{}", a.render_diagnostics());
    let solver = &a.structure.solvers[0];
    let class = |name: &str| {
        solver
            .variables
            .iter()
            .find(|v| v.name == name)
            .map(|v| v.class)
    };
    assert_eq!(
        class("a"),
        Some(VarClass::Distributed),
        "length derives from rows = N / size"
    );
    assert_eq!(class("t"), Some(VarClass::Replicated));
    let st = stages(&a);
    assert_eq!(st.len(), 2);
    assert_eq!((st[0].kind, st[0].loop_depth), (StageKind::Loop, 2));
    assert_eq!((st[0].access, st[0].load), (Access::Stencil, Load::Fixed));
    assert_eq!(
        st[0].representative.as_deref(),
        Some("b"),
        "distributed and written"
    );
    assert_eq!(st[1].load, Load::Variable, "the inner bound depends on i");
    assert_eq!(st[1].access, Access::Independent);
    let write = st[0].affine.iter().find(|x| x.write).expect("b is written");
    assert_eq!(write.var, "b");
    assert_eq!(
        write.dims[0].coefficients,
        vec![("i*n".to_string(), 1), ("j".to_string(), 1)]
    );
}

#[test]
fn trace_lists_every_token_with_states() {
    let a = analyze_source(
        "t.rs",
        "use mpi::traits::*;\nfn main() { let u = mpi::initialize().unwrap(); let w = u.world(); let mut v = vec![0.0; 4];\n\
         for _ in 0..3 { v.sort_by(|a, b| a.total_cmp(b)); w.barrier(); } }",
        &Options { trace: true },
    );
    let trace = a.render_trace();
    assert!(trace.contains("Stmt(S0"), "{trace}");
    assert!(trace.contains("SECTION [section=0"), "{trace}");
    assert!(trace.contains("→  STAGE"), "{trace}");
    assert!(trace.contains("Comm(E0 barrier"), "{trace}");
    assert!(trace.contains("IterEnd"), "{trace}");
    let untraced = analyze(
        "fn main() { let u = mpi::initialize().unwrap(); let w = u.world(); let mut v = vec![0.0; 4]; for _ in 0..3 { v.reverse(); w.barrier(); } }",
    );
    assert!(untraced.solvers[0].outline.trace.is_empty());
}

#[test]
fn diagnostics_carry_file_line_and_column() {
    let a = analyze_source(
        "broken.rs",
        "fn main() {\n    let x = ;\n}\n",
        &Options::default(),
    );
    assert!(a.has_errors());
    let rendered = a.render_diagnostics();
    assert!(rendered.contains("broken.rs:2:"), "{rendered}");
    assert!(
        rendered.contains("let x = ;"),
        "the snippet is shown: {rendered}"
    );
}

#[test]
fn no_solver_is_an_error() {
    let a = analyze_source("t.rs", "fn main() { let (tx, _rx) = std::sync::mpsc::channel(); for i in 0..3 { tx.send(i).unwrap(); } }", &Options::default());
    assert!(a.has_errors());
    assert!(a.render_diagnostics().contains("no solver found"));
}

mod never_panics {
    use proptest::prelude::*;

    use super::*;

    const SNIPPETS: &[&str] = &[
        "for i in 0..n {",
        "}",
        "while x < 3 {",
        "loop {",
        "if rank > 0 {",
        "} else {",
        "world.barrier();",
        "world.process_at_rank(rank - 1).send(&a[..]);",
        "world.process_at_rank(rank + 1).receive_into(&mut a[..]);",
        "a[i] = b[i - 1] + b[i + 1];",
        "let s: f64 = a.iter().sum();",
        "x += 1;",
        "break;",
        "helper(&world, &mut a);",
        "match rank { 0 => {",
        "_ => {} }",
        "(0..n).for_each(|i| {",
        "});",
        "a.read_block(k)?;",
        "mystery!(a);",
        "let r = world.immediate_send(&a[..]);",
        "r.wait();",
        "world.all_reduce_into(&s, &mut t, op);",
    ];

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// Arbitrary statement soup inside a solver never panics the analysis or its renderers.
        #[test]
        fn statement_soup(picks in proptest::collection::vec(0..SNIPPETS.len(), 0..40)) {
            let body: Vec<&str> = picks.iter().map(|&i| SNIPPETS[i]).collect();
            let src = format!(
                "fn helper(w: &SimpleCommunicator, a: &mut [f64]) {{ a[0] = 1.0; w.barrier(); helper(w, a); }}\n\
                 fn main() {{ let u = mpi::initialize().unwrap(); let world = u.world(); let rank = world.rank();\n\
                 let mut a = vec![0.0; 8]; for _ in 0..3 {{ {} }} }}",
                body.join("\n")
            );
            let a = analyze_source("soup.rs", &src, &Options { trace: true });
            let _ = a.render_diagnostics();
            let _ = a.render_trace();
            for f in [mheta_analyzer::emit::Format::Json, mheta_analyzer::emit::Format::Text, mheta_analyzer::emit::Format::Dot] {
                let _ = mheta_analyzer::emit::render(&a.structure, f);
            }
        }

        /// Arbitrary bytes never panic the loader.
        #[test]
        fn arbitrary_text(text in "\\PC{0,200}") {
            let a = analyze_source("junk.rs", &text, &Options::default());
            let _ = a.render_diagnostics();
        }
    }
}
