//! The table's Bloom filter: one filter over every filter key of the table, so a point
//! lookup skips a table whose filter says "absent" without touching its index or data.
//!
//! Each key is hashed once with xxh3-128; the low 64 bits `h1` and high 64 bits `h2` drive
//! double hashing: probe `i` (0-based) sets bit `fastrange(h1 + i·h2, nbits)` where
//! `fastrange(h, n) = (h · n) >> 64` and arithmetic wraps at 64 bits. With
//! `k = round(bits_per_key · ln 2)` probes this gives ≈1% false positives at 10 bits/key.
//!
//! Block layout: `bits (nbits/8 bytes) ‖ k (u8) ‖ version (u8)`; bit `b` is
//! `bits[b / 8] >> (b % 8) & 1`.
#![deny(clippy::indexing_slicing)]

use xxhash_rust::xxh3::xxh3_128;

/// The filter block format version.
pub(crate) const FILTER_VERSION: u8 = 1;
/// The most probes a filter may use.
const PROBES_MAX: u32 = 30;
/// The smallest filter, so tiny tables still get a useful one.
const BITS_MIN: u64 = 64;

/// Probes per key for `bits_per_key`.
pub(crate) fn probes_for(bits_per_key: u32) -> u32 {
    let k = (f64::from(bits_per_key) * std::f64::consts::LN_2).round();
    (k as u32).clamp(1, PROBES_MAX)
}

#[inline]
fn fastrange(h: u64, n: u64) -> u64 {
    ((u128::from(h) * u128::from(n)) >> 64) as u64
}

/// Collects key hashes while a table is written.
#[derive(Debug)]
pub(crate) struct FilterBuilder {
    bits_per_key: u32,
    hashes: Vec<u128>,
}

impl FilterBuilder {
    pub(crate) fn new(bits_per_key: u32) -> Self {
        FilterBuilder {
            bits_per_key,
            hashes: Vec::new(),
        }
    }

    /// Adds a filter key; consecutive equal keys (versions of one user key) count once.
    #[inline]
    pub(crate) fn add(&mut self, filter_key: &[u8]) {
        let h = xxh3_128(filter_key);
        if self.hashes.last() != Some(&h) {
            self.hashes.push(h);
        }
    }

    /// Distinct keys added so far.
    pub(crate) fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Forgets every key added (to start the next partition's filter).
    pub(crate) fn clear(&mut self) {
        self.hashes.clear();
    }

    /// Appends the filter block's contents to `out`.
    pub(crate) fn finish_into(&self, out: &mut Vec<u8>) {
        let k = probes_for(self.bits_per_key);
        let nbits = (self.hashes.len() as u64)
            .saturating_mul(u64::from(self.bits_per_key))
            .max(BITS_MIN)
            .div_ceil(8)
            * 8;
        let start = out.len();
        out.resize(start + (nbits / 8) as usize, 0);
        if let Some(bits) = out.get_mut(start..) {
            for &h in &self.hashes {
                for bit in probe_bits(h, k, nbits) {
                    if let Some(byte) = bits.get_mut((bit / 8) as usize) {
                        *byte |= 1 << (bit % 8);
                    }
                }
            }
        }
        out.push(k as u8);
        out.push(FILTER_VERSION);
    }
}

#[inline]
fn probe_bits(h: u128, k: u32, nbits: u64) -> impl Iterator<Item = u64> {
    let h1 = h as u64;
    let h2 = (h >> 64) as u64;
    (0..u64::from(k)).map(move |i| fastrange(h1.wrapping_add(i.wrapping_mul(h2)), nbits))
}

/// A decoded filter block.
#[derive(Debug)]
pub(crate) struct BloomFilter {
    bits: Vec<u8>,
    nbits: u64,
    k: u32,
}

impl BloomFilter {
    /// Validates a filter block's contents.
    pub(crate) fn decode(mut block: Vec<u8>) -> Result<Self, &'static str> {
        let version = block.pop().ok_or("empty filter block")?;
        if version != FILTER_VERSION {
            return Err("unsupported filter version");
        }
        let k = u32::from(block.pop().ok_or("filter block has no probe count")?);
        if !(1..=PROBES_MAX).contains(&k) {
            return Err("filter probe count out of range");
        }
        if block.is_empty() {
            return Err("filter has no bits");
        }
        let nbits = (block.len() as u64) * 8;
        Ok(BloomFilter {
            bits: block,
            nbits,
            k,
        })
    }

