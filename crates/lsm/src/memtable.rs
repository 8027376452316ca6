//! The memtable: a concurrent skiplist of internal keys, sized by a byte budget.
//!
//! Each entry is one allocation holding the internal key and the value side by side; the
//! skiplist orders entries by [`compare_internal`]. Writers insert concurrently with readers;
//! a full memtable is frozen (made immutable) and flushed in the background while a new one
//! takes writes.
//!
//! Under a merge operator a memtable is *cumulative*: a write to a key the memtable already
//! holds is stored merged with that key's newest version there (its timestamp the newer
//! of the two), so every version is the merge of all versions of its key in this memtable
//! with a smaller sequence number, and the newest timestamp goes with the newest sequence
//! number. A reader at sequence number `s` then needs only the first version at or below
//! `s` of each key ([`Memtable::get`], [`MemIter::visible_at`]), however often the key was
//! updated: a hot row updated thousands of times costs a read one version, not thousands
//! (Cassandra's memtable merges updates into the row in place to the same end). Older
//! versions stay for readers of older snapshots; flushes keep only what readers can need.
//! Writes are inserted by one thread at a time (the engine's write leader, or recovery),
//! which is what makes reading the newest version and inserting the merge safe.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use crossbeam_skiplist::SkipMap;

use crate::key::{compare_internal, encode_internal, parse_internal, Seqno, ValueKind};
use crate::merge::{MergeOperator, Version};

/// Per-entry overhead charged against the byte budget: skiplist node, tower, Arc header.
const ENTRY_OVERHEAD_BYTES: usize = 96;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// A per-thread insert buffer larger than this is released after use.
const SCRATCH_KEEP_BYTES_MAX: usize = 1 << 20;

/// An entry: internal key and value in one shared allocation.
#[derive(Clone)]
pub struct MemEntry {
    data: Arc<[u8]>,
    key_len: u32,
}

impl MemEntry {
    /// The internal key.
    pub fn key(&self) -> &[u8] {
        self.data.get(..self.key_len as usize).unwrap_or_default()
    }

    /// The value.
    pub fn value(&self) -> &[u8] {
        self.data.get(self.key_len as usize..).unwrap_or_default()
    }

    fn probe(ikey: &[u8]) -> Self {
        Self {
            data: Arc::from(ikey),
            key_len: ikey.len() as u32,
        }
    }
}

impl PartialEq for MemEntry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for MemEntry {}
impl PartialOrd for MemEntry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for MemEntry {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_internal(self.key(), other.key())
    }
}

/// A version found in a memtable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemVersion {
    /// Caller timestamp.
    pub ts: u64,
    /// Sequence number.
    pub seqno: Seqno,
    /// Kind.
    pub kind: ValueKind,
    /// Value bytes.
    pub value: Vec<u8>,
}

/// The memory one entry is charged: its internal key, its value and the skiplist's
/// overhead. The node engine's memtable budget reserves exactly this before a write.
pub fn charge_bytes(key_len: usize, value_len: usize) -> usize {
    key_len + crate::key::TRAILER_LEN + value_len + ENTRY_OVERHEAD_BYTES
}

/// A memtable. It remembers the oldest write-ahead log file holding one of its writes, so
/// that file is kept until the memtable is flushed.
pub struct Memtable {
    map: SkipMap<MemEntry, ()>,
    /// Set for a cumulative memtable (see the module doc).
    merge: Option<Arc<dyn MergeOperator>>,
    oldest_wal: AtomicU64,
    max_seqno: AtomicU64,
    size_bytes: AtomicUsize,
    min_ts: AtomicU64,
    max_ts: AtomicU64,
    entries: AtomicU64,
    /// Which key prefixes it may hold (see [`Memtable::with_prefix_filter`]).
    prefixes: Option<crate::memfilter::PrefixFilter>,
}

impl Default for Memtable {
    fn default() -> Self {
        Self::new()
    }
}

impl Memtable {
    /// An empty memtable that keeps every version as written.
    pub fn new() -> Self {
        Self::with_merge(None)
    }

