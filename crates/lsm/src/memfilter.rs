//! A memtable's filter over key prefixes: whether a memtable may hold keys of a prefix (a
//! partition, when the engine's `filter_prefix_bytes` covers the partition's token), so a
//! read of one partition skips the memtables that cannot hold it instead of searching
//! their skiplists (a search per memtable was the largest cost of a partition read).
//!
//! A memtable's final size is not known when it is created, and a node has hundreds of
//! them, so the filter grows: a chain of Bloom filters, each four times the previous one's
//! capacity (the first holds 1,024 prefixes in 2 KiB), 16 bits per prefix and 4 probes, so
//! that even a chain of several layers answers "maybe" for an absent prefix well under 1%
//! of the time. Inserts set bits with relaxed atomics before the entry enters the
//! skiplist; a reader sees them because it can only see the entry through a sequence
//! number published after both (the engine's write path).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

/// Prefixes the first layer is sized for.
const FIRST_CAPACITY: usize = 1024;
/// Each layer's capacity over the previous one's.
const GROWTH: usize = 4;
/// Bits per prefix of capacity.
const BITS_PER_PREFIX: usize = 16;
/// Bits set and tested per prefix.
const PROBES: u32 = 4;

/// One Bloom filter of the chain.
struct Layer {
    words: Box<[AtomicU64]>,
    capacity: usize,
    inserted: AtomicUsize,
}

impl Layer {
    fn new(capacity: usize) -> Layer {
        let words = (capacity * BITS_PER_PREFIX).div_ceil(64);
        Layer {
            words: (0..words).map(|_| AtomicU64::new(0)).collect(),
            capacity,
            inserted: AtomicUsize::new(0),
        }
    }

    /// The bit positions of a hash (double hashing).
    fn probes(&self, hash: u64) -> impl Iterator<Item = usize> + '_ {
        let bits = self.words.len() as u64 * 64;
        let (h1, h2) = (hash, (hash >> 32) | 1);
        (0..u64::from(PROBES)).map(move |i| (h1.wrapping_add(i.wrapping_mul(h2)) % bits) as usize)
    }

    fn insert(&self, hash: u64) {
        for bit in self.probes(hash) {
            self.words[bit / 64].fetch_or(1 << (bit % 64), Ordering::Relaxed);
        }
        self.inserted.fetch_add(1, Ordering::Relaxed);
    }

    fn may_contain(&self, hash: u64) -> bool {
        self.probes(hash)
            .all(|bit| self.words[bit / 64].load(Ordering::Relaxed) & (1 << (bit % 64)) != 0)
    }

    fn bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// Whether it holds fewer prefixes than it was sized for.
    fn has_room(&self) -> bool {
        self.inserted.load(Ordering::Relaxed) < self.capacity
    }
}

/// A growing filter over the first `prefix_bytes` bytes of keys.
pub struct PrefixFilter {
    prefix_bytes: usize,
    layers: RwLock<Vec<Arc<Layer>>>,
}

impl PrefixFilter {
    /// An empty filter over prefixes of `prefix_bytes` bytes (at least 1).
    pub fn new(prefix_bytes: usize) -> PrefixFilter {
        PrefixFilter {
            prefix_bytes: prefix_bytes.max(1),
            layers: RwLock::new(vec![Arc::new(Layer::new(FIRST_CAPACITY))]),
        }
    }

    /// The prefix length it filters on.
    pub fn prefix_bytes(&self) -> usize {
        self.prefix_bytes
    }

    fn hash(prefix: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64(prefix)
    }

    /// Notes `key`'s prefix (keys shorter than a prefix are in no prefix's range, and are
    /// not noted).
    pub fn insert_key(&self, key: &[u8]) {
        let Some(prefix) = key.get(..self.prefix_bytes) else {
            return;
        };
        let hash = PrefixFilter::hash(prefix);
        {
            let layers = self.layers.read();
            if let Some(last) = layers.last().filter(|l| l.has_room()) {
                last.insert(hash);
                return;
            }
        }
        self.grow().insert(hash);
    }

    /// Adds a layer unless another writer just did; returns the newest layer.
    fn grow(&self) -> Arc<Layer> {
        let mut layers = self.layers.write();
        match layers.last() {
            Some(l) if l.has_room() => l.clone(),
            last => {
                let capacity = last.map_or(FIRST_CAPACITY, |l| l.capacity.saturating_mul(GROWTH));
                let layer = Arc::new(Layer::new(capacity));
                layers.push(layer.clone());
                layer
            }
        }
    }

    /// Whether keys starting with `prefix` may have been inserted (`true` for a prefix of
    /// another length: the filter cannot tell).
    pub fn may_contain(&self, prefix: &[u8]) -> bool {
        if prefix.len() != self.prefix_bytes {
            return true;
        }
        let hash = PrefixFilter::hash(prefix);
        self.layers.read().iter().any(|l| l.may_contain(hash))
    }

    /// Memory the filter holds.
    pub fn bytes(&self) -> usize {
        self.layers.read().iter().map(|l| l.bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u64) -> Vec<u8> {
        let mut k = i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes().to_vec();
        k.extend_from_slice(b"partition key and clustering");
        k
    }

    #[test]
    fn never_says_no_for_an_inserted_prefix_and_rarely_yes_for_others() {
        let f = PrefixFilter::new(8);
        let n = 100_000u64;
        for i in 0..n {
            f.insert_key(&key(i));
        }
        for i in 0..n {
            assert!(f.may_contain(&key(i)[..8]), "false negative for {i}");
        }
        let false_positives = (n..2 * n).filter(|&i| f.may_contain(&key(i)[..8])).count();
        assert!(
            false_positives < (n / 100) as usize,
            "{false_positives} false positives of {n}"
        );
        // Grown in layers of 1 Ki, 4 Ki, 16 Ki, 64 Ki, 256 Ki prefixes at 2 bytes each.
        assert_eq!(f.bytes(), (1 + 4 + 16 + 64 + 256) * 1024 * 2);
    }

    #[test]
    fn a_small_memtable_pays_a_small_filter() {
        let f = PrefixFilter::new(8);
        for i in 0..100 {
            f.insert_key(&key(i));
        }
        assert_eq!(f.bytes(), 2048);
        assert!((0..100).all(|i| f.may_contain(&key(i)[..8])));
    }

    #[test]
    fn short_keys_and_other_lengths_are_never_filtered_wrongly() {
        let f = PrefixFilter::new(8);
        f.insert_key(b"short");
        assert!(
            f.may_contain(b"short"),
            "another length: the filter cannot tell"
        );
        assert!(f.may_contain(b"sho"));
        f.insert_key(b"12345678-rest");
        assert!(f.may_contain(b"12345678"));
    }

    #[test]
    fn concurrent_inserts_lose_nothing() {
        let f = Arc::new(PrefixFilter::new(8));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let f = f.clone();
                mosaic_env::thread::spawn_named(format!("filter-{t}"), move || {
                    for i in 0..20_000 {
                        f.insert_key(&key(t * 1_000_000 + i));
                    }
                })
                .expect("spawn")
            })
            .collect();
        for t in threads {
            t.join().expect("inserting thread");
        }
        for t in 0..4u64 {
            for i in 0..20_000 {
                assert!(f.may_contain(&key(t * 1_000_000 + i)[..8]));
            }
        }
    }
}
