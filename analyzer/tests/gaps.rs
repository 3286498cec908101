//! Gaps users of the analyzer reported (issue 2): runtime API calls the catalogue missed, the
//! out-of-core `wait`, stencils written through slice aliases, and the class attributes on `let`s.

use mheta_analyzer::{analyze_source, Options};
use mheta_format::{Access, IoKind, SectionItem, Stage, Structure, VarClass};

fn analyze(body: &str) -> Structure {
    let src = format!(
        "use mheta::{{CommExt, Context, ReduceOp}};\n\
         #[mheta::solver]\n\
         fn solve(ctx: &Context) -> Result<(), Box<dyn std::error::Error>> {{\n\
         let comm = ctx.comm();\n\
         let rows = ctx.local_rows(1000);\n\
         let n = 64;\n\
         {body}\n\
         Ok(())\n}}\n"
    );
    let a = analyze_source("t.rs", &src, &Options::default());
    assert!(!a.has_errors(), "{}", a.render_diagnostics());
    a.structure
}

fn stages(s: &Structure) -> Vec<Stage> {
    let mut out = Vec::new();
    for section in &s.solvers[0].sections {
        for item in &section.items {
            match item {
                SectionItem::Stage(st) => out.push(st.clone()),
                SectionItem::Tiles(t) => out.extend(t.stages.iter().cloned()),
            }
        }
    }
    out
}

fn class(s: &Structure, name: &str) -> Option<VarClass> {
    s.solvers[0]
        .variables
        .iter()
        .find(|v| v.name == name)
        .map(|v| v.class)
}

#[test]
fn all_reduce_value_is_communication_and_ends_its_section() {
    let s = analyze(
        "let mut u = vec![0.0f64; rows];\n\
         for _ in 0..3 {\n\
           for i in 0..rows { u[i] *= 0.5; }\n\
           let total = comm.all_reduce_value(u[0], ReduceOp::Sum)?;\n\
           for i in 0..rows { u[i] += total; }\n\
           comm.barrier()?;\n\
         }",
    );
    let sections = &s.solvers[0].sections;
    assert_eq!(sections.len(), 2, "the all-reduce separates the two loops");
    let text = mheta_analyzer::emit::render(&s, mheta_analyzer::emit::Format::Text);
    assert!(
        text.contains("reduction") && text.contains("comm::all_reduce_value"),
        "{text}"
    );
}

#[test]
fn waiting_on_an_out_of_core_array_is_io_and_other_waits_are_not() {
    let s = analyze(
        "let mut a = ctx.array::<f64>(\"a\", rows as u64, n)?;\n\
         let handle = std::thread::spawn(|| 1);\n\
         for _ in 0..3 {\n\
           for k in 1..a.num_blocks() {\n\
             a.prefetch_block(k)?;\n\
             let next = a.wait()?.to_vec();\n\
           }\n\
           comm.barrier()?;\n\
         }\n\
         let cv = std::sync::Condvar::new();\n\
         cv.wait();",
    );
    let io: Vec<(IoKind, String)> = stages(&s)
        .iter()
        .flat_map(|st| st.io.iter().map(|o| (o.op, o.var.clone())))
        .collect();
    assert_eq!(
        io,
        [
            (IoKind::Prefetch, "a".to_string()),
            (IoKind::Wait, "a".to_string())
        ]
    );
}

fn neighbour_access(up: &str) -> Access {
    let s = analyze(&format!(
        "let a = vec![0.0f64; rows * n];\n\
         let mut b = vec![0.0f64; rows * n];\n\
         let top = vec![0.0f64; n];\n\
         for _ in 0..3 {{\n\
           for i in 0..rows {{\n\
             let up = {up};\n\
             for j in 0..n {{ b[i * n + j] = up[j] + a[i * n + j]; }}\n\
           }}\n\
           comm.barrier()?;\n\
         }}"
    ));
    let st = stages(&s);
    assert_eq!(st.len(), 1);
    st[0].access
}

#[test]
fn a_neighbour_row_through_a_slice_alias_is_a_stencil() {
    assert_eq!(
        neighbour_access("if i == 0 { &top[..] } else { &a[(i - 1) * n..i * n] }"),
        Access::Stencil
    );
    assert_eq!(
        neighbour_access("match i { 0 => &top, _ => &a[(i - 1) * n..] }"),
        Access::Stencil
    );
    // The same row through an alias is no neighbour.
    assert_eq!(
        neighbour_access("&a[i * n..(i + 1) * n]"),
        Access::Independent
    );
    // A copy is a new array, not a view of `a`.
    assert_eq!(
        neighbour_access("a[(i - 1) * n..i * n].to_vec()"),
        Access::Independent
    );
}

#[test]
fn class_attributes_on_lets_force_the_class() {
    let s = analyze(
        "#[mheta::distributed]\nlet halo = vec![0.0f64; n];\n\
         #[mheta::replicated]\nlet u = vec![0.0f64; rows];\n\
         let w = vec![0.0f64; rows];\n\
         #[mheta::distributed]\nlet total: f64 = 0.0;\n\
         for _ in 0..3 { comm.barrier()?; }",
    );
    assert_eq!(class(&s, "halo"), Some(VarClass::Distributed));
    assert_eq!(class(&s, "u"), Some(VarClass::Replicated));
    assert_eq!(class(&s, "w"), Some(VarClass::Distributed), "inferred");
    assert_eq!(
        class(&s, "total"),
        Some(VarClass::Distributed),
        "declared by the attribute"
    );
}
