//! Reading a table: open verifies the footer and loads the index, filter and properties
//! (kept pinned, or handed to the block cache: see the `meta` module); iterators then fetch
//! data blocks through the shared [`BlockCache`].
//!
//! Every byte read from the file is checksummed before it is interpreted and every handle is
//! checked against the file's real layout, so a damaged file gives [`Error::ChecksumMismatch`]
//! or [`Error::Corruption`] naming the file and the block's offset — never a panic, never
//! wrong data.
#![deny(clippy::indexing_slicing)]

use std::ops::Bound;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_env::RandomAccessFile;

use super::block::{Block, BlockError, BlockIter};
use super::cache::{BlockCache, Cached};
use super::format::{decode_block, read_block, BlockHandle, Footer, BLOCK_TRAILER_LEN, FOOTER_LEN};
use super::index_cursor::IndexCursor;
use super::meta::{decode_filter, decode_index, partition_handles, Metadata, Parts};
use crate::error::{Error, Result};
use crate::key::KeyOrder;
use crate::stats::{BlockKind, Counters, ReadPurpose};

/// An open, immutable table. Shared (`Arc`) by every iterator over it.
pub struct TableReader {
    pub(super) file: Arc<dyn RandomAccessFile>,
    pub(super) path: PathBuf,
    pub(super) cache_id: u64,
    cache: Option<Arc<BlockCache>>,
    pub(super) counters: Arc<Counters>,
    pub(super) footer: Footer,
    /// The index and filter, pinned here or in the block cache.
    pub(super) meta: Metadata,
    properties: Vec<u8>,
    size_bytes: u64,
    /// Data blocks lie in `[0, data_end)`, before the filter, index and properties blocks.
    data_end: u64,
    pub(super) verify_checksums: bool,
}

impl std::fmt::Debug for TableReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableReader")
            .field("path", &self.path)
            .field("cache_id", &self.cache_id)
            .field("footer", &self.footer)
            .finish_non_exhaustive()
    }
}

impl TableReader {
    /// Opens a table: reads and verifies the footer, index block, filter block and
    /// properties. `cache_id` must be unique per table file within `cache`. If `cache`
    /// holds metadata ([`BlockCache::holds_metadata`]) the index and filter go there,
    /// otherwise the reader pins them.
    pub fn open(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        cache_id: u64,
        cache: Option<Arc<BlockCache>>,
        counters: Arc<Counters>,
    ) -> Result<TableReader> {
        Self::open_inner(file, path, cache_id, cache, counters, true)
    }

    /// Like [`TableReader::open`] but skips every checksum comparison, so fuzzers reach the
    /// structural decoders behind them. Structural validation still applies: arbitrary bytes
    /// give errors, never panics. Not for production reads.
    #[doc(hidden)]
    pub fn open_without_checksums(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        cache_id: u64,
        cache: Option<Arc<BlockCache>>,
        counters: Arc<Counters>,
    ) -> Result<TableReader> {
        Self::open_inner(file, path, cache_id, cache, counters, false)
    }

