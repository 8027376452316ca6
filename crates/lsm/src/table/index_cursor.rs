//! A cursor over a table's index for [`super::TableIter`]: the table's one index block, or
//! a partitioned table's two levels — the top-level block, walked by position, and the
//! index partition its current entry names, fetched through the reader (pinned or from the
//! block cache). Either way it stands at an index entry `separator → data block handle`.
#![deny(clippy::indexing_slicing)]

use std::sync::Arc;

use super::block::{Block, BlockError, BlockIter};
use super::format::BlockHandle;
use super::reader::TableReader;
use crate::error::{Error, Result};
use crate::stats::ReadPurpose;

/// A cursor over a table's index: its one index block, or a two-level index (the top-level
/// block over partitions, and the partition it points at). Positioned at the index entry
/// `separator → data block handle` of the block holding the sought key.
pub(super) enum IndexCursor {
    Single(BlockIter),
    TwoLevel {
        /// The top-level index: every entry a restart point, so it is walked by position
        /// without a cursor (nothing allocated per get).
        top: Arc<Block>,
        /// The top-level entry of the current partition (`>= top.index_len()`: exhausted).
        top_pos: usize,
        /// The cursor in the partition at `top_pos` (`None` before the first seek).
        part: Option<BlockIter>,
        part_handle: BlockHandle,
    },
}

impl IndexCursor {
    pub(super) fn two_level(top: Arc<Block>) -> Self {
        IndexCursor::TwoLevel {
            top,
            top_pos: usize::MAX,
            part: None,
            part_handle: BlockHandle::default(),
        }
    }

    pub(super) fn valid(&self) -> bool {
        match self {
            IndexCursor::Single(it) => it.valid(),
            IndexCursor::TwoLevel {
                top, top_pos, part, ..
            } => *top_pos < top.index_len() && part.as_ref().is_some_and(BlockIter::valid),
        }
    }

    pub(super) fn key(&self) -> &[u8] {
        match self {
            IndexCursor::Single(it) => it.key(),
            IndexCursor::TwoLevel { part: Some(p), .. } => p.key(),
            IndexCursor::TwoLevel { part: None, .. } => &[],
        }
    }

    pub(super) fn value(&self) -> &[u8] {
        match self {
            IndexCursor::Single(it) => it.value(),
            IndexCursor::TwoLevel { part: Some(p), .. } => p.value(),
            IndexCursor::TwoLevel { part: None, .. } => &[],
        }
    }

    pub(super) fn invalidate(&mut self) {
        match self {
            IndexCursor::Single(it) => it.invalidate(),
            IndexCursor::TwoLevel { top_pos, part, .. } => {
                *top_pos = usize::MAX;
                if let Some(p) = part {
                    p.invalidate();
                }
            }
        }
    }

    /// Positions at the first entry whose separator is `>= target`, or at the first entry
    /// when `target` is `None`.
    pub(super) fn seek(
        &mut self,
        table: &TableReader,
        target: Option<&[u8]>,
        purpose: ReadPurpose,
        fill_cache: bool,
    ) -> Result<()> {
        let order = table.footer.index_order();
        match self {
            IndexCursor::Single(it) => match target {
                Some(target) => it.seek(target, order),
                None => it.seek_to_first(),
            }
            .map_err(|r| table.index_error(r)),
            IndexCursor::TwoLevel { top, top_pos, .. } => {
                *top_pos = match target {
                    Some(target) => top
                        .index_seek(target, order)
                        .map_err(|r| table.index_error(r))?,
                    None => 0,
                };
                self.load_partition(table, purpose, fill_cache)?;
                match target {
                    Some(target) => {
                        if let IndexCursor::TwoLevel {
                            part: Some(p),
                            part_handle,
                            ..
                        } = self
                        {
                            let handle = *part_handle;
                            p.seek(target, order)
                                .map_err(|r| partition_error(table, handle, r))?;
                        }
                    }
                    None => self.first_in_partition(table)?,
                }
                self.skip_exhausted_partitions(table, purpose, fill_cache)
            }
        }
    }

    /// Moves to the next entry; call only when valid.
    pub(super) fn next(
        &mut self,
        table: &TableReader,
        purpose: ReadPurpose,
        fill_cache: bool,
    ) -> Result<()> {
        match self {
            IndexCursor::Single(it) => it.next().map_err(|r| table.index_error(r)),
            IndexCursor::TwoLevel {
                part: Some(p),
                part_handle,
                ..
            } => {
                let handle = *part_handle;
                p.next().map_err(|r| partition_error(table, handle, r))?;
                self.skip_exhausted_partitions(table, purpose, fill_cache)
            }
            IndexCursor::TwoLevel { part: None, .. } => Ok(()),
        }
    }

    /// Two-level: while the partition cursor is past its partition's end, moves to the
    /// next partition's first entry.
    fn skip_exhausted_partitions(
        &mut self,
        table: &TableReader,
        purpose: ReadPurpose,
        fill_cache: bool,
    ) -> Result<()> {
        loop {
            let IndexCursor::TwoLevel {
                top, top_pos, part, ..
            } = self
            else {
                return Ok(());
            };
            if *top_pos >= top.index_len() || part.as_ref().is_some_and(BlockIter::valid) {
                return Ok(());
            }
            *top_pos += 1;
            self.load_partition(table, purpose, fill_cache)?;
            self.first_in_partition(table)?;
        }
    }

    /// Two-level: positions the partition cursor at its partition's first entry.
    fn first_in_partition(&mut self, table: &TableReader) -> Result<()> {
        if let IndexCursor::TwoLevel {
            part: Some(p),
            part_handle,
            ..
        } = self
        {
            let handle = *part_handle;
            p.seek_to_first()
                .map_err(|r| partition_error(table, handle, r))?;
        }
        Ok(())
    }

    /// Two-level: points the partition cursor at the partition of the top-level entry at
    /// `top_pos` (reading it unless it is the one already under the cursor), or invalidates
    /// it when the top level is exhausted.
    fn load_partition(
        &mut self,
        table: &TableReader,
        purpose: ReadPurpose,
        fill_cache: bool,
    ) -> Result<()> {
        let IndexCursor::TwoLevel {
            top,
            top_pos,
            part,
            part_handle,
        } = self
        else {
            return Ok(());
        };
        if *top_pos >= top.index_len() {
            if let Some(p) = part {
                p.invalidate();
            }
            return Ok(());
        }
        let (_, value) = top
            .restart_entry(*top_pos)
            .map_err(|r| table.index_error(r))?;
        let handle = BlockHandle::decode_varint(value)
            .ok_or_else(|| table.index_error("top-level entry value is not a block handle"))?;
        if part.is_some() && handle == *part_handle {
            return Ok(());
        }
        let block = table.index_partition(handle, purpose, fill_cache)?;
        match part {
            Some(p) => p.reset(block),
            None => *part = Some(BlockIter::new(block)),
        }
        *part_handle = handle;
        Ok(())
    }
}

fn partition_error(table: &TableReader, handle: BlockHandle, reason: BlockError) -> Error {
    Error::corruption(
        &table.path,
        handle.offset,
        format!("index partition: {reason}"),
    )
}
