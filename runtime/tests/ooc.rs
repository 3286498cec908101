//! Out-of-core arrays (DESIGN §5, seed §5.1, §5.2.2): round trips, placement from the memory
//! budget, prefetch (real and instrumented), crash safety, errors naming files, disk emulation.

use std::path::Path;
use std::time::{Duration, Instant};

use mheta_runtime::cluster::DiskModel;
use mheta_runtime::ooc::{
    plan, ArrayDemand, ArraySpec, IoEstimate, NodeStore, OocArray, OocError, Part, Placement,
    StoreConfig, WriteFault,
};

fn store(dir: &Path, memory_bytes: u64, disk: DiskModel, instrumented: bool) -> NodeStore {
    NodeStore::open(StoreConfig {
        dir: dir.to_path_buf(),
        memory_bytes,
        disk,
        instrumented,
        force_out_of_core: instrumented,
    })
    .unwrap()
}

fn plain(dir: &Path) -> NodeStore {
    store(dir, u64::MAX, DiskModel::unthrottled(), false)
}

fn slow_disk(latency_s: f64) -> DiskModel {
    DiskModel {
        latency_s,
        read_bps: f64::INFINITY,
        write_bps: f64::INFINITY,
    }
}

fn fixed<T: mheta_runtime::ooc::Element>(
    store: &NodeStore,
    name: &str,
    rows: u64,
    row_len: usize,
    p: Placement,
) -> OocArray<T> {
    OocArray::new(store, ArraySpec::new(name, rows, row_len).with_placement(p)).unwrap()
}

/// Row `r` of the test pattern: element `c` is `r * 1000 + c`.
fn pattern(range: std::ops::Range<u64>, row_len: usize) -> Vec<f64> {
    range
        .flat_map(|r| (0..row_len).map(move |c| (r * 1000 + c as u64) as f64))
        .collect()
}

fn write_all(array: &mut OocArray<f64>) {
    for i in 0..array.num_blocks() {
        let values = pattern(array.block_range(i), array.row_len());
        array.write_block(i, &values).unwrap();
    }
}

fn check_all(array: &mut OocArray<f64>) {
    for i in 0..array.num_blocks() {
        let expected = pattern(array.block_range(i), array.row_len());
        assert_eq!(array.read_block(i).unwrap(), &expected[..], "block {i}");
        let mut out = vec![0.0; array.block_len(i)];
        array.read_block_into(i, &mut out).unwrap();
        assert_eq!(out, expected);
    }
}

#[test]
fn out_of_core_round_trip_for_several_block_sizes_and_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    for icla_rows in [1, 3, 4, 9, 10] {
        let sub = dir.path().join(format!("icla{icla_rows}"));
        let placement = Placement::OutOfCore { icla_rows };
        {
            let s = plain(&sub);
            let mut a = fixed::<f64>(&s, "A", 10, 7, placement);
            assert_eq!(a.num_blocks(), 10usize.div_ceil(icla_rows as usize));
            let last = a.num_blocks() - 1;
            assert_eq!(
                a.block_range(last).end,
                10,
                "the last block ends at the last row"
            );
            assert_eq!(
                a.block_len(last),
                (10 - last * icla_rows as usize).min(icla_rows as usize) * 7
            );
            write_all(&mut a);
            check_all(&mut a);
            assert_eq!(a.stats().writes, a.num_blocks() as u64);
        }
        // A new store over the same directory sees the same data.
        let s = plain(&sub);
        let mut a = fixed::<f64>(&s, "A", 10, 7, placement);
        check_all(&mut a);
    }
}

#[test]
fn in_core_round_trip_does_no_io() {
    let dir = tempfile::tempdir().unwrap();
    let s = plain(dir.path());
    let mut a = fixed::<f64>(&s, "A", 5, 3, Placement::InCore);
    assert_eq!(a.num_blocks(), 1);
    assert_eq!(a.read_block(0).unwrap(), &[0.0; 15][..]);
    write_all(&mut a);
    check_all(&mut a);
    assert_eq!(a.stats(), Default::default());
    assert!(!a.block_path(0).exists());
}

