//! Randomness: one seeded generator for everything that must replay, and the operating
//! system's entropy for everything that must not collide.
//!
//! [`SplitMix64`] is small, fast and fully determined by its seed, so a simulated run or a
//! benchmark's key stream replays bit for bit; independent streams are forked from one seed
//! ([`SplitMix64::fork`]) so that drawing more from one does not shift the others.
//! [`random_u64`] and [`random_bytes`] are for ids that must be unique across processes
//! (host ids, table ids, timeuuid clock sequences) — the only calls to the system's
//! generator in the core crates go through here.

/// Golden-ratio increment of SplitMix64.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// The SplitMix64 finaliser: a bijective hash of 64 bits.
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A SplitMix64 generator.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GAMMA);
        mix64(self.state)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        // Multiply-shift: unbiased enough for simulation and key picking, never divides by 0.
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A number in `lo..=hi`.
    pub fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo).saturating_add(1))
    }

    /// An index into a slice of `len` elements (0 when `len` is 0).
    pub fn index(&mut self, len: usize) -> usize {
        self.below(len as u64) as usize
    }

    /// True with probability `ppm` per million.
    pub fn chance(&mut self, ppm: u32) -> bool {
        self.below(1_000_000) < u64::from(ppm)
    }

    /// One of `items`, `None` if there are none.
    pub fn pick<T: Copy>(&mut self, items: &[T]) -> Option<T> {
        if items.is_empty() {
            return None;
        }
        items.get(self.index(items.len())).copied()
    }

    /// A new generator whose stream is independent of this one's, labelled `stream`.
    pub fn fork(&self, stream: u64) -> SplitMix64 {
        let mut p = SplitMix64::new(self.state ^ stream.wrapping_mul(0xd605_bbb5_8c8a_bcb3));
        // Decorrelate the first outputs of neighbouring labels.
        p.next_u64();
        p
    }
}

/// 64 bits from the operating system's generator (not reproducible: for unique ids).
pub fn random_u64() -> u64 {
    #[allow(clippy::disallowed_methods)] // The sanctioned use of the system's generator.
    rand::random()
}

/// `N` bytes from the operating system's generator (not reproducible: for unique ids).
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut out = [0u8; N];
    #[allow(clippy::disallowed_methods)] // The sanctioned use of the system's generator.
    rand::Rng::fill(&mut rand::thread_rng(), &mut out[..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_replay_and_stay_in_bounds() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..1000 {
            assert_eq!(a.next_u64(), b.next_u64());
            let x = a.between(3, 9);
            assert!((3..=9).contains(&x));
            assert_eq!(b.between(3, 9), x);
        }
        assert_eq!(a.below(0), 0);
        assert_eq!(a.pick::<u8>(&[]), None);
        let mut f1 = a.fork(1);
        let mut f2 = a.fork(2);
        assert_ne!(f1.next_u64(), f2.next_u64());
    }

    #[test]
    fn matches_the_reference_splitmix64() {
        // First outputs of SplitMix64 seeded with 0 (Vigna's reference implementation).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xe220_a839_7b1d_cdaf);
        assert_eq!(r.next_u64(), 0x6e78_9e6a_a1b9_65f4);
    }

    #[test]
    fn system_randomness_differs_between_draws() {
        assert_ne!(random_bytes::<16>(), random_bytes::<16>());
    }
}
