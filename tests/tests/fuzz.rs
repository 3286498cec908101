//! Fuzz targets, as property tests with a fixed budget: the analyzer on generated nested Rust
//! and on mutated real fixtures, and every file format a user hands mheta (cluster.toml,
//! structure and measurements JSON through `predict`'s loader and the model, timings JSON,
//! distribution lists). The property of each: bad input is an error or a result, never a panic.
//!
//! `MHETA_FUZZ_CASES` sets the cases per target (default 64, so that `cargo test` stays quick);
//! CI runs a larger budget in release (`.ci/run`).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use mheta_analyzer::{analyze_source, Options};
use mheta_cli::predict::Inputs;
use mheta_runtime::distribution::Distribution;
use mheta_runtime::format::{ClusterSpec, Timings};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn config() -> Config {
    let cases = std::env::var("MHETA_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    Config {
        cases,
        // Failures shrink within the same budget; none are persisted into the repository.
        failure_persistence: None,
        ..Config::default()
    }
}

/// Runs `test` on values of `strategy` for the configured budget.
fn fuzz<S: Strategy>(strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S::Value: std::fmt::Debug,
{
    let mut runner = TestRunner::new(config());
    if let Err(e) = runner.run(&strategy, test) {
        panic!("{e}");
    }
}

// --- The analyzer on generated nested Rust -------------------------------------------------

/// An `f64` expression: literals, variables, array reads, arithmetic, calls, `if`/`else if`
/// chains, blocks, `match`, method chains, closures and (as a statement) communication.
fn expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        (0..100i32).prop_map(|k| format!("{k}.0")),
        Just("it as f64".to_string()),
        (0..10usize).prop_map(|k| format!("x[{k}]")),
        Just("local".to_string()),
        Just("x.iter().sum::<f64>()".to_string()),
    ];
    leaf.prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop::sample::select(vec!["+", "-", "*", "/"]),
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (inner.clone(), inner.clone(), inner.clone())
                .prop_map(|(c, a, b)| format!("if {c} > 0.0 {{ {a} }} else {{ {b} }}")),
            prop::collection::vec(inner.clone(), 1..5).prop_map(|arms| {
                let mut s = String::from("if it == 0 { 0.0 }");
                for (k, a) in arms.iter().enumerate() {
                    s.push_str(&format!(" else if it == {} {{ {a} }}", k + 1));
                }
                s + " else { 1.0 }"
            }),
            (stmt(inner.clone()), inner.clone()).prop_map(|(s, e)| format!("{{ {s} {e} }}")),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| format!("match it % 2 {{ 0 => {a}, _ => {b} }}")),
            inner
                .clone()
                .prop_map(|a| format!("x.iter().map(|v| v * {a}).fold(0.0, |s, v| s + v)")),
            inner.clone().prop_map(|a| format!("helper({a})")),
            inner.prop_map(|a| format!("(|v: f64| v + {a})(1.0)")),
        ]
    })
}

/// A statement using `e`: a `let`, an assignment, a loop, or communication.
fn stmt(e: BoxedStrategy<String>) -> impl Strategy<Value = String> {
    prop_oneof![
        e.clone().prop_map(|a| format!("let local = {a};")),
        e.clone().prop_map(|a| format!("x[0] = {a};")),
        e.clone()
            .prop_map(|a| format!("for k in 0..x.len() {{ x[k] += {a}; }}")),
        e.clone().prop_map(|a| format!(
            "let mut s = 0.0; world.all_reduce_into(&({a}), &mut s, SystemOperation::sum());"
        )),
        e.prop_map(|a| format!(
            "if rank > 0 {{ world.process_at_rank(rank - 1).send(&({a})); }} \
             if rank + 1 < size {{ let (v, _) = world.process_at_rank(rank + 1).receive::<f64>(); x[9] = v; }}"
        )),
    ]
}

