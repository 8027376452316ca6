//! The block cache: decoded blocks shared by every table reader of an engine, bounded by the
//! bytes they hold.
//!
//! It always holds data blocks. Built with [`BlockCache::with_metadata`] it also holds each
//! table's index block and Bloom filter (RocksDB's `cache_index_and_filter_blocks`): they
//! are then charged to the cache's capacity and evicted like data blocks, instead of being
//! pinned in their [`super::TableReader`] for the table's lifetime outside any budget.
//! Entries are decoded (a parsed index block, a filter's bits), so a hit costs no parsing.
//!
//! Entries are keyed by `(cache_id, block offset)`, where the cache id is unique per table
//! file (the engine's table id), so a deleted table's data blocks simply age out (its index
//! and filter are removed when its reader closes). Concurrency and eviction (CLOCK-Pro
//! style, scan resistant) come from `quick_cache`'s sharded cache.

use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use super::block::Block;
use super::filter::BloomFilter;

/// `(cache_id, block offset)`.
type CacheKey = (u64, u64);

/// A cached, decoded block of one of the kinds a table holds.
#[derive(Clone, Debug)]
pub(crate) enum Cached {
    /// A data block.
    Data(Arc<Block>),
    /// A table's index block.
    Index(Arc<Block>),
    /// A table's Bloom filter.
    Filter(Arc<BloomFilter>),
}

#[derive(Clone, Copy, Debug)]
struct BlockWeighter;

impl Weighter<CacheKey, Cached> for BlockWeighter {
    fn weight(&self, _key: &CacheKey, entry: &Cached) -> u64 {
        match entry {
            Cached::Data(block) | Cached::Index(block) => block.charge_bytes(),
            Cached::Filter(filter) => filter.charge_bytes(),
        }
    }
}

/// A concurrent cache of decoded blocks, bounded by bytes.
pub struct BlockCache {
    cache: Cache<CacheKey, Cached, BlockWeighter>,
    capacity_bytes: u64,
    holds_metadata: bool,
    /// Data blocks charged more than this are not inserted (0: no limit).
    max_block_bytes: u64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity_bytes", &self.capacity_bytes)
            .field("holds_metadata", &self.holds_metadata)
            .field("max_block_bytes", &self.max_block_bytes)
            .field("usage_bytes", &self.usage_bytes())
            .field("blocks", &self.cache.len())
            .finish()
    }
}

/// The block size the item-count estimate assumes.
const TYPICAL_BLOCK_BYTES: u64 = 4096;

impl BlockCache {
    /// A cache of data blocks holding at most `capacity_bytes` (their decoded size plus
    /// overhead); tables opened with it pin their index and filter.
    pub fn new(capacity_bytes: u64) -> Arc<Self> {
        Self::with_metadata(capacity_bytes, false)
    }

    /// A cache holding at most `capacity_bytes`; with `holds_metadata`, tables opened with
    /// it keep their index block and Bloom filter here too (see the module doc).
    pub fn with_metadata(capacity_bytes: u64, holds_metadata: bool) -> Arc<Self> {
        let items = (capacity_bytes / TYPICAL_BLOCK_BYTES).clamp(16, 1 << 24) as usize;
        Arc::new(BlockCache {
            cache: Cache::with_weighter(items, capacity_bytes, BlockWeighter),
            capacity_bytes,
            holds_metadata,
            max_block_bytes: 0,
        })
    }

    /// This cache, inserting data blocks charged at most `max_block_bytes` (0: any);
    /// larger ones are read past it (see `EngineOptions::block_cache_max_block_bytes`).
    pub fn admitting_up_to(self: Arc<Self>, max_block_bytes: u64) -> Arc<Self> {
        match Arc::try_unwrap(self) {
            Ok(mut cache) => {
                cache.max_block_bytes = max_block_bytes;
                Arc::new(cache)
            }
            // Shared already: its limit stays.
            Err(shared) => shared,
        }
    }

    /// Whether a data block charged `charge_bytes` is inserted when read.
    pub(crate) fn admits_data(&self, charge_bytes: u64) -> bool {
        self.max_block_bytes == 0 || charge_bytes <= self.max_block_bytes
    }

    /// Bytes currently charged to cached blocks.
    pub fn usage_bytes(&self) -> u64 {
        self.cache.weight()
    }

    /// The configured bound.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Whether tables keep their index and filter blocks here rather than pinned.
    pub fn holds_metadata(&self) -> bool {
        self.holds_metadata
    }

    /// Blocks currently cached.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether no block is cached.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }

    /// Drops every cached block, so the next reads start cold (for measurements and
    /// tests; tables whose metadata lives here read it back on their next use).
    pub fn clear(&self) {
        self.cache.clear();
    }

    pub(crate) fn get(&self, cache_id: u64, offset: u64) -> Option<Cached> {
        self.cache.get(&(cache_id, offset))
    }

    pub(crate) fn insert(&self, cache_id: u64, offset: u64, entry: Cached) {
        self.cache.insert((cache_id, offset), entry);
    }

    /// The entry at `(cache_id, offset)`, or the one `load` produces, inserted. Concurrent
    /// callers missing the same key wait for one load instead of each reading the block.
    pub(crate) fn get_or_load<E>(
        &self,
        cache_id: u64,
        offset: u64,
        load: impl FnOnce() -> Result<Cached, E>,
    ) -> Result<Cached, E> {
        self.cache.get_or_insert_with(&(cache_id, offset), load)
    }

    pub(crate) fn remove(&self, cache_id: u64, offset: u64) {
        self.cache.remove(&(cache_id, offset));
    }
}