#[test]
fn other_element_types_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let s = plain(dir.path());
    let mut a = fixed::<i32>(&s, "ints", 3, 2, Placement::OutOfCore { icla_rows: 2 });
    a.write_block(1, &[-7, i32::MAX]).unwrap();
    assert_eq!(a.read_block(1).unwrap(), &[-7, i32::MAX]);
    assert_eq!(
        a.read_block(0).unwrap(),
        &[0; 4],
        "a block never written reads as zeros"
    );
    let mut b = fixed::<u8>(&s, "bytes", 1, 3, Placement::OutOfCore { icla_rows: 1 });
    b.write_block(0, &[1, 2, 255]).unwrap();
    assert_eq!(b.read_block(0).unwrap(), &[1, 2, 255]);
}

#[test]
fn a_written_block_whose_file_disappears_is_an_error_not_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let s = plain(dir.path());
    let mut a = fixed::<f64>(&s, "A", 4, 2, Placement::OutOfCore { icla_rows: 2 });
    a.write_block(0, &[1.0, 2.0, 3.0, 4.0]).unwrap();
    a.write_block(1, &[5.0, 6.0, 7.0, 8.0]).unwrap();
    std::fs::remove_file(a.block_path(1)).unwrap();
    let err = a.read_block(1).unwrap_err().to_string();
    assert!(
        err.contains("1.blk") && err.contains("disappeared"),
        "{err}"
    );
    // Through a prefetch too.
    std::fs::remove_file(a.block_path(0)).unwrap();
    let err = match a.prefetch_block(0) {
        Err(e) => e,
        Ok(()) => a.wait().unwrap_err(),
    }
    .to_string();
    assert!(
        err.contains("0.blk") && err.contains("disappeared"),
        "{err}"
    );
    // Blocks kept from before a reopen count as written.
    let mut b = fixed::<f64>(&s, "B", 4, 2, Placement::OutOfCore { icla_rows: 2 });
    b.write_block(0, &[1.0; 4]).unwrap();
    drop(b);
    let mut b = fixed::<f64>(
        &plain(dir.path()),
        "B",
        4,
        2,
        Placement::OutOfCore { icla_rows: 2 },
    );
    std::fs::remove_file(b.block_path(0)).unwrap();
    assert!(b.read_block(0).is_err());
}

#[test]
fn zero_rows_and_bad_arguments_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let s = plain(dir.path());
    let mut empty = OocArray::<f64>::new(&s, ArraySpec::new("empty", 0, 4)).unwrap();
    assert_eq!(empty.num_blocks(), 0);
    assert!(matches!(
        empty.read_block(0),
        Err(OocError::BlockOutOfRange { blocks: 0, .. })
    ));
    assert!(matches!(
        empty.prefetch_block(0),
        Err(OocError::BlockOutOfRange { .. })
    ));

    let mut a = fixed::<f64>(&s, "A", 4, 2, Placement::OutOfCore { icla_rows: 3 });
    let err = a.write_block(1, &[1.0; 6]).unwrap_err();
    assert!(
        matches!(
            err,
            OocError::WrongLength {
                expected: 2,
                got: 6,
                ..
            }
        ),
        "{err}"
    );
    assert!(matches!(a.wait(), Err(OocError::NoPrefetch { .. })));
    a.prefetch_block(0).unwrap();
    let err = a.prefetch_block(1).unwrap_err();
    assert!(
        matches!(
            err,
            OocError::PrefetchPending {
                block: 1,
                pending: 0,
                ..
            }
        ),
        "{err}"
    );
    a.wait().unwrap();

    let err = OocArray::<f64>::new(&s, ArraySpec::new("A", 1, 1))
        .err()
        .unwrap();
    assert!(matches!(err, OocError::DuplicateArray { .. }), "{err}");
}

