//! Writing tables: turning a merged, internally ordered input (a frozen memtable, or the
//! inputs of a compaction or split) into new table files, keeping only the versions a
//! reader can still need.
//!
//! Which versions survive is decided per user key from an [`OutputContext`] taken before
//! the job starts: versions newer than the oldest snapshot stay as they are; older ones
//! collapse into one (last-write-wins or the merge operator), and a tombstone is dropped
//! only when it has outlived gc grace and nothing outside the job can hold an older
//! version of its key. A job that fails removes every file it created; nothing it wrote is
//! visible until the manifest records it (see the `install` module).

use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::iter::InternalIter;
use crate::key::{encode_internal, parse_internal, user_key, Seqno, ValueKind};
use crate::memtable::{MemIter, Memtable};
use crate::merge::{PurgeContext, Version as KeyVersion};
use crate::options::GroupOf;
use crate::table::TableWriter;
use crate::version::{table_file_name, TableHandle, TableMeta, LOG_LEVELS_MAX};
use crate::wal::BatchOp;

use super::{props, views_of, Inner, OwnedVersion};

/// What an output job needs to decide which versions of a key to keep.
pub(super) struct OutputContext {
    /// Versions with a larger seqno may be seen by some snapshot: kept as they are.
    smallest_snapshot: u64,
    /// The oldest timestamp any memtable or table outside the job holds (in the job's key
    /// range); a tombstone older than it shadows nothing elsewhere.
    min_ts_elsewhere: u64,
    /// Whether tombstones and merge results may be purged (not while flushing: the
    /// memtable's versions are not all of the key's).
    purge: bool,
    /// The clock's reading, for tombstone expiry.
    now_micros: u64,
    /// Whether this writes a flushed memtable.
    flushing: bool,
}

/// A table being written.
struct OpenOutput {
    id: u64,
    writer: TableWriter,
    min_ts: u64,
    max_ts: u64,
    max_seqno: u64,
    /// Whether some user key got more than one version (kept for a snapshot).
    multi_version: bool,
}

impl OpenOutput {
    /// Appends `versions` of `key` (in internal order), tracking the timestamp and seqno
    /// ranges; `key_buf` is scratch for the internal key.
    fn add_versions<'a>(
        &mut self,
        key: &[u8],
        versions: impl Iterator<Item = &'a OwnedVersion>,
        key_buf: &mut Vec<u8>,
    ) -> Result<()> {
        for (ts, seqno, kind, value) in versions {
            self.add(key, (*ts, *seqno, *kind), value, key_buf)?;
        }
        Ok(())
    }

    /// Appends one version of `key`.
    fn add(
        &mut self,
        key: &[u8],
        (ts, seqno, kind): (u64, Seqno, ValueKind),
        value: &[u8],
        key_buf: &mut Vec<u8>,
    ) -> Result<()> {
        key_buf.clear();
        encode_internal(key_buf, key, ts, seqno, kind);
        self.writer.add(key_buf, value)?;
        self.min_ts = self.min_ts.min(ts);
        self.max_ts = self.max_ts.max(ts);
        self.max_seqno = self.max_seqno.max(seqno.0);
        Ok(())
    }
}

impl Inner {
    /// What compaction output needs to decide which versions to keep.
    pub(super) fn output_context(
        &self,
        inputs: &[u64],
        flushing: Option<&Arc<Memtable>>,
    ) -> OutputContext {
        let smallest_snapshot = self
            .snapshots
            .lock()
            .keys()
            .next()
            .copied()
            .unwrap_or(u64::MAX);
        // A tombstone may be dropped only if nothing outside this job could hold an older
        // version of its key: every other memtable and table must be strictly newer.
        let sv = self.super_version();
        let (mem, imm, version) = (&sv.mem, &sv.imm, &sv.version);
        let mut min_ts_elsewhere = u64::MAX;
        for m in std::iter::once(mem).chain(imm.iter()) {
            if flushing.is_some_and(|f| Arc::ptr_eq(f, m)) {
                continue;
            }
            min_ts_elsewhere = min_ts_elsewhere.min(m.min_ts());
        }
        let in_inputs = |t: &Arc<TableHandle>| inputs.contains(&t.meta().id);
        let range = version.all_tables().filter(|t| in_inputs(t)).fold(
            None::<(Vec<u8>, Vec<u8>)>,
            |acc, t| {
                let (lo, hi) = (t.meta().smallest_user_key(), t.meta().largest_user_key());
                Some(match acc {
                    None => (lo.to_vec(), hi.to_vec()),
                    Some((a, b)) => (a.min(lo.to_vec()), b.max(hi.to_vec())),
                })
            },
        );
        for t in version.all_tables() {
            let overlaps = range
                .as_ref()
                .is_none_or(|(lo, hi)| t.meta().overlaps_user_range(lo, hi));
            if !in_inputs(t) && overlaps {
                min_ts_elsewhere = min_ts_elsewhere.min(t.meta().min_ts);
            }
        }
        OutputContext {
            smallest_snapshot,
            min_ts_elsewhere,
            purge: flushing.is_none(),
            flushing: flushing.is_some(),
            now_micros: self.opts.clock.now_micros(),
        }
    }

