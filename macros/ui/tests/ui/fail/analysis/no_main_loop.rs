// The analyzer finds no loop that communicates: nothing to instrument. That is a warning (the
// attribute never breaks a build that rustc accepts); `deny` makes it visible here.
#![deny(deprecated)]

use mheta::{CommError, CommExt, Context, ReduceOp};

#[mheta::solver]
fn solve(ctx: &Context) -> Result<f64, CommError> {
    let mut local = 0.0;
    for i in 0..10 {
        local += i as f64;
    }
    ctx.comm().all_reduce_value(local, ReduceOp::Sum)
}

fn main() {}
