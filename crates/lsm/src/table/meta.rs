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
//!
//! A table written with `TableOptions::index_partition_bytes` has a **partitioned** index
//! and filter (RocksDB's two-level index and partitioned filters): the footer's index and
//! filter handles point at small top-level blocks, `separator → index partition` and
//! `last filter key → filter partition`, which the reader always holds; the partitions,
//! a few KiB each, are pinned or cached as above. A cached table's get then reads back one
//! index partition and one filter partition on a miss, not the table's whole index and
//! filter — what makes `cache_index_and_filter_blocks` affordable with large tables and a
//! small cache.
#![deny(clippy::indexing_slicing)]

use std::path::Path;
use std::sync::Arc;

use super::block::Block;
use super::cache::{BlockCache, Cached};
use super::filter::BloomFilter;
use super::format::{read_block, BlockHandle, BLOCK_TRAILER_LEN};
use super::reader::TableReader;
use crate::error::{Error, Result};
use crate::key::{KeyOrder, SeekOrder};
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
    /// A two-level index and partitioned filter.
    Partitioned {
        /// `separator of the partition's last block → index partition handle`.
        top_index: Arc<Block>,
        /// `last filter key of the partition (whole) → filter partition handle`, in
        /// bytewise order; `None`: the table has no filter.
        top_filter: Option<Arc<Block>>,
        parts: Parts,
    },
}

/// Where a partitioned table's partitions live.
pub(super) enum Parts {
    /// Read at open and held for the table's lifetime, sorted by offset.
    Pinned(Vec<(u64, Cached)>),
    /// In this cache, keyed by their offsets.
    Cached(Arc<BlockCache>),
}

