#[mheta::solver(fast)]
fn solve(ctx: &mheta::Context) {
    let _ = ctx;
}

fn main() {}