    /// False only if `filter_key` was certainly not added.
    #[inline]
    pub(crate) fn may_contain(&self, filter_key: &[u8]) -> bool {
        let h = xxh3_128(filter_key);
        probe_bits(h, self.k, self.nbits).all(|bit| {
            self.bits
                .get((bit / 8) as usize)
                .is_some_and(|b| b & (1 << (bit % 8)) != 0)
        })
    }

    /// Bytes held in memory.
    pub(crate) fn size_bytes(&self) -> usize {
        self.bits.len()
    }

    /// Bytes this filter holds in memory, for the block cache's weight.
    pub(crate) fn charge_bytes(&self) -> u64 {
        (self.bits.capacity() + std::mem::size_of::<Self>() + 64) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn build(keys: impl Iterator<Item = Vec<u8>>, bits_per_key: u32) -> BloomFilter {
        let mut b = FilterBuilder::new(bits_per_key);
        for k in keys {
            b.add(&k);
        }
        let mut out = Vec::new();
        b.finish_into(&mut out);
        BloomFilter::decode(out).unwrap()
    }

    #[test]
    fn probes_follow_bits_per_key() {
        assert_eq!(probes_for(10), 7);
        assert_eq!(probes_for(1), 1);
        assert_eq!(probes_for(0), 1);
        assert_eq!(probes_for(1000), 30);
    }

    #[test]
    fn false_positive_rate_is_about_one_percent_at_ten_bits_per_key() {
        let n = 100_000u32;
        let f = build((0..n).map(|i| format!("user-key-{i:08}").into_bytes()), 10);
        assert_eq!(f.size_bytes(), (n as usize * 10).div_ceil(8));
        for i in 0..n {
            assert!(f.may_contain(format!("user-key-{i:08}").as_bytes()));
        }
        let probes = 100_000u32;
        let fp = (0..probes)
            .filter(|i| f.may_contain(format!("absent-key-{i:08}").as_bytes()))
            .count();
        let rate = fp as f64 / f64::from(probes);
        assert!(rate < 0.0125, "false positive rate {rate}");
        assert!(rate > 0.004, "suspiciously low false positive rate {rate}");
    }

    #[test]
    fn consecutive_duplicates_count_once() {
        let mut b = FilterBuilder::new(10);
        for _ in 0..5 {
            b.add(b"same");
        }
        b.add(b"other");
        assert_eq!(b.len(), 2);
    }

    #[test]
    fn malformed_filters_are_rejected() {
        assert!(BloomFilter::decode(vec![]).is_err());
        assert!(BloomFilter::decode(vec![7, FILTER_VERSION]).is_err());
        assert!(BloomFilter::decode(vec![0, 0, FILTER_VERSION]).is_err());
        assert!(BloomFilter::decode(vec![0, 31, FILTER_VERSION]).is_err());
        assert!(BloomFilter::decode(vec![0, 7, 9]).is_err());
        assert!(BloomFilter::decode(vec![0, 7, FILTER_VERSION]).is_ok());
    }

    proptest! {
        #[test]
        fn arbitrary_filter_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64),
                                              key in proptest::collection::vec(any::<u8>(), 0..8)) {
            if let Ok(f) = BloomFilter::decode(bytes) {
                let _ = f.may_contain(&key);
            }
        }
    }
}
