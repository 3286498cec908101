//! `mheta phases` on the fixtures' real traces (committed small: `tests/data/phases/`, made by
//! `target/release/<fixture> --rows 60 --iterations K --ranks 3 --trace .. --emit-structure ..`,
//! rna with `--cols 128`; see `study/phases.md`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/phases")
        .join(name)
}

fn phases(args: &[&Path], flags: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mheta"))
        .arg("phases")
        .args(args)
        .args(flags)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(fixture: &str, structure: bool) -> Value {
    let trace = data(&format!("{fixture}.trace.json"));
    let s = data(&format!("{fixture}.structure.json"));
    let (ok, out, err) = if structure {
        phases(&[&trace], &["--json", "--structure", s.to_str().unwrap()])
    } else {
        phases(&[&trace], &["--json"])
    };
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// Issue 18: on a fixture's trace of K iterations the main loop's body is a phase occurring K
/// times on each rank, and it shows exactly the structure's events.
#[test]
fn main_loop_phase_occurs_k_times_on_every_rank() {
    for (fixture, k) in [("jacobi", 4), ("cg", 3), ("rna", 4)] {
        let doc = json(fixture, true);
        let main: Vec<&Value> = doc["phases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["main_loop"] == true)
            .collect();
        assert_eq!(main.len(), 1, "{fixture}: one main-loop phase");
        let phase = main[0];
        assert_eq!(phase["occurrences"], k, "{fixture}");
        assert_eq!(phase["ranks"], serde_json::json!([k, k, k]), "{fixture}");
        assert_eq!(doc["agree"], true, "{fixture}: {}", phase["agreement"]);
        // The section boundaries agree too: every rank shows each boundary of the structure
        // once per iteration (a rank may lack a point-to-point one, never a collective).
        let sections = &phase["agreement"]["sections"];
        assert_eq!(sections["agree"], true, "{fixture}: {sections}");
        let run = sections["run"].as_array().unwrap();
        assert_eq!(run.len(), 3, "{fixture}");
        let structure = sections["structure"].as_array().unwrap();
        assert!(!structure.is_empty(), "{fixture}");
        for seq in run {
            assert!(!seq.as_array().unwrap().is_empty(), "{fixture}: {sections}");
        }
    }
}

/// The text names the section boundaries the structure has and each rank shows.
#[test]
fn text_reports_section_boundaries() {
    let trace = data("cg.trace.json");
    let s = data("cg.structure.json");
    let (ok, out, err) = phases(&[&trace], &["--structure", s.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        out.contains("section boundaries in the structure: 0 (event 0), 1 (event 1)"),
        "{out}"
    );
    assert!(out.contains("rank 2 shows sections"), "{out}");
    assert!(out.contains("sections agree"), "{out}");
}

/// The JSON other tools read: `phases` objects with `occurrences`, `blocks`, `seconds`, and
/// `agree` null without `--structure`.
#[test]
fn json_shape() {
    let doc = json("jacobi", false);
    let top: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(top, ["agree", "phases"]);
    assert!(doc["agree"].is_null());
    let phases = doc["phases"].as_array().unwrap();
    assert!(!phases.is_empty());
    for p in phases {
        assert!(p["occurrences"].is_u64());
        assert!(p["blocks"].is_u64());
        assert!(p["seconds"].is_f64());
    }
    // Best quality first (Def. 4: lexicographic on occurrences, then blocks).
    let q: Vec<(u64, u64)> = phases
        .iter()
        .map(|p| {
            (
                p["occurrences"].as_u64().unwrap(),
                p["blocks"].as_u64().unwrap(),
            )
        })
        .collect();
    assert!(q.windows(2).all(|w| w[0] >= w[1]), "{q:?}");
}

/// A structure missing an event the run shows disagrees, and says which.
#[test]
fn a_structure_of_another_program_disagrees() {
    let trace = data("jacobi.trace.json");
    let s = data("cg.structure.json");
    let (ok, out, err) = phases(&[&trace], &["--structure", s.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(out.contains("disagree"), "{out}");
    assert!(
        out.contains("in the structure, not in the run's main-loop phase"),
        "{out}"
    );
    assert!(out.contains("sections disagree"), "{out}");
    assert!(
        out.contains("its boundary is in the structure, no rank shows it"),
        "{out}"
    );
}

#[test]
fn dot_output() {
    let (ok, out, err) = phases(&[&data("cg.trace.json")], &["--dot"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("digraph dependencies {"));
    assert!(out.contains("subgraph cluster_rank2"));
    assert!(out.contains("style=dashed"), "collective edges");
}

#[test]
fn bad_input_is_a_clear_error() {
    let dir = std::env::temp_dir().join(format!("mheta-phases-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        r#"{"traceEvents": [{"ph": "X", "tid": 0, "dur": 1, "cat": "comm"}]}"#,
    )
    .unwrap();
    let (ok, _, err) = phases(&[&bad], &[]);
    assert!(!ok);
    assert!(
        err.contains("bad.json") && err.contains("traceEvents[0].ts"),
        "{err}"
    );
    let (ok, _, err) = phases(&[&dir.join("missing.json")], &[]);
    assert!(!ok);
    assert!(
        err.contains("cannot read") && err.contains("missing.json"),
        "{err}"
    );
    let (ok, _, err) = phases(
        &[&data("cg.trace.json")],
        &["--structure", bad.to_str().unwrap()],
    );
    assert!(!ok);
    assert!(err.contains("bad.json"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--max-pairs`: a detection that outgrows its budget of candidate pairs is an error naming
/// the trace, the budget and what to do, not an exhausted machine.
#[test]
fn a_detection_past_its_pair_budget_is_an_error() {
    let trace = data("rna.trace.json");
    let (ok, _, stderr) = phases(&[&trace], &["--max-pairs", "100"]);
    assert!(!ok);
    assert!(
        stderr.contains("rna.trace.json")
            && stderr.contains("--max-pairs 100")
            && stderr.contains("coarser tiles"),
        "{stderr}"
    );
    let (ok, _, stderr) = phases(&[&trace], &[]);
    assert!(ok, "{stderr}");
}