    fn open_inner(
        file: Arc<dyn RandomAccessFile>,
        path: PathBuf,
        cache_id: u64,
        cache: Option<Arc<BlockCache>>,
        counters: Arc<Counters>,
        verify: bool,
    ) -> Result<TableReader> {
        let size_bytes = file.len();
        let footer_offset = size_bytes.checked_sub(FOOTER_LEN as u64).ok_or_else(|| {
            Error::corruption(
                &path,
                0,
                format!(
                    "file of {size_bytes} bytes is shorter than a table footer ({FOOTER_LEN} bytes)"
                ),
            )
        })?;
        let mut footer_bytes = [0u8; FOOTER_LEN];
        file.read_exact_at(&mut footer_bytes, footer_offset)
            .map_err(|e| Error::io("reading", &path, e))?;
        counters.add_read(ReadPurpose::Open, FOOTER_LEN as u64);
        let footer = Footer::decode(&footer_bytes, &path, footer_offset, verify)?;

        let read_meta = |handle: BlockHandle| -> Result<Vec<u8>> {
            let raw = read_block(&*file, &path, handle, verify)?;
            counters.add_read(
                ReadPurpose::Open,
                handle.size.saturating_add(BLOCK_TRAILER_LEN as u64),
            );
            Ok(raw)
        };
        let index = decode_index(&path, footer.index.offset, read_meta(footer.index)?)?;
        let filter_raw = if footer.filter.size > 0 {
            Some(read_meta(footer.filter)?)
        } else {
            None
        };
        let properties = read_meta(footer.properties)?;
        let mut data_end = footer.index.offset.min(footer.properties.offset);
        if footer.filter.size > 0 {
            data_end = data_end.min(footer.filter.offset);
        }
        let meta = if footer.partitioned {
            let top_index = Arc::new(index.with_prefix_search(footer.index_order()));
            let top_filter = match filter_raw {
                Some(raw) => Some(Arc::new(decode_index(&path, footer.filter.offset, raw)?)),
                None => None,
            };
            let index_parts = partition_handles(&path, footer.index.offset, &top_index)?;
            let filter_parts = match &top_filter {
                Some(top) => partition_handles(&path, footer.filter.offset, top)?,
                None => Vec::new(),
            };
            // Partitions lie after the data blocks and before the top-levels.
            for handle in index_parts.iter().chain(&filter_parts) {
                match handle.end_with_trailer() {
                    Some(end) if end <= footer_offset => data_end = data_end.min(handle.offset),
                    _ => {
                        return Err(Error::corruption(
                            &path,
                            handle.offset,
                            format!(
                                "partition handle (offset {}, size {}) outside the table's {footer_offset} bytes of blocks",
                                handle.offset, handle.size
                            ),
                        ))
                    }
                }
            }
            let parts = match &cache {
                Some(cache) if cache.holds_metadata() => Parts::Cached(Arc::clone(cache)),
                _ => {
                    let mut parts = Vec::with_capacity(index_parts.len() + filter_parts.len());
                    for handle in index_parts {
                        let block = decode_index(&path, handle.offset, read_meta(handle)?)?
                            .with_prefix_search(footer.index_order());
                        parts.push((handle.offset, Cached::Index(Arc::new(block))));
                    }
                    for handle in filter_parts {
                        let filter = decode_filter(&path, handle.offset, read_meta(handle)?)?;
                        parts.push((handle.offset, Cached::Filter(Arc::new(filter))));
                    }
                    parts.sort_by_key(|(offset, _)| *offset);
                    Parts::Pinned(parts)
                }
            };
            Metadata::Partitioned {
                top_index,
                top_filter,
                parts,
            }
        } else {
            let filter = match filter_raw {
                Some(raw) => Some((
                    footer.filter.offset,
                    decode_filter(&path, footer.filter.offset, raw)?,
                )),
                None => None,
            };
            Metadata::place(
                cache.as_ref(),
                cache_id,
                (footer.index.offset, index),
                filter,
                footer.index_order(),
            )
        };
        Ok(TableReader {
            file,
            path,
            cache_id,
            cache,
            counters,
            footer,
            meta,
            properties,
            size_bytes,
            data_end,
            verify_checksums: verify,
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the table's keys are ordered.
    pub fn key_order(&self) -> KeyOrder {
        self.footer.key_order
    }

    /// Entries in the table.
    pub fn entries(&self) -> u64 {
        self.footer.entries
    }

    /// Data blocks in the table.
    pub fn data_blocks(&self) -> u64 {
        self.footer.data_blocks
    }

    /// The file's size.
    pub fn size_bytes(&self) -> u64 {
        self.size_bytes
    }

    /// Where the data blocks end and the metadata (filter, index, properties, footer)
    /// begins: what a relocated table keeps local.
    pub fn data_end(&self) -> u64 {
        self.data_end
    }

    /// Reads `len` raw bytes at `offset` of the file (for copying a part of it elsewhere).
    pub fn read_raw(&self, offset: u64, len: usize) -> Result<Vec<u8>> {
        let mut buf = vec![0; len];
        self.file
            .read_exact_at(&mut buf, offset)
            .map_err(|e| Error::io("reading", &self.path, e))?;
        Ok(buf)
    }

    /// The caller's opaque properties written by [`super::TableWriter::finish`].
    pub fn properties(&self) -> &[u8] {
        &self.properties
    }

    /// Bytes of index and filter this reader pins in memory for as long as the table is
    /// open, index search aids included (0 when they live in the block cache; a
    /// partitioned table's top-level blocks only, when its partitions do).
    pub fn pinned_memory_bytes(&self) -> u64 {
        let part_bytes = |part: &Cached| match part {
            Cached::Data(block) | Cached::Index(block) => block.pinned_bytes(),
            Cached::Filter(filter) => filter.size_bytes(),
        };
        match &self.meta {
            Metadata::Pinned { index, filter } => {
                (index.pinned_bytes() + filter.as_ref().map_or(0, |f| f.size_bytes())) as u64
            }
            Metadata::Cached(_) => 0,
            Metadata::Partitioned {
                top_index,
                top_filter,
                parts,
            } => {
                let pinned = match parts {
                    Parts::Pinned(parts) => parts.iter().map(|(_, p)| part_bytes(p)).sum(),
                    Parts::Cached(_) => 0,
                };
                (top_index.pinned_bytes()
                    + top_filter.as_ref().map_or(0, |t| t.pinned_bytes())
                    + pinned) as u64
            }
        }
    }

    /// An unpositioned iterator. `purpose` attributes disk reads; with `fill_cache` false,
    /// blocks read from disk are not inserted into the cache (compaction inputs). A cached
    /// index block is fetched at the first seek and held until the iterator is dropped.
    pub fn iter(self: &Arc<Self>, purpose: ReadPurpose, fill_cache: bool) -> TableIter {
        TableIter {
            index: None,
            table: Arc::clone(self),
            data: None,
            data_handle: BlockHandle::default(),
            purpose,
            fill_cache,
            readahead: Readahead::default(),
            until: Bound::Unbounded,
        }
    }

    /// The data block at `handle`, from the cache, the iterator's readahead window or the
    /// file.
    fn data_block(
        &self,
        handle: BlockHandle,
        purpose: ReadPurpose,
        fill_cache: bool,
        readahead: &mut Readahead,
    ) -> Result<Arc<Block>> {
        if let Some(cache) = &self.cache {
            // Another kind of block at this offset can only come of a damaged index entry:
            // treated as a miss, the bounds check below names the damage.
            if let Some(Cached::Data(block)) = cache.get(self.cache_id, handle.offset) {
                Counters::inc(&self.counters.block_cache_hits);
                return Ok(block);
            }
        }
        let end = handle
            .end_with_trailer()
            .filter(|end| *end <= self.data_end)
            .ok_or_else(|| {
                Error::corruption(
                    &self.path,
                    handle.offset,
                    format!(
                        "data block handle (offset {}, size {}) outside the data region of {} bytes",
                        handle.offset, handle.size, self.data_end
                    ),
                )
            })?;
        Counters::inc(&self.counters.block_cache_misses);
        let contents = if readahead.contains(handle.offset, end) {
            let raw = readahead.slice(handle.offset, end).to_vec();
            decode_block(raw, &self.path, handle.offset, self.verify_checksums)?
        } else {
            match readahead.window_len(handle.offset, end, purpose) {
                Some(window) => {
                    // One read for this block and the ones after it (never past the data).
                    let len = window
                        .min(self.data_end - handle.offset)
                        .max(end - handle.offset);
                    readahead.fill(&*self.file, &self.path, handle.offset, len)?;
                    self.counters.add_block_read(purpose, BlockKind::Data, len);
                    let raw = readahead.slice(handle.offset, end).to_vec();
                    decode_block(raw, &self.path, handle.offset, self.verify_checksums)?
                }
                None => {
                    let contents =
                        read_block(&*self.file, &self.path, handle, self.verify_checksums);
                    self.counters
                        .add_block_read(purpose, BlockKind::Data, end - handle.offset);
                    contents?
                }
            }
        };
        let block = Arc::new(Block::new(contents).map_err(|reason| {
            Error::corruption(&self.path, handle.offset, format!("data block: {reason}"))
        })?);
        if fill_cache {
            if let Some(cache) = self
                .cache
                .as_ref()
                .filter(|c| c.admits_data(block.charge_bytes()))
            {
                cache.insert(
                    self.cache_id,
                    handle.offset,
                    Cached::Data(Arc::clone(&block)),
                );
            }
        }
        Ok(block)
    }

    pub(super) fn index_error(&self, reason: BlockError) -> Error {
        Error::corruption(
            &self.path,
            self.footer.index.offset,
            format!("index block: {reason}"),
        )
    }
}

/// A cursor over a table's entries in key order. Owns its table, so it is `Send` and may
/// outlive the caller's handle.
pub struct TableIter {
    table: Arc<TableReader>,
    /// The cursor over the index; `None` until the first seek fetches a cached index.
    index: Option<IndexCursor>,
    /// The cursor over the current data block; positioned iff the iterator is valid.
    data: Option<BlockIter>,
    /// The handle of the block under `data`.
    data_handle: BlockHandle,
    purpose: ReadPurpose,
    fill_cache: bool,
    readahead: Readahead,
    /// The user key the iterator stops at (inclusive or not): no block past it is read.
    until: Bound<Vec<u8>>,
}

impl std::fmt::Debug for TableIter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableIter")
            .field("table", &self.table.path)
            .field("valid", &self.valid())
            .finish_non_exhaustive()
    }
}

impl TableIter {
    /// Stops the iterator at user key `end` (in a table of internal keys): it ends instead
    /// of reading a block whose keys all lie past `end`. A read of one partition otherwise
    /// read the block after the partition's last one, only to find the next key out of
    /// range — with large rows, each in a block of its own, a second large read per read.
    /// Entries past `end` may still be returned from a block already read.
    pub fn until(mut self, end: Bound<&[u8]>) -> Self {
        self.until = end.map(<[u8]>::to_vec);
        self
    }

