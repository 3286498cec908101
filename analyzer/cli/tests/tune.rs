//! `mheta tune` end to end on the Jacobi fixture (builds it in release once), and `mheta report`.

use std::path::PathBuf;
use std::process::Command;

mod protocol;
use protocol::test_protocol;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn mheta(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mheta"))
        .current_dir(root())
        .args(test_protocol(args))
        .output()
        .expect("the binary runs")
}

/// `mheta tune` of the Jacobi fixture (300 rows, 200 columns) on the two nodes of `cluster`
/// (a file in `fixtures/clusters`) under the charged clock, for 2 iterations, writing a report
/// to `report`; `extra` goes before `--`.
fn tune_jacobi(cluster: &str, report: &std::path::Path, extra: &[&str]) -> std::process::Output {
    let cluster = format!("fixtures/clusters/{cluster}");
    let mut args = vec![
        "tune",
        "fixtures/jacobi",
        "--cluster",
        &cluster,
        "--ranks",
        "2",
        "--rows",
        "300",
        "--iterations",
        "2",
        "--clock",
        "charged",
        "--report",
        report.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "--cols", "200"]);
    mheta(&args)
}

fn accuracy(p: f64, a: f64) -> f64 {
    1.0 - (p - a).abs() / p.min(a)
}

#[test]
fn tune_jacobi_prints_the_json_contract_and_writes_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    let out = tune_jacobi("hy1-2.toml", &report, &["--budget", "50ms", "--json"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Not a terminal: one plain progress line per step.
    assert!(stderr.contains("tune: [1/"), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");

    for key in ["structure", "cluster", "distributions", "best", "accuracy"] {
        assert!(doc.get(key).is_some(), "missing `{key}`");
    }
    assert_eq!(doc["structure"]["crate"], "jacobi");
    assert_eq!(doc["cluster"]["nodes"].as_array().unwrap().len(), 2);
    protocol::check_compared_names(&doc);

    let mut accuracies = Vec::new();
    for d in doc["distributions"].as_array().unwrap() {
        let rows: Vec<u64> = serde_json::from_value(d["rows"].clone()).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows.iter().sum::<u64>(), 300, "{d}");
        let (p, a) = (
            d["predicted_s"].as_f64().unwrap(),
            d["actual_s"].as_f64().unwrap(),
        );
        assert!(p > 0.0 && a > 0.0, "{d}");
        accuracies.push(accuracy(p, a));
    }
    assert_eq!(
        doc["distributions"][1]["rows"],
        serde_json::json!([150, 150])
    );
    let mean = accuracies.iter().sum::<f64>() / accuracies.len() as f64;
    let min = accuracies.iter().copied().fold(f64::INFINITY, f64::min);
    assert!((doc["accuracy"]["mean"].as_f64().unwrap() - mean).abs() < 1e-9);
    assert!((doc["accuracy"]["min"].as_f64().unwrap() - min).abs() < 1e-9);

    let best = &doc["best"];
    assert_eq!(best["algorithm"], "gbs");
    assert_eq!(best["rows"], doc["distributions"][0]["rows"]);
    assert_eq!(best["actual_s"], doc["distributions"][0]["actual_s"]);
    // The model's prediction for the chosen rows agrees with what the search evaluated.
    let searched = &doc["searches"][0];
    assert_eq!(searched["algorithm"], "gbs");
    assert_eq!(searched["rows"], best["rows"]);
    let (p, s) = (
        best["predicted_s"].as_f64().unwrap(),
        searched["predicted_s"].as_f64().unwrap(),
    );
    assert!((p - s).abs() <= 1e-12 * p.max(1e-300), "{p} vs {s}");
    // With --report every algorithm searched, for the convergence plot.
    assert_eq!(doc["searches"].as_array().unwrap().len(), 5);

    for file in ["tune.json", "index.html", "trace.json", "measurements.json"] {
        assert!(report.join(file).is_file(), "{file} missing");
    }
    let page = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert_eq!(page.matches("<svg").count(), 3);

    // `mheta report` rebuilds the page from the saved document.
    std::fs::remove_file(report.join("index.html")).unwrap();
    let out = mheta(&["report", report.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The same page up to the last digit of re-parsed floats.
    let again = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert_eq!(again.lines().count(), page.lines().count());
    let table = |p: &str| p[..p.find("<svg").unwrap()].to_string();
    assert_eq!(table(&again), table(&page));
}

#[test]
fn repeats_run_in_rounds_and_sample_in_core_computation_at_two_row_counts_and_the_choice() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    // Two IO nodes: In-Core-Balanced and In-Core differ, and the first choice is at least 20 %
    // from both on node 0.
    // Up to four runs each, while a median is not known to ±3 %: the charged clock's runs repeat
    // bit for bit, so two are all there are.
    let out = tune_jacobi(
        "io-2.toml",
        &report,
        &["--budget", "20ms", "--repeat", "2", "--max-repeat", "4"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // Every compared distribution runs once before any runs again.
    let first_again = stderr.find("again (run 2)").expect("a second round");
    let last_first = stderr.rfind("for 2 iterations").expect("a first round");
    assert!(last_first < first_again, "{stderr}");
    assert!(!stderr.contains("(run 3)"), "{stderr}");
    // The model's in-core samples run again in the second round, before its compared runs.
    let samples_again = stderr
        .find("round 2: the model's in-core samples")
        .expect("samples in the second round");
    assert!(
        last_first < samples_again && samples_again < first_again,
        "{stderr}"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("tune.json")).unwrap()).unwrap();
    let method = doc["actual_method"].as_str().unwrap();
    assert!(
        method.contains(
            "median of 2 runs, each a separate process, made in rounds over the distributions \
             (2 at least, more while a median's 95 % interval was wider than ±3 %, at most 4)"
        ),
        "{method}"
    );
    // Each distribution keeps its runs: two here (these runs are far under the 2 s budget), whose
    // median is the actual time and whose agreement is the repeatability.
    for d in doc["distributions"].as_array().unwrap() {
        let runs: Vec<f64> = serde_json::from_value(d["runs_s"].clone()).unwrap();
        assert_eq!(runs.len(), 2, "{d}");
        let actual = d["actual_s"].as_f64().unwrap();
        assert!(
            (actual - (runs[0] + runs[1]) / 2.0).abs() <= 1e-12 * actual,
            "{d}"
        );
        let (fast, slow) = (runs[0].min(runs[1]), runs[0].max(runs[1]));
        let agreement = d["repeatability"].as_f64().unwrap();
        assert!((agreement - accuracy(fast, slow)).abs() < 1e-12, "{d}");
        // Their spread: the extremes are the two runs, and the prediction's distance outside
        // them is relative to the end it passed.
        let spread = &d["spread"];
        assert_eq!(spread["min_s"].as_f64(), Some(fast), "{d}");
        assert_eq!(spread["max_s"].as_f64(), Some(slow), "{d}");
        let predicted = d["predicted_s"].as_f64().unwrap();
        let outside = if predicted > slow {
            (predicted - slow) / slow
        } else if predicted < fast {
            (fast - predicted) / fast
        } else {
            0.0
        };
        assert!(
            (spread["outside"].as_f64().unwrap() - outside).abs() < 1e-12,
            "{d}"
        );
    }
    // What the machine was doing is recorded.
    assert!(
        doc["load"]["cores"].as_u64().unwrap() >= 1,
        "{}",
        doc["load"]
    );
    // Names with the same rows share their runs, in the order they ran.
    let distributions = doc["distributions"].as_array().unwrap();
    for a in distributions {
        for b in distributions.iter().filter(|b| b["rows"] == a["rows"]) {
            assert_eq!(a["runs_s"], b["runs_s"], "{a} / {b}");
        }
    }

    // The in-core runs: In-Core-Balanced and In-Core, twice each, and every node both runs kept
    // in core has a sample from each run in its stages.
    let rows = |name: &str| -> Vec<u64> {
        doc["distributions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["name"] == name)
            .map(|d| serde_json::from_value(d["rows"].clone()).unwrap())
            .unwrap()
    };
    let (balanced, in_core) = (rows("in-core-balanced"), rows("in-core"));
    assert_ne!(balanced, in_core, "the case must sample two row counts");
    for name in ["in-core-balanced", "in-core"] {
        for run in 0..2 {
            let file = report.join(format!("measurements-{name}-{run}.json"));
            assert!(file.is_file(), "{} missing", file.display());
        }
    }
    // Refinement: a chosen distribution that would give the model a new in-core sample is
    // sampled (twice, as the others) and searched again; the final choice is one whose samples
    // the model would pool with those it has, unless the refinements ran out. This case's first
    // choice gives a new sample.
    let chosen_rows = |k: u32| -> Option<Vec<u64>> {
        let file = report.join(format!("measurements-chosen-{k}-0.json"));
        let m: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(file).ok()?).unwrap();
        assert!(report
            .join(format!("measurements-chosen-{k}-1.json"))
            .is_file());
        Some(serde_json::from_value(m["distribution"].clone()).unwrap())
    };
    let refined: Vec<Vec<u64>> = (1..=2).map_while(chosen_rows).collect();
    assert!(!refined.is_empty(), "the case must refine: {stderr}");
    assert!(
        stderr.contains(&format!(
            "measuring the chosen distribution in core (chosen-1: {})",
            refined[0]
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(",")
        )),
        "{stderr}"
    );
    // The model's placements, which decide what a sample adds, do not depend on the samples:
    // the final model answers as the one that refined did.
    let structure: mheta_runtime::format::Structure =
        serde_json::from_str(&std::fs::read_to_string(report.join("structure.json")).unwrap())
            .unwrap();
    let final_measurements: mheta_runtime::format::Measurements =
        serde_json::from_str(&std::fs::read_to_string(report.join("measurements.json")).unwrap())
            .unwrap();
    let model =
        mheta_model::Model::new(&structure, &final_measurements, &final_measurements.cluster)
            .unwrap();
    let adds_in_core_sample =
        |sampled: &[Vec<u64>], rows: &[u64]| model.adds_in_core_sample(sampled, rows);
    let mut sampled = vec![balanced.clone(), in_core.clone()];
    for rows in &refined {
        assert!(
            adds_in_core_sample(&sampled, rows),
            "{rows:?} refined although the model pools it with {sampled:?}"
        );
        sampled.push(rows.clone());
    }
    let best = rows("best");
    assert!(
        !adds_in_core_sample(&sampled, &best) || refined.len() == 2,
        "best {best:?} would still give a new sample (sampled {sampled:?})"
    );
    let measured: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report.join("measurements.json")).unwrap())
            .unwrap();
    for (i, node) in measured["nodes"].as_array().unwrap().iter().enumerate() {
        for stage in node["stages"].as_array().unwrap() {
            let samples: Vec<u64> = stage["in_core"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["rows"].as_u64().unwrap())
                .collect();
            let mut want = vec![balanced[i], balanced[i], in_core[i], in_core[i]];
            for rows in &refined {
                want.extend([rows[i], rows[i]]);
            }
            let mut got = samples.clone();
            want.sort_unstable();
            got.sort_unstable();
            assert_eq!(got, want, "node {i}: {stage}");
        }
        // Each of those runs also gave every event a sample of its per-message overheads.
        let events = node["events"].as_array().unwrap();
        assert!(!events.is_empty());
        for event in events {
            let samples = event["overheads"].as_array().unwrap().len();
            assert_eq!(samples, 4 + 2 * refined.len(), "{event}");
        }
    }
    // Every prediction compared is the model's built from all those samples, the second
    // round's included: the written structure and measurements reproduce it.
    for d in distributions {
        let rows: Vec<u64> = serde_json::from_value(d["rows"].clone()).unwrap();
        let predicted = model.predict(&rows).unwrap().iteration_s;
        assert_eq!(d["predicted_s"].as_f64(), Some(predicted), "{d}");
    }
}

#[test]
fn failures_name_the_step() {
    let out = mheta(&[
        "tune",
        "fixtures/no-such-crate",
        "--cluster",
        "fixtures/clusters/hy1-2.toml",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("step 1 (analyze) failed"), "{stderr}");
    assert!(stderr.contains("no Cargo.toml"), "{stderr}");

    let out = mheta(&[
        "tune",
        "fixtures/jacobi",
        "--cluster",
        "fixtures/no-such.toml",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--cluster") && stderr.contains("no-such.toml"),
        "{stderr}"
    );

    let out = mheta(&[
        "tune",
        "fixtures/jacobi",
        "--cluster",
        "fixtures/clusters/hy1-2.toml",
        "--clock",
        "virtual",
        "--actual",
        "timed",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--actual timed needs --clock wall"),
        "{stderr}"
    );

    let empty = tempfile::tempdir().unwrap();
    let out = mheta(&["report", empty.path().to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("tune.json"), "{stderr}");
}

#[test]
fn a_report_directory_another_tune_is_writing_is_refused_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report");
    std::fs::create_dir(&report).unwrap();
    // This process stands for the other tune: it holds the directory's lock.
    let _other = mheta_runtime::cleanup::DirLock::acquire(&report).unwrap();
    let out = tune_jacobi("hy1-2.toml", &report, &[]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let pid = format!("(pid {})", std::process::id());
    assert!(
        stderr.contains("being written by another mheta tune") && stderr.contains(&pid),
        "{stderr}"
    );
}

/// A tune's children end with it: a tune ended by SIGTERM while its program runs ends the
/// program's process group and removes its copy of the binary and its working directory.
#[test]
fn a_tune_ended_by_a_signal_ends_its_program_and_removes_its_files() {
    use std::os::unix::process::ExitStatusExt;
    let mut tune = Command::new(env!("CARGO_BIN_EXE_mheta"))
        .current_dir(root())
        .args(test_protocol(&[
            "tune",
            "fixtures/jacobi",
            "--cluster",
            "fixtures/clusters/hy1-2.toml",
            "--ranks",
            "2",
            "--rows",
            "4000",
            "--iterations",
            "400",
        ]))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let tune_pid = tune.id();
    // The program's copy is `<target>/mheta-tune/run-<tune pid>-<n>/jacobi`.
    let marker = format!("mheta-tune/run-{tune_pid}-");
    let start = std::time::Instant::now();
    let (program, copy_dir) = loop {
        let found = std::fs::read_dir("/proc").unwrap().flatten().find_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let program = String::from_utf8_lossy(cmdline.split(|&b| b == 0).next()?).into_owned();
            program.contains(&marker).then(|| {
                let dir = PathBuf::from(&program).parent().unwrap().to_path_buf();
                (pid, dir)
            })
        });
        if let Some(found) = found {
            break found;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(300),
            "the program never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let scratch = std::env::temp_dir();
    // SAFETY: signals the process this test started.
    unsafe { libc::kill(tune_pid as libc::pid_t, libc::SIGTERM) };
    let status = tune.wait().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGTERM), "{status}");
    assert!(!copy_dir.exists(), "{} left behind", copy_dir.display());
    let own = format!("mheta-tune-{tune_pid}-");
    let left: Vec<_> = std::fs::read_dir(&scratch)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&own))
        .collect();
    assert!(left.is_empty(), "{left:?} left behind");
    // The program (a zombie until its new parent reaps it, at most) has ended.
    let ended = || {
        std::fs::read_to_string(format!("/proc/{program}/stat")).map_or(true, |stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, s)| s.starts_with('Z'))
        })
    };
    let start = std::time::Instant::now();
    while !ended() {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(20),
            "the program {program} outlived its tune"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Without `--repeat` and `--iterations`, tune follows its measurement protocol: every
/// compared distribution runs in 5 separate processes, each for enough iterations that its
/// steady state lasts 0.2 s (a first run that fell short is made again, longer).
#[test]
fn the_default_protocol_runs_five_processes_of_a_fifth_of_a_second_each() {
    // Not through `mheta`, which asks tests' tunes for one run.
    let out = Command::new(env!("CARGO_BIN_EXE_mheta"))
        .current_dir(root())
        .args([
            "tune",
            "fixtures/jacobi",
            "--cluster",
            "fixtures/clusters/hy1-2.toml",
            "--ranks",
            "2",
            "--rows",
            "300",
            "--clock",
            "charged",
            "--budget",
            "20ms",
            "--json",
            "--wait-quiet",
            "0s",
            "--",
            "--cols",
            "200",
        ])
        .output()
        .expect("the binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    for d in doc["distributions"].as_array().unwrap() {
        let runs: Vec<f64> = serde_json::from_value(d["runs_s"].clone()).unwrap();
        assert_eq!(runs.len(), 5, "{d}");
        let k = d["iterations"].as_u64().expect("tune chose the iterations") as f64;
        // Two warm-up iterations are left out of every run of 4 or more.
        let steady = k - 2.0;
        assert!(steady >= 3.0, "{d}");
        let mut sorted = runs.clone();
        sorted.sort_by(f64::total_cmp);
        // The median run's steady state: 0.2 s, less what the machine's noise takes off a run
        // after the one that chose the iterations.
        assert!(sorted[2] * steady >= 0.15, "{d}");
    }
}

#[test]
fn a_study_predicted_again_by_the_same_model_reproduces_its_figures() {
    // One case of a study: a tune report in the case's directory and the study.json row.
    let dir = tempfile::tempdir().unwrap();
    let case_dir = dir.path().join("charged-2/jacobi-hy1-2");
    let out = tune_jacobi(
        "hy1-2.toml",
        &case_dir,
        &["--budget", "20ms", "--repeat", "2"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(case_dir.join("tune.json")).unwrap())
            .unwrap();
    let mean = doc["accuracy"]["mean"].as_f64().unwrap();
    let min = doc["accuracy"]["min"].as_f64().unwrap();
    let study = serde_json::json!([{
        "clock": "charged", "ranks": 2, "fixture": "jacobi", "cluster": "hy1-2", "rows": 300,
        "dir": "charged-2/jacobi-hy1-2", "status": "measured",
        "mean_accuracy": mean, "min_accuracy": min, "worst": "block",
        "speedup_over_block": 1.0, "chosen_vs_best_percent": 0.0,
        "run_to_run": 0.9, "worst_outside": 0.0
    }]);
    let study_file = dir.path().join("study.json");
    std::fs::write(&study_file, study.to_string()).unwrap();
    let before = std::fs::read(&study_file).unwrap();
    let out = mheta(&[
        "study",
        "--out",
        dir.path().to_str().unwrap(),
        "--repredict",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pct = |x: f64| format!("{:.1}%", 100.0 * x);
    assert!(
        stdout.contains(&format!(
            "charged-2 jacobi on hy1-2: mean {} -> {}, min {} -> {}",
            pct(mean),
            pct(mean),
            pct(min),
            pct(min)
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains("charged-2, 1 cases, re-predicted: mean of means"),
        "{stdout}"
    );
    // Nothing is written.
    assert_eq!(std::fs::read(&study_file).unwrap(), before);

    // A study without measured cases, or none at all, is an error saying so.
    let empty = tempfile::tempdir().unwrap();
    let out = mheta(&[
        "study",
        "--out",
        empty.path().to_str().unwrap(),
        "--repredict",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no measured case"), "{stderr}");
}
