//! A table's index block and Bloom filter: where they live and how a reader gets them.
//!
//! Either **pinned** — decoded at open and held by the [`TableReader`] for the table's
//! lifetime, outside every memory budget (the default, as in RocksDB and Cassandra) — or
//! **cached** — in the node's [`BlockCache`] when it was built to hold metadata
//! ([`BlockCache::with_metadata`], RocksDB's `cache_index_and_filter_blocks`): charged to
//! its capacity, evicted like data blocks, and on a miss read back from the file, verified
//! by its checksum and decoded exactly as at open. Two readers missing the same block wait
//! for one read. With no block cache at all, metadata is pinned: reading the index and
//! filter on every use would multiply a get's I/O with nothing to bound in return.
#![deny(clippy::indexing_slicing)]

use std::path::Path;
use std::sync::Arc;

use super::block::Block;
use super::cache::{BlockCache, Cached};
use super::filter::BloomFilter;
use super::format::{read_block, BlockHandle, BLOCK_TRAILER_LEN};
use super::reader::TableReader;
use crate::error::{Error, Result};
use crate::stats::{BlockKind, Counters, ReadPurpose};

/// Where a table's index and filter live.
pub(super) enum Metadata {
    /// Decoded at open, held for the table's lifetime.
    Pinned {
        index: Arc<Block>,
        /// `None`: the table has no filter.
        filter: Option<Arc<BloomFilter>>,
    },
    /// In this cache, keyed by the blocks' offsets.
    Cached(Arc<BlockCache>),
}

impl Metadata {
    /// Places the index and filter decoded at open: pinned, or inserted into `cache` if it
    /// holds metadata (so the first reads after open hit, as RocksDB's
    /// `prefetch_index_and_filter_in_cache`).
    pub(super) fn place(
        cache: Option<&Arc<BlockCache>>,
        cache_id: u64,
        (index_offset, index): (u64, Block),
        filter: Option<(u64, BloomFilter)>,
    ) -> Metadata {
        match cache {
            Some(cache) if cache.holds_metadata() => {
                cache.insert(cache_id, index_offset, Cached::Index(Arc::new(index)));
                if let Some((offset, filter)) = filter {
                    cache.insert(cache_id, offset, Cached::Filter(Arc::new(filter)));
                }
                Metadata::Cached(Arc::clone(cache))
            }
            _ => Metadata::Pinned {
                index: Arc::new(index),
                filter: filter.map(|(_, f)| Arc::new(f)),
            },
        }
    }
}

/// Parses the (checksummed) contents of the index block at `offset` of file `path`.
pub(super) fn decode_index(path: &Path, offset: u64, raw: Vec<u8>) -> Result<Block> {
    Block::new(raw)
        .map_err(|reason| Error::corruption(path, offset, format!("index block: {reason}")))
}

/// Validates the (checksummed) contents of the filter block at `offset` of file `path`.
pub(super) fn decode_filter(path: &Path, offset: u64, raw: Vec<u8>) -> Result<BloomFilter> {
    BloomFilter::decode(raw)
        .map_err(|reason| Error::corruption(path, offset, format!("filter block: {reason}")))
}

impl TableReader {
    /// The table's index block, for an iterator reading for `purpose` (which, with
    /// `fill_cache` false, leaves a block it had to read out of the cache).
    pub(super) fn index_block(&self, purpose: ReadPurpose, fill_cache: bool) -> Result<Arc<Block>> {
        let cache = match &self.meta {
            Metadata::Pinned { index, .. } => return Ok(Arc::clone(index)),
            Metadata::Cached(cache) => cache,
        };
        let handle = self.footer.index;
        let load = || -> Result<Cached> {
            let raw = self.read_meta_block(handle, purpose, BlockKind::Index)?;
            Ok(Cached::Index(Arc::new(decode_index(
                &self.path,
                handle.offset,
                raw,
            )?)))
        };
        match self.cached_meta(cache, handle, fill_cache, load)? {
            Cached::Index(block) => Ok(block),
            _ => Err(self.index_error("a cached block of another kind at the index's offset")),
        }
    }

    /// The table's Bloom filter (`None` if it was written without one).
    pub(super) fn filter_block(&self, purpose: ReadPurpose) -> Result<Option<Arc<BloomFilter>>> {
        let cache = match &self.meta {
            Metadata::Pinned { filter, .. } => return Ok(filter.clone()),
            Metadata::Cached(cache) => cache,
        };
        let handle = self.footer.filter;
        if handle.size == 0 {
            return Ok(None);
        }
        let load = || -> Result<Cached> {
            let raw = self.read_meta_block(handle, purpose, BlockKind::Filter)?;
            Ok(Cached::Filter(Arc::new(decode_filter(
                &self.path,
                handle.offset,
                raw,
            )?)))
        };
        match self.cached_meta(cache, handle, purpose != ReadPurpose::Compaction, load)? {
            Cached::Filter(filter) => Ok(Some(filter)),
            _ => Err(Error::corruption(
                &self.path,
                handle.offset,
                "filter block: a cached block of another kind at the filter's offset",
            )),
        }
    }

    /// The metadata block at `handle` from `cache`, or loaded (and, with `fill_cache`,
    /// inserted once however many readers miss it together).
    fn cached_meta(
        &self,
        cache: &BlockCache,
        handle: BlockHandle,
        fill_cache: bool,
        load: impl FnOnce() -> Result<Cached>,
    ) -> Result<Cached> {
        if let Some(entry) = cache.get(self.cache_id, handle.offset) {
            Counters::inc(&self.counters.block_cache_hits);
            return Ok(entry);
        }
        Counters::inc(&self.counters.block_cache_misses);
        if fill_cache {
            cache.get_or_load(self.cache_id, handle.offset, load)
        } else {
            load()
        }
    }

    /// Reads one metadata block from the file (checksummed unless the reader skips
    /// checksums), counting it as a read of `kind` for `purpose`.
    fn read_meta_block(
        &self,
        handle: BlockHandle,
        purpose: ReadPurpose,
        kind: BlockKind,
    ) -> Result<Vec<u8>> {
        let raw = read_block(&*self.file, &self.path, handle, self.verify_checksums);
        let bytes = handle.size.saturating_add(BLOCK_TRAILER_LEN as u64);
        self.counters.add_block_read(purpose, kind, bytes);
        raw
    }
}

impl Drop for TableReader {
    /// A closed table's index and filter leave the cache at once (its data blocks age out).
    fn drop(&mut self) {
        if let Metadata::Cached(cache) = &self.meta {
            cache.remove(self.cache_id, self.footer.index.offset);
            if self.footer.filter.size > 0 {
                cache.remove(self.cache_id, self.footer.filter.offset);
            }
        }
    }
}