    /// Positions at the first key `>=` target in the table's key order (invalid if none).
    pub fn seek(&mut self, target: &[u8]) -> Result<()> {
        let result = self.seek_inner(target);
        self.invalidate_on_error(result)
    }

    /// Positions at the first entry (invalid if the table is empty).
    pub fn seek_to_first(&mut self) -> Result<()> {
        let result = self.seek_to_first_inner();
        self.invalidate_on_error(result)
    }

    /// Moves to the next entry. Call only when [`TableIter::valid`]; otherwise does nothing.
    // Not `Iterator::next`: a fallible cursor step that lends its key and value.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> Result<()> {
        if !self.valid() {
            return Ok(());
        }
        let result = self.next_inner();
        self.invalidate_on_error(result)
    }

    /// Whether the iterator is at an entry.
    pub fn valid(&self) -> bool {
        self.data.as_ref().is_some_and(BlockIter::valid)
    }

    /// The current key (empty when not valid).
    pub fn key(&self) -> &[u8] {
        match &self.data {
            Some(d) if d.valid() => d.key(),
            _ => &[],
        }
    }

    /// The current value, a slice of the shared decoded block (empty when not valid).
    pub fn value(&self) -> &[u8] {
        match &self.data {
            Some(d) if d.valid() => d.value(),
            _ => &[],
        }
    }

