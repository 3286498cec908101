//! `mheta tune --backend mpi` under a real `mpirun` (analyzer feature `mpi`; needs Open MPI or
//! another MPI with `mpirun` on PATH). Run by `.ci/run` as
//! `cargo test -p mheta-cli --features mpi --test tune_mpi`.
//!
//! The accuracy test runs the same tune command on the threads backend and on 4 MPI processes
//! and requires the MPI run's model to be as accurate as the threads run's. The MPI backend only
//! has the wall clock (the runtime refuses `--clock virtual|charged` under MPI), so both runs
//! use it, and the tolerance is set from the spread measured on this machine (see
//! [`MEAN_TOLERANCE`]).

#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod protocol;
use protocol::test_protocol;

/// The tests time real runs on a machine with few cores: they take turns.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A tune run that takes longer than this has hung (the slowest legitimate case is a cold
/// release build of the fixture, a few minutes on a loaded 2-core machine).
const HANG: Duration = Duration::from_secs(900);

/// The problem of the accuracy test: `io-4` has equal CPUs, two nodes with normal memories and
/// two with small memories and slow disks. At 4000 × 2000 the small nodes are out of core under
/// Block (2 × 16 MB per node against 6 MiB), so Block is dominated by emulated disk time, while
/// the in-core distributions leave them a few rows and are dominated by computation.
const CLUSTER: &str = "fixtures/clusters/io-4.toml";
const ROWS: u64 = 4000;
const COLS: &str = "2000";
/// Four iterations per compared run: the runtime leaves two out as warm-up
/// (`warm_up_iterations`) and averages two. With two iterations only one is measured, and the
/// mean accuracies were noisier (MPI 0.51–0.78 and threads 0.48–0.82 in 3 trials).
const ITERATIONS: &str = "4";

/// How far the MPI run's mean accuracy may fall below the threads run's. Both are wall-clock
/// figures on a shared 2-core machine running 4 ranks. Measured here (load average 2–5), 13
/// pairs of runs of this command gave threads means of 0.46–0.95 and MPI means of 0.47–0.94;
/// MPI minus threads ranged from −0.28 to +0.23 with a standard deviation of about 0.17 and a
/// mean near zero. 0.35 (about two standard deviations, one-sided) leaves room for that noise,
/// the re-measurement below makes a chance failure rarer still, and the test still fails when the
/// MPI measurements are wrong: with the CPU-emulation bug fixed alongside this test (an MPI rank
/// polling for messages had that CPU time slowed down as if it were computation), this test
/// failed with MPI 0.216 against threads 0.964.
const MEAN_TOLERANCE: f64 = 0.35;

