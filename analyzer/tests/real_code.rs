//! Constructs met in public rsmpi programs that the analyzer read wrongly: each program here is
//! written in our own words around one construct, with what the structure must show.

use mheta_analyzer::{analyze_source, Options};

/// The text structure and the diagnostics' messages of `src`.
fn analyze(src: &str) -> (String, Vec<String>) {
    let a = analyze_source("t.rs", src, &Options::default());
    let text = mheta_analyzer::emit::render(&a.structure, mheta_analyzer::emit::Format::Text);
    let messages = a.diagnostics.iter().map(|d| d.message.clone()).collect();
    (text, messages)
}

/// A program with rsmpi's prelude whose `main` starts MPI and then runs `body`.
fn program(items: &str, body: &str) -> String {
    format!(
        "use mpi::traits::*;\nuse mpi::collective::SystemOperation;\nuse mpi::topology::SimpleCommunicator;\n\
         {items}\nfn main() {{\n let universe = mpi::initialize().unwrap();\n let world = universe.world();\n\
         {body}\n}}\n"
    )
}

/// `cells[i].heat += 0.5` is arithmetic on an element, not glue such as `self.steps += 1`: the
/// loop around it computes, so the time loop holding it and a broadcast is the main loop.
#[test]
fn compound_assignment_to_an_element_field_computes() {
    let (text, _) = analyze(&program(
        "struct Cell { heat: f64 }",
        "let mut cells: Vec<Cell> = (0..64).map(|_| Cell { heat: 1.0 }).collect();\n\
         let mut total = vec![0.0f64; 64];\n\
         for _step in 0..100 {\n\
           for i in 0..cells.len() { cells[i].heat += 0.5; }\n\
           world.process_at_rank(0).broadcast_into(&mut total[..]);\n\
         }",
    ));
    assert!(text.contains("main loop: for"), "{text}");
    assert!(text.contains("stage 0 Loop depth 1"), "{text}");
    // Unpacking into an element's field, converted or not, is still glue: the loop only
    // communicates.
    let (text, messages) = analyze(&program(
        "struct Cell { heat: f64 }",
        "let mut cells: Vec<Cell> = (0..64).map(|_| Cell { heat: 1.0 }).collect();\n\
         let mut v = 0.0f32;\n\
         for _step in 0..100 {\n\
           world.process_at_rank(0).broadcast_into(&mut v);\n\
           for i in 0..cells.len() { cells[i].heat = v as f64; }\n\
         }",
    ));
    assert!(!text.contains("stage"), "{text}");
    assert!(
        messages.iter().any(|m| m.starts_with("no solver found")),
        "{messages:?}"
    );
}

/// `ps[i].x = ps[i].x + ps[i].v * dt` computes whether or not `ps` was declared with a value; a
/// typed `let` without one still declares the array.
#[test]
fn an_array_declared_before_its_value_is_data() {
    let (text, _) = analyze(&program(
        "struct P { x: f64, v: f64 }",
        "let mut ps: Vec<P>;\n\
         ps = (0..100).map(|i| P { x: i as f64, v: 1.0 }).collect();\n\
         for _step in 0..50 {\n\
           let mut dt = 0.0;\n\
           world.all_reduce_into(&ps[0].v, &mut dt, SystemOperation::min());\n\
           for i in 0..ps.len() { ps[i].x = ps[i].x + ps[i].v * dt; }\n\
         }",
    ));
    assert!(text.contains("variable ps: Replicated P"), "{text}");
    assert!(
        text.contains("reads [ps, dt] writes [ps]") || text.contains("reads [dt, ps] writes [ps]"),
        "{text}"
    );
}

/// A loop bounded by a `size` that is not the number of processes is an ordinary loop, and a
/// loop over the ranks that computes (a pivot or a ring's steps) is an iteration; one that talks
/// to the rank it is at is still set-up.
#[test]
fn loops_bounded_by_size() {
    let pivot = |bound: &str| {
        program(
            "",
            &format!(
                "let p = world.size();\n let size = 4096;\n let mut x = vec![1.0f64; 4096];\n\
                 for k in 0..{bound} {{\n let mut s = 0.0;\n\
                   world.all_reduce_into(&x[k as usize], &mut s, SystemOperation::sum());\n\
                   for j in 0..x.len() {{ x[j] = x[j].min(s + x[k as usize]); }}\n }}"
            ),
        )
    };
    for bound in ["size", "p"] {
        let (text, messages) = analyze(&pivot(bound));
        assert!(
            text.contains("main loop: for"),
            "{bound}: {text}\n{messages:?}"
        );
    }
    // Broadcasting every rank's value in turn, then keeping it: set-up, not the solver's loop.
    let (text, _) = analyze(&program(
        "",
        "let size = world.size();\n let rank = world.rank();\n let mut layers = Vec::new();\n\
         for root in 0..size {\n let mut k = if root == rank { 1.0 } else { 0.0 };\n\
           world.process_at_rank(root).broadcast_into(&mut k);\n layers.push(k);\n }\n\
         let mut u = vec![0.0f64; 16];\n\
         for _ in 0..100 {\n for i in 0..16 { u[i] += layers[0]; }\n\
           let mut s = 0.0;\n world.all_reduce_into(&u[0], &mut s, SystemOperation::sum());\n }",
    ));
    // The set-up loop is at line 9, the time loop at 17.
    assert!(text.contains("main loop: for @ t.rs:17:"), "{text}");
}

/// Two types with a method of one name: the call resolves by the number of arguments, then by
/// the receiver's type when the body shows it.
#[test]
fn methods_of_one_name_on_two_types() {
    let items = |gpu_args: &str| {
        format!(
            "struct Gpu {{ n: usize }}\nimpl Gpu {{ fn step(&mut self{gpu_args}) {{ self.n += 1; }} }}\n\
             struct Sim {{ data: Vec<f64> }}\nimpl Sim {{ fn step(&mut self, world: &SimpleCommunicator) {{\n\
             for x in self.data.iter_mut() {{ *x *= 0.5; }}\n\
             world.process_at_rank(0).broadcast_into(&mut self.data[..]);\n }} }}"
        )
    };
    let body = |sim: &str| {
        format!(
            "{sim}\n let mut gpu = Gpu {{ n: 0 }};\n\
             for _it in 0..100 {{ sim.step(&world); }}\n let _ = &mut gpu;"
        )
    };
    for (gpu_args, sim) in [
        ("", "let mut sim = Sim { data: vec![1.0; 64] };"),
        (
            ", _w: &SimpleCommunicator",
            "let mut sim = Sim { data: vec![1.0; 64] };",
        ),
        (
            ", _w: &SimpleCommunicator",
            "let mut sim: Sim = Sim { data: vec![1.0; 64] };",
        ),
    ] {
        let (text, messages) = analyze(&program(&items(gpu_args), &body(sim)));
        assert!(
            text.contains("broadcast by single_call"),
            "{gpu_args} / {sim}: {text}\n{messages:?}"
        );
    }
}

/// A universe kept in an `Option` field and taken out by `if let Some(u) = &self.universe { ..
/// } else { return; }` gives the communicator the exchange uses.
#[test]
fn a_universe_in_an_option_field() {
    let src = "use mpi::traits::*;\n\
        pub struct Sim { pub rank: i32, pub size: i32, pub universe: Option<mpi::environment::Universe>, pub data: Vec<f64> }\n\
        impl Sim {\n pub fn exchange(&mut self) {\n\
          let world = if let Some(universe) = &self.universe { universe.world() } else { return; };\n\
          let right = if self.rank < self.size - 1 { self.rank + 1 } else { -1 };\n\
          if right >= 0 { world.process_at_rank(right).send(&self.data[..]); }\n }\n\
         pub fn step(&mut self) {\n for x in self.data.iter_mut() { *x += 1.0; }\n self.exchange();\n }\n}\n\
        fn main() {\n let mut sim = Sim { rank: 0, size: 1, universe: mpi::initialize(), data: vec![0.0; 8] };\n\
         for _ in 0..10 { sim.step(); }\n}\n";
    let (text, messages) = analyze(src);
    assert!(
        text.contains("nearest_neighbor by function with [rank + 1]: mpi::send"),
        "{text}\n{messages:?}"
    );
}

