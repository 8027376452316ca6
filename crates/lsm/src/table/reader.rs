//! Reading a table: open verifies the footer and loads the index, filter and properties;
//! iterators then fetch data blocks through the shared [`BlockCache`].
//!
//! Every byte read from the file is checksummed before it is interpreted and every handle is
//! checked against the file's real layout, so a damaged file gives [`Error::ChecksumMismatch`]
//! or [`Error::Corruption`] naming the file and the block's offset — never a panic, never
//! wrong data.
#![deny(clippy::indexing_slicing)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use mosaic_env::RandomAccessFile;

use super::block::{Block, BlockError, BlockIter};
use super::cache::BlockCache;
use super::filter::BloomFilter;
use super::format::{read_block, BlockHandle, Footer, FOOTER_LEN};
use crate::error::{Error, Result};
use crate::key::KeyOrder;
use crate::stats::{Counters, ReadPurpose};

/// An open, immutable table. Shared (`Arc`) by every iterator over it.
pub struct TableReader {
    file: Arc<dyn RandomAccessFile>,
    path: PathBuf,
    cache_id: u64,
    cache: Option<Arc<BlockCache>>,
    counters: Arc<Counters>,
    footer: Footer,
    index: Arc<Block>,
    filter: Option<BloomFilter>,
    properties: Vec<u8>,
    size_bytes: u64,
    /// Data blocks lie in `[0, data_end)`, before the filter, index and properties blocks.
    data_end: u64,
    verify_checksums: bool,
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
    /// properties. `cache_id` must be unique per table file within `cache`.
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
                handle.end_with_trailer().unwrap_or(0) - handle.offset,
            );
            Ok(raw)
        };
        let index = Block::new(read_meta(footer.index)?).map_err(|reason| {
            Error::corruption(&path, footer.index.offset, format!("index block: {reason}"))
        })?;
        let filter = if footer.filter.size > 0 {
            let f = BloomFilter::decode(read_meta(footer.filter)?).map_err(|reason| {
                Error::corruption(
                    &path,
                    footer.filter.offset,
                    format!("filter block: {reason}"),
                )
            })?;
            Some(f)
        } else {
            None
        };
        let properties = read_meta(footer.properties)?;
        let mut data_end = footer.index.offset.min(footer.properties.offset);
        if footer.filter.size > 0 {
            data_end = data_end.min(footer.filter.offset);
        }
        Ok(TableReader {
            file,
            path,
            cache_id,
            cache,
            counters,
            footer,
            index: Arc::new(index),
            filter,
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

    /// The caller's opaque properties written by [`super::TableWriter::finish`].
    pub fn properties(&self) -> &[u8] {
        &self.properties
    }

    /// Bytes of index and filter held in memory while the table is open.
    pub fn memory_bytes(&self) -> u64 {
        (self.index.data().len() + self.filter.as_ref().map_or(0, |f| f.size_bytes())) as u64
    }

    /// Bloom probe on a filter key (`key_order().filter_key(key)`); `true` if the table has
    /// no filter. `false` means no key of the table has this filter key.
    pub fn may_contain(&self, filter_key: &[u8]) -> bool {
        self.filter
            .as_ref()
            .is_none_or(|f| f.may_contain(filter_key))
    }

    /// An unpositioned iterator. `purpose` attributes disk reads; with `fill_cache` false,
    /// blocks read from disk are not inserted into the cache (compaction inputs).
    pub fn iter(self: &Arc<Self>, purpose: ReadPurpose, fill_cache: bool) -> TableIter {
        TableIter {
            index: BlockIter::new(Arc::clone(&self.index)),
            table: Arc::clone(self),
            data: None,
            data_handle: BlockHandle::default(),
            purpose,
            fill_cache,
        }
    }

    /// The data block at `handle`, from the cache or the file.
    fn data_block(
        &self,
        handle: BlockHandle,
        purpose: ReadPurpose,
        fill_cache: bool,
    ) -> Result<Arc<Block>> {
        if let Some(cache) = &self.cache {
            if let Some(block) = cache.get(self.cache_id, handle.offset) {
                Counters::inc(&self.counters.block_cache_hits);
                return Ok(block);
            }
        }
        if handle
            .end_with_trailer()
            .is_none_or(|end| end > self.data_end)
        {
            return Err(Error::corruption(
                &self.path,
                handle.offset,
                format!(
                    "data block handle (offset {}, size {}) outside the data region of {} bytes",
                    handle.offset, handle.size, self.data_end
                ),
            ));
        }
        let raw = read_block(&*self.file, &self.path, handle, self.verify_checksums)?;
        self.counters.add_read(
            purpose,
            handle.end_with_trailer().unwrap_or(0) - handle.offset,
        );
        Counters::inc(&self.counters.block_cache_misses);
        let block = Arc::new(Block::new(raw).map_err(|reason| {
            Error::corruption(&self.path, handle.offset, format!("data block: {reason}"))
        })?);
        if fill_cache {
            if let Some(cache) = &self.cache {
                cache.insert(self.cache_id, handle.offset, Arc::clone(&block));
            }
        }
        Ok(block)
    }

    fn index_error(&self, reason: BlockError) -> Error {
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
    index: BlockIter,
    /// The cursor over the current data block; positioned iff the iterator is valid.
    data: Option<BlockIter>,
    /// The handle of the block under `data`.
    data_handle: BlockHandle,
    purpose: ReadPurpose,
    fill_cache: bool,
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
            self.index.invalidate();
            if let Some(d) = &mut self.data {
                d.invalidate();
            }
        }
        result
    }

    fn seek_inner(&mut self, target: &[u8]) -> Result<()> {
        let order = self.table.footer.key_order;
        self.index
            .seek(target, order)
            .map_err(|r| self.table.index_error(r))?;
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
        self.index
            .seek_to_first()
            .map_err(|r| self.table.index_error(r))?;
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

    /// While the data cursor is past its block's end, moves to the next block's first entry.
    fn skip_exhausted_blocks(&mut self) -> Result<()> {
        while !self.valid() {
            if !self.index.valid() {
                return Ok(());
            }
            self.index.next().map_err(|r| self.table.index_error(r))?;
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
        if !self.index.valid() {
            if let Some(d) = &mut self.data {
                d.invalidate();
            }
            return Ok(false);
        }
        let handle = BlockHandle::decode_varint(self.index.value()).ok_or_else(|| {
            self.table
                .index_error("index entry value is not a block handle")
        })?;
        match &mut self.data {
            Some(d) if handle == self.data_handle => {
                // Same block (successive seeks nearby): keep its position so seek can resume.
                let _ = d;
            }
            slot => {
                let block = self
                    .table
                    .data_block(handle, self.purpose, self.fill_cache)?;
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

fn data_error(table: &TableReader, handle: BlockHandle, reason: BlockError) -> Error {
    Error::corruption(&table.path, handle.offset, format!("data block: {reason}"))
}
