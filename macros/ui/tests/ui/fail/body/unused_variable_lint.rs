//! A lint on the user's code inside a solver is reported once, although the macro emits the
//! body twice (an instrumented and a plain copy). Denied here, so it shows as an error.
#![deny(unused_variables)]
use mheta::{CommError, CommExt, Context, ReduceOp};

#[mheta::solver]
fn solve(ctx: &Context) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let mut sum = [0.0];
    for step in 0..ctx.iterations() {
        let local = 1.0;
        comm.all_reduce(&[local], &mut sum, ReduceOp::Sum)?;
    }
    Ok(sum[0])
}

fn main() {}
