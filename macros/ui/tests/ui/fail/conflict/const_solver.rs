#[mheta::solver]
const fn solve(rows: usize) -> usize {
    rows
}

fn main() {}
