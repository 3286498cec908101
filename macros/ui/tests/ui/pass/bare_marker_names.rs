//! Markers imported by name work like their full paths.
use mheta::{iterate, solver, CommError, CommExt, Context, ReduceOp};

#[solver]
fn solve(ctx: &Context) -> Result<f64, CommError> {
    let comm = ctx.comm();
    let mut total = [0.0];
    #[iterate]
    loop {
        comm.all_reduce(&[1.0], &mut total, ReduceOp::Sum)?;
        if total[0] > 0.0 {
            break;
        }
    }
    Ok(total[0])
}

fn main() {
    let args = mheta::Args { ranks: Some(2), rows: Some(2), ..mheta::Args::default() };
    mheta::launch(&args, solve).unwrap();
}
