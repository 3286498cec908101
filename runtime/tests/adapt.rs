//! Run-time adaptation under a load that changes mid-run (`[[node.load]]`): seed 001's
//! rebalancer against the static distribution, on the charged clock (every time below is
//! computed by hand), and out-of-core arrays moving their rows.

use std::path::PathBuf;

use mheta_runtime::adapt::{Access, RebalanceConfig, Rebalancer};
use mheta_runtime::comm::{CommError, CommExt, ReduceOp};
use mheta_runtime::{clock, hooks, launch, Args, ClockMode, DistributionSpec};

const ROWS: usize = 1000;
const COLS: usize = 64;
const ITERATIONS: u64 = 24;
/// Seconds of computation per row at CPU power 1.
const ROW_S: f64 = 1e-5;

/// `fixtures/clusters/dc-load-2.toml`: node 0 at CPU power 0.25, node 1 at 1.0 until
/// iteration 10, then at 0.25 (other work takes three quarters of it).
fn dc_load_2() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/clusters/dc-load-2.toml")
}

/// A row-distributed 1-D stencil (each row averaged with its neighbours'), its rows 200 : 800
/// as the nodes' first powers say, optionally rebalanced. Its computation costs `ROW_S` per
/// row at the node's current CPU power, charged on the clock. Returns every iteration's
/// region time of the slowest rank and the rows each rank ends with.
fn run(rebalance: bool) -> (Vec<f64>, Vec<u64>) {
    let args = Args {
        ranks: Some(2),
        rows: Some(ROWS as u64),
        cluster: Some(dc_load_2()),
        clock: ClockMode::Charged,
        distribution: DistributionSpec::Rows(vec![200, 800]),
        iterations: ITERATIONS as u32,
        ..Args::default()
    };
    let results = launch(&args, |ctx| {
        let comm = ctx.comm();
        let mut balancer =
            Rebalancer::new(ctx.distribution(), RebalanceConfig::new(Access::Stencil));
        let range = balancer.range(ctx.rank()).unwrap();
        let mut grid: Vec<f64> = (range.start * COLS as u64..range.end * COLS as u64)
            .map(|i| (i % 7) as f64)
            .collect();
        let mut per_iteration = Vec::new();
        for it in 0..ITERATIONS {
            let _iteration = hooks::iteration(it);
            let begin = clock::now();
            let rows = grid.len() / COLS;
            let mut next = grid.clone();
            for i in 1..rows.saturating_sub(1) {
                for j in 0..COLS {
                    next[i * COLS + j] =
                        (grid[(i - 1) * COLS + j] + grid[i * COLS + j] + grid[(i + 1) * COLS + j])
                            / 3.0;
                }
            }
            grid = next;
            clock::charge(rows as f64 * ROW_S / clock::cpu_power());
            let region = clock::now() - begin;
            per_iteration.push(comm.all_reduce_value(region, ReduceOp::Max)?);
            if rebalance {
                if let Some(change) = balancer.step(comm, region)? {
                    change.move_rows(comm, &mut grid, COLS)?;
                }
            }
        }
        Ok::<_, CommError>((per_iteration, balancer.layout().counts()))
    })
    .unwrap();
    results.into_iter().next().unwrap()
}

#[test]
fn the_rebalancer_recovers_the_time_a_load_change_costs_a_static_distribution() {
    let (fixed, fixed_rows) = run(false);
    let (balanced, balanced_rows) = run(true);
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
    assert_eq!(fixed_rows, vec![200, 800]);
    // Before the load both nodes take 8 ms (200 rows at 0.25, 800 at 1.0), in both runs.
    for it in 0..10 {
        assert!(
            close(fixed[it], 8e-3) && close(balanced[it], 8e-3),
            "iteration {it}"
        );
    }
    // From iteration 10 node 1 runs at 0.25: 800 rows take 32 ms, for good in the static run.
    assert!(fixed[10..].iter().all(|&t| close(t, 32e-3)), "{fixed:?}");
    // The rebalancer counts iterations 1–3, 4–6, 7–9 (equal powers per row: no move), then
    // 10–12: rows per second 25,000 on both nodes now, so 500 rows each from iteration 13 on:
    // 20 ms an iteration, 5/8 of the static run's.
    assert_eq!(balanced_rows, vec![500, 500]);
    assert!(
        balanced[10..13].iter().all(|&t| close(t, 32e-3)),
        "{balanced:?}"
    );
    assert!(
        balanced[13..].iter().all(|&t| close(t, 20e-3)),
        "{balanced:?}"
    );
}

#[test]
fn out_of_core_arrays_move_their_rows_and_are_placed_again() {
    // Rows of 64 f64 (512 bytes); 4 KiB of memory holds 8 rows: 10 rows per rank at first
    // are out of core, and after the move to 6, 9 and 15 rows rank 0's are in core.
    let dir = tempfile::tempdir().unwrap();
    let cluster = dir.path().join("cluster.toml");
    std::fs::write(
        &cluster,
        "[network]\nlatency = \"0s\"\nbandwidth = \"1GB/s\"\n\n[[node]]\ncount = 3\ncpu = 1.0\n\
         memory = \"4KiB\"\ndisk_read = \"1GB/s\"\ndisk_write = \"1GB/s\"\ndisk_latency = \"0s\"\n",
    )
    .unwrap();
    let args = Args {
        ranks: Some(3),
        rows: Some(30),
        cluster: Some(cluster),
        clock: ClockMode::Charged,
        ..Args::default()
    };
    const ROW: usize = 64;
    let value = |row: u64, j: usize| (row * 1000 + j as u64) as f64;
    let results = launch(&args, |ctx| {
        let config = RebalanceConfig {
            window: 1,
            settle: 0,
            ..RebalanceConfig::new(Access::Stencil)
        };
        let mut balancer = Rebalancer::new(ctx.distribution(), config);
        let range = balancer.range(ctx.rank()).unwrap();
        let mut a = ctx.array::<f64>("a", range.end - range.start, ROW)?;
        let before = a.is_out_of_core();
        for k in 0..a.num_blocks() {
            let rows = a.block_range(k);
            let block: Vec<f64> = (range.start + rows.start..range.start + rows.end)
                .flat_map(|r| (0..ROW).map(move |j| value(r, j)))
                .collect();
            a.write_block(k, &block)?;
        }
        let power = [0.2, 0.3, 0.5][ctx.rank()];
        let change = balancer.step(ctx.comm(), 10.0 / power)?.expect("rows move");
        change.move_array(ctx.comm(), &mut a)?;
        let mut rows = Vec::new();
        a.read_rows(0..a.rows(), &mut rows)?;
        let now = balancer.range(ctx.rank()).unwrap();
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>((before, a.is_out_of_core(), now, rows))
    })
    .unwrap();
    let placed: Vec<(bool, bool)> = results.iter().map(|r| (r.0, r.1)).collect();
    assert_eq!(placed, vec![(true, false), (true, true), (true, true)]);
    for (_, _, range, rows) in results {
        let want: Vec<f64> = range
            .clone()
            .flat_map(|r| (0..ROW).map(move |j| value(r, j)))
            .collect();
        assert_eq!(rows, want, "rows {range:?}");
    }
}
