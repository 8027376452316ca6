//! Reads of a canonical key range from a tree in another order than the declared one.
//!
//! One partition at a time: its head (header, range tombstones, static row) as stored,
//! then its rows from the key ranges the tree's order allows for the read's filter
//! (`KeySchema::permuted_ranges`), checked against the rest of the filter, re-keyed
//! canonically and sorted. Sorting needs every planned row of the partition, whatever part
//! of it the read asked for — so a reader paging through a large partition (a client, or
//! repair reading 1,000 entries at a time) would sort it again for every page. Each tree
//! therefore remembers its last large sorted partition ([`SortedKeys`]: the canonical keys
//! only, packed) for as long as no write reached the tree since it was built; later pages
//! find their keys in it by binary search and read each row's value with a point read.
//! A large partition is sorted as keys alone (values are read back by key for the rows a
//! page returns), so memory holds keys, bounded by [`CACHE_BYTES_MAX`] per tree for the
//! remembered one; a larger partition is sorted again for every page.

use std::collections::VecDeque;
use std::ops::Bound;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use mosaic_lsm::{Db, Entry, Error, Result};
use mosaic_rows::{key::tag, ClusteringFilter, KeyRange, KeySchema, Permutation};
use parking_lot::Mutex;

use super::ReadCounters;

/// Partitions with fewer rows passing the filter are sorted with their values and not
/// remembered (sorting them again is cheap); larger ones are sorted as keys alone.
const CACHE_ROWS_MIN: usize = 1024;
/// The most key bytes a tree's remembered partition holds (a partition of millions of
/// rows); a larger one is sorted again for every page.
pub const CACHE_BYTES_MAX: usize = 512 << 20;

/// What a tree's reads share: its write counters, which tell whether a remembered sorted
/// partition is still what the tree holds, and that partition.
#[derive(Debug, Default)]
pub(crate) struct TreeState {
    writes_started: AtomicU64,
    writes_finished: AtomicU64,
    sorted: Mutex<Option<Arc<SortedKeys>>>,
}

impl TreeState {
    /// Runs a write of the tree, counted so remembered partitions know they are stale.
    pub(crate) fn write<T>(&self, write: impl FnOnce() -> T) -> T {
        self.writes_started.fetch_add(1, Ordering::SeqCst);
        let out = write();
        self.writes_finished.fetch_add(1, Ordering::SeqCst);
        out
    }

    /// The tree's write version when no write is in flight.
    fn quiet_version(&self) -> Option<u64> {
        let started = self.writes_started.load(Ordering::SeqCst);
        (self.writes_finished.load(Ordering::SeqCst) == started).then_some(started)
    }

    /// The remembered sorted partition for `prefix` and `filter`, if still current.
    fn lookup(&self, prefix: &[u8], filter: &[u8]) -> Option<Arc<SortedKeys>> {
        let version = self.quiet_version()?;
        let sorted = self.sorted.lock().clone()?;
        (sorted.version == version && sorted.prefix == prefix && sorted.filter == filter)
            .then_some(sorted)
    }
}

/// A partition's rows passing a filter, as sorted canonical keys packed in one buffer.
#[derive(Debug)]
struct SortedKeys {
    prefix: Vec<u8>,
    filter: Vec<u8>,
    version: u64,
    bytes: Vec<u8>,
    /// Where each key ends in `bytes`.
    ends: Vec<usize>,
}

impl SortedKeys {
    fn key(&self, i: usize) -> &[u8] {
        let start = match i.checked_sub(1) {
            Some(p) => self.ends.get(p).copied().unwrap_or(0),
            None => 0,
        };
        let end = self.ends.get(i).copied().unwrap_or(start);
        self.bytes.get(start..end).unwrap_or_default()
    }

