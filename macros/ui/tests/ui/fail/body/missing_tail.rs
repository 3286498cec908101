//! A solver whose body ends without its value (a stray `;`) gets the error a plain function would
//! get, once.
use mheta::{CommError, CommExt, Context, ReduceOp};

#[mheta::solver]
fn solve(ctx: &Context) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let mut sum = [0.0];
    for _ in 0..ctx.iterations() {
        comm.all_reduce(&[1.0], &mut sum, ReduceOp::Sum)?;
    }
    Ok(sum[0]);
}

fn main() {}
