//! Small seeded generators for tests, the lab and simulations: the same
//! seed gives the same sequence on every machine. Never used by the data
//! plane itself (its randomness is `bpf_get_prandom_u32`, passed in).

/// Marsaglia's xorshift32 (13, 17, 5). The seed must not be 0.
#[derive(Clone, Debug)]
pub struct XorShift32(pub u32);

impl XorShift32 {
    /// The next value (never 0 for a non-zero seed).
    pub fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }

    /// Uniform (up to modulo bias) in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + u64::from(self.next_u32()) % (hi - lo + 1)
    }
}

/// splitmix64 (Steele, Lea, Flood): any seed, 64-bit output.
#[derive(Clone, Debug)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    /// The next value.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform (up to modulo bias) in `0..n`; `n` must not be 0.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}