    /// Writes frozen memtable `mem` as level-0 tables (one: no size limit applies).
    pub(super) fn write_memtable(&self, mem: &Arc<Memtable>) -> Result<Vec<Arc<TableHandle>>> {
        let ctx = self.output_context(&[], Some(mem));
        let mut it = MemIter::new(mem.clone());
        it.seek_to_first()?;
        Ok(self.write_tables(&mut it, &ctx, u64::MAX, &[], None)?.0)
    }

    /// Writes frozen memtable `mem` as one run per range group of `route` it holds keys of,
    /// with each run's group.
    pub(super) fn write_memtable_routed(
        &self,
        mem: &Arc<Memtable>,
        route: &GroupOf,
    ) -> Result<(Vec<Arc<TableHandle>>, Vec<u32>)> {
        let ctx = self.output_context(&[], Some(mem));
        let mut it = MemIter::new(mem.clone());
        it.seek_to_first()?;
        self.write_tables(&mut it, &ctx, u64::MAX, &[], Some(route))
    }

    /// Writes the entries of `input` (positioned at its first entry) into tables of at most
    /// about `split_bytes` each, keeping only the versions readers can still need. With
    /// `route`, a table also ends where the range group changes, and the second result
    /// holds each table's group. On error every file written is removed.
    pub(super) fn write_tables(
        &self,
        input: &mut dyn InternalIter,
        ctx: &OutputContext,
        split_bytes: u64,
        grandparents: &[Vec<u8>],
        route: Option<&GroupOf>,
    ) -> Result<(Vec<Arc<TableHandle>>, Vec<u32>)> {
        let mut outputs: Vec<Arc<TableHandle>> = Vec::new();
        let mut groups: Vec<u32> = Vec::new();
        let mut created: Vec<PathBuf> = Vec::new();
        let result = self.write_tables_inner(
            input,
            ctx,
            (split_bytes, grandparents, route),
            (&mut outputs, &mut groups),
            &mut created,
        );
        match result {
            Ok(()) => Ok((outputs, groups)),
            Err(e) => {
                drop(outputs);
                for p in created {
                    let _ = self.fs.remove(&p);
                }
                Err(e)
            }
        }
    }

    /// The body of [`Inner::write_tables`]: one pass over `input`, a user key at a time.
    fn write_tables_inner(
        &self,
        input: &mut dyn InternalIter,
        ctx: &OutputContext,
        (split_bytes, grandparents, route): (u64, &[Vec<u8>], Option<&GroupOf>),
        (outputs, groups): (&mut Vec<Arc<TableHandle>>, &mut Vec<u32>),
        created: &mut Vec<PathBuf>,
    ) -> Result<()> {
        let mut out: Option<OpenOutput> = None;
        let mut out_group: Option<u32> = None;
        // Cutting output files where the next level's tables end keeps each output's overlap
        // with that level small, so its own later compaction rewrites little of the level
        // below (RocksDB does the same): past an eighth of the target size, a file ends at
        // the next such boundary.
        let mut grandparent = 0usize;
        let mut crossed_boundary = false;
        // Buffers reused across keys: compaction copies each entry once and allocates
        // nothing per entry in the common case.
        let mut group: Vec<OwnedVersion> = Vec::new();
        let mut key: Vec<u8> = Vec::new();
        let mut key_buf = Vec::new();
        let mut emit: Vec<OwnedVersion> = Vec::new();
        let lww = self.opts.merge_operator.is_none();
        while input.valid() {
            let mut n = self.read_key_versions(input, &mut key, &mut group)?;
            let filter = self.opts.compaction_filter.as_ref();
            if let Some(filter) = filter.filter(|f| !ctx.flushing || f.at_flush()) {
                n = drop_filtered(&**filter, &key, &mut group, n, ctx.smallest_snapshot);
                if n == 0 {
                    continue;
                }
            }
            let versions = group.get(..n).unwrap_or_default();
            emit.clear();
            let single = match versions {
                // One version and nothing to purge: it goes through as it is.
                [only] if (lww && only.2 != ValueKind::Delete) || (!lww && !ctx.purge) => {
                    Some(only)
                }
                _ => {
                    self.resolve_for_output(&key, versions, ctx, &mut emit);
                    None
                }
            };
            if single.is_none() && emit.is_empty() {
                continue;
            }
            while grandparents
                .get(grandparent)
                .is_some_and(|end| key.as_slice() > end.as_slice())
            {
                grandparent += 1;
                crossed_boundary = true;
            }
            // Split only between user keys, so a key's versions stay in one table.
            let size = out.as_ref().map_or(0, |o| o.writer.estimated_size_bytes());
            let key_group = route.map(|r| r(&key).min(LOG_LEVELS_MAX as u32 - 2));
            let new_group = key_group.is_some() && key_group != out_group;
            if out.is_some()
                && (new_group
                    || size >= split_bytes
                    || (crossed_boundary && size >= split_bytes / 8))
            {
                self.seal_output(out.take(), out_group, outputs, groups)?;
            }
            out_group = key_group;
            if out.is_none() {
                crossed_boundary = false;
                out = Some(self.open_output(created)?);
            }
            if let Some(o) = out.as_mut() {
                o.multi_version |= single.is_none() && emit.len() > 1;
                o.add_versions(&key, single.into_iter().chain(emit.iter()), &mut key_buf)?;
            }
            if ctx.purge {
                // A compaction or split (not a flush): held to the node's compaction rate.
                let bytes: usize = single
                    .into_iter()
                    .chain(emit.iter())
                    .map(|v| key.len() + v.3.len())
                    .sum();
                self.engine.throttle_compaction(bytes as u64);
            }
        }
        self.seal_output(out.take(), out_group, outputs, groups)
    }