#[test]
fn an_array_larger_than_the_machine_is_an_error_before_it_is_allocated() {
    let dir = tempfile::tempdir().unwrap();
    // 10^11 rows of 1000 f64 in core: far beyond any machine, and the product of rows and
    // row bytes overflows nothing on the way (it is computed in u128).
    let err = OocArray::<f64>::new(
        &plain(dir.path()),
        ArraySpec::new("huge", 100_000_000_000, 1000),
    )
    .err()
    .unwrap();
    assert!(
        matches!(
            err,
            OocError::TooLarge {
                in_core: 800_000_000_000_000,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("array `huge`"), "{err}");
    // The same array on a node with 1 MiB of memory goes out of core: only the ICLA is held.
    let small = store(dir.path(), 1 << 20, DiskModel::unthrottled(), false);
    let a = OocArray::<f64>::new(&small, ArraySpec::new("huge", 100_000_000_000, 1000)).unwrap();
    assert!(a.is_out_of_core());
}

#[test]
fn placement_follows_the_shared_budget_policy() {
    let dir = tempfile::tempdir().unwrap();
    // 10 rows of 4 f64 (32 B/row, 320 B) and 10 rows of 8 f64 (64 B/row, 640 B); 700 B.
    let s = store(dir.path(), 700, DiskModel::unthrottled(), false);
    let small = OocArray::<f64>::new(&s, ArraySpec::new("small", 10, 4)).unwrap();
    let large = OocArray::<f64>::new(&s, ArraySpec::new("large", 10, 8)).unwrap();
    let expected = plan(
        700,
        &[
            ArrayDemand {
                rows: 10,
                row_bytes: 32,
                uses: 1,
                io: IoEstimate::default(),
            },
            ArrayDemand {
                rows: 10,
                row_bytes: 64,
                uses: 1,
                io: IoEstimate::default(),
            },
        ],
    );
    // By hand: small in core (320 + one 64 B row <= 700), large gets 380 B = 5 rows.
    assert_eq!(
        expected,
        vec![Placement::InCore, Placement::OutOfCore { icla_rows: 5 }]
    );
    assert_eq!(large.placement(), expected[1]);
    assert_eq!(small.placement(), expected[0]);
    assert_eq!(large.num_blocks(), 2);

    // Created after the plan was made: placed in what is left (60 B = 1 row of 32 B).
    let late = OocArray::<f64>::new(&s, ArraySpec::new("late", 10, 4)).unwrap();
    assert_eq!(late.placement(), Placement::OutOfCore { icla_rows: 1 });
}

#[test]
fn instrumented_runs_force_in_core_arrays_through_two_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), u64::MAX, DiskModel::unthrottled(), true);
    let mut a = OocArray::<f64>::new(&s, ArraySpec::new("A", 9, 2)).unwrap();
    assert_eq!(a.placement(), Placement::OutOfCore { icla_rows: 5 });
    assert_eq!(a.num_blocks(), 2);
    write_all(&mut a);
    check_all(&mut a);
    assert_eq!(a.stats().writes, 2);
    // `check_all` reads each block twice (read_block and read_block_into).
    assert_eq!(a.stats().reads, 4);
}

#[test]
fn keep_in_core_runs_leave_in_core_arrays_in_core() {
    let dir = tempfile::tempdir().unwrap();
    let s = NodeStore::open(StoreConfig {
        dir: dir.path().to_path_buf(),
        memory_bytes: 200,
        disk: DiskModel::unthrottled(),
        instrumented: true,
        force_out_of_core: false,
    })
    .unwrap();
    // 9 rows of 16 B fit the 200 B budget: in core, no I/O. 30 rows do not: still out of core.
    let mut a = OocArray::<f64>::new(&s, ArraySpec::new("A", 9, 2)).unwrap();
    assert_eq!(a.placement(), Placement::InCore);
    write_all(&mut a);
    check_all(&mut a);
    assert_eq!((a.stats().writes, a.stats().reads), (0, 0));
    let b = OocArray::<f64>::new(&s, ArraySpec::new("B", 30, 2)).unwrap();
    assert!(b.is_out_of_core());
}

/// The unrolled prefetch loop of seed Fig. 5.7, with `compute` between prefetch and wait.
/// Returns the sum of all elements read.
fn prefetch_loop(a: &mut OocArray<f64>, compute: impl Fn()) -> f64 {
    let mut sum: f64 = a.read_block(0).unwrap().iter().sum();
    for i in 1..a.num_blocks() {
        a.prefetch_block(i).unwrap();
        compute();
        sum += a.wait().unwrap().iter().sum::<f64>();
    }
    sum
}

fn sync_loop(a: &mut OocArray<f64>, compute: impl Fn()) -> f64 {
    let mut sum = 0.0;
    for i in 0..a.num_blocks() {
        sum += a.read_block(i).unwrap().iter().sum::<f64>();
        compute();
    }
    sum
}

#[test]
fn prefetch_returns_the_right_blocks() {
    let dir = tempfile::tempdir().unwrap();
    for instrumented in [false, true] {
        let s = store(
            &dir.path().join(format!("{instrumented}")),
            u64::MAX,
            DiskModel::unthrottled(),
            instrumented,
        );
        let mut a = fixed::<f64>(&s, "A", 11, 3, Placement::OutOfCore { icla_rows: 2 });
        write_all(&mut a);
        let expected: f64 = pattern(0..11, 3).iter().sum();
        assert_eq!(prefetch_loop(&mut a, || {}), expected);
        for i in [5, 0, 3] {
            a.prefetch_block(i).unwrap();
            let want = pattern(a.block_range(i), 3);
            assert_eq!(a.wait().unwrap(), &want[..]);
        }
        assert_eq!(a.stats().prefetches, 5 + 3);
    }
}

