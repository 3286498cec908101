//! A stage's compute time excludes the communication made while it is open: a stage region that
//! reaches into the section's closing event must not count the wait for slower ranks as compute.
//! And the first of several iterations is a warm-up, left out of every figure.

mod common;

use mheta_runtime::comm::{CommError, CommExt, ReduceOp};
use mheta_runtime::format::{Measurements, StageKey};
use mheta_runtime::{clock, hooks, launch, Args, ClockMode};

#[test]
fn waiting_inside_a_stage_is_not_compute_nor_is_the_warm_up() {
    let dir = tempfile::tempdir().unwrap();
    let measurements = dir.path().join("m.json");
    let args = Args {
        ranks: Some(2),
        rows: Some(2),
        iterations: 2,
        cluster: Some(common::cluster_file(
            dir.path(),
            "1ms",
            "1MB/s",
            &[(2, 1.0, "1GiB")],
        )),
        clock: ClockMode::Charged,
        measurements: Some(measurements.clone()),
        ..Args::default()
    };
    launch(&args, |ctx| {
        for k in 0..2u64 {
            let _iteration = hooks::iteration(k);
            let _section = hooks::section(0);
            let _stage = hooks::stage(StageKey {
                section: 0,
                tile: None,
                stage: 0,
            });
            // Rank 0 computes 0.1 s, rank 1 0.4 s; both then reduce inside the stage region. The
            // first iteration is a warm-up that costs 1 s more, and is not measured.
            let warm_up = if k == 0 { 1.0 } else { 0.0 };
            clock::charge(warm_up + if ctx.rank() == 0 { 0.1 } else { 0.4 });
            let _event = hooks::event(0);
            ctx.comm().all_reduce_value(1.0f64, ReduceOp::Sum)?;
        }
        Ok::<_, CommError>(())
    })
    .unwrap();
    let m: Measurements =
        serde_json::from_str(&std::fs::read_to_string(&measurements).unwrap()).unwrap();
    for (rank, expected) in [(0, 0.1), (1, 0.4)] {
        let stage = &m.nodes[rank].stages[0];
        assert!(
            (stage.compute_s - expected).abs() < 1e-12,
            "rank {rank}: compute {} (expected {expected})",
            stage.compute_s
        );
    }
    assert_eq!(m.iterations, 1);
    assert!((m.nodes[1].iteration_s - 0.4 - 2.0 * (1e-3 + 8.0 / 1e6)).abs() < 1e-12);
    // Rank 0 waited for rank 1: that is blocked time of the event.
    assert!(
        m.nodes[0].events[0].blocked_s > 0.29,
        "{:?}",
        m.nodes[0].events[0]
    );
}
