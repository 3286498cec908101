#[mheta::distributed]
fn rows() -> usize {
    4
}

fn main() {}
