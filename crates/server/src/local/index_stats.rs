//! What this node knows of an index's selectivity: the mean number of entries per indexed
//! value, as Cassandra 4.1 estimates a legacy index's result rows (the mean row count of
//! the index table's partitions), so that a query with several indexed relations reads
//! through the most selective index.
//!
//! Kept cheaply, in memory: a count of the entries added and a HyperLogLog sketch of the
//! distinct terms (256 one-byte registers: about 6.5% standard error), both fed by every
//! batch of entries an index takes (writes and builds) and, when the index is opened, by a
//! bounded sample of what it stores. Stale entries count until they are swept, as
//! Cassandra's estimate counts cells its compactions have not yet purged: the estimate
//! orders indexes, it never decides what a query returns.

use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Registers of the sketch (2^8).
const REGISTERS: usize = 256;
/// Bits of the hash that choose a register.
const REGISTER_BITS: u32 = 8;
/// Entries an index's opening samples (keys are short: a few hundred KiB at most).
pub(super) const OPEN_SAMPLE_ENTRIES: usize = 10_000;

/// One index's statistics (see the module doc).
pub(super) struct IndexStats {
    entries: AtomicU64,
    registers: Mutex<[u8; REGISTERS]>,
}

impl Default for IndexStats {
    fn default() -> Self {
        IndexStats {
            entries: AtomicU64::new(0),
            registers: Mutex::new([0; REGISTERS]),
        }
    }
}

fn hash(term: &[u8]) -> u64 {
    // SipHash with fixed keys: the same term hashes alike in every process.
    let mut h = std::hash::DefaultHasher::new();
    term.hash(&mut h);
    h.finish()
}

impl IndexStats {
    /// Counts entries of `terms` (one per entry, repeats included).
    pub(super) fn add<'t>(&self, terms: impl IntoIterator<Item = &'t [u8]>) {
        let mut registers = self.registers.lock();
        let mut n = 0;
        for term in terms {
            let h = hash(term);
            let register = (h >> (64 - REGISTER_BITS)) as usize;
            // The rank of the first set bit of the rest (1-based), capped by its width.
            let rest = h << REGISTER_BITS;
            let rank = (rest.leading_zeros().min(64 - REGISTER_BITS) + 1) as u8;
            if let Some(r) = registers.get_mut(register) {
                *r = (*r).max(rank);
            }
            n += 1;
        }
        drop(registers);
        self.entries.fetch_add(n, Ordering::Relaxed);
    }

    /// The estimated number of distinct terms seen.
    fn distinct(&self) -> f64 {
        let registers = self.registers.lock();
        let m = REGISTERS as f64;
        let sum: f64 = registers.iter().map(|r| 2f64.powi(-i32::from(*r))).sum();
        let zeros = registers.iter().filter(|r| **r == 0).count();
        let raw = 0.7213 / (1.0 + 1.079 / m) * m * m / sum;
        if raw <= 2.5 * m && zeros > 0 {
            // Few terms: linear counting is the better estimate.
            m * (m / zeros as f64).ln()
        } else {
            raw
        }
    }

    /// The mean entries per distinct term, `None` before any entry.
    pub(super) fn mean_rows_per_term(&self) -> Option<f64> {
        let entries = self.entries.load(Ordering::Relaxed);
        if entries == 0 {
            return None;
        }
        Some(entries as f64 / self.distinct().max(1.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn term(i: u32) -> Vec<u8> {
        i.to_be_bytes().to_vec()
    }

    /// The sketch counts distinct terms within its error, and the mean tells a
    /// low-cardinality index from a high-cardinality one.
    #[test]
    fn the_mean_follows_the_cardinality() {
        for (distinct, per_term) in [(1u32, 500u32), (3, 200), (50, 20), (2_000, 1), (20_000, 3)] {
            let stats = IndexStats::default();
            let terms: Vec<Vec<u8>> = (0..distinct).map(term).collect();
            for _ in 0..per_term {
                stats.add(terms.iter().map(Vec::as_slice));
            }
            let estimate = stats.distinct();
            let error = (estimate - f64::from(distinct)).abs() / f64::from(distinct);
            assert!(error < 0.2, "{distinct} terms estimated as {estimate}");
            let mean = stats.mean_rows_per_term().expect("entries");
            let relative = mean / f64::from(per_term);
            assert!(
                (0.8..1.25).contains(&relative),
                "{distinct} terms x {per_term}: mean {mean}"
            );
        }
        assert_eq!(IndexStats::default().mean_rows_per_term(), None);
    }
}