    /// An empty memtable, cumulative under `merge` (see the module doc).
    pub fn with_merge(merge: Option<Arc<dyn MergeOperator>>) -> Self {
        Self {
            map: SkipMap::new(),
            merge,
            oldest_wal: AtomicU64::new(u64::MAX),
            max_seqno: AtomicU64::new(0),
            size_bytes: AtomicUsize::new(0),
            min_ts: AtomicU64::new(u64::MAX),
            max_ts: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            prefixes: None,
        }
    }

    /// The memtable, keeping a filter over the first `prefix_bytes` bytes of its keys (none
    /// for 0), which [`Memtable::may_hold_prefix`] answers from.
    pub fn with_prefix_filter(mut self, prefix_bytes: usize) -> Self {
        self.prefixes =
            (prefix_bytes > 0).then(|| crate::memfilter::PrefixFilter::new(prefix_bytes));
        self
    }

    /// Whether the memtable may hold keys starting with `prefix` (always, without a filter
    /// over prefixes of that length).
    pub fn may_hold_prefix(&self, prefix: &[u8]) -> bool {
        self.prefixes.as_ref().is_none_or(|f| f.may_contain(prefix))
    }

    /// Records that WAL file `id` holds some of this memtable's writes.
    pub fn note_wal(&self, id: u64) {
        self.oldest_wal.fetch_min(id, AtomicOrdering::SeqCst);
    }

    /// The oldest WAL file holding one of this memtable's writes (`None`: none does).
    pub fn oldest_wal(&self) -> Option<u64> {
        let id = self.oldest_wal.load(AtomicOrdering::SeqCst);
        (id != u64::MAX).then_some(id)
    }

    /// The largest sequence number inserted (0 when empty).
    pub fn max_seqno(&self) -> u64 {
        self.max_seqno.load(AtomicOrdering::SeqCst)
    }

