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
                rendered.contains("no iterative loop that communicates"),
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
