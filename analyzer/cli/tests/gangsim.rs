//! The `mheta gangsim` command: the JSON other tools read, determinism, the SVG, errors naming
//! the flag, and real jobs through the model.

use std::collections::BTreeSet;
use std::process::Command;

use mheta_model::synthetic::{workload, Program};

fn mheta(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mheta"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// A mix small enough for a debug build: 12 jobs on 16 processors.
const SMALL: [&str; 5] = ["gangsim", "--jobs", "12", "--processors", "16"];

fn run_ok(args: &[&str]) -> String {
    let out = mheta(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn run_err(args: &[&str]) -> String {
    let out = mheta(args);
    assert_eq!(out.status.code(), Some(1), "{args:?} should fail");
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn json_has_exactly_the_shape_other_tools_read() {
    let stdout = run_ok(&[&SMALL[..], &["--json"]].concat());
    let doc: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    let top: Vec<&String> = doc.as_object().unwrap().keys().collect();
    assert_eq!(top, ["rows"]);
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 8);
    let mut pairs = BTreeSet::new();
    for row in rows {
        let keys: BTreeSet<&str> = row
            .as_object()
            .unwrap()
            .keys()
            .map(|k| k.as_str())
            .collect();
        assert_eq!(keys, BTreeSet::from(["mode", "method", "att", "end_time"]));
        let mode = row["mode"].as_str().unwrap();
        let method = row["method"].as_str().unwrap();
        assert!(["schark", "enhanced"].contains(&mode), "{mode}");
        assert!(
            ["p-based", "c-based", "a-based", "cp-based"].contains(&method),
            "{method}"
        );
        let (att, end) = (
            row["att"].as_f64().unwrap(),
            row["end_time"].as_f64().unwrap(),
        );
        assert!(att > 0.0 && end >= att, "{row}");
        pairs.insert((mode.to_string(), method.to_string()));
    }
    assert_eq!(pairs.len(), 8);
}

#[test]
fn the_same_seed_gives_the_same_output_and_another_seed_another() {
    let with_seed = |seed: &str| run_ok(&[&SMALL[..], &["--json", "--seed", seed]].concat());
    assert_eq!(with_seed("3"), with_seed("3"));
    assert_ne!(with_seed("3"), with_seed("4"));
}

#[test]
fn text_and_svg() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("gang.svg");
    let stdout = run_ok(&[&SMALL[..], &["--svg", svg.to_str().unwrap()]].concat());
    assert!(stdout.contains("enhanced  c-based"), "{stdout}");
    let svg = std::fs::read_to_string(svg).unwrap();
    assert!(
        svg.starts_with("<svg") && svg.contains("Enhanced ATT"),
        "{svg}"
    );
    assert!(svg.contains("data-value"));
}

#[test]
fn bad_flags_are_errors_naming_the_flag() {
    let err = run_err(&[&SMALL[..], &["--time-slice", "0"]].concat());
    assert!(err.contains("`--time-slice`"), "{err}");
    let err = run_err(&[&SMALL[..], &["--context-switch", "15", "--migration", "10"]].concat());
    assert!(err.contains("`--context-switch`"), "{err}");
    let err = run_err(&["gangsim", "--processors", "100000"]);
    assert!(err.contains("`--processors`"), "{err}");
    let err = run_err(&[&SMALL[..], &["--cn-max", "0.5"]].concat());
    assert!(err.contains("`--cn-max`"), "{err}");
    let err = run_err(&[&SMALL[..], &["--time-limit", "100"]].concat());
    assert!(err.contains("`--time-limit`"), "{err}");
    let err = run_err(&["gangsim", "--experiment", "cn-range", "--json"]);
    assert!(
        err.contains("--variant half") && err.contains("twice"),
        "{err}"
    );
    let err = run_err(&["gangsim", "--experiment", "baseline", "--variant", "twice"]);
    assert!(err.contains("`--variant twice`"), "{err}");
    // Flags of the generated mix do not go with an experiment's own mixes (clap: status 2).
    let out = mheta(&["gangsim", "--experiment", "baseline", "--jobs", "5"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--jobs"));
    let err = run_err(&[&SMALL[..], &["--job", "nowhere"]].concat());
    assert!(err.contains("`--measurements`"), "{err}");
    let err = run_err(&[
        "gangsim",
        "--job",
        "nowhere",
        "--measurements",
        "nothing.json",
    ]);
    assert!(err.contains("`--job nowhere`"), "{err}");
}

/// A synthetic Jacobi on 4 nodes whose memory holds 1.5 times the data: one node keeps a third
/// of the rows in core and not half, so its CN is 3 copies of node 0.
#[test]
fn a_real_job_joins_the_mix_through_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload(Program::Jacobi, 4, 4 * 300);
    let structure = dir.path().join("structure.json");
    let measurements = dir.path().join("measurements.json");
    std::fs::write(&structure, serde_json::to_string(&w.structure).unwrap()).unwrap();
    std::fs::write(
        &measurements,
        serde_json::to_string(&w.measurements).unwrap(),
    )
    .unwrap();
    let args = [
        "gangsim",
        "--jobs",
        "6",
        "--processors",
        "8",
        "--job",
        structure.to_str().unwrap(),
        "--measurements",
        measurements.to_str().unwrap(),
        "--stu",
        "10us",
        "--json",
    ];
    let out = mheta(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("CN 3 (copies of node 0 in core)"),
        "{stderr}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["rows"].as_array().unwrap().len(), 8);
    // The real job alone.
    let alone = [&args[..2], &["0"], &args[3..]].concat();
    let out = mheta(&alone);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The text names the real job and its turnaround under every mode.
    let text = run_ok(&args[..args.len() - 1]);
    assert!(text.contains("turnaround of the real jobs"), "{text}");
    assert!(
        text.contains("structure.json") && text.contains("enhanced"),
        "{text}"
    );
    // Measurements of another program are refused, naming the field.
    let mut other = w.measurements.clone();
    other.structure.digest = "0123456789abcdef".into();
    std::fs::write(&measurements, serde_json::to_string(&other).unwrap()).unwrap();
    let err = run_err(&args);
    assert!(err.contains("`structure.digest`"), "{err}");
}
