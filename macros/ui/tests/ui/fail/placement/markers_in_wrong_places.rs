use mheta::{CommError, CommExt, Context, ReduceOp};

#[mheta::solver]
fn solve(ctx: &Context, #[mheta::replicated] scale: f64) -> Result<(), CommError> {
    #[mheta::iterate]
    let mut x = [scale];
    #[mheta::distributed]
    for _ in 0..ctx.iterations() {
        #[mheta::replicated]
        ctx.comm().all_reduce(&[1.0], &mut x, ReduceOp::Sum)?;
    }
    Ok(())
}

fn main() {}
