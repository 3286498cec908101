//! A solver whose final value has the wrong type gets the error a plain function would get, once,
//! at the value (the macro's two copies of the body are branches of one `if`).
use mheta::{CommError, CommExt, Context, ReduceOp};

#[mheta::solver]
fn solve(ctx: &Context) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let mut sum = [0.0];
    for _ in 0..ctx.iterations() {
        comm.all_reduce(&[1.0], &mut sum, ReduceOp::Sum)?;
    }
    Ok(sum[0] as i32)
}

fn main() {}