/// The partition handles a top-level block at `offset` of `path` lists, in order.
pub(super) fn partition_handles(
    path: &Path,
    offset: u64,
    top: &Arc<Block>,
) -> Result<Vec<BlockHandle>> {
    let corrupt =
        |reason: &str| Error::corruption(path, offset, format!("top-level index: {reason}"));
    (0..top.index_len())
        .map(|i| {
            let (_, value) = top.restart_entry(i).map_err(corrupt)?;
            BlockHandle::decode_varint(value)
                .ok_or_else(|| corrupt("entry value is not a block handle"))
        })
        .collect()
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
        index_order: SeekOrder,
    ) -> Metadata {
        match cache {
            Some(cache) if cache.holds_metadata() => {
                cache.insert(cache_id, index_offset, Cached::Index(Arc::new(index)));
                if let Some((offset, filter)) = filter {
                    cache.insert(cache_id, offset, Cached::Filter(Arc::new(filter)));
                }
                Metadata::Cached(Arc::clone(cache))
            }
            // Held for the table's life: worth its search aid.
            _ => Metadata::Pinned {
                index: Arc::new(index.with_prefix_search(index_order)),
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
    /// `fill_cache` false, leaves a block it had to read out of the cache). A partitioned
    /// table has none: its iterators walk the top-level index and the partitions.
    pub(super) fn index_block(&self, purpose: ReadPurpose, fill_cache: bool) -> Result<Arc<Block>> {
        let cache = match &self.meta {
            Metadata::Pinned { index, .. } => return Ok(Arc::clone(index)),
            Metadata::Partitioned { .. } => {
                return Err(self.index_error("a partitioned table has no single index block"));
            }
            Metadata::Cached(cache) => cache,
        };
        self.cached_index(cache, self.footer.index, purpose, fill_cache)
    }

    /// The index partition at `handle` (from a top-level index entry).
    pub(super) fn index_partition(
        &self,
        handle: BlockHandle,
        purpose: ReadPurpose,
        fill_cache: bool,
    ) -> Result<Arc<Block>> {
        match &self.meta {
            Metadata::Partitioned {
                parts: Parts::Cached(cache),
                ..
            } => self.cached_index(cache, handle, purpose, fill_cache),
            Metadata::Partitioned {
                parts: Parts::Pinned(parts),
                ..
            } => match pinned_part(parts, handle.offset) {
                Some(Cached::Index(block)) => Ok(Arc::clone(block)),
                _ => Err(self.no_partition(handle, "index")),
            },
            _ => Err(self.no_partition(handle, "index")),
        }
    }

    /// The error for a top-level entry naming no partition of the right kind.
    fn no_partition(&self, handle: BlockHandle, kind: &str) -> Error {
        Error::corruption(
            &self.path,
            handle.offset,
            format!(
                "top-level {kind} index names no {kind} partition at offset {}",
                handle.offset
            ),
        )
    }

    /// The index block at `handle`, from `cache` or read back.
    fn cached_index(
        &self,
        cache: &BlockCache,
        handle: BlockHandle,
        purpose: ReadPurpose,
        fill_cache: bool,
    ) -> Result<Arc<Block>> {
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

    /// Bloom probe on a filter key (`key_order().filter_key(key)`) for a read of `purpose`,
    /// through the filter that answers for it: the table's, or a partitioned table's
    /// partition whose keys would hold it. `true` if the table has no filter; `false` means
    /// no key of the table has this filter key (for a partitioned table also: every key
    /// sorts before it). Fails only if the filter lives in the block cache, missed, and
    /// could not be read back (an I/O error, or a damaged block).
    pub fn may_contain(&self, filter_key: &[u8], purpose: ReadPurpose) -> Result<bool> {
        let (handle, cache) = match &self.meta {
            // Borrowed, not cloned: no shared reference count touched per probe.
            Metadata::Pinned { filter, .. } => {
                return Ok(filter.as_ref().is_none_or(|f| f.may_contain(filter_key)))
            }
            Metadata::Cached(cache) => {
                if self.footer.filter.size == 0 {
                    return Ok(true);
                }
                (self.footer.filter, cache)
            }
            Metadata::Partitioned {
                top_filter, parts, ..
            } => {
                let Some(top) = top_filter else {
                    return Ok(true);
                };
                // The first partition whose last key is at or past `filter_key`: if the
                // table holds a key with this filter key, that partition holds one (a key
                // between the filter key and a key that starts with it starts with it too).
                let corrupt = |reason: &str| {
                    Error::corruption(
                        &self.path,
                        self.footer.filter.offset,
                        format!("top-level filter index: {reason}"),
                    )
                };
                let Some(value) = top
                    .value_at_or_after(filter_key, KeyOrder::Bytewise)
                    .map_err(corrupt)?
                else {
                    return Ok(false);
                };
                let handle = BlockHandle::decode_varint(value)
                    .ok_or_else(|| corrupt("entry value is not a block handle"))?;
                match parts {
                    Parts::Cached(cache) => (handle, cache),
                    Parts::Pinned(parts) => {
                        return match pinned_part(parts, handle.offset) {
                            Some(Cached::Filter(filter)) => Ok(filter.may_contain(filter_key)),
                            _ => Err(self.no_partition(handle, "filter")),
                        };
                    }
                }
            }
        };
        let load = || -> Result<Cached> {
            let raw = self.read_meta_block(handle, purpose, BlockKind::Filter)?;
            Ok(Cached::Filter(Arc::new(decode_filter(
                &self.path,
                handle.offset,
                raw,
            )?)))
        };
        match self.cached_meta(cache, handle, purpose != ReadPurpose::Compaction, load)? {
            Cached::Filter(filter) => Ok(filter.may_contain(filter_key)),
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

/// The pinned partition at `offset`.
fn pinned_part(parts: &[(u64, Cached)], offset: u64) -> Option<&Cached> {
    let i = parts.binary_search_by_key(&offset, |(o, _)| *o).ok()?;
    parts.get(i).map(|(_, part)| part)
}

impl Drop for TableReader {
    /// A closed table's index and filter (or partitions) leave the cache at once (its data
    /// blocks age out).
    fn drop(&mut self) {
        match &self.meta {
            Metadata::Cached(cache) => {
                cache.remove(self.cache_id, self.footer.index.offset);
                if self.footer.filter.size > 0 {
                    cache.remove(self.cache_id, self.footer.filter.offset);
                }
            }
            Metadata::Partitioned {
                top_index,
                top_filter,
                parts: Parts::Cached(cache),
            } => {
                let tops = [
                    Some((self.footer.index.offset, top_index)),
                    top_filter.as_ref().map(|t| (self.footer.filter.offset, t)),
                ];
                for (offset, top) in tops.into_iter().flatten() {
                    // Read at open, so it decodes; a damaged one leaves its partitions to age out.
                    for handle in partition_handles(&self.path, offset, top).unwrap_or_default() {
                        cache.remove(self.cache_id, handle.offset);
                    }
                }
            }
            _ => {}
        }
    }
}