    /// Approximate memory used, in bytes.
    pub fn size_bytes(&self) -> usize {
        self.size_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Number of entries.
    pub fn entries(&self) -> u64 {
        self.entries.load(AtomicOrdering::Relaxed)
    }

    /// Whether the memtable holds nothing.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Smallest caller timestamp held (`u64::MAX` when empty).
    pub fn min_ts(&self) -> u64 {
        self.min_ts.load(AtomicOrdering::Relaxed)
    }

    /// Largest caller timestamp held (0 when empty).
    pub fn max_ts(&self) -> u64 {
        self.max_ts.load(AtomicOrdering::Relaxed)
    }

    /// Whether every version of a key holds the older ones (see the module doc).
    pub fn is_cumulative(&self) -> bool {
        self.merge.is_some()
    }

    /// Inserts one version and returns the bytes it is charged ([`charge_bytes`]). In a
    /// cumulative memtable the version stored is the merge with the key's newest one, and
    /// writes must come from one thread at a time; otherwise safe from many threads.
    pub fn insert(
        &self,
        key: &[u8],
        ts: u64,
        seqno: Seqno,
        kind: ValueKind,
        value: &[u8],
    ) -> usize {
        let Some(op) = &self.merge else {
            return self.insert_version(key, ts, seqno, kind, value);
        };
        let probe = MemEntry::probe(&crate::key::seek_key(key));
        let newest = self
            .map
            .lower_bound(Bound::Included(&probe))
            .map(|e| e.key().clone());
        let held = newest.as_ref().and_then(|e| {
            let p = parse_internal(e.key())?;
            (p.user_key == key).then_some(Version {
                ts: p.ts,
                kind: p.kind,
                value: e.value(),
            })
        });
        let Some(held) = held else {
            return self.insert_version(key, ts, seqno, kind, value);
        };
        let new = Version { ts, kind, value };
        let versions = if held.ts > ts {
            [held, new]
        } else {
            [new, held]
        };
        let merged = op.merge(key, &versions);
        // The merge carries the older timestamps of its cells; the memtable's oldest
        // timestamp must still count this write's.
        self.min_ts.fetch_min(ts, AtomicOrdering::Relaxed);
        self.insert_version(
            key,
            merged.ts.max(held.ts),
            seqno,
            merged.kind,
            &merged.value,
        )
    }

    /// Inserts one version as it is.
    fn insert_version(
        &self,
        key: &[u8],
        ts: u64,
        seqno: Seqno,
        kind: ValueKind,
        value: &[u8],
    ) -> usize {
        // Build the entry in a per-thread buffer so the shared allocation is the only one.
        let (data, key_len) = SCRATCH.with(|scratch| {
            let mut buf = scratch.borrow_mut();
            buf.clear();
            encode_internal(&mut buf, key, ts, seqno, kind);
            let key_len = buf.len() as u32;
            buf.extend_from_slice(value);
            let data: Arc<[u8]> = Arc::from(buf.as_slice());
            if buf.capacity() > SCRATCH_KEEP_BYTES_MAX {
                *buf = Vec::new();
            }
            (data, key_len)
        });
        let charge = data.len() + ENTRY_OVERHEAD_BYTES;
        // Before the skiplist: whoever can see the entry sees its prefix noted.
        if let Some(f) = &self.prefixes {
            f.insert_key(key);
        }
        self.map.insert(MemEntry { data, key_len }, ());
        self.size_bytes.fetch_add(charge, AtomicOrdering::Relaxed);
        self.entries.fetch_add(1, AtomicOrdering::Relaxed);
        self.min_ts.fetch_min(ts, AtomicOrdering::Relaxed);
        self.max_ts.fetch_max(ts, AtomicOrdering::Relaxed);
        self.max_seqno.fetch_max(seqno.0, AtomicOrdering::SeqCst);
        charge
    }

    /// Every version of `user_key` with a sequence number at most `snapshot`, in internal
    /// order (newest timestamp first), appended to `out` — in a cumulative memtable only
    /// the first, which holds the others.
    pub fn get(&self, user_key: &[u8], snapshot: Seqno, out: &mut Vec<MemVersion>) {
        let probe = MemEntry::probe(&crate::key::seek_key(user_key));
        for entry in self.map.range(probe..) {
            let e = entry.key();
            let Some(p) = parse_internal(e.key()) else {
                break;
            };
            if p.user_key != user_key {
                break;
            }
            if p.seqno <= snapshot {
                out.push(MemVersion {
                    ts: p.ts,
                    seqno: p.seqno,
                    kind: p.kind,
                    value: e.value().to_vec(),
                });
                if self.merge.is_some() {
                    return;
                }
            }
        }
    }

    /// The first entry at or after `ikey` (or strictly after, when `inclusive` is false).
    pub fn entry_from(&self, ikey: &[u8], inclusive: bool) -> Option<MemEntry> {
        let probe = MemEntry::probe(ikey);
        let bound = if inclusive {
            Bound::Included(&probe)
        } else {
            Bound::Excluded(&probe)
        };
        self.map.lower_bound(bound).map(|e| e.key().clone())
    }

    /// The first entry.
    pub fn first(&self) -> Option<MemEntry> {
        self.map.front().map(|e| e.key().clone())
    }
}

/// First and largest number of entries [`MemIter`] reads ahead in one walk.
const MEM_AHEAD_MIN: usize = 4;
const MEM_AHEAD_MAX: usize = 128;

/// An iterator over a memtable that owns its memtable, so it is free of borrowed
/// lifetimes. It cannot hold a skiplist cursor, and searching the skiplist from the root at
/// every step cost scans most of their time (a search compares keys at each level); so it
/// walks ahead from where it stands and keeps what it passed over (shared entries, one
/// reference count each): 4 entries, then twice as many per walk up to 128, so a short
/// scan does not pay for a long one.
///
/// Entries inserted behind the walk are not seen, as of a snapshot; readers lose nothing by
/// it, because a write's entries are in the memtable before its sequence number becomes
/// visible ([`crate::Db`]'s write path), so whatever a later walk would have found is newer
/// than any snapshot the scan reads at.
pub struct MemIter {
    mem: Arc<Memtable>,
    /// For a cumulative memtable read at a sequence number: yield only the first version
    /// at or below it of each key (which holds the others), skipping the rest.
    visible: Option<Seqno>,
    /// The current entry first, then the ones read ahead.
    ahead: VecDeque<MemEntry>,
    /// Entries the next walk reads.
    walk: usize,
    /// The last walk reached the end of the memtable (or of [`MemIter::until`]'s range).
    walked_to_end: bool,
    /// Where the reader stops: a user key, and whether it is included.
    until: Option<(Box<[u8]>, bool)>,
}

/// Whether `entry` is before the reader's end (`until`).
fn before_end(until: &Option<(Box<[u8]>, bool)>, entry: &MemEntry) -> bool {
    until.as_ref().is_none_or(|(end, included)| {
        let user_key = crate::key::user_key(entry.key());
        if *included {
            user_key <= &end[..]
        } else {
            user_key < &end[..]
        }
    })
}

impl MemIter {
    /// An unpositioned iterator.
    pub fn new(mem: Arc<Memtable>) -> Self {
        Self {
            mem,
            visible: None,
            ahead: VecDeque::new(),
            walk: MEM_AHEAD_MIN,
            walked_to_end: true,
            until: None,
        }
    }

