#[mheta::solver]
#[mheta::comm]
fn both(ctx: &mheta::Context) {
    let _ = ctx;
}

#[mheta::comm]
#[mheta::comm]
fn twice(comm: &dyn mheta::Comm) {
    let _ = comm;
}

fn main() {}