/// A `&mut` parameter passed on by name to a function that fills it is written there.
#[test]
fn a_mutable_reference_passed_on_is_written() {
    let (text, _) = analyze(&program(
        "fn fill(dst: &mut Vec<f64>, value: f64) { for i in 0..dst.len() { dst[i] = value; } }\n\
         fn step(world: &SimpleCommunicator, u: &mut Vec<f64>) {\n let mut m = 0.0;\n\
           world.all_reduce_into(&u[0], &mut m, SystemOperation::max());\n fill(u, m);\n}",
        "let mut u = vec![0.0f64; 4096];\n let mut w = vec![0.0f64; 4096];\n\
         for _it in 0..100 {\n step(&world, &mut u);\n\
           for i in 0..w.len() { w[i] = u[i] + 1.0; }\n }",
    ));
    assert!(text.contains("reads [u, m] writes [u]"), "{text}");
}

/// A guard on a neighbour computed from the rank (`if right >= 0`, `if partner != NONE`) is a
/// rank guard: its arms' communication is one event per guard, with no "depends on data"
/// warning.
#[test]
fn guards_on_neighbours_computed_from_the_rank() {
    let by_glue = program(
        "",
        "let rank = world.rank();\n let size = world.size();\n\
         let right = if rank < size - 1 { rank + 1 } else { -1 };\n\
         let mut parts: Vec<f64> = vec![0.0; 16];\n\
         for _it in 0..200 {\n if right >= 0 {\n\
           let (msg, _) = world.process_at_rank(right).receive_vec::<f64>();\n\
           for m in msg { parts.push(m); }\n }\n\
           for p in parts.iter_mut() { *p *= 0.5; }\n }",
    );
    let by_function = program(
        "const NONE: i32 = -1;\n\
         fn partner_of(rank: i32, phase: i32, size: i32) -> i32 {\n\
           let p = if (rank + phase) % 2 == 0 { rank + 1 } else { rank - 1 };\n\
           if p < 0 || p >= size { NONE } else { p }\n}",
        "let rank = world.rank();\n let size = world.size();\n let mut keys = vec![0u64; 1000];\n\
         let mut other = vec![0u64; 1000];\n\
         for phase in 0..2 * size {\n let partner = partner_of(rank, phase, size);\n\
           if partner != NONE {\n let p = world.process_at_rank(partner);\n\
             mpi::point_to_point::send_receive_into(&keys[..], &p, &mut other[..], &p);\n\
             keys.extend_from_slice(&other);\n keys.sort();\n keys.truncate(1000);\n }\n }",
    );
    for src in [by_glue, by_function] {
        let (text, messages) = analyze(&src);
        assert!(text.contains("nearest_neighbor"), "{text}");
        assert!(
            !messages.iter().any(|m| m.contains("depends on data")),
            "{messages:?}"
        );
    }
}

/// A send buffer reinterpreted in an `unsafe` block (`transmute`) moves nothing: the exchange
/// stays one event.
#[test]
fn a_transmuted_send_buffer_is_glue() {
    let (text, messages) = analyze(&program(
        "",
        "let rank = world.rank();\n let size = world.size();\n\
         let up: Option<i32> = if rank + 1 < size { Some(rank + 1) } else { None };\n\
         let down: Option<i32> = if rank > 0 { Some(rank - 1) } else { None };\n\
         let mut field = vec![0.0f64; 1024];\n let mut ghost = vec![0.0f64; 32];\n\
         let mut lo = [0.0f64; 32];\n let mut hi = [0.0f64; 32];\n\
         for _it in 0..500 {\n mpi::request::scope(|scope| {\n let mut guards = Vec::new();\n\
           if let Some(up) = up {\n guards.push(mpi::request::WaitGuard::from(world.process_at_rank(up).immediate_send(scope, \
             unsafe { std::mem::transmute::<&mut [f64; 32], &mut [u64; 32]>(&mut hi) })));\n }\n\
           if let Some(down) = down {\n guards.push(mpi::request::WaitGuard::from(world.process_at_rank(down).immediate_send(scope, \
             unsafe { std::mem::transmute::<&mut [f64; 32], &mut [u64; 32]>(&mut lo) })));\n\
             guards.push(mpi::request::WaitGuard::from(world.process_at_rank(down).immediate_receive_into(scope, &mut ghost[..])));\n }\n\
         });\n for i in 1..1023 { field[i] = 0.5 * field[i] + 0.25 * ghost[i % 32]; }\n }",
    ));
    assert_eq!(text.matches("comm event").count(), 1, "{text}");
    assert!(messages.is_empty(), "{messages:?}");
}

/// ndarray's `s![..]` slices: no "may hide communication" warning, and what it names is read.
#[test]
fn ndarray_slicing_macro_is_known() {
    let (text, messages) = analyze(&program(
        "use ndarray::{Array2, s};",
        "let mut a = Array2::<f64>::zeros((64, 3));\n let mut row = vec![0.0f64; 3];\n let k = 1;\n\
         for _it in 0..100 {\n let total = a.slice(s![.., k]).sum();\n row[0] = total;\n\
           world.process_at_rank(0).broadcast_into(&mut row[..]);\n a[[0, 0]] = row[0];\n }",
    ));
    assert!(
        !messages.iter().any(|m| m.contains("macro `s!`")),
        "{messages:?}"
    );
    assert!(text.contains("reads [a, k, total]"), "{text}");
}

/// A local closure that communicates makes its calls where it is called, not where it is
/// defined.
#[test]
fn a_communicating_closure_communicates_where_it_is_called() {
    let (text, _) = analyze(&program(
        "",
        "let mut v = vec![1.0f64; 64];\n\
         let report = |v: &Vec<f64>| {\n let local: f64 = v.iter().sum();\n let mut total = 0.0;\n\
           world.all_reduce_into(&local, &mut total, SystemOperation::sum());\n total\n };\n\
         for step in 1..=1000 {\n for x in v.iter_mut() { *x *= 0.5; }\n\
           world.process_at_rank(0).broadcast_into(&mut v[..]);\n\
           if step % 10 == 0 { println!(\"{}\", report(&v)); }\n }",
    ));
    assert!(text.contains("reduction by single_call"), "{text}");
    assert!(
        text.contains("when step % 10 == 0 (frequency 0.1)"),
        "{text}"
    );
}

/// Calling a closure the solver is given runs code the analysis does not see: a warning says
/// so (it was silent), and the closure parameter is no array variable.
#[test]
fn a_closure_parameter_called_in_the_main_loop_is_named() {
    for ty in [
        "&mut dyn FnMut(usize, &Vec<f64>)",
        "&mut impl FnMut(usize, &Vec<f64>)",
        "F",
    ] {
        let generics = if ty == "F" {
            "<F: FnMut(usize, &Vec<f64>)>"
        } else {
            ""
        };
        let items = format!(
            "fn run{generics}(world: &SimpleCommunicator, v: &mut Vec<f64>, report: {ty}) {{\n\
             for step in 1..=1000 {{\n for x in v.iter_mut() {{ *x *= 0.5; }}\n\
               world.process_at_rank(0).broadcast_into(&mut v[..]);\n\
               if step % 10 == 0 {{ report(step, v); }}\n }}\n}}"
        );
        let by = if ty.starts_with('&') { "&mut " } else { "" };
        let (text, messages) = analyze(&program(
            &items,
            &format!(
                "let mut v = vec![1.0f64; 64];\n let mut seen = 0;\n\
                 run(&world, &mut v, {by}|s, _v: &Vec<f64>| {{ seen = s; }});"
            ),
        ));
        assert!(
            messages
                .iter()
                .any(|m| m.starts_with("`report` is a closure this function is given")),
            "{ty}: {messages:?}"
        );
        assert!(!text.contains("variable report"), "{ty}: {text}");
    }
}

