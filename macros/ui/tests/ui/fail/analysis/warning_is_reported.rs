//! The analyzer's warnings reach the user as compile-time warnings (the `deprecated` lint, the
//! only one a proc macro can raise on stable Rust). Denied here, so the warning shows as an error.
#![deny(deprecated)]
use mheta::{CommError, CommExt, Context, ReduceOp};

macro_rules! halve {
    ($v:expr) => {
        $v * 0.5
    };
}

#[mheta::solver]
fn solve(ctx: &Context) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let mut sum = [1.0];
    for _ in 0..ctx.iterations() {
        let local = halve!(sum[0]);
        comm.all_reduce(&[local], &mut sum, ReduceOp::Sum)?;
    }
    Ok(sum[0])
}

fn main() {}