    /// Stops the iterator at user key `end`: a walk ahead never reads past it (a scan of one
    /// partition otherwise read a few entries of the next ones from every memtable).
    pub fn until(mut self, end: Bound<&[u8]>) -> Self {
        self.until = match end {
            Bound::Included(k) => Some((k.into(), true)),
            Bound::Excluded(k) => Some((k.into(), false)),
            Bound::Unbounded => None,
        };
        self
    }

    /// An iterator over what a reader at `seqno` needs of `mem`: every version when the
    /// memtable is not cumulative; else, of each key, only the first version at or below
    /// `seqno` (versions above it are skipped, as the reader would skip them).
    pub fn visible_at(mem: Arc<Memtable>, seqno: Seqno) -> Self {
        let visible = mem.is_cumulative().then_some(seqno);
        Self {
            visible,
            ..Self::new(mem)
        }
    }

    /// Reads up to `self.walk` entries from `from` on into `ahead` (empty before), after
    /// `last`, the entry the reader just passed (whose key's other versions a cumulative
    /// walk skips).
    fn walk_from(&mut self, from: Bound<&MemEntry>, last: Option<&MemEntry>) {
        if let Some(seqno) = self.visible {
            return self.walk_visible(from, last, seqno);
        }
        debug_assert!(self.ahead.is_empty());
        let mut past_end = false;
        for e in self.mem.map.range((from, Bound::Unbounded)).take(self.walk) {
            if !before_end(&self.until, e.key()) {
                past_end = true;
                break;
            }
            self.ahead.push_back(e.key().clone());
        }
        self.walked_to_end = past_end || self.ahead.len() < self.walk;
        self.walk = (self.walk * 2).min(MEM_AHEAD_MAX);
    }

