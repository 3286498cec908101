//! Behaviour of `#[mheta::solver]`: run instrumented solvers on the threads backend with the
//! recording runtime and check what the guards recorded — order, nesting, ids and trip counts —
//! never the generated tokens.

use mheta::hooks::RecordKind;
use mheta::{testing, Args, ClockMode, CommError, CommExt, Context, DistributionSpec, ReduceOp};
use mheta_macros_tests::{heat, heat_plain};

fn args(ranks: usize, rows: u64, iterations: u32) -> Args {
    Args {
        ranks: Some(ranks),
        rows: Some(rows),
        iterations,
        distribution: DistributionSpec::Block,
        clock: ClockMode::Charged,
        ..Args::default()
    }
}

/// The outline one trip of `heat`'s main loop records on `rank` of `size`, written from the
/// structure `mheta analyze macros/ui` prints: group 0 (the sweeps) holds section 0 — stage 0
/// (the stencil loop), stage 1 (the swap) and event 0 (the halo exchange, upward pair first) —
/// and section 1 holds stage 0 (`let mut local`), stage 1 (the sum) and event 1 (all-reduce).
fn heat_iteration(index: u32, rank: usize, size: usize, sweeps: usize) -> String {
    let mut out = format!("iteration {index}\n");
    for _ in 0..sweeps {
        out.push_str("  group 0\n    section 0\n      stage 0.0\n      stage 0.1\n      event 0\n");
        if rank > 0 {
            out.push_str(&format!(
                "        send {}\n        receive {}\n",
                rank - 1,
                rank - 1
            ));
        }
        if rank + 1 < size {
            out.push_str(&format!(
                "        receive {}\n        send {}\n",
                rank + 1,
                rank + 1
            ));
        }
    }
    out.push_str("  section 1\n    stage 1.0\n    stage 1.1\n    event 1\n      all_reduce\n");
    out
}

#[test]
fn heat_records_every_region_in_order_on_every_rank() {
    let size = 3;
    let (_, rec) = testing::record_with(&args(size, 12, 2), |ctx| heat(ctx, 8, 3)).unwrap();
    for rank in 0..size {
        let r = rec.rank(rank);
        r.check_nesting().unwrap();
        for it in 0..2 {
            assert_eq!(
                r.outline_of_iteration(it),
                heat_iteration(it, rank, size, 3),
                "rank {rank}, iteration {it}"
            );
        }
    }
}

#[test]
fn trip_counts_of_the_main_loop_and_the_nested_iteration_are_measured() {
    for (iterations, sweeps) in [(1, 1), (2, 3), (4, 0), (3, 5)] {
        let (_, rec) =
            testing::record_with(&args(2, 6, iterations), |ctx| heat(ctx, 5, sweeps)).unwrap();
        for r in &rec.ranks {
            assert_eq!(r.trips(RecordKind::Iteration), iterations as usize);
            assert_eq!(
                r.trips_of(RecordKind::Group, 0),
                iterations as usize * sweeps
            );
            assert_eq!(
                r.trips_of(RecordKind::Event, 0),
                iterations as usize * sweeps
            );
            assert_eq!(r.trips_of(RecordKind::Section, 1), iterations as usize);
            let numbers: Vec<u32> = r.of_kind(RecordKind::Iteration).map(|i| i.id).collect();
            assert_eq!(
                numbers,
                (0..iterations).collect::<Vec<_>>(),
                "iterations are numbered from 0"
            );
        }
    }
}

#[test]
fn instrumentation_does_not_change_results() {
    let a = args(3, 13, 3);
    let plain = mheta::launch(&a, |ctx| heat_plain(ctx, 6, 2)).unwrap();
    let disabled = mheta::launch(&a, |ctx| heat(ctx, 6, 2)).unwrap();
    let (recorded, _) = testing::record_with(&a, |ctx| heat(ctx, 6, 2)).unwrap();
    assert_eq!(plain, disabled);
    assert_eq!(plain, recorded);
}

