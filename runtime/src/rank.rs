//! One rank's work, the same for every backend: the threads backend runs it on each rank's
//! thread (`launch`), the MPI backend on its one rank per process (`comm::mpi::run`). Both call
//! down into this module, which calls neither.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::clock::{self, ClockMode};
use crate::cluster::DiskModel;
use crate::context::{Context, RunSettings};
use crate::format::Microbenchmarks;
use crate::hooks::{self, HookConfig, RankRecords};
use crate::{micro, ooc};

/// One rank's work on the calling thread, for every backend: install the rank's clock and
/// hooks (with the node's CPU slowdown), run an instrumented run's start-up microbenchmarks,
/// then `f`. Returns `f`'s result or the failure message (error chain or panic), the rank's
/// records and its network microbenchmarks; the clock and hooks are uninstalled again.
pub(crate) fn rank_work<R, E, F>(
    rank: usize,
    comm: Box<dyn crate::comm::Comm>,
    settings: Arc<RunSettings>,
    f: &F,
    benchmarks: bool,
) -> (Result<R, String>, RankRecords, Microbenchmarks)
where
    F: Fn(&Context) -> Result<R, E> + Sync,
    E: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let node = settings.cluster.nodes[rank];
    let instrument = settings.instrument;
    clock::install(settings.clock, node.cpu);
    let least_cpu = clock::install_load(settings.cluster.load_of(rank));
    hooks::install(HookConfig {
        instrument,
        slowdown: settings.clock == ClockMode::Wall && least_cpu < 1.0,
        timing: settings.timing,
    });
    let ctx = Context::new(rank, comm, Arc::clone(&settings));
    let mut micro = Microbenchmarks::default();
    let outcome = catch_unwind(AssertUnwindSafe(|| -> Result<R, String> {
        if instrument && benchmarks {
            micro =
                micro::network(ctx.comm(), &settings.cluster.network).map_err(|e| e.to_string())?;
            let disk = ooc::measure_disk(
                &ctx.scratch_dir(),
                DiskModel::of(&node),
                &Default::default(),
            )
            .map_err(|e| format!("disk microbenchmark: {e}"))?;
            hooks::set_io_calibration(disk);
        }
        if instrument || settings.timing {
            // Every rank starts its first timed iteration together, at time zero.
            ctx.comm().barrier_bytes().map_err(|e| e.to_string())?;
            clock::reset();
            hooks::set_recording(true);
        } else if settings.clock.is_virtual() {
            clock::reset();
        }
        f(&ctx).map_err(|e| error_chain(e.into().as_ref()))
    }));
    hooks::set_recording(false);
    drop(ctx);
    let result = match outcome {
        Ok(result) => result,
        Err(panic) => Err(format!("panicked: {}", panic_message(panic.as_ref()))),
    };
    let records = hooks::uninstall();
    clock::uninstall();
    (result, records, micro)
}

/// An error and its sources, `outer: inner: innermost`.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        s.push_str(": ");
        s.push_str(&inner.to_string());
        source = inner.source();
    }
    s
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}
