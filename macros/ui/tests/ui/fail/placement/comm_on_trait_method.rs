trait Halo {
    #[mheta::comm]
    fn exchange(&self);
}

fn main() {}
