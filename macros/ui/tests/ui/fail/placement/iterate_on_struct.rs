#[mheta::iterate]
struct MainLoop;

fn main() {}
