//! `mheta fit` and `mheta allocate` on a small hand-made runs file (`tests/data/fit/`): two
//! groups of four nodes, one rank per node, timed exactly by T_i(N, P) = a_i N / P + 1e-4 P
//! (a = 1e-6 for `fast`, 2e-6 for `slow`) at N = 1000, 2000, 3000 and P_i = 1 … 4; one run is
//! given by its `mheta-timings/1` file. `measured.json` holds measured alternatives at N = 4000.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/fit")
        .join(name)
}

fn mheta(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_mheta"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json(args: &[&str]) -> Value {
    let (ok, out, err) = mheta(args);
    assert!(ok, "{err}");
    serde_json::from_str(&out).unwrap()
}

fn close(v: &Value, want: f64) -> bool {
    let got = v.as_f64().unwrap_or(f64::NAN);
    (got - want).abs() <= 1e-9 * want.abs() + 1e-12
}

fn runs() -> String {
    data("runs.json").display().to_string()
}

#[test]
fn fit_recovers_the_models_by_both_methods() {
    let doc = json(&["fit", &runs(), "--json"]);
    assert_eq!(doc["family"], "jacobi");
    assert_eq!(doc["runs"], 24);
    assert_eq!(
        doc["terms"]["npt"],
        serde_json::json!(["N/P", "1/P", "1", "P"])
    );
    let fits = doc["fits"].as_array().unwrap();
    assert_eq!(fits.len(), 2);
    assert_eq!(fits[0]["method"], "ols");
    assert_eq!(fits[1]["method"], "nnls");
    for fit in fits {
        // Eight N-T models (2 groups × 4 node counts); N-T of fast on 2 nodes, from the timings
        // file among others: k = (1e-6 / 2, 1e-4 · 2).
        assert_eq!(fit["nt"].as_array().unwrap().len(), 8);
        let nt = fit["nt"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["group"] == 0 && m["nodes"] == 2)
            .unwrap();
        assert!(close(&nt["coefficients"][0], 5e-7), "{nt}");
        assert!(close(&nt["coefficients"][1], 2e-4), "{nt}");
        // NP-T per group: (a, 0, 0, 1e-4) from the 9 runs on 2–4 nodes.
        for (group, a) in [(0, 1e-6), (1, 2e-6)] {
            let m = &fit["npt"][group];
            assert_eq!(m["group"], group);
            assert_eq!(m["runs"], 9);
            let k = m["coefficients"].as_array().unwrap();
            assert!(close(&k[0], a) && close(&k[3], 1e-4), "{m}");
            assert!(k[1].as_f64().unwrap().abs() < 1e-12, "{m}");
            assert!(k[2].as_f64().unwrap().abs() < 1e-12, "{m}");
        }
        assert_eq!(fit["pt"].as_array().unwrap().len(), 2);
    }
    // NNLS keeps every coefficient ≥ 0 where OLS's P-T has a negative constant.
    let nnls_pt = &fits[1]["pt"][0]["coefficients"];
    assert!(nnls_pt
        .as_array()
        .unwrap()
        .iter()
        .all(|k| k.as_f64().unwrap() >= 0.0));
    assert!(fits[0]["pt"][0]["coefficients"][1].as_f64().unwrap() < 0.0);

    let (ok, text, _) = mheta(&["fit", &runs(), "--method", "nnls"]);
    assert!(ok);
    assert!(text.contains("NP-T fast     M_i=1  9 runs"), "{text}");
    assert!(!text.contains("OLS:"), "{text}");
}

