//! Writing a table: sorted entries in, one immutable file out.
//!
//! Entries fill a data block until it reaches the target size; the block is then (optionally)
//! lz4-compressed, given its trailer and written with a single `append` (the file is
//! unbuffered), and an index entry `last key → handle` is recorded. `finish` writes the
//! filter, index and properties blocks and the footer, then syncs. Buffers are reused across
//! blocks, so the steady state allocates nothing per entry.
#![deny(clippy::indexing_slicing)]

use std::cmp::Ordering;
use std::path::PathBuf;

use mosaic_env::{BufferedWritable, WritableFile};

use super::block::BlockBuilder;
use super::filter::FilterBuilder;
use super::format::{
    append_trailer, BlockHandle, Footer, BLOCK_SIZE_MAX, BLOCK_TYPE_LZ4, BLOCK_TYPE_NONE,
};
use super::{Compression, TableOptions};
use crate::error::{Error, Result};
use crate::key::{user_key, KeyOrder, SEPARATOR_MARK, TRAILER_LEN};

/// Restart interval of the index block: every entry is a restart, so a seek in the index is
/// a pure binary search.
const INDEX_RESTART_INTERVAL: usize = 1;
/// Bytes a table writer gathers before handing them to the file: one `write` per 64 blocks
/// of 4 KiB instead of one or two per block.
const WRITE_BUFFER_BYTES: usize = 256 << 10;
/// The largest key + value accepted, so a block always stays below [`BLOCK_SIZE_MAX`].
const ENTRY_BYTES_MAX: usize = BLOCK_SIZE_MAX / 2;
/// Worst-case entry header: three varint32s.
const ENTRY_HEADER_MAX: usize = 15;
/// An entry may start a restart point, adding one u32 to the block.
const RESTART_LEN: usize = 4;

/// What a finished table holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableSummary {
    /// The file's size.
    pub size_bytes: u64,
    /// Entries written.
    pub entries: u64,
    /// Data blocks written.
    pub data_blocks: u64,
    /// The first key (empty if there are no entries).
    pub smallest_key: Vec<u8>,
    /// The last key (empty if there are no entries).
    pub largest_key: Vec<u8>,
}

/// Writes one table file from entries added in strictly increasing key order.
pub struct TableWriter {
    file: Box<dyn WritableFile>,
    path: PathBuf,
    opts: TableOptions,
    data: BlockBuilder,
    index: BlockBuilder,
    filter: Option<FilterBuilder>,
    smallest_key: Vec<u8>,
    last_key: Vec<u8>,
    entries: u64,
    data_blocks: u64,
    /// Bytes appended to the file so far.
    offset: u64,
    compress_buf: Vec<u8>,
    handle_buf: Vec<u8>,
    separator_buf: Vec<u8>,
    /// The last written data block, whose index entry waits for the next key so its
    /// separator can be shortened.
    pending_index: Option<BlockHandle>,
    /// Set after a failed append: the file's contents are unknown, so nothing more is written.
    failed: Option<String>,
    /// Finished index partitions, written at `finish`: (the separator of the partition's
    /// last block, the partition's block contents). Empty unless the index was partitioned.
    index_parts: Vec<(Vec<u8>, Vec<u8>)>,
    /// Finished filter partitions: (the last filter key of the partition, whole,
    /// not cut to a prefix; the filter's contents).
    filter_parts: Vec<(Vec<u8>, Vec<u8>)>,
    /// Index separators of internal keys are marked user keys where they can be (always,
    /// but for tests that write the older format).
    marked_separators: bool,
}

impl std::fmt::Debug for TableWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableWriter")
            .field("path", &self.path)
            .field("entries", &self.entries)
            .field("offset", &self.offset)
            .finish_non_exhaustive()
    }
}

