//! A solver's two bodies: `#[mheta::solver]` emits the instrumented body and a plain copy, and
//! runs the plain one when no rank of the process has hooks that time regions. One test in a
//! process of its own, so that no other test's hooks are installed while a plain launch runs.

use std::sync::atomic::{AtomicUsize, Ordering};

use mheta::hooks::RecordKind;
use mheta::{testing, Args, ClockMode, CommError, CommExt, Context, DistributionSpec, ReduceOp};

fn args(iterations: u32) -> Args {
    Args {
        ranks: Some(1),
        rows: Some(6),
        iterations,
        distribution: DistributionSpec::Block,
        clock: ClockMode::Charged,
        ..Args::default()
    }
}

/// A `static` in the body is an item: two copies would be two counters, so this solver keeps one
/// (instrumented) body. Returns how many times it has been called.
#[mheta::solver]
fn counted(ctx: &Context) -> Result<usize, CommError> {
    static CALLS: AtomicUsize = AtomicUsize::new(0);
    let calls = CALLS.fetch_add(1, Ordering::SeqCst) + 1;
    let comm = ctx.comm();
    let mut sum = [0.0];
    for _ in 0..ctx.iterations() {
        let local = calls as f64;
        comm.all_reduce(&[local], &mut sum, ReduceOp::Sum)?;
    }
    Ok(calls)
}

/// A `const`, a `use`, a labelled early exit, a closure and `?`: duplicated, each copy its own.
#[mheta::solver]
fn scaled(ctx: &Context, stop_after: u32) -> Result<(f64, u32), CommError> {
    use mheta::ReduceOp as Op;
    const SCALE: f64 = 0.5;
    let comm = ctx.comm();
    let halve = |x: f64| x * SCALE;
    let mut sum = [1.0];
    let mut trips = 0;
    'main: for it in 0..ctx.iterations() {
        trips += 1;
        let local = halve(sum[0]) + it as f64;
        comm.all_reduce(&[local], &mut sum, Op::Sum)?;
        if it + 1 == stop_after {
            break 'main;
        }
    }
    Ok((sum[0], trips))
}

#[test]
fn plain_runs_take_the_plain_body_and_items_keep_one_body() {
    // No hooks in a plain launch; a recorded run's hooks time regions.
    let flags = mheta::launch(&args(1), |_| {
        Ok::<_, CommError>(mheta::__private::hooks_active())
    })
    .unwrap();
    assert_eq!(flags, [false]);
    let (flags, _) = testing::record_with(&args(1), |_| {
        Ok::<_, CommError>(mheta::__private::hooks_active())
    })
    .unwrap();
    assert_eq!(flags, [true]);

    // A `--timings` run takes the plain body, whose iteration guards it records.
    let dir = std::env::temp_dir().join(format!("mheta-two-bodies-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let timed = Args {
        timings: Some(dir.join("timings.json")),
        ..args(4)
    };
    let (flags, trips): (Vec<bool>, Vec<u32>) = mheta::launch(&timed, |ctx| {
        let active = mheta::__private::hooks_active();
        scaled(ctx, 10).map(|(_, trips)| (active, trips))
    })
    .unwrap()
    .into_iter()
    .unzip();
    assert_eq!((flags, trips), (vec![false], vec![4]));
    let text = std::fs::read_to_string(dir.join("timings.json")).unwrap();
    let timings: mheta::format::Timings = serde_json::from_str(&text).unwrap();
    assert_eq!(timings.nodes[0].iterations.len(), 4);
    std::fs::remove_dir_all(&dir).unwrap();

    // One body: the plain launch and the recorded run share the solver's `static`.
    assert_eq!(mheta::launch(&args(2), counted).unwrap(), [1]);
    let (calls, rec) = testing::record_with(&args(2), counted).unwrap();
    assert_eq!(calls, [2]);
    assert_eq!(rec.rank(0).trips(RecordKind::Iteration), 2);
    assert_eq!(rec.rank(0).trips(RecordKind::Event), 2);
    assert_eq!(mheta::launch(&args(2), counted).unwrap(), [3]);

    // Two bodies: the same results from either, and the recorded one has its guards.
    for stop_after in [1, 3, 10] {
        let plain = mheta::launch(&args(5), |ctx| scaled(ctx, stop_after)).unwrap();
        let (recorded, rec) =
            testing::record_with(&args(5), |ctx| scaled(ctx, stop_after)).unwrap();
        assert_eq!(plain, recorded);
        let trips = stop_after.min(5);
        assert_eq!(plain[0].1, trips);
        let r = rec.rank(0);
        r.check_nesting().unwrap();
        assert_eq!(r.trips(RecordKind::Iteration), trips as usize);
        assert_eq!(r.trips(RecordKind::Event), trips as usize);
        // Section 1 is the `if` that may leave the loop: its guard closes on the `break` too.
        let outline = "  section 0\n    stage 0.0\n    event 0\n      all_reduce\n  section 1\n    stage 1.0\n";
        for it in 0..trips {
            assert_eq!(
                r.outline_of_iteration(it),
                format!("iteration {it}\n{outline}")
            );
        }
    }
}
