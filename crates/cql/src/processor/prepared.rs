//! The prepared-statement cache, bounded in bytes (Cassandra's
//! `prepared_statements_cache_size`): past its budget the entries used least lately are
//! evicted (`quick_cache`'s CLOCK-Pro, which also resists a scan of one-off statements),
//! and an EXECUTE of an evicted id answers Unprepared so the driver prepares it again.
//!
//! An entry's size is estimated, not measured: its statement text (which the parsed
//! statement's identifiers and literals copy) counted [`TEXT_WEIGHT`] times, plus a fixed
//! [`ENTRY_OVERHEAD_BYTES`] for the syntax tree's nodes and the cache's bookkeeping.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::{DefaultHashBuilder, Lifecycle, OptionsBuilder, Weighter};

use crate::ast::Statement;

/// Bytes of an entry counted beyond its text.
pub(crate) const ENTRY_OVERHEAD_BYTES: u64 = 1024;
/// How many times an entry's text is counted.
pub(crate) const TEXT_WEIGHT: u64 = 4;

/// A prepared statement: the parsed statement and the keyspace it was prepared in.
#[derive(Clone, Debug)]
struct Entry {
    statement: Arc<Statement>,
    keyspace: Option<String>,
    /// Its estimated size in bytes.
    weight: u64,
}

#[derive(Clone)]
struct EntryWeighter;

impl Weighter<[u8; 16], Entry> for EntryWeighter {
    fn weight(&self, _id: &[u8; 16], entry: &Entry) -> u64 {
        entry.weight
    }
}

/// Counts evictions.
#[derive(Clone, Default)]
struct Evictions(Arc<AtomicU64>);

impl Lifecycle<[u8; 16], Entry> for Evictions {
    type RequestState = ();

    fn begin_request(&self) -> Self::RequestState {}

    fn on_evict(&self, _state: &mut (), _id: [u8; 16], _entry: Entry) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// What the prepared-statement cache holds and did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PreparedCacheStats {
    /// Statements held.
    pub entries: u64,
    /// Their estimated bytes.
    pub bytes: u64,
    /// The budget.
    pub capacity_bytes: u64,
    /// Statements evicted to stay within it (or too large to be held at all).
    pub evictions: u64,
}

/// The node's prepared statements, by id.
pub(crate) struct PreparedCache {
    entries: Cache<[u8; 16], Entry, EntryWeighter, DefaultHashBuilder, Evictions>,
    evictions: Evictions,
}

impl PreparedCache {
    /// A cache of at most `capacity_bytes` (estimated).
    pub(crate) fn new(capacity_bytes: u64) -> PreparedCache {
        let evictions = Evictions::default();
        // One shard: an entry may then take the whole budget (a shard's share would turn
        // a large statement away for good), and PREPARE and EXECUTE take the lock only to
        // look an id up.
        let options = OptionsBuilder::new()
            .shards(1)
            .estimated_items_capacity(
                (capacity_bytes / (ENTRY_OVERHEAD_BYTES * 2)).clamp(16, 1 << 20) as usize,
            )
            .weight_capacity(capacity_bytes.max(1))
            .build();
        let entries = match options {
            Ok(options) => Cache::with_options(
                options,
                EntryWeighter,
                DefaultHashBuilder::default(),
                evictions.clone(),
            ),
            // The options above are always valid; fall back to the plain constructor.
            Err(_) => Cache::with(
                1024,
                capacity_bytes.max(1),
                EntryWeighter,
                DefaultHashBuilder::default(),
                evictions.clone(),
            ),
        };
        PreparedCache { entries, evictions }
    }

    /// The estimated size of an entry of `text` (the weight the cache counts).
    pub(crate) fn weight_of(text: &str) -> u64 {
        (text.len() as u64)
            .saturating_mul(TEXT_WEIGHT)
            .saturating_add(ENTRY_OVERHEAD_BYTES)
    }

    /// The statement of `id` and the keyspace it was prepared in, marking it used.
    pub(crate) fn get(&self, id: &[u8]) -> Option<(Arc<Statement>, Option<String>)> {
        let key: [u8; 16] = id.try_into().ok()?;
        let entry = self.entries.get(&key)?;
        Some((entry.statement, entry.keyspace))
    }

    /// Whether a statement of `text` can be held at all (its estimate within the budget).
    pub(crate) fn fits(&self, text: &str) -> bool {
        Self::weight_of(text) <= self.entries.capacity()
    }

    /// Remembers `statement` (of `text`) under `id`, evicting others past the budget.
    pub(crate) fn insert(
        &self,
        id: [u8; 16],
        text: &str,
        statement: Arc<Statement>,
        keyspace: Option<String>,
    ) {
        let entry = Entry {
            statement,
            keyspace,
            weight: Self::weight_of(text),
        };
        self.entries.insert(id, entry);
    }

    /// What the cache holds and did.
    pub(crate) fn stats(&self) -> PreparedCacheStats {
        PreparedCacheStats {
            entries: self.entries.len() as u64,
            bytes: self.entries.weight(),
            capacity_bytes: self.entries.capacity(),
            evictions: self.evictions.0.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn statement() -> Arc<Statement> {
        Arc::new(crate::parse::parse_statement("SELECT * FROM t").unwrap())
    }

    #[test]
    fn the_cache_stays_within_its_bytes_and_counts_what_it_evicts() {
        let text = "x".repeat(1000); // 5,024 bytes each
        let cache = PreparedCache::new(64 << 10);
        for i in 0..100u8 {
            cache.insert([i; 16], &text, statement(), None);
        }
        let stats = cache.stats();
        assert!(stats.bytes <= 64 << 10, "{stats:?}");
        assert!(stats.entries <= 13, "{stats:?}");
        assert!(stats.evictions >= 87, "{stats:?}");
        // The newest is held; an evicted id is gone.
        assert!(cache.get(&[99; 16]).is_some());
        assert!((0..100u8).any(|i| cache.get(&[i; 16]).is_none()));
        assert!(
            cache.get(&[1, 2, 3]).is_none(),
            "a malformed id is simply unknown"
        );
        assert!(cache.fits(&text));
        assert!(!cache.fits(&"y".repeat(64 << 10)));
    }
}
