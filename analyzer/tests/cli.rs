//! The `mheta analyze` command: exit codes, formats, files, traces.

use std::path::PathBuf;
use std::process::Command;

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/analysis")
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