/// A closure the solver is given, called once from a function that defined it and that
/// communicates, makes its calls where the solver calls it: the solver's one call site binds the
/// parameter (also through a type alias of `dyn FnMut`, and a `let` that renames the closure).
/// Called from two places the parameter could be either closure: it stays unanalysed, with the
/// warning.
#[test]
fn a_closure_parameter_bound_at_the_one_call_site() {
    let items = "type Report<'a> = dyn FnMut(usize, &Vec<f64>) -> f64 + 'a;\n\
        fn run(world: &SimpleCommunicator, v: &mut Vec<f64>, steps: usize, report: &mut Report<'_>) {\n\
         for step in 1..=steps {\n for x in v.iter_mut() { *x *= 0.5; }\n\
           world.process_at_rank(0).broadcast_into(&mut v[..]);\n\
           if step % 10 == 0 { report(step, v); }\n }\n}";
    let closure = "let mut v = vec![1.0f64; 64];\n\
        let total = |_s: usize, v: &Vec<f64>| -> f64 {\n let local: f64 = v.iter().sum();\n\
          let mut all = 0.0;\n world.all_reduce_into(&local, &mut all, SystemOperation::sum());\n all\n };\n\
        let mut total = total;\n";
    let (text, messages) = analyze(&program(
        items,
        &format!("{closure} run(&world, &mut v, 1000, &mut total);"),
    ));
    assert!(text.contains("solver t::run"), "{text}");
    assert!(text.contains("reduction by single_call"), "{text}");
    assert!(
        text.contains("when step % 10 == 0 (frequency 0.1)"),
        "{text}"
    );
    assert!(
        !messages
            .iter()
            .any(|m| m.contains("closure this function is given")),
        "{messages:?}"
    );
    // Passed on to a function the time loop calls, which calls it.
    let helper = "fn advance(world: &SimpleCommunicator, v: &mut Vec<f64>, step: usize, report: &mut dyn FnMut(usize, &Vec<f64>) -> f64) {\n\
         world.process_at_rank(0).broadcast_into(&mut v[..]);\n\
         for x in v.iter_mut() { *x *= 0.5; }\n\
         if step % 10 == 0 { report(step, v); }\n}";
    let (text, messages) = analyze(&program(
        helper,
        &format!("{closure} for step in 0..1000 {{ advance(&world, &mut v, step, &mut total); }}"),
    ));
    assert!(text.contains("solver t::main"), "{text}");
    assert!(text.contains("reduction by single_call"), "{text}");
    assert!(
        !messages
            .iter()
            .any(|m| m.contains("closure this function is given")),
        "{messages:?}"
    );
    // Two call sites: either closure may be the one called.
    let (text, messages) = analyze(&program(
        items,
        &format!(
            "{closure} run(&world, &mut v, 1000, &mut total);\n\
             run(&world, &mut v, 10, &mut |_s, _v| 0.0);"
        ),
    ));
    assert!(!text.contains("reduction"), "{text}");
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("`report` is a closure this function is given")),
        "{messages:?}"
    );
}

/// `if let Some(l) = nb.left()`, `left` a small method of the rank returning an `Option`: the
/// guard is envelope work, `l` is the neighbour it computes, and the request scope's exchange
/// is one nearest-neighbour event.
#[test]
fn a_neighbour_from_an_option_method() {
    let (text, messages) = analyze(&program(
        "struct Nb { rank: i32, size: i32 }\n\
         impl Nb {\n fn left(&self) -> Option<i32> { if self.rank > 0 { Some(self.rank - 1) } else { None } }\n\
           fn right(&self) -> Option<i32> { if self.rank + 1 < self.size { Some(self.rank + 1) } else { None } }\n}",
        "let nb = Nb { rank: world.rank(), size: world.size() };\n\
         let mut field = vec![0.0f64; 1024];\n let mut lo_g = vec![0.0f64; 32];\n let mut hi_g = vec![0.0f64; 32];\n\
         for _it in 0..500 {\n let lo = field[..32].to_vec();\n let hi = field[992..].to_vec();\n\
           mpi::request::multiple_scope(4, |scope, reqs| {\n\
             if let Some(l) = nb.left() {\n reqs.add(world.process_at_rank(l).immediate_receive_into(scope, &mut lo_g[..]));\n\
               reqs.add(world.process_at_rank(l).immediate_send(scope, &lo[..]));\n }\n\
             if let Some(r) = nb.right() {\n reqs.add(world.process_at_rank(r).immediate_receive_into(scope, &mut hi_g[..]));\n\
               reqs.add(world.process_at_rank(r).immediate_send(scope, &hi[..]));\n }\n\
             let mut done = Vec::new();\n reqs.wait_all(&mut done);\n });\n\
           for i in 1..1023 { field[i] = 0.5 * field[i] + 0.25 * (lo_g[i % 32] + hi_g[i % 32]); }\n }",
    ));
    assert_eq!(text.matches("comm event").count(), 1, "{text}");
    assert!(
        text.contains("nearest_neighbor by single_call with [nb.rank - 1, nb.rank + 1]"),
        "{text}"
    );
    assert!(messages.is_empty(), "{messages:?}");
}

/// Creating a communicator is collective over the one it is made from: a split every round of a
/// recursive sort, then an all-to-all on the half, is two events (the split was left out).
#[test]
fn communicator_constructors_in_the_loop_are_collectives() {
    let (text, _) = analyze(&program(
        "",
        "let mut keys: Vec<u64> = (0..1000).map(|i| (i * 7919) % 1000).collect();\n\
         let mut comm = world.duplicate();\n\
         while comm.size() > 1 {\n\
           keys.sort_unstable();\n\
           let half = comm.rank() < comm.size() / 2;\n\
           let next = comm.split_by_color(mpi::topology::Color::with_value(half as i32)).unwrap();\n\
           let mut got = vec![0u64; keys.len()];\n\
           next.all_to_all_into(&keys[..], &mut got[..]);\n\
           keys = got;\n\
           comm = next;\n\
         }",
    ));
    assert!(text.contains("main loop: while"), "{text}");
    assert!(text.contains("mpi::split_by_color"), "{text}");
    assert!(text.contains("mpi::all_to_all_into"), "{text}");
}

/// A helper called through its file's `use`: under another name (`use physics::energy as
/// total_energy`), or by a name two modules define (`use halo::step`, not `diag::step`).
#[test]
fn calls_resolve_through_use_items() {
    let modules = "mod physics {\n use mpi::traits::*;\n use mpi::collective::SystemOperation;\n\
        pub fn energy<C: Communicator>(c: &C, local: f64) -> f64 {\n let mut t = 0.0;\n\
          c.all_reduce_into(&local, &mut t, SystemOperation::sum());\n t\n }\n}\n\
        mod diag {\n use mpi::traits::*;\n pub fn step<C: Communicator>(c: &C, v: &mut [f64]) {\n\
          c.process_at_rank(0).broadcast_into(&mut v[..]);\n }\n}\n\
        mod halo {\n use mpi::traits::*;\n pub fn step<C: Communicator>(c: &C, v: &mut [f64]) {\n\
          let r = c.rank();\n let n = c.size();\n let out = v[1];\n let mut inc = 0.0f64;\n\
          mpi::point_to_point::send_receive_into(&out, &c.process_at_rank((r + 1) % n), &mut inc, &c.process_at_rank((r + n - 1) % n));\n\
          v[0] = inc;\n }\n}\n";
    let (text, _) = analyze(&program(
        &format!("{modules}use physics::energy as total_energy;"),
        "let mut u = vec![1.0f64; 64];\n\
         for _step in 0..100 {\n for x in u.iter_mut() { *x *= 0.99; }\n\
           let local: f64 = u.iter().sum();\n if total_energy(&world, local) < 1.0 { break; }\n }",
    ));
    assert!(text.contains("solver t::main"), "{text}");
    assert!(text.contains("mpi::all_reduce_into"), "{text}");
    let (text, _) = analyze(&program(
        &format!("{modules}use halo::step;"),
        "let mut v = vec![0.5f64; 32];\n\
         for _it in 0..50 {\n step(&world, &mut v);\n\
           for i in 1..v.len() - 1 { v[i] = 0.5 * (v[i - 1] + v[i + 1]); }\n }\n\
         diag::step(&world, &mut v);",
    ));
    assert!(
        text.contains("nearest_neighbor by function with [(r + 1) % n, (r + n - 1) % n]"),
        "{text}"
    );
    assert!(!text.contains("broadcast"), "{text}");
}

