//! Blocks: the unit a table is read, checksummed, compressed and cached in.
//!
//! A block is a run of prefix-compressed entries followed by an array of restart points:
//!
//! ```text
//! entry*   := varint32 shared_len ‖ varint32 unshared_len ‖ varint32 value_len
//!             ‖ key[shared_len..] (unshared_len bytes) ‖ value (value_len bytes)
//! restarts := u32 LE offset of a full-key entry, one per `restart_interval` entries
//! count    := u32 LE number of restarts (≥ 1; the first restart is offset 0)
//! ```
//!
//! Data blocks and the index block share this format. A [`Block`] is validated when it is
//! built from bytes (restart array in bounds, strictly increasing, starting at 0), and a
//! [`BlockIter`] checks every varint and length as it decodes, so arbitrary bytes produce an
//! error, never a panic or an out-of-bounds read. This module knows nothing of files: errors
//! are short reasons that the table reader wraps with the file name and block offset.
#![deny(clippy::indexing_slicing)]

use std::cmp::Ordering;
use std::sync::Arc;

use super::coding::{get_varint32, put_varint32, read_u32_le};
use super::prefix_search::{first_not_less, Narrowed, PrefixSearch};
use crate::key::SeekOrder;

/// Why a block's bytes are invalid; the table reader adds the file and offset.
pub(crate) type BlockError = &'static str;

/// Bytes of the restart count at the end of a block.
const RESTART_COUNT_LEN: usize = 4;
/// Bytes of one restart offset.
const RESTART_LEN: usize = 4;

/// A decoded (uncompressed, checksum-verified) block, shared between the cache and iterators.
#[derive(Debug)]
pub struct Block {
    data: Vec<u8>,
    /// Where the restart array starts; entries occupy `data[..restarts_offset]`.
    restarts_offset: usize,
    num_restarts: usize,
    /// For an index block held for a table's life: the search aid its seeks use.
    search: Option<Box<PrefixSearch>>,
}

impl Block {
    /// Validates `data` as a block: restart count and array in bounds, restarts strictly
    /// increasing from 0 and pointing inside the entry area.
    pub(crate) fn new(data: Vec<u8>) -> Result<Self, BlockError> {
        let count_pos = data
            .len()
            .checked_sub(RESTART_COUNT_LEN)
            .ok_or("block shorter than its restart count")?;
        let num_restarts =
            read_u32_le(&data, count_pos).ok_or("block restart count unreadable")? as usize;
        if num_restarts == 0 {
            return Err("block has no restart points");
        }
        let restarts_len = num_restarts
            .checked_mul(RESTART_LEN)
            .ok_or("block restart count overflows")?;
        let restarts_offset = count_pos
            .checked_sub(restarts_len)
            .ok_or("block restart array larger than the block")?;
        let block = Block {
            data,
            restarts_offset,
            num_restarts,
            search: None,
        };
        let mut prev: Option<usize> = None;
        for i in 0..num_restarts {
            let r = block.restart(i).ok_or("block restart unreadable")?;
            match prev {
                None if r != 0 => return Err("block's first restart is not at offset 0"),
                Some(p) if r <= p => return Err("block restarts not strictly increasing"),
                _ => {}
            }
            // An empty block has the single restart 0 == restarts_offset.
            if r >= restarts_offset && !(r == 0 && restarts_offset == 0) {
                return Err("block restart points past the entries");
            }
            prev = Some(r);
        }
        Ok(block)
    }

    /// The block's bytes (entries and restart array).
    #[cfg(test)]
    pub(crate) fn data(&self) -> &[u8] {
        &self.data
    }

    /// Bytes this block holds in memory, for the cache's weight.
    pub(crate) fn charge_bytes(&self) -> u64 {
        (self.data.capacity() + std::mem::size_of::<Self>() + 64 + self.search_bytes()) as u64
    }

    /// Bytes of the block's contents and search aid, as a reader that pins it reports them.
    pub(crate) fn pinned_bytes(&self) -> usize {
        self.data.len() + self.search_bytes()
    }

    fn search_bytes(&self) -> usize {
        self.search.as_ref().map_or(0, |s| s.memory_bytes())
    }