    /// The first index whose key is not below `key`.
    fn lower_bound(&self, key: &[u8]) -> usize {
        let (mut lo, mut hi) = (0, self.ends.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.key(mid) < key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// Where the current partition's rows come from.
enum Rows {
    /// Sorted here, values included.
    Owned(VecDeque<(Vec<u8>, Entry)>),
    /// A remembered sorted partition: keys `next..end` still to read, values by point read.
    Remembered {
        keys: Arc<SortedKeys>,
        next: usize,
        end: usize,
    },
}

/// See the module doc.
pub(crate) struct PermutedScan {
    pub(crate) counters: Arc<ReadCounters>,
    pub(crate) state: Arc<TreeState>,
    pub(crate) db: Db,
    pub(crate) perm: Permutation,
    pub(crate) schema: KeySchema,
    pub(crate) filter: ClusteringFilter,
    pub(crate) range: KeyRange,
    /// Where partitions are looked for up to: past the end of the range's last partition.
    pub(crate) scan_end: Option<Vec<u8>>,
    /// Where the next partition is looked for; `None` when the range is done.
    pub(crate) cursor: Option<Vec<u8>>,
    /// The current partition's head entries, then its rows.
    pub(crate) head: VecDeque<(Vec<u8>, Entry)>,
    rows: Rows,
}

fn corrupt(e: mosaic_rows::KeyError) -> Error {
    Error::corruption(
        PathBuf::new(),
        0,
        format!("a stored key does not decode: {e}"),
    )
}

impl PermutedScan {
    /// A scan of `range` (canonical) from `db`, whose keys are in order `perm`; `scan_end`
    /// and `cursor` as the fields say.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        counters: Arc<ReadCounters>,
        state: Arc<TreeState>,
        db: Db,
        perm: Permutation,
        schema: KeySchema,
        filter: ClusteringFilter,
        range: KeyRange,
        scan_end: Option<Vec<u8>>,
        cursor: Vec<u8>,
    ) -> PermutedScan {
        PermutedScan {
            counters,
            state,
            db,
            perm,
            schema,
            filter,
            range,
            scan_end,
            cursor: Some(cursor),
            head: VecDeque::new(),
            rows: Rows::Owned(VecDeque::new()),
        }
    }

    /// Reads the next partition of the range; `false` when none is left.
    fn fill(&mut self) -> Result<bool> {
        let Some(cursor) = self.cursor.take() else {
            return Ok(false);
        };
        let end = match &self.scan_end {
            Some(e) => Bound::Excluded(e.as_slice()),
            None => Bound::Unbounded,
        };
        let first = match self.db.scan(Bound::Included(&cursor), end)?.next() {
            Some(item) => item?.0,
            None => return Ok(false),
        };
        let prefix_len = self.schema.partition_prefix_len(&first).map_err(corrupt)?;
        let prefix = first.get(..prefix_len).unwrap_or_default().to_vec();
        let mut partition_end = prefix.clone();
        partition_end.push(tag::PARTITION_END);
        // The head: header, range tombstones, static row, stored canonically.
        let mut head_end = prefix.clone();
        head_end.push(tag::BEFORE);
        let head_start = self.range.start.clone().max(prefix.clone());
        let head_end = match &self.range.end {
            Some(e) if *e < head_end => e.clone(),
            _ => head_end,
        };
        if head_start < head_end {
            for item in self
                .db
                .scan(Bound::Included(&head_start), Bound::Excluded(&head_end))?
            {
                self.head.push_back(item?);
            }
        }
        self.rows = self.partition_rows(&prefix)?;
        if self.scan_end.as_ref().is_none_or(|e| partition_end < *e) {
            self.cursor = Some(partition_end);
        }
        Ok(true)
    }

    /// The rows of partition `prefix` inside the range, sorted canonically.
    fn partition_rows(&self, prefix: &[u8]) -> Result<Rows> {
        let filter_bytes = self.filter.encode();
        let range_of = |keys: &SortedKeys| {
            let next = keys.lower_bound(&self.range.start);
            let end = match &self.range.end {
                Some(e) => keys.lower_bound(e),
                None => keys.ends.len(),
            };
            (next, end.max(next))
        };
        if let Some(keys) = self.state.lookup(prefix, &filter_bytes) {
            let (next, end) = range_of(&keys);
            return Ok(Rows::Remembered { keys, next, end });
        }
        let version = self.state.quiet_version();
        // Values are kept only while the partition is small; past that, keys alone are
        // sorted and the page's values are read back by key (memory: the keys).
        let mut rows: Vec<(Vec<u8>, Option<Entry>)> = Vec::new();
        let mut keys_only = false;
        for (lo, hi) in self
            .schema
            .permuted_ranges(prefix, &self.filter, &self.perm)
        {
            for item in self.db.scan(Bound::Included(&lo), Bound::Excluded(&hi))? {
                let (key, entry) = item?;
                self.counters.rows_scanned.fetch_add(1, Ordering::Relaxed);
                let Some(spans) = self.schema.row_spans(&key, &self.perm).map_err(corrupt)? else {
                    continue;
                };
                let passes =
                    spans
                        .components
                        .iter()
                        .zip(self.perm.positions())
                        .all(|(span, declared)| {
                            self.filter
                                .column(*declared)
                                .matches(key.get(span.clone()).unwrap_or_default())
                        });
                if !passes {
                    continue;
                }
                let canonical = self
                    .schema
                    .canonical_key(&key, &self.perm)
                    .map_err(corrupt)?;
                if !keys_only && rows.len() >= CACHE_ROWS_MIN {
                    keys_only = true;
                    rows.iter_mut().for_each(|(_, e)| *e = None);
                }
                rows.push((canonical, (!keys_only).then_some(entry)));
            }
        }
        rows.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        if !keys_only {
            let start = rows.partition_point(|(k, _)| *k < self.range.start);
            let end = match &self.range.end {
                Some(e) => rows.partition_point(|(k, _)| k < e),
                None => rows.len(),
            };
            rows.truncate(end.max(start));
            let out: VecDeque<(Vec<u8>, Entry)> = rows
                .into_iter()
                .skip(start)
                .filter_map(|(k, e)| e.map(|e| (k, e)))
                .collect();
            return Ok(Rows::Owned(out));
        }
        let key_bytes: usize = rows.iter().map(|(k, _)| k.len()).sum();
        let mut bytes = Vec::with_capacity(key_bytes);
        let mut ends = Vec::with_capacity(rows.len());
        for (k, _) in rows {
            bytes.extend_from_slice(&k);
            ends.push(bytes.len());
        }
        let keys = Arc::new(SortedKeys {
            prefix: prefix.to_vec(),
            filter: filter_bytes,
            version: version.unwrap_or(u64::MAX),
            bytes,
            ends,
        });
        // Remembered only when nothing was written meanwhile: then it is what the tree
        // holds at `version`.
        if let Some(v) = version {
            if key_bytes <= CACHE_BYTES_MAX && self.state.quiet_version() == Some(v) {
                *self.state.sorted.lock() = Some(keys.clone());
            }
        }
        let (next, end) = range_of(&keys);
        Ok(Rows::Remembered { keys, next, end })
    }

    /// The next row of the current partition.
    fn next_row(&mut self) -> Result<Option<(Vec<u8>, Entry)>> {
        match &mut self.rows {
            Rows::Owned(rows) => Ok(rows.pop_front()),
            Rows::Remembered { keys, next, end } => {
                while *next < *end {
                    let key = keys.key(*next).to_vec();
                    *next += 1;
                    self.counters.rows_scanned.fetch_add(1, Ordering::Relaxed);
                    let stored = self.schema.permute_key(&key, &self.perm).map_err(corrupt)?;
                    // Deleted since (a purge by compaction): nothing to answer.
                    if let Some(entry) = self.db.get(&stored)? {
                        return Ok(Some((key, entry)));
                    }
                }
                Ok(None)
            }
        }
    }
}

impl Iterator for PermutedScan {
    type Item = Result<(Vec<u8>, Entry)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.head.pop_front() {
                return Some(Ok(item));
            }
            match self.next_row() {
                Ok(Some(row)) => return Some(Ok(row)),
                Ok(None) => {}
                Err(e) => {
                    self.cursor = None;
                    return Some(Err(e));
                }
            }
            match self.fill() {
                Ok(true) => continue,
                Ok(false) => return None,
                Err(e) => {
                    self.cursor = None;
                    return Some(Err(e));
                }
            }
        }
    }
}
