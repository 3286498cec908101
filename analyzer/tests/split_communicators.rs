//! rsmpi programs that solve on a communicator split off the world: however the program takes the
//! communicator out of the split's `Option` (`Option::map`, `if let`, `match`, `let .. else`), the
//! names it binds are that communicator, its processes are peers, and `Option::map` on it is no
//! loop. Found on rsmpi's own `dyn_communicator` example, which the analyzer once took for an
//! iterative solver.
//!
//! The variants are the idiom program `subcommunicator_map.rs` (which solves inside
//! `world.split_by_color(color).map(|sub| { .. })`) with its solve moved into the other forms.

use std::path::Path;

use mheta_analyzer::{analyze_source, emit, Options};

/// The idiom program's text around its solve: what comes before `let change = ..`, the solve
/// (the closure's body, returning nothing), and what follows the `.unwrap_or(0.0);`.
fn program_parts() -> (String, String, String) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/analysis/idioms/subcommunicator_map.rs");
    let text = std::fs::read_to_string(&path).expect("the idiom program");
    let (open, close) = (
        "        .map(|sub| {\n",
        "        })\n        .unwrap_or(0.0);\n",
    );
    let start = text.find("    let change = world").expect("the split");
    let body_start = text.find(open).expect("the map") + open.len();
    let body_end = text.find(close).expect("the unwrap_or");
    let body = text[body_start..body_end]
        .replace("return total;", "return;")
        .replace("            total\n", "");
    let tail = text[body_end + close.len()..].replace(
        "eprintln!(\"rank {}: last summed change {change:.3e}\", world.rank());",
        "",
    );
    (text[..start].to_string(), body, tail)
}

/// The program with its solve inside `open` .. `close`.
fn variant(open: &str, close: &str) -> String {
    let (head, body, tail) = program_parts();
    format!("{head}{open}\n{body}{close}\n{tail}")
}

/// The main loop is the `for` over the steps, with the halo exchange on `sub`'s ranks and the
/// reduction on `sub`.
fn assert_solved_on_sub(src: &str) {
    let a = analyze_source("t.rs", src, &Options::default());
    assert!(a.has_structure(), "{}\n{src}", a.render_diagnostics());
    let text = emit::render(&a.structure, emit::Format::Text);
    for expected in [
        "main loop: for",
        "nearest_neighbor by single_call with [rank - 1, rank + 1]",
        "reduction by single_call with [all]: mpi::all_reduce_into",
    ] {
        assert!(text.contains(expected), "`{expected}` not in\n{text}");
    }
}

#[test]
fn option_map_on_the_split_communicator_is_no_loop() {
    let (head, body, tail) = program_parts();
    assert_solved_on_sub(&format!(
        "{head}let _ = world.split_by_color(color).map(|sub| {{\n{body}}}).unwrap_or(());\n{tail}"
    ));
}

#[test]
fn if_let_binds_the_split_communicator() {
    assert_solved_on_sub(&variant(
        "if let Some(sub) = world.split_by_color(color) {",
        "}",
    ));
}

#[test]
fn a_match_arm_binds_the_split_communicator() {
    assert_solved_on_sub(&variant(
        "match world.split_by_color(color) {\nSome(sub) => {",
        "}\nNone => {}\n}",
    ));
}

#[test]
fn let_else_binds_the_split_communicator() {
    assert_solved_on_sub(&variant(
        "let Some(sub) = world.split_by_color(color) else { return; };",
        "",
    ));
}