    /// This block — one whose every entry is a restart point (an index block), held for
    /// the table's life — with the search aid its seeks in `order` use (see
    /// [`PrefixSearch`]). A block with an unreadable entry gets none: its seeks report the
    /// damage as before.
    pub(crate) fn with_prefix_search(mut self, order: impl Into<SeekOrder>) -> Self {
        let keys = (0..self.index_len())
            .map(|i| self.restart_key(i))
            .collect::<Result<Vec<&[u8]>, BlockError>>();
        if let Ok(keys) = keys {
            let search = PrefixSearch::build(order.into(), keys.iter().copied());
            self.search = Some(Box::new(search));
        }
        self
    }

    /// The byte offset of restart point `i`.
    #[inline]
    fn restart(&self, i: usize) -> Option<usize> {
        let pos = self
            .restarts_offset
            .checked_add(i.checked_mul(RESTART_LEN)?)?;
        read_u32_le(&self.data, pos).map(|r| r as usize)
    }

    /// The entry area (everything before the restart array).
    #[inline]
    fn entries(&self) -> &[u8] {
        self.data.get(..self.restarts_offset).unwrap_or_default()
    }

    /// The full key stored at restart point `i` (restart entries share nothing). On every
    /// step of a seek's binary search: it parses the header and slices the key, nothing
    /// more.
    #[inline]
    fn restart_key(&self, i: usize) -> Result<&[u8], BlockError> {
        let (p, key_len, _) = self.restart_header(i)?;
        let end = p
            .checked_add(key_len as usize)
            .ok_or("block key length overflows")?;
        self.entries()
            .get(p..end)
            .ok_or("block key runs past the entries")
    }

    /// The entry header at restart point `i`: where its key starts, and the key's and the
    /// value's lengths.
    #[inline]
    fn restart_header(&self, i: usize) -> Result<(usize, u32, u32), BlockError> {
        let entries = self.entries();
        let off = self.restart(i).ok_or("block restart unreadable")?;
        let (shared, p) = get_varint32(entries, off).ok_or("bad varint in block entry")?;
        let (unshared, p) = get_varint32(entries, p).ok_or("bad varint in block entry")?;
        let (vlen, p) = get_varint32(entries, p).ok_or("bad varint in block entry")?;
        if shared != 0 {
            return Err("block restart entry shares a prefix");
        }
        Ok((p, unshared, vlen))
    }

    /// The key and value of the entry at restart point `i`.
    pub(crate) fn restart_entry(&self, i: usize) -> Result<(&[u8], &[u8]), BlockError> {
        let (p, key_len, value_len) = self.restart_header(i)?;
        let entries = self.entries();
        let (key, value) = entry_ranges(p, key_len, value_len, entries.len())?;
        Ok((
            entries.get(key).unwrap_or_default(),
            entries.get(value).unwrap_or_default(),
        ))
    }

    /// In a block whose every entry is a restart point (an index block), the value of the
    /// first entry whose key is `>= target` in `order`, or `None` if every key is smaller —
    /// a binary search that, unlike a [`BlockIter`], allocates nothing.
    pub(crate) fn value_at_or_after(
        &self,
        target: &[u8],
        order: impl Into<SeekOrder>,
    ) -> Result<Option<&[u8]>, BlockError> {
        let i = self.index_seek(target, order)?;
        if i == self.index_len() {
            return Ok(None);
        }
        self.restart_entry(i).map(|(_, value)| Some(value))
    }

    /// Entries of a block whose every entry is a restart point.
    pub(crate) fn index_len(&self) -> usize {
        if self.entries().is_empty() {
            0
        } else {
            self.num_restarts
        }
    }

    /// In a block whose every entry is a restart point, the position of the first entry
    /// whose key is `>= target` in `order` ([`Block::index_len`] if none).
    pub(crate) fn index_seek(
        &self,
        target: &[u8],
        order: impl Into<SeekOrder>,
    ) -> Result<usize, BlockError> {
        let order = order.into();
        let compare = |i: usize| Ok(order.compare(self.restart_key(i)?, target));
        match self.search.as_deref().filter(|s| s.serves(order)) {
            Some(search) => match search.narrow(target) {
                Narrowed::At(i) => Ok(i),
                Narrowed::Among(lo, hi) => first_not_less(lo, hi, compare),
            },
            None => first_not_less(0, self.index_len(), compare),
        }
    }
}

