//! A search aid for an index block held in memory for a table's life (a pinned index, its
//! pinned partitions and top-level blocks).
//!
//! A seek's binary search over an index block costs two cache misses per step — the
//! restart offset, then the entry's key — in a block of hundreds of kilobytes; a read-path
//! profile put a fifth to a third of a point lookup there. This aid keeps, for every entry,
//! the 8 bytes of its key that follow the prefix all the block's keys share, as one
//! big-endian integer in a dense array: the search runs over that array (an eighth of the
//! block, its upper steps in the CPU cache) and compares whole keys only among the entries
//! whose 8 bytes equal the sought key's, usually one or none.
//!
//! It is exact because the integers are monotone in the order the index is searched in: a
//! key is compared by its *search key* first (the whole key in bytewise order, the user key
//! of an internal key or of a marked separator), and an entry whose integer is below the
//! sought key's has a smaller search key, so it is below the sought key whatever follows.
#![deny(clippy::indexing_slicing)]

use std::cmp::Ordering;

use crate::key::{marked_user_key, user_key, KeyOrder, SeekOrder};

/// Bytes of each entry's search key kept in the array.
const WORD_BYTES: usize = 8;
/// One word in this many is also kept in a summary array: a seek searches the summary (a
/// sixteenth of the words, which stays in the CPU cache across seeks), then the stretch of
/// 16 words it points at (two cache lines), instead of binary-searching all the words and
/// missing the cache on each of the last steps.
const STRIDE: usize = 16;

/// The search key of an index entry: the part of it compared first in `order`.
fn entry_search_key(order: SeekOrder, entry: &[u8]) -> &[u8] {
    match order {
        SeekOrder::Keys(KeyOrder::Bytewise) => entry,
        SeekOrder::Keys(KeyOrder::Internal) => user_key(entry),
        SeekOrder::MarkedSeparators => marked_user_key(entry).unwrap_or_else(|| user_key(entry)),
    }
}

/// The search key of a sought key.
fn target_search_key(order: SeekOrder, target: &[u8]) -> &[u8] {
    match order {
        SeekOrder::Keys(KeyOrder::Bytewise) => target,
        _ => user_key(target),
    }
}

/// `WORD_BYTES` bytes of `key` from `from` on, zero-padded, as a big-endian integer.
fn word_at(key: &[u8], from: usize) -> u64 {
    let mut bytes = [0u8; WORD_BYTES];
    let tail = key.get(from..).unwrap_or_default();
    let n = tail.len().min(WORD_BYTES);
    if let (Some(dst), Some(src)) = (bytes.get_mut(..n), tail.get(..n)) {
        dst.copy_from_slice(src);
    }
    u64::from_be_bytes(bytes)
}

/// See the module doc.
#[derive(Debug)]
pub(crate) struct PrefixSearch {
    order: SeekOrder,
    /// The bytes every entry's search key starts with.
    shared: Box<[u8]>,
    /// Each entry's search key's next `WORD_BYTES` bytes (zero-padded), big-endian.
    words: Box<[u64]>,
    /// Every `STRIDE`-th word, from the first.
    summary: Box<[u64]>,
}

/// Where a seek must look, as [`PrefixSearch::narrow`] found.
pub(crate) enum Narrowed {
    /// The first entry `>= target` is at this position (the entry count if none is).
    At(usize),
    /// It is the first entry `>= target` among positions `lo..hi`, or `hi` if none is.
    Among(usize, usize),
}

impl PrefixSearch {
    /// The aid for entries whose keys `keys` yields in order, searched in `order`.
    pub(crate) fn build<'a>(
        order: SeekOrder,
        keys: impl Iterator<Item = &'a [u8]> + Clone,
    ) -> Self {
        let mut shared: Option<&[u8]> = None;
        for key in keys.clone() {
            let k = entry_search_key(order, key);
            shared = Some(match shared {
                None => k,
                Some(s) => {
                    let p = s.iter().zip(k).take_while(|(a, b)| a == b).count();
                    s.get(..p).unwrap_or_default()
                }
            });
        }
        let shared: Box<[u8]> = shared.unwrap_or_default().into();
        let words: Box<[u64]> = keys
            .map(|key| word_at(entry_search_key(order, key), shared.len()))
            .collect();
        let summary = words.iter().step_by(STRIDE).copied().collect();
        PrefixSearch {
            order,
            shared,
            words,
            summary,
        }
    }

    /// Whether the aid was built for searches in `order`.
    pub(crate) fn serves(&self, order: SeekOrder) -> bool {
        self.order == order
    }

    /// Narrows where the first entry `>= target` is.
    pub(crate) fn narrow(&self, target: &[u8]) -> Narrowed {
        let t = target_search_key(self.order, target);
        let n = self.words.len();
        match t.get(..self.shared.len()) {
            Some(p) if *p == *self.shared => {}
            // Below every entry's shared prefix (or a proper prefix of it): every entry
            // is above the target; above it: every entry is below.
            _ => {
                return Narrowed::At(if t < &*self.shared { 0 } else { n });
            }
        }
        let w = word_at(t, self.shared.len());
        // The first word >= w is after the last stretch whose first word is < w, and at or
        // before the next stretch's first word.
        let j = self.summary.partition_point(|&x| x < w);
        let from = j.saturating_sub(1) * STRIDE;
        let to = (j * STRIDE).min(n);
        let lo = from
            + self
                .words
                .get(from..to)
                .unwrap_or_default()
                .partition_point(|&x| x < w);
        // Entries whose word equals w: usually none or one, so counted on from `lo`.
        let rest = self.words.get(lo..).unwrap_or_default();
        let equal = match rest.iter().take(STRIDE).position(|&x| x != w) {
            Some(k) => k,
            None if rest.len() <= STRIDE => rest.len(),
            None => rest.partition_point(|&x| x == w),
        };
        if equal == 0 {
            Narrowed::At(lo)
        } else {
            Narrowed::Among(lo, lo + equal)
        }
    }

    /// Bytes of memory the aid holds.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.shared.len()
            + (self.words.len() + self.summary.len()) * WORD_BYTES
            + std::mem::size_of::<Self>()
    }
}

/// The first position in `lo..hi` whose entry is `>= target`, by binary search with
/// `compare(position)` (the entry's order against the target), or `hi` if none is.
pub(crate) fn first_not_less<E>(
    mut lo: usize,
    mut hi: usize,
    mut compare: impl FnMut(usize) -> Result<Ordering, E>,
) -> Result<usize, E> {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if compare(mid)? == Ordering::Less {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok(lo)
}
