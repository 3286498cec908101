use mheta::{CommError, CommExt, Context, ReduceOp};

#[mheta::solver]
fn solve(ctx: &Context) -> Result<(), CommError> {
    #[mheta::distributed]
    #[mheta::replicated]
    let mut x = [0.0];
    for _ in 0..ctx.iterations() {
        ctx.comm().all_reduce(&[1.0], &mut x, ReduceOp::Sum)?;
    }
    Ok(())
}

fn main() {}
