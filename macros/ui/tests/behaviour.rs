//! Behaviour of `#[mheta::solver]`: run instrumented solvers on the threads backend with the
//! recording runtime and check what the guards recorded — order, nesting, ids and trip counts.

use mheta::hooks::RecordKind;
use mheta::{testing, Args, ClockMode, DistributionSpec};

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

#[test]
fn outline() {
    let (_, rec) = testing::record_with(&args(3, 12, 2), |ctx| mheta_macros_tests::heat(ctx, 8, 3)).unwrap();
    println!("{}", rec.rank(1).outline());
    panic!();
}
