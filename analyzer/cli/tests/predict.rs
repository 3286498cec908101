//! `mheta predict` on files that do not belong together or contradict themselves: each is an
//! error naming the file and the field, never a silent prediction.

use std::path::Path;
use std::process::Command;

use mheta_model::synthetic::{workload, Program};
use mheta_runtime::format::{Measurements, Structure};

fn predict(structure: &Path, measurements: &Path) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mheta"))
        .args(["predict", "--structure"])
        .arg(structure)
        .arg("--measurements")
        .arg(measurements)
        .args(["--distribution", "block"])
        .output()
        .expect("the binary runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn inconsistent_inputs_are_errors_naming_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload(Program::Jacobi, 4, 4 * 300);
    let structure_file = dir.path().join("structure.json");
    write(&structure_file, &w.structure);
    let good = dir.path().join("measurements.json");
    write(&good, &w.measurements);
    let (code, stdout, stderr) = predict(&structure_file, &good);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stdout.contains("predicted iteration"), "{stdout}");

    // Each case: a change to the measurements (or the structure), and what the error says.
    type Edit = fn(&mut Measurements, &mut Structure);
    let cases: [(&str, Edit, &[&str]); 12] = [
        (
            "schema",
            |m, _| m.schema = "mheta-measurements/9".into(),
            &[
                "measurements.json",
                "field `schema`",
                "mheta-measurements/9",
            ],
        ),
        (
            "structure schema",
            |_, s| s.schema = "mheta-structure/2".into(),
            &["structure.json", "field `schema`", "mheta-structure/2"],
        ),
        (
            "digest",
            |m, _| m.structure.digest = "0123456789abcdef".into(),
            &[
                "measurements.json",
                "`structure.digest`",
                "another structure",
            ],
        ),
        (
            "rows",
            |m, _| m.rows = 1500,
            &[
                "measurements.json",
                "field `rows` is 1500",
                "holds 1200 rows",
            ],
        ),
        (
            "node rows",
            |m, _| m.nodes[2].rows += 1,
            &["measurements.json", "`nodes[2].rows`", "`distribution[2]`"],
        ),
        (
            "cpu 0",
            |m, _| m.cluster.nodes[1].cpu = 0.0,
            &["measurements.json", "`cluster.nodes[1].cpu` is 0"],
        ),
        (
            "memory 0",
            |m, _| m.cluster.nodes[3].memory_bytes = 0,
            &["measurements.json", "`cluster.nodes[3].memory_bytes` is 0"],
        ),
        (
            "unknown stage",
            |m, _| m.nodes[0].stages[0].key.section = 77,
            &["measurements.json", "`nodes[0].stages[0]`", "section 77"],
        ),
        (
            "unknown event",
            |m, _| m.nodes[1].events[0].event = 999,
            &["measurements.json", "`nodes[1].events[0]`", "event 999"],
        ),
        (
            "negative blocked time",
            |m, _| m.nodes[1].events[0].blocked_s = -1.0,
            &[
                "measurements.json",
                "`nodes[1].events[0].blocked_s` is -1",
                "cannot be negative",
            ],
        ),
        (
            "negative stage count",
            |m, _| m.nodes[3].stages[0].count = -2.0,
            &["measurements.json", "`nodes[3].stages[0].count` is -2"],
        ),
        (
            "fewer nodes than the cluster",
            |m, _| m.nodes.truncate(2),
            &[
                "measurements.json",
                "structure.json",
                "the cluster it was measured on",
                "cover 2 nodes",
            ],
        ),
    ];
    for (name, edit, expected) in cases {
        let (mut m, mut s) = (w.measurements.clone(), w.structure.clone());
        let digest_before = s.digest();
        edit(&mut m, &mut s);
        if s.digest() != digest_before && m.structure.digest == digest_before {
            m.structure.digest = s.digest();
        }
        write(&good, &m);
        write(&structure_file, &s);
        let (code, _, stderr) = predict(&structure_file, &good);
        assert_eq!(code, Some(1), "{name}: {stderr}");
        for text in expected {
            assert!(stderr.contains(text), "{name}: `{text}` not in {stderr}");
        }
    }

    // A solver without sections predicts nothing: an error, not 0 s.
    let mut s = w.structure.clone();
    s.solvers[0].sections.clear();
    let mut m = w.measurements.clone();
    m.structure.digest = s.digest();
    for n in &mut m.nodes {
        n.stages.clear();
        n.io.clear();
        n.events.clear();
    }
    write(&structure_file, &s);
    write(&good, &m);
    let (code, _, stderr) = predict(&structure_file, &good);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("no parallel sections"), "{stderr}");
}

fn write(path: &Path, value: &impl serde::Serialize) {
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}
