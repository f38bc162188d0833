//! A small seeded generator (SplitMix64) for the places that need reproducible
//! pseudo-random choices without a dependency: the mapper's refinement order and
//! restarts, and the calibration's sample pairs (every rank draws the same sequence).

/// SplitMix64: 64 bits of state, every seed gives a full-period sequence.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 pseudo-random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (up to the modulo bias, below 2^-40 for `n < 2^24`); `n ≥ 1`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// Shuffles `v` in place (Fisher–Yates).
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = self.below(i + 1);
            v.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix;

    #[test]
    fn known_first_outputs_of_seed_zero() {
        // SplitMix64's published reference values for seed 0.
        let mut r = SplitMix(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn shuffle_is_a_permutation_and_seeded() {
        let mut v: Vec<usize> = (0..100).collect();
        SplitMix(9).shuffle(&mut v);
        let mut w: Vec<usize> = (0..100).collect();
        SplitMix(9).shuffle(&mut w);
        assert_eq!(v, w);
        assert_ne!(v, (0..100).collect::<Vec<_>>());
        v.sort_unstable();
        assert_eq!(v, (0..100).collect::<Vec<_>>());
    }
}