#[test]
fn prefetch_overlaps_computation_with_the_read() {
    let latency = 0.02;
    let compute = || std::thread::sleep(Duration::from_secs_f64(latency));
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), u64::MAX, slow_disk(latency), false);
    let mut a = fixed::<f64>(&s, "A", 6, 4, Placement::OutOfCore { icla_rows: 1 });
    write_all(&mut a);

    let before = a.stats().charged_s;
    let start = Instant::now();
    let sync_sum = sync_loop(&mut a, compute);
    let sync_s = start.elapsed().as_secs_f64();
    let sync_charged = a.stats().charged_s - before;

    let before = a.stats().charged_s;
    let start = Instant::now();
    let prefetch_sum = prefetch_loop(&mut a, compute);
    let prefetch_s = start.elapsed().as_secs_f64();
    let prefetch_charged = a.stats().charged_s - before;

    assert_eq!(sync_sum, prefetch_sum);
    // Synchronous: 6 × (read + compute) ≈ 12 latencies; prefetching hides 5 of the 6 reads
    // behind computation: ≈ 7 latencies.
    let ratio = prefetch_s / sync_s;
    assert!(
        ratio < 0.8,
        "prefetch {prefetch_s:.3}s vs sync {sync_s:.3}s (ratio {ratio:.2})"
    );
    // Only the first read (synchronous) still waits for the emulated disk.
    assert!(
        prefetch_charged < 0.5 * sync_charged,
        "charged {prefetch_charged} vs {sync_charged}"
    );
}

#[test]
fn instrumented_prefetch_is_a_synchronous_read_and_wait_a_no_op() {
    let latency = 0.02;
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), u64::MAX, slow_disk(latency), true);
    let mut a = fixed::<f64>(&s, "A", 2, 4, Placement::OutOfCore { icla_rows: 1 });
    write_all(&mut a);
    let start = Instant::now();
    a.prefetch_block(1).unwrap();
    let issue_s = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let block = a.wait().unwrap().to_vec();
    let wait_s = start.elapsed().as_secs_f64();
    assert_eq!(block, pattern(1..2, 4));
    // The issue carried the whole emulated read; the wait had nothing left to do.
    assert!(issue_s >= 0.95 * latency, "issue took {issue_s}");
    assert!(wait_s < 0.25 * latency, "wait took {wait_s}");
}

#[test]
fn failed_write_midway_leaves_the_old_block_intact() {
    let dir = tempfile::tempdir().unwrap();
    let old = pattern(0..2, 5);
    {
        let s = plain(dir.path());
        let mut a = fixed::<f64>(&s, "A", 4, 5, Placement::OutOfCore { icla_rows: 2 });
        a.write_block(0, &old).unwrap();
        let file_len = std::fs::metadata(a.block_path(0)).unwrap().len() as usize;
        a.inject_write_fault(WriteFault::FailAfter(file_len / 2));
        let err = a.write_block(0, &[9.0; 10]).unwrap_err();
        assert!(matches!(err, OocError::InjectedFault { .. }), "{err}");
        let temp = dir.path().join("A").join("0.blk.tmp");
        assert_eq!(
            std::fs::metadata(&temp).unwrap().len() as usize,
            file_len / 2,
            "half a block was written"
        );
        assert_eq!(a.read_block(0).unwrap(), &old[..]);
    }
    let s = plain(dir.path());
    let mut a = fixed::<f64>(&s, "A", 4, 5, Placement::OutOfCore { icla_rows: 2 });
    assert_eq!(a.read_block(0).unwrap(), &old[..]);
    assert!(
        !dir.path().join("A").join("0.blk.tmp").exists(),
        "the leftover is cleaned on reopen"
    );
}

const CRASH_ENV: &str = "MHETA_OOC_CRASH_DIR";

/// Child half of `process_killed_midway_leaves_the_old_block_intact`: does nothing unless the
/// parent set the environment variable.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CRASH_ENV) else {
        return;
    };
    let s = plain(Path::new(&dir));
    let mut a = fixed::<f64>(&s, "A", 4, 5, Placement::OutOfCore { icla_rows: 2 });
    a.inject_write_fault(WriteFault::AbortAfter(60));
    let _ = a.write_block(0, &[9.0; 10]);
    unreachable!("the write aborts the process");
}

