//! A borrow-check error inside a solver is reported once, although the macro emits the body
//! twice (an instrumented and a plain copy).
use mheta::{CommError, CommExt, Context, ReduceOp};

#[mheta::solver]
fn solve(ctx: &Context) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let rows = vec![1.0f64; 4];
    let mut sum = [0.0];
    for _ in 0..ctx.iterations() {
        let taken = rows;
        comm.all_reduce(&[taken.iter().sum::<f64>()], &mut sum, ReduceOp::Sum)?;
    }
    Ok(sum[0])
}

fn main() {}