/// A whole rsmpi program whose main loop holds `body`.
fn program(body: &[String]) -> String {
    format!(
        "use mpi::traits::*;\nuse mpi::collective::SystemOperation;\n\n\
         fn helper(v: f64) -> f64 {{ v * 0.5 }}\n\n\
         fn main() {{\n    let universe = mpi::initialize().unwrap();\n    \
         let world = universe.world();\n    let (rank, size) = (world.rank(), world.size());\n    \
         let mut x = vec![1.0f64; 10];\n    let local = 2.0;\n    \
         for it in 0..10 {{\n        {}\n    }}\n}}\n",
        body.join("\n        ")
    )
}

#[test]
fn the_analyzer_never_panics_on_generated_nested_rust() {
    let body = prop::collection::vec(stmt(expr().boxed()), 1..6);
    let with_solver = AtomicUsize::new(0);
    fuzz(body, |body| {
        let source = program(&body);
        let lines = source.lines().count() as u32;
        let analysis = analyze_source("generated.rs", &source, &Options::default());
        // Every location lies in the file; the structure serialises.
        for d in &analysis.diagnostics {
            if let Some(loc) = d.loc {
                prop_assert!(loc.start.0 >= 1 && loc.end.0 <= lines, "{d:?}\n{source}");
            }
        }
        prop_assert!(serde_json::to_string(&analysis.structure).is_ok());
        if !analysis.solvers.is_empty() {
            with_solver.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    });
    // The generator makes real programs: most have a solver (a body of plain `let`s has none).
    assert!(
        with_solver.load(Ordering::Relaxed) * 2 > config().cases as usize,
        "only {} of {} generated programs had a solver",
        with_solver.load(Ordering::Relaxed),
        config().cases
    );
}

// --- The analyzer on mutated real fixtures ---------------------------------------------------

fn analysis_fixtures() -> Vec<String> {
    let dir = root().join("fixtures/analysis");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// One edit of a text: delete, duplicate or move a range of characters, or insert a token.
#[derive(Debug, Clone)]
enum Edit {
    Delete(usize, usize),
    Duplicate(usize, usize),
    Move(usize, usize, usize),
    Insert(usize, &'static str),
}

fn edit() -> impl Strategy<Value = Edit> {
    let at = 0usize..1_000_000;
    let len = 0usize..64;
    prop_oneof![
        (at.clone(), len.clone()).prop_map(|(a, l)| Edit::Delete(a, l)),
        (at.clone(), len.clone()).prop_map(|(a, l)| Edit::Duplicate(a, l)),
        (at.clone(), len, at.clone()).prop_map(|(a, l, b)| Edit::Move(a, l, b)),
        (
            at,
            prop::sample::select(vec![
                "{",
                "}",
                "(",
                ")",
                ";",
                "else",
                "if ",
                "for i in 0..n ",
                "loop ",
                "world.",
                ".send(&x)",
                "&mut ",
                "'a ",
                "#[mheta::solver]",
                "\"",
                "/*",
                "0..",
                "?",
                "[",
            ])
        )
            .prop_map(|(a, t)| Edit::Insert(a, t)),
    ]
}

/// Applies `edits` to `text` at character boundaries (positions taken modulo the length).
fn apply(text: &str, edits: &[Edit]) -> String {
    let mut chars: Vec<char> = text.chars().collect();
    for e in edits {
        let n = chars.len().max(1);
        match *e {
            Edit::Delete(a, l) => {
                let a = a % n;
                let b = (a + l).min(chars.len());
                chars.drain(a.min(chars.len())..b);
            }
            Edit::Duplicate(a, l) => {
                let a = (a % n).min(chars.len());
                let b = (a + l).min(chars.len());
                let copy: Vec<char> = chars[a..b].to_vec();
                chars.splice(b..b, copy);
            }
            Edit::Move(a, l, to) => {
                let a = (a % n).min(chars.len());
                let b = (a + l).min(chars.len());
                let moved: Vec<char> = chars.drain(a..b).collect();
                let to = to % (chars.len() + 1);
                chars.splice(to..to, moved);
            }
            Edit::Insert(a, t) => {
                let a = (a % n).min(chars.len());
                chars.splice(a..a, t.chars());
            }
        }
    }
    chars.into_iter().collect()
}

#[test]
fn the_analyzer_never_panics_on_mutated_fixtures() {
    let fixtures = analysis_fixtures();
    assert!(
        fixtures.len() >= 5,
        "fixtures/analysis has {} files",
        fixtures.len()
    );
    let cases = (0..fixtures.len(), prop::collection::vec(edit(), 1..8));
    fuzz(cases, |(k, edits)| {
        let source = apply(&fixtures[k], &edits);
        let _ = analyze_source("mutated.rs", &source, &Options::default());
        Ok(())
    });
}

// --- cluster.toml -----------------------------------------------------------------------------

#[test]
fn mutated_cluster_files_are_errors_naming_the_place_or_clusters() {
    let dir = root().join("fixtures/clusters");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    let texts: Vec<String> = files
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    let cases = (0..texts.len(), prop::collection::vec(edit(), 1..6));
    fuzz(cases, |(k, edits)| {
        let text = apply(&texts[k], &edits);
        let path = Path::new("mutated.toml");
        match ClusterSpec::from_toml_str(&text, path) {
            Ok(cluster) => prop_assert!(cluster.check().is_ok(), "{cluster:?}\n{text}"),
            Err(e) => prop_assert!(
                e.to_string().starts_with("mutated.toml:"),
                "{e}\n--- text\n{text}"
            ),
        }
        Ok(())
    });
}

// --- structure and measurements JSON, through predict's loader and the model -----------------

/// One change of a JSON document: a number made 0, negative, huge or fractional; a string
/// emptied; an array element removed; an object key removed; a value replaced by `null`.
#[derive(Debug, Clone)]
struct JsonEdit {
    /// Which node, in depth-first order (taken modulo the node count).
    node: usize,
    kind: u8,
}

fn json_edit() -> impl Strategy<Value = JsonEdit> {
    (0usize..1_000_000, 0u8..8).prop_map(|(node, kind)| JsonEdit { node, kind })
}

fn count_nodes(v: &serde_json::Value) -> usize {
    1 + match v {
        serde_json::Value::Array(a) => a.iter().map(count_nodes).sum(),
        serde_json::Value::Object(o) => o.values().map(count_nodes).sum(),
        _ => 0,
    }
}

/// Applies `e` to the node it names; `seen` counts the nodes visited so far.
fn mutate(v: &mut serde_json::Value, target: usize, kind: u8, seen: &mut usize) -> bool {
    use serde_json::Value;
    if *seen == target {
        *v = match (kind, &*v) {
            (0, Value::Number(_)) => Value::from(0),
            (1, Value::Number(n)) => Value::from(-n.as_f64().unwrap_or(1.0) - 1.0),
            (2, Value::Number(_)) => Value::from(1e300),
            (3, Value::Number(_)) => Value::from(u64::MAX),
            (4, Value::Number(n)) => Value::from(n.as_f64().unwrap_or(0.0) + 0.5),
            (_, Value::String(_)) => Value::from(""),
            (5, Value::Array(a)) if !a.is_empty() => {
                let mut a = a.clone();
                a.pop();
                Value::Array(a)
            }
            (6, Value::Object(o)) if !o.is_empty() => {
                let mut o = o.clone();
                let first = o.keys().next().cloned().unwrap_or_default();
                o.remove(&first);
                Value::Object(o)
            }
            _ => Value::Null,
        };
        return true;
    }
    *seen += 1;
    match v {
        Value::Array(a) => a.iter_mut().any(|c| mutate(c, target, kind, seen)),
        Value::Object(o) => o.values_mut().any(|c| mutate(c, target, kind, seen)),
        _ => false,
    }
}

fn read_value(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn mutated_model_inputs_are_errors_or_predictions() {
    // Seeds (from the accuracy study): an exchange program on 2 nodes, a pipeline on 2, CG on 8.
    let seeds = root().join("tests/fuzz-seeds");
    let docs: Vec<(serde_json::Value, serde_json::Value)> =
        ["jacobi-hy1-2", "rna-dc-2", "cg-hy2-8"]
            .iter()
            .map(|c| {
                (
                    read_value(&seeds.join(format!("{c}.structure.json"))),
                    read_value(&seeds.join(format!("{c}.measurements.json"))),
                )
            })
            .collect();
    let dir = tempfile::tempdir().unwrap();
    // The harness reaches the model: every seed, unmutated, predicts every distribution. (Most
    // mutations make the inputs invalid, so a random budget of 64 cases can miss the model
    // altogether; asserting that some mutated case predicted failed now and then.)
    for (k, (structure, measurements)) in docs.iter().enumerate() {
        let (s, m) = (dir.path().join("s.json"), dir.path().join("m.json"));
        std::fs::write(&s, structure.to_string()).unwrap();
        std::fs::write(&m, measurements.to_string()).unwrap();
        let inputs = Inputs::load(&s, &m, None).unwrap_or_else(|e| panic!("seed {k}: {e:#}"));
        let model = inputs.model().unwrap_or_else(|e| panic!("seed {k}: {e:#}"));
        for spec in ["block", "balanced", "in-core"] {
            let d = inputs.distribution(spec).unwrap();
            let p = model.predict(&d.rows).unwrap();
            assert!(
                p.iteration_s.is_finite() && p.iteration_s > 0.0,
                "seed {k}, {spec}"
            );
        }
    }
    let strategy = (
        0..docs.len(),
        prop::collection::vec((any::<bool>(), json_edit()), 1..6),
    );
    fuzz(strategy, |(k, edits)| {
        let (mut structure, mut measurements) = docs[k].clone();
        for (in_structure, e) in &edits {
            let doc = if *in_structure {
                &mut structure
            } else {
                &mut measurements
            };
            let target = e.node % count_nodes(doc);
            mutate(doc, target, e.kind, &mut 0);
        }
        let (s, m) = (dir.path().join("s.json"), dir.path().join("m.json"));
        std::fs::write(&s, structure.to_string()).unwrap();
        std::fs::write(&m, measurements.to_string()).unwrap();
        let Ok(inputs) = Inputs::load(&s, &m, None) else {
            return Ok(());
        };
        let Ok(model) = inputs.model() else {
            return Ok(());
        };
        for spec in ["block", "balanced", "in-core"] {
            if let Ok(d) = inputs.distribution(spec) {
                if let Ok(p) = model.predict(&d.rows) {
                    prop_assert!(!p.iteration_s.is_nan(), "{spec}: NaN prediction");
                }
            }
        }
        Ok(())
    });
}

// --- timings JSON and distribution lists -------------------------------------------------------

#[test]
fn mutated_timings_are_errors_or_steady_states() {
    let file = root().join("tests/fuzz-seeds/jacobi-hy1-2.timings.json");
    let timings = read_value(&file);
    fuzz(prop::collection::vec(json_edit(), 1..6), |edits| {
        let mut doc = timings.clone();
        for e in &edits {
            let target = e.node % count_nodes(&doc);
            mutate(&mut doc, target, e.kind, &mut 0);
        }
        if let Ok(t) = serde_json::from_value::<Timings>(doc) {
            let _ = Timings::warm_up_of(&t.nodes);
        }
        Ok(())
    });
}

#[test]
fn distribution_lists_are_errors_or_valid_distributions() {
    let cluster = ClusterSpec::load(&root().join("fixtures/clusters/hy1-4.toml")).unwrap();
    let spec = prop_oneof![
        "[0-9, \\-+a-z.]{0,40}",
        prop::collection::vec(any::<u64>(), 0..6)
            .prop_map(|v| { v.iter().map(u64::to_string).collect::<Vec<_>>().join(",") }),
    ];
    fuzz((spec, any::<u64>(), any::<u32>()), |(spec, rows, bytes)| {
        let rows = rows % 1_000_000_000_000;
        if let Ok(d) = Distribution::from_spec(&spec, rows, u64::from(bytes), &cluster) {
            prop_assert!(
                d.validate(rows, cluster.nodes.len()).is_ok(),
                "{spec}: {d:?}"
            );
        }
        Ok(())
    });
}