    /// The table being iterated.
    pub fn table(&self) -> &Arc<TableReader> {
        &self.table
    }

    fn invalidate_on_error(&mut self, result: Result<()>) -> Result<()> {
        if result.is_err() {
            if let Some(i) = &mut self.index {
                i.invalidate();
            }
            if let Some(d) = &mut self.data {
                d.invalidate();
            }
        }
        result
    }

    /// The index cursor, made at the first seek: over the pinned index block, over the
    /// cached one (fetched now), or over a partitioned table's two levels.
    fn index_cursor(&mut self) -> Result<&mut IndexCursor> {
        let cursor = match self.index.take() {
            Some(cursor) => cursor,
            None => match &self.table.meta {
                Metadata::Partitioned { top_index, .. } => {
                    IndexCursor::two_level(Arc::clone(top_index))
                }
                _ => IndexCursor::Single(BlockIter::new(
                    self.table.index_block(self.purpose, self.fill_cache)?,
                )),
            },
        };
        Ok(self.index.insert(cursor))
    }

    fn seek_inner(&mut self, target: &[u8]) -> Result<()> {
        let (purpose, fill_cache) = (self.purpose, self.fill_cache);
        self.index_cursor()?;
        if let Some(index) = &mut self.index {
            index.seek(&self.table, Some(target), purpose, fill_cache)?;
        }
        let order = self.table.footer.key_order;
        if !self.load_data_block()? {
            return Ok(());
        }
        let handle = self.data_handle;
        if let Some(d) = &mut self.data {
            d.seek(target, order)
                .map_err(|r| data_error(&self.table, handle, r))?;
        }
        self.skip_exhausted_blocks()
    }

