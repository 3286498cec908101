//! A solver using every marker, a `#[mheta::comm]` helper, and an early exit from the main loop.
use mheta::{CommError, CommExt, Context, ReduceOp};

#[mheta::comm]
fn exchange(comm: &dyn mheta::Comm, local: f64) -> Result<f64, CommError> {
    comm.all_reduce_value(local, ReduceOp::Max)
}

#[mheta::solver]
fn solve(ctx: &Context) -> Result<f64, CommError> {
    let comm = ctx.comm();
    #[mheta::distributed]
    let mut u = vec![1.0f64; ctx.local_rows(ctx.rows() as usize)];
    #[mheta::replicated]
    let scale = 0.5;
    let mut sum = [0.0];
    #[mheta::iterate]
    for it in 0..ctx.iterations() {
        for v in u.iter_mut() {
            *v *= scale;
        }
        comm.all_reduce(&[u.iter().sum::<f64>()], &mut sum, ReduceOp::Sum)?;
        if it > 100 {
            break;
        }
    }
    exchange(comm, sum[0])
}

fn main() {
    let args = mheta::Args { ranks: Some(2), rows: Some(4), iterations: 2, ..mheta::Args::default() };
    mheta::launch(&args, solve).unwrap();
}