/// The byte ranges of the (unshared part of the) key and of the value of an entry whose
/// header ends at `p`, both checked to lie within the `entries_len` bytes of entries.
#[inline]
fn entry_ranges(
    p: usize,
    key_len: u32,
    value_len: u32,
    entries_len: usize,
) -> Result<(std::ops::Range<usize>, std::ops::Range<usize>), BlockError> {
    let key_end = p
        .checked_add(key_len as usize)
        .ok_or("block key length overflows")?;
    let value_end = key_end
        .checked_add(value_len as usize)
        .ok_or("block value length overflows")?;
    if key_end > entries_len {
        return Err("block key runs past the entries");
    }
    if value_end > entries_len {
        return Err("block value runs past the entries");
    }
    Ok((p..key_end, key_end..value_end))
}

/// Builds one block in memory; reused across blocks by the table writer.
#[derive(Debug)]
pub(crate) struct BlockBuilder {
    buf: Vec<u8>,
    restarts: Vec<u32>,
    restart_interval: usize,
    /// Entries since the last restart point.
    counter: usize,
    entries: usize,
    last_key: Vec<u8>,
}

impl BlockBuilder {
    pub(crate) fn new(restart_interval: usize) -> Self {
        BlockBuilder {
            buf: Vec::new(),
            restarts: vec![0],
            restart_interval: restart_interval.max(1),
            counter: 0,
            entries: 0,
            last_key: Vec::new(),
        }
    }

    /// Appends an entry; the caller guarantees keys increase and the block stays < 4 GiB.
    pub(crate) fn add(&mut self, key: &[u8], value: &[u8]) {
        let shared = if self.counter < self.restart_interval {
            common_prefix_len(&self.last_key, key)
        } else {
            self.restarts.push(self.buf.len() as u32);
            self.counter = 0;
            0
        };
        let unshared = key.get(shared..).unwrap_or_default();
        put_varint32(&mut self.buf, shared as u32);
        put_varint32(&mut self.buf, unshared.len() as u32);
        put_varint32(&mut self.buf, value.len() as u32);
        self.buf.extend_from_slice(unshared);
        self.buf.extend_from_slice(value);
        self.last_key.truncate(shared);
        self.last_key.extend_from_slice(unshared);
        self.counter += 1;
        self.entries += 1;
    }

    /// The size the block will have once finished.
    pub(crate) fn size_estimate(&self) -> usize {
        self.buf.len() + self.restarts.len() * RESTART_LEN + RESTART_COUNT_LEN
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// Appends the restart array and returns the finished block (which the caller may extend
    /// with a trailer); call `reset` before adding to the builder again.
    pub(crate) fn finish_mut(&mut self) -> &mut Vec<u8> {
        for r in &self.restarts {
            self.buf.extend_from_slice(&r.to_le_bytes());
        }
        self.buf
            .extend_from_slice(&(self.restarts.len() as u32).to_le_bytes());
        &mut self.buf
    }

    /// Empties the builder, keeping its buffers.
    pub(crate) fn reset(&mut self) {
        self.buf.clear();
        self.restarts.clear();
        self.restarts.push(0);
        self.counter = 0;
        self.entries = 0;
        self.last_key.clear();
    }
}

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// A cursor over one block. Keys are decoded into a reused buffer; values are ranges of the
/// shared block, so moving the cursor allocates nothing once the key buffer has grown.
#[derive(Debug)]
pub(crate) struct BlockIter {
    block: Arc<Block>,
    key: Vec<u8>,
    value_start: usize,
    value_end: usize,
    /// Offset of the current entry.
    current: usize,
    /// Offset of the entry after the current one.
    next_offset: usize,
    /// Index of the first restart point at or after `next_offset`.
    next_restart: usize,
    valid: bool,
}

impl BlockIter {
    /// An unpositioned cursor over `block`.
    pub(crate) fn new(block: Arc<Block>) -> Self {
        BlockIter {
            block,
            key: Vec::new(),
            value_start: 0,
            value_end: 0,
            current: 0,
            next_offset: 0,
            next_restart: 0,
            valid: false,
        }
    }

    /// Points the cursor at another block, keeping the key buffer; unpositioned.
    pub(crate) fn reset(&mut self, block: Arc<Block>) {
        self.block = block;
        self.valid = false;
        self.key.clear();
    }