    /// Writes `ops` (ascending, distinct keys: one version each, checked by the caller)
    /// as tables of at most about `table_size_bytes` each, every version at sequence
    /// number 0 (older than every snapshot; timestamps decide between versions). On error
    /// every file written is removed.
    pub(super) fn write_sorted(&self, ops: &[BatchOp]) -> Result<Vec<Arc<TableHandle>>> {
        let mut outputs: Vec<Arc<TableHandle>> = Vec::new();
        let mut created: Vec<PathBuf> = Vec::new();
        let mut groups = Vec::new();
        let mut written = || -> Result<()> {
            let mut out: Option<OpenOutput> = None;
            let mut key_buf = Vec::new();
            for op in ops {
                let size = out.as_ref().map_or(0, |o| o.writer.estimated_size_bytes());
                if size >= self.opts.table_size_bytes {
                    self.seal_output(out.take(), None, &mut outputs, &mut groups)?;
                }
                let o = match out.as_mut() {
                    Some(o) => o,
                    None => out.insert(self.open_output(&mut created)?),
                };
                o.add(&op.key, (op.ts, Seqno(0), op.kind), &op.value, &mut key_buf)?;
            }
            self.seal_output(out.take(), None, &mut outputs, &mut groups)
        };
        match written() {
            Ok(()) => Ok(outputs),
            Err(e) => {
                drop(outputs);
                for p in created {
                    let _ = self.fs.remove(&p);
                }
                Err(e)
            }
        }
    }

    /// Reads every version of the user key `input` is positioned at into the first slots
    /// of `group` (reusing their buffers) and the key into `key`; returns how many there
    /// are, leaving `input` at the next user key.
    fn read_key_versions(
        &self,
        input: &mut dyn InternalIter,
        key: &mut Vec<u8>,
        group: &mut Vec<OwnedVersion>,
    ) -> Result<usize> {
        key.clear();
        key.extend_from_slice(user_key(input.key()));
        let mut n = 0;
        while input.valid() && user_key(input.key()) == key.as_slice() {
            let p = parse_internal(input.key())
                .ok_or_else(|| Error::corruption(&self.dir, 0, "malformed internal key"))?;
            if group.len() == n {
                group.push((0, Seqno(0), ValueKind::Put, Vec::new()));
            }
            if let Some(slot) = group.get_mut(n) {
                slot.0 = p.ts;
                slot.1 = p.seqno;
                slot.2 = p.kind;
                slot.3.clear();
                slot.3.extend_from_slice(input.value());
            }
            n += 1;
            input.next()?;
        }
        Ok(n)
    }

    /// Creates the next output table, noting its path in `created` so that a failed job
    /// removes it.
    fn open_output(&self, created: &mut Vec<PathBuf>) -> Result<OpenOutput> {
        let id = self.alloc_file_id();
        let path = self.dir.join(table_file_name(id));
        let file = if self.opts.direct_io_for_flush_and_compaction {
            self.fs.create_direct(&path)
        } else {
            self.fs.create(&path)
        }
        .map_err(|e| Error::io("creating", &path, e))?;
        created.push(path.clone());
        Ok(OpenOutput {
            id,
            writer: TableWriter::new(file, path, self.opts.table.clone()),
            min_ts: u64::MAX,
            max_ts: 0,
            max_seqno: 0,
            multi_version: false,
        })
    }

