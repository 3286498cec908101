//! The `mheta analyze` command: exit codes, formats, files, traces.

use std::path::PathBuf;
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/analysis")
}

fn mheta(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mheta"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn analyze_prints_a_structure_document_and_exits_zero() {
    let path = fixtures().join("jacobi_rsmpi.rs");
    let out = mheta(&["analyze", path.to_str().unwrap(), "--format", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("\"schema\": \"mheta-structure/1\""),
        "{stdout}"
    );
    let parsed: mheta_runtime::format::Structure =
        serde_json::from_str(&stdout).expect("valid structure JSON");
    assert_eq!(parsed.solvers.len(), 1);
}

#[test]
fn analyze_reads_crate_directories() {
    let path = fixtures().join("heat_crate");
    let out = mheta(&["analyze", path.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"crate\": \"heat-crate\""));
}

#[test]
fn bad_inputs_exit_one_with_file_line_column() {
    for (name, line) in [("syntax_error.rs", None::<u32>), ("no_solver.rs", None)] {
        let path = fixtures().join("bad").join(name);
        let out = mheta(&["analyze", path.to_str().unwrap()]);
        assert_eq!(out.status.code(), Some(1), "{name}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(&format!("{name}:")), "{name}: {stderr}");
        if let Some(line) = line {
            assert!(
                stderr.contains(&format!("{name}:{line}:")),
                "{name}: {stderr}"
            );
        }
        assert!(out.stdout.is_empty(), "nothing is written on errors");
    }
}

#[test]
fn a_single_file_with_an_unresolved_module_is_analysed_with_a_warning() {
    let path = fixtures().join("unresolved_module.rs");
    let out = mheta(&["analyze", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("warning: unresolved module `missing`"),
        "{stderr}"
    );
    assert!(stderr.contains("unresolved_module.rs:5:"), "{stderr}");
    let parsed = serde_json::from_slice::<mheta_runtime::format::Structure>(&out.stdout)
        .expect("the structure is written");
    assert_eq!(parsed.solvers.len(), 1);
}

#[test]
fn text_and_dot_formats_and_out_file() {
    let path = fixtures().join("wavefront_rsmpi.rs");
    let text = mheta(&["analyze", path.to_str().unwrap(), "--format", "text"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("tiles 0"));
    let dot = mheta(&["analyze", path.to_str().unwrap(), "--format", "dot"]);
    let dot = String::from_utf8_lossy(&dot.stdout);
    assert!(dot.starts_with("digraph {"), "{dot}");
    assert!(dot.contains("recv event 0 pipeline"), "{dot}");
    let dir = std::env::temp_dir().join(format!("mheta-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("s.json");
    let out = mheta(&[
        "analyze",
        path.to_str().unwrap(),
        "--out",
        file.to_str().unwrap(),
    ]);
    assert!(out.status.success());
    assert!(out.stdout.is_empty());
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("mheta-structure/1"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn trace_prints_every_token_with_state_before_and_after() {
    let path = fixtures().join("jacobi_rsmpi.rs");
    let out = mheta(&["analyze", path.to_str().unwrap(), "--trace"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("LoopStart(L0"), "{stderr}");
    assert!(stderr.contains("SECTION [section=0 stage=0"), "{stderr}");
    assert!(stderr.contains("→  LOOP_START"), "{stderr}");
    assert!(stderr.contains("IterEnd"), "{stderr}");
}

#[test]
fn a_full_disk_on_standard_output_is_an_error_not_a_panic() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // not Linux
    };
    let path = fixtures().join("jacobi_rsmpi.rs");
    let out = Command::new(env!("CARGO_BIN_EXE_mheta"))
        .args(["analyze", path.to_str().unwrap(), "--format", "json"])
        .stdout(full)
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot write to standard output"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn help_on_a_full_standard_output_is_an_error() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return; // not Linux
    };
    for args in [&["--help"][..], &["--version"], &["analyze", "--help"]] {
        let out = Command::new(env!("CARGO_BIN_EXE_mheta"))
            .args(args)
            .stdout(full.try_clone().unwrap())
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("cannot write to standard output"),
            "{stderr}"
        );
    }
    // Where stdout takes it, help still succeeds.
    let out = mheta(&["--help"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: mheta"));
}

#[test]
fn out_files_are_written_through_symbolic_links() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("structure.json");
    let link = dir.path().join("link.json");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let path = fixtures().join("jacobi_rsmpi.rs");
    let out = mheta(&[
        "analyze",
        path.to_str().unwrap(),
        "--format",
        "json",
        "--out",
        link.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(std::fs::read_to_string(&real)
        .unwrap()
        .contains("mheta-structure/1"));
}

#[test]
fn deeply_nested_expressions_are_analysed_not_a_stack_overflow() {
    // The rsmpi Jacobi fixture with one more statement in its inner loop, nested as deep as
    // generated or machine-written code can be. Each once aborted the process (exit 134) with
    // the main thread's 8 MiB stack; the structure must be the one without the statement.
    let source = std::fs::read_to_string(fixtures().join("jacobi_rsmpi.rs")).unwrap();
    let anchor = "                let d = new - a[i * COLS + j];\n";
    assert!(source.contains(anchor));
    let dir = tempfile::tempdir().unwrap();
    let analyse = |name: &str, expr: &str| {
        let path = dir.path().join(format!("{name}.rs"));
        let text = source.replace(
            anchor,
            &format!("{anchor}                let _deep = {expr};\n"),
        );
        std::fs::write(&path, text).unwrap();
        let out = mheta(&["analyze", path.to_str().unwrap(), "--format", "text"]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{name}: {stderr}");
        // File names differ; the structure's outline does not.
        String::from_utf8_lossy(&out.stdout).replace(name, "FILE")
    };
    let plain = analyse("plain", "new + 1.0");
    let parens = format!("{}new{}", "(".repeat(3000), ")".repeat(3000));
    let blocks = format!("{}new{}", "{".repeat(3000), "}".repeat(3000));
    let sum = vec!["new"; 30_000].join(" + ");
    // A chain of calls was also quadratic to analyse (every call re-walked the chain below it).
    let chain = format!("new{}", ".abs()".repeat(20_000));
    let clones = format!("new{}", ".clone()".repeat(20_000));
    for (name, expr) in [
        ("parens", parens),
        ("blocks", blocks),
        ("sum", sum),
        ("chain", chain),
        ("clones", clones),
    ] {
        assert_eq!(analyse(name, &expr), plain, "{name}");
    }
}

#[test]
fn a_solver_named_in_mheta_toml_that_is_not_there_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[package]\nname = \"named\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
    )
    .unwrap();
    std::fs::copy(
        fixtures().join("jacobi_rsmpi.rs"),
        dir.path().join("src/main.rs"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("mheta.toml"),
        "[solver]\nfunctions = [\"main\", \"sovle\"]\n",
    )
    .unwrap();
    let out = mheta(&["analyze", dir.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mheta.toml`: [solver] functions names `sovle`"),
        "{stderr}"
    );
    assert!(!stderr.contains("names `main`"), "{stderr}");
}

#[test]
fn degenerate_inputs_to_the_other_subcommands_are_errors() {
    // A study whose fixtures directory does not exist fails at once, before any case.
    let out = mheta(&[
        "study",
        "--out",
        std::env::temp_dir()
            .join("mheta-no-study")
            .to_str()
            .unwrap(),
        "--fixtures-dir",
        "/nonexistent",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("has no `clusters/` directory"), "{stderr}");
    // Fewer runs at most than at least fails at once: before tune builds anything, and not in
    // every case of a study; no runs at all is refused by the argument parser.
    let out_dir = std::env::temp_dir().join("mheta-no-study");
    let out_dir = out_dir.to_str().unwrap();
    let jacobi = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/jacobi");
    let dc2 = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/clusters/dc-2.toml"
    );
    for command in [
        &["tune", jacobi, "--cluster", dc2][..],
        &["study", "--out", out_dir, "--fixtures-dir", "/nonexistent"],
    ] {
        let out = mheta(&[command, &["--repeat", "5", "--max-repeat", "3"]].concat());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{command:?}: {stderr}");
        assert!(
            stderr.contains("--max-repeat 3 is below --repeat 5"),
            "{stderr}"
        );
        assert!(!stderr.contains("Compiling"), "{stderr}");
    }
    let out = mheta(&["study", "--out", out_dir, "--repeat", "0"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--repeat"), "{stderr}");
    // A tune document without distributions has nothing to report.
    let dir = tempfile::tempdir().unwrap();
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/tune-document.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data).unwrap()).unwrap();
    doc["distributions"] = serde_json::json!([]);
    std::fs::write(dir.path().join("tune.json"), doc.to_string()).unwrap();
    let out = mheta(&["report", dir.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("field `distributions` is empty"),
        "{stderr}"
    );
    assert!(!dir.path().join("index.html").exists());
    // Zero rows is refused by the argument parser.
    let out = mheta(&[
        "tune",
        "fixtures/jacobi",
        "--cluster",
        "fixtures/clusters/dc-2.toml",
        "--rows",
        "0",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--rows"), "{stderr}");
}

#[test]
fn messages_say_what_is_wrong() {
    let out = mheta(&["analyze", "/nonexistent/solver.rs"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("`/nonexistent/solver.rs` does not exist"),
        "{stderr}"
    );
    assert!(!stderr.contains("no iterative loop"), "{stderr}");
    for bad in ["0", "100000000"] {
        let out = mheta(&["bench", "--nodes", bad]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("not a node count from 1 to 65536"),
            "{stderr}"
        );
    }
}

#[test]
fn an_os_error_is_said_once() {
    let out = mheta(&[
        "analyze",
        fixtures().join("jacobi_rsmpi.rs").to_str().unwrap(),
        "--out",
        "/nonexistent/structure.json",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.matches("No such file or directory").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("/nonexistent/structure.json"), "{stderr}");
}

/// `cargo mheta analyze` from a subdirectory of a fixture crate, through cargo itself (which
/// finds `cargo-mheta` on the PATH), writes what `mheta analyze <crate>` writes.
#[test]
fn cargo_mheta_analyzes_the_crate_it_is_run_in() {
    let jacobi = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/jacobi");
    let direct = mheta(&["analyze", jacobi.to_str().unwrap(), "--format", "text"]);
    assert!(direct.status.success());
    let bin_dir = PathBuf::from(env!("CARGO_BIN_EXE_cargo-mheta"))
        .parent()
        .unwrap()
        .to_path_buf();
    let path = std::env::join_paths(std::iter::once(bin_dir).chain(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    )))
    .unwrap();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let through_cargo = Command::new(&cargo)
        .args(["mheta", "analyze", "--format", "text"])
        .current_dir(jacobi.join("src"))
        .env("PATH", &path)
        .output()
        .expect("cargo runs");
    assert!(
        through_cargo.status.success(),
        "{}",
        String::from_utf8_lossy(&through_cargo.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&through_cargo.stdout),
        String::from_utf8_lossy(&direct.stdout)
    );
    // From the workspace root, whose own package is the facade, -p picks the fixture.
    let by_name = Command::new(&cargo)
        .args(["mheta", "analyze", "-p", "jacobi", "--format", "text"])
        .current_dir(jacobi.join("../.."))
        .env("PATH", &path)
        .output()
        .expect("cargo runs");
    assert_eq!(
        String::from_utf8_lossy(&by_name.stdout),
        String::from_utf8_lossy(&direct.stdout),
        "{}",
        String::from_utf8_lossy(&by_name.stderr)
    );
}
