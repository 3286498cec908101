//! rsmpi programs that solve on a communicator split off the world: however the program takes the
//! communicator out of the split's `Option` (`if let`, `match`, `let .. else`, `Option::map`), the
//! names it binds are that communicator, its processes are peers, and `Option::map` on it is no
//! loop. Found on rsmpi's own `dyn_communicator` example, which the analyzer once took for an
//! iterative solver.

use mheta_analyzer::{analyze_source, emit, Options};

/// The solve on `sub`, written inside `open` .. `close` (`{body}` is where it goes).
const SOLVE: &str = "\
            let (rank, size) = (sub.rank(), sub.size());
            let n = 100;
            let mut u = vec![0.0f64; n + 2];
            let mut next = u.clone();
            let mut total = 0.0;
            for _ in 0..50 {
                if rank > 0 {
                    let left = sub.process_at_rank(rank - 1);
                    let mut ghost = [0.0];
                    send_receive_into(&u[1..2], &left, &mut ghost, &left);
                    u[0] = ghost[0];
                }
                if rank + 1 < size {
                    let right = sub.process_at_rank(rank + 1);
                    let mut ghost = [0.0];
                    send_receive_into(&u[n..n + 1], &right, &mut ghost, &right);
                    u[n + 1] = ghost[0];
                }
                let mut local = 0.0;
                for i in 1..=n {
                    next[i] = 0.5 * (u[i - 1] + u[i + 1]);
                    local += (next[i] - u[i]).abs();
                }
                std::mem::swap(&mut u, &mut next);
                sub.all_reduce_into(&local, &mut total, SystemOperation::sum());
            }
            println!(\"{total}\");";

fn program(open: &str, close: &str) -> String {
    format!(
        "use mpi::collective::SystemOperation;\n\
         use mpi::point_to_point::send_receive_into;\n\
         use mpi::topology::Color;\n\
         use mpi::traits::*;\n\
         fn main() {{\n\
             let universe = mpi::initialize().unwrap();\n\
             let world = universe.world();\n\
             let color = Color::with_value(world.rank() % 2);\n\
             {open}\n{SOLVE}\n{close}\n\
         }}\n"
    )
}

/// The text rendering of the analysis of `src`, which must find a solver.
fn analyzed(src: &str) -> String {
    let a = analyze_source("t.rs", src, &Options::default());
    assert!(a.has_structure(), "{}\n{src}", a.render_diagnostics());
    emit::render(&a.structure, emit::Format::Text)
}

/// The main loop is the `for` over the steps, with the halo exchange on `sub`'s ranks and the
/// reduction on `sub`.
fn assert_solved_on_sub(text: &str) {
    assert!(text.contains("main loop: for"), "{text}");
    assert!(
        text.contains("nearest_neighbor by single_call with [rank - 1, rank + 1]"),
        "{text}"
    );
    assert!(
        text.contains("reduction by single_call with [all]: mpi::all_reduce_into"),
        "{text}"
    );
}

#[test]
fn if_let_binds_the_split_communicator() {
    let src = program("if let Some(sub) = world.split_by_color(color) {", "}");
    assert_solved_on_sub(&analyzed(&src));
}

#[test]
fn a_match_arm_binds_the_split_communicator() {
    let src = program(
        "match world.split_by_color(color) {\n Some(sub) => {",
        "}\n None => {}\n }",
    );
    assert_solved_on_sub(&analyzed(&src));
}

#[test]
fn let_else_binds_the_split_communicator() {
    let src = program(
        "let Some(sub) = world.split_by_color(color) else { return; };",
        "",
    );
    assert_solved_on_sub(&analyzed(&src));
}

#[test]
fn option_map_on_the_split_communicator_is_no_loop() {
    let src = program(
        "let _ = world.split_by_color(color).map(|sub| {",
        "}).unwrap_or(());",
    );
    assert_solved_on_sub(&analyzed(&src));
    // A closure that only calls a communicating helper once: nothing iterates.
    let once = "use mpi::collective::SystemOperation;\n\
                use mpi::topology::{Color, SimpleCommunicator};\n\
                use mpi::traits::*;\n\
                fn prefix(group: &SimpleCommunicator, x: i32) -> i32 {\n\
                    let mut sum = 0;\n\
                    group.scan_into(&x, &mut sum, SystemOperation::sum());\n\
                    println!(\"{sum}\");\n\
                    sum\n\
                }\n\
                fn main() {\n\
                    let universe = mpi::initialize().unwrap();\n\
                    let world = universe.world();\n\
                    let rank = world.rank();\n\
                    let s = world.split_by_color(Color::with_value(rank % 2)).map(|g| prefix(&g, rank));\n\
                    println!(\"{s:?}\");\n\
                }\n";
    let a = analyze_source("t.rs", once, &Options::default());
    assert!(
        !a.has_structure(),
        "{}",
        emit::render(&a.structure, emit::Format::Text)
    );
    assert!(
        a.render_diagnostics()
            .contains("no iterative loop that communicates"),
        "{}",
        a.render_diagnostics()
    );
}
