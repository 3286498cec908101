#[mheta::comm(pattern = "halo")]
fn halo(comm: &dyn mheta::Comm) {
    let _ = comm;
}

fn main() {}
