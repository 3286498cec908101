//! `--timings FILE`: an uninstrumented run's iteration times, hand-computed on the charged clock.

mod common;

use mheta_runtime::comm::{CommError, CommExt, ReduceOp};
use mheta_runtime::format::Timings;
use mheta_runtime::hooks::RecordKind;
use mheta_runtime::{clock, hooks, launch, Args, ClockMode, Launch};

const L: f64 = 1e-3; // 1 ms latency
const B: f64 = 1e6; // 1 MB/s

fn args(dir: &std::path::Path, ranks: usize, iterations: u32) -> Args {
    Args {
        ranks: Some(ranks),
        rows: Some(ranks as u64),
        iterations,
        cluster: Some(common::cluster_file(
            dir,
            "1ms",
            "1MB/s",
            &[(ranks, 1.0, "1GiB")],
        )),
        clock: ClockMode::Charged,
        timings: Some(dir.join("timings.json")),
        ..Args::default()
    }
}

/// A main loop whose first iteration costs 0.5 s more (a cold start); rank `r` computes
/// 0.1·(r+1) s, then every rank joins an all-reduce. Every iteration also opens a stage guard,
/// which a timing run must not record.
fn solver(ctx: &mheta_runtime::Context) -> Result<(), CommError> {
    for k in 0..ctx.settings().iterations {
        let _iteration = hooks::iteration(u64::from(k));
        {
            let _stage = hooks::stage(mheta_runtime::format::StageKey {
                section: 0,
                tile: None,
                stage: 0,
            });
            let cold = if k == 0 { 0.5 } else { 0.0 };
            clock::charge(cold + 0.1 * (ctx.rank() + 1) as f64);
        }
        ctx.comm().all_reduce_value(1.0f64, ReduceOp::Sum)?;
    }
    Ok(())
}

fn read(dir: &std::path::Path) -> Timings {
    let text = std::fs::read_to_string(dir.join("timings.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn steady_iteration_time_is_hand_computable_and_nothing_else_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    launch(&args(dir.path(), 3, 4), solver).unwrap();
    let t = read(dir.path());
    assert_eq!(t.schema, "mheta-timings/1");
    assert_eq!(t.clock, "charged");
    assert_eq!(t.distribution, vec![1, 1, 1]);
    assert_eq!(t.nodes.len(), 3);
    assert!(t.nodes.iter().all(|n| n.iterations.len() == 4), "{t:?}");
    // Steady state: the slowest rank computes 0.3 s, then the linear all-reduce (reduce to rank
    // 0, broadcast back) costs two 8-byte transfers before the last rank leaves it.
    let expected = 0.3 + 2.0 * (L + 8.0 / B);
    assert!(
        (t.iteration_s - expected).abs() < 1e-12,
        "{} vs {expected}",
        t.iteration_s
    );
    // The first iteration is longer (cold start) and is not part of the steady state.
    let first = &t.nodes[2].iterations[0];
    assert!(first.end_s - first.begin_s > 0.79, "{first:?}");
    // A timing run records the iteration guards and nothing else (no stage, no call).
    let (_, records, _) = Launch::new(&args(dir.path(), 3, 4))
        .run_collect(solver)
        .unwrap();
    for (rank, rr) in records.iter().enumerate() {
        let kinds: Vec<RecordKind> = rr.records.iter().map(|r| r.kind).collect();
        assert_eq!(kinds, vec![RecordKind::Iteration; 4], "rank {rank}");
    }
}

#[test]
fn an_instrumented_run_times_its_iterations_too() {
    let dir = tempfile::tempdir().unwrap();
    let mut a = args(dir.path(), 2, 3);
    a.measurements = Some(dir.path().join("m.json"));
    launch(&a, solver).unwrap();
    let t = read(dir.path());
    let expected = 0.2 + 2.0 * (L + 8.0 / B);
    assert!(
        (t.iteration_s - expected).abs() < 1e-12,
        "{}",
        t.iteration_s
    );
    assert!(dir.path().join("m.json").exists());
}

#[test]
fn a_run_without_a_main_loop_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let err = launch(&args(dir.path(), 2, 3), |_ctx| Ok::<_, CommError>(()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--timings") && err.contains("no rank timed"),
        "{err}"
    );
    assert!(!dir.path().join("timings.json").exists());
}