    /// [`Self::walk_from`] for a cumulative memtable read at `seqno`: per key, the first
    /// version at or below `seqno`; the key's other versions are jumped over with one
    /// skiplist search, not stepped through.
    fn walk_visible(&mut self, from: Bound<&MemEntry>, last: Option<&MemEntry>, seqno: Seqno) {
        debug_assert!(self.ahead.is_empty());
        let mut start: Bound<MemEntry> = from.cloned();
        // The user key whose version was taken last: its other versions are skipped.
        let mut taken: Option<MemEntry> = last.cloned();
        'walk: loop {
            let mut jump = None;
            for e in self.mem.map.range((start.as_ref(), Bound::Unbounded)) {
                let entry = e.key();
                if !before_end(&self.until, entry) {
                    break 'walk;
                }
                let Some(p) = parse_internal(entry.key()) else {
                    // Not written by this engine's insert; handed on as it is.
                    self.ahead.push_back(entry.clone());
                    continue;
                };
                let same_key = taken
                    .as_ref()
                    .and_then(|t| parse_internal(t.key()))
                    .is_some_and(|t| t.user_key == p.user_key);
                if same_key {
                    // Past the last version of this key: its largest internal key.
                    let mut end = p.user_key.to_vec();
                    end.extend_from_slice(&[0xff; crate::key::TRAILER_LEN]);
                    jump = Some(MemEntry::probe(&end));
                    break;
                }
                if p.seqno > seqno {
                    continue;
                }
                self.ahead.push_back(entry.clone());
                taken = Some(entry.clone());
                if self.ahead.len() >= self.walk {
                    self.walked_to_end = false;
                    self.walk = (self.walk * 2).min(MEM_AHEAD_MAX);
                    return;
                }
            }
            match jump {
                Some(j) => {
                    start = Bound::Excluded(j);
                    taken = None;
                    continue 'walk;
                }
                None => break 'walk,
            }
        }
        self.walked_to_end = true;
    }
}