    pub(crate) fn valid(&self) -> bool {
        self.valid
    }

    /// The current key; empty when not valid.
    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// The current value; empty when not valid.
    pub(crate) fn value(&self) -> &[u8] {
        self.block
            .data
            .get(self.value_start..self.value_end)
            .unwrap_or_default()
    }

    /// Invalidates the cursor (after an error).
    pub(crate) fn invalidate(&mut self) {
        self.valid = false;
    }

    pub(crate) fn seek_to_first(&mut self) -> Result<(), BlockError> {
        self.seek_to_restart(0);
        self.advance()
    }

    /// Positions at the first entry after the current one.
    pub(crate) fn next(&mut self) -> Result<(), BlockError> {
        debug_assert!(self.valid);
        self.advance()
    }

    /// Positions at the first key `>= target` in `order`, or invalid if every key is smaller.
    pub(crate) fn seek(
        &mut self,
        target: &[u8],
        order: impl Into<SeekOrder>,
    ) -> Result<(), BlockError> {
        let order = order.into();
        if self
            .block
            .search
            .as_deref()
            .is_some_and(|s| s.serves(order))
        {
            // An index block with its search aid: every entry is a restart point.
            let i = self
                .block
                .index_seek(target, order)
                .inspect_err(|_| self.valid = false)?;
            if i >= self.block.index_len() {
                self.key.clear();
                self.valid = false;
                return Ok(());
            }
            self.seek_to_restart(i);
            return self.advance();
        }
        // Binary search for the last restart whose key is < target.
        let mut lo = 0usize;
        let mut hi = self.block.num_restarts.saturating_sub(1);
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            let key = self
                .block
                .restart_key(mid)
                .inspect_err(|_| self.valid = false)?;
            if order.compare(key, target) == Ordering::Less {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        // Scanning on from the current entry is cheaper when it lies in the same restart
        // interval, before the target (successive seeks in one block, e.g. point lookups).
        // (Every entry between restart `lo` and the current one is smaller than the current
        // key, hence than the target.)
        let resume = self.valid
            && self.block.restart(lo).is_some_and(|r| r <= self.current)
            && order.compare(&self.key, target) == Ordering::Less;
        if !resume {
            self.seek_to_restart(lo);
            self.advance()?;
        }
        while self.valid && order.compare(&self.key, target) == Ordering::Less {
            self.advance()?;
        }
        Ok(())
    }

    fn seek_to_restart(&mut self, i: usize) {
        self.key.clear();
        self.next_offset = self.block.restart(i).unwrap_or(0);
        self.next_restart = i;
        self.valid = false;
    }

    /// Decodes the entry at `next_offset`, or becomes invalid at the end of the entries.
    fn advance(&mut self) -> Result<(), BlockError> {
        let result = self.decode_next();
        if result.is_err() {
            self.valid = false;
        }
        result
    }

    #[inline]
    fn decode_next(&mut self) -> Result<(), BlockError> {
        let block = &*self.block;
        let entries = block.entries();
        let off = self.next_offset;
        if off >= entries.len() {
            self.valid = false;
            return Ok(());
        }
        let (shared, p) = get_varint32(entries, off).ok_or("bad varint in block entry")?;
        let (unshared, p) = get_varint32(entries, p).ok_or("bad varint in block entry")?;
        let (vlen, p) = get_varint32(entries, p).ok_or("bad varint in block entry")?;
        let shared = shared as usize;
        if shared > self.key.len() {
            return Err("block entry shares more than the previous key");
        }
        // Entries must start exactly at restart points, and those share nothing.
        if self.next_restart < block.num_restarts {
            let r = block
                .restart(self.next_restart)
                .ok_or("block restart unreadable")?;
            if r == off {
                if shared != 0 {
                    return Err("block restart entry shares a prefix");
                }
                self.next_restart += 1;
            } else if r < off {
                return Err("block restart point inside an entry");
            }
        }
        let (key, value) = entry_ranges(p, unshared, vlen, entries.len())?;
        self.key.truncate(shared);
        self.key
            .extend_from_slice(entries.get(key).unwrap_or_default());
        self.value_start = value.start;
        self.value_end = value.end;
        self.current = off;
        self.next_offset = self.value_end;
        self.valid = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::KeyOrder;
    use proptest::prelude::*;

    fn build(entries: &[(Vec<u8>, Vec<u8>)], interval: usize) -> Arc<Block> {
        let mut b = BlockBuilder::new(interval);
        for (k, v) in entries {
            b.add(k, v);
        }
        let estimate = b.size_estimate();
        let bytes = b.finish_mut().to_vec();
        assert_eq!(bytes.len(), estimate);
        Arc::new(Block::new(bytes).unwrap())
    }

    fn collect(it: &mut BlockIter) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        it.seek_to_first().unwrap();
        while it.valid() {
            out.push((it.key().to_vec(), it.value().to_vec()));
            it.next().unwrap();
        }
        out
    }

    fn sample(n: usize) -> Vec<(Vec<u8>, Vec<u8>)> {
        (0..n)
            .map(|i| {
                (
                    format!("key{:05}", i * 2).into_bytes(),
                    format!("v{i}").into_bytes(),
                )
            })
            .collect()
    }

    #[test]
    fn entries_round_trip_across_restart_boundaries() {
        for interval in [1, 2, 3, 16, 100] {
            for n in [0, 1, 2, 15, 16, 17, 33, 100] {
                let entries = sample(n);
                let block = build(&entries, interval);
                let mut it = BlockIter::new(block);
                assert_eq!(collect(&mut it), entries, "interval {interval} n {n}");
            }
        }
    }

    #[test]
    fn seek_lands_on_first_key_at_or_after_target() {
        for interval in [1, 4, 16] {
            let entries = sample(50);
            let block = build(&entries, interval);
            let mut it = BlockIter::new(block);
            // Exact keys, keys between entries, before the first and past the last.
            for i in 0..50 {
                it.seek(&entries[i].0, KeyOrder::Bytewise).unwrap();
                assert_eq!(it.key(), &entries[i].0[..]);
                let between = format!("key{:05}", i * 2 + 1).into_bytes();
                it.seek(&between, KeyOrder::Bytewise).unwrap();
                if i + 1 < 50 {
                    assert_eq!(it.key(), &entries[i + 1].0[..]);
                } else {
                    assert!(!it.valid());
                }
            }
            it.seek(b"", KeyOrder::Bytewise).unwrap();
            assert_eq!(it.key(), &entries[0].0[..]);
            it.seek(b"zzz", KeyOrder::Bytewise).unwrap();
            assert!(!it.valid());
            // Resuming from a valid position and going backwards both work.
            it.seek(&entries[10].0, KeyOrder::Bytewise).unwrap();
            it.seek(&entries[12].0, KeyOrder::Bytewise).unwrap();
            assert_eq!(it.key(), &entries[12].0[..]);
            it.seek(&entries[3].0, KeyOrder::Bytewise).unwrap();
            assert_eq!(it.key(), &entries[3].0[..]);
        }
    }

    #[test]
    fn malformed_restart_arrays_are_rejected() {
        assert!(Block::new(vec![]).is_err());
        assert!(Block::new(vec![0, 0, 0, 0]).is_err());
        assert!(Block::new(vec![0, 0, 0, 0, 1, 0, 0, 0]).is_ok());
        assert!(Block::new(vec![0xff, 0xff, 0xff, 0xff]).is_err());
        // First restart must be 0; restarts must increase and stay inside the entries.
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        assert!(Block::new(b).is_err());
        let mut b = vec![0u8; 8];
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        assert!(Block::new(b).is_err());
    }

    proptest! {
        #[test]
        fn arbitrary_bytes_as_a_block_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..200),
            target in proptest::collection::vec(any::<u8>(), 0..8),
        ) {
            if let Ok(block) = Block::new(bytes) {
                let mut it = BlockIter::new(Arc::new(block));
                let mut steps = 0;
                if it.seek_to_first().is_ok() {
                    while it.valid() && steps < 1000 {
                        let _ = (it.key(), it.value());
                        if it.next().is_err() { break; }
                        steps += 1;
                    }
                }
                let _ = it.seek(&target, KeyOrder::Bytewise);
                let _ = it.seek(&target, KeyOrder::Internal);
                let _ = it.block.value_at_or_after(&target, KeyOrder::Bytewise);
            }
        }

