//! The block cache: decoded data blocks shared by every table reader of an engine, bounded by
//! the bytes they hold.
//!
//! Blocks are keyed by `(cache_id, block offset)`, where the cache id is unique per table file
//! (the engine's table id), so a deleted table's blocks simply age out. Concurrency and
//! eviction (CLOCK-Pro style, scan resistant) come from `quick_cache`'s sharded cache.

use std::sync::Arc;

use quick_cache::sync::Cache;
use quick_cache::Weighter;

use super::block::Block;

/// `(cache_id, block offset)`.
type CacheKey = (u64, u64);

#[derive(Clone, Copy, Debug)]
struct BlockWeighter;

impl Weighter<CacheKey, Arc<Block>> for BlockWeighter {
    fn weight(&self, _key: &CacheKey, block: &Arc<Block>) -> u64 {
        block.charge_bytes()
    }
}

/// A concurrent cache of decoded blocks, bounded by bytes.
pub struct BlockCache {
    cache: Cache<CacheKey, Arc<Block>, BlockWeighter>,
    capacity_bytes: u64,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache")
            .field("capacity_bytes", &self.capacity_bytes)
            .field("usage_bytes", &self.usage_bytes())
            .field("blocks", &self.cache.len())
            .finish()
    }
}

/// The block size the item-count estimate assumes.
const TYPICAL_BLOCK_BYTES: u64 = 4096;

impl BlockCache {
    /// A cache holding at most `capacity_bytes` of blocks (their decoded size plus overhead).
    pub fn new(capacity_bytes: u64) -> Arc<Self> {
        let items = (capacity_bytes / TYPICAL_BLOCK_BYTES).clamp(16, 1 << 24) as usize;
        Arc::new(BlockCache {
            cache: Cache::with_weighter(items, capacity_bytes, BlockWeighter),
            capacity_bytes,
        })
    }

    /// Bytes currently charged to cached blocks.
    pub fn usage_bytes(&self) -> u64 {
        self.cache.weight()
    }

    /// The configured bound.
    pub fn capacity_bytes(&self) -> u64 {
        self.capacity_bytes
    }

    /// Blocks currently cached.
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Whether no block is cached.
    pub fn is_empty(&self) -> bool {
        self.cache.is_empty()
    }

    pub(crate) fn get(&self, cache_id: u64, offset: u64) -> Option<Arc<Block>> {
        self.cache.get(&(cache_id, offset))
    }

    pub(crate) fn insert(&self, cache_id: u64, offset: u64, block: Arc<Block>) {
        self.cache.insert((cache_id, offset), block);
    }
}