impl crate::iter::InternalIter for MemIter {
    fn seek(&mut self, target: &[u8]) -> crate::Result<()> {
        self.ahead.clear();
        self.walk = MEM_AHEAD_MIN;
        let probe = MemEntry::probe(target);
        self.walk_from(Bound::Included(&probe), None);
        Ok(())
    }
    fn seek_to_first(&mut self) -> crate::Result<()> {
        self.ahead.clear();
        self.walk = MEM_AHEAD_MIN;
        self.walk_from(Bound::Unbounded, None);
        Ok(())
    }
    fn next(&mut self) -> crate::Result<()> {
        let Some(cur) = self.ahead.pop_front() else {
            return Ok(());
        };
        if self.ahead.is_empty() && !self.walked_to_end {
            self.walk_from(Bound::Excluded(&cur), Some(&cur));
        }
        Ok(())
    }
    fn valid(&self) -> bool {
        !self.ahead.is_empty()
    }
    fn key(&self) -> &[u8] {
        self.ahead.front().map(|e| e.key()).unwrap_or_default()
    }
    fn value(&self) -> &[u8] {
        self.ahead.front().map(|e| e.value()).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iter::InternalIter;

    #[test]
    fn versions_come_back_newest_timestamp_first_and_respect_snapshots() {
        let m = Memtable::new();
        m.insert(b"k", 10, Seqno(1), ValueKind::Put, b"a");
        m.insert(b"k", 30, Seqno(2), ValueKind::Put, b"c");
        m.insert(b"k", 20, Seqno(3), ValueKind::Put, b"b");
        m.insert(b"kk", 99, Seqno(4), ValueKind::Put, b"other");
        let mut out = Vec::new();
        m.get(b"k", Seqno(10), &mut out);
        let ts: Vec<u64> = out.iter().map(|v| v.ts).collect();
        assert_eq!(ts, vec![30, 20, 10]);
        out.clear();
        m.get(b"k", Seqno(1), &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(m.max_ts(), 99);
        assert_eq!(m.min_ts(), 10);
    }

    #[test]
    fn the_iterator_walks_every_entry_in_order() {
        let m = Arc::new(Memtable::new());
        for i in (0..100u32).rev() {
            m.insert(
                &i.to_be_bytes(),
                1,
                Seqno(u64::from(i)),
                ValueKind::Put,
                b"v",
            );
        }
        let mut it = MemIter::new(m);
        it.seek_to_first().unwrap();
        let mut n = 0u32;
        while it.valid() {
            assert_eq!(crate::key::user_key(it.key()), &n.to_be_bytes());
            n += 1;
            it.next().unwrap();
        }
        assert_eq!(n, 100);
    }

    #[test]
    fn an_iterator_with_an_end_stops_there() {
        let m = Arc::new(Memtable::new());
        for i in 0..50u32 {
            m.insert(
                &i.to_be_bytes(),
                1,
                Seqno(u64::from(i) + 1),
                ValueKind::Put,
                b"v",
            );
        }
        let keys = |mut it: MemIter, from: u32| {
            it.seek(&crate::key::seek_key(&from.to_be_bytes())).unwrap();
            let mut out = Vec::new();
            while it.valid() {
                out.push(crate::key::user_key(it.key()).to_vec());
                it.next().unwrap();
            }
            out
        };
        let end = 20u32.to_be_bytes();
        let excluded = keys(MemIter::new(m.clone()).until(Bound::Excluded(&end)), 3);
        assert_eq!(excluded.len(), 17);
        assert_eq!(
            excluded.last().map(Vec::as_slice),
            Some(&19u32.to_be_bytes()[..])
        );
        let included = keys(MemIter::new(m.clone()).until(Bound::Included(&end)), 3);
        assert_eq!(included.len(), 18);
        let visible = MemIter::visible_at(m.clone(), Seqno(100)).until(Bound::Excluded(&end));
        assert_eq!(keys(visible, 19).len(), 1);
        assert_eq!(keys(MemIter::new(m).until(Bound::Unbounded), 40).len(), 10);
    }
}

/// An iterator over a frozen memtable's entries, collected in one linear pass: flushing
/// walks every entry once, so this avoids re-searching the skiplist at each step.
pub struct FrozenIter {
    entries: Vec<MemEntry>,
    pos: usize,
}

impl FrozenIter {
    /// Collects the entries of `mem` (which must no longer receive writes).
    pub fn new(mem: &Memtable) -> Self {
        let entries: Vec<MemEntry> = mem.map.iter().map(|e| e.key().clone()).collect();
        let pos = entries.len();
        Self { entries, pos }
    }
}

impl crate::iter::InternalIter for FrozenIter {
    fn seek(&mut self, target: &[u8]) -> crate::Result<()> {
        self.pos = self
            .entries
            .partition_point(|e| compare_internal(e.key(), target).is_lt());
        Ok(())
    }
    fn seek_to_first(&mut self) -> crate::Result<()> {
        self.pos = 0;
        Ok(())
    }
    fn next(&mut self) -> crate::Result<()> {
        self.pos = (self.pos + 1).min(self.entries.len());
        Ok(())
    }
    fn valid(&self) -> bool {
        self.pos < self.entries.len()
    }
    fn key(&self) -> &[u8] {
        self.entries
            .get(self.pos)
            .map(|e| e.key())
            .unwrap_or_default()
    }
    fn value(&self) -> &[u8] {
        self.entries
            .get(self.pos)
            .map(|e| e.value())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod frozen_tests {
    use super::*;
    use crate::iter::InternalIter;

    #[test]
    fn the_frozen_iterator_matches_the_live_one() {
        let m = Arc::new(Memtable::new());
        for i in (0..500u32).rev() {
            m.insert(
                &(i % 97).to_be_bytes(),
                u64::from(i),
                Seqno(u64::from(i)),
                ValueKind::Put,
                b"v",
            );
        }
        let mut live = MemIter::new(m.clone());
        let mut frozen = FrozenIter::new(&m);
        live.seek_to_first().unwrap();
        frozen.seek_to_first().unwrap();
        while live.valid() {
            assert!(frozen.valid());
            assert_eq!(live.key(), frozen.key());
            live.next().unwrap();
            frozen.next().unwrap();
        }
        assert!(!frozen.valid());
        let target = crate::key::seek_key(&50u32.to_be_bytes());
        live.seek(&target).unwrap();
        frozen.seek(&target).unwrap();
        // Walks past several read-ahead refills from a seek, to the end.
        let mut steps = 0;
        while frozen.valid() {
            assert!(live.valid());
            assert_eq!(live.key(), frozen.key());
            assert_eq!(live.value(), frozen.value());
            live.next().unwrap();
            frozen.next().unwrap();
            steps += 1;
        }
        assert!(!live.valid());
        assert!(steps > MEM_AHEAD_MAX);
    }

    /// Set union of bytes: associative, commutative and idempotent, as merges must be.
    struct Union;
    impl MergeOperator for Union {
        fn name(&self) -> &str {
            "union"
        }
        fn merge(&self, _key: &[u8], versions: &[Version<'_>]) -> crate::merge::Resolved {
            let mut bytes: Vec<u8> = versions.iter().flat_map(|v| v.value.to_vec()).collect();
            bytes.sort_unstable();
            bytes.dedup();
            crate::merge::Resolved {
                ts: versions.iter().map(|v| v.ts).max().unwrap_or(0),
                kind: ValueKind::Put,
                value: bytes,
            }
        }
    }

    fn walk(it: &mut MemIter) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        while it.valid() {
            let p = parse_internal(it.key()).unwrap();
            out.push((p.user_key.to_vec(), it.value().to_vec()));
            it.next().unwrap();
        }
        out
    }

    #[test]
    fn a_cumulative_memtable_answers_every_snapshot_with_one_version_per_key() {
        let m = Arc::new(Memtable::with_merge(Some(Arc::new(Union))));
        // Key b updated often, once with an older timestamp arriving late.
        m.insert(b"a", 5, Seqno(1), ValueKind::Put, b"a");
        for (i, v) in [b'1', b'2', b'3', b'4'].iter().enumerate() {
            m.insert(
                b"b",
                10 + i as u64,
                Seqno(2 + i as u64),
                ValueKind::Put,
                &[*v],
            );
        }
        m.insert(b"b", 1, Seqno(6), ValueKind::Put, b"0");
        m.insert(b"c", 7, Seqno(7), ValueKind::Put, b"c");
        let at = |seqno: u64| {
            let mut out = Vec::new();
            m.get(b"b", Seqno(seqno), &mut out);
            out.iter()
                .map(|v| (v.ts, v.value.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(at(1), vec![]);
        assert_eq!(at(2), vec![(10, b"1".to_vec())]);
        assert_eq!(at(4), vec![(12, b"123".to_vec())]);
        // The late write's older timestamp does not hide it: the newest version holds it.
        assert_eq!(at(6), vec![(13, b"01234".to_vec())]);
        assert_eq!(m.min_ts(), 1);
        // The iterator yields one version per key, as of its sequence number.
        let mut it = MemIter::visible_at(m.clone(), Seqno(7));
        it.seek_to_first().unwrap();
        assert_eq!(
            walk(&mut it),
            vec![
                (b"a".to_vec(), b"a".to_vec()),
                (b"b".to_vec(), b"01234".to_vec()),
                (b"c".to_vec(), b"c".to_vec()),
            ]
        );
        let mut it = MemIter::visible_at(m.clone(), Seqno(3));
        it.seek(&crate::key::seek_key(b"b")).unwrap();
        assert_eq!(walk(&mut it), vec![(b"b".to_vec(), b"12".to_vec())]);
        // Every version stays for readers that want them all (flush, older snapshots).
        let mut all = MemIter::new(m.clone());
        all.seek_to_first().unwrap();
        assert_eq!(walk(&mut all).len(), 7);
    }

    #[test]
    fn a_cumulative_walk_skips_many_versions_and_keeps_reading_ahead() {
        let m = Arc::new(Memtable::with_merge(Some(Arc::new(Union))));
        let mut seqno = 0;
        for k in 0..50u8 {
            for v in 0..20u8 {
                seqno += 1;
                m.insert(&[k], u64::from(v) + 1, Seqno(seqno), ValueKind::Put, &[v]);
            }
        }
        let mut it = MemIter::visible_at(m.clone(), Seqno(seqno));
        it.seek_to_first().unwrap();
        let got = walk(&mut it);
        assert_eq!(got.len(), 50);
        let every: Vec<u8> = (0..20).collect();
        for (i, (k, v)) in got.iter().enumerate() {
            assert_eq!(k, &vec![i as u8]);
            assert_eq!(v, &every);
        }
    }
}
