//! SSTables: the engine's sorted, immutable on-disk tables, also used as a standalone
//! sorted-run format.
//!
//! Owns: the file format (data blocks with prefix-compressed keys and restart points, an
//! index block and a Bloom filter per table — or both partitioned behind small top-level
//! indexes —, caller-supplied properties, a checksummed footer — byte by byte in
//! `docs/format-sstable.md`), the [`TableWriter`] that produces it,
//! the [`TableReader`]/[`TableIter`] that read it, and the shared [`BlockCache`].
//!
//! Depends on: `mosaic-env` for files (so tests inject faults), the crate's key order,
//! errors and counters. Knows nothing of memtables, levels or the manifest: a table is
//! bytes in, bytes out, and the engine decides what the keys and properties mean.
//!
//! Every decoder of on-disk bytes here denies `clippy::indexing_slicing` and validates each
//! length, varint, offset and checksum against the real sizes: a damaged file yields a typed
//! error naming the file and offset, never a panic and never wrong data.
#![deny(clippy::indexing_slicing)]

mod block;
mod cache;
mod coding;
mod filter;
mod format;
mod index_cursor;
mod meta;
mod prefix_search;
mod reader;
mod tiered;
mod writer;

#[cfg(test)]
mod meta_tests;
#[cfg(test)]
mod partition_tests;
#[cfg(test)]
mod tests;

pub use cache::BlockCache;
pub use reader::{TableIter, TableReader};
pub use tiered::TieredFile;
pub use writer::{TableSummary, TableWriter};

use crate::key::KeyOrder;

/// How data blocks are compressed on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Compression {
    /// Stored as is.
    #[default]
    None,
    /// lz4 block compression, kept only when it saves at least 12.5%.
    Lz4,
}

/// How a [`TableWriter`] lays out a table.
#[derive(Clone, Debug)]
pub struct TableOptions {
    /// Target uncompressed size of a data block; a block is cut once it reaches this.
    pub block_size_bytes: usize,
    /// Entries between restart points (full keys) in a data block.
    pub restart_interval: usize,
    /// Bloom filter bits per distinct filter key; 0 writes no filter.
    pub bloom_bits_per_key: u32,
    /// Data block compression.
    pub compression: Compression,
    /// How keys are ordered (and which part of a key the filter covers).
    pub key_order: KeyOrder,
    /// The Bloom filter covers only the first this many bytes of each (user) key, 0 for
    /// the whole key: a *prefix filter*, so a scan confined to one prefix (a partition,
    /// whose keys share their token) skips tables that hold none of it.
    pub filter_prefix_bytes: usize,
    /// Split the index block and the Bloom filter into partitions of about this many bytes
    /// each, behind a small top-level index of each (RocksDB's two-level index with
    /// partitioned filters, `metadata_block_size`); 0 writes one index block and one filter
    /// per table. A table whose index and filter each fit in one partition is written
    /// unpartitioned.
    /// With index and filters in the block cache, a get then reads back a few KiB of
    /// metadata on a miss instead of the table's whole index and filter.
    pub index_partition_bytes: usize,
}

/// The part of filter key `key` a filter over `prefix_bytes`-byte prefixes holds (0: all of
/// it; a key shorter than the prefix is held whole).
pub fn filter_prefix(key: &[u8], prefix_bytes: usize) -> &[u8] {
    if prefix_bytes == 0 {
        key
    } else {
        key.get(..prefix_bytes).unwrap_or(key)
    }
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            block_size_bytes: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: Compression::None,
            key_order: KeyOrder::Internal,
            filter_prefix_bytes: 0,
            index_partition_bytes: 0,
        }
    }
}
