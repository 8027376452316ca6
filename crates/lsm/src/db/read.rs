//! The read path: point lookups, version resolution and consistent scans.
//!
//! A reader takes the [`SuperVersion`] (memtable, frozen memtables, version) in one short
//! critical section and then reads without locks; the tables it holds stay on disk until
//! it lets go. Lookups skip tables by key range, by timestamp (under last-write-wins) and
//! by Bloom filter — whole keys, or key prefixes for tables written with a prefix filter
//! (see the `props` module) — and scans confined to one prefix consult those filters too.

use std::ops::Bound;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::{InternalIter, LevelIter, MergingIter};
use crate::key::{parse_internal, seek_key, user_key, Seqno, ValueKind};
use crate::memtable::MemIter;
use crate::merge::{lww_beats, Resolved, Version as KeyVersion};
use crate::stats::{Counters, ReadPurpose};
use crate::version::{TableHandle, Version};

use super::props::{filter_probe, table_has_unique_keys, table_may_hold_prefix};
use super::{views_of, Entry, Inner, Scan, SuperVersion};

impl Iterator for Scan {
    type Item = Result<(Vec<u8>, Entry)>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.advance() {
            Ok(Some(item)) => Some(Ok(item)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

impl Scan {
    /// The next live key in range with its resolved entry, or `None` past the end.
    fn advance(&mut self) -> Result<Option<(Vec<u8>, Entry)>> {
        loop {
            if !self.iter.valid() {
                return Ok(None);
            }
            let key = user_key(self.iter.key()).to_vec();
            let past_end = match &self.end {
                Bound::Included(e) => key.as_slice() > e.as_slice(),
                Bound::Excluded(e) => key.as_slice() >= e.as_slice(),
                Bound::Unbounded => false,
            };
            if past_end {
                return Ok(None);
            }
            self.versions.clear();
            while self.iter.valid() && user_key(self.iter.key()) == key.as_slice() {
                let p = parse_internal(self.iter.key()).ok_or_else(|| {
                    Error::corruption(&self.inner.dir, 0, "malformed internal key in scan")
                })?;
                if p.seqno <= self.seqno {
                    self.versions
                        .push((p.ts, p.seqno, p.kind, self.iter.value().to_vec()));
                }
                self.iter.next()?;
            }
            if self.skip.as_deref() == Some(key.as_slice()) {
                continue;
            }
            // The common case: one visible version that resolves to itself (always so
            // without a merge operator), handed over without another copy.
            let lone = match (&self.inner.opts.merge_operator, self.versions.as_slice()) {
                (None, [_]) => true,
                (Some(op), [(ts, _, kind, value)]) => op.passes_through(
                    &key,
                    &KeyVersion {
                        ts: *ts,
                        kind: *kind,
                        value,
                    },
                ),
                _ => false,
            };
            if lone {
                if let Some((ts, _, kind, value)) = self.versions.pop() {
                    if kind == ValueKind::Delete {
                        continue;
                    }
                    return Ok(Some((key, Entry { ts, value })));
                }
            }
            let views = views_of(self.versions.iter());
            if let Some(entry) = self.inner.resolve_for_read(&key, &views) {
                return Ok(Some((key, entry)));
            }
        }
    }
}

impl Inner {
    /// What a reader needs, taken atomically: one `Arc` clone in the common case.
    pub(super) fn super_version(&self) -> Arc<SuperVersion> {
        let mut st = self.state.lock();
        if let Some(sv) = &st.sv {
            return sv.clone();
        }
        let sv = Arc::new(SuperVersion {
            mem: st.mem.clone(),
            imm: st.imm.clone(),
            version: st.version.clone(),
        });
        st.sv = Some(sv.clone());
        sv
    }

    /// Backs [`crate::Db::get`]: the newest version of `key` visible at `seqno`.
    pub(super) fn get(&self, key: &[u8], seqno: Seqno) -> Result<Option<Entry>> {
        Counters::inc(&self.counters.gets);
        let sv = self.super_version();
        let mut c = Collector {
            lww: self.opts.merge_operator.is_none(),
            best: None,
            found: Vec::new(),
        };
        collect_from_memtables(&sv, key, seqno, &mut c);
        self.collect_from_tables(&sv.version, key, seqno, &mut c)?;
        Ok(self.resolve_collected(key, c))
    }

    /// Adds the versions of `key` the tables of `version` hold to `c`, probing only the
    /// tables that may matter.
    fn collect_from_tables(
        &self,
        version: &Version,
        key: &[u8],
        seqno: Seqno,
        c: &mut Collector,
    ) -> Result<()> {
        let seek = seek_key(key);
        // A log probes its global log, then only the range groups whose interval holds
        // the key (each group's runs newest first); a tree probes every level.
        let tree = (!version.log).then_some(0..version.levels.len());
        let log = version
            .log
            .then(|| std::iter::once(0).chain(version.groups_holding(key)));
        for level in tree.into_iter().flatten().chain(log.into_iter().flatten()) {
            let Some(tables) = version.levels.get(level) else {
                continue;
            };
            let candidates: &[Arc<TableHandle>] = if level == 0 || version.log {
                tables
            } else {
                let i = tables.partition_point(|t| t.meta().largest_user_key() < key);
                tables.get(i..(i + 1).min(tables.len())).unwrap_or_default()
            };
            for t in candidates {
                let m = t.meta();
                if key < m.smallest_user_key() || key > m.largest_user_key() {
                    continue;
                }
                if c.lww {
                    // Versions are ordered by timestamp, not by level: a table can only
                    // matter if it may hold a timestamp at least as new as the best so far.
                    if c.best.as_ref().is_some_and(|(bts, _, _)| m.max_ts < *bts) {
                        continue;
                    }
                }
                if !t
                    .reader()
                    .may_contain(filter_probe(t, key), ReadPurpose::Get)?
                {
                    Counters::inc(&self.counters.bloom_negatives);
                    continue;
                }
                self.probe_table(t, key, &seek, seqno, c)?;
            }
        }
        Ok(())
    }

    /// Adds the versions of `key` in table `t` (which its filter says may hold it) to `c`.
    fn probe_table(
        &self,
        t: &TableHandle,
        key: &[u8],
        seek: &[u8],
        seqno: Seqno,
        c: &mut Collector,
    ) -> Result<()> {
        Counters::inc(&self.counters.get_tables_probed);
        t.note_read();
        let unique = table_has_unique_keys(t);
        let mut it = t.reader().iter(ReadPurpose::Get, true);
        it.seek(seek)?;
        let mut any = false;
        while it.valid() {
            let p = parse_internal(it.key())
                .ok_or_else(|| Error::corruption(t.reader().path(), 0, "malformed internal key"))?;
            if p.user_key != key {
                break;
            }
            any = true;
            if p.seqno <= seqno {
                c.consider(p.ts, p.kind, it.value());
                if unique {
                    break;
                }
            }
            it.next()?;
        }
        Counters::inc(if any {
            &self.counters.bloom_true_positives
        } else {
            &self.counters.bloom_false_positives
        });
        Ok(())
    }

    /// What a lookup's collected versions resolve to.
    fn resolve_collected(&self, key: &[u8], mut c: Collector) -> Option<Entry> {
        if c.lww {
            return c.best.and_then(|(ts, kind, value)| {
                (kind != ValueKind::Delete).then_some(Entry { ts, value })
            });
        }
        // Newest timestamp first, as the merge operator expects.
        c.found.sort_by_key(|v| std::cmp::Reverse(v.0));
        let views: Vec<KeyVersion<'_>> = c
            .found
            .iter()
            .map(|(ts, kind, value)| KeyVersion {
                ts: *ts,
                kind: *kind,
                value,
            })
            .collect();
        self.resolve_for_read(key, &views)
    }

    /// Resolves the visible versions of one key (newest timestamp first) for a read.
    fn resolve_for_read(&self, key: &[u8], versions: &[KeyVersion<'_>]) -> Option<Entry> {
        if versions.is_empty() {
            return None;
        }
        let r = self.resolve(key, versions);
        (r.kind != ValueKind::Delete).then_some(Entry {
            ts: r.ts,
            value: r.value,
        })
    }

    /// Resolves the versions of one key (newest timestamp first): the merge operator, or
    /// last-write-wins.
    fn resolve(&self, key: &[u8], versions: &[KeyVersion<'_>]) -> Resolved {
        match &self.opts.merge_operator {
            Some(op) => op.merge(key, versions),
            None => {
                let w = crate::merge::lww_winner(versions).unwrap_or(KeyVersion {
                    ts: 0,
                    kind: ValueKind::Delete,
                    value: &[],
                });
                Resolved {
                    ts: w.ts,
                    kind: w.kind,
                    value: w.value.to_vec(),
                }
            }
        }
    }

    /// Backs [`crate::Db::scan`]: a merging iterator over the memtables and the tables
    /// that may hold keys in the bounds, positioned at `start`.
    pub(super) fn scan(
        self: &Arc<Self>,
        seqno: Seqno,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Result<Scan> {
        let sv = self.super_version();
        let lo = match start {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        let hi = match end {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        // A scan of one filter prefix (a partition) skips the memtables that cannot hold it.
        let prefix = shared_prefix(lo, hi, self.opts.table.filter_prefix_bytes);
        let mut children: Vec<Box<dyn InternalIter>> = Vec::new();
        for m in std::iter::once(&sv.mem).chain(sv.imm.iter().rev()) {
            if prefix.is_none_or(|p| m.may_hold_prefix(p)) {
                children.push(Box::new(MemIter::visible_at(m.clone(), seqno).until(end)));
            }
        }
        self.add_table_iters(&sv.version, lo, hi, end, &mut children)?;
        let mut iter = MergingIter::new(children);
        let skip = match start {
            Bound::Included(k) => {
                iter.seek(&seek_key(k))?;
                None
            }
            Bound::Excluded(k) => {
                iter.seek(&seek_key(k))?;
                Some(k.to_vec())
            }
            Bound::Unbounded => {
                iter.seek_to_first()?;
                None
            }
        };
        Ok(Scan {
            iter,
            seqno,
            end: end.map(<[u8]>::to_vec),
            skip,
            inner: self.clone(),
            done: false,
            versions: Vec::new(),
        })
    }

    /// Adds to `children` an iterator over every table of `version` that may hold keys
    /// between `lo` and `hi` (one per level-0 table or log run, one per deeper level).
    /// Fails only if a filter that lives in the block cache could not be read back.
    fn add_table_iters(
        &self,
        version: &Version,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        end: Bound<&[u8]>,
        children: &mut Vec<Box<dyn InternalIter>>,
    ) -> Result<()> {
        // A scan confined to one filter prefix (a partition) consults the tables' prefix
        // filters, as a point lookup does, and is counted as one.
        let prefix = shared_prefix(lo, hi, self.opts.table.filter_prefix_bytes);
        // Its disk reads count as a lookup's too.
        let purpose = if prefix.is_some() {
            ReadPurpose::Get
        } else {
            ReadPurpose::Scan
        };
        let (mut probed, mut filtered) = (0u64, 0u64);
        let mut failure = None;
        let mut wanted = |t: &Arc<TableHandle>| {
            let m = t.meta();
            if lo.is_some_and(|lo| m.largest_user_key() < lo)
                || hi.is_some_and(|hi| m.smallest_user_key() > hi)
            {
                return false;
            }
            if let Some(p) = prefix {
                match table_may_hold_prefix(t, p, purpose) {
                    Ok(true) => probed += 1,
                    Ok(false) => {
                        filtered += 1;
                        return false;
                    }
                    Err(e) => {
                        failure.get_or_insert(e);
                        return false;
                    }
                }
            }
            true
        };
        if version.log {
            // The global log, then the runs of the groups the range meets.
            for level in std::iter::once(0).chain(version.groups_meeting(lo, hi)) {
                for t in version.levels.get(level).into_iter().flatten() {
                    if wanted(t) {
                        t.note_read();
                        children.push(Box::new(t.reader().iter(purpose, true).until(end)));
                    }
                }
            }
        } else {
            for (level, tables) in version.levels.iter().enumerate() {
                if level == 0 {
                    for t in tables {
                        if wanted(t) {
                            t.note_read();
                            children.push(Box::new(t.reader().iter(purpose, true).until(end)));
                        }
                    }
                } else {
                    let kept: Vec<Arc<TableHandle>> =
                        tables.iter().filter(|t| wanted(t)).cloned().collect();
                    if !kept.is_empty() {
                        children.push(Box::new(LevelIter::new(kept, purpose, true).until(end)));
                    }
                }
            }
        }
        if prefix.is_some() {
            Counters::inc(&self.counters.gets);
            Counters::add(&self.counters.get_tables_probed, probed);
            Counters::add(&self.counters.bloom_negatives, filtered);
        }
        failure.map_or(Ok(()), Err)
    }
}

/// Adds the versions of `key` visible at `seqno` in the memtables (active, then frozen from
/// newest to oldest) to `c`.
fn collect_from_memtables(sv: &SuperVersion, key: &[u8], seqno: Seqno, c: &mut Collector) {
    let mut mem_versions = Vec::new();
    for m in std::iter::once(&sv.mem).chain(sv.imm.iter().rev()) {
        mem_versions.clear();
        m.get(key, seqno, &mut mem_versions);
        for v in &mem_versions {
            c.consider(v.ts, v.kind, &v.value);
        }
    }
}

/// Gathers the versions a point lookup finds: only the best one under last-write-wins.
struct Collector {
    lww: bool,
    best: Option<(u64, ValueKind, Vec<u8>)>,
    found: Vec<(u64, ValueKind, Vec<u8>)>,
}

impl Collector {
    /// Takes in one version found for the key.
    fn consider(&mut self, ts: u64, kind: ValueKind, value: &[u8]) {
        if !self.lww {
            self.found.push((ts, kind, value.to_vec()));
            return;
        }
        let better = match &self.best {
            None => true,
            Some((bts, bkind, bval)) => lww_beats(
                &KeyVersion { ts, kind, value },
                &KeyVersion {
                    ts: *bts,
                    kind: *bkind,
                    value: bval,
                },
            ),
        };
        if better {
            self.best = Some((ts, kind, value.to_vec()));
        }
    }
}

/// The filter prefix every key between `lo` and `hi` shares, if both bounds are at least a
/// prefix long and agree on it.
fn shared_prefix<'k>(lo: Option<&'k [u8]>, hi: Option<&[u8]>, n: usize) -> Option<&'k [u8]> {
    let lo = lo?.get(..n)?;
    (n > 0 && hi?.get(..n)? == lo).then_some(lo)
}
