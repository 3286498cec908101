//! Snapshot tests of the structure the analyzer extracts from every analysis fixture
//! (`fixtures/analysis/`: single `.rs` files, crate directories and the bad inputs).
//!
//! Each snapshot holds the text tree, the rendered diagnostics and the full
//! `mheta-structure/1` JSON. Review changes with `cargo insta review`; CI never writes them.

use std::path::{Path, PathBuf};
use std::sync::Once;

/// The workspace root; the tests run from there so spans read `fixtures/analysis/…`.
fn workspace_root() -> PathBuf {
    static CHDIR: Once = Once::new();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::canonicalize(manifest).unwrap_or_else(|_| manifest.to_path_buf());
    let root = manifest
        .parent()
        .expect("tests/ lives in the workspace")
        .to_path_buf();
    CHDIR.call_once(|| std::env::set_current_dir(&root).expect("the workspace root exists"));
    root
}

/// Analyses `path` (a `.rs` file or a crate directory) and snapshots what came out.
fn check(path: &Path) {
    let root = workspace_root();
    let path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let relative = path.strip_prefix(&root).unwrap_or(&path);
    let analysis = mheta_analyzer::analyze_path(relative, &mheta_analyzer::Options::default());
    let text =
        mheta_analyzer::emit::render(&analysis.structure, mheta_analyzer::emit::Format::Text);
    let json =
        mheta_analyzer::emit::render(&analysis.structure, mheta_analyzer::emit::Format::Json);
    let diagnostics = analysis.render_diagnostics();
    // The JSON must read back as the shared format type.
    let back: mheta_runtime::format::Structure =
        serde_json::from_str(&json).expect("the JSON is a Structure");
    assert_eq!(back, analysis.structure);
    let within = relative
        .strip_prefix("fixtures/analysis")
        .unwrap_or(relative);
    let name = within.to_string_lossy().replace(['/', '\\'], "__");
    let snapshot = format!(
        "{text}\n--- diagnostics (errors: {}) ---\n{diagnostics}\n--- json ---\n{json}",
        analysis.has_errors()
    );
    insta::with_settings!({ snapshot_suffix => "", prepend_module_to_snapshot => false, omit_expression => true }, {
        insta::assert_snapshot!(name, snapshot);
    });
}

#[test]
fn single_file_fixtures() {
    insta::glob!("../../fixtures/analysis", "*.rs", check);
}

/// Programs written the way real rsmpi code is (`fixtures/analysis/idioms/`, one idiom each;
/// compiled against the `mpi` crate by `fixtures/rsmpi-idioms` in CI's MPI part).
#[test]
fn idiom_fixtures() {
    insta::glob!("../../fixtures/analysis", "idioms/*.rs", check);
}

/// Every idiom program with an iterative loop that communicates yields a structure; the
/// one-shot programs (`one_shot_*.rs`) yield none, and say why.
#[test]
fn every_iterative_idiom_yields_a_structure_and_no_one_shot_program_does() {
    let dir = workspace_root().join("fixtures/analysis/idioms");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("idiom fixtures exist") {
        let path = entry.expect("readable entry").path();
        if path.extension().map_or(true, |e| e != "rs") {
            continue;
        }
        let analysis = mheta_analyzer::analyze_path(&path, &mheta_analyzer::Options::default());
        let one_shot = path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("one_shot_"));
        let rendered = analysis.render_diagnostics();
        if one_shot {
            assert!(!analysis.has_structure(), "{}", path.display());
            assert!(
                // No loop that communicates, or one passed over, which the error shows.
                rendered.contains("no solver found: no iterative loop that communicates")
                    || rendered
                        .contains("no solver found: no loop that communicates also iterates")
                        && rendered.contains("passed over"),
                "{rendered}"
            );
        } else {
            assert!(analysis.has_structure(), "{}:\n{rendered}", path.display());
            assert!(!analysis.has_errors(), "{}:\n{rendered}", path.display());
        }
        seen += 1;
    }
    assert!(seen >= 20, "only {seen} idiom fixtures found");
}

#[test]
fn bad_inputs() {
    insta::glob!("../../fixtures/analysis", "bad/*.rs", check);
}

#[test]
fn crate_fixtures() {
    insta::glob!("../../fixtures/analysis", "*/Cargo.toml", |path| check(
        path.parent().expect("a manifest has a directory")
    ));
}

#[test]
fn every_good_fixture_yields_a_structure_and_every_bad_one_an_error() {
    let root = workspace_root();
    let dir = root.join("fixtures/analysis");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("fixtures exist") {
        let path = entry.expect("readable entry").path();
        let is_input =
            path.extension().is_some_and(|e| e == "rs") || path.join("Cargo.toml").is_file();
        if !is_input {
            continue;
        }
        let analysis = mheta_analyzer::analyze_path(&path, &mheta_analyzer::Options::default());
        assert!(
            !analysis.has_errors(),
            "{}:\n{}",
            path.display(),
            analysis.render_diagnostics()
        );
        assert!(
            !analysis.structure.solvers.is_empty(),
            "{} has no solver",
            path.display()
        );
        seen += 1;
    }
    for entry in std::fs::read_dir(dir.join("bad")).expect("bad fixtures exist") {
        let path = entry.expect("readable entry").path();
        let analysis = mheta_analyzer::analyze_path(&path, &mheta_analyzer::Options::default());
        let rendered = analysis.render_diagnostics();
        let warns_only = path.file_name().is_some_and(|n| n == "macro_hides_comm.rs");
        if warns_only {
            assert!(
                rendered.contains("warning: macro `exchange!`"),
                "{rendered}"
            );
        } else {
            assert!(analysis.has_errors(), "{} should fail", path.display());
        }
        seen += 1;
    }
    assert!(seen >= 20, "only {seen} fixtures found");
}