    fn seek_to_first_inner(&mut self) -> Result<()> {
        let (purpose, fill_cache) = (self.purpose, self.fill_cache);
        self.index_cursor()?;
        if let Some(index) = &mut self.index {
            index.seek(&self.table, None, purpose, fill_cache)?;
        }
        if !self.load_data_block()? {
            return Ok(());
        }
        let handle = self.data_handle;
        if let Some(d) = &mut self.data {
            d.seek_to_first()
                .map_err(|r| data_error(&self.table, handle, r))?;
        }
        self.skip_exhausted_blocks()
    }

    fn next_inner(&mut self) -> Result<()> {
        let handle = self.data_handle;
        if let Some(d) = &mut self.data {
            d.next().map_err(|r| data_error(&self.table, handle, r))?;
        }
        self.skip_exhausted_blocks()
    }

    /// While the data cursor is past its block's end, moves to the next block's first entry
    /// — unless every key after the current block is past `until`.
    fn skip_exhausted_blocks(&mut self) -> Result<()> {
        while !self.valid() {
            let Some(index) = self.index.as_mut().filter(|i| i.valid()) else {
                return Ok(());
            };
            if self
                .table
                .footer
                .index_order()
                .separator_user_key(index.key())
                .is_some_and(|user_key| past_end(&self.until, user_key))
            {
                // The index key of the current block is at or below every later key:
                // its user key past the end puts all of them past it.
                index.invalidate();
                return Ok(());
            }
            index.next(&self.table, self.purpose, self.fill_cache)?;
            if !self.load_data_block()? {
                return Ok(());
            }
            let handle = self.data_handle;
            if let Some(d) = &mut self.data {
                d.seek_to_first()
                    .map_err(|r| data_error(&self.table, handle, r))?;
            }
        }
        Ok(())
    }

    /// Loads the block the index cursor points at (reusing the current one if it is the
    /// same); returns false, leaving the iterator invalid, if the index is exhausted.
    fn load_data_block(&mut self) -> Result<bool> {
        let Some(index) = self.index.as_ref().filter(|i| i.valid()) else {
            if let Some(d) = &mut self.data {
                d.invalidate();
            }
            return Ok(false);
        };
        let handle = BlockHandle::decode_varint(index.value()).ok_or_else(|| {
            self.table
                .index_error("index entry value is not a block handle")
        })?;
        match &mut self.data {
            Some(d) if handle == self.data_handle => {
                // Same block (successive seeks nearby): keep its position so seek can resume.
                let _ = d;
            }
            slot => {
                let block = self.table.data_block(
                    handle,
                    self.purpose,
                    self.fill_cache,
                    &mut self.readahead,
                )?;
                match slot {
                    Some(d) => d.reset(block),
                    None => *slot = Some(BlockIter::new(block)),
                }
                self.data_handle = handle;
            }
        }
        Ok(true)
    }
}