/// A time loop that hands a step function its state by `&mut` iterates, even when the step's
/// own loop communicates and computes (a sweep over temperatures): it is no benchmark wrapper
/// repeating a solver. The step's loop, reached through another function, is no second solver.
#[test]
fn a_loop_passing_state_to_a_communicating_step_iterates() {
    let items = "fn sweep(world: &SimpleCommunicator, e: &mut Vec<f64>, t: usize) {\n\
          for i in 0..t {\n for x in e.iter_mut() { *x *= 0.5 + i as f64; }\n\
            world.process_at_rank(0).broadcast_into(&mut e[..]);\n }\n}\n\
        fn sample(world: &SimpleCommunicator, e: &mut Vec<f64>) {\n\
          let mut swap = 0u8;\n world.process_at_rank(0).broadcast_into(&mut swap);\n sweep(world, e, 4);\n}";
    let (text, _) = analyze(&program(
        items,
        "let mut e = vec![1.0f64; 16];\n let mut trace = Vec::new();\n\
         for _k in 0..1000 {\n sample(&world, &mut e);\n trace.push(e[0]);\n }",
    ));
    assert!(text.contains("solver t::main"), "{text}");
    assert!(!text.contains("solver t::sweep"), "{text}");
    // Repeating a whole solve, each time afresh, is a benchmark: the callee is the solver.
    let (text, _) = analyze(&program(
        items,
        "let mut times = Vec::new();\n\
         for _rep in 0..5 {\n let t = mpi::time();\n let mut e = vec![1.0f64; 16];\n\
           sweep(&world, &mut e, 100);\n times.push(mpi::time() - t);\n }",
    ));
    assert!(text.contains("solver t::sweep"), "{text}");
    assert!(!text.contains("solver t::main"), "{text}");
}

/// Unit tests (`#[test]` functions, `#[cfg(test)]` modules) are not the program: their loops
/// are no solvers.
#[test]
fn unit_tests_are_not_solvers() {
    let (text, _) = analyze(&program(
        "#[cfg(test)]\nmod tests {\n use mpi::traits::*;\n #[test]\n fn loops() {\n\
           let u = mpi::initialize().unwrap();\n let w = u.world();\n let mut x = vec![1.0f64; 4];\n\
           for _ in 0..10 { for v in x.iter_mut() { *v += 1.0; } w.process_at_rank(0).broadcast_into(&mut x[..]); }\n }\n}",
        "let mut a = vec![1.0f64; 8];\n\
         for _ in 0..10 { for v in a.iter_mut() { *v *= 2.0; } world.process_at_rank(0).broadcast_into(&mut a[..]); }",
    ));
    assert!(text.contains("solver t::main"), "{text}");
    assert!(!text.contains("tests::loops"), "{text}");
}

/// A call in a branch's condition (`if let Some(_) = any.immediate_probe()`, `match
/// coll.test_any()`) runs before either arm: it is communication before the branch, not
/// dropped. `immediate_probe` is catalogued.
#[test]
fn communication_in_a_branch_condition_is_kept() {
    let (text, _) = analyze(&program(
        "",
        "let mut work = vec![1.0f64; 64];\n let mut got = 0.0f64;\n\
         for _tick in 0..1000 {\n for w in work.iter_mut() { *w *= 0.5; }\n\
           world.process_at_rank(0).send(&work[63]);\n\
           if let Some(_st) = world.any_process().immediate_probe() {\n\
             let (v, _s) = world.any_process().receive::<f64>();\n got += v;\n }\n }",
    ));
    assert!(
        text.contains("mpi::immediate_probe, mpi::receive"),
        "{text}"
    );
    let (text, _) = analyze(&program(
        "",
        "let mut buf = vec![0u8; 4];\n let mut n = 0;\n\
         for _ in 0..100 {\n for b in buf.iter_mut() { *b = b.wrapping_add(1); }\n\
           mpi::request::multiple_scope(1, |scope, coll| {\n\
             coll.add(world.any_process().immediate_receive_into(scope, &mut buf[..]));\n\
             match coll.test_any() {\n Some(_) => { n += 1; }\n\
               None => { world.process_at_rank(0).send(&n); }\n }\n });\n }",
    ));
    assert!(text.contains("mpi::test_any"), "{text}");
}

/// `let go = { let root = ..; root.broadcast_into(&mut g); g };`: a block that communicates,
/// bound by a `let`, is its statements, then the binding (its broadcast was lost).
#[test]
fn a_let_bound_block_that_communicates() {
    let (text, _) = analyze(&program(
        "",
        "let mut u = vec![1.0f64; 64];\n\
         for step in 0..100 {\n\
           let go = {\n let mut go = step % 2 == 0;\n let root = world.process_at_rank(0);\n\
             root.broadcast_into(&mut go);\n go\n };\n\
           if go { for x in u.iter_mut() { *x *= 0.5; } }\n\
           world.process_at_rank(0).broadcast_into(&mut u[..]);\n }",
    ));
    assert_eq!(
        text.matches("broadcast by single_call").count(),
        2,
        "{text}"
    );
}

/// A trait method with an MPI implementation and a serial one, called on a receiver of a
/// generic type: the implementation that communicates is taken, with a warning naming the
/// other. Given a closure that only hands each message on (`|m| { Self::handle(m, ..) }`), the
/// call is still expanded (before, the closure was inlined and the call never resolved).
#[test]
fn a_trait_method_with_an_mpi_and_a_serial_implementation() {
    let items = "use std::rc::Rc;\n\
        trait Backend { fn exchange<F: FnMut(f64)>(&self, out: &[f64], on: F); }\n\
        struct Mpi { world: SimpleCommunicator }\n\
        impl Backend for Mpi {\n fn exchange<F: FnMut(f64)>(&self, out: &[f64], mut on: F) {\n\
          let n = self.world.size();\n let next = self.world.process_at_rank((self.world.rank() + 1) % n);\n\
          next.send(&out[..]);\n let (v, _) = self.world.any_process().receive_vec::<f64>();\n on(v[0]);\n }\n}\n\
        struct Local;\n\
        impl Backend for Local { fn exchange<F: FnMut(f64)>(&self, out: &[f64], mut on: F) { on(out[0]); } }\n\
        struct Model<B: Backend> { backend: Rc<B>, cells: Vec<f64> }\n\
        impl<B: Backend> Model<B> {\n\
          fn handle(m: f64, into: &mut Vec<f64>) { into.push(m); }\n\
          fn run(&mut self, steps: usize) {\n for _ in 0..steps {\n\
            for c in self.cells.iter_mut() { *c *= 0.5; }\n let mut got = Vec::new();\n\
            let b = &self.backend;\n b.exchange(&self.cells, |m| { Self::handle(m, &mut got) });\n\
            self.cells[0] += got[0];\n }\n }\n}";
    let (text, messages) = analyze(&program(
        items,
        "let mut m = Model { backend: Rc::new(Mpi { world }), cells: vec![1.0; 8] };\n m.run(100);",
    ));
    assert!(text.contains("solver t::Model::run"), "{text}");
    assert!(text.contains("mpi::send, mpi::receive_vec"), "{text}");
    assert!(
        messages
            .iter()
            .any(|m| m.starts_with("`Mpi::exchange` is taken for this call")
                && m.contains("`Local::exchange` would not")),
        "{messages:?}"
    );
}