impl TableWriter {
    /// A writer appending to `file` (named `path` in errors).
    pub fn new(file: Box<dyn WritableFile>, path: PathBuf, opts: TableOptions) -> Self {
        let file: Box<dyn WritableFile> = Box::new(BufferedWritable::new(file, WRITE_BUFFER_BYTES));
        let mut opts = opts;
        opts.block_size_bytes = opts.block_size_bytes.clamp(1, ENTRY_BYTES_MAX);
        opts.restart_interval = opts.restart_interval.max(1);
        let offset = file.len();
        let marked_separators = opts.key_order == KeyOrder::Internal;
        TableWriter {
            data: BlockBuilder::new(opts.restart_interval),
            index: BlockBuilder::new(INDEX_RESTART_INTERVAL),
            filter: (opts.bloom_bits_per_key > 0)
                .then(|| FilterBuilder::new(opts.bloom_bits_per_key)),
            file,
            path,
            opts,
            smallest_key: Vec::new(),
            last_key: Vec::new(),
            entries: 0,
            data_blocks: 0,
            offset,
            compress_buf: Vec::new(),
            handle_buf: Vec::new(),
            separator_buf: Vec::new(),
            pending_index: None,
            failed: None,
            index_parts: Vec::new(),
            filter_parts: Vec::new(),
            marked_separators,
        }
    }

    /// Writes internal-key separators only, as builds before marked separators did.
    #[cfg(test)]
    pub(crate) fn with_unmarked_separators(mut self) -> Self {
        self.marked_separators = false;
        self
    }