/// Block is the distribution the model was measured under and, here, is I/O bound (emulated
/// disk waits, which CPU contention does not disturb): both backends usually predict it within
/// 2% on this machine (accuracy 0.98–0.99), so it gets a tighter bound than the mean.
const BLOCK_TOLERANCE: f64 = 0.1;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// `mheta ARGS` in the workspace root, killed (and the test failed) if it hangs. mpirun may run
/// as root: CI containers usually are root, and Open MPI refuses that unless told.
fn mheta(args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let (out, err) = (dir.path().join("stdout"), dir.path().join("stderr"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_mheta"))
        .current_dir(root())
        .args(test_protocol(args))
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .expect("mheta starts");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > HANG {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "`mheta {}` hung for {HANG:?}; stderr so far:\n{}",
                args.join(" "),
                std::fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    Run {
        code: status.code(),
        stdout: std::fs::read_to_string(&out).unwrap(),
        stderr: std::fs::read_to_string(&err).unwrap(),
    }
}

/// `mheta tune fixtures/jacobi` of the accuracy test on `backend`; returns the JSON document.
fn tune(backend: &[&str]) -> serde_json::Value {
    let rows = ROWS.to_string();
    let mut args = vec!["tune", "fixtures/jacobi"];
    args.extend_from_slice(backend);
    args.extend([
        "--cluster",
        CLUSTER,
        "--clock",
        "wall",
        "--rows",
        &rows,
        "--iterations",
        ITERATIONS,
        "--budget",
        "100ms",
        "--json",
        "--",
        "--cols",
        COLS,
    ]);
    let run = mheta(&args);
    assert_eq!(
        run.code,
        Some(0),
        "`mheta {}`:\n{}",
        args.join(" "),
        run.stderr
    );
    serde_json::from_str(&run.stdout).expect("JSON on stdout")
}

/// Accuracy of one prediction, as tune computes it.
fn accuracy(d: &serde_json::Value) -> f64 {
    let (p, a) = (
        d["predicted_s"].as_f64().unwrap(),
        d["actual_s"].as_f64().unwrap(),
    );
    1.0 - (p - a).abs() / p.min(a)
}

/// The checks every tune document must pass, whatever the backend.
fn check_document(doc: &serde_json::Value, backend: &str) {
    assert_eq!(doc["structure"]["crate"], "jacobi");
    assert_eq!(doc["cluster"]["nodes"].as_array().unwrap().len(), 4);
    assert_eq!(doc["total_rows"], ROWS, "{backend}");
    let distributions = doc["distributions"].as_array().unwrap();
    protocol::check_compared_names(doc);
    let mut sum = 0.0;
    for d in distributions {
        let rows: Vec<u64> = serde_json::from_value(d["rows"].clone()).unwrap();
        assert_eq!(rows.len(), 4, "{backend}: {d}");
        assert_eq!(rows.iter().sum::<u64>(), ROWS, "{backend}: {d}");
        assert!(d["predicted_s"].as_f64().unwrap() > 0.0, "{backend}: {d}");
        assert!(d["actual_s"].as_f64().unwrap() > 0.0, "{backend}: {d}");
        sum += accuracy(d);
    }
    let mean = doc["accuracy"]["mean"].as_f64().unwrap();
    assert!(
        (mean - sum / distributions.len() as f64).abs() < 1e-9,
        "{backend}"
    );
}

fn block(doc: &serde_json::Value) -> &serde_json::Value {
    &doc["distributions"][1]
}

/// `predicted/actual` seconds of every distribution, for messages.
fn summary(doc: &serde_json::Value) -> String {
    doc["distributions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{} {:.4}/{:.4}",
                d["name"].as_str().unwrap(),
                d["predicted_s"].as_f64().unwrap(),
                d["actual_s"].as_f64().unwrap()
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// One threads run and one MPI run of the same command. Checks both documents, then compares
/// their accuracy: `Err` describes how the MPI run fell short.
fn compare_backends() -> Result<String, String> {
    let threads = tune(&["--backend", "threads"]);
    let mpi = tune(&[
        "--backend",
        "mpi",
        "--mpirun",
        "mpirun --oversubscribe -np 4",
    ]);
    check_document(&threads, "threads");
    check_document(&mpi, "mpi");
    // The spectrum comes from the cluster and S alone: the same rows on both backends.
    for i in 1..5 {
        assert_eq!(
            mpi["distributions"][i]["rows"],
            threads["distributions"][i]["rows"]
        );
    }
    assert_eq!(
        block(&mpi)["rows"],
        serde_json::json!([1000, 1000, 1000, 1000])
    );

    let mean = |doc: &serde_json::Value| doc["accuracy"]["mean"].as_f64().unwrap();
    let (mean_threads, mean_mpi) = (mean(&threads), mean(&mpi));
    let (block_threads, block_mpi) = (accuracy(block(&threads)), accuracy(block(&mpi)));
    let figures = format!(
        "mean accuracy: threads {mean_threads:.3}, mpi {mean_mpi:.3}; Block: threads \
         {block_threads:.3}, mpi {block_mpi:.3}\n  threads (predicted/actual s): {}\n  mpi: {}",
        summary(&threads),
        summary(&mpi)
    );
    if mean_mpi < mean_threads - MEAN_TOLERANCE {
        return Err(format!(
            "the MPI run's mean accuracy is more than {MEAN_TOLERANCE} below the threads \
             run's; {figures}"
        ));
    }
    if block_mpi < block_threads - BLOCK_TOLERANCE {
        return Err(format!(
            "the MPI run's Block accuracy is more than {BLOCK_TOLERANCE} below the threads \
             run's; {figures}"
        ));
    }
    Ok(figures)
}

/// The MPI backend's measurements give the model the same accuracy as the threads backend's.
/// A wall-clock comparison on a shared machine has rare outliers (about one instrumented run in
/// ten, on either backend, mismeasured Block by up to 2x while another job hogged the cores), so
/// a failed comparison is measured once more and only a second failure fails the test: a
/// systematic error in the MPI measurements fails both.
#[test]
fn mpi_tune_is_as_accurate_as_threads_tune() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let figures = compare_backends().or_else(|first| {
        eprintln!("first comparison failed, measuring again: {first}");
        compare_backends().map_err(|second| format!("{first}\nand again: {second}"))
    });
    match figures {
        // Shown with `--nocapture`: the figures of the report.
        Ok(figures) => println!("{figures}"),
        Err(failures) => panic!("{failures}"),
    }
}

#[test]
fn failures_under_mpi_name_the_step_and_never_hang() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let base = [
        "tune",
        "fixtures/jacobi",
        "--cluster",
        CLUSTER,
        "--backend",
        "mpi",
    ];
    let with = |extra: &[&str]| {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        mheta(&args)
    };

    // Every rank of the program fails at start-up: mpirun's report and the program's own
    // message reach the user, under the step that failed.
    let run = with(&[
        "--mpirun",
        "mpirun --oversubscribe -np 4",
        "--",
        "--no-such-flag",
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("step 3 (instrumented run) failed: `mpirun --oversubscribe -np 4 "),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("--no-such-flag"), "{}", run.stderr);

    // The launcher's process count and --ranks disagree: refused before anything runs.
    let run = with(&["--mpirun", "mpirun -np 2", "--ranks", "4"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("--mpirun starts 2 processes but --ranks is 4"),
        "{}",
        run.stderr
    );

    // No such launcher.
    let run = with(&["--mpirun", "no-such-mpirun-anywhere -np 4"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("mpirun not found: `no-such-mpirun-anywhere`"),
        "{}",
        run.stderr
    );

    // A crate without the `mpi` feature: the build step says what to add.
    let dir = tempfile::tempdir().unwrap();
    let krate = without_mpi_feature(dir.path());
    let run = mheta(&[
        "tune",
        krate.to_str().unwrap(),
        "--cluster",
        CLUSTER,
        "--backend",
        "mpi",
    ]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("step 2 (build) failed: package `jacobi-without-mpi` has no `mpi` feature"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(r#"add `mpi = ["mheta/mpi"]`"#),
        "{}",
        run.stderr
    );
}

/// A copy of the Jacobi fixture in `dir` whose manifest has no `[features]`.
fn without_mpi_feature(dir: &Path) -> PathBuf {
    let root = root().canonicalize().unwrap();
    let krate = dir.join("jacobi-without-mpi");
    std::fs::create_dir_all(krate.join("src")).unwrap();
    std::fs::copy(
        root.join("fixtures/jacobi/src/main.rs"),
        krate.join("src/main.rs"),
    )
    .unwrap();
    let manifest = format!(
        "[package]\nname = \"jacobi-without-mpi\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         publish = false\n\n[dependencies]\nmheta = {{ path = {:?}, features = [\"clap\"] }}\n\
         fixture-common = {{ path = {:?} }}\nclap = \"4\"\n\n[workspace]\n",
        root.display().to_string(),
        root.join("fixtures/common").display().to_string()
    );
    std::fs::write(krate.join("Cargo.toml"), manifest).unwrap();
    krate
}

/// An rsmpi program that attaches (`fixtures/rsmpi-heat`) is tuned through `MHETA_*`: with its
/// own rows and sweeps (after `--`), on the 2-node DC cluster (CPU powers 0.25 and 1). Measured
/// here on a quiet machine with `--repeat 3` and 200 sweeps, 3 tunes: Block accuracy 84–97%, mean
/// accuracy 90–97%, the chosen distribution 2.1–2.6× faster than Block. Whole runs on this
/// machine sometimes go at half speed (one Block run measured 0.44 ms per sweep against the
/// usual 0.22), and the forced instrumented run is made once, so a tune whose Block accuracy
/// misses the bound is made once more before the test fails. The test fails when the
/// environment does not reach the program (no measurements, no timings) or the model ignores
/// the rows (Block and Balanced are far apart here).
#[test]
fn an_attached_rsmpi_program_is_tuned_through_the_environment() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let args = [
        "tune",
        "fixtures/rsmpi-heat",
        "--backend",
        "mpi",
        "--mpirun",
        "mpirun --allow-run-as-root --oversubscribe -np 2",
        "--cluster",
        "fixtures/clusters/dc-2.toml",
        "--repeat",
        "3",
        "--budget",
        "100ms",
        "--json",
        "--",
        "960",
        "200",
    ];
    let attempt = || -> Result<String, String> {
        let run = mheta(&args);
        assert_eq!(
            run.code,
            Some(0),
            "`mheta {}`:\n{}",
            args.join(" "),
            run.stderr
        );
        let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON on stdout");
        assert_eq!(doc["structure"]["crate"], "rsmpi-heat");
        assert_eq!(doc["total_rows"], 960);
        assert_eq!(doc["iterations"], 200, "the program's own sweeps");
        let distributions = doc["distributions"].as_array().unwrap();
        protocol::check_compared_names(&doc);
        for d in distributions {
            let rows: Vec<u64> = serde_json::from_value(d["rows"].clone()).unwrap();
            assert_eq!((rows.len(), rows.iter().sum::<u64>()), (2, 960), "{d}");
            assert!(d["actual_s"].as_f64().unwrap() > 0.0, "{d}");
        }
        let predicted = |i: usize| distributions[i]["predicted_s"].as_f64().unwrap();
        assert!(
            predicted(2) < 0.8 * predicted(1),
            "Balanced must be predicted well below Block on CPUs 0.25 and 1: {}",
            summary(&doc)
        );
        assert!(predicted(0) <= predicted(1), "{}", summary(&doc));
        let block_accuracy = accuracy(block(&doc));
        if block_accuracy > 0.6 {
            Ok(summary(&doc))
        } else {
            Err(format!("Block {block_accuracy:.3}: {}", summary(&doc)))
        }
    };
    if let Err(first) = attempt() {
        if let Err(second) = attempt() {
            panic!("Block's accuracy missed 0.6 twice:\n{first}\n{second}");
        }
    }

    // An attached program runs under mpirun only, and takes its rows from itself.
    let threads = mheta(&[
        "tune",
        "fixtures/rsmpi-heat",
        "--cluster",
        "fixtures/clusters/dc-2.toml",
    ]);
    assert_eq!(threads.code, Some(1));
    assert!(
        threads.stderr.contains("attaches to rsmpi"),
        "{}",
        threads.stderr
    );
    assert!(
        threads.stderr.contains("--backend mpi"),
        "{}",
        threads.stderr
    );
}
