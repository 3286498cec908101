//! A small deterministic random number generator (SplitMix64) for the randomised searches, so
//! the runtime needs no extra dependency and equal seeds give equal searches.

/// SplitMix64 (Steele, Lea, Flood 2014): 64-bit state, full period, good statistical quality
/// for search heuristics (not for cryptography).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`), by rejection so there is no modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let zone = u64::MAX - u64::MAX % n;
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A uniformly random split of `total` rows over `nodes` nodes (random cut points).
    pub fn composition(&mut self, total: u64, nodes: usize) -> Vec<u64> {
        let mut cuts: Vec<u64> = (1..nodes).map(|_| self.below(total + 1)).collect();
        cuts.sort_unstable();
        let mut rows = Vec::with_capacity(nodes);
        let mut previous = 0;
        for c in cuts.into_iter().chain(std::iter::once(total)) {
            rows.push(c - previous);
            previous = c;
        }
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compositions_sum_to_the_total_and_are_reproducible() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        for total in [0u64, 1, 17, 1000] {
            let x = a.composition(total, 5);
            assert_eq!(x.iter().sum::<u64>(), total);
            assert_eq!(x, b.composition(total, 5));
        }
        assert!((0..1000).map(|_| a.unit()).all(|u| (0.0..1.0).contains(&u)));
        assert!((0..1000).all(|_| a.below(3) < 3));
    }
}