    /// Adds an entry. Keys must be strictly increasing in the table's key order.
    pub fn add(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.check_not_failed()?;
        let order = self.opts.key_order;
        if self.entries > 0 && order.compare(key, &self.last_key) != Ordering::Greater {
            return Err(Error::InvalidArgument(format!(
                "table keys out of order in {}: {:?} does not follow {:?}",
                self.path.display(),
                key.escape_ascii().to_string(),
                self.last_key.escape_ascii().to_string(),
            )));
        }
        let entry_len = key.len().saturating_add(value.len());
        if entry_len > ENTRY_BYTES_MAX {
            return Err(Error::InvalidArgument(format!(
                "table entry of {entry_len} bytes exceeds the {ENTRY_BYTES_MAX}-byte limit"
            )));
        }
        // An entry of a block's size or more starts a block of its own: appended to the
        // small entries before it, every read of one of them would read it too (a 1 KiB
        // row beside a 1 MiB one cost a 1 MiB read).
        if !self.data.is_empty()
            && (entry_len >= self.opts.block_size_bytes
                || self.data.size_estimate() + entry_len + ENTRY_HEADER_MAX + RESTART_LEN
                    > BLOCK_SIZE_MAX)
        {
            self.flush_data_block()?;
        }
        if let Some(handle) = self.pending_index.take() {
            self.add_index_entry(Some(key), handle);
        }
        if self.entries == 0 {
            self.smallest_key.extend_from_slice(key);
        }
        if let Some(filter) = &mut self.filter {
            let fk = order.filter_key(key);
            filter.add(super::filter_prefix(fk, self.opts.filter_prefix_bytes));
        }
        self.data.add(key, value);
        self.last_key.clear();
        self.last_key.extend_from_slice(key);
        self.entries += 1;
        if self.data.size_estimate() >= self.opts.block_size_bytes {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// Entries added so far.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// Bytes written so far plus the pending data block.
    pub fn estimated_size_bytes(&self) -> u64 {
        let pending = if self.data.is_empty() {
            0
        } else {
            self.data.size_estimate() as u64
        };
        self.offset + pending
    }

    /// Writes the last data block, the filter, index and properties blocks (`properties` are
    /// the caller's opaque bytes) and the footer, then syncs the file.
    pub fn finish(mut self, properties: &[u8]) -> Result<TableSummary> {
        self.check_not_failed()?;
        if !self.data.is_empty() {
            self.flush_data_block()?;
        }
        if let Some(handle) = self.pending_index.take() {
            self.add_index_entry(None, handle);
        }
        let partitioned = !self.index_parts.is_empty() || !self.filter_parts.is_empty();
        let mut meta = std::mem::take(&mut self.compress_buf);
        let (filter, index) = if partitioned {
            // The rest of the index and of the filter are their last partitions (never
            // empty: the last block's index entry and filter keys cut nothing).
            self.cut_index_partition();
            self.cut_filter_partition();
            self.write_partitions()?
        } else {
            let filter = match &self.filter {
                Some(f) if f.len() > 0 => {
                    meta.clear();
                    f.finish_into(&mut meta);
                    self.write_raw_block(&mut meta)?
                }
                _ => BlockHandle::default(),
            };
            let index = self.write_index_block()?;
            (filter, index)
        };
        meta.clear();
        meta.extend_from_slice(properties);
        let props = self.write_raw_block(&mut meta)?;
        let footer = Footer {
            index,
            filter,
            properties: props,
            entries: self.entries,
            data_blocks: self.data_blocks,
            key_order: self.opts.key_order,
            partitioned,
            marked_separators: self.marked_separators,
        }
        .encode();
        write_all(&mut *self.file, &self.path, &footer, &mut self.failed)?;
        self.offset += footer.len() as u64;
        self.file
            .sync_data()
            .map_err(|e| Error::io("syncing", &self.path, e))?;
        Ok(TableSummary {
            size_bytes: self.offset,
            entries: self.entries,
            data_blocks: self.data_blocks,
            smallest_key: self.smallest_key,
            largest_key: if self.entries > 0 {
                self.last_key
            } else {
                Vec::new()
            },
        })
    }

    fn check_not_failed(&self) -> Result<()> {
        match &self.failed {
            Some(cause) => Err(Error::Poisoned {
                cause: format!(
                    "an earlier write to {} failed: {cause}",
                    self.path.display()
                ),
            }),
            None => Ok(()),
        }
    }

    /// Adds a trailer to the uncompressed block contents in `buf` and writes them.
    fn write_raw_block(&mut self, buf: &mut Vec<u8>) -> Result<BlockHandle> {
        let handle = BlockHandle {
            offset: self.offset,
            size: buf.len() as u64,
        };
        append_trailer(buf, BLOCK_TYPE_NONE);
        write_all(&mut *self.file, &self.path, buf, &mut self.failed)?;
        self.offset += buf.len() as u64;
        Ok(handle)
    }

    /// Writes the index block under construction (the whole index, or a top-level one).
    fn write_index_block(&mut self) -> Result<BlockHandle> {
        let mut buf = std::mem::take(self.index.finish_mut());
        self.index.reset();
        self.write_raw_block(&mut buf)
    }

    /// Ends the current index partition after the entry just added.
    fn cut_index_partition(&mut self) {
        let contents = self.index.finish_mut().clone();
        self.index.reset();
        self.index_parts
            .push((self.separator_buf.clone(), contents));
    }

    /// Ends the current filter partition after the last data block written: it holds the
    /// filter keys of the data blocks since the previous cut.
    fn cut_filter_partition(&mut self) {
        if let Some(filter) = &mut self.filter {
            let mut bits = Vec::new();
            filter.finish_into(&mut bits);
            filter.clear();
            let last = self.opts.key_order.filter_key(&self.last_key).to_vec();
            self.filter_parts.push((last, bits));
        }
    }

    /// Writes the filter partitions and the top-level filter index, then the index
    /// partitions and the top-level index; returns the top-levels' handles (filter —
    /// the default, empty handle when there is no filter — and index) for the footer.
    fn write_partitions(&mut self) -> Result<(BlockHandle, BlockHandle)> {
        let filter_parts = std::mem::take(&mut self.filter_parts);
        let filter = self.write_top_level(filter_parts)?.unwrap_or_default();
        let index_parts = std::mem::take(&mut self.index_parts);
        let index = self.write_top_level(index_parts)?.unwrap_or_default();
        Ok((filter, index))
    }

    /// Writes each `(key, contents)` partition, then a top-level block `key → partition
    /// handle` over them; `None` (nothing written) when there are no partitions.
    fn write_top_level(&mut self, parts: Vec<(Vec<u8>, Vec<u8>)>) -> Result<Option<BlockHandle>> {
        if parts.is_empty() {
            return Ok(None);
        }
        let mut top = BlockBuilder::new(INDEX_RESTART_INTERVAL);
        for (key, mut contents) in parts {
            let handle = self.write_raw_block(&mut contents)?;
            self.handle_buf.clear();
            handle.encode_varint_to(&mut self.handle_buf);
            top.add(&key, &self.handle_buf);
        }
        self.write_raw_block(top.finish_mut()).map(Some)
    }

    fn flush_data_block(&mut self) -> Result<()> {
        debug_assert!(!self.data.is_empty());
        let raw = self.data.finish_mut();
        let raw_len = raw.len();
        let mut use_lz4 = false;
        if self.opts.compression == Compression::Lz4 {
            let out = &mut self.compress_buf;
            out.clear();
            out.extend_from_slice(&(raw_len as u32).to_le_bytes());
            out.resize(4 + lz4_flex::block::get_maximum_output_size(raw_len), 0);
            if let Some(dst) = out.get_mut(4..) {
                if let Ok(n) = lz4_flex::block::compress_into(raw, dst) {
                    out.truncate(4 + n);
                    // Keep the block uncompressed unless lz4 saves at least 12.5%.
                    use_lz4 = out.len() <= raw_len - raw_len / 8;
                }
            }
        }
        let buf = if use_lz4 {
            append_trailer(&mut self.compress_buf, BLOCK_TYPE_LZ4);
            &self.compress_buf
        } else {
            append_trailer(raw, BLOCK_TYPE_NONE);
            &*raw
        };
        let handle = BlockHandle {
            offset: self.offset,
            size: (buf.len() - super::format::BLOCK_TRAILER_LEN) as u64,
        };
        write_all(&mut *self.file, &self.path, buf, &mut self.failed)?;
        self.offset += buf.len() as u64;
        self.data_blocks += 1;
        self.data.reset();
        self.pending_index = Some(handle);
        Ok(())
    }

    /// Indexes the data block at `handle`, whose last key is `last_key`, with a separator
    /// `last_key <= s < next` (`next` is the next block's first key, if any).
    fn add_index_entry(&mut self, next: Option<&[u8]>, handle: BlockHandle) {
        match (self.opts.key_order, next) {
            (KeyOrder::Internal, next) if self.marked_separators => {
                internal_separator(&self.last_key, next, &mut self.separator_buf)
            }
            (order, Some(next)) => {
                shortest_separator(order, &self.last_key, next, &mut self.separator_buf)
            }
            (_, None) => {
                self.separator_buf.clear();
                self.separator_buf.extend_from_slice(&self.last_key);
            }
        }
        self.handle_buf.clear();
        handle.encode_varint_to(&mut self.handle_buf);
        self.index.add(&self.separator_buf, &self.handle_buf);
        // At a data block boundary (but not after the last block: `finish` cuts the
        // remainders, so a table whose index and filter each fit in one partition is written
        // unpartitioned), the index and the filter are each cut once they reach the
        // partition size — independently, as RocksDB's decoupled partitioned filters: a
        // filter is a fraction of its index's size, and filter partitions as small as
        // that would each be a cache entry of a few bytes, read back on nearly every probe.
        let limit = self.opts.index_partition_bytes;
        if limit > 0 && next.is_some() {
            if self.index.size_estimate() >= limit {
                self.cut_index_partition();
            }
            let bits_per_key = self.opts.bloom_bits_per_key as usize;
            if self
                .filter
                .as_ref()
                .is_some_and(|f| f.len().saturating_mul(bits_per_key) / 8 >= limit)
            {
                self.cut_filter_partition();
            }
        }
    }
}

/// Sets `out` to the separator after a block of internal keys ending with `last`, before
/// `next` (the next block's first key, if any): a marked user key `s` with
/// `user_key(last) <= s < user_key(next)`, as short as [`shortest_separator`] makes it —
/// or, where `last` and `next` are versions of one user key, `last` itself (see
/// [`SeekOrder::MarkedSeparators`](crate::key::SeekOrder::MarkedSeparators)).
fn internal_separator(last: &[u8], next: Option<&[u8]>, out: &mut Vec<u8>) {
    out.clear();
    let user = user_key(last);
    match next.map(user_key) {
        Some(next_user) if next_user == user => out.extend_from_slice(last),
        Some(next_user) => {
            if !shorten_between(user, next_user, out) {
                out.clear();
                out.extend_from_slice(user);
            }
            out.push(SEPARATOR_MARK);
        }
        None => {
            out.extend_from_slice(user);
            out.push(SEPARATOR_MARK);
        }
    }
}

/// Sets `out` to a short key `s` with `a <= s < b` in `order`, given `a < b`: a prefix of
/// `a` with its first differing byte incremented when that stays below `b`, else `a` itself.
/// Shorter index keys make the index smaller and its binary search cheaper.
fn shortest_separator(order: KeyOrder, a: &[u8], b: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let shortened = match order {
        KeyOrder::Bytewise => shorten_between(a, b, out),
        KeyOrder::Internal => {
            a.len() >= TRAILER_LEN
                && b.len() >= TRAILER_LEN
                && shorten_between(user_key(a), user_key(b), out)
                && {
                    // The smallest trailer sorts before every real version of the new user
                    // key, which is already strictly between the two user keys.
                    out.extend_from_slice(&[0u8; TRAILER_LEN]);
                    true
                }
        }
    };
    if !shortened {
        out.clear();
        out.extend_from_slice(a);
    }
    debug_assert!(order.compare(a, out) != Ordering::Greater);
    debug_assert!(order.compare(out, b) == Ordering::Less);
}

/// Bytewise: appends `s` with `a < s < b` and `s` no longer than `a`, if one is found: `a`'s
/// first byte that differs from `b`'s, incremented; or, when that would reach `b`'s, `a` up
/// to a later byte below 0xff, incremented (`s` then stays below `b` at the differing byte).
/// A separator above its block's last user key also lets a scan ending there stop without
/// reading the next block (`TableIter::until`).
fn shorten_between(a: &[u8], b: &[u8], out: &mut Vec<u8>) -> bool {
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (Some(&da), Some(&db)) = (a.get(p), b.get(p)) else {
        return false;
    };
    let at = if da < u8::MAX && da + 1 < db {
        Some(p)
    } else if da < db {
        a.iter()
            .skip(p + 1)
            .position(|&x| x < u8::MAX)
            .map(|j| p + 1 + j)
    } else {
        None
    };
    let Some(at) = at else {
        return false;
    };
    out.extend_from_slice(a.get(..at).unwrap_or_default());
    out.push(a.get(at).map_or(0, |&x| x + 1));
    true
}

/// Appends `buf`, remembering the failure so later calls refuse to write.
fn write_all(
    file: &mut dyn WritableFile,
    path: &std::path::Path,
    buf: &[u8],
    failed: &mut Option<String>,
) -> Result<()> {
    file.append(buf).map_err(|e| {
        *failed = Some(e.to_string());
        Error::io("writing", path, e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{compare_internal, internal_key, SeekOrder, Seqno, ValueKind};
    use proptest::prelude::*;

    #[test]
    fn separators_are_shortened_when_possible() {
        let mut out = Vec::new();
        shortest_separator(KeyOrder::Bytewise, b"abcdef", b"abzz", &mut out);
        assert_eq!(out, b"abd");
        shortest_separator(KeyOrder::Bytewise, b"abc", b"abd", &mut out);
        assert_eq!(out, b"abc");
        shortest_separator(KeyOrder::Bytewise, b"ab", b"abc", &mut out);
        assert_eq!(out, b"ab");
        let a = internal_key(b"user1234", 5, Seqno(1), ValueKind::Put);
        let b = internal_key(b"user9", 5, Seqno(1), ValueKind::Put);
        shortest_separator(KeyOrder::Internal, &a, &b, &mut out);
        assert_eq!(user_key(&out), b"user2");
        // Versions of one user key are never split by a shortened key.
        let b = internal_key(b"user1234", 4, Seqno(1), ValueKind::Put);
        shortest_separator(KeyOrder::Internal, &a, &b, &mut out);
        assert_eq!(out, a);
    }

    proptest! {
        #[test]
        fn separators_lie_between_their_keys(
            x in proptest::collection::vec(any::<u8>(), 0..24),
            y in proptest::collection::vec(any::<u8>(), 0..24),
            internal in any::<bool>(),
            tx in 0u64..4, ty in 0u64..4,
        ) {
            let (order, a, b) = if internal {
                (KeyOrder::Internal,
                 internal_key(&x, tx, Seqno(1), ValueKind::Put),
                 internal_key(&y, ty, Seqno(2), ValueKind::Put))
            } else {
                (KeyOrder::Bytewise, x, y)
            };
            let (a, b) = match order.compare(&a, &b) {
                Ordering::Less => (a, b),
                Ordering::Greater => (b, a),
                Ordering::Equal => return Ok(()),
            };
            let mut out = Vec::new();
            shortest_separator(order, &a, &b, &mut out);
            prop_assert!(order.compare(&a, &out) != Ordering::Greater);
            prop_assert!(order.compare(&out, &b) == Ordering::Less);
            prop_assert!(out.len() <= a.len());
        }

        /// A separator between blocks of internal keys ending with `last` and starting
        /// with `next` sends every sought key to the right block: a key it is below (in
        /// the marked order) is after `last`, any other key is before `next`.
        #[test]
        fn marked_separators_send_every_key_to_its_block(
            x in proptest::collection::vec(0u8..3, 0..6),
            y in proptest::collection::vec(0u8..3, 0..6),
            tx in 0u64..4, ty in 0u64..4, last_block in any::<bool>(),
            probes in proptest::collection::vec(
                (proptest::collection::vec(0u8..3, 0..7), 0u64..4, 0u64..4), 0..40),
        ) {
            let a = internal_key(&x, tx, Seqno(1), ValueKind::Put);
            let b = internal_key(&y, ty, Seqno(2), ValueKind::Put);
            let (last, next) = match compare_internal(&a, &b) {
                Ordering::Less => (a, b),
                Ordering::Greater => (b, a),
                Ordering::Equal => return Ok(()),
            };
            let mut sep = Vec::new();
            internal_separator(&last, (!last_block).then_some(&next[..]), &mut sep);
            let order = SeekOrder::MarkedSeparators;
            prop_assert!(sep.len() <= last.len());
            for (user, ts, seqno) in probes {
                let k = internal_key(&user, ts, Seqno(seqno), ValueKind::Put);
                if order.compare(&sep, &k) == Ordering::Less {
                    prop_assert!(compare_internal(&k, &last) == Ordering::Greater);
                } else {
                    prop_assert!(compare_internal(&k, &last) != Ordering::Greater
                        || last_block
                        || compare_internal(&k, &next) == Ordering::Less);
                }
            }
            let mut k = last.clone();
            prop_assert!(order.compare(&sep, &k) != Ordering::Less);
            if !last_block {
                k.clone_from(&next);
                prop_assert!(order.compare(&sep, &k) == Ordering::Less
                    || user_key(&next) == user_key(&last) && sep == last);
            }
        }
    }
}