#[test]
fn fit_says_which_models_the_runs_do_not_determine() {
    // HPL's NP-T has 10 terms: 9 runs per group are too few.
    let doc = json(&[
        "fit",
        &runs(),
        "--json",
        "--family",
        "hpl",
        "--method",
        "nnls",
    ]);
    let skipped = doc["fits"][0]["skipped"].as_array().unwrap();
    let npt: Vec<&Value> = skipped.iter().filter(|s| s["kind"] == "npt").collect();
    assert_eq!(npt.len(), 2, "{skipped:?}");
    assert!(npt[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("9 runs for 10 terms"));
}

/// At N = 4000: fast alone on P nodes, 4e-3 / P + 1e-4 P, least at P = 4 (1.4e-3); any
/// configuration with slow nodes is bounded by slow's 8e-3 / P + 1e-4 P ≥ 1.8e-3 (P = 8). The
/// measured alternatives: (4,1,0,0) 1.5e-3, (4,1,4,1) 1.45e-3, (2,1,0,0) 2.3e-3, so ε =
/// (1.5 − 1.45) / 1.45 and δ = (1.4 − 1.5) / 1.5.
#[test]
fn allocate_finds_the_hand_optimum_and_its_epsilon() {
    let measured = data("measured.json").display().to_string();
    let doc = json(&[
        "allocate",
        &runs(),
        "--size",
        "4000",
        "--measured",
        &measured,
        "--json",
        "--top",
        "3",
    ]);
    assert_eq!(doc["optimum"]["label"], "(4, 1, 0, 0)");
    assert_eq!(doc["optimum"]["processes"], 4);
    assert!(close(&doc["optimum"]["seconds"], 1.4e-3), "{doc}");
    assert_eq!(
        doc["optimum"]["rows"],
        serde_json::json!([1000, 1000, 1000, 1000])
    );
    assert_eq!(doc["not_estimated"], 0);
    assert_eq!(doc["max_ranks"], 1);
    let estimates = doc["estimates"].as_array().unwrap();
    assert_eq!(estimates.len(), 3);
    // (3,1,0,0): 4e-3/3 + 3e-4; (4,1,4,1): 1e-3 + 8e-4.
    assert!(close(&estimates[1]["seconds"], 4e-3 / 3.0 + 3e-4));
    assert!(close(&estimates[2]["seconds"], 1.8e-3));
    assert_eq!(doc["measured"], 3);
    let e = &doc["epsilon"];
    assert!(close(&e["epsilon"], 0.05 / 1.45), "{e}");
    assert!(close(&e["delta"], -0.1 / 1.5), "{e}");
    assert_eq!(
        e["optimum"],
        serde_json::json!([{"nodes": 4, "ranks": 1}, {"nodes": 4, "ranks": 1}])
    );

    // Without measured alternatives at that size, ε is unavailable and says why.
    let doc = json(&["allocate", &runs(), "--size", "4000", "--json"]);
    assert_eq!(doc["epsilon"], Value::Null);
    assert!(doc["epsilon_unavailable"]
        .as_str()
        .unwrap()
        .contains("no measured run"));
    // Two ranks per node: the runs have no model for M_i = 2, so those configurations are
    // not estimated (5 states per group with M ≤ 1 → 9 with M ≤ 2: 80 − 24 = 56).
    let doc = json(&[
        "allocate",
        &runs(),
        "--size",
        "4000",
        "--json",
        "--max-ranks",
        "2",
    ]);
    assert_eq!(doc["not_estimated"], 56);

    let (ok, text, _) = mheta(&[
        "allocate",
        &runs(),
        "--size",
        "4000",
        "--measured",
        &measured,
    ]);
    assert!(ok);
    assert!(
        text.contains("estimated optimum (4, 1, 0, 0): P = 4"),
        "{text}"
    );
    assert!(text.contains("ε = 0.0345"), "{text}");
}

/// Writes `text` as a runs file in a temporary directory (with the timings file beside it)
/// and returns mheta fit's error.
fn fit_error(text: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        data("fast-2x1-1000.timings.json"),
        dir.path().join("fast-2x1-1000.timings.json"),
    )
    .unwrap();
    let path = dir.path().join("bad-runs.json");
    std::fs::write(&path, text).unwrap();
    let (ok, _, err) = mheta(&["fit", path.to_str().unwrap()]);
    assert!(!ok, "accepted: {text}");
    assert!(err.contains("bad-runs.json"), "{err}");
    err
}

/// A change to the good runs file.
type Edit = Box<dyn Fn(&mut Value)>;

#[test]
fn bad_runs_files_name_the_file_and_field() {
    let good = std::fs::read_to_string(data("runs.json")).unwrap();
    let mut doc: Value = serde_json::from_str(&good).unwrap();
    let cases: Vec<(Edit, &str)> = vec![
        (
            Box::new(|d| d["schema"] = "mheta-runs/9".into()),
            "field `schema`",
        ),
        (
            Box::new(|d| d["runs"][4]["allocation"][0] = serde_json::json!([5, 1])),
            "field `runs[4].allocation[0]` uses 5 nodes of group `fast`, which has 4",
        ),
        (
            Box::new(|d| d["runs"][4]["allocation"][0] = serde_json::json!([2, 0])),
            "field `runs[4].allocation[0]` is [2, 0]",
        ),
        (
            Box::new(|d| d["runs"][4]["allocation"] = serde_json::json!([[1, 1]])),
            "field `runs[4].allocation` has 1 entries",
        ),
        (
            Box::new(|d| d["runs"][4]["seconds"] = (-1.0).into()),
            "field `runs[4].seconds` is -1",
        ),
        (
            Box::new(|d| {
                d["runs"][4].as_object_mut().unwrap().remove("seconds");
            }),
            "field `runs[4].seconds` is missing",
        ),
        (
            Box::new(|d| d["runs"][4]["size"] = 0.into()),
            "field `runs[4].size` is 0",
        ),
        (
            // Run 3 is given by a timings file of 2 ranks.
            Box::new(|d| d["runs"][3]["allocation"][0] = serde_json::json!([3, 1])),
            "field `runs[3].timings`: ",
        ),
        (
            Box::new(|d| d["runs"][3]["size"] = 999.into()),
            "field `runs[3].size` is 999, but its timings file",
        ),
        (
            Box::new(|d| d["runs"][3]["seconds"] = 1.0.into()),
            "field `runs[3].timings` and `seconds` are both given",
        ),
        (
            Box::new(|d| d["groups"][1]["nodes"] = 0.into()),
            "field `groups[1].nodes` is 0",
        ),
    ];
    for (i, (edit, want)) in cases.iter().enumerate() {
        let mut d = doc.clone();
        edit(&mut d);
        let err = fit_error(&serde_json::to_string_pretty(&d).unwrap());
        assert!(err.contains(want), "case {i}: {err}");
    }
    // An unknown field: serde's line and column, and the file.
    doc["runs"][0]["secs"] = 1.0.into();
    let err = fit_error(&serde_json::to_string_pretty(&doc).unwrap());
    assert!(err.contains("unknown field `secs`"), "{err}");
    assert!(err.contains("line"), "{err}");
}
