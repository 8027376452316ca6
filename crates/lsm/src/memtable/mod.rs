//! The memtable: a skiplist of internal keys in an arena (`memtable/skiplist.rs`), sized by a byte
//! budget.
//!
//! Each entry is one node of the arena holding its tower, the internal key and the value
//! side by side; the skiplist orders entries by
//! [`compare_internal`](crate::key::compare_internal). Readers run concurrently with the one
//! writer; a full memtable is frozen (made immutable) and flushed in the background while a
//! new one takes writes.
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

use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering as AtomicOrdering};
use std::sync::Arc;

use crate::key::{parse_internal, trailer, Seqno, ValueKind};
use crate::merge::{MergeOperator, Version};

mod skiplist;

use skiplist::{NodeRef, SkipList};

/// Per-entry overhead charged against the byte budget: the node's header (16 bytes), its
/// tower (8 bytes per level, 1⅓ levels on average) and alignment.
const ENTRY_OVERHEAD_BYTES: usize = 40;

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
    list: SkipList,
    /// Set for a cumulative memtable (see the module doc).
    merge: Option<Arc<dyn MergeOperator>>,
    oldest_wal: AtomicU64,
    max_seqno: AtomicU64,
    size_bytes: AtomicUsize,
    min_ts: AtomicU64,
    max_ts: AtomicU64,
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
            list: SkipList::new(),
            merge,
            oldest_wal: AtomicU64::new(u64::MAX),
            max_seqno: AtomicU64::new(0),
            size_bytes: AtomicUsize::new(0),
            min_ts: AtomicU64::new(u64::MAX),
            max_ts: AtomicU64::new(0),
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
        self.list.len() as u64
    }

    /// Whether the memtable holds nothing.
    pub fn is_empty(&self) -> bool {
        self.list.len() == 0
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
        let newest = self.list.seek(&crate::key::seek_key(key), true);
        let held = newest.and_then(|node| {
            // SAFETY: the node is in `self.list`, which outlives this call.
            let (ikey, value) = unsafe { (node.key(), node.value()) };
            let p = parse_internal(ikey)?;
            (p.user_key == key).then_some(Version {
                ts: p.ts,
                kind: p.kind,
                value,
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
        let trailer = trailer(ts, seqno, kind);
        let charge = charge_bytes(key.len(), value.len());
        // Before the skiplist: whoever can see the entry sees its prefix noted.
        if let Some(f) = &self.prefixes {
            f.insert_key(key);
        }
        // The same internal key again (a replayed write) is held once; its bytes are
        // taken from the arena all the same, so it is charged like any write.
        self.list
            .insert(&[key, &trailer, value], key.len() + trailer.len());
        self.size_bytes.fetch_add(charge, AtomicOrdering::Relaxed);
        self.min_ts.fetch_min(ts, AtomicOrdering::Relaxed);
        self.max_ts.fetch_max(ts, AtomicOrdering::Relaxed);
        self.max_seqno.fetch_max(seqno.0, AtomicOrdering::SeqCst);
        charge
    }

    /// Every version of `user_key` with a sequence number at most `snapshot`, in internal
    /// order (newest timestamp first), appended to `out` — in a cumulative memtable only
    /// the first, which holds the others.
    pub fn get(&self, user_key: &[u8], snapshot: Seqno, out: &mut Vec<MemVersion>) {
        let mut node = self.list.seek(&crate::key::seek_key(user_key), true);
        while let Some(n) = node {
            // SAFETY: the node is in `self.list`, which outlives this call.
            let (ikey, value) = unsafe { (n.key(), n.value()) };
            let Some(p) = parse_internal(ikey) else {
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
                    value: value.to_vec(),
                });
                if self.merge.is_some() {
                    return;
                }
            }
            // SAFETY: as above.
            node = unsafe { n.successor() };
        }
    }
}

/// An iterator over a memtable. It owns its memtable (so it is free of borrowed lifetimes)
/// and stands on a node of its skiplist, stepping to the next with one load.
///
/// Entries inserted ahead of the iterator while it walks are seen, entries inserted behind
/// it are not; readers lose nothing by either, because a write's entries are in the
/// memtable before its sequence number becomes visible ([`crate::Db`]'s write path), so an
/// entry inserted after the iterator was made is newer than any snapshot it reads at, and
/// readers skip versions newer than their snapshot.
pub struct MemIter {
    mem: Arc<Memtable>,
    /// For a cumulative memtable read at a sequence number: yield only the first version
    /// at or below it of each key (which holds the others), skipping the rest.
    visible: Option<Seqno>,
    /// The current node; `None` when not positioned or past the end.
    cur: Option<NodeRef>,
    /// Where the reader stops: a user key, and whether it is included.
    until: Option<(Box<[u8]>, bool)>,
}

impl MemIter {
    /// An unpositioned iterator.
    pub fn new(mem: Arc<Memtable>) -> Self {
        Self {
            mem,
            visible: None,
            cur: None,
            until: None,
        }
    }

    /// Stops the iterator at user key `end`: it is invalid past it.
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

    fn node_key(&self, node: NodeRef) -> &[u8] {
        // SAFETY: every node the iterator holds is in `self.mem`'s list, kept alive by the
        // iterator's `Arc`.
        unsafe { node.key() }
    }

    /// Stands on `node`, or on the first node after it that a reader at the visible
    /// sequence number needs; invalid past the end.
    fn settle(&mut self, mut node: Option<NodeRef>) {
        if let Some(seqno) = self.visible {
            while let Some(n) = node {
                match parse_internal(self.node_key(n)) {
                    Some(p) if p.seqno > seqno => {
                        // SAFETY: as in `node_key`.
                        node = unsafe { n.successor() };
                    }
                    // At or below the snapshot, or not written by this engine's insert
                    // (handed on as it is).
                    _ => break,
                }
            }
        }
        self.cur = node.filter(|n| self.before_end(*n));
    }

    /// Whether `node` is before the reader's end (`until`).
    fn before_end(&self, node: NodeRef) -> bool {
        self.until.as_ref().is_none_or(|(end, included)| {
            let user_key = crate::key::user_key(self.node_key(node));
            if *included {
                user_key <= &end[..]
            } else {
                user_key < &end[..]
            }
        })
    }
}

impl crate::iter::InternalIter for MemIter {
    fn seek(&mut self, target: &[u8]) -> crate::Result<()> {
        let node = self.mem.list.seek(target, true);
        self.settle(node);
        Ok(())
    }
    fn seek_to_first(&mut self) -> crate::Result<()> {
        let node = self.mem.list.first();
        self.settle(node);
        Ok(())
    }
    fn next(&mut self) -> crate::Result<()> {
        let Some(cur) = self.cur else {
            return Ok(());
        };
        // SAFETY: as in `node_key`.
        let mut next = unsafe { cur.successor() };
        if self.visible.is_some() {
            // The first version taken holds the key's others: skip them, with one search
            // past the key's largest internal key when the next node is one of them.
            if let (Some(p), Some(n)) = (parse_internal(self.node_key(cur)), next) {
                if crate::key::user_key(self.node_key(n)) == p.user_key {
                    let mut end = p.user_key.to_vec();
                    end.extend_from_slice(&[0xff; crate::key::TRAILER_LEN]);
                    next = self.mem.list.seek(&end, false);
                }
            }
        }
        self.settle(next);
        Ok(())
    }
    fn valid(&self) -> bool {
        self.cur.is_some()
    }
    fn key(&self) -> &[u8] {
        self.cur.map(|n| self.node_key(n)).unwrap_or_default()
    }
    fn value(&self) -> &[u8] {
        // SAFETY: as in `node_key`.
        self.cur.map(|n| unsafe { n.value() }).unwrap_or_default()
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

#[cfg(test)]
mod iter_tests {
    use super::*;
    use crate::iter::InternalIter;

    #[test]
    fn the_iterator_seeks_and_walks_every_version_in_internal_order() {
        let m = Arc::new(Memtable::new());
        let mut want = Vec::new();
        for i in (0..500u32).rev() {
            let (key, ts, seqno) = ((i % 97).to_be_bytes(), u64::from(i), Seqno(u64::from(i)));
            m.insert(&key, ts, seqno, ValueKind::Put, &i.to_le_bytes());
            want.push((
                crate::key::internal_key(&key, ts, seqno, ValueKind::Put),
                i.to_le_bytes().to_vec(),
            ));
        }
        want.sort_by(|a, b| crate::key::compare_internal(&a.0, &b.0));
        let collect = |it: &mut MemIter| {
            let mut out = Vec::new();
            while it.valid() {
                out.push((it.key().to_vec(), it.value().to_vec()));
                it.next().unwrap();
            }
            out
        };
        let mut it = MemIter::new(m.clone());
        it.seek_to_first().unwrap();
        assert_eq!(collect(&mut it), want);
        let target = crate::key::seek_key(&50u32.to_be_bytes());
        it.seek(&target).unwrap();
        let from = want
            .iter()
            .position(|(k, _)| crate::key::compare_internal(k, &target).is_ge())
            .unwrap();
        assert_eq!(collect(&mut it), want[from..].to_vec());
        // The same internal key again (a replayed write) is held once.
        m.insert(&7u32.to_be_bytes(), 7, Seqno(7), ValueKind::Put, b"again");
        assert_eq!(m.entries(), 500);
        it.seek_to_first().unwrap();
        assert_eq!(collect(&mut it), want);
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
