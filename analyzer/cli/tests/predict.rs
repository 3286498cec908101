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
    let cases: [(&str, Edit, &[&str]); 19] = [
        (
            "crate",
            |m, _| m.structure.crate_name = "x".into(),
            &[
                "measurements.json",
                "field `structure.crate` is \"x\"",
                "structure.json",
            ],
        ),
        (
            "array registered twice",
            |m, _| m.arrays[1].name = m.arrays[0].name.clone(),
            &[
                "measurements.json",
                "field `arrays[1].name`",
                "`arrays[0].name`",
            ],
        ),
        (
            "I/O of an array not registered",
            |m, _| m.nodes[2].io[0].var = "x".into(),
            &[
                "measurements.json",
                "field `nodes[2].io[0].var` is \"x\"",
                "does not register",
            ],
        ),
        (
            "event longer than the iteration",
            |m, _| m.nodes[0].events[0].blocked_s = 1e300,
            &[
                "measurements.json",
                "field `nodes[0].events[0].blocked_s` is 1e300 s per iteration",
                "`nodes[0].iteration_s`",
            ],
        ),
        (
            "stage longer than the iteration",
            |m, _| m.nodes[2].stages[0].compute_s = m.nodes[2].iteration_s * 1000.0,
            &[
                "measurements.json",
                "field `nodes[2].stages[0].compute_s`",
                "`nodes[2].iteration_s`",
                "longer than the node's whole iteration",
            ],
        ),
        (
            "parts adding up to more than the iteration",
            |m, _| {
                // The longest part is the whole iteration: each part fits, their sum does not.
                let n = &mut m.nodes[1];
                n.iteration_s = (n.stages.iter().flat_map(|s| [s.compute_s, s.io_s]))
                    .chain(n.events.iter().map(|e| e.total_s))
                    .fold(0.0, f64::max);
            },
            &[
                "measurements.json",
                "node 1's stages and events add up to",
                "`nodes[1].iteration_s`",
            ],
        ),
        (
            "clock",
            |m, _| m.clock = "sundial".into(),
            &[
                "measurements.json",
                "field `clock` is \"sundial\"",
                "wall, virtual, charged",
            ],
        ),
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

/// `--retarget`: measurements of 5 ranks predict a cluster of 3 (another process allocation)
/// with the same figure the model gives measurements taken on those 3 ranks (the synthetic
/// workload is what re-casting assumes); measurements of 2 ranks show no interior rank, and
/// `--retarget` without `--cluster` is a usage error.
#[test]
fn retarget_predicts_another_rank_count() {
    let dir = tempfile::tempdir().unwrap();
    let five = workload(Program::Jacobi, 5, 3000);
    let three = workload(Program::Jacobi, 3, 3000);
    let (s5, m5, m3) = (
        dir.path().join("s5.json"),
        dir.path().join("m5.json"),
        dir.path().join("m3.json"),
    );
    write(&s5, &five.structure);
    write(&m5, &five.measurements);
    write(&m3, &three.measurements);
    let cluster = dir.path().join("three.toml");
    let mut toml = format!(
        "[network]\nlatency = \"{}s\"\nbandwidth = \"{}B/s\"\n",
        three.cluster.network.latency_s, three.cluster.network.bandwidth_bps
    );
    for n in &three.cluster.nodes {
        toml += &format!(
            "\n[[node]]\ncpu = {}\nmemory = \"{}B\"\ndisk_read = \"{}B/s\"\ndisk_write = \"{}B/s\"\ndisk_latency = \"{}s\"\n",
            n.cpu, n.memory_bytes, n.disk_read_bps, n.disk_write_bps, n.disk_latency_s
        );
    }
    std::fs::write(&cluster, toml).unwrap();
    let run = |measurements: &Path, extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_mheta"))
            .args(["predict", "--structure"])
            .arg(&s5)
            .arg("--measurements")
            .arg(measurements)
            .args(["--distribution", "block", "--json"])
            .args(extra)
            .output()
            .expect("the binary runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let seconds = |stdout: &str| -> f64 {
        let v: serde_json::Value = serde_json::from_str(stdout).unwrap();
        v["prediction"]["iteration_s"].as_f64().unwrap()
    };
    let c = cluster.to_str().unwrap();
    let (code, own, stderr) = run(&m3, &[]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, recast, stderr) = run(&m5, &["--cluster", c, "--retarget"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (own, recast) = (seconds(&own), seconds(&recast));
    assert!((own - recast).abs() <= 1e-6 * own, "{recast} against {own}");
    // Without --retarget the rank counts must agree.
    let (code, _, stderr) = run(&m5, &["--cluster", c]);
    assert_eq!(code, Some(1), "{stderr}");
    let two = workload(Program::Jacobi, 2, 3000);
    let m2 = dir.path().join("m2.json");
    write(&m2, &two.measurements);
    let (code, _, stderr) = run(&m2, &["--cluster", c, "--retarget"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("m2.json") && stderr.contains("interior"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&m5, &["--retarget"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--cluster"), "{stderr}");
}