/// Whether user key `key` lies past `end`.
fn past_end(end: &Bound<Vec<u8>>, key: &[u8]) -> bool {
    match end {
        Bound::Included(e) => key > e.as_slice(),
        Bound::Excluded(e) => key >= e.as_slice(),
        Bound::Unbounded => false,
    }
}

fn data_error(table: &TableReader, handle: BlockHandle, reason: BlockError) -> Error {
    Error::corruption(&table.path, handle.offset, format!("data block: {reason}"))
}

/// Compactions read their inputs front to back: one read per this many bytes.
const COMPACTION_READAHEAD_BYTES: u64 = 512 * 1024;
/// Scans start reading ahead after this many consecutive sequential block reads…
const SCAN_READAHEAD_AFTER_BLOCKS: u32 = 2;
/// …with this window, doubling on each further refill…
const SCAN_READAHEAD_MIN_BYTES: u64 = 16 * 1024;
/// …up to this one. Short scans and point lookups thus never read more than they use.
const SCAN_READAHEAD_MAX_BYTES: u64 = 256 * 1024;

/// One iterator's read-ahead state: a window of the file read with a single I/O, from which
/// the following blocks are served (each still checksummed when decoded). Turns a compaction's
/// or long scan's thousands of small reads into few large ones.
#[derive(Debug, Default)]
struct Readahead {
    buf: Vec<u8>,
    /// File offset of `buf[0]`.
    offset: u64,
    /// End of the last block read from disk, to recognise sequential access.
    last_end: u64,
    /// Consecutive sequential block reads from disk.
    sequential: u32,
    /// The next scan window.
    scan_window: u64,
}

impl Readahead {
    /// Whether the window holds `[start, end)`.
    fn contains(&self, start: u64, end: u64) -> bool {
        start >= self.offset && end <= self.offset + self.buf.len() as u64
    }

    /// The bytes `[start, end)` (empty unless [`Readahead::contains`] them).
    fn slice(&self, start: u64, end: u64) -> &[u8] {
        let from = start.saturating_sub(self.offset) as usize;
        let to = end.saturating_sub(self.offset) as usize;
        self.buf.get(from..to).unwrap_or_default()
    }

    /// How much to read for a miss on `[start, end)` outside the window, or `None` for just
    /// the block.
    fn window_len(&mut self, start: u64, end: u64, purpose: ReadPurpose) -> Option<u64> {
        // Sequential: right after the last block read from disk, or inside the window (the
        // block straddling its end).
        let window_end = self.offset + self.buf.len() as u64;
        if start == self.last_end || (start > self.offset && start <= window_end) {
            self.sequential += 1;
        } else {
            self.sequential = 0;
            self.scan_window = 0;
        }
        self.last_end = end;
        match purpose {
            ReadPurpose::Compaction => Some(COMPACTION_READAHEAD_BYTES),
            ReadPurpose::Scan if self.sequential >= SCAN_READAHEAD_AFTER_BLOCKS => {
                self.scan_window = (self.scan_window * 2)
                    .clamp(SCAN_READAHEAD_MIN_BYTES, SCAN_READAHEAD_MAX_BYTES);
                Some(self.scan_window)
            }
            _ => None,
        }
    }

    /// Reads `len` bytes at `offset` into the window.
    fn fill(
        &mut self,
        file: &dyn RandomAccessFile,
        path: &Path,
        offset: u64,
        len: u64,
    ) -> Result<()> {
        self.buf.clear();
        self.buf.resize(len as usize, 0);
        let result = file.read_exact_at(&mut self.buf, offset);
        if let Err(e) = result {
            self.buf.clear();
            return Err(Error::io("reading", path, e));
        }
        self.offset = offset;
        Ok(())
    }
}