/// Writes `files` (path, text) under a new temporary directory: a crate to analyse.
fn crate_of(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("a temporary directory");
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("a file has a directory")).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

const SOLVER_BIN: &str = "use mpi::traits::*;
fn main() {
    let universe = mpi::initialize().unwrap();
    let world = universe.world();
    let mut u = vec![0.0f64; 8];
    let mut s = 0.0;
    for _ in 0..10 {
        for x in u.iter_mut() { *x *= 0.5; }
        world.all_reduce_into(&u[0], &mut s, mpi::collective::SystemOperation::sum());
    }
}
";

/// A crate lays out its programs the way Cargo finds them: a library and a binary that both
/// declare the same module (each root is a crate of its own, so that is no duplicate), and the
/// MPI program in `src/bin/`, which Cargo builds without a `[[bin]]` entry.
#[test]
fn crates_are_read_the_way_cargo_finds_their_programs() {
    let manifest = "[package]\nname = \"layout\"\nversion = \"0.1.0\"\nedition = \"2021\"\n";
    let files = [
        ("src/lib.rs", "pub mod grid;\n"),
        ("src/grid.rs", "pub fn cells() -> usize { 8 }\n"),
        (
            "src/main.rs",
            "mod grid;\nfn main() { println!(\"{}\", grid::cells()); }\n",
        ),
        ("src/bin/heat.rs", SOLVER_BIN),
    ];
    let with = |manifest: &str| {
        let mut all = vec![("Cargo.toml", manifest)];
        all.extend(files);
        crate_of(&all)
    };
    let dir = with(manifest);
    let analysis = mheta_analyzer::analyze_path(dir.path(), &mheta_analyzer::Options::default());
    let rendered = analysis.render_diagnostics();
    assert!(analysis.has_structure(), "{rendered}");
    assert!(!rendered.contains("already loaded"), "{rendered}");

    // Without Cargo's discovery there is no MPI program; the error points where the program
    // starts MPI, not at the library's first line.
    let dir = with(&format!("{manifest}autobins = false\n"));
    let analysis = mheta_analyzer::analyze_path(dir.path(), &mheta_analyzer::Options::default());
    assert!(!analysis.has_structure());
    let dir = crate_of(&[
        ("Cargo.toml", manifest),
        ("src/lib.rs", "pub mod grid;\n"),
        ("src/grid.rs", "pub fn cells() -> usize { 8 }\n"),
        (
            "src/main.rs",
            "fn main() {\n    let universe = mpi::initialize().unwrap();\n}\n",
        ),
    ]);
    let analysis = mheta_analyzer::analyze_path(dir.path(), &mheta_analyzer::Options::default());
    let rendered = analysis.render_diagnostics();
    assert!(rendered.contains("no solver found"), "{rendered}");
    assert!(rendered.contains("src/main.rs:2:20"), "{rendered}");

    // A `#[path]` in a module file is relative to that file's directory (`src/`), not to the
    // directory its plain `mod x;` would use (`src/physics/`).
    let dir = crate_of(&[
        ("Cargo.toml", manifest),
        ("src/main.rs", "mod physics;\nfn main() {}\n"),
        ("src/physics.rs", "#[path = \"shared.rs\"]\nmod shared;\n#[path = \"inner\"]\nmod inner {\n    #[path = \"deep.rs\"]\n    mod deep;\n}\n"),
        ("src/shared.rs", "pub fn cells() -> usize { 8 }\n"),
        ("src/inner/deep.rs", "pub fn depth() -> usize { 2 }\n"),
    ]);
    let analysis = mheta_analyzer::analyze_path(dir.path(), &mheta_analyzer::Options::default());
    let rendered = analysis.render_diagnostics();
    assert!(!rendered.contains("unresolved module"), "{rendered}");

    // Two declarations of one file within one crate root are still a duplicate.
    let dir = crate_of(&[
        ("Cargo.toml", manifest),
        (
            "src/main.rs",
            "mod grid;\n#[path = \"grid.rs\"]\nmod again;\nfn main() {}\n",
        ),
        ("src/grid.rs", "pub fn cells() -> usize { 8 }\n"),
    ]);
    let analysis = mheta_analyzer::analyze_path(dir.path(), &mheta_analyzer::Options::default());
    assert!(
        analysis.render_diagnostics().contains("already loaded"),
        "{}",
        analysis.render_diagnostics()
    );
}