/// A counted time loop that computes and receives from any rank iterates: it is no collection
/// loop (`for _ in 1..size { any.receive() }`, which stays one).
#[test]
fn a_counted_loop_that_computes_and_receives_from_any_rank() {
    let (text, _) = analyze(&program(
        "",
        "let mut work = vec![1.0f64; 64];\n let mut got = 0u32;\n\
         for _tick in 0..1000 {\n for w in work.iter_mut() { *w *= 0.5; }\n\
           let (v, _s) = world.any_process().receive::<u32>();\n got += v;\n }",
    ));
    assert!(text.contains("main loop: for"), "{text}");
    let (text, messages) = analyze(&program(
        "",
        "let size = world.size();\n let mut total = 0u32;\n\
         for _ in 1..size {\n let (v, _s) = world.any_process().receive::<u32>();\n total += v * 2;\n }",
    ));
    assert!(!text.contains("main loop"), "{text}");
    assert!(
        messages.iter().any(|m| m.starts_with("no solver found")),
        "{messages:?}"
    );
}

/// A loop that starts by polling (`immediate_probe`) waits for no predecessor: it is no tile
/// loop, whose form would leave out the answer sent in the arm (a dining philosopher thinking
/// while it answers requests).
#[test]
fn a_loop_that_polls_first_is_no_tile_loop() {
    let (text, messages) = analyze(&program(
        "",
        "let mut work = vec![1.0f64; 64];\n\
         loop {\n for w in work.iter_mut() { *w *= 0.5; }\n\
           for _ in 0..5 {\n\
             if let Some(_) = world.any_process().immediate_probe() {\n\
               let (msg, status) = world.any_process().receive::<u8>();\n\
               if msg == 1 { world.process_at_rank(status.source_rank()).send(&2u8); }\n\
               work[0] += 1.0;\n }\n }\n\
           if work[0] > 1e9 { break; }\n }",
    ));
    assert!(!text.contains("tiles"), "{text}");
    assert!(
        text.contains("mpi::immediate_probe") && text.contains("mpi::send"),
        "{text}"
    );
    assert!(
        !messages.iter().any(|m| m.contains("tile loop")),
        "{messages:?}"
    );
}

/// Two arms that bind the same name to different peers (`let peer = rank + half` and `let peer
/// = rank - half`) talk to both, each arm to its own; a peer stepped later (`to += 1`) is left
/// as its name.
#[test]
fn arms_binding_one_name_to_different_peers() {
    let (text, _) = analyze(&program(
        "",
        "let rank = world.rank();\n let half = world.size() / 2;\n let mut buf = vec![0u8; 64];\n\
         for _rep in 0..100 {\n for b in buf.iter_mut() { *b = b.wrapping_add(1); }\n\
           match rank {\n\
             _ if rank < half => {\n let peer = rank + half;\n world.process_at_rank(peer).send(&buf[..]);\n\
               let (_m, _s) = world.process_at_rank(peer).receive_vec::<u8>();\n }\n\
             _ => {\n let peer = rank - half;\n let (_m, _s) = world.process_at_rank(peer).receive_vec::<u8>();\n\
               world.process_at_rank(peer).send(&buf[..]);\n }\n }\n }",
    ));
    assert!(text.contains("with [rank + half, rank - half]"), "{text}");
}

/// A loop over the ranks in which only the rank whose turn it is computes (`if rank == i {
/// print } barrier`, the ranks printing in order) is output, not an iteration: a function that
/// holds only such a loop is no solver, called or not.
#[test]
fn ranks_taking_turns_are_no_iteration() {
    let items = "pub fn dump(block: &[f64], world: &SimpleCommunicator) {\n\
          for turn in 0..world.size() {\n\
            if world.rank() == turn { println!(\"{} {:?}\", turn, block); }\n\
            world.barrier();\n }\n}";
    let (text, _) = analyze(&program(
        items,
        "let mut u = vec![1.0f64; 32];\n let mut s = 0.0;\n\
         for _it in 0..100 {\n for x in u.iter_mut() { *x *= 0.5; }\n\
           world.all_reduce_into(&u[0], &mut s, SystemOperation::sum());\n }",
    ));
    assert!(text.contains("solver t::main"), "{text}");
    assert!(!text.contains("solver t::dump"), "{text}");
    // A turn that is not the loop's own (`if rank == 0`) leaves the loop an iteration over
    // the ranks (a pivot's steps).
    let items = "pub fn sweep(block: &mut [f64], world: &SimpleCommunicator) {\n\
          for _pass in 0..world.size() {\n\
            if world.rank() == 0 { block[0] += 1.0; }\n\
            world.barrier();\n }\n}";
    let (text, _) = analyze(&program(
        items,
        "let mut u = vec![1.0f64; 32];\n sweep(&mut u, &world);",
    ));
    assert!(text.contains("solver t::sweep"), "{text}");
}

/// A guard around the universe (`UniverseGuard::new(mpi::initialize().unwrap())`, a type that
/// finalizes MPI when dropped) hands out the world: calls on it are communication.
#[test]
fn a_guard_around_the_universe() {
    let src = "use mpi::traits::*;\n\
        struct Guard(mpi::environment::Universe);\n\
        impl std::ops::Deref for Guard { type Target = mpi::environment::Universe; fn deref(&self) -> &Self::Target { &self.0 } }\n\
        impl Guard { fn new(u: mpi::environment::Universe) -> Self { Guard(u) } }\n\
        fn main() {\n let universe = Guard::new(mpi::initialize().unwrap());\n let world = universe.world();\n\
          let mut u = vec![1.0f64; 32];\n\
          for _it in 0..100 {\n for x in u.iter_mut() { *x *= 0.5; }\n\
            let (v, _s) = world.any_process().receive::<f64>();\n u[0] += v;\n }\n}\n";
    let (text, _) = analyze(src);
    assert!(text.contains("mpi::receive"), "{text}");
}

/// A method of a trait with two implementations that communicate, called on a trait object
/// (`tasks[k].run(..)`): either may run, so the event holds the calls of both; a unit struct's
/// own method (`A.run(..)`) is that type's only.
#[test]
fn a_trait_object_with_two_communicating_implementations() {
    let items = "trait Step { fn run(&self, w: &SimpleCommunicator); }\n\
        struct A;\n struct B;\n\
        impl Step for A { fn run(&self, w: &SimpleCommunicator) { w.barrier(); } }\n\
        impl Step for B { fn run(&self, w: &SimpleCommunicator) { let mut x = 0.0f64; w.process_at_rank(0).broadcast_into(&mut x); } }";
    let (text, messages) = analyze(&program(
        items,
        "let steps: Vec<Box<dyn Step>> = vec![Box::new(A), Box::new(B)];\n let mut u = vec![1.0f64; 32];\n\
         for it in 0..100 {\n for x in u.iter_mut() { *x *= 0.5; }\n steps[it % 2].run(&world);\n }",
    ));
    assert!(text.contains("mpi::barrier, mpi::broadcast_into"), "{text}");
    assert!(
        !messages.iter().any(|m| m.contains("would not")),
        "{messages:?}"
    );
    let (text, _) = analyze(&program(
        items,
        "let mut u = vec![1.0f64; 32];\n\
         for _it in 0..100 {\n for x in u.iter_mut() { *x *= 0.5; }\n B.run(&world);\n }",
    ));
    assert!(text.contains(": mpi::broadcast_into @"), "{text}");
    assert!(!text.contains("mpi::barrier"), "{text}");
}

/// A wrapper that delegates to the type it wraps (`fn step(&mut self) { self.inner.step() }`,
/// a Python binding's) is not the callee of its own `self.inner.step()`: the step runs once.
#[test]
fn a_wrapper_delegating_to_its_field() {
    let items = "struct Sim { world: SimpleCommunicator, u: Vec<f64> }\n\
        impl Sim { fn step(&mut self) {\n for x in self.u.iter_mut() { *x *= 0.5; }\n\
          let mut s = 0.0;\n self.world.all_reduce_into(&self.u[0], &mut s, SystemOperation::sum());\n } }\n\
        struct Wrapped { inner: Sim }\n\
        impl Wrapped {\n fn step(&mut self) { self.inner.step(); }\n\
          fn run(&mut self, n: usize) { for _ in 0..n { self.inner.step(); } }\n}";
    let (text, _) = analyze(&program(
        items,
        "let mut w = Wrapped { inner: Sim { world, u: vec![1.0; 8] } };\n w.run(100);",
    ));
    assert_eq!(text.matches("mpi::all_reduce_into").count(), 1, "{text}");
}

