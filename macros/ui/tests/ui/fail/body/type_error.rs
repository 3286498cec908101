//! A type error inside a solver's main loop is reported once, although the macro emits the body
//! twice (an instrumented and a plain copy): rustc reports identical diagnostics once.
use mheta::{CommError, CommExt, Context, ReduceOp};

#[mheta::solver]
fn solve(ctx: &Context) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let mut sum = [0.0];
    for _ in 0..ctx.iterations() {
        let local: f64 = "not a number";
        comm.all_reduce(&[local], &mut sum, ReduceOp::Sum)?;
    }
    Ok(sum[0])
}

fn main() {}