#[test]
fn process_killed_midway_leaves_the_old_block_intact() {
    let dir = tempfile::tempdir().unwrap();
    let old = pattern(0..2, 5);
    {
        let s = plain(dir.path());
        let mut a = fixed::<f64>(&s, "A", 4, 5, Placement::OutOfCore { icla_rows: 2 });
        a.write_block(0, &old).unwrap();
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--test-threads=1"])
        .env(CRASH_ENV, dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child should have aborted");
    assert!(
        dir.path().join("A").join("0.blk.tmp").exists(),
        "the child died mid-write"
    );
    let s = plain(dir.path());
    let mut a = fixed::<f64>(&s, "A", 4, 5, Placement::OutOfCore { icla_rows: 2 });
    assert_eq!(a.read_block(0).unwrap(), &old[..]);
}

#[test]
fn io_errors_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    // A store directory under a regular file cannot be created.
    let file = dir.path().join("plain-file");
    std::fs::write(&file, b"x").unwrap();
    let bad = file.join("rank0");
    let err = NodeStore::open(StoreConfig {
        dir: bad.clone(),
        memory_bytes: 1,
        disk: DiskModel::unthrottled(),
        instrumented: false,
        force_out_of_core: false,
    })
    .unwrap_err();
    assert!(
        err.to_string().contains(&bad.display().to_string()),
        "{err}"
    );

    // A write whose temporary file cannot be created (a directory is in the way).
    let s = plain(&dir.path().join("store"));
    let mut a = fixed::<f64>(&s, "A", 2, 1, Placement::OutOfCore { icla_rows: 1 });
    let temp = dir.path().join("store/A/1.blk.tmp");
    std::fs::create_dir(&temp).unwrap();
    let err = a.write_block(1, &[1.0]).unwrap_err();
    assert!(matches!(err, OocError::Io { .. }), "{err}");
    assert!(
        err.to_string().contains(&temp.display().to_string()),
        "{err}"
    );

    // A truncated block is reported as corrupt, with its file.
    a.write_block(0, &[1.0]).unwrap();
    let path = a.block_path(0);
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
    let err = a.read_block(0).unwrap_err();
    assert!(matches!(err, OocError::Corrupt { .. }), "{err}");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
    // The same error reaches the caller through a background prefetch.
    a.prefetch_block(0).unwrap();
    let err = a.wait().unwrap_err();
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[test]
fn disk_emulation_charges_latency_plus_transfer() {
    // 400 ms per call and 1 MB/s: a block of 125 f64 (1000 B) costs 400 ms + 1 ms = 401 ms to
    // read and 402 ms to write — far above what the real write + fsync takes even on a loaded
    // machine (with 40 ms, an fsync behind heavy disk traffic once took longer), so the
    // emulation always has a shortfall to charge.
    let disk = DiskModel {
        latency_s: 400e-3,
        read_bps: 1e6,
        write_bps: 0.5e6,
    };
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), u64::MAX, disk, false);
    let mut a = fixed::<f64>(&s, "A", 2, 125, Placement::OutOfCore { icla_rows: 1 });
    for (op, cost) in [("write", 402e-3), ("read", 401e-3)] {
        let before = a.stats().charged_s;
        let start = Instant::now();
        match op {
            "write" => a.write_block(0, &[1.0; 125]).unwrap(),
            _ => a.read_block(0).map(|_| ()).unwrap(),
        }
        let took = start.elapsed().as_secs_f64();
        let charged = a.stats().charged_s - before;
        // The call lasts at least the emulated cost; the charge is what the real I/O fell short.
        assert!(took >= cost, "{op} took {took}s, emulated cost {cost}s");
        assert!(
            charged > 0.0 && charged <= cost,
            "{op} charged {charged}s of {cost}s"
        );
        assert!(took - charged >= 0.0);
    }

    let s = plain(&dir.path().join("fast"));
    let mut fast = fixed::<f64>(&s, "A", 2, 125, Placement::OutOfCore { icla_rows: 1 });
    fast.write_block(0, &[1.0; 125]).unwrap();
    fast.read_block(0).unwrap();
    assert_eq!(
        fast.stats().charged_s,
        0.0,
        "an unthrottled disk is never charged"
    );
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// Whatever the shape and ICLA size, every block reads back what was written, and the
    /// blocks tile the rows exactly.
    #[test]
    fn any_shape_round_trips(rows in 0u64..12, row_len in 0usize..5, icla in 1u64..14, seed in 0u64..1000) {
        let dir = tempfile::tempdir().unwrap();
        let s = plain(dir.path());
        let mut a = fixed::<i64>(&s, "A", rows, row_len, Placement::OutOfCore { icla_rows: icla });
        let mut next_row = 0;
        for i in 0..a.num_blocks() {
            let range = a.block_range(i);
            proptest::prop_assert_eq!(range.start, next_row);
            next_row = range.end;
            let values: Vec<i64> = (0..a.block_len(i) as i64).map(|v| v * 7 + seed as i64).collect();
            a.write_block(i, &values).unwrap();
        }
        proptest::prop_assert_eq!(next_row, rows);
        for i in 0..a.num_blocks() {
            let values: Vec<i64> = (0..a.block_len(i) as i64).map(|v| v * 7 + seed as i64).collect();
            proptest::prop_assert_eq!(a.read_block(i).unwrap(), &values[..]);
        }
    }
}

