//! The simulator's only source of randomness: SplitMix64, seeded.
//!
//! Small, fast and fully determined by its seed, so a run replays bit for bit. Independent
//! streams (configuration, network, faults, workload, each node's `Runtime::random`) are
//! forked from the run's seed, so a change in how often one of them is drawn from does
//! not shift every other decision of the run.

/// A SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct Prng {
    state: u64,
}

impl Prng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Prng {
        Prng { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Multiply-shift: unbiased enough for a simulator and never divides by zero.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }

    /// An index into a slice of `len` elements (`len` > 0).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// True with probability `ppm` per million.
    pub fn chance(&mut self, ppm: u32) -> bool {
        self.below(1_000_000) < u64::from(ppm)
    }

    /// One of `items` (`items` non-empty).
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        if items.is_empty() {
            return None;
        }
        items.get(self.index(items.len())).copied()
    }

    /// A new generator whose stream is independent of this one's, labelled `stream`.
    pub fn fork(&self, stream: u64) -> Prng {
        let mut p = Prng::new(self.state ^ stream.wrapping_mul(0xd605_bbb5_8c8a_bcb3));
        // Decorrelate the first outputs of neighbouring labels.
        p.next_u64();
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_replay_and_stay_in_bounds() {
        let mut a = Prng::new(7);
        let mut b = Prng::new(7);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            let x = a.between(3, 9);
            assert!((3..=9).contains(&x));
            assert_eq!(b.between(3, 9), x);
        }
        assert_eq!(a.below(0), 0);
        let mut f1 = a.fork(1);
        let mut f2 = a.fork(2);
        assert_ne!(f1.next_u64(), f2.next_u64());
    }
}