        /// In an index-like block (every entry a restart), the allocation-free lookup finds
        /// what a cursor's seek finds.
        #[test]
        fn value_at_or_after_agrees_with_seek(
            keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..6), 0..40),
            targets in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..7), 1..20),
        ) {
            let entries: Vec<(Vec<u8>, Vec<u8>)> =
                keys.into_iter().enumerate().map(|(i, k)| (k, vec![i as u8; 1 + i % 3])).collect();
            let block = build(&entries, 1);
            let mut it = BlockIter::new(Arc::clone(&block));
            for target in &targets {
                it.seek(target, KeyOrder::Bytewise).unwrap();
                let expected = it.valid().then(|| it.value().to_vec());
                let found = block.value_at_or_after(target, KeyOrder::Bytewise).unwrap();
                prop_assert_eq!(found.map(<[u8]>::to_vec), expected);
            }
        }

        /// An index block's search aid finds, for every sought key, what the plain binary
        /// search finds — keys sharing long prefixes, equal 8-byte windows past them, keys
        /// that are prefixes of others, and sought keys outside the shared prefix.
        #[test]
        fn the_search_aid_finds_what_the_binary_search_finds(
            prefix in proptest::collection::vec(0u8..2, 0..10),
            users in proptest::collection::vec(proptest::collection::vec(
                prop_oneof![Just(0u8), Just(1), Just(0xff)], 0..12), 0..200),
            targets in proptest::collection::vec((proptest::collection::vec(
                prop_oneof![Just(0u8), Just(1), Just(0xff)], 0..14), any::<bool>(), 0u64..3), 1..30),
            internal in any::<bool>(),
            same_word in any::<bool>(),
        ) {
            let order = if internal { KeyOrder::Internal } else { KeyOrder::Bytewise };
            // With `same_word`, every key's 8 bytes past the shared prefix are equal: long
            // runs of equal words, resolved by whole keys.
            let word: &[u8] = if same_word { &[7; 8] } else { &[] };
            let key = |user: &[u8], ts: u64| {
                let user = [&prefix[..], word, user].concat();
                if internal {
                    crate::key::internal_key(&user, ts, crate::key::Seqno(1), crate::key::ValueKind::Put)
                } else {
                    user
                }
            };
            let mut keys: Vec<Vec<u8>> = users.iter().enumerate().map(|(i, u)| key(u, i as u64 % 3)).collect();
            keys.sort_by(|a, b| order.compare(a, b));
            keys.dedup();
            let entries: Vec<(Vec<u8>, Vec<u8>)> =
                keys.into_iter().enumerate().map(|(i, k)| (k, vec![i as u8])).collect();
            let plain = build(&entries, 1);
            let aided = Arc::new(Block::new(plain.data().to_vec()).unwrap().with_prefix_search(order));
            let mut it = BlockIter::new(Arc::clone(&aided));
            for (user, shared, ts) in &targets {
                let target = if *shared { key(user, *ts) } else if internal {
                    crate::key::internal_key(user, *ts, crate::key::Seqno(1), crate::key::ValueKind::Put)
                } else {
                    user.clone()
                };
                let want = plain.index_seek(&target, order).unwrap();
                prop_assert_eq!(aided.index_seek(&target, order).unwrap(), want);
                it.seek(&target, order).unwrap();
                prop_assert_eq!(it.valid().then(|| it.key().to_vec()),
                    entries.get(want).map(|(k, _)| k.clone()));
            }
        }

        #[test]
        fn sorted_entries_round_trip(
            keys in proptest::collection::btree_set(proptest::collection::vec(any::<u8>(), 0..12), 0..60),
            interval in 1usize..20,
        ) {
            let entries: Vec<(Vec<u8>, Vec<u8>)> =
                keys.into_iter().enumerate().map(|(i, k)| (k, vec![i as u8; i % 5])).collect();
            let block = build(&entries, interval);
            let mut it = BlockIter::new(block);
            prop_assert_eq!(collect(&mut it), entries.clone());
            for (k, v) in &entries {
                it.seek(k, KeyOrder::Bytewise).unwrap();
                prop_assert_eq!(it.key(), &k[..]);
                prop_assert_eq!(it.value(), &v[..]);
            }
        }
    }
}
