#[mheta::solver]
struct Solver {
    rows: usize,
}

fn main() {}