#[test]
fn reshaping_moves_an_array_in_and_out_of_core_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    // Rows of 8 f64 (64 bytes); 640 bytes hold 10 rows.
    let store = store(dir.path(), 640, DiskModel::unthrottled(), false);
    let mut a = OocArray::<f64>::new(&store, ArraySpec::new("a", 8, 8)).unwrap();
    assert!(!a.is_out_of_core());
    write_all(&mut a);
    // Grow to 24 rows: rows 2..8 of its own, then rows 8..26 of the pattern given (as if
    // from a neighbour): out of core now, in blocks of at most 10 rows.
    let given = pattern(8..26, 8);
    a.reshape(&[Part::Own(2..8), Part::Given(&given)]).unwrap();
    assert_eq!(a.rows(), 24);
    assert!(a.is_out_of_core());
    assert!(a.num_blocks() >= 3, "{} blocks", a.num_blocks());
    let mut all = Vec::new();
    a.read_rows(0..24, &mut all).unwrap();
    assert_eq!(all, pattern(2..26, 8));
    // Shrink to 5 rows from the middle of its own (blocks straddled): in core again, and the
    // old block files and the staging directory are gone.
    a.reshape(&[Part::Own(9..14)]).unwrap();
    assert!(!a.is_out_of_core());
    let mut all = Vec::new();
    a.read_rows(0..5, &mut all).unwrap();
    assert_eq!(all, pattern(11..16, 8));
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .flat_map(|e| std::fs::read_dir(e.path()).into_iter().flatten().flatten())
        .map(|e| e.path())
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        entries
            .iter()
            .all(|n| !n.to_string_lossy().ends_with(".reshape")),
        "{entries:?}"
    );
}

#[test]
fn reshaping_with_parts_that_do_not_fit_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = plain(dir.path());
    let mut a = OocArray::<f64>::new(&store, ArraySpec::new("a", 4, 3)).unwrap();
    let err = a.reshape(&[Part::Own(2..6)]).unwrap_err().to_string();
    assert!(
        err.contains("own rows 2..6 are outside its 4 rows"),
        "{err}"
    );
    let err = a
        .reshape(&[Part::Given(&[1.0; 4])])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("4 given elements are not whole rows of 3"),
        "{err}"
    );
    let err = a.read_rows(3..9, &mut Vec::new()).unwrap_err().to_string();
    assert!(err.contains("rows 3..9 are outside its 4 rows"), "{err}");
    assert_eq!(a.rows(), 4, "an error leaves the array as it was");
}