/// A message taken by a matched probe (`let (msg, status) = any.matched_probe()`) is received
/// by `msg.matched_receive()`: that is the probe's message, in the probe's event, also in a
/// tile loop (where neighbouring events stay apart) and through a function given the message.
#[test]
fn a_matched_probe_and_its_receive() {
    let items = "fn take(msg: mpi::point_to_point::Message) -> f64 { let (v, _s) = msg.matched_receive::<f64>(); v }";
    let (text, _) = analyze(&program(
        items,
        "let rank = world.rank();\n let size = world.size();\n let mut acc = vec![0.0f64; 64];\n\
         for _it in 0..100 {\n for a in acc.iter_mut() { *a += 1.0; }\n\
           if rank == 0 {\n for _ in 1..size {\n\
               let (msg, _status) = world.any_process().matched_probe();\n\
               let (v, _st) = msg.matched_receive::<f64>();\n acc[0] += v;\n }\n\
           } else {\n world.process_at_rank(0).send(&acc[0]);\n }\n }",
    ));
    assert!(
        text.contains("mpi::matched_probe, mpi::matched_receive"),
        "{text}"
    );
    let (text, _) = analyze(&program(
        items,
        "let mut acc = vec![0.0f64; 64];\n\
         for _it in 0..100 {\n for a in acc.iter_mut() { *a += 1.0; }\n\
           let (msg, _status) = world.any_process().matched_probe();\n acc[1] = take(msg);\n }",
    ));
    assert!(
        text.contains("mpi::matched_probe, mpi::matched_receive"),
        "{text}"
    );
}

/// With no solver, the error points at the loop that communicates and says why it was passed
/// over.
#[test]
fn no_solver_names_the_loop_passed_over() {
    let a = analyze_source(
        "t.rs",
        &program(
            "",
            "let mut x = 0.0f64;\n for _it in 0..100 {\n world.process_at_rank(0).broadcast_into(&mut x);\n world.barrier();\n }",
        ),
        &Options::default(),
    );
    let d = a
        .diagnostics
        .iter()
        .find(|d| d.message.starts_with("no solver found"))
        .expect("no solver");
    assert!(
        d.message
            .contains("no loop that communicates also iterates"),
        "{d:?}"
    );
    assert!(
        d.notes[0].contains("computes nothing between its calls"),
        "{d:?}"
    );
}

/// A tile loop (receive first) that answers in either arm of a branch that also computes: the
/// second send is after the tile's send, which a tile does not allow (a warning says so), but
/// its call is kept in the tile's send event, not lost.
#[test]
fn a_tile_loop_answering_in_two_arms_keeps_both_sends() {
    let (text, messages) = analyze(&program(
        "",
        "let mut forks = [0u8; 2];\n let mut work = vec![1.0f64; 64];\n\
         for _round in 0..100 {\n for w in work.iter_mut() { *w *= 0.5; }\n\
           let mut pending = 3;\n\
           while pending > 0 {\n\
             let (msg, status) = world.any_process().receive::<u8>();\n\
             let from = status.source_rank();\n\
             if msg == 0 {\n world.process_at_rank(from).send(&1u8);\n forks[0] = 1;\n work[0] = work[0] * 0.5 + 1.0;\n\
             } else {\n world.process_at_rank(from).send(&2u8);\n forks[1] = 1;\n work[1] = work[1] * 0.5 + 1.0;\n }\n\
             pending -= 1;\n }\n }",
    ));
    assert!(text.contains("tiles 0"), "{text}");
    assert!(text.contains(": mpi::send, mpi::send @"), "{text}");
    assert!(
        messages
            .iter()
            .any(|m| m == "a tile loop may send only once, at its end"),
        "{messages:?}"
    );
}

/// A master/worker split whose worker loop is in a function the other rank arm calls (`if rank
/// == 0 { master loop } else { worker(&world) }`): the master's loop is the main loop, and the
/// worker's, which the structure does not describe, gets the warning a loop of the solver's own
/// would. A set-up loop in a callee outside any rank branch does not.
#[test]
fn a_worker_loop_in_a_callee_of_the_other_rank_arm_is_named() {
    let items = "fn worker(world: &SimpleCommunicator) {\n let mut state = vec![0.0f64; 16];\n\
          loop {\n let (x, _s) = world.process_at_rank(0).receive::<f64>();\n\
            if x < 0.0 { break; }\n for s in state.iter_mut() { *s = *s * 0.5 + x; }\n\
            world.process_at_rank(0).send(&state[0]);\n }\n}\n\
        fn warm_up(world: &SimpleCommunicator, u: &mut [f64]) {\n\
          for _ in 0..3 {\n for x in u.iter_mut() { *x += 1.0; }\n world.barrier();\n }\n}";
    let (text, messages) = analyze(&program(
        items,
        "let rank = world.rank();\n let size = world.size();\n let mut u = vec![1.0f64; 8];\n\
         warm_up(&world, &mut u);\n\
         if rank == 0 {\n let mut total = 0.0;\n\
           for k in 0..100 {\n for x in u.iter_mut() { *x *= 0.5; }\n\
             let dest = 1 + k % (size - 1);\n world.process_at_rank(dest).send(&u[0]);\n\
             let (y, _s) = world.process_at_rank(dest).receive::<f64>();\n total += y;\n }\n\
         } else {\n worker(&world);\n }",
    ));
    assert!(text.contains("main loop: for"), "{text}");
    let named: Vec<&String> = messages
        .iter()
        .filter(|m| m.starts_with("this loop, which another arm of a branch on the rank calls"))
        .collect();
    assert_eq!(named.len(), 1, "{messages:?}");
}

/// A struct whose constructor sizes its arrays by this rank's share, in the three ways a solver
/// holds one: a local made by the constructor, a parameter, and `self` of a method solver. The
/// struct (or, for the method, its array fields) is a distributed variable, and the compute-only
/// sweep's stage has it as representative.
#[test]
fn a_struct_holding_the_block_is_distributed() {
    let bar = "struct Bar { n: usize, u: Vec<f64>, next: Vec<f64> }\n\
        impl Bar {\n fn new(world: &SimpleCommunicator, cells: usize) -> Bar {\n \
          let n = cells / world.size() as usize;\n \
          let u = vec![0.0f64; n + 2];\n Bar { n, next: u.clone(), u }\n }\n \
          fn sweep(&mut self) {\n for i in 1..=self.n { self.next[i] = 0.5 * (self.u[i - 1] + self.u[i + 1]); }\n \
          std::mem::swap(&mut self.u, &mut self.next);\n }\n";
    let run =
        "fn run(&mut self, world: &SimpleCommunicator) {\n for _ in 0..50 {\n self.sweep();\n \
          let local = self.u[1];\n let mut total = 0.0;\n \
          world.all_reduce_into(&local, &mut total, SystemOperation::sum());\n }\n }\n";
    let solve = "fn solve(bar: &mut Bar, world: &SimpleCommunicator) {\n for _ in 0..50 {\n bar.sweep();\n \
          let mut total = 0.0;\n world.all_reduce_into(&bar.u[1], &mut total, SystemOperation::sum());\n }\n}";
    // A local.
    let (text, messages) = analyze(&program(
        &format!("{bar}}}"),
        "let mut bar = Bar::new(&world, 64);\n\
         for _ in 0..50 {\n bar.sweep();\n let mut total = 0.0;\n \
         world.all_reduce_into(&bar.u[1], &mut total, SystemOperation::sum());\n }",
    ));
    assert!(text.contains("solver t::main"), "{text}\n{messages:?}");
    assert!(text.contains("variable bar: Distributed f64"), "{text}");
    assert!(text.contains("representative bar"), "{text}");
    // A parameter of a free-function solver.
    let (text, messages) = analyze(&program(
        &format!("{bar}}}\n{solve}"),
        "let mut bar = Bar::new(&world, 64);\n solve(&mut bar, &world);",
    ));
    assert!(text.contains("solver t::solve"), "{text}\n{messages:?}");
    assert!(text.contains("variable bar: Distributed f64"), "{text}");
    assert!(text.contains("representative bar"), "{text}");
    // `self` of a method solver: its array fields.
    let (text, messages) = analyze(&program(
        &format!("{bar}{run}}}"),
        "let mut bar = Bar::new(&world, 64);\n bar.run(&world);",
    ));
    assert!(text.contains("solver t::Bar::run"), "{text}\n{messages:?}");
    assert!(text.contains("variable u: Distributed f64"), "{text}");
    assert!(text.contains("variable next: Distributed f64"), "{text}");
    assert!(text.contains("reads [next, u] writes [next, u]"), "{text}");
}

