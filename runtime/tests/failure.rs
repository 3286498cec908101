//! A failing rank ends the whole run promptly with an error naming it; blocked ranks wake up;
//! no measurements file is written.

use std::time::{Duration, Instant};

mod common;

use mheta_runtime::comm::{CommError, CommExt};
use mheta_runtime::{launch, Args, Error};

fn args(ranks: usize) -> Args {
    Args {
        ranks: Some(ranks),
        rows: Some(ranks as u64),
        ..Args::default()
    }
}

#[test]
fn a_panicking_rank_ends_the_run_and_wakes_blocked_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let measurements = dir.path().join("m.json");
    let a = Args {
        measurements: Some(measurements.clone()),
        ..args(4)
    };
    let start = Instant::now();
    let err = launch(&a, |ctx| {
        let c = ctx.comm();
        let _it = mheta_runtime::hooks::iteration(0);
        match ctx.rank() {
            0 => c.receive_into(2, &mut [0u8; 4])?,
            1 => c.barrier()?,
            2 => {
                std::thread::sleep(Duration::from_millis(50));
                panic!("boom at row 17");
            }
            _ => c.receive_into(1, &mut [0.0f64])?,
        }
        Ok::<_, CommError>(())
    })
    .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "took {:?}",
        start.elapsed()
    );
    match &err {
        Error::RankFailed { rank, message } => {
            assert_eq!(*rank, 2);
            assert!(message.contains("boom at row 17"), "{message}");
        }
        other => panic!("unexpected error {other}"),
    }
    assert!(err.to_string().starts_with("rank 2 failed"), "{err}");
    assert!(!measurements.exists(), "no partial measurements file");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "no temporary file either"
    );
}

#[test]
fn an_error_returned_by_a_rank_is_reported_with_its_sources() {
    let err = launch(&args(3), |ctx| {
        if ctx.rank() == 1 {
            let io = std::io::Error::new(std::io::ErrorKind::NotFound, "input.dat missing");
            return Err(anyhow::Error::new(io).context("loading the matrix"));
        }
        ctx.comm().barrier()?;
        Ok(())
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("rank 1")
            && text.contains("loading the matrix")
            && text.contains("input.dat missing"),
        "{text}"
    );
}

#[test]
fn waiting_on_a_finished_rank_is_an_error_not_a_deadlock() {
    let err = launch(&args(2), |ctx| {
        if ctx.rank() == 1 {
            ctx.comm().receive_into(0, &mut [0u64])?;
        }
        Ok::<_, CommError>(())
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("rank 1") && text.contains("rank 0 finished"),
        "{text}"
    );
}

#[test]
fn bad_arguments_are_clear_errors() {
    let bad_sum = Args {
        rows: Some(10),
        distribution: "3,3,3".parse().unwrap(),
        ..Args::default()
    };
    let err = launch(&bad_sum, |_| Ok::<_, CommError>(()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("sum to 9") && err.contains("expected 10"),
        "{err}"
    );
    let mpi = Args {
        backend: mheta_runtime::Backend::Mpi,
        ..args(2)
    };
    let err = launch(&mpi, |_| Ok::<_, CommError>(()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("mpi"), "{err}");
    let no_rows = Args {
        ranks: Some(2),
        ..Args::default()
    };
    let err = launch(&no_rows, |_| Ok::<_, CommError>(()))
        .unwrap_err()
        .to_string();
    assert!(err.contains("--rows"), "{err}");
    let wrong_len = Args {
        ranks: Some(3),
        rows: Some(4),
        distribution: "2,2".parse().unwrap(),
        ..Args::default()
    };
    let err = launch(&wrong_len, |_| Ok::<_, CommError>(()))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("2 entries") && err.contains("3 nodes"),
        "{err}"
    );
}

#[test]
fn a_problem_larger_than_the_machine_is_refused_before_any_rank_starts() {
    use mheta_runtime::Launch;
    // 10^11 rows of 16 kB: the threads backend would hold them all in this process.
    let huge = Args {
        ranks: Some(2),
        rows: Some(100_000_000_000),
        ..Args::default()
    };
    let err = Launch::new(&huge)
        .bytes_per_row(16_000)
        .run(|_| -> Result<(), CommError> { panic!("no rank may start") })
        .unwrap_err();
    assert!(
        matches!(&err, Error::Args(m) if m.contains("1600000000000000 bytes")
            && m.contains("this process can use")),
        "{err}"
    );
    // On nodes of 1 MiB each the arrays go out of core: what stays in core is 2 MiB.
    let dir = tempfile::tempdir().unwrap();
    let cluster = common::cluster_file(dir.path(), "0s", "1GB/s", &[(2, 1.0, "1MiB")]);
    let settings = Launch::new(&Args {
        cluster: Some(cluster),
        ..huge
    })
    .bytes_per_row(16_000)
    .settings()
    .unwrap();
    assert_eq!(settings.rows, 100_000_000_000);
}