#[test]
fn a_reshape_that_fails_leaves_the_array_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    // Rows of 8 f64; 640 bytes hold 10 rows: 8 rows in core, 24 out of core.
    let store = store(dir.path(), 640, DiskModel::unthrottled(), false);
    let mut a = OocArray::<f64>::new(&store, ArraySpec::new("a", 8, 8)).unwrap();
    write_all(&mut a);
    let given = pattern(8..24, 8);
    a.inject_write_fault(WriteFault::FailAfter(10));
    let err = a
        .reshape(&[Part::Own(0..8), Part::Given(&given)])
        .unwrap_err();
    assert!(matches!(err, OocError::InjectedFault { .. }), "{err}");
    assert_eq!(a.rows(), 8);
    assert!(!a.is_out_of_core());
    check_all(&mut a);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".reshape")), "{names:?}");
    // The ledger is as it was: the same reshape without the fault succeeds.
    a.reshape(&[Part::Own(0..8), Part::Given(&given)]).unwrap();
    let mut all = Vec::new();
    a.read_rows(0..24, &mut all).unwrap();
    assert_eq!(all, pattern(0..24, 8));
    assert!(a.is_out_of_core());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
    /// Whatever the parts and the memory, a reshaped array holds exactly the rows the parts
    /// name, in their order, in core or out of core.
    #[test]
    fn a_reshaped_array_holds_exactly_its_parts(
        rows in 0u64..40,
        memory_rows in 1u64..30,
        cuts in proptest::collection::vec((0u64..40, 0u64..40, 0u64..12), 0..5),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), memory_rows * 64, DiskModel::unthrottled(), false);
        let mut a = OocArray::<f64>::new(&store, ArraySpec::new("a", rows, 8)).unwrap();
        write_all(&mut a);
        // Parts: own ranges (clamped into the old rows) and given rows from 1000 on.
        let mut given = Vec::new();
        let mut want = Vec::new();
        let mut next_given = 1000;
        for &(x, y, g) in &cuts {
            let (lo, hi) = (x.min(y).min(rows), x.max(y).min(rows));
            want.extend(pattern(lo..hi, 8));
            given.push((lo..hi, pattern(next_given..next_given + g, 8)));
            want.extend(pattern(next_given..next_given + g, 8));
            next_given += g;
        }
        let parts: Vec<Part<'_, f64>> = given
            .iter()
            .flat_map(|(own, g)| [Part::Own(own.clone()), Part::Given(g)])
            .collect();
        a.reshape(&parts).unwrap();
        let n = (want.len() / 8) as u64;
        proptest::prop_assert_eq!(a.rows(), n);
        let mut all = Vec::new();
        a.read_rows(0..n, &mut all).unwrap();
        proptest::prop_assert_eq!(all, want);
        proptest::prop_assert_eq!(a.is_out_of_core(), n * 64 > memory_rows * 64);
    }
}

#[test]
fn an_in_core_array_pages_once_the_load_takes_its_memory() {
    use mheta_runtime::clock::{self, ClockMode};
    use mheta_runtime::format::{LoadAt, LoadStep};
    // A node of 1 MiB holding two in-core arrays of 256 KiB (64 rows of 512 f64). From
    // iteration 1 a load takes 768 KiB: 256 KiB are left for 512 KiB, so half of every access
    // to in-core data faults in. A page read costs 1 ms of latency and 1 ms of transfer
    // (4,096 bytes at 4.096 MB/s); a dirty page goes out at 8.192 MB/s, 0.5 ms.
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskModel {
        latency_s: 1e-3,
        read_bps: 4.096e6,
        write_bps: 8.192e6,
    };
    let s = store(dir.path(), 1 << 20, disk, false);
    let mut a = OocArray::<f64>::new(&s, ArraySpec::new("a", 64, 512)).unwrap();
    let mut b = OocArray::<f64>::new(&s, ArraySpec::new("b", 64, 512)).unwrap();
    assert!(!a.is_out_of_core() && !b.is_out_of_core());
    clock::install(ClockMode::Charged, 1.0);
    clock::install_load(&[LoadStep {
        at: LoadAt::Iteration(1),
        cpu_share: None,
        memory_bytes: Some(768 << 10),
    }]);
    let values = vec![1.0; 64 * 512];
    clock::iteration_begins(0);
    a.read_block(0).unwrap();
    b.write_block(0, &values).unwrap();
    assert_eq!(clock::now(), 0.0, "nothing is taken before iteration 1");

    clock::iteration_begins(1);
    // 128 KiB of each 256 KiB access fault in: 32 pages of 2 ms, and the write's 32 dirty
    // pages go out at 0.5 ms each.
    a.read_block(0).unwrap();
    let read = clock::now();
    b.write_block(0, &values).unwrap();
    let write = clock::now() - read;
    clock::uninstall();
    assert!((read - 0.064).abs() < 1e-9, "read charged {read} s");
    assert!((write - 0.080).abs() < 1e-9, "write charged {write} s");
    assert_eq!((a.stats().pages_faulted, b.stats().pages_faulted), (32, 32));
    assert_eq!(
        a.stats().reads + a.stats().writes,
        0,
        "paging is not block I/O"
    );
}