/// ndarray arrays made by their constructors are variables of their element type, and its
/// in-place updates (`scaled_add`, `mapv_inplace`) write their receiver: a CG's vector updates.
#[test]
fn ndarray_updates_write_their_array() {
    let (text, messages) = analyze(&program(
        "use ndarray::Array1;",
        "let n = 4096 / world.size() as usize;\n\
         let mut x = Array1::<f64>::zeros(n);\n let mut r = Array1::<f64>::ones(n);\n\
         let p = r.clone();\n\
         for _ in 0..100 {\n\
           let local = r.dot(&r);\n let mut rr = 0.0;\n\
           world.all_reduce_into(&local, &mut rr, SystemOperation::sum());\n\
           x.scaled_add(rr, &p);\n r.mapv_inplace(|v| v * 0.5);\n }",
    ));
    assert!(
        text.contains("variable x: Distributed f64"),
        "{text}\n{messages:?}"
    );
    assert!(text.contains("variable r: Distributed f64"), "{text}");
    assert!(text.contains("writes [x, r]"), "{text}");
}

/// A solver its caller hands this rank's block and row count (`solve(&world, &mut u, rows)` with
/// `rows = n / size` and `u` of `rows` elements): the parameter is distributed, as is what the
/// solver sizes by the row count. A caller passing a whole array instead makes nothing so.
#[test]
fn a_block_handed_over_by_the_caller_is_distributed() {
    let solve = "fn solve(world: &SimpleCommunicator, u: &mut [f64], rows: usize) {\n \
        let mut next = vec![0.0f64; rows];\n \
        for _ in 0..50 {\n for i in 0..rows { next[i] = 0.5 * u[i]; }\n u.copy_from_slice(&next);\n \
        let mut total = 0.0;\n world.all_reduce_into(&u[0], &mut total, SystemOperation::sum());\n }\n}";
    let (text, messages) = analyze(&program(
        solve,
        "let rows = 1024 / world.size() as usize;\n let mut u = vec![1.0f64; rows];\n \
         solve(&world, &mut u, rows);",
    ));
    assert!(text.contains("solver t::solve"), "{text}\n{messages:?}");
    assert!(text.contains("variable u: Distributed f64"), "{text}");
    assert!(text.contains("variable next: Distributed f64"), "{text}");
    // One caller hands over the whole array: the solver's block is not the partition.
    let (text, messages) = analyze(&program(
        solve,
        "let rows = 1024 / world.size() as usize;\n let mut u = vec![1.0f64; rows];\n \
         solve(&world, &mut u, rows);\n let mut all = vec![1.0f64; 1024];\n solve(&world, &mut all, 1024);",
    ));
    assert!(text.contains("solver t::solve"), "{text}\n{messages:?}");
    assert!(text.contains("variable next: Replicated f64"), "{text}");
}

/// A conjugate gradient's work vectors copied from its right-hand side (`let mut r = b.to_vec();
/// let mut p = r.clone();`) are arrays of their own, of the class of what they copy: this rank's
/// block when the caller hands the solver its block, the whole vector when it hands the whole.
#[test]
fn a_copy_of_an_array_parameter_is_an_array() {
    let solve = "fn solve(world: &SimpleCommunicator, b: &[f64]) -> Vec<f64> {\n \
        let mut r = b.to_vec();\n let mut p = r.clone();\n \
        for _ in 0..50 {\n let mut rr = 0.0;\n \
        world.all_reduce_into(&r[0], &mut rr, SystemOperation::sum());\n \
        for i in 0..p.len() { p[i] = r[i] + rr * p[i]; }\n \
        for i in 0..r.len() { r[i] -= 0.5 * p[i]; }\n }\n p\n}";
    let (text, messages) = analyze(&program(
        solve,
        "let rows = 1024 / world.size() as usize;\n let b = vec![1.0f64; rows];\n \
         let x = solve(&world, &b);\n println!(\"{}\", x[0]);",
    ));
    assert!(text.contains("solver t::solve"), "{text}\n{messages:?}");
    assert!(text.contains("variable r: Distributed f64"), "{text}");
    assert!(text.contains("variable p: Distributed f64"), "{text}");
    // The whole right-hand side handed over: the copies are whole vectors too.
    let (text, messages) = analyze(&program(
        solve,
        "let b = vec![1.0f64; 1024];\n let x = solve(&world, &b);\n println!(\"{}\", x[0]);",
    ));
    assert!(text.contains("solver t::solve"), "{text}\n{messages:?}");
    assert!(text.contains("variable r: Replicated f64"), "{text}");
    assert!(text.contains("variable p: Replicated f64"), "{text}");
}

/// Weak scaling (an HPCCG-style benchmark): each rank generates a block of a fixed number of rows
/// and the whole is `size` times that share (`let total_nrow = local_nrow * size`). The share is
/// a partition size, like `n / size` under strong scaling: the matrix struct holding it and the
/// vectors it sizes are this rank's block. A constant times the size, or a gather buffer of
/// `share * size` elements, is not.
#[test]
fn a_share_times_the_size_is_a_partition_size() {
    let items = "pub struct Mat { pub nrow: usize, pub vals: Vec<f64> }\n\
        impl Mat {\n pub fn generate(nx: usize, world: &SimpleCommunicator) -> (Self, Vec<f64>) {\n \
        let size = world.size() as usize;\n let local_nrow = nx * 8;\n \
        let total_nrow = local_nrow * size;\n \
        let mut vals = Vec::with_capacity(local_nrow);\n let mut rhs: Vec<f64> = Vec::with_capacity(local_nrow);\n \
        for i in 0..local_nrow { vals.push(2.0); rhs.push(i as f64 / total_nrow as f64); }\n \
        let m = Mat { nrow: local_nrow, vals };\n (m, rhs)\n }\n}\n\
        fn solve(a: &Mat, b: &[f64], world: &SimpleCommunicator) -> Vec<f64> {\n \
        let n = a.nrow;\n let mut x = vec![0.0; n];\n let mut all = vec![0.0; n * world.size() as usize];\n \
        for _ in 0..100 {\n let mut s = 0.0;\n \
        for i in 0..n { x[i] = b[i] / a.vals[i]; s += x[i]; }\n \
        let mut t = 0.0;\n world.all_reduce_into(&s, &mut t, SystemOperation::sum());\n \
        world.all_gather_into(&x[..], &mut all[..]);\n }\n x\n}";
    let (text, messages) = analyze(&program(
        items,
        "let (a, b) = Mat::generate(100, &world);\n let x = solve(&a, &b, &world);\n \
         println!(\"{}\", x[0]);",
    ));
    assert!(text.contains("solver t::solve"), "{text}\n{messages:?}");
    assert!(text.contains("variable a: Distributed"), "{text}");
    assert!(text.contains("variable x: Distributed f64"), "{text}");
    assert!(text.contains("variable all: Replicated f64"), "{text}");
    // A constant share: `N * size` elements are the whole, and `N` no partition size.
    let items = items
        .replace(
            "let local_nrow = nx * 8;",
            "const LOCAL: usize = 800;\n let local_nrow = LOCAL;",
        )
        .replace("local_nrow * size", "LOCAL * size");
    let (text, messages) = analyze(&program(
        &items,
        "let (a, b) = Mat::generate(100, &world);\n let x = solve(&a, &b, &world);\n \
         println!(\"{}\", x[0]);",
    ));
    assert!(text.contains("solver t::solve"), "{text}\n{messages:?}");
    assert!(text.contains("variable x: Replicated f64"), "{text}");
}