#[test]
fn embedded_structure_is_what_the_analyzer_writes_for_the_crate() {
    testing::record_with(&args(1, 4, 1), |ctx| heat(ctx, 4, 1)).unwrap();
    let embedded = mheta::embedded::registered();
    let heat = embedded
        .iter()
        .find(|e| e.solver.ends_with("::heat"))
        .expect("heat registered its structure");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let analysis = mheta_analyzer::analyze_path(dir, &mheta_analyzer::Options::default());
    assert_eq!(
        heat.structure_json,
        mheta_analyzer::emit::json::render(&analysis.structure)
    );
    assert_eq!(heat.solver, "mheta-macros-tests::heat");
    // The name the measurements carry, written by the macro, is that of the structure the CLI
    // reads back from the same text.
    let parsed: mheta::format::Structure = serde_json::from_str(heat.structure_json).unwrap();
    assert_eq!(
        heat.id(),
        mheta::format::StructureId::of(&parsed, heat.solver)
    );
}

/// A pipelined wavefront in this test file (outside the crate's module tree, so the macro
/// analyses the file itself): each tile receives its top boundary from the rank above, computes
/// and sends its bottom boundary down; then the ranks all-reduce a checksum.
#[mheta::solver]
fn wavefront(ctx: &Context, tiles: usize, width: usize) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let (rank, size) = (ctx.rank(), ctx.size());
    #[mheta::distributed]
    let rows = ctx.local_rows(ctx.rows() as usize);
    let mut grid = vec![1.0f64; (rows + 1) * width];
    let mut total = [0.0];
    #[mheta::iterate]
    for _ in 0..ctx.iterations() {
        for _ in 0..tiles {
            if rank > 0 {
                comm.receive_into(rank - 1, &mut grid[..width])?;
            }
            for i in 1..=rows {
                for j in 0..width {
                    grid[i * width + j] = 0.5 * (grid[(i - 1) * width + j] + grid[i * width + j]);
                }
            }
            if rank + 1 < size {
                comm.send(rank + 1, &grid[rows * width..])?;
            }
        }
        let local: f64 = grid[width..].iter().sum();
        comm.all_reduce(&[local], &mut total, ReduceOp::Sum)?;
    }
    Ok(total[0])
}

#[test]
fn tiles_are_timed_per_tile_with_their_boundary_events() {
    let (_, rec) = testing::record_with(&args(2, 8, 2), |ctx| wavefront(ctx, 3, 4)).unwrap();
    for r in &rec.ranks {
        r.check_nesting().unwrap();
        assert_eq!(
            r.trips_of(RecordKind::Tile, 0),
            6,
            "3 tiles in each of 2 iterations"
        );
        // Event guards wrap the rank-guarded `if`, so a rank without that neighbour records
        // the event with no call inside.
        let (recv, send) = match r.rank {
            0 => ("      event 0\n", "      event 1\n        send 1\n"),
            _ => ("      event 0\n        receive 0\n", "      event 1\n"),
        };
        let tile = format!("    tile 0.0\n{recv}      stage 0.t0.0\n{send}");
        let expected = format!(
            "iteration 1\n  section 0\n{}    stage 0.1\n    event 2\n      all_reduce\n",
            tile.repeat(3)
        );
        assert_eq!(r.outline_of_iteration(1), expected, "rank {}", r.rank);
    }
}

#[test]
fn a_solver_outside_the_module_tree_embeds_the_analysis_of_its_file() {
    testing::record_with(&args(1, 4, 1), |ctx| wavefront(ctx, 1, 2)).unwrap();
    let embedded = mheta::embedded::registered();
    let wave = embedded
        .iter()
        .find(|e| e.solver.ends_with("::wavefront"))
        .expect("wavefront registered");
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/behaviour.rs"),
    )
    .unwrap();
    let analysis = mheta_analyzer::analyze_source(
        "tests/behaviour.rs",
        &text,
        &mheta_analyzer::Options::default(),
    );
    assert_eq!(
        wave.structure_json,
        mheta_analyzer::emit::json::render(&analysis.structure)
    );
}