#[test]
fn a_malleable_array_gives_up_the_panels_the_load_takes_and_pages_nothing() {
    use mheta_runtime::clock::{self, ClockMode};
    use mheta_runtime::format::{LoadAt, LoadStep};
    // A node of 1 MiB and an array of 200 rows of 512 f64 (800 KiB): in core by the plan, 20
    // panels of 10 rows (40 KiB) under --mmlib. From iteration 1 the load takes 824 KiB, which
    // leaves room for 5 panels. A 40 KiB transfer costs 1 ms plus 1 ms of latency.
    let dir = tempfile::tempdir().unwrap();
    let disk = DiskModel {
        latency_s: 1e-3,
        read_bps: 40.96e6,
        write_bps: 40.96e6,
    };
    let s = store(dir.path(), 1 << 20, disk, false);
    s.set_malleable();
    let mut a = OocArray::<f64>::new(&s, ArraySpec::new("a", 200, 512)).unwrap();
    assert_eq!((a.num_blocks(), a.block_rows()), (20, 10));
    clock::install(ClockMode::Charged, 1.0);
    clock::install_load(&[LoadStep {
        at: LoadAt::Iteration(1),
        cpu_share: None,
        memory_bytes: Some(824 << 10),
    }]);
    // One request per panel and sweep, as a solver makes.
    let sweep = |a: &mut OocArray<f64>| {
        for i in 0..a.num_blocks() {
            let expected = pattern(a.block_range(i), a.row_len());
            assert_eq!(a.read_block(i).unwrap(), &expected[..], "panel {i}");
        }
    };
    clock::iteration_begins(0);
    write_all(&mut a);
    sweep(&mut a);
    assert_eq!(clock::now(), 0.0, "all 20 panels fit: no I/O");
    assert_eq!((a.stats().reads, a.stats().writes), (0, 0));

    clock::iteration_begins(1);
    // The first request finds 15 cached panels without room: they go at once, written back
    // (dirty), the most recently used first (19 down to 5); then panels 0–4 are hits and 5–19
    // stream through the fifth slot, evicting the one before (panel 4 dirty: one more write).
    // No probe yet: the last 20 requests include the first, made at the shortage itself.
    sweep(&mut a);
    assert_eq!((a.stats().writes, a.stats().reads), (16, 15));
    assert_eq!(
        a.stats().pages_faulted,
        0,
        "nothing cached beyond the room left"
    );
    let first = clock::now();
    assert!(
        (first - 31.0 * 2e-3).abs() < 1e-9,
        "31 transfers of 2 ms: {first}"
    );

    // Later sweeps probe for a sixth panel once a sweep (R_pen = 1: the trough is the room),
    // find it short and give it back before any access pages.
    for _ in 0..3 {
        sweep(&mut a);
    }
    clock::uninstall();
    let stats = a.stats();
    assert_eq!(stats.pages_faulted, 0);
    // Only dirty panels are written back: beyond the first sweep's 16, at most panels 0–3,
    // cached dirty since iteration 0, once each when a probe's shortage evicts them.
    assert!((16..=20).contains(&stats.writes), "{} writes", stats.writes);
    let reads = stats.reads - 15;
    assert!(
        (45..=51).contains(&reads),
        "15 to 17 reads a sweep: {reads} in 3"
    );
}

#[test]
fn a_malleable_array_cannot_be_reshaped() {
    let dir = tempfile::tempdir().unwrap();
    let s = plain(dir.path());
    s.set_malleable();
    let mut a = OocArray::<f64>::new(&s, ArraySpec::new("a", 40, 2)).unwrap();
    let err = a.reshape(&[Part::Own(0..20)]).unwrap_err();
    assert!(err.to_string().contains("--mmlib"), "{err}");
}

#[test]
fn a_malleable_array_on_an_unemulated_node_follows_the_machines_free_memory() {
    // No cluster: the node's memory is the machine's, and what it has available now
    // (`MemAvailable`) holds a 1.6 MB array many times over: every panel stays cached.
    let Some(free) = mheta_runtime::cluster::machine_available_memory() else {
        return; // No /proc/meminfo here.
    };
    assert!(
        free > 64 << 20,
        "the test needs 64 MiB available, has {free} bytes"
    );
    let dir = tempfile::tempdir().unwrap();
    let s = plain(dir.path());
    s.set_malleable();
    let mut a = OocArray::<f64>::new(&s, ArraySpec::new("a", 400, 512)).unwrap();
    assert_eq!(a.num_blocks(), 20);
    write_all(&mut a);
    check_all(&mut a);
    check_all(&mut a);
    assert_eq!((a.stats().reads, a.stats().writes), (0, 0));
}