/// A communicating helper inlined into the main loop (`ddot(&r, &p, &world)`, a dot product and
/// its all-reduce) computes on the caller's arrays: its stage reads `r` and `p`, the solver's
/// distributed vectors the model sizes the stage by, not the helper's parameters `lhs`, `rhs`.
#[test]
fn an_inlined_helper_reads_the_callers_arrays() {
    let items = "fn ddot(lhs: &[f64], rhs: &[f64], world: &SimpleCommunicator) -> f64 {\n \
        let local: f64 = lhs.iter().zip(rhs.iter()).map(|(a, b)| a * b).sum();\n \
        let mut global = 0.0;\n world.all_reduce_into(&local, &mut global, SystemOperation::sum());\n global\n}";
    let (text, messages) = analyze(&program(
        items,
        "let rows = 1000 / world.size() as usize;\n let mut r = vec![1.0f64; rows];\n \
         let p = vec![2.0f64; rows];\n \
         for _ in 0..20 {\n let rr = ddot(&r, &p, &world);\n for i in 0..rows { r[i] -= rr * p[i]; }\n }",
    ));
    assert!(text.contains("solver t::main"), "{text}\n{messages:?}");
    assert!(text.contains("reads [r, p] writes [local]"), "{text}");
    assert!(!text.contains("lhs") && !text.contains("rhs"), "{text}");
}

/// A stage that begins in an inlined helper (what follows its all-reduce) and goes on in the
/// caller after the call returns is written in two places: its span is the helper's part, and
/// the caller's statements after the call are listed too (`also @`), so the macro times them
/// where it cannot enter a helper of another module. A statement holding the call
/// (`let a = 0.5 * ddot(..)`) is no part of it: timed whole, it would time the helper too.
#[test]
fn a_stage_going_on_after_an_inlined_call_lists_the_callers_part() {
    let items = "mod linalg {\n use mpi::traits::*;\n use mpi::collective::SystemOperation;\n \
        pub fn ddot(lhs: &[f64], rhs: &[f64], world: &mpi::topology::SimpleCommunicator) -> f64 {\n \
        let local: f64 = lhs.iter().zip(rhs.iter()).map(|(a, b)| a * b).sum();\n \
        let mut global = 0.0;\n world.all_reduce_into(&local, &mut global, SystemOperation::sum());\n \
        global * 1.0\n }\n}";
    let body = "let rows = 1000 / world.size() as usize;\n let mut r = vec![1.0f64; rows];\n \
         let p = vec![2.0f64; rows];\n \
         for _ in 0..20 {\n let rr = linalg::ddot(&r, &p, &world);\n \
         let beta = rr / 3.0;\n r[0] += beta;\n \
         for i in 0..rows { r[i] -= rr * p[i]; }\n }";
    let src = program(items, body);
    let line_of = |needle: &str| src.lines().position(|l| l.contains(needle)).unwrap() + 1;
    let (text, messages) = analyze(&src);
    assert!(text.contains("solver t::main"), "{text}\n{messages:?}");
    let after = format!("also @ t.rs:{}:", line_of("let beta = rr / 3.0;"));
    assert!(text.contains(&after), "no `{after}`:\n{text}");
    // Nothing follows the call but the rest of its own statement: no caller's part.
    let (text, messages) = analyze(&program(
        items,
        "let rows = 1000 / world.size() as usize;\n let r = vec![1.0f64; rows];\n \
         let mut total = 0.0;\n for _ in 0..20 {\n total += 0.5 * linalg::ddot(&r, &r, &world);\n }\n \
         println!(\"{total}\");",
    ));
    assert!(text.contains("solver t::main"), "{text}\n{messages:?}");
    assert!(!text.contains("also @"), "{text}");
}

/// A halo exchange written as a helper that takes the neighbours' ranks as parameters
/// (`halo(&mut u, rank - 1, rank + 1, &world)`) sends to the ranks its caller passes: a
/// nearest-neighbour event with `rank - 1` and `rank + 1`, not a point-to-point event with the
/// helper's `left` and `right`. The caller may name them first (`let up = rank + 1`).
#[test]
fn neighbour_ranks_passed_to_a_helper_are_its_peers() {
    let items = "use mpi::point_to_point::send_receive_into;\n\
        fn halo(u: &mut [f64], left: i32, right: i32, world: &SimpleCommunicator) {\n \
        let n = u.len();\n let (first, last) = (u[1], u[n - 2]);\n \
        if left >= 0 {\n let p = world.process_at_rank(left);\n send_receive_into(&first, &p, &mut u[0], &p);\n }\n \
        if right < world.size() {\n let p = world.process_at_rank(right);\n send_receive_into(&last, &p, &mut u[n - 1], &p);\n }\n}";
    let body = |call: &str| {
        format!(
            "let rank = world.rank();\n let rows = 1000 / world.size() as usize;\n \
             let mut u = vec![1.0f64; rows + 2];\n let mut next = vec![0.0f64; rows + 2];\n \
             let (down, up) = (rank - 1, rank + 1);\n \
             for _ in 0..100 {{\n {call};\n \
             for i in 1..=rows {{ next[i] = 0.5 * (u[i - 1] + u[i + 1]); }}\n \
             std::mem::swap(&mut u, &mut next);\n }}"
        )
    };
    for call in [
        "halo(&mut u, rank - 1, rank + 1, &world)",
        "halo(&mut u, down, up, &world)",
    ] {
        let (text, messages) = analyze(&program(items, &body(call)));
        assert!(
            text.contains("solver t::main"),
            "{call}:\n{text}\n{messages:?}"
        );
        assert!(
            text.contains("nearest_neighbor by function with [rank - 1, rank + 1]"),
            "{call}:\n{text}"
        );
    }
}

/// Optional neighbours made with `bool::then_some` / `bool::then` (`let above = (rank + 1 <
/// size).then_some(rank + 1)`), as `if .. { Some(..) } else { None }` makes them, name the ranks
/// they hold when given to a helper that exchanges with them.
#[test]
fn optional_neighbours_from_then_some_are_their_ranks() {
    let items = "fn exchange(u: &mut [f64], below: Option<i32>, above: Option<i32>, world: &SimpleCommunicator) {\n \
        let n = u.len();\n \
        if let Some(b) = below {\n let p = world.process_at_rank(b);\n p.send(&u[1]);\n p.receive_into(&mut u[0]);\n }\n \
        if let Some(a) = above {\n let p = world.process_at_rank(a);\n p.receive_into(&mut u[n - 1]);\n p.send(&u[n - 2]);\n }\n}";
    let body = "let (rank, size) = (world.rank(), world.size());\n let rows = 1000 / size as usize;\n \
        let below = (rank > 0).then(|| rank - 1);\n let above = (rank + 1 < size).then_some(rank + 1);\n \
        let mut u = vec![1.0f64; rows + 2];\n let mut next = vec![0.0f64; rows + 2];\n \
        for _ in 0..100 {\n exchange(&mut u, below, above, &world);\n \
        for i in 1..=rows { next[i] = 0.5 * (u[i - 1] + u[i + 1]); }\n std::mem::swap(&mut u, &mut next);\n }";
    let (text, messages) = analyze(&program(items, body));
    assert!(text.contains("solver t::main"), "{text}\n{messages:?}");
    assert!(
        text.contains("nearest_neighbor by function with [rank - 1, rank + 1]"),
        "{text}"
    );
}
