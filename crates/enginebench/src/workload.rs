//! Keys, values and the random numbers behind them: deterministic, so a read can check
//! exactly what the last write of a key stored.

/// The key and value generator: SplitMix64 (`mosaic_env`'s seeded generator), seeded as
/// this benchmark always has been so its key streams stay the same across versions.
#[derive(Clone, Debug)]
pub struct Rng(SplitMix64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(SplitMix64::new(seed ^ 0x9E37_79B9_7F4A_7C15))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }
}

pub use mosaic_env::rng::mix64 as mix;
use mosaic_env::SplitMix64;

/// Writes key number `n` into `buf` as zero-padded decimal filling the whole buffer
/// (`format!("{:0width$}", n)` without the allocation), so byte order is numeric order.
pub fn key_into(n: u64, buf: &mut [u8]) {
    let mut n = n;
    for b in buf.iter_mut().rev() {
        *b = b'0' + (n % 10) as u8;
        n /= 10;
    }
}

/// Largest number of keys whose zero-padded decimal form fits in `key_bytes` bytes.
pub fn max_keys(key_bytes: usize) -> u64 {
    if key_bytes >= 19 {
        u64::MAX
    } else {
        10u64.pow(key_bytes as u32)
    }
}

/// Values: windows of one buffer of random bytes (incompressible), the window chosen by
/// hashing (key, generation), so every write of a key stores different bytes.
pub struct Values {
    pool: Vec<u8>,
    value_bytes: usize,
    seed: u64,
}

const POOL_BYTES: usize = 1 << 20;

impl Values {
    /// A pool for `value_bytes`-byte values.
    pub fn new(value_bytes: usize, seed: u64) -> Self {
        let mut rng = Rng::new(seed.wrapping_mul(31).wrapping_add(7));
        let mut pool = Vec::with_capacity(POOL_BYTES + value_bytes + 8);
        while pool.len() < POOL_BYTES + value_bytes {
            pool.extend_from_slice(&rng.next_u64().to_le_bytes());
        }
        Values {
            pool,
            value_bytes,
            seed,
        }
    }

    /// The value written for key `n` by its `generation`-th write (0 = fillrandom).
    pub fn get(&self, n: u64, generation: u32) -> &[u8] {
        let h = mix(n ^ (u64::from(generation) << 40) ^ self.seed.rotate_left(17));
        let off = (h % POOL_BYTES as u64) as usize;
        &self.pool[off..off + self.value_bytes]
    }

    /// Value size in bytes.
    pub fn value_bytes(&self) -> usize {
        self.value_bytes
    }
}

/// The numbers `0..n` in random order.
pub fn permutation(n: u64, rng: &mut Rng) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).collect();
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_zero_padded_decimal() {
        let mut buf = [0u8; 24];
        key_into(1234, &mut buf);
        assert_eq!(&buf[..], format!("{:024}", 1234).as_bytes());
    }

    #[test]
    fn permutation_holds_every_number_once() {
        let mut p = permutation(1000, &mut Rng::new(1));
        assert_ne!(p[..10], (0..10).collect::<Vec<u64>>()[..]);
        p.sort_unstable();
        assert_eq!(p, (0..1000).collect::<Vec<u64>>());
    }

    #[test]
    fn values_differ_per_generation() {
        let v = Values::new(100, 3);
        assert_eq!(v.get(5, 0).len(), 100);
        assert_ne!(v.get(5, 0), v.get(5, 1));
        assert_eq!(v.get(5, 1), v.get(5, 1));
    }
}