    /// Finishes `out` (if any) and adds it, with its range group, to the job's outputs.
    fn seal_output(
        &self,
        out: Option<OpenOutput>,
        group: Option<u32>,
        outputs: &mut Vec<Arc<TableHandle>>,
        groups: &mut Vec<u32>,
    ) -> Result<()> {
        if let Some(o) = out {
            outputs.push(Arc::new(self.finish_output(o)?));
            groups.push(group.unwrap_or(0));
        }
        Ok(())
    }

    /// Writes the footer and properties of `o` and opens it as a table.
    fn finish_output(&self, o: OpenOutput) -> Result<TableHandle> {
        let props = props::encode(o.multi_version, self.opts.table.filter_prefix_bytes);
        let summary = o.writer.finish(&props)?;
        let meta = TableMeta {
            id: o.id,
            size_bytes: summary.size_bytes,
            entries: summary.entries,
            smallest: summary.smallest_key,
            largest: summary.largest_key,
            min_ts: o.min_ts,
            max_ts: o.max_ts,
            max_seqno: o.max_seqno,
            created_micros: self.opts.clock.now_micros(),
            location: String::new(),
        };
        self.open_table(meta)
    }

    /// Decides which versions of one key (in internal order) survive into the output.
    fn resolve_for_output(
        &self,
        key: &[u8],
        group: &[OwnedVersion],
        ctx: &OutputContext,
        emit: &mut Vec<OwnedVersion>,
    ) {
        // Versions newer than the oldest snapshot are kept as they are: some snapshot may
        // see some of them but not others. The rest are resolved into one version.
        let mut old: Vec<&OwnedVersion> = Vec::new();
        for v in group {
            if v.1 .0 > ctx.smallest_snapshot {
                emit.push(v.clone());
            } else {
                old.push(v);
            }
        }
        if old.is_empty() {
            return;
        }
        let max_seqno = old.iter().map(|v| v.1).max().unwrap_or_default();
        let purge_ctx = |ts: u64| PurgeContext {
            bottommost: ctx.purge && ts < ctx.min_ts_elsewhere,
            now_micros: ctx.now_micros,
            gc_grace_micros: self.opts.gc_grace_micros,
        };
        let views = views_of(old.iter().copied());
        let survivor = match &self.opts.merge_operator {
            None => crate::merge::lww_winner(&views).and_then(|w| {
                let expired =
                    w.kind == ValueKind::Delete && purge_ctx(w.ts).tombstone_expired(w.ts);
                let idx = views.iter().position(|v| v == &w).unwrap_or(0);
                if expired {
                    None
                } else {
                    old.get(idx).map(|src| (*src).clone())
                }
            }),
            Some(_) if old.len() == 1 && !ctx.purge => old.first().map(|v| (*v).clone()),
            Some(op) => {
                let mut sorted = views.clone();
                sorted.sort_by_key(|v| std::cmp::Reverse(v.ts));
                let merged = op.merge(key, &sorted);
                let merged = if ctx.purge {
                    op.purge(key, merged, &purge_ctx(merged_ts(&sorted)))
                } else {
                    Some(merged)
                };
                merged.map(|r| (r.ts, max_seqno, r.kind, r.value))
            }
        };
        emit.extend(survivor);
        // Keep internal order: newer snapshot-visible versions first, by (ts desc, seq desc).
        emit.sort_by(|a, b| b.0.cmp(&a.0).then(b.1.cmp(&a.1)));
    }
}

/// Moves the first `n` versions of `key` that `filter` keeps (every version some snapshot
/// may still see is kept) to the front of `group`, in their order; returns how many.
fn drop_filtered(
    filter: &dyn crate::options::CompactionFilter,
    key: &[u8],
    group: &mut [OwnedVersion],
    n: usize,
    smallest_snapshot: u64,
) -> usize {
    let mut kept = 0;
    for i in 0..n.min(group.len()) {
        let drop = group
            .get(i)
            .is_some_and(|v| v.1 .0 <= smallest_snapshot && filter.drops(key, v.0));
        if !drop {
            group.swap(kept, i);
            kept += 1;
        }
    }
    kept
}

/// The timestamp a merged result is purged as of: the newest version's.
fn merged_ts(sorted: &[KeyVersion<'_>]) -> u64 {
    sorted.first().map_or(0, |v| v.ts)
}
